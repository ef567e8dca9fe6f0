//! OpenAPI import: the fixture Swagger specs (tidbx, tidb-zero), Bay's OpenAPI 3.1 spec, and
//! a split spec of our own; every imported tool loads back through the tool loader.

use std::collections::BTreeSet;
use std::path::Path;

use serde_json::{Value, json};
use wayline_core::ToolCatalog;
use wayline_registry::ToolRegistry;
use wayline_registry::openapi::{
    ApiSpec, LinkSource, ParameterLocation, Security, SpecVersion, tool_yaml,
};
use wayline_testkit::{fixture, read_json, testdata};

/// Writes the spec's tools as YAML files into a fresh directory and loads them back.
fn round_trip(spec: &ApiSpec, base_url: Option<&str>) -> (tempfile::TempDir, ToolRegistry) {
    let dir = tempfile::tempdir().unwrap();
    for imported in spec.imported_tools(base_url) {
        let path = dir.path().join(format!("{}.yaml", imported.tool.id));
        std::fs::write(&path, tool_yaml(&imported.document)).unwrap();
    }
    let report = ToolRegistry::load([dir.path()]);
    assert!(report.errors.is_empty(), "{:#?}", report.errors);
    (dir, report.registry)
}

fn location_name(location: ParameterLocation) -> &'static str {
    match location {
        ParameterLocation::Path => "path",
        ParameterLocation::Query => "query",
        ParameterLocation::Header => "header",
        ParameterLocation::Cookie => "cookie",
        _ => "body",
    }
}

