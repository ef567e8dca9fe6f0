//! Bay's skill lifecycle end to end: executions → candidates → evaluations → releases →
//! health → rollback → deletion, on the local provider and through `BayClient` over the
//! loopback server; Bay's error answers over raw HTTP; the books surviving a restart.

use std::sync::Arc;

use serde_json::json;
use wayline_sandbox::{
    CandidateQuery, CandidateStatus, CreateSandbox, ErrorCode, Evaluation, HistoryQuery,
    NewCandidate, NewPayload, Promotion, ReleaseQuery, ReleaseStage, SandboxProvider, ShellExec,
    SkillLifecycle,
};

use crate::common::{Via, json_of, local_provider, start_time, target};

/// Runs `command` in `sandbox` tagged `tags`, answering its execution id.
async fn run(
    provider: &Arc<dyn SandboxProvider>,
    sandbox: &str,
    command: &str,
    tags: &str,
) -> String {
    let mut exec = ShellExec::new(command);
    exec.tags = Some(tags.to_owned());
    let result = provider.shell_exec(sandbox, &exec).await.unwrap();
    result.execution_id
}

fn only_active(skill: &str) -> ReleaseQuery {
    let mut query = ReleaseQuery::default();
    query.skill_key = Some(skill.to_owned());
    query.active_only = true;
    query
}

