//! The loopback server's HTTP, seen raw (not through `BayClient`): Bay's status codes, auth,
//! request ids, FastAPI's 422 shape, the upload form and the download headers.

use std::sync::Arc;

use serde_json::json;
use wayline_core::transport::{Header, HttpRequest, Transport};
use wayline_executor::ReqwestTransport;
use wayline_sandbox::{
    CargoQuery, CreateCargo, CreateSandbox, ErrorCode, ListQuery, SandboxProvider,
};

use crate::common::{Raw, TOKEN, Via, json_of, python_available, target};

#[tokio::test]
async fn bays_statuses_auth_request_ids_and_422() {
    let target = target(Via::Http).await;
    let raw = Raw {
        base: target.server.as_ref().unwrap().url(),
        transport: ReqwestTransport::new().unwrap(),
    };
    let health = raw.send("GET", "/health", None, None).await;
    assert_eq!(
        (health.status, json_of(&health)),
        (200, json!({"status": "ok", "version": "0.3.1"}))
    );
    // Profiles need no auth; sandboxes do.
    let profiles = raw.send("GET", "/v1/profiles", None, None).await;
    assert_eq!(profiles.status, 200);
    assert_eq!(json_of(&profiles)["items"][0]["id"], "python-default");
    let anonymous = raw.send("GET", "/v1/sandboxes", None, None).await;
    assert_eq!(anonymous.status, 401);
    assert_eq!(
        json_of(&anonymous),
        json!({"error": {"code": "unauthorized", "message": "Authentication required", "request_id": "req-test-1"}})
    );
    assert_eq!(anonymous.header("x-request-id"), Some("req-test-1"));
    let wrong = raw.send("GET", "/v1/sandboxes", None, Some("nope")).await;
    assert_eq!(json_of(&wrong)["error"]["message"], "Invalid API key");
    // Create is 201, delete 204 with no body, then 404; deleting again is still 204.
    let created = raw
        .send(
            "POST",
            "/v1/sandboxes",
            Some(json!({"ttl": 60})),
            Some(TOKEN),
        )
        .await;
    assert_eq!(created.status, 201);
    let id = json_of(&created)["id"].as_str().unwrap().to_owned();
    let created_at = json_of(&created)["created_at"].as_str().unwrap().to_owned();
    assert_eq!(created_at, "2026-11-23T10:00:00.000000", "naive, as Bay");
    // FastAPI's 422: a missing field, a timeout out of range, a missing query parameter.
    let no_code = raw
        .send(
            "POST",
            &format!("/v1/sandboxes/{id}/python/exec"),
            Some(json!({"timeout": 5})),
            Some(TOKEN),
        )
        .await;
    assert_eq!(no_code.status, 422);
    assert_eq!(
        json_of(&no_code),
        json!({"detail": [{"type": "missing", "loc": ["body", "code"], "msg": "Field required", "input": null}]})
    );
    let too_long = raw
        .send(
            "POST",
            &format!("/v1/sandboxes/{id}/shell/exec"),
            Some(json!({"command": "ls", "timeout": 301})),
            Some(TOKEN),
        )
        .await;
    assert_eq!(too_long.status, 422);
    assert_eq!(json_of(&too_long)["detail"][0]["ctx"], json!({"le": 300}));
    let no_path = raw
        .send(
            "GET",
            &format!("/v1/sandboxes/{id}/filesystem/files"),
            None,
            Some(TOKEN),
        )
        .await;
    assert_eq!(
        (
            no_path.status,
            json_of(&no_path)["detail"][0]["loc"].clone()
        ),
        (422, json!(["query", "path"]))
    );
    let bad_limit = raw
        .send("GET", "/v1/sandboxes?limit=lots", None, Some(TOKEN))
        .await;
    assert_eq!(bad_limit.status, 422);
    let deleted = raw
        .send("DELETE", &format!("/v1/sandboxes/{id}"), None, Some(TOKEN))
        .await;
    assert_eq!((deleted.status, deleted.body.len()), (204, 0));
    let gone = raw
        .send("GET", &format!("/v1/sandboxes/{id}"), None, Some(TOKEN))
        .await;
    assert_eq!(gone.status, 404);
    assert_eq!(json_of(&gone)["error"]["code"], "not_found");
    let again = raw
        .send("DELETE", &format!("/v1/sandboxes/{id}"), None, Some(TOKEN))
        .await;
    assert_eq!(again.status, 204);
}

