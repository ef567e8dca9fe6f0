//! The explorer on a conventional REST API it has never seen: a CRUD collection like
//! json-server's (numeric ids, POST/GET/PUT/PATCH/DELETE, no states), served on loopback and
//! described by a spec the test writes. Each target is checked by the calls the server saw
//! and the data it holds at the end.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use wayline_core::intervene::QuestionKind;
use wayline_core::{StoreError, StoreErrorKind};
use wayline_executor::ReqwestTransport;
use wayline_executor::testing::{MockServer, RecordedRequest, Reply};
use wayline_explorer::ScriptedInterventor;
use wayline_explorer::exploration::{Exploration, ExplorationStatus};
use wayline_explorer::explore::Explorer;
use wayline_explorer::sut::SutConfig;
use wayline_knowledge::{KnowledgeStore, MemoryKnowledge, YamlKnowledge, sut_key};
use wayline_registry::openapi::ApiSpec;

/// How the API names things: the variants the tests make from one description.
#[derive(Debug, Clone)]
struct Shape {
    /// The collection (`posts`, `special-events`).
    collection: &'static str,
    /// The path parameter of an item (`postId`, `post-id`, `entryId`, `id`).
    parameter: &'static str,
    /// The field the server answers the id in (`id`, `post_id`, `ID`).
    id_field: &'static str,
    /// The required text field of a record.
    title: &'static str,
    /// The optional text field of a record.
    text: &'static str,
    /// The update's body carries the id too, as an integer (Petstore's `PUT /pet`).
    id_in_update: bool,
    /// Fields every new record gets (a state, say).
    stamp: serde_json::Map<String, Value>,
    /// An update answers 204 with no body.
    update_no_content: bool,
    /// A create answers without the id in its body, naming the record in `Location` only.
    id_in_location_only: bool,
    /// Creates and reads answer inside an envelope (`{"post": {...}}`).
    envelope: Option<&'static str>,
}

impl Default for Shape {
    fn default() -> Self {
        Shape {
            collection: "posts",
            parameter: "postId",
            id_field: "id",
            title: "title",
            text: "blogText",
            id_in_update: false,
            stamp: serde_json::Map::new(),
            update_no_content: false,
            id_in_location_only: false,
            envelope: None,
        }
    }
}

/// One collection of records with numeric ids, as json-server keeps them.
#[derive(Default)]
struct Collection {
    records: BTreeMap<u64, Value>,
    next: u64,
}

/// A json-server-like API over one collection: the server and what it holds.
struct Api {
    server: MockServer,
    data: Arc<Mutex<Collection>>,
    shape: Shape,
}

impl Api {
    async fn start(name: &'static str) -> Api {
        Api::shaped(Shape {
            collection: name,
            ..Shape::default()
        })
        .await
    }

    async fn shaped(shape: Shape) -> Api {
        let data = Arc::new(Mutex::new(Collection {
            next: 1,
            ..Collection::default()
        }));
        let held = Arc::clone(&data);
        let served = shape.clone();
        let server =
            MockServer::start(move |request| handle(&mut held.lock().unwrap(), &served, request))
                .await
                .unwrap();
        Api {
            server,
            data,
            shape,
        }
    }

    /// Puts `record` in the collection under `id`, as if made before the test.
    fn seed(&self, id: u64, record: Value) {
        let mut data = self.data.lock().unwrap();
        data.records.insert(id, record);
        data.next = data.next.max(id + 1);
    }

    fn records(&self) -> Vec<Value> {
        self.data
            .lock()
            .unwrap()
            .records
            .values()
            .cloned()
            .collect()
    }

    /// The calls seen, as `METHOD /path`.
    fn calls(&self) -> Vec<String> {
        self.server
            .requests()
            .iter()
            .map(|request| format!("{} {}", request.method, request.path()))
            .collect()
    }

    /// The JSON bodies the server got with `method`, in order.
    fn bodies(&self, method: &str) -> Vec<Value> {
        self.server
            .requests()
            .iter()
            .filter(|request| request.method == method)
            .filter_map(RecordedRequest::json)
            .collect()
    }

