//! The fixture SUT configs load unchanged, with `${VAR:-default}` from the environment, and
//! give their base URLs, checkpoints and credentials.

use std::collections::HashMap;

use wayline_explorer::{
    Action, Assessment, AuthKind, Credentials, Source, SutConfig, Thresholds, decide,
};
use wayline_testkit::fixture;

fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
    let map: HashMap<String, String> = pairs
        .iter()
        .map(|(key, value)| ((*key).to_owned(), (*value).to_owned()))
        .collect();
    move |name| map.get(name).cloned()
}

#[test]
fn the_fixture_sut_files_load_unchanged() {
    let Some(dir) = fixture("tidbcloud") else {
        return;
    };
    for file in ["tidbx-sut.yaml", "serverless-sut.yaml"] {
        let sut = SutConfig::load_with(&dir.join(file), &env(&[])).unwrap();
        assert_eq!(sut.version, "v1beta1", "{file}");
        assert_eq!(
            sut.base_url().unwrap(),
            "https://serverless.tidbapi.com/v1beta1"
        );
        assert_eq!(sut.connection.auth.kind, AuthKind::Digest);
        assert!(sut.auto());
        assert_eq!(sut.execution.auto_mode.confidence_threshold, 0.7);
        assert_eq!(sut.execution.auto_mode.max_silent_steps, 10);
        assert_eq!(sut.execution.auto_mode.polling.max_retries, 6);
        assert_eq!(sut.execution.auto_mode.polling.delay_seconds, 10);
        assert!(sut.is_checkpoint("ClusterService_CreateCluster"));
        // The matrix takes its lines from the SUT.
        let thresholds = Thresholds::from_sut(&sut);
        assert_eq!(
            (
                thresholds.dominant,
                thresholds.max_silent_steps,
                thresholds.auto
            ),
            (0.7, 10, true)
        );
        let mut create = Assessment::new(0.95, Source::KnownPattern);
        create.checkpoint = sut.is_checkpoint("ClusterService_CreateCluster");
        assert_eq!(decide(&create, &thresholds).action, Action::Confirm);
        assert!(sut.is_checkpoint("BranchService_DeleteBranch"));
        assert!(!sut.is_checkpoint("ClusterService_GetCluster"));
        // `${TIDBCLOUD_PROJECT_ID:-}` unset: empty, which YAML reads as null (not known yet).
        assert!(sut.preset_variables["project_id"].is_null());
        assert_eq!(sut.cli_tools["mysqlsh"].common_operations.len(), 3);
        assert_eq!(
            sut.spec_path().unwrap(),
            dir.join("openapi.json"),
            "relative to the SUT file"
        );
    }
    // The environment overrides the defaults.
    let sut = SutConfig::load_with(
        &dir.join("tidbx-sut.yaml"),
        &env(&[
            ("TIDBCLOUD_HOST", "127.0.0.1:9999"),
            ("TIDBCLOUD_BASE_PATH", "/api"),
            ("TIDBCLOUD_PROJECT_ID", "p-42"),
        ]),
    )
    .unwrap();
    assert_eq!(sut.base_url().unwrap(), "https://127.0.0.1:9999/api");
    assert_eq!(sut.preset_variables["project_id"], "p-42");
    // Digest credentials come from the variables the file names.
    let missing = sut.credentials(&env(&[])).unwrap_err().to_string();
    assert!(missing.contains("TIDB_PUBLIC_KEY"), "{missing}");
    let credentials = sut
        .credentials(&env(&[
            ("TIDB_PUBLIC_KEY", "pub"),
            ("TIDB_PRIVATE_KEY", "s3cret"),
        ]))
        .unwrap();
    let Credentials::UserPassword {
        kind,
        username,
        password,
    } = &credentials
    else {
        panic!("{credentials:?}")
    };
    assert_eq!(
        (*kind, username.expose(), password.expose()),
        (AuthKind::Digest, "pub", "s3cret")
    );
    assert!(!format!("{credentials:?}").contains("s3cret"));

    // The minimal form: no auth, an empty host by default.
    let zero = SutConfig::load_with(&dir.join("tidb-zero-sut.yaml"), &env(&[])).unwrap();
    assert_eq!(zero.connection.auth.kind, AuthKind::None);
    assert!(!zero.auto(), "no execution block: manual");
    let empty = zero.base_url().unwrap_err().to_string();
    assert!(empty.contains("connection.host is empty"), "{empty}");
    let zero = SutConfig::load_with(
        &dir.join("tidb-zero-sut.yaml"),
        &env(&[("TIDBZERO_HOST", "http://127.0.0.1:7000")]),
    )
    .unwrap();
    assert_eq!(zero.base_url().unwrap(), "http://127.0.0.1:7000/v1alpha1");
}

#[test]
fn bad_configs_say_what_and_where() {
    let cases = [
        (
            "name: X\nconnection: {host: h}\nexecution: {mode: turbo}\n",
            "use `auto` or `manual`",
        ),
        (
            "name: X\nconnection: {host: h}\nexecution: {auto_mode: {confidence_threshold: 7}}\n",
            "from 0 to 1",
        ),
        (
            "name: X\nconnection: {host: h}\nexecution: {auto_mode: {checkpoint_operations: ['(']}}\n",
            "is not a regex",
        ),
        ("name: X\nconnection: {host: h, auht: {}}\n", "auht"),
        (
            "name: X\nconnection: {host: ${NEEDED_HOST}}\n",
            "NEEDED_HOST",
        ),
    ];
    for (text, expected) in cases {
        let error = SutConfig::parse(text, "sut.yaml", &|_| None)
            .unwrap_err()
            .to_string();
        assert!(error.contains(expected), "{text}: {error}");
        assert!(error.contains("sut.yaml"), "{error}");
    }
}