#[tokio::test]
async fn uploads_are_forms_and_downloads_are_attachments() {
    let target = target(Via::Http).await;
    let base = target.server.as_ref().unwrap().url();
    let transport = ReqwestTransport::new().unwrap();
    let info = target.provider.create(&Default::default()).await.unwrap();
    // A form as the SDK (httpx) sends it, the file's own name ignored.
    let boundary = "----form-boundary-42";
    let mut body = format!(
        "--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"ignored.bin\"\r\n\
         Content-Type: application/octet-stream\r\n\r\n"
    )
    .into_bytes();
    body.extend_from_slice(&[0, 159, 146, 150, 255]);
    body.extend_from_slice(
        format!("\r\n--{boundary}\r\nContent-Disposition: form-data; name=\"path\"\r\n\r\ndata/../blob.bin\r\n--{boundary}--\r\n")
            .as_bytes(),
    );
    let mut request = HttpRequest::new(
        "POST",
        format!("{base}/v1/sandboxes/{}/filesystem/upload", info.id),
    );
    request.headers = vec![
        Header::sensitive("Authorization", format!("Bearer {TOKEN}")),
        Header::new(
            "Content-Type",
            format!("multipart/form-data; boundary={boundary}"),
        ),
    ];
    request.body = Some(body);
    let uploaded = transport.send(request).await.unwrap();
    assert_eq!(uploaded.status, 200, "{}", uploaded.text());
    assert_eq!(
        json_of(&uploaded),
        json!({"status": "ok", "path": "blob.bin", "size": 5})
    );
    let mut request = HttpRequest::new(
        "GET",
        format!(
            "{base}/v1/sandboxes/{}/filesystem/download?path=blob.bin",
            info.id
        ),
    );
    request.headers.push(Header::sensitive(
        "Authorization",
        format!("Bearer {TOKEN}"),
    ));
    let downloaded = transport.send(request).await.unwrap();
    assert_eq!(downloaded.body, [0, 159, 146, 150, 255]);
    assert_eq!(
        downloaded.header("content-type"),
        Some("application/octet-stream")
    );
    assert_eq!(
        downloaded.header("content-disposition"),
        Some("attachment; filename=\"blob.bin\"")
    );
    // A body that is not a form: without the token, a 401 first (it was a 400 before the
    // auth check); with it, FastAPI's 422.
    let upload_url = format!("{base}/v1/sandboxes/{}/filesystem/upload", info.id);
    let mut unsigned = HttpRequest::new("POST", upload_url.clone());
    unsigned.body = Some(b"not a form".to_vec());
    let refused = transport.send(unsigned.clone()).await.unwrap();
    assert_eq!(refused.status, 401, "{}", refused.text());
    unsigned.headers.push(Header::sensitive(
        "Authorization",
        format!("Bearer {TOKEN}"),
    ));
    let unreadable = transport.send(unsigned).await.unwrap();
    assert_eq!(unreadable.status, 422, "{}", unreadable.text());
    // The listing shows Bay's shape.
    let entries = target.provider.list_files(&info.id, ".").await.unwrap();
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0].path, "/workspace/blob.bin");
    assert_eq!(entries[0].size, Some(5));
}