    /// The spec the test writes for this API.
    fn spec(&self) -> ApiSpec {
        shape_spec(&self.server.url(""), &self.shape)
    }
}

fn handle(data: &mut Collection, shape: &Shape, request: &RecordedRequest) -> Reply {
    let prefix = format!("/{}", shape.collection);
    let Some(rest) = request.path().strip_prefix(&prefix) else {
        return Reply::json(404, json!({}));
    };
    let body = || request.json().filter(Value::is_object);
    let item = rest.strip_prefix('/').map(|id| id.parse::<u64>());
    match (request.method.as_str(), item) {
        ("GET", None) => Reply::json(200, json!(data.records.values().collect::<Vec<_>>())),
        ("POST", None) => {
            let Some(Value::Object(mut fields)) = body() else {
                return Reply::json(400, json!({"error": "a JSON object is required"}));
            };
            if !fields.contains_key(shape.title) {
                return Reply::json(
                    422,
                    json!({"detail": [{"loc": ["body", shape.title], "msg": "field required"}]}),
                );
            }
            let id = data.next;
            data.next += 1;
            fields.insert(shape.id_field.into(), json!(id));
            fields.extend(shape.stamp.clone());
            data.records.insert(id, Value::Object(fields.clone()));
            if shape.id_in_location_only {
                fields.remove(shape.id_field);
                return Reply::json(201, Value::Object(fields))
                    .header("Location", format!("{prefix}/{id}"));
            }
            Reply::json(201, wrap(shape, Value::Object(fields)))
        }
        (_, Some(Err(_))) => Reply::json(404, json!({})),
        (method, Some(Ok(id))) => {
            let Some(record) = data.records.get_mut(&id) else {
                return Reply::json(404, json!({}));
            };
            match method {
                "GET" => Reply::json(200, wrap(shape, record.clone())),
                "PUT" | "PATCH" => {
                    let Some(Value::Object(fields)) = body() else {
                        return Reply::json(400, json!({"error": "a JSON object is required"}));
                    };
                    if let Some(given) = fields.get(shape.id_field)
                        && !given.is_u64()
                    {
                        return Reply::json(
                            422,
                            json!({"detail": [{"loc": ["body", shape.id_field], "msg": "value is not a valid integer"}]}),
                        );
                    }
                    let mut updated = if method == "PUT" {
                        serde_json::Map::new()
                    } else {
                        record.as_object().cloned().unwrap_or_default()
                    };
                    updated.extend(fields);
                    // The id is the server's, whatever the body says.
                    updated.insert(shape.id_field.into(), json!(id));
                    *record = Value::Object(updated);
                    if shape.update_no_content {
                        return Reply::status(204);
                    }
                    Reply::json(200, record.clone())
                }
                "DELETE" => {
                    data.records.remove(&id);
                    Reply::json(200, json!({}))
                }
                _ => Reply::json(405, json!({})),
            }
        }
        _ => Reply::json(405, json!({})),
    }
}

/// `record` in the shape's envelope, if it has one.
fn wrap(shape: &Shape, record: Value) -> Value {
    match shape.envelope {
        Some(name) => json!({ name: record }),
        None => record,
    }
}

/// The OpenAPI description of the collection `/posts`: a post has an integer `id` (read only),
/// a required `title` and a `blogText`.
fn blog_spec(base: &str) -> ApiSpec {
    shape_spec(base, &Shape::default())
}

/// As [`blog_spec`], with `extra` properties on a post.
fn blog_spec_with(base: &str, extra: Value) -> ApiSpec {
    shape_spec_with(base, &Shape::default(), extra)
}

fn shape_spec(base: &str, shape: &Shape) -> ApiSpec {
    shape_spec_with(base, shape, json!({}))
}