async fn lifecycle(via: Via) {
    let target = target(via).await;
    let provider = Arc::clone(&target.provider);
    let sandbox = provider.create(&CreateSandbox::default()).await.unwrap();
    let exec_a = run(
        &provider,
        &sandbox.id,
        "echo candidate-a",
        "skills,evidence",
    )
    .await;

    // A payload kept as a blob, and a candidate pointing at it.
    let kept = provider
        .create_payload(&NewPayload::new(json!({"commands": ["echo a"]})).kind("candidate_payload"))
        .await
        .unwrap();
    assert!(kept.payload_ref.starts_with("blob:blob-"), "{kept:?}");
    let read = provider.payload(&kept.payload_ref).await.unwrap();
    assert_eq!(
        (read.kind.as_str(), &read.payload),
        ("candidate_payload", &json!({"commands": ["echo a"]}))
    );
    let a = provider
        .create_candidate(
            &NewCandidate::new(" csv-loader ", [exec_a.as_str()])
                .scenario("etl.csv")
                .payload_ref(&kept.payload_ref),
        )
        .await
        .unwrap();
    assert!(a.id.starts_with("sc-"), "{a:?}");
    assert_eq!(a.skill_key, "csv-loader", "the key is trimmed");
    assert_eq!(a.status, CandidateStatus::Draft);
    assert_eq!(a.source_execution_ids, std::slice::from_ref(&exec_a));
    assert_eq!(
        (a.skill_type.as_str(), a.created_by.as_deref()),
        ("code", Some("default"))
    );

    // Unevaluated: promotion is blocked.
    let blocked = provider
        .promote(&a.id, &Promotion::default())
        .await
        .unwrap_err();
    assert_eq!(blocked.code, ErrorCode::Conflict, "{blocked}");
    assert_eq!(blocked.details["candidate_id"], json!(a.id));

    let mut verdict = Evaluation::new(true).score(0.93);
    verdict.benchmark_id = Some("bench-csv-v1".into());
    let evaluation = provider.evaluate(&a.id, &verdict).await.unwrap();
    assert!(evaluation.id.starts_with("se-") && evaluation.passed);
    assert_eq!(evaluation.score, Some(0.93));
    let v1 = provider
        .promote(&a.id, &Promotion::to(ReleaseStage::Stable))
        .await
        .unwrap();
    assert_eq!(
        (v1.version, v1.stage, v1.is_active, v1.release_mode.as_str()),
        (1, ReleaseStage::Stable, true, "manual")
    );
    let a_now = provider.candidate(&a.id).await.unwrap();
    assert_eq!(a_now.status, CandidateStatus::Promoted);
    assert_eq!(a_now.promotion_release_id.as_deref(), Some(v1.id.as_str()));
    assert_eq!(a_now.latest_pass, Some(true));

    // v1 runs well: the baseline of what comes after.
    for _ in 0..3 {
        run(
            &provider,
            &sandbox.id,
            "true",
            &format!("release:{}", v1.id),
        )
        .await;
    }
    target.clock.advance(chrono::Duration::seconds(60));

    // A second candidate, a failed one, and a third promoted as canary.
    let exec_b = run(&provider, &sandbox.id, "echo candidate-b", "skills").await;
    let rejected = provider
        .create_candidate(&NewCandidate::new("csv-loader", [exec_b.as_str()]))
        .await
        .unwrap();
    provider
        .evaluate(&rejected.id, &Evaluation::new(false).score(0.1))
        .await
        .unwrap();
    assert_eq!(
        provider.candidate(&rejected.id).await.unwrap().status,
        CandidateStatus::Rejected
    );
    assert_eq!(
        provider
            .promote(&rejected.id, &Promotion::default())
            .await
            .unwrap_err()
            .code,
        ErrorCode::Conflict
    );
    let b = provider
        .create_candidate(&NewCandidate::new(
            "csv-loader",
            [exec_b.as_str(), exec_a.as_str()],
        ))
        .await
        .unwrap();
    provider
        .evaluate(&b.id, &Evaluation::new(true))
        .await
        .unwrap();
    let v2 = provider
        .promote(&b.id, &Promotion::default())
        .await
        .unwrap();
    assert_eq!((v2.version, v2.stage), (2, ReleaseStage::Canary));
    let active = provider.releases(&only_active("csv-loader")).await.unwrap();
    assert_eq!(active.total, 1, "exactly one active release");
    assert_eq!(active.items[0].id, v2.id);

    // v2 fails half its runs: its health says roll back.
    for command in ["true", "exit 3", "true", "exit 3"] {
        run(
            &provider,
            &sandbox.id,
            command,
            &format!("skills,release:{}", v2.id),
        )
        .await;
    }
    let health = provider.release_health(&v2.id).await.unwrap();
    assert_eq!((health.samples, health.baseline_samples), (4, 3));
    assert_eq!((health.success_rate, health.error_rate), (0.5, 0.5));
    assert_eq!(health.baseline_success_rate, 1.0);
    assert!(health.should_rollback && !health.healthy, "{health:?}");
    assert_eq!(
        health.rollback_reasons,
        ["success_rate_drop", "error_rate_regression"]
    );
    let mut tagged = HistoryQuery::default();
    tagged.tags = Some(format!("release:{}", v2.id));
    let runs = provider.history(&sandbox.id, &tagged).await.unwrap();
    let slowest = runs
        .entries
        .iter()
        .map(|entry| entry.execution_time_ms)
        .max();
    assert_eq!(
        Some(health.p95_duration),
        slowest,
        "p95 of four is the slowest"
    );
    assert!(!health.window_complete);
    assert_eq!(health.window_start_at, v2.promoted_at);
    assert_eq!(health.thresholds["success_drop"], 0.03);

    // Rolling v2 back: v3 releases v1's candidate again.
    let v3 = provider.rollback(&v2.id).await.unwrap();
    assert_eq!(
        (
            v3.version,
            v3.rollback_of.as_deref(),
            v3.candidate_id.as_str(),
            v3.stage
        ),
        (3, Some(v2.id.as_str()), a.id.as_str(), ReleaseStage::Stable)
    );
    assert_eq!(
        provider.candidate(&b.id).await.unwrap().status,
        CandidateStatus::RolledBack
    );
    let active = provider.releases(&only_active("csv-loader")).await.unwrap();
    assert_eq!(
        (active.total, active.items[0].id.as_str()),
        (1, v3.id.as_str())
    );
    // v1 has nothing before it.
    let first = provider.rollback(&v1.id).await.unwrap_err();
    assert_eq!(first.code, ErrorCode::Conflict, "{first}");

    // Lists: newest first, filtered, paged.
    let all = provider.releases(&ReleaseQuery::default()).await.unwrap();
    let versions: Vec<u32> = all.items.iter().map(|release| release.version).collect();
    assert_eq!(versions, [3, 2, 1]);
    let mut stable = ReleaseQuery::default();
    stable.stage = Some(ReleaseStage::Stable);
    assert_eq!(provider.releases(&stable).await.unwrap().total, 2);
    let mut rolled = CandidateQuery::default();
    rolled.status = Some(CandidateStatus::RolledBack);
    let rolled = provider.candidates(&rolled).await.unwrap();
    assert_eq!(
        (rolled.total, rolled.items[0].id.as_str()),
        (1, b.id.as_str())
    );
    let mut paged = CandidateQuery::default();
    paged.skill_key = Some("csv-loader".into());
    paged.limit = Some(2);
    paged.offset = 1;
    let page = provider.candidates(&paged).await.unwrap();
    assert_eq!(page.total, 3);
    let ids: Vec<&str> = page.items.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(
        ids,
        [rejected.id.as_str(), a.id.as_str()],
        "newest first, after one"
    );

    // Deleting: a candidate an active release stands on cannot go; the others can.
    let refused = provider.delete_candidate(&a.id, None).await.unwrap_err();
    assert_eq!(refused.code, ErrorCode::Conflict, "{refused}");
    let gone = provider
        .delete_candidate(&b.id, Some("superseded"))
        .await
        .unwrap();
    assert_eq!(
        (
            gone.id.as_str(),
            gone.delete_reason.as_deref(),
            gone.deleted_by.as_deref()
        ),
        (b.id.as_str(), Some("superseded"), Some("default"))
    );
    assert_eq!(
        provider.candidate(&b.id).await.unwrap_err().code,
        ErrorCode::NotFound
    );
    provider.delete_release(&v3.id, None).await.unwrap();
    assert_eq!(
        provider.release_health(&v3.id).await.unwrap_err().code,
        ErrorCode::NotFound
    );
    assert_eq!(
        provider
            .releases(&only_active("csv-loader"))
            .await
            .unwrap()
            .total,
        0
    );
    // With its release gone, v1's candidate can be deleted, and versions go on counting.
    provider
        .evaluate(&rejected.id, &Evaluation::new(true))
        .await
        .unwrap();
    let v4 = provider
        .promote(&rejected.id, &Promotion::default())
        .await
        .unwrap();
    assert_eq!(v4.version, 4);
    provider.delete_release(&v1.id, None).await.unwrap();
    provider.delete_candidate(&a.id, None).await.unwrap();

    // The evidence outlives its sandbox.
    provider.delete(&sandbox.id).await.unwrap();
    let again = provider
        .create_candidate(&NewCandidate::new("csv-loader", [exec_a.as_str()]))
        .await
        .unwrap();
    assert_eq!(again.source_execution_ids, [exec_a]);
}