#[test]
fn the_tidbx_swagger_imports_its_20_operations_as_the_golden_list_says() {
    let Some(path) = fixture("tidbcloud/tidbx-openapi.json") else {
        return;
    };
    let spec = ApiSpec::load(&path).unwrap();
    assert_eq!(spec.version, SpecVersion::Swagger2);
    assert_eq!(
        spec.base_url.as_deref(),
        Some("https://serverless.tidbapi.com/v1beta1")
    );
    let golden = read_json(&testdata("openapi/tidbx-operations.json"));
    let golden = golden["operations"].as_array().unwrap();
    assert_eq!(spec.operations.len(), 20);
    assert_eq!(golden.len(), 20);
    for (operation, expected) in spec.operations.iter().zip(golden) {
        let at = &operation.id;
        assert_eq!(operation.id, expected["id"], "order and ids");
        assert_eq!(operation.method, expected["method"], "{at}");
        assert_eq!(operation.path, expected["path"], "{at}");
        let parameters: Vec<Value> = operation
            .parameters
            .iter()
            .filter(|parameter| parameter.location != ParameterLocation::Body)
            .map(|parameter| {
                json!({"name": parameter.name, "in": location_name(parameter.location), "required": parameter.required})
            })
            .collect();
        assert_eq!(Value::Array(parameters), expected["parameters"], "{at}");
        let fields: BTreeSet<&str> = operation
            .parameters
            .iter()
            .filter(|parameter| {
                parameter.location == ParameterLocation::Body && !parameter.read_only
            })
            .map(|parameter| parameter.name.as_str())
            .collect();
        let required: BTreeSet<&str> = operation
            .parameters
            .iter()
            .filter(|parameter| parameter.location == ParameterLocation::Body && parameter.required)
            .map(|parameter| parameter.name.as_str())
            .collect();
        match expected["body"].as_object() {
            None => assert!(operation.body.is_none(), "{at} has no body"),
            Some(body) => {
                let golden_fields: BTreeSet<&str> = body["fields"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter_map(Value::as_str)
                    .collect();
                let golden_required: BTreeSet<&str> = body["required"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter_map(Value::as_str)
                    .collect();
                assert_eq!(fields, golden_fields, "{at}: body fields");
                assert_eq!(required, golden_required, "{at}: required body fields");
            }
        }
    }
    // The resource states of the state machine, from the response enums.
    assert_eq!(
        spec.states["Cluster"],
        ["CREATING", "ACTIVE", "RESTORING", "DELETED"]
    );
    assert!(
        spec.states.contains_key("Branch"),
        "{:?}",
        spec.states.keys()
    );
    let get = spec.operation("ClusterService_GetCluster").unwrap();
    assert_eq!(get.success_status, Some(200));
    assert!(get.outputs.iter().any(|field| field == "clusterId"));

    let (_dir, registry) = round_trip(&spec, None);
    assert_eq!(registry.len(), 20);
    // A dotted path parameter, and a custom-method suffix, as the executor fills them.
    let patch = registry
        .tool("ClusterService_PartialUpdateCluster")
        .unwrap();
    assert_eq!(patch.path, "/clusters/{cluster.clusterId}");
    let request = patch.request.as_ref().unwrap();
    assert_eq!(request.path_params, ["cluster.clusterId"]);
    assert_eq!(
        request.body,
        Some(json!({"cluster": "{{?cluster}}", "updateMask": "{{updateMask}}"}))
    );
    let reset = registry.tool("BranchService_ResetBranch").unwrap();
    assert_eq!(
        reset.path,
        "/clusters/{clusterId}/branches/{branchId}:reset"
    );
    let create = registry.tool("ClusterService_CreateCluster").unwrap();
    let body = create.request.as_ref().unwrap().body.clone().unwrap();
    assert_eq!(body["displayName"], "{{displayName}}");
    assert_eq!(body["labels"], "{{?labels}}");
    assert!(
        body.get("clusterId").is_none(),
        "read-only fields are not sent"
    );
    let list = registry.tool("ClusterService_ListClusters").unwrap();
    assert_eq!(
        list.request.as_ref().unwrap().query_params,
        ["pageSize", "pageToken", "filter", "skip"]
    );
    assert_eq!(list.base_url, "https://serverless.tidbapi.com/v1beta1");
}

#[test]
fn tidb_zero_has_no_host_so_the_base_url_is_given_or_guessed_with_a_warning() {
    let Some(path) = fixture("tidbcloud/tidb-zero-openapi.json") else {
        return;
    };
    let spec = ApiSpec::load(&path).unwrap();
    let ids: Vec<&str> = spec.operations.iter().map(|op| op.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "PublicShadowPoolService_RequireDatabase",
            "PublicShadowPoolService_RequireActivationCode"
        ]
    );
    assert_eq!(spec.base_url, None);
    let imported = spec.imported_tools(None);
    assert!(
        imported[0].warnings[0].contains("names no host"),
        "{:?}",
        imported[0].warnings
    );
    let (_dir, registry) = round_trip(&spec, Some("http://127.0.0.1:9000/v1alpha1/"));
    let tool = registry
        .tool("PublicShadowPoolService_RequireDatabase")
        .unwrap();
    assert_eq!(tool.base_url, "http://127.0.0.1:9000/v1alpha1");
    assert_eq!(tool.path, "/instances");
}

#[test]
fn bays_openapi_31_spec_imports_every_operation() {
    let Some(path) = fixture("bay/openapi.json") else {
        return;
    };
    let spec = ApiSpec::load(&path).unwrap();
    assert_eq!(spec.version, SpecVersion::OpenApi3);
    assert_eq!(spec.operations.len(), 43);
    let create = spec.operation("create_sandbox_v1_sandboxes_post").unwrap();
    assert_eq!(
        (create.method.as_str(), create.path.as_str()),
        ("POST", "/v1/sandboxes")
    );
    assert!(
        create
            .parameters
            .iter()
            .any(|parameter| parameter.name == "Idempotency-Key"
                && parameter.input == "Idempotency_Key"
                && parameter.location == ParameterLocation::Header),
        "{:#?}",
        create.parameters
    );
    assert!(create.body.is_some());
    assert_eq!(create.success_status, Some(201));
    // Every answer with a schema, inlined, for checking responses (`expect.schema`).
    let statuses: Vec<&str> = create.response_schemas.keys().map(String::as_str).collect();
    assert_eq!(statuses, ["201", "422"]);
    let created = &create.response_schemas["201"];
    assert_eq!(created["properties"]["id"]["type"], "string");
    assert!(
        !created.to_string().contains("$ref"),
        "references are inlined: {created}"
    );
    let (_dir, registry) = round_trip(&spec, Some("http://127.0.0.1:8114"));
    assert_eq!(registry.len(), 43);
    let tool = registry.tool("create_sandbox_v1_sandboxes_post").unwrap();
    assert_eq!(
        tool.response_schemas["201"], *created,
        "kept in the tool file"
    );
}

#[test]
fn a_spec_split_over_files_with_a_recursive_schema_imports() {
    let spec = ApiSpec::load(&testdata("openapi/split/api.yaml")).unwrap();
    assert_eq!(spec.title, "Split pets");
    assert_eq!(
        spec.base_url.as_deref(),
        Some("https://eu.pets.example.com/api")
    );
    assert_eq!(
        spec.security["key"],
        Security::ApiKeyHeader {
            name: "X-Pet-Key".into()
        }
    );
    let ids: Vec<&str> = spec.operations.iter().map(|op| op.id.as_str()).collect();
    assert_eq!(
        ids,
        ["listPets", "post_pets", "getPetTree"],
        "a missing id is made"
    );
    assert!(spec.operations[1].generated_id);
    let list = &spec.operations[0];
    assert_eq!(
        list.parameters[0].name, "limit",
        "a parameter from the other file"
    );
    assert_eq!(list.parameters[0].location, ParameterLocation::Query);
    let add = &spec.operations[1];
    let required: Vec<&str> = add
        .required_inputs()
        .map(|parameter| parameter.name.as_str())
        .collect();
    assert_eq!(
        required,
        ["name", "kind"],
        "allOf's required fields, united"
    );
    assert_eq!(spec.states["Pet"], ["AVAILABLE", "ADOPTED"]);
    let tree = spec.operation("getPetTree").unwrap();
    assert_eq!(tree.parameters[0].name, "petId", "a path-level parameter");
    let response = tree.response.as_ref().unwrap();
    assert_eq!(response["x-ref-name"], "Node");
    // Where `Node` refers to itself, the recursion is cut and says so.
    assert_eq!(
        response["properties"]["children"]["items"]["x-recursive"],
        "#/schemas/Node"
    );
    let (_dir, registry) = round_trip(&spec, None);
    let tool = registry.tool("listPets").unwrap();
    let auth = tool.auth.as_ref().unwrap();
    assert_eq!(auth.header.as_deref(), Some("X-Pet-Key"));
    assert_eq!(
        tool.request.as_ref().unwrap().headers["X-Trace"],
        "{{X_Trace}}"
    );
}

#[test]
fn path_items_and_operations_in_other_files_import_whole() {
    let spec = ApiSpec::load(&testdata("openapi/split-paths/api.yaml")).unwrap();
    assert!(spec.warnings.is_empty(), "{:?}", spec.warnings);
    let ids: Vec<&str> = spec.operations.iter().map(|op| op.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "listPosts",
            "createPost",
            "getPost",
            "deletePost",
            "clearCache"
        ]
    );
    let get = spec.operation("getPost").unwrap();
    assert!(!get.generated_id);
    assert_eq!(get.summary, "Read a post");
    assert_eq!(
        (get.parameters[0].name.as_str(), get.parameters[0].location),
        ("postId", ParameterLocation::Path),
        "a parameter the operation's file refers to, relative to that file"
    );
    assert_eq!(get.parameters[0].kind.as_deref(), Some("integer"));
    assert_eq!(get.outputs, ["id", "title", "blogText"]);
    let create = spec.operation("createPost").unwrap();
    let required: Vec<&str> = create
        .required_inputs()
        .map(|parameter| parameter.name.as_str())
        .collect();
    assert_eq!(required, ["title"]);
    assert_eq!(create.success_status, Some(201));
    let delete = spec.operation("deletePost").unwrap();
    assert_eq!(
        delete.parameters.len(),
        1,
        "a `$ref` with a pointer into the file"
    );
    // The create's links: which later operation takes which of its answers.
    let links: Vec<(&str, &str, &LinkSource)> = create
        .links
        .iter()
        .map(|link| {
            (
                link.operation.as_str(),
                link.parameter.as_str(),
                &link.source,
            )
        })
        .collect();
    assert_eq!(
        links,
        [
            ("getPost", "postId", &LinkSource::Body("id".into())),
            (
                "DELETE /posts/{postId}",
                "postId",
                &LinkSource::Body("id".into())
            ),
            ("getPost", "postId", &LinkSource::Header("Location".into())),
        ],
        "a constant is no source"
    );
    assert!(create.links[1].feeds(delete) && !create.links[1].feeds(get));

    // No imported tool is empty, and those without inputs still say how to send them: no
    // `request` would take the legacy path, which sends a DELETE or POST a JSON body `{}`.
    let (_dir, registry) = round_trip(&spec, None);
    for id in ids {
        let tool = registry.tool(id).unwrap();
        assert!(tool.request.is_some(), "{id} has a request block");
    }
    let clear = registry.tool("clearCache").unwrap();
    assert_eq!(clear.method, "DELETE");
    let request = clear.request.as_ref().unwrap();
    assert!(request.body.is_none() && request.path_params.is_empty());
    let listed = wayline_registry::catalog_entries(&registry);
    let listed = listed
        .iter()
        .find(|entry| entry.id == "clearCache")
        .unwrap();
    assert_eq!(
        listed.endpoint.as_deref(),
        Some("DELETE http://blog.example.com/cache"),
        "the method the engine sends"
    );
}