#[tokio::test]
async fn uploads_past_the_profiles_file_limit_are_refused_and_nothing_is_written() {
    let target = target(Via::Http).await;
    let base = target.server.as_ref().unwrap().url();
    let transport = ReqwestTransport::new().unwrap();
    let info = target
        .provider
        .create(&CreateSandbox::new("small-files-test"))
        .await
        .unwrap();
    let upload = |size: usize, path: &str| {
        let boundary = "----limit-boundary";
        let mut body = format!(
            "--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"f\"\r\n\r\n"
        )
        .into_bytes();
        body.extend(std::iter::repeat_n(b'x', size));
        body.extend_from_slice(
            format!("\r\n--{boundary}\r\nContent-Disposition: form-data; name=\"path\"\r\n\r\n{path}\r\n--{boundary}--\r\n")
                .as_bytes(),
        );
        let mut request = HttpRequest::new(
            "POST",
            format!("{base}/v1/sandboxes/{}/filesystem/upload", info.id),
        );
        request.headers = vec![
            Header::sensitive("Authorization", format!("Bearer {TOKEN}")),
            Header::new(
                "Content-Type",
                format!("multipart/form-data; boundary={boundary}"),
            ),
        ];
        request.body = Some(body);
        transport.send(request)
    };
    const MIB: usize = 1024 * 1024;
    let refused = upload(MIB + 1, "big.bin").await.unwrap();
    assert_eq!(refused.status, 400, "{}", refused.text());
    let error = &json_of(&refused)["error"];
    assert_eq!(error["code"], "validation_error");
    assert_eq!(error["details"]["limit"], MIB);
    assert_eq!(error["details"]["size"], MIB + 1);
    assert!(
        target
            .provider
            .list_files(&info.id, ".")
            .await
            .unwrap()
            .is_empty(),
        "nothing half-written"
    );
    let written = target
        .provider
        .write_file(&info.id, "big.txt", &"x".repeat(MIB + 1))
        .await
        .unwrap_err();
    assert_eq!(written.details["limit"], MIB);
    let accepted = upload(MIB, "fits.bin").await.unwrap();
    assert_eq!(accepted.status, 200, "{}", accepted.text());
    assert_eq!(json_of(&accepted)["size"], MIB);
    // The default profile keeps the provider's own limit (100 MiB).
    let default = target.provider.create(&Default::default()).await.unwrap();
    target
        .provider
        .write_file(&default.id, "big.txt", &"x".repeat(MIB + 1))
        .await
        .unwrap();
    // The limit is shown with the profile.
    let profiles = target.provider.profiles().await.unwrap();
    let small = profiles
        .iter()
        .find(|p| p.id == "small-files-test")
        .unwrap();
    assert_eq!(small.extra["max_file_mb"], 1);
}

#[tokio::test]
async fn history_is_served_newest_first_with_filters() {
    if !python_available() {
        return;
    }
    let target = target(Via::Http).await;
    let provider = Arc::clone(&target.provider);
    let id = provider.create(&Default::default()).await.unwrap().id;
    provider
        .python_exec(&id, &wayline_sandbox::PythonExec::new("1 + 1"))
        .await
        .unwrap();
    let shell = provider
        .shell_exec(&id, &wayline_sandbox::ShellExec::new("exit 4"))
        .await
        .unwrap();
    assert_eq!((shell.success, shell.exit_code), (false, Some(4)));
    let all = provider.history(&id, &Default::default()).await.unwrap();
    assert_eq!(all.total, 2);
    assert_eq!(all.entries[0].exec_type, "shell");
    assert_eq!(all.entries[1].output.as_deref(), Some("2"));
    let mut query = wayline_sandbox::HistoryQuery::default();
    query.success_only = true;
    let successes = provider.history(&id, &query).await.unwrap();
    assert_eq!(successes.total, 1);
    let one = provider.execution(&id, &shell.execution_id).await.unwrap();
    assert_eq!(one.code, "exit 4");
    let missing = provider.execution(&id, "exec-000").await.unwrap_err();
    assert_eq!(missing.code, wayline_sandbox::ErrorCode::NotFound);
}

