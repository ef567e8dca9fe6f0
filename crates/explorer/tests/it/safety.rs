//! The safety rule on real material: every collection-wide write in every OpenAPI or Swagger
//! description under `../shared/fixtures` (and the services' specs `WAYLINE_SERVICE_SPECS`
//! names, when set) is classified as one, and no plain item operation is; and on an API that
//! answers as Kinto does (`{"data": ..., "permissions": ...}`, a collection-wide DELETE beside
//! the item's), "delete it" deletes the item, and "delete all" runs only when allowed.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use wayline_executor::ReqwestTransport;
use wayline_executor::testing::{MockServer, RecordedRequest, Reply};
use wayline_explorer::ScriptedInterventor;
use wayline_explorer::exploration::{Exploration, ExplorationStatus};
use wayline_explorer::explore::Explorer;
use wayline_explorer::extent::{Extent, collection_wide, extent};
use wayline_explorer::sut::SutConfig;
use wayline_registry::openapi::ApiSpec;

/// Every file under `dir` that declares itself an OpenAPI or Swagger description.
fn specs_under(dir: &Path, found: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            specs_under(&path, found);
            continue;
        }
        let named = path
            .extension()
            .and_then(|extension| extension.to_str())
            .is_some_and(|extension| matches!(extension, "json" | "yaml" | "yml"));
        if !named {
            continue;
        }
        // The first kilobytes say what the file is.
        let head: String = std::fs::read_to_string(&path)
            .unwrap_or_default()
            .chars()
            .take(4_000)
            .collect();
        if head.contains("\"openapi\"")
            || head.contains("\"swagger\"")
            || head.starts_with("openapi:")
            || head.starts_with("swagger:")
        {
            found.push(path);
        }
    }
}

/// The plain path of an operation, without a custom method (`/a/{id}:cancel` → `/a/{id}`).
fn plain(path: &str) -> String {
    let trimmed = path.trim_end_matches('/');
    match trimmed.rsplit_once('/') {
        Some((parent, last)) => {
            let last = match last.find("}:") {
                Some(at) => &last[..=at],
                None => last.split(':').next().unwrap_or(last),
            };
            format!("{parent}/{last}")
        }
        None => trimmed.to_owned(),
    }
}

#[test]
fn every_collection_wide_write_in_the_fixtures_is_classified_as_one() {
    let Some(fixtures) = wayline_testkit::fixtures_dir() else {
        return;
    };
    let mut files = Vec::new();
    specs_under(&fixtures, &mut files);
    if let Ok(extra) = std::env::var("WAYLINE_SERVICE_SPECS") {
        files.extend(std::env::split_paths(&extra));
    }
    let (mut specs, mut writes, mut items) = (0, 0, 0);
    for file in &files {
        let Ok(spec) = ApiSpec::load(file) else {
            continue;
        };
        specs += 1;
        let paths: Vec<String> = spec.operations.iter().map(|op| plain(&op.path)).collect();
        for operation in &spec.operations {
            let path = plain(&operation.path);
            let last = path.rsplit('/').next().unwrap_or_default();
            let on_item = last.starts_with('{') && last.ends_with('}');
            // A collection, by what the spec does under it: items below it, or a create on it.
            let has_items = paths.iter().any(|other| {
                other
                    .strip_prefix(&format!("{path}/{{"))
                    .is_some_and(|rest| !rest.contains('/'))
            });
            let has_create = spec
                .operations
                .iter()
                .any(|other| other.method == "POST" && plain(&other.path) == path);
            let write = matches!(operation.method.as_str(), "DELETE" | "PUT" | "PATCH");
            let where_ = format!(
                "{} {} in {}",
                operation.method,
                operation.path,
                file.display()
            );
            if write && !on_item && (has_items || has_create) {
                writes += 1;
                assert_eq!(extent(&spec, operation), Extent::Collection, "{where_}");
                assert!(collection_wide(&spec, operation).is_some(), "{where_}");
            }
            if on_item {
                items += 1;
                assert_eq!(extent(&spec, operation), Extent::Item, "{where_}");
            }
        }
    }
    eprintln!(
        "{specs} specs of {} files: {writes} collection-wide writes, {items} item operations",
        files.len()
    );
    assert!(
        specs >= 40,
        "the fixtures hold dozens of specs; {specs} loaded"
    );
    assert!(writes > 0, "some fixture has a collection-wide write");
}

