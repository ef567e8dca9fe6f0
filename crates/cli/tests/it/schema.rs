//! `wayline schema`: the JSON Schemas in `schemas/` are what the types generate, and every
//! file wayline's tests and examples read — and the shared fixtures — is valid against its
//! format's schema; a file wayline refuses is refused by the schema too.

use std::path::{Path, PathBuf};

use serde_json::Value;
use wayline_testkit::{fixture, testdata};

use crate::{code, wayline};

fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn names() -> Vec<String> {
    let listed = wayline(&["schema"]);
    assert_eq!(code(&listed), 0);
    String::from_utf8_lossy(&listed.stdout)
        .lines()
        .filter_map(|line| line.split_whitespace().next().map(str::to_owned))
        .collect()
}

#[test]
fn the_schemas_in_the_repository_are_up_to_date() {
    let names = names();
    assert_eq!(names.len(), 10, "{names:?}");
    for name in names {
        let generated = wayline(&["schema", &name]);
        assert_eq!(code(&generated), 0);
        let file = repository().join(format!("schemas/{name}.schema.json"));
        let kept = std::fs::read_to_string(&file).unwrap_or_default();
        assert!(
            kept == String::from_utf8_lossy(&generated.stdout),
            "{} is not what the types generate: run `cargo run -p wayline-cli -- schema --out schemas`",
            file.display()
        );
    }
    assert_eq!(code(&wayline(&["schema", "tools"])), 2, "an unknown format");
}

fn schema(name: &str) -> jsonschema::Validator {
    let text =
        std::fs::read_to_string(repository().join(format!("schemas/{name}.schema.json"))).unwrap();
    jsonschema::validator_for(&serde_json::from_str(&text).unwrap()).unwrap()
}

fn document(file: &Path) -> Value {
    let text = std::fs::read_to_string(file).unwrap();
    serde_norway::from_str(&text).unwrap_or_else(|error| panic!("{}: {error}", file.display()))
}

/// The files under `dir` (any depth) with these extensions, but inputs files.
fn files(dir: &Path, extensions: &[&str]) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_owned()];
    while let Some(dir) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                pending.push(path);
            } else if path
                .extension()
                .and_then(|extension| extension.to_str())
                .is_some_and(|extension| extensions.contains(&extension))
                && !path.to_string_lossy().contains(".inputs.")
            {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}

#[test]
fn every_file_we_read_is_valid_against_its_schema() {
    let yaml = ["yaml", "yml", "json"];
    let mut checked = Vec::new();
    let mut cases: Vec<(&str, Vec<PathBuf>)> = vec![
        ("tool", files(&testdata("tools"), &yaml)),
        ("tool", files(&testdata("api-tests/tools"), &yaml)),
        (
            "workflow",
            [
                files(&testdata("workflows"), &yaml)
                    .into_iter()
                    .filter(|file| !file.to_string_lossy().contains("/invalid/"))
                    .collect::<Vec<_>>(),
                files(&testdata("api-tests/workflows"), &yaml)
                    .into_iter()
                    .filter(|file| !file.ends_with("more/broken.yaml"))
                    .collect(),
                files(&testdata("bay"), &yaml),
            ]
            .concat(),
        ),
        ("tool-configs", vec![testdata("api-tests/configs.yaml")]),
        ("guard-suite", vec![testdata("guard/suite.yaml")]),
        ("sandbox-profiles", vec![testdata("sandbox/profiles.yaml")]),
        (
            "guard-policy",
            vec![repository().join("crates/guard/src/default_policy.yaml")],
        ),
    ];
    if let Some(tools) = fixture("structure-ai-bot/tools") {
        cases.push(("tool", files(&tools, &yaml)));
    }
    if let Some(workflows) = fixture("structure-ai-bot/workflows") {
        let valid = std::fs::read_dir(&workflows)
            .unwrap()
            .flatten()
            .map(|entry| entry.path())
            .filter(|path| {
                path.extension()
                    .is_some_and(|extension| extension == "json")
            })
            .collect();
        cases.push(("workflow", valid));
    }
    if let Some(tidb) = fixture("tidbcloud") {
        cases.push((
            "sut",
            [
                "serverless-sut.yaml",
                "tidb-zero-sut.yaml",
                "tidbx-sut.yaml",
            ]
            .iter()
            .map(|name| tidb.join(name))
            .collect(),
        ));
        for kind in ["patterns", "pitfalls", "stats"] {
            let name: &'static str = match kind {
                "patterns" => "knowledge-patterns",
                "pitfalls" => "knowledge-pitfalls",
                _ => "knowledge-stats",
            };
            cases.push((name, vec![tidb.join(format!("knowledge-{kind}.yaml"))]));
        }
    }
    for (name, files) in cases {
        let validator = schema(name);
        assert!(!files.is_empty(), "{name}: no files");
        for file in files {
            let errors: Vec<String> = validator
                .iter_errors(&document(&file))
                .map(|error| format!("{} at {}", error, error.instance_path()))
                .collect();
            assert!(
                errors.is_empty(),
                "{} is not a valid {name}: {errors:#?}",
                file.display()
            );
            checked.push(file);
        }
    }
    assert!(checked.len() >= 12, "{checked:?}");
}

#[test]
fn files_wayline_refuses_the_schemas_refuse() {
    // A typo'd field, as every model refuses.
    let broken = document(&testdata("api-tests/workflows/more/broken.yaml"));
    assert!(!schema("workflow").is_valid(&broken));
    let mut tool = document(&testdata("tools/ip_locate.yaml"));
    tool["auth_typ"] = Value::from("none");
    assert!(!schema("tool").is_valid(&tool));
    let expecting: Value = serde_norway::from_str(
        "id: w\nname: W\nsteps:\n  - id: a\n    tool_id: t\n    expect: {status: 4x}\n",
    )
    .unwrap();
    assert!(
        !schema("workflow").is_valid(&expecting),
        "a status that is none"
    );
}