#[tokio::test]
async fn history_entries_are_annotated_and_filtered_by_notes_tags_and_type() {
    let target = target(Via::Http).await;
    let provider = Arc::clone(&target.provider);
    let id = provider.create(&Default::default()).await.unwrap().id;
    let mut executions = Vec::new();
    for command in ["echo one", "echo two", "echo three"] {
        let ran = provider
            .shell_exec(&id, &wayline_sandbox::ShellExec::new(command))
            .await
            .unwrap();
        executions.push(ran.execution_id);
    }
    // Through BayClient: PATCH sets what it names and keeps the rest.
    let mut annotation = wayline_sandbox::Annotation::default();
    annotation.notes = Some("flaky on Mondays".into());
    annotation.tags = Some("slow, retry".into());
    let annotated = provider
        .annotate(&id, &executions[0], &annotation)
        .await
        .unwrap();
    assert_eq!(annotated.notes.as_deref(), Some("flaky on Mondays"));
    let mut description = wayline_sandbox::Annotation::default();
    description.description = Some("the first".into());
    let again = provider
        .annotate(&id, &executions[0], &description)
        .await
        .unwrap();
    assert_eq!(
        (
            again.description.as_deref(),
            again.notes.as_deref(),
            again.tags.as_deref()
        ),
        (
            Some("the first"),
            Some("flaky on Mondays"),
            Some("slow, retry")
        )
    );
    let stored = provider.execution(&id, &executions[0]).await.unwrap();
    assert_eq!(stored, again, "kept");
    let unknown = provider
        .annotate(&id, "exec-000000000000", &annotation)
        .await
        .unwrap_err();
    assert_eq!(unknown.code, ErrorCode::NotFound);
    let mut query = wayline_sandbox::HistoryQuery::default();
    query.has_notes = true;
    assert_eq!(provider.history(&id, &query).await.unwrap().total, 1);
    query.has_notes = false;
    assert_eq!(
        provider.history(&id, &query).await.unwrap().total,
        3,
        "false filters nothing, as Bay's SDK expects"
    );
    let mut query = wayline_sandbox::HistoryQuery::default();
    query.tags = Some("retry".into());
    let tagged = provider.history(&id, &query).await.unwrap();
    assert_eq!(tagged.entries.len(), 1);
    assert_eq!(tagged.entries[0].id, executions[0]);
    query.tags = Some("nothing,else".into());
    assert_eq!(provider.history(&id, &query).await.unwrap().total, 0);

    // Raw HTTP: the same route, and FastAPI's 422s for a bad filter or body.
    let raw = Raw {
        base: target.server.as_ref().unwrap().url(),
        transport: ReqwestTransport::new().unwrap(),
    };
    let patched = raw
        .send(
            "PATCH",
            &format!("/v1/sandboxes/{id}/history/{}", executions[1]),
            Some(json!({"notes": "second", "tags": null})),
            Some(TOKEN),
        )
        .await;
    assert_eq!(patched.status, 200, "{}", patched.text());
    assert_eq!(json_of(&patched)["notes"], "second");
    let listed = raw
        .send(
            "GET",
            &format!("/v1/sandboxes/{id}/history?has_notes=true&exec_type=shell"),
            None,
            Some(TOKEN),
        )
        .await;
    assert_eq!(json_of(&listed)["total"], 2);
    let bad_type = raw
        .send(
            "GET",
            &format!("/v1/sandboxes/{id}/history?exec_type=ruby"),
            None,
            Some(TOKEN),
        )
        .await;
    assert_eq!(bad_type.status, 422);
    let detail = &json_of(&bad_type)["detail"][0];
    assert_eq!(detail["loc"], json!(["query", "exec_type"]));
    assert_eq!(detail["type"], "string_pattern_mismatch");
    let bad_bool = raw
        .send(
            "GET",
            &format!("/v1/sandboxes/{id}/history?has_notes=maybe"),
            None,
            Some(TOKEN),
        )
        .await;
    assert_eq!(bad_bool.status, 422);
    assert_eq!(json_of(&bad_bool)["detail"][0]["type"], "bool_parsing");
    let bad_body = raw
        .send(
            "PATCH",
            &format!("/v1/sandboxes/{id}/history/{}", executions[1]),
            Some(json!({"notes": 5})),
            Some(TOKEN),
        )
        .await;
    assert_eq!(bad_body.status, 422, "{}", bad_body.text());
    let unsigned = raw
        .send(
            "PATCH",
            &format!("/v1/sandboxes/{id}/history/{}", executions[1]),
            Some(json!({"notes": "x"})),
            None,
        )
        .await;
    assert_eq!(unsigned.status, 401);
}

