//! Kinto 26.5.0 (PyPI `kinto`): JSON storage whose every answer and body is wrapped as
//! `{"data": {...}, "permissions": {...}}`, three levels deep (bucket → collection → record),
//! with ids the server makes, a collection-wide DELETE beside every item's, PUT and PATCH on
//! every item, ETags and paging by header. Memory backend, anonymous writes allowed, its
//! Swagger 2.0 description as it serves it (`/v1/__api__`).

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::Command;

use serde_json::json;

use super::{Service, call, explore, free_port};

/// The `kinto` command `.ci/run` installs with pip.
fn kinto() -> Option<PathBuf> {
    wayline_testkit::installed_tool("kinto", "WAYLINE_KINTO", "the Kinto tests")
}

/// A Kinto on loopback, with its spec and a SUT file for it.
struct Kinto {
    service: Service,
    spec: PathBuf,
    sut: PathBuf,
}

impl Kinto {
    fn start(executable: &PathBuf) -> Kinto {
        let dir = tempfile::tempdir().unwrap();
        let init = Command::new(executable)
            .args(["init", "--backend=memory", "--cache-backend=memory"])
            .args(["--host", "127.0.0.1", "--ini", "config.ini"])
            .current_dir(dir.path())
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        assert!(init.status.success(), "kinto init: {init:?}");
        // Anyone may create, read and write buckets (no accounts to set up).
        let config = dir.path().join("config.ini");
        let text = std::fs::read_to_string(&config).unwrap();
        let text = text.replace(
            "kinto.bucket_create_principals = account:admin",
            "kinto.bucket_create_principals = system.Everyone\n\
             kinto.bucket_read_principals = system.Everyone\n\
             kinto.bucket_write_principals = system.Everyone",
        );
        assert!(
            text.contains("system.Everyone"),
            "the ini changed shape: {text}"
        );
        std::fs::write(&config, text).unwrap();
        let port = free_port();
        let mut command = Command::new(executable);
        command.args(["start", "--ini", "config.ini", "--port", &port.to_string()]);
        let service = Service::start(command, port, dir, "kinto");
        let (status, spec) = call("GET", &format!("{}/v1/__api__", service.origin), &[], None);
        assert_eq!(status, 200, "{spec}");
        let spec_path = service.file("spec.json");
        std::fs::write(&spec_path, spec.to_string()).unwrap();
        let sut = service.file("sut.yaml");
        std::fs::write(
            &sut,
            format!(
                "name: kinto\nconnection: {{host: '{}/v1'}}\nexecution:\n  mode: auto\n",
                service.origin
            ),
        )
        .unwrap();
        Kinto {
            service,
            spec: spec_path,
            sut,
        }
    }

    fn url(&self, path: &str) -> String {
        format!("{}/v1{path}", self.service.origin)
    }

    /// The ids the server holds under `path` (`/buckets`, `/buckets/b/collections`).
    fn ids(&self, path: &str) -> BTreeSet<String> {
        let (status, body) = call("GET", &self.url(path), &[], None);
        assert_eq!(status, 200, "GET {path}: {body}");
        body["data"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|item| item["id"].as_str().map(str::to_owned))
            .collect()
    }

    /// The requests wayline sent, from the server's own log: `METHOD /path STATUS`.
    fn requests(&self) -> Vec<String> {
        self.service
            .logged()
            .lines()
            .filter(|line| line.contains("agent=wayline"))
            .filter_map(|line| {
                let quoted = line.trim_start().strip_prefix('"')?;
                let (request, rest) = quoted.split_once('"')?;
                let mut words = request.split_whitespace();
                let (method, target) = (words.next()?, words.next()?);
                let status = rest.split_whitespace().next()?;
                Some(format!(
                    "{method} {} {status}",
                    target.trim_end_matches('?')
                ))
            })
            .collect()
    }

    /// Explores `target`, and the requests the server logged for it.
    fn explore(
        &self,
        dir: &std::path::Path,
        target: &str,
        extra: &[&str],
    ) -> (super::Explored, Vec<String>) {
        let before = self.requests().len();
        let run = explore(dir, &self.sut, &self.spec, target, extra);
        let sent = self.requests().split_off(before);
        (run, sent)
    }
}

/// The one id in `after` that is not in `before`.
fn made(before: &BTreeSet<String>, after: &BTreeSet<String>) -> String {
    let new: Vec<&String> = after.difference(before).collect();
    assert_eq!(new.len(), 1, "one new resource: {new:?}");
    new[0].clone()
}