both!(lifecycle);

#[tokio::test]
async fn health_windows_close_and_reports_stand_in_for_a_baseline() {
    let target = target(Via::Local).await;
    let provider = Arc::clone(&target.provider);
    let sandbox = provider.create(&CreateSandbox::default()).await.unwrap();
    let exec = run(&provider, &sandbox.id, "true", "skills").await;
    let first = provider
        .create_candidate(&NewCandidate::new("report", [exec.as_str()]))
        .await
        .unwrap();
    let mut verdict = Evaluation::new(true);
    verdict.report =
        Some(json!({"replay_success": 0.8, "samples": 10, "p95_duration": 70}).to_string());
    provider.evaluate(&first.id, &verdict).await.unwrap();
    provider
        .promote(&first.id, &Promotion::default())
        .await
        .unwrap();
    let second = provider
        .create_candidate(&NewCandidate::new("report", [exec.as_str()]))
        .await
        .unwrap();
    provider
        .evaluate(&second.id, &Evaluation::new(true))
        .await
        .unwrap();
    let v2 = provider
        .promote(&second.id, &Promotion::default())
        .await
        .unwrap();
    // Nothing tagged v1 ran: its candidate's report is the baseline.
    let health = provider.release_health(&v2.id).await.unwrap();
    assert_eq!(
        (
            health.baseline_samples,
            health.baseline_success_rate,
            health.samples
        ),
        (10, 0.8, 0)
    );
    assert!(
        !health.healthy && !health.should_rollback,
        "no samples, no verdict"
    );
    // A run after the window closes is not counted.
    target.clock.advance(chrono::Duration::hours(25));
    run(
        &provider,
        &sandbox.id,
        "true",
        &format!("release:{}", v2.id),
    )
    .await;
    let health = provider.release_health(&v2.id).await.unwrap();
    assert!(health.window_complete);
    assert_eq!(health.samples, 0);
}