#[tokio::test]
async fn cargos_are_made_listed_mounted_kept_and_deleted_as_bay_does() {
    let target = target(Via::Http).await;
    let provider = Arc::clone(&target.provider);
    // Through BayClient.
    let default = provider
        .create_cargo(&CreateCargo::default())
        .await
        .unwrap();
    assert!(default.id.starts_with("ws-"), "{default:?}");
    assert_eq!(
        (
            default.managed,
            default.size_limit_mb,
            default.backend.as_str()
        ),
        (false, 1024, "local_directory")
    );
    let mut keyed = CreateCargo::default();
    keyed.size_limit_mb = Some(10);
    keyed.idempotency_key = Some("cargo-key-1".into());
    let first = provider.create_cargo(&keyed).await.unwrap();
    let again = provider.create_cargo(&keyed).await.unwrap();
    assert_eq!(first, again, "the same key answers the same cargo");
    assert_eq!(first.size_limit_mb, 10);
    // A sandbox of its own makes a managed cargo; the default list shows external ones only.
    let own = provider.create(&Default::default()).await.unwrap();
    let external = provider.list_cargos(&CargoQuery::default()).await.unwrap();
    let ids: Vec<&str> = external
        .items
        .iter()
        .map(|cargo| cargo.id.as_str())
        .collect();
    let mut both = [default.id.as_str(), first.id.as_str()];
    both.sort_unstable();
    assert_eq!(ids, both, "by id");
    let mut managed = CargoQuery::default();
    managed.managed = Some(true);
    let managed = provider.list_cargos(&managed).await.unwrap();
    assert_eq!(managed.items.len(), 1);
    assert_eq!(managed.items[0].id, own.cargo_id.clone().unwrap());
    assert_eq!(
        managed.items[0].managed_by_sandbox_id.as_deref(),
        Some(own.id.as_str())
    );
    let mut paged = CargoQuery::default();
    paged.limit = Some(1);
    let page = provider.list_cargos(&paged).await.unwrap();
    assert_eq!(page.items[0].id, both[0]);
    paged.cursor = page.next_cursor;
    let rest = provider.list_cargos(&paged).await.unwrap();
    assert_eq!(rest.items[0].id, both[1]);
    assert_eq!(rest.next_cursor, None);
    // An external cargo outlives the sandboxes that mount it.
    let mut mounting = CreateSandbox::default();
    mounting.cargo_id = Some(first.id.clone());
    let one = provider.create(&mounting).await.unwrap();
    assert_eq!(one.cargo_id.as_deref(), Some(first.id.as_str()));
    provider
        .write_file(&one.id, "kept.txt", "still here")
        .await
        .unwrap();
    provider.delete(&one.id).await.unwrap();
    let two = provider.create(&mounting).await.unwrap();
    assert_eq!(
        provider.read_file(&two.id, "kept.txt").await.unwrap(),
        "still here"
    );
    let busy = provider.delete_cargo(&first.id).await.unwrap_err();
    assert_eq!(busy.code, ErrorCode::Conflict);
    assert_eq!(busy.details["active_sandbox_ids"], json!([two.id]));
    provider.delete(&two.id).await.unwrap();
    provider.delete_cargo(&first.id).await.unwrap();
    let gone = provider.get_cargo(&first.id).await.unwrap_err();
    assert_eq!(gone.code, ErrorCode::NotFound);
    // The sandbox's own cargo goes with it.
    provider.delete(&own.id).await.unwrap();
    let mut managed = CargoQuery::default();
    managed.managed = Some(true);
    assert!(
        provider
            .list_cargos(&managed)
            .await
            .unwrap()
            .items
            .is_empty()
    );
    // What cannot be mounted.
    let mut unknown = CreateSandbox::default();
    unknown.cargo_id = Some("ws-000000000000".into());
    assert_eq!(
        provider.create(&unknown).await.unwrap_err().code,
        ErrorCode::NotFound
    );

    // Raw HTTP: statuses and FastAPI's 422s.
    let raw = Raw {
        base: target.server.as_ref().unwrap().url(),
        transport: ReqwestTransport::new().unwrap(),
    };
    let made = raw
        .send(
            "POST",
            "/v1/cargos",
            Some(json!({"size_limit_mb": 5})),
            Some(TOKEN),
        )
        .await;
    assert_eq!(made.status, 201, "{}", made.text());
    let made = json_of(&made);
    for field in [
        "id",
        "managed",
        "managed_by_sandbox_id",
        "backend",
        "size_limit_mb",
        "created_at",
        "last_accessed_at",
    ] {
        assert!(made.get(field).is_some(), "{field} in {made}");
    }
    for (size, kind) in [(0, "greater_than_equal"), (65537, "less_than_equal")] {
        let refused = raw
            .send(
                "POST",
                "/v1/cargos",
                Some(json!({"size_limit_mb": size})),
                Some(TOKEN),
            )
            .await;
        assert_eq!(refused.status, 422);
        let detail = &json_of(&refused)["detail"][0];
        assert_eq!(
            (detail["type"].as_str(), &detail["loc"]),
            (Some(kind), &json!(["body", "size_limit_mb"]))
        );
    }
    let bad_limit = raw
        .send("GET", "/v1/cargos?limit=0", None, Some(TOKEN))
        .await;
    assert_eq!(bad_limit.status, 422);
    let id = made["id"].as_str().unwrap();
    let got = raw
        .send("GET", &format!("/v1/cargos/{id}"), None, Some(TOKEN))
        .await;
    assert_eq!(got.status, 200);
    let deleted = raw
        .send("DELETE", &format!("/v1/cargos/{id}"), None, Some(TOKEN))
        .await;
    assert_eq!((deleted.status, deleted.body.len()), (204, 0));
    let missing = raw
        .send("GET", &format!("/v1/cargos/{id}"), None, Some(TOKEN))
        .await;
    assert_eq!(missing.status, 404);
    assert_eq!(json_of(&missing)["error"]["code"], "not_found");
    let anonymous = raw.send("GET", "/v1/cargos", None, None).await;
    assert_eq!(anonymous.status, 401);
}