#[test]
fn an_operation_that_would_import_empty_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("schema.yaml"),
        "type: object\nproperties: {id: {type: string}}\n",
    )
    .unwrap();
    let spec = dir.path().join("api.yaml");
    std::fs::write(
        &spec,
        "openapi: 3.0.0\ninfo: {title: t, version: '1'}\npaths:\n  /things:\n    get:\n      $ref: schema.yaml\n",
    )
    .unwrap();
    let error = ApiSpec::load(&spec).unwrap_err().to_string();
    assert!(error.contains("/paths/~1things/get"), "{error}");
    assert!(
        error.contains("GET /things has none of an operation's fields"),
        "{error}"
    );
    std::fs::write(
        &spec,
        "openapi: 3.0.0\ninfo: {title: t, version: '1'}\npaths:\n  /things:\n    get: {x-note: later}\n",
    )
    .unwrap();
    let error = ApiSpec::load(&spec).unwrap_err().to_string();
    assert!(error.contains("none of an operation's fields"), "{error}");
}

#[test]
fn documents_that_are_not_specs_get_errors_that_say_where() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path
    };
    let cases = [
        (
            "plain.yaml",
            "name: not a spec\n",
            "is this an OpenAPI document",
        ),
        (
            "old.json",
            r#"{"swagger": "1.2", "paths": {}}"#,
            "is not supported",
        ),
        ("broken.yaml", "openapi: 3.0.0\npaths: [\n", "broken.yaml"),
        (
            "dangling.json",
            r##"{"openapi": "3.0.0", "paths": {"/a": {"get": {"responses": {"200": {"description": "x", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Gone"}}}}}}}}}"##,
            "leads nowhere",
        ),
        (
            "elsewhere.json",
            r#"{"openapi": "3.0.0", "paths": {"/a": {"get": {"responses": {"200": {"description": "x", "content": {"application/json": {"schema": {"$ref": "missing.yaml#/X"}}}}}}}}}"#,
            "missing.yaml: cannot read",
        ),
    ];
    // Unquoted versions are numbers in YAML, and fine.
    let unquoted = ApiSpec::load(&write(
        "unquoted.yaml",
        "swagger: 2.0\nhost: h\npaths: {/a: {get: {responses: {'200': {description: ok}}}}}\n",
    ))
    .unwrap();
    assert_eq!(unquoted.operations[0].id, "get_a");
    // A reference out of the spec's directory is refused, not followed.
    let outside = ApiSpec::load(&write(
        "outside.json",
        r#"{"openapi": "3.0.0", "paths": {"/a": {"get": {"responses": {"200": {"description": "x", "content": {"application/json": {"schema": {"$ref": "/etc/hosts#/x"}}}}}}}}}"#,
    ))
    .unwrap_err()
    .to_string();
    assert!(
        outside.contains("outside the spec's directory"),
        "{outside}"
    );
    for (name, text, expected) in cases {
        let error = ApiSpec::load(&write(name, text)).unwrap_err().to_string();
        assert!(error.contains(expected), "{name}: {error}");
    }
    assert!(
        ApiSpec::load(Path::new("/no/such/spec.yaml"))
            .unwrap_err()
            .to_string()
            .contains("cannot read")
    );
}