#[tokio::test]
async fn the_books_survive_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let clock = wayline_sandbox::clock::ManualClock::new(start_time());
    let (candidate, release, payload) = {
        let provider: Arc<dyn SandboxProvider> = Arc::new(local_provider(dir.path(), &clock));
        let sandbox = provider.create(&CreateSandbox::default()).await.unwrap();
        let exec = run(&provider, &sandbox.id, "true", "").await;
        let candidate = provider
            .create_candidate(&NewCandidate::new("kept", [exec]))
            .await
            .unwrap();
        provider
            .evaluate(&candidate.id, &Evaluation::new(true))
            .await
            .unwrap();
        let release = provider
            .promote(&candidate.id, &Promotion::default())
            .await
            .unwrap();
        let payload = provider
            .create_payload(&NewPayload::new(json!([1, 2, 3])))
            .await
            .unwrap();
        (
            provider.candidate(&candidate.id).await.unwrap(),
            release,
            payload,
        )
    };
    let provider = local_provider(dir.path(), &clock);
    assert_eq!(provider.candidate(&candidate.id).await.unwrap(), candidate);
    let releases = provider.releases(&ReleaseQuery::default()).await.unwrap();
    assert_eq!(releases.items, [release]);
    assert_eq!(
        provider
            .payload(&payload.payload_ref)
            .await
            .unwrap()
            .payload,
        json!([1, 2, 3])
    );
    // A books file that is not one is refused, named, and left alone.
    drop(provider);
    std::fs::write(dir.path().join("skills.json"), "{ not json").unwrap();
    let error = wayline_sandbox::LocalProvider::open(wayline_sandbox::LocalConfig::new(dir.path()))
        .unwrap_err();
    assert!(
        error.message.contains("skills.json") && error.message.contains("line 1"),
        "{error}"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("skills.json")).unwrap(),
        "{ not json"
    );
}