#[tokio::test]
async fn garbage_is_collected_when_asked_and_only_then_with_auto_gc_off() {
    let dir = tempfile::tempdir().unwrap();
    let clock = wayline_sandbox::clock::ManualClock::new(crate::common::start_time());
    let local = wayline_sandbox::LocalProvider::open(
        wayline_sandbox::LocalConfig::new(dir.path())
            .isolation(wayline_sandbox::local::IsolationMode::None)
            .clock(Arc::new(clock.clone()))
            .auto_gc(false),
    )
    .unwrap();
    let server = wayline_sandbox::server::BayServer::loopback(
        Arc::new(local),
        wayline_sandbox::server::ServeOptions::default().token(TOKEN),
    )
    .await
    .unwrap();
    let client = crate::common::client_for(&server.url());
    let status = client.gc_status().await.unwrap();
    assert!(!status.enabled);
    assert_eq!(status.tasks.len(), 4);
    // A sandbox that goes idle, one that expires, an external cargo, a stray directory.
    let idle = client.create(&Default::default()).await.unwrap();
    client
        .shell_exec(
            &idle.id,
            &wayline_sandbox::ShellExec::new("echo kept > f.txt"),
        )
        .await
        .unwrap();
    let mut short = CreateSandbox::default();
    short.ttl = Some(60);
    let expiring = client.create(&short).await.unwrap();
    let external = client.create_cargo(&CreateCargo::default()).await.unwrap();
    std::fs::create_dir_all(dir.path().join("cargos/ws-stray00000000")).unwrap();
    clock.advance(chrono::Duration::seconds(3_600));
    // Nothing is collected on its own: the idle deadline stays visible.
    let seen = client.get(&idle.id).await.unwrap();
    assert!(seen.idle_expires_at.is_some(), "{seen:?}");
    assert_eq!(seen.status, wayline_sandbox::Status::Ready);
    // Collected when asked, task by task.
    let run = client
        .run_gc(Some(&["idle_session".to_owned()]))
        .await
        .unwrap();
    assert_eq!(run.results.len(), 1);
    assert_eq!(
        (run.results[0].task_name.as_str(), run.total_cleaned),
        ("idle_session", 1)
    );
    let stopped = client.get(&idle.id).await.unwrap();
    assert_eq!(
        (stopped.status, stopped.idle_expires_at),
        (wayline_sandbox::Status::Idle, None)
    );
    assert_eq!(client.read_file(&idle.id, "f.txt").await.unwrap(), "kept\n");
    let run = client.run_gc(None).await.unwrap();
    let cleaned: Vec<(&str, u64)> = run
        .results
        .iter()
        .map(|result| (result.task_name.as_str(), result.cleaned_count))
        .collect();
    assert_eq!(
        cleaned,
        [
            ("idle_session", 0),
            ("expired_sandbox", 1),
            ("orphan_cargo", 1),
            ("orphan_container", 0)
        ],
        "the expired sandbox (its own cargo with it), then the stray directory: {run:?}"
    );
    assert_eq!((run.total_cleaned, run.total_errors), (2, 0));
    assert_eq!(
        client.get(&expiring.id).await.unwrap_err().code,
        ErrorCode::NotFound
    );
    assert!(
        client.get_cargo(&external.id).await.is_ok(),
        "never an external cargo"
    );
    assert!(!dir.path().join("cargos/ws-stray00000000").exists());
    assert!(client.get(&idle.id).await.is_ok());
    // Raw HTTP: an unknown task is FastAPI's 422; no body runs everything.
    let raw = Raw {
        base: server.url(),
        transport: ReqwestTransport::new().unwrap(),
    };
    let refused = raw
        .send(
            "POST",
            "/v1/admin/gc/run",
            Some(json!({"tasks": ["everything"]})),
            Some(TOKEN),
        )
        .await;
    assert_eq!(refused.status, 422);
    assert_eq!(
        json_of(&refused)["detail"][0]["loc"],
        json!(["body", "tasks", 0])
    );
    let all = raw
        .send("POST", "/v1/admin/gc/run", None, Some(TOKEN))
        .await;
    assert_eq!(all.status, 200, "{}", all.text());
    for field in ["results", "total_cleaned", "total_errors", "duration_ms"] {
        assert!(json_of(&all).get(field).is_some(), "{field}");
    }
    let unsigned = raw.send("GET", "/v1/admin/gc/status", None, None).await;
    assert_eq!(unsigned.status, 401);
}