/// The OpenAPI description of a [`Shape`]: list, create, read, update (PUT) and delete, and
/// `extra` properties on a record.
fn shape_spec_with(base: &str, shape: &Shape, extra: Value) -> ApiSpec {
    let mut record = json!({
        "type": "object",
        "required": [shape.title],
        "properties": {
            shape.id_field: {"type": "integer", "readOnly": true},
            shape.title: {"type": "string"},
            shape.text: {"type": "string"}
        }
    });
    if let (Some(properties), Value::Object(extra)) = (record["properties"].as_object_mut(), extra)
    {
        properties.extend(extra);
    }
    let mut update = record.clone();
    if shape.id_in_update {
        update["properties"][shape.id_field] = json!({"type": "integer"});
        update["required"] = json!([shape.id_field, shape.title]);
    }
    let parameter = json!([{"name": shape.parameter, "in": "path", "required": true, "schema": {"type": "integer"}}]);
    let body = |schema: &Value| json!({"required": true, "content": {"application/json": {"schema": schema}}});
    // One record is answered as it is, or inside the shape's envelope.
    let answered = match shape.envelope {
        Some(name) => json!({"type": "object", "properties": {name: record}}),
        None => record.clone(),
    };
    let answer = |status: &str| json!({status: {"description": "ok", "content": {"application/json": {"schema": answered}}}});
    let collection = format!("/{}", shape.collection);
    let item = format!("/{}/{{{}}}", shape.collection, shape.parameter);
    let spec = json!({
        "openapi": "3.0.3",
        "info": {"title": "Blog", "version": "1"},
        "servers": [{"url": base}],
        "paths": {
            collection: {
                "get": {"operationId": "listPosts", "responses": {"200": {"description": "all", "content": {"application/json": {"schema": {"type": "array", "items": record}}}}}},
                "post": {"operationId": "createPost", "requestBody": body(&record), "responses": answer("201")}
            },
            item: {
                "get": {"operationId": "getPost", "parameters": parameter, "responses": answer("200")},
                "put": {"operationId": "updatePost", "parameters": parameter, "requestBody": body(&update), "responses": answer("200")},
                "delete": {"operationId": "deletePost", "parameters": parameter, "responses": {"200": {"description": "deleted"}}}
            }
        }
    });
    ApiSpec::parse(&spec.to_string(), std::path::Path::new("blog.json")).unwrap()
}

/// The SUT: `mode` auto (runs what it is sure of) or manual (asks before every step).
fn sut(base: &str, presets: &str, mode: &str) -> SutConfig {
    SutConfig::parse(
        &format!(
            "name: blog\nconnection: {{host: '{base}'}}\npreset_variables: {{{presets}}}\n\
             execution:\n  mode: {mode}\n  auto_mode:\n    confidence_threshold: 0.5\n    polling: {{max_retries: 2, delay_seconds: 0}}\n"
        ),
        "blog.yaml",
        &|_| None,
    )
    .unwrap()
}

/// Explores `target` in auto mode, answering nothing (a question aborts the session).
async fn explore(
    api: &Api,
    spec: ApiSpec,
    presets: &str,
    target: &str,
    knowledge: Option<Arc<dyn KnowledgeStore>>,
) -> (Exploration, Arc<ScriptedInterventor>) {
    explore_answering(
        api,
        spec,
        presets,
        target,
        knowledge,
        "default: abort\n",
        "auto",
    )
    .await
}