#[tokio::test]
async fn bays_answers_over_raw_http() {
    let target = target(Via::Http).await;
    let raw = target.raw();
    let token = Some(crate::common::TOKEN);
    let status_of = |response: &wayline_core::transport::HttpResponse| {
        (response.status, json_of(response)["error"]["code"].clone())
    };

    // Auth, as every /v1 route.
    let anonymous = raw.send("GET", "/v1/skills/candidates", None, None).await;
    assert_eq!(anonymous.status, 401);

    // Filters that name no status or stage: Bay's 400.
    let response = raw
        .send("GET", "/v1/skills/candidates?status=unknown", None, token)
        .await;
    assert_eq!(status_of(&response), (400, json!("validation_error")));
    let response = raw
        .send("GET", "/v1/skills/releases?stage=unknown", None, token)
        .await;
    assert_eq!(status_of(&response), (400, json!("validation_error")));
    // An empty value is none.
    let response = raw
        .send(
            "GET",
            "/v1/skills/candidates?status=&skill_key=",
            None,
            token,
        )
        .await;
    assert_eq!(
        (response.status, json_of(&response)),
        (200, json!({"items": [], "total": 0}))
    );
    // Paging out of range: FastAPI's 422.
    for query in ["limit=0", "limit=501", "offset=-1", "limit=ten"] {
        let response = raw
            .send("GET", &format!("/v1/skills/releases?{query}"), None, token)
            .await;
        assert_eq!(response.status, 422, "{query}");
        assert!(
            json_of(&response)["detail"][0]["loc"][0] == json!("query"),
            "{query}"
        );
    }

    // Candidates need executions that ran.
    let response = raw
        .send(
            "POST",
            "/v1/skills/candidates",
            Some(json!({"skill_key": "bad", "source_execution_ids": ["exec-missing"]})),
            token,
        )
        .await;
    assert_eq!(status_of(&response), (400, json!("validation_error")));
    assert!(
        json_of(&response)["error"]["message"]
            .as_str()
            .unwrap()
            .contains("exec-missing")
    );
    let response = raw
        .send(
            "POST",
            "/v1/skills/candidates",
            Some(json!({"skill_key": "bad"})),
            token,
        )
        .await;
    assert_eq!(
        (
            response.status,
            json_of(&response)["detail"][0]["loc"].clone()
        ),
        (422, json!(["body", "source_execution_ids"]))
    );
    let response = raw
        .send(
            "POST",
            "/v1/skills/candidates",
            Some(json!({"skill_key": "bad", "source_execution_ids": []})),
            token,
        )
        .await;
    assert_eq!(status_of(&response), (400, json!("validation_error")));

    // One real candidate to act on.
    let sandbox = raw
        .send("POST", "/v1/sandboxes", Some(json!({})), token)
        .await;
    let sandbox = json_of(&sandbox)["id"].as_str().unwrap().to_owned();
    let exec = raw
        .send(
            "POST",
            &format!("/v1/sandboxes/{sandbox}/shell/exec"),
            Some(json!({"command": "echo hi", "tags": "skills,evidence"})),
            token,
        )
        .await;
    let exec = json_of(&exec)["execution_id"].as_str().unwrap().to_owned();
    let created = raw
        .send(
            "POST",
            "/v1/skills/candidates",
            Some(json!({
                "skill_key": "stage-check", "source_execution_ids": [exec],
                "payload_ref": "s3://skills/elsewhere", "preconditions": {"python": ">=3.10"},
            })),
            token,
        )
        .await;
    assert_eq!(created.status, 201);
    let candidate = json_of(&created);
    for field in [
        "scenario_key",
        "auto_release_reason",
        "summary",
        "usage_notes",
        "postconditions",
        "latest_score",
        "latest_pass",
        "last_evaluated_at",
        "promotion_release_id",
        "deleted_at",
        "deleted_by",
        "delete_reason",
    ] {
        assert_eq!(candidate[field], json!(null), "{field} is there, null");
    }
    assert_eq!(candidate["preconditions"], json!({"python": ">=3.10"}));
    assert_eq!(candidate["payload_ref"], json!("s3://skills/elsewhere"));
    assert_eq!(
        (
            candidate["is_deleted"].clone(),
            candidate["auto_release_eligible"].clone()
        ),
        (json!(false), json!(false))
    );
    let id = candidate["id"].as_str().unwrap();

    let response = raw
        .send(
            "POST",
            &format!("/v1/skills/candidates/{id}/promote"),
            Some(json!({})),
            token,
        )
        .await;
    assert_eq!(status_of(&response), (409, json!("conflict")));
    let response = raw
        .send(
            "POST",
            &format!("/v1/skills/candidates/{id}/evaluate"),
            Some(json!({"score": 1})),
            token,
        )
        .await;
    assert_eq!(
        (
            response.status,
            json_of(&response)["detail"][0]["loc"].clone()
        ),
        (422, json!(["body", "passed"]))
    );
    let response = raw
        .send(
            "POST",
            &format!("/v1/skills/candidates/{id}/evaluate"),
            Some(json!({"passed": true})),
            token,
        )
        .await;
    assert_eq!(response.status, 200);
    let response = raw
        .send(
            "POST",
            &format!("/v1/skills/candidates/{id}/promote"),
            Some(json!({"stage": "invalid-stage"})),
            token,
        )
        .await;
    assert_eq!(status_of(&response), (400, json!("validation_error")));
    let response = raw
        .send(
            "POST",
            &format!("/v1/skills/candidates/{id}/promote"),
            Some(json!({})),
            token,
        )
        .await;
    let release = json_of(&response);
    assert_eq!(
        (response.status, release["stage"].clone()),
        (200, json!("canary"))
    );
    let release_id = release["id"].as_str().unwrap();
    let response = raw
        .send(
            "GET",
            &format!("/v1/skills/releases/{release_id}/health"),
            None,
            token,
        )
        .await;
    let health = json_of(&response);
    assert_eq!(response.status, 200);
    for field in [
        "success_rate",
        "error_rate",
        "p95_duration",
        "should_rollback",
        "thresholds",
    ] {
        assert!(health.get(field).is_some(), "{field}");
    }
    let response = raw
        .send(
            "POST",
            &format!("/v1/skills/releases/{release_id}/rollback"),
            None,
            token,
        )
        .await;
    assert_eq!(status_of(&response), (409, json!("conflict")));
    let response = raw
        .send(
            "DELETE",
            &format!("/v1/skills/candidates/{id}"),
            None,
            token,
        )
        .await;
    assert_eq!(status_of(&response), (409, json!("conflict")));
    let response = raw
        .send(
            "DELETE",
            &format!("/v1/skills/releases/{release_id}"),
            Some(json!({"reason": "bad canary"})),
            token,
        )
        .await;
    assert_eq!(
        (response.status, json_of(&response)["delete_reason"].clone()),
        (200, json!("bad canary"))
    );
    let response = raw
        .send(
            "DELETE",
            &format!("/v1/skills/candidates/{id}"),
            None,
            token,
        )
        .await;
    assert_eq!(response.status, 200);
    for path in [
        format!("/v1/skills/candidates/{id}"),
        format!("/v1/skills/releases/{release_id}/health"),
        "/v1/skills/candidates/sc-unknown".to_owned(),
    ] {
        let response = raw.send("GET", &path, None, token).await;
        assert_eq!(status_of(&response), (404, json!("not_found")), "{path}");
    }

    // Payloads: objects or arrays, kept under blob: references.
    let response = raw
        .send(
            "POST",
            "/v1/skills/payloads",
            Some(
                json!({"kind": "candidate_payload", "payload": {"commands": ["open about:blank"]}}),
            ),
            token,
        )
        .await;
    assert_eq!(response.status, 201);
    let reference = json_of(&response)["payload_ref"]
        .as_str()
        .unwrap()
        .to_owned();
    let response = raw
        .send(
            "GET",
            &format!("/v1/skills/payloads/{reference}"),
            None,
            token,
        )
        .await;
    assert_eq!(
        json_of(&response),
        json!({"payload_ref": reference, "kind": "candidate_payload",
               "payload": {"commands": ["open about:blank"]}})
    );
    for (body, field) in [
        (json!({"payload": "text"}), "payload"),
        (json!({"payload": {}, "kind": ""}), "kind"),
        (json!({"kind": "x"}), "payload"),
    ] {
        let response = raw
            .send("POST", "/v1/skills/payloads", Some(body.clone()), token)
            .await;
        assert_eq!(
            (
                response.status,
                json_of(&response)["detail"][0]["loc"].clone()
            ),
            (422, json!(["body", field])),
            "{body}"
        );
    }
    let response = raw
        .send(
            "GET",
            "/v1/skills/payloads/s3%3A%2F%2Fcandidate%2Fpayload-1",
            None,
            token,
        )
        .await;
    assert_eq!(status_of(&response), (400, json!("validation_error")));
    assert!(String::from_utf8_lossy(&response.body).contains("Unsupported payload_ref"));
    for missing in [
        "blob:missing-payload",
        "blob:..%2F..%2Fstate",
        "blob:..%2Fskills",
    ] {
        let response = raw
            .send(
                "GET",
                &format!("/v1/skills/payloads/{missing}"),
                None,
                token,
            )
            .await;
        assert_eq!(status_of(&response), (404, json!("not_found")), "{missing}");
    }
}