/// Issue 31, items 4 and 5: a page that rebinds its DNS name to loopback, or any web page, is
/// refused before anything runs, even with the token; a JSON body must say it is JSON (a
/// page's `text/plain` simple request is not read as one); auth is checked before a body is
/// read, and bodies are limited per route.
#[tokio::test]
async fn browsers_and_unauthenticated_bodies_are_refused_before_anything_runs() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    let target = target(Via::Http).await;
    let server = target.server.as_ref().unwrap();
    let transport = ReqwestTransport::new().unwrap();
    let send = |headers: Vec<(&'static str, String)>, body: Option<String>| {
        let mut request = HttpRequest::new("POST", format!("{}/v1/sandboxes", server.url()));
        for (name, value) in headers {
            request.headers.push(Header::new(name, value));
        }
        request.body = body.map(String::into_bytes);
        transport.send(request)
    };
    let bearer = ("Authorization", format!("Bearer {TOKEN}"));
    let json = ("Content-Type", "application/json".to_owned());
    let rebound = send(
        vec![
            bearer.clone(),
            json.clone(),
            ("Host", "attacker.example".to_owned()),
        ],
        Some("{}".into()),
    )
    .await
    .unwrap();
    assert_eq!(rebound.status, 403, "{}", rebound.text());
    let from_a_page = send(
        vec![
            bearer.clone(),
            json.clone(),
            ("Origin", "https://evil.example".to_owned()),
        ],
        Some("{}".into()),
    )
    .await
    .unwrap();
    assert_eq!(from_a_page.status, 403);
    assert_eq!(json_of(&from_a_page)["error"]["code"], "forbidden");
    let plain = send(
        vec![bearer.clone(), ("Content-Type", "text/plain".to_owned())],
        Some("{}".into()),
    )
    .await
    .unwrap();
    assert_eq!(plain.status, 422, "{}", plain.text());
    assert_eq!(json_of(&plain)["detail"][0]["type"], "content_type");
    let too_large = send(
        vec![bearer.clone(), json.clone()],
        Some(format!("{{\"pad\": \"{}\"}}", "x".repeat(5 << 20))),
    )
    .await
    .unwrap();
    assert_eq!(too_large.status, 413, "a sandbox's settings are not 5 MiB");
    // Nothing was created by any of them.
    assert!(
        target
            .provider
            .list(&ListQuery::new())
            .await
            .unwrap()
            .items
            .is_empty()
    );

    // Without the token, 120 MiB announced and a few bytes sent: the answer comes at once,
    // without waiting for (or reading) the rest.
    let mut stream = tokio::net::TcpStream::connect(server.address())
        .await
        .unwrap();
    stream
        .write_all(
            format!(
                "POST /v1/sandboxes/x/filesystem/upload HTTP/1.1\r\nHost: 127.0.0.1\r\n\
                 Content-Type: multipart/form-data; boundary=b\r\nContent-Length: {}\r\n\r\n--b\r\n",
                120 << 20
            )
            .as_bytes(),
        )
        .await
        .unwrap();
    let mut answer = vec![0u8; 4096];
    let read = tokio::time::timeout(std::time::Duration::from_secs(10), stream.read(&mut answer))
        .await
        .expect("answered without the body")
        .unwrap();
    let answer = String::from_utf8_lossy(&answer[..read]);
    assert!(answer.starts_with("HTTP/1.1 401"), "{answer}");
}