/// Explores `target` in `mode`, answering from `answers` (YAML).
async fn explore_answering(
    api: &Api,
    spec: ApiSpec,
    presets: &str,
    target: &str,
    knowledge: Option<Arc<dyn KnowledgeStore>>,
    answers: &str,
    mode: &str,
) -> (Exploration, Arc<ScriptedInterventor>) {
    let dir = tempfile::tempdir().unwrap();
    let answers = Arc::new(ScriptedInterventor::parse(answers, "answers.yaml").unwrap());
    let mut explorer = Explorer::new(
        sut(&api.server.url(""), presets, mode),
        spec,
        Arc::new(ReqwestTransport::new().unwrap()),
        answers.clone(),
    )
    .unwrap()
    .session_dir(dir.path());
    if let Some(store) = knowledge {
        explorer = explorer.knowledge(store);
    }
    let mut session = explorer.start(target).unwrap();
    explorer.run(&mut session).await.unwrap();
    (session, answers)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_update_delete_completes_on_an_api_without_states() {
    let api = Api::start("posts").await;
    let spec = blog_spec(&api.server.url(""));
    let store: Arc<dyn KnowledgeStore> = Arc::new(MemoryKnowledge::new());
    let (session, answers) = explore(
        &api,
        spec,
        "title: first post",
        "create a blog post, update it, then delete it",
        Some(Arc::clone(&store)),
    )
    .await;
    assert_eq!(
        session.session.status,
        ExplorationStatus::Completed,
        "{session:#?}"
    );
    assert_eq!(
        api.calls(),
        ["POST /posts", "PUT /posts/1", "DELETE /posts/1"],
        "no wait for a state the spec never declares"
    );
    assert!(api.records().is_empty(), "the post is gone");
    assert!(answers.asked().is_empty(), "{:?}", answers.asked());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_declined_wait_is_not_offered_again() {
    // The spec declares states and the post stays CREATING: the explorer offers to wait.
    let api = Api::shaped(Shape {
        stamp: serde_json::Map::from_iter([("status".to_owned(), json!("CREATING"))]),
        ..Shape::default()
    })
    .await;
    let spec = blog_spec_with(
        &api.server.url(""),
        json!({"status": {"type": "string", "readOnly": true, "enum": ["CREATING", "ACTIVE", "FAILED"]}}),
    );
    let (session, answers) = explore_answering(
        &api,
        spec,
        "title: first post",
        "create a post, then delete it",
        None,
        "answers:\n  - {kind: confirm, operation: getPost, answer: no}\ndefault: yes\n",
        "manual",
    )
    .await;
    assert_eq!(
        session.session.status,
        ExplorationStatus::Completed,
        "{session:#?}"
    );
    let waits = answers
        .asked()
        .iter()
        .filter(|question| question.operation.as_deref() == Some("getPost"))
        .count();
    assert_eq!(
        waits,
        1,
        "asked once about the wait: {:#?}",
        answers.asked()
    );
    assert_eq!(api.calls(), ["POST /posts", "DELETE /posts/1"]);
}

/// A knowledge store that reads nothing and can save nothing.
#[derive(Debug)]
struct FullDisk;

#[async_trait::async_trait]
impl KnowledgeStore for FullDisk {
    async fn load(&self, _sut: &str) -> Result<wayline_knowledge::Knowledge, StoreError> {
        Ok(wayline_knowledge::Knowledge::new())
    }

    async fn update(
        &self,
        _sut: &str,
        _change: wayline_knowledge::Change,
    ) -> Result<wayline_knowledge::Knowledge, StoreError> {
        Err(StoreError::new(
            StoreErrorKind::Unavailable,
            "no space left on device",
        ))
    }

    async fn suts(&self) -> Result<Vec<String>, StoreError> {
        Ok(Vec::new())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sut_named_in_words_learns_and_a_lost_save_fails_the_run() {
    let api = Api::start("posts").await;
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn KnowledgeStore> = Arc::new(YamlKnowledge::new(dir.path()));
    let mut config = sut(&api.server.url(""), "title: first post", "auto");
    config.name = "Blog API (v1, staging)".to_owned();
    let explorer = Explorer::new(
        config.clone(),
        blog_spec(&api.server.url("")),
        Arc::new(ReqwestTransport::new().unwrap()),
        Arc::new(ScriptedInterventor::parse("default: abort\n", "a.yaml").unwrap()),
    )
    .unwrap()
    .session_dir(dir.path().join("sessions"))
    .knowledge(Arc::clone(&store));
    let mut session = explorer.start("create a post, then delete it").unwrap();
    explorer.run(&mut session).await.unwrap();
    assert_eq!(session.session.status, ExplorationStatus::Completed);
    assert_eq!(store.suts().await.unwrap(), ["Blog-API-v1-staging"]);
    let learned = store.load(&sut_key(&config.name)).await.unwrap();
    assert_eq!(learned.patterns.len(), 1, "{learned:#?}");

    // A store that cannot save: the session completes and is saved, and the run says so.
    let explorer = Explorer::new(
        config,
        blog_spec(&api.server.url("")),
        Arc::new(ReqwestTransport::new().unwrap()),
        Arc::new(ScriptedInterventor::parse("default: abort\n", "a.yaml").unwrap()),
    )
    .unwrap()
    .session_dir(dir.path().join("sessions"))
    .knowledge(Arc::new(FullDisk));
    let mut session = explorer.start("create a post, then delete it").unwrap();
    let error = explorer.run(&mut session).await.unwrap_err();
    assert_eq!(
        error.to_string(),
        "what the session learned about `Blog API (v1, staging)` (stored as \
         `Blog-API-v1-staging`) was not saved: no space left on device"
    );
    assert_eq!(session.session.status, ExplorationStatus::Completed);
    let saved = explorer.resume(&session.session.id).unwrap();
    assert_eq!(saved.confirmed_steps.len(), 2, "the session file is whole");
}

/// Explores `target` on `shape` with `presets` in auto mode; the session and what was asked.
async fn explore_shape(
    shape: Shape,
    presets: &str,
    target: &str,
) -> (Api, Exploration, Arc<ScriptedInterventor>) {
    let api = Api::shaped(shape).await;
    let (session, answers) = explore(&api, api.spec(), presets, target, None).await;
    (api, session, answers)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_four_crud_targets_complete_and_leave_the_data_they_say() {
    let cases: [(&str, &[&str], usize); 4] = [
        (
            "create a post and read it back",
            &["POST /posts", "GET /posts/1"],
            1,
        ),
        (
            "create a post, update it, then delete it",
            &["POST /posts", "PUT /posts/1", "DELETE /posts/1"],
            0,
        ),
        (
            "create a post, list posts, delete it",
            &["POST /posts", "GET /posts", "DELETE /posts/1"],
            0,
        ),
        (
            "create a post, update it, then read it",
            &["POST /posts", "PUT /posts/1", "GET /posts/1"],
            1,
        ),
    ];
    for (target, calls, left) in cases {
        let (api, session, answers) =
            explore_shape(Shape::default(), "title: first post", target).await;
        assert_eq!(
            session.session.status,
            ExplorationStatus::Completed,
            "{target}: {session:#?}"
        );
        assert_eq!(api.calls(), calls, "{target}");
        assert_eq!(api.records().len(), left, "{target}");
        assert!(
            answers.asked().is_empty(),
            "{target}: {:?}",
            answers.asked()
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn path_parameters_in_any_convention_take_the_created_id() {
    for parameter in [
        "postId",
        "post-id",
        "PostID",
        "post_id",
        "id",
        "entryId",
        "blogPostId",
    ] {
        let shape = Shape {
            parameter,
            ..Shape::default()
        };
        // A preset named like the parameter does not stand for the post just created.
        let presets = format!("title: first post, '{parameter}': 999");
        let (api, session, _) =
            explore_shape(shape, &presets, "create a post, update it, then delete it").await;
        assert_eq!(
            session.session.status,
            ExplorationStatus::Completed,
            "{parameter}: {session:#?}"
        );
        assert_eq!(
            api.calls(),
            ["POST /posts", "PUT /posts/1", "DELETE /posts/1"],
            "{parameter}"
        );
        assert!(api.records().is_empty(), "{parameter}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn body_fields_take_presets_named_in_another_convention() {
    for (title, text, presets) in [
        (
            "displayName",
            "blogText",
            "display_name: first, blog_text: hello",
        ),
        (
            "displayName",
            "blogText",
            "display-name: first, blog-text: hello",
        ),
        (
            "displayName",
            "blogText",
            "DisplayName: first, BlogText: hello",
        ),
        (
            "display_name",
            "blog_text",
            "displayName: first, blogText: hello",
        ),
    ] {
        let shape = Shape {
            title,
            text,
            ..Shape::default()
        };
        let (api, session, _) = explore_shape(shape, presets, "create a post").await;
        assert_eq!(
            session.session.status,
            ExplorationStatus::Completed,
            "{presets}"
        );
        assert_eq!(
            api.bodies("POST"),
            [json!({title: "first", text: "hello"})],
            "{presets}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ids_answered_under_other_names_keep_their_type() {
    for id_field in ["post_id", "post-id", "ID", "postId"] {
        let shape = Shape {
            id_field,
            id_in_update: true,
            ..Shape::default()
        };
        let (api, session, _) = explore_shape(
            shape,
            "title: first post",
            "create a post, update it, then delete it",
        )
        .await;
        assert_eq!(
            session.session.status,
            ExplorationStatus::Completed,
            "{id_field}: {session:#?}"
        );
        assert_eq!(
            api.calls(),
            ["POST /posts", "PUT /posts/1", "DELETE /posts/1"],
            "{id_field}"
        );
        // The id went back into the body as the integer it came as.
        assert_eq!(api.bodies("PUT")[0][id_field], json!(1), "{id_field}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn required_fields_nothing_gives_are_made_up_or_asked_for_never_sent_empty() {
    // Auto mode, no presets: a name-like required field gets a made-up unique value, and the
    // session says so.
    let (api, session, answers) = explore_shape(Shape::default(), "", "create a post").await;
    assert_eq!(
        session.session.status,
        ExplorationStatus::Completed,
        "{session:#?}"
    );
    assert!(answers.asked().is_empty());
    // Kept for the post alone: the next resource's title is its own.
    let made_up = session.generated["post.title"].as_str().unwrap().to_owned();
    assert!(made_up.starts_with("wayline-"), "{made_up}");
    let exchange = &session.transcript[0];
    assert_eq!(
        (exchange.kind.as_str(), exchange.by),
        ("made_up", wayline_core::intervene::Answerer::Auto)
    );
    assert_eq!(exchange.answer, json!(made_up).to_string());
    assert_eq!(
        session.stop_reason.as_deref(),
        Some("every goal of the target is done")
    );
    assert_eq!(api.bodies("POST"), [json!({"title": made_up})]);

    // A required field that is not a name is asked for, before any call.
    let shape = Shape {
        title: "category",
        ..Shape::default()
    };
    let (api, session, answers) = explore_shape(shape.clone(), "", "create a post").await;
    assert_eq!(
        session.session.status,
        ExplorationStatus::Aborted,
        "{session:#?}"
    );
    assert!(api.calls().is_empty(), "nothing sent: {:?}", api.calls());
    let asked = answers.asked();
    assert_eq!(asked.len(), 1);
    assert!(
        asked[0].message.contains("`category`"),
        "{}",
        asked[0].message
    );
    // Answered (as it is, for a single field), the call goes out with it.
    let api = Api::shaped(shape).await;
    let (session, _) = explore_answering(
        &api,
        api.spec(),
        "",
        "create a post",
        None,
        "answers:\n  - {kind: clarify, answer: {text: news}}\ndefault: yes\n",
        "auto",
    )
    .await;
    assert_eq!(
        session.session.status,
        ExplorationStatus::Completed,
        "{session:#?}"
    );
    assert_eq!(api.bodies("POST"), [json!({"category": "news"})]);
    // A number typed at the terminal comes as a choice: for one input, it is its value.
    let api = Api::shaped(Shape {
        title: "category",
        ..Shape::default()
    })
    .await;
    let (session, _) = explore_answering(
        &api,
        api.spec(),
        "",
        "create a post",
        None,
        "answers:\n  - {kind: clarify, answer: {choose: 7}}\ndefault: yes\n",
        "auto",
    )
    .await;
    assert_eq!(
        session.session.status,
        ExplorationStatus::Completed,
        "{session:#?}"
    );
    assert_eq!(api.bodies("POST"), [json!({"category": 7})]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_framework_error_body_names_the_missing_field_and_its_fix() {
    // The spec does not say `title` is required; the API answers as FastAPI does.
    let api = Api::start("posts").await;
    let mut spec = api.spec();
    for parameter in spec
        .operations
        .iter_mut()
        .flat_map(|operation| operation.parameters.iter_mut())
    {
        parameter.required = false;
    }
    let (session, answers) = explore_answering(
        &api,
        spec,
        "",
        "create a post",
        None,
        "answers:\n  - {kind: error, answer: {text: '{\"title\": \"from the fix\"}'}}\ndefault: yes\n",
        "auto",
    )
    .await;
    assert_eq!(
        session.session.status,
        ExplorationStatus::Completed,
        "{session:#?}"
    );
    let asked = answers.asked();
    let error = asked
        .iter()
        .find(|question| question.kind == QuestionKind::Error)
        .unwrap();
    assert!(
        error
            .message
            .contains("422 Unprocessable Entity from createPost")
            && error
                .message
                .ends_with("suggested fix: give `title` (as JSON: {\"title\": ...}) to retry"),
        "{}",
        error.message
    );
    assert_eq!(api.calls(), ["POST /posts", "POST /posts"]);
    assert_eq!(api.records()[0]["title"], "from the fix");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn targets_worded_as_people_word_them() {
    // A literal id: the post that exists is updated, and "it" is the same post.
    let api = Api::start("posts").await;
    api.seed(344, json!({"id": 344, "title": "old"}));
    let (session, _) = explore(
        &api,
        api.spec(),
        "title: new",
        "update post 344, then delete it",
        None,
    )
    .await;
    assert_eq!(
        session.session.status,
        ExplorationStatus::Completed,
        "{session:#?}"
    );
    assert_eq!(api.calls(), ["PUT /posts/344", "DELETE /posts/344"]);
    assert!(api.records().is_empty());

    // A collection of two words, written in kebab case.
    let (api, session, _) = explore_shape(
        Shape {
            collection: "special-events",
            parameter: "eventId",
            ..Shape::default()
        },
        "title: launch",
        "create a special event, then delete it",
    )
    .await;
    assert_eq!(
        session.session.status,
        ExplorationStatus::Completed,
        "{session:#?}"
    );
    assert_eq!(
        api.calls(),
        ["POST /special-events", "DELETE /special-events/1"]
    );

    // A 204 with no body says nothing of the resource: what it held is kept.
    let (api, session, _) = explore_shape(
        Shape {
            text: "body",
            update_no_content: true,
            ..Shape::default()
        },
        "title: first, body: first words",
        "create a post, then update it",
    )
    .await;
    assert_eq!(
        session.session.status,
        ExplorationStatus::Completed,
        "{session:#?}"
    );
    assert_eq!(api.calls(), ["POST /posts", "PUT /posts/1"]);
    let post = &session.current_state.resources["posts"]["post_1"];
    assert_eq!(post.attributes["body"], "first words", "{post:?}");
    assert!(!post.attributes.contains_key("status_code"), "{post:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_create_that_names_its_record_only_in_location_is_followed() {
    let (api, session, answers) = explore_shape(
        Shape {
            id_in_location_only: true,
            ..Shape::default()
        },
        "title: first post",
        "create a post, then delete it",
    )
    .await;
    assert_eq!(
        session.session.status,
        ExplorationStatus::Completed,
        "{session:#?}"
    );
    assert!(answers.asked().is_empty(), "{:?}", answers.asked());
    assert_eq!(api.calls(), ["POST /posts", "DELETE /posts/1"]);
    assert_eq!(session.confirmed_steps[0].saved_variables, ["post_1"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn names_no_rule_links_are_asked_about_once_naming_both_sides() {
    // The id comes back as `key`: no convention makes that a post's id.
    let (api, session, answers) = explore_shape(
        Shape {
            id_field: "key",
            ..Shape::default()
        },
        "title: first post",
        "create a post, then delete it",
    )
    .await;
    assert_eq!(
        session.session.status,
        ExplorationStatus::Aborted,
        "{session:#?}"
    );
    assert_eq!(api.calls(), ["POST /posts"], "nothing sent without the id");
    let asked = answers.asked();
    assert_eq!(asked.len(), 1, "{asked:#?}");
    assert_eq!(
        asked[0].message,
        "`deletePost` needs `postId`, which nothing known gives (`createPost` answered \
         `key` = 1, `title` = \"first post\"); give the values as JSON ({\"postId\": ...}), \
         or say no to skip it"
    );
    // The transcript keeps the question, the answer and who gave it; and why it stopped.
    let exchange = &session.transcript[0];
    assert_eq!(
        (
            exchange.kind.as_str(),
            exchange.answer.as_str(),
            exchange.after_steps
        ),
        ("clarify", "stop", 1)
    );
    assert_eq!(exchange.by, wayline_core::intervene::Answerer::AnswersFile);
    assert_eq!(exchange.question, asked[0].message);
    assert_eq!(
        session.stop_reason.as_deref(),
        Some("`deletePost` needs `postId`, and the answer was to stop")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_record_answered_inside_an_envelope_is_found() {
    let api = Api::shaped(Shape {
        envelope: Some("post"),
        ..Shape::default()
    })
    .await;
    let store: Arc<dyn KnowledgeStore> = Arc::new(MemoryKnowledge::new());
    let (session, _) = explore(
        &api,
        api.spec(),
        "title: first post",
        "create a post, then delete it",
        Some(Arc::clone(&store)),
    )
    .await;
    assert_eq!(
        session.session.status,
        ExplorationStatus::Completed,
        "{session:#?}"
    );
    assert_eq!(api.calls(), ["POST /posts", "DELETE /posts/1"]);
    // What it learned finds the id inside the envelope, as a plan made from it must.
    let learned = store.load("blog").await.unwrap();
    assert_eq!(learned.patterns[0].steps[0].save[0].eval, "body.post.id");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chosen_operation_is_asked_its_inputs_and_run_not_refused_and_learned() {
    use wayline_registry::openapi::ParameterLocation;
    // Two ways to update a post: PATCH (suggested first) and PUT, which needs a `reason`.
    let api = Api::start("posts").await;
    let mut spec = api.spec();
    let mut patch = spec.operation("updatePost").unwrap().clone();
    patch.id = "patchPost".to_owned();
    patch.method = "PATCH".to_owned();
    for parameter in &mut patch.parameters {
        if parameter.location == ParameterLocation::Body {
            parameter.required = false;
        }
    }
    let put = spec
        .operations
        .iter_mut()
        .find(|operation| operation.id == "updatePost")
        .unwrap();
    let mut reason = put
        .parameters
        .iter()
        .find(|parameter| parameter.name == "title")
        .unwrap()
        .clone();
    reason.name = "reason".to_owned();
    reason.input = "reason".to_owned();
    put.parameters.push(reason);
    spec.operations.push(patch);
    let store: Arc<dyn KnowledgeStore> = Arc::new(MemoryKnowledge::new());
    // The person chooses PUT, then gives the `reason` it asks for.
    let (session, answers) = explore_answering(
        &api,
        spec,
        "title: first",
        "create a post, then update it",
        Some(Arc::clone(&store)),
        "answers:\n  - {kind: confirm, operation: patchPost, answer: {choose: 1}}\n  \
         - {kind: clarify, operation: updatePost, answer: {text: '{\"reason\": \"typo\"}'}}\n\
         default: yes\n",
        "manual",
    )
    .await;
    assert_eq!(
        session.session.status,
        ExplorationStatus::Completed,
        "{session:#?}"
    );
    assert_eq!(
        api.calls(),
        ["POST /posts", "PUT /posts/1"],
        "never the PATCH"
    );
    assert_eq!(
        api.bodies("PUT"),
        [json!({"title": "first", "reason": "typo"})]
    );
    assert_eq!(session.choices[0].operation, "updatePost");
    let clarified: Vec<_> = answers
        .asked()
        .into_iter()
        .filter(|question| question.kind == QuestionKind::Clarify)
        .collect();
    assert_eq!(
        clarified.len(),
        1,
        "the chosen operation's input was asked for"
    );
    assert!(
        clarified[0].message.contains("`reason`"),
        "{}",
        clarified[0].message
    );
    // Nothing failed, so nothing was learned as a failure of the API.
    let knowledge = store.load(&sut_key("blog")).await.unwrap();
    assert!(
        knowledge.pitfalls.is_empty(),
        "no pitfall: {:?}",
        knowledge.pitfalls
    );
}