/// Records in buckets, answered as Kinto answers (`{"data": {...}, "permissions": {...}}`),
/// with a collection-wide DELETE beside the item's. Ids are the server's.
#[derive(Default)]
struct Records {
    held: BTreeMap<String, Value>,
    next: u32,
}

fn handle(records: &mut Records, request: &RecordedRequest) -> Reply {
    let path = request.path();
    let Some(rest) = path.strip_prefix("/buckets/main/records") else {
        return Reply::json(404, json!({"message": "no such bucket"}));
    };
    let envelope =
        |data: &Value| json!({"data": data, "permissions": {"write": ["system.Everyone"]}});
    match (request.method.as_str(), rest.strip_prefix('/')) {
        ("GET", None) => Reply::json(
            200,
            json!({"data": records.held.values().collect::<Vec<_>>()}),
        ),
        ("DELETE", None) => {
            let gone: Vec<Value> = std::mem::take(&mut records.held).into_values().collect();
            Reply::json(200, json!({"data": gone}))
        }
        ("POST", None) => {
            let data = request.json().and_then(|body| body.get("data").cloned());
            let Some(Value::Object(mut fields)) = data else {
                return Reply::json(400, json!({"message": "data is required"}));
            };
            records.next += 1;
            let id = format!("r{:04x}", records.next * 7919);
            fields.insert("id".into(), json!(id));
            fields.insert("last_modified".into(), json!(records.next));
            let record = Value::Object(fields);
            records.held.insert(id, record.clone());
            Reply::json(201, envelope(&record))
        }
        (method, Some(id)) => {
            let Some(record) = records.held.get(id).cloned() else {
                return Reply::json(404, json!({"message": "record not found"}));
            };
            match method {
                "GET" => Reply::json(200, envelope(&record)),
                "DELETE" => {
                    records.held.remove(id);
                    Reply::json(200, json!({"data": {"id": id, "deleted": true}}))
                }
                _ => Reply::json(405, json!({})),
            }
        }
        _ => Reply::json(405, json!({})),
    }
}

fn spec(base: &str) -> ApiSpec {
    let envelope = json!({"type": "object", "properties": {
        "data": {"type": "object", "properties": {"id": {"type": "string"}, "title": {"type": "string"}}},
        "permissions": {"type": "object"}}});
    let answer = json!({"200": {"description": "ok", "content": {"application/json": {"schema": envelope}}}});
    let list = json!({"200": {"description": "ok", "content": {"application/json": {"schema": {
        "type": "object", "properties": {"data": {"type": "array", "items": {"type": "object"}}}}}}}});
    let bucket =
        json!({"name": "bid", "in": "path", "required": true, "schema": {"type": "string"}});
    let id = json!({"name": "id", "in": "path", "required": true, "schema": {"type": "string"}});
    let spec = json!({
        "openapi": "3.0.3",
        "servers": [{"url": base}],
        "paths": {
            "/buckets/{bid}/records": {
                "delete": {"operationId": "delete_records", "summary": "Delete records",
                    "parameters": [bucket], "responses": list},
                "get": {"operationId": "get_records", "parameters": [bucket], "responses": list},
                "post": {"operationId": "create_record", "parameters": [bucket],
                    "requestBody": {"content": {"application/json": {"schema": envelope}}},
                    "responses": answer}},
            "/buckets/{bid}/records/{id}": {
                "delete": {"operationId": "delete_record", "parameters": [bucket, id], "responses": answer},
                "get": {"operationId": "get_record", "parameters": [bucket, id], "responses": answer}}
        }
    });
    ApiSpec::parse(&spec.to_string(), std::path::Path::new("records.json")).unwrap()
}