/// Issue 31, item 4: a server without a token starts only when opened on purpose, on loopback.
#[tokio::test]
async fn a_server_without_a_token_starts_only_on_purpose_on_loopback() {
    let dir = tempfile::tempdir().unwrap();
    let provider = Arc::new(
        wayline_sandbox::LocalProvider::open(
            wayline_sandbox::LocalConfig::new(dir.path())
                .isolation(wayline_sandbox::local::IsolationMode::None),
        )
        .unwrap(),
    );
    let implicit = wayline_sandbox::server::BayServer::loopback(
        provider.clone(),
        wayline_sandbox::server::ServeOptions::default(),
    )
    .await;
    assert!(implicit.is_err());
    let listener = tokio::net::TcpListener::bind(("0.0.0.0", 0)).await.unwrap();
    let everywhere = wayline_sandbox::server::BayServer::start(
        listener,
        provider.clone(),
        wayline_sandbox::server::ServeOptions::default().anonymous(),
    );
    assert!(everywhere.is_err());
    let on_purpose = wayline_sandbox::server::BayServer::loopback(
        provider,
        wayline_sandbox::server::ServeOptions::default().anonymous(),
    )
    .await;
    assert!(on_purpose.is_ok());
}

/// The local provider is not a security boundary, and the server says so: `/health` reports
/// the isolation mode as the provider describes it.
#[tokio::test]
async fn health_reports_the_isolation_and_that_it_is_no_security_boundary() {
    let dir = tempfile::tempdir().unwrap();
    let clock = wayline_sandbox::clock::ManualClock::new(crate::common::start_time());
    let local = crate::common::local_provider(dir.path(), &clock);
    let server = wayline_sandbox::server::BayServer::loopback(
        Arc::new(local.clone()),
        wayline_sandbox::server::ServeOptions::default()
            .token(TOKEN)
            .isolation(local.isolation().describe()),
    )
    .await
    .unwrap();
    let raw = Raw {
        base: server.url(),
        transport: ReqwestTransport::new().unwrap(),
    };
    let health = json_of(&raw.send("GET", "/health", None, None).await);
    let said = health["isolation"].as_str().unwrap_or_default();
    assert_eq!(said, local.isolation().describe());
    assert!(said.contains("not a security boundary"), "{said}");
}