/// Issue 31, item 2: a `$ref` is read only at or below the spec's directory, and what it
/// reaches is never quoted (`../../../../proc/self/environ` printed the environment).
#[test]
fn references_stay_beside_the_spec_and_are_never_quoted() {
    let dir = tempfile::tempdir().unwrap();
    let specs = dir.path().join("specs");
    std::fs::create_dir(&specs).unwrap();
    std::fs::write(dir.path().join("secret.yaml"), "x: {token: SECRET-VALUE}\n").unwrap();
    std::fs::write(specs.join("bad.yaml"), "x: [SECRET-VALUE\n").unwrap();
    let spec_with = |reference: &str| {
        let path = specs.join("openapi.json");
        std::fs::write(
            &path,
            format!(
                r#"{{"openapi": "3.0.0", "paths": {{"/a": {{"get": {{"responses": {{"200": {{"description": "x", "content": {{"application/json": {{"schema": {{"$ref": "{reference}"}}}}}}}}}}}}}}}}}}"#
            ),
        )
        .unwrap();
        path
    };
    for (reference, expected) in [
        ("../../../../../../../../proc/self/environ#/x", "outside"),
        ("../secret.yaml#/x", "outside"),
        ("bad.yaml#/x", "bad.yaml"),
    ] {
        let error = ApiSpec::load(&spec_with(reference))
            .unwrap_err()
            .to_string();
        assert!(error.contains(expected), "{reference}: {error}");
        assert!(!error.contains("SECRET-VALUE"), "{reference}: {error}");
        assert!(!error.contains("PATH="), "{reference}: {error}");
    }
    // Allowed, the file beside the directory is read.
    let allowed = ApiSpec::load_within(
        &spec_with("../secret.yaml#/x"),
        wayline_durable::read::ReadScope::beside(&specs.join("openapi.json")).allow(dir.path()),
    );
    assert!(allowed.is_ok(), "{allowed:?}");
}

#[test]
fn fields_beside_a_path_items_ref_are_kept() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("item.yaml"),
        "get: {operationId: listThings, responses: {'200': {description: ok}}}\n",
    )
    .unwrap();
    let spec = dir.path().join("api.yaml");
    std::fs::write(
        &spec,
        "openapi: 3.1.0\ninfo: {title: t, version: '1'}\npaths:\n  /things:\n    $ref: item.yaml\n    parameters: [{name: X-Trace, in: header, required: true, schema: {type: string}}]\n",
    )
    .unwrap();
    let spec = ApiSpec::load(&spec).unwrap();
    let list = spec.operation("listThings").unwrap();
    assert_eq!(list.parameters[0].name, "X-Trace");
}