struct Api {
    server: MockServer,
    records: Arc<Mutex<Records>>,
}

async fn api() -> Api {
    let records = Arc::new(Mutex::new(Records::default()));
    // A record made before the run: it must survive every target.
    records.lock().unwrap().held.insert(
        "before".into(),
        json!({"id": "before", "title": "made before the run"}),
    );
    let held = Arc::clone(&records);
    let server = MockServer::start(move |request| handle(&mut held.lock().unwrap(), request))
        .await
        .unwrap();
    Api { server, records }
}

impl Api {
    fn calls(&self) -> Vec<String> {
        self.server
            .requests()
            .iter()
            .map(|request| format!("{} {}", request.method, request.path()))
            .collect()
    }

    fn ids(&self) -> Vec<String> {
        self.records.lock().unwrap().held.keys().cloned().collect()
    }
}

async fn explore(api: &Api, target: &str, allow: bool) -> Exploration {
    explore_answered(api, target, allow, "default: abort\n", true).await
}

/// Explores `target`, answering from `answers` (YAML), in auto mode or not.
async fn explore_answered(
    api: &Api,
    target: &str,
    allow: bool,
    answers: &str,
    auto: bool,
) -> Exploration {
    let base = api.server.url("");
    let sut = SutConfig::parse(
        &format!(
            "name: records\nconnection: {{host: '{base}'}}\n\
             preset_variables: {{bucket.id: main, record.data: {{title: hello}}}}\n\
             execution:\n  mode: auto\n"
        ),
        "records.yaml",
        &|_| None,
    )
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let answers = Arc::new(ScriptedInterventor::parse(answers, "a.yaml").unwrap());
    let mut explorer = Explorer::new(
        sut,
        spec(&base),
        Arc::new(ReqwestTransport::new().unwrap()),
        answers,
    )
    .unwrap()
    .session_dir(dir.path());
    if auto {
        explorer = explorer.auto();
    }
    if allow {
        explorer = explorer.allow_collection_writes();
    }
    let mut session = explorer.start(target).unwrap();
    explorer.run(&mut session).await.unwrap();
    session
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_it_deletes_the_item_never_the_collection() {
    let api = api().await;
    let session = explore(&api, "create a record, then delete it", false).await;
    assert_eq!(
        session.session.status,
        ExplorationStatus::Completed,
        "{session:#?}"
    );
    let calls = api.calls();
    assert_eq!(calls.len(), 2, "{calls:?}");
    assert_eq!(calls[0], "POST /buckets/main/records");
    // The id came from inside `{"data": ..., "permissions": ...}`.
    assert_eq!(calls[1], "DELETE /buckets/main/records/r1eef");
    assert_eq!(
        api.ids(),
        ["before"],
        "the record made before the run survives"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_whole_collection_write_runs_unattended_only_when_asked_and_allowed() {
    let api = api().await;
    let session = explore(&api, "delete all records", false).await;
    assert_eq!(
        session.session.status,
        ExplorationStatus::Failed,
        "{session:#?}"
    );
    assert!(api.calls().is_empty(), "{:?}", api.calls());
    let why = &session.rejected_steps[0].error;
    assert!(
        why.contains("deletes the whole collection") && why.contains("--allow-collection-writes"),
        "{why}"
    );
    assert_eq!(api.ids(), ["before"]);
    let session = explore(&api, "delete all records", true).await;
    assert_eq!(
        session.session.status,
        ExplorationStatus::Completed,
        "{session:#?}"
    );
    assert_eq!(api.calls(), ["DELETE /buckets/main/records"]);
    assert!(api.ids().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answers_file_never_approves_a_collection_wide_write() {
    let api = api().await;
    // Not auto mode, and the file says yes to everything: still no collection-wide write.
    let session =
        explore_answered(&api, "delete all records", false, "default: yes\n", false).await;
    assert_eq!(
        session.session.status,
        ExplorationStatus::Failed,
        "{session:#?}"
    );
    assert!(api.calls().is_empty(), "{:?}", api.calls());
    assert_eq!(api.ids(), ["before"]);
}