#[test]
fn explore_reaches_targets_in_a_users_words_on_kinto() {
    let Some(executable) = kinto() else {
        return;
    };
    let kinto = Kinto::start(&executable);
    // The safety rule reads the served description: a DELETE on each collection.
    assert_eq!(
        super::collection_wide_writes(&kinto.spec),
        [
            "delete_accounts",
            "delete_buckets",
            "delete_collections",
            "delete_groups",
            "delete_records"
        ]
    );
    let dir = tempfile::tempdir().unwrap();
    // Made before any run, three levels deep: every run must leave it as it is.
    for (path, title) in [
        ("/buckets/keep", "made before"),
        ("/buckets/keep/collections/notes", "kept notes"),
        (
            "/buckets/keep/collections/notes/records/first",
            "kept record",
        ),
    ] {
        let (status, body) = call(
            "PUT",
            &kinto.url(path),
            &[],
            Some(&json!({"data": {"title": title}})),
        );
        assert_eq!(status, 201, "{path}: {body}");
    }

    // Create, then read.
    let before = kinto.ids("/buckets");
    let (run, sent) = kinto.explore(dir.path(), "make a bucket, then show it", &[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let bucket = made(&before, &kinto.ids("/buckets"));
    assert_eq!(
        sent,
        [
            "POST /v1/buckets 201".to_owned(),
            format!("GET /v1/buckets/{bucket} 200")
        ]
    );

    // Create, delete, and a read that finds it gone.
    let before = kinto.ids("/buckets");
    let (run, sent) = kinto.explore(
        dir.path(),
        "add a bucket, remove it, then reading it gives 404",
        &[],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(kinto.ids("/buckets"), before, "the new bucket is gone");
    let gone = sent[1]
        .strip_prefix("DELETE /v1/buckets/")
        .and_then(|rest| rest.strip_suffix(" 200"))
        .unwrap_or_else(|| panic!("an item's DELETE: {sent:?}"))
        .to_owned();
    assert_eq!(sent.len(), 3, "{sent:?}");
    assert_eq!(sent[2], format!("GET /v1/buckets/{gone} 404"));
    let (status, _) = call("GET", &kinto.url(&format!("/buckets/{gone}")), &[], None);
    assert_eq!(status, 404);

    // Create, then change a named field to a new value (read back by the run itself).
    let before = kinto.ids("/buckets");
    let (run, sent) = kinto.explore(
        dir.path(),
        "create a bucket with title draft, then change its title to final",
        &[],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let bucket = made(&before, &kinto.ids("/buckets"));
    let (_, read) = call("GET", &kinto.url(&format!("/buckets/{bucket}")), &[], None);
    assert_eq!(read["data"]["title"], "final", "{read}");
    assert!(
        sent.contains(&format!("PATCH /v1/buckets/{bucket} 200")),
        "a partial update, not a replacement: {sent:?}"
    );

    // Two children, then the parent's children; asked again with the same knowledge.
    let target = "create a bucket, add a collection to it, add two records to the collection, \
                  then list the collection's records";
    let mut questions = Vec::new();
    for _ in 0..2 {
        let before = kinto.ids("/buckets");
        let (run, sent) = kinto.explore(dir.path(), target, &[]);
        assert_eq!(run.code, 0, "{}", run.stderr);
        let bucket = made(&before, &kinto.ids("/buckets"));
        let collections = kinto.ids(&format!("/buckets/{bucket}/collections"));
        assert_eq!(collections.len(), 1, "{collections:?}");
        let collection = collections.first().unwrap();
        let records = kinto.ids(&format!(
            "/buckets/{bucket}/collections/{collection}/records"
        ));
        assert_eq!(records.len(), 2, "{records:?}");
        let lists: Vec<&String> = sent.iter().filter(|line| line.starts_with("GET")).collect();
        assert_eq!(
            lists,
            [&format!(
                "GET /v1/buckets/{bucket}/collections/{collection}/records 200"
            )],
            "one list, of the records: {sent:?}"
        );
        questions.push(run.questions());
    }
    assert!(
        questions[1] <= questions[0] && (questions[0] == 0 || questions[1] < questions[0]),
        "the rerun asks fewer questions: {questions:?}"
    );

    // Three levels: create each, then read the deepest.
    let before = kinto.ids("/buckets");
    let (run, sent) = kinto.explore(
        dir.path(),
        "create a bucket, a collection in it and a record in that collection, then read the record",
        &[],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let bucket = made(&before, &kinto.ids("/buckets"));
    let collection = kinto
        .ids(&format!("/buckets/{bucket}/collections"))
        .pop_first()
        .unwrap();
    let record = kinto
        .ids(&format!(
            "/buckets/{bucket}/collections/{collection}/records"
        ))
        .pop_first()
        .unwrap();
    assert_eq!(
        sent.last().unwrap(),
        &format!("GET /v1/buckets/{bucket}/collections/{collection}/records/{record} 200")
    );

    // "All" is refused unattended without the flag, and nothing is sent.
    let (run, sent) = kinto.explore(dir.path(), "delete all buckets", &[]);
    assert_ne!(run.code, 0);
    assert!(sent.is_empty(), "{sent:?}");
    let rejected = run.session["rejected_steps"][0]["error"]
        .as_str()
        .unwrap_or_default();
    assert!(rejected.contains("whole collection"), "{}", run.session);
    let why = run.summary["stop_reason"].as_str().unwrap_or_default();
    assert!(
        why.contains("never runs unattended unasked"),
        "{}",
        run.summary
    );

    // What existed before the runs is untouched, and no collection-wide write was sent.
    let all = kinto.requests();
    for method in ["DELETE", "PUT", "PATCH"] {
        for collection in ["/v1/buckets ", "/collections ", "/records "] {
            assert!(
                !all.iter()
                    .any(|line| line.starts_with(method) && line.contains(collection)),
                "a collection-wide {method}: {all:?}"
            );
        }
    }
    let (_, kept) = call(
        "GET",
        &kinto.url("/buckets/keep/collections/notes/records/first"),
        &[],
        None,
    );
    assert_eq!(kept["data"]["title"], "kept record", "{kept}");
    assert_eq!(
        kinto.ids("/buckets/keep/collections"),
        BTreeSet::from(["notes".to_owned()])
    );
}
