//! The TiDB Cloud explorer's example knowledge files (`tidbcloud/knowledge-*.yaml` among the
//! shared fixtures) load, save and load again equal, and nothing in them is dropped.

use wayline_knowledge::model::{PatternsFile, PitfallsFile, Stats};

/// Loads, saves and loads again; `None` (after a notice) where the shared fixtures are absent.
fn round_trip<T>(name: &str) -> Option<T>
where
    T: serde::de::DeserializeOwned + serde::Serialize + PartialEq + std::fmt::Debug,
{
    let path = wayline_testkit::fixture(&format!("tidbcloud/{name}"))?;
    let text = std::fs::read_to_string(&path).unwrap();
    let loaded: T = serde_norway::from_str(&text).unwrap();
    let saved = serde_norway::to_string(&loaded).unwrap();
    let again: T = serde_norway::from_str(&saved).unwrap();
    assert_eq!(again, loaded, "{name} changed on a round trip:\n{saved}");
    // Nothing present is lost: every key of the original is in what was saved.
    let original: serde_json::Value = serde_norway::from_str(&text).unwrap();
    let written: serde_json::Value = serde_norway::from_str(&saved).unwrap();
    assert_keys_kept(&original, &written, name);
    Some(loaded)
}

fn assert_keys_kept(original: &serde_json::Value, written: &serde_json::Value, at: &str) {
    match (original, written) {
        (serde_json::Value::Object(a), serde_json::Value::Object(b)) => {
            for (key, value) in a {
                let inner = b
                    .get(key)
                    .unwrap_or_else(|| panic!("{at}.{key} was dropped"));
                assert_keys_kept(value, inner, &format!("{at}.{key}"));
            }
        }
        (serde_json::Value::Array(a), serde_json::Value::Array(b)) => {
            assert_eq!(a.len(), b.len(), "{at}: items lost");
            for (index, (x, y)) in a.iter().zip(b).enumerate() {
                assert_keys_kept(x, y, &format!("{at}[{index}]"));
            }
        }
        (serde_json::Value::Number(a), serde_json::Value::Number(b)) => {
            assert_eq!(a.as_f64(), b.as_f64(), "{at}");
        }
        (a, b) => assert_eq!(a, b, "{at}"),
    }
}

#[test]
fn the_seed_patterns_round_trip() {
    let Some(file) = round_trip::<PatternsFile>("knowledge-patterns.yaml") else {
        return;
    };
    assert_eq!(file.patterns.len(), 2);
    let first = &file.patterns[0];
    assert_eq!(first.name, "create_cluster_and_poll");
    assert_eq!(first.trigger.intent_keywords, ["create", "cluster"]);
    assert_eq!(
        first
            .trigger
            .precondition
            .as_ref()
            .unwrap()
            .resource_not_exists
            .as_deref(),
        Some("cluster")
    );
    assert_eq!(first.steps[1].max_retries, Some(120));
    assert_eq!(first.steps[0].save[0].eval, "body.clusterId");
    assert_eq!((first.success_count, first.failure_count), (15, 2));
    assert_eq!(
        file.patterns[1]
            .trigger
            .precondition
            .as_ref()
            .unwrap()
            .resource_state["cluster"],
        "ACTIVE"
    );
}

#[test]
fn the_seed_pitfalls_round_trip() {
    let Some(file) = round_trip::<PitfallsFile>("knowledge-pitfalls.yaml") else {
        return;
    };
    assert_eq!(file.pitfalls.len(), 3);
    assert_eq!(
        file.pitfalls[0].trigger.missing_variable.as_deref(),
        Some("nodegroup_1")
    );
    assert_eq!(
        file.pitfalls[1].trigger.resource_state["cluster"],
        "MODIFYING"
    );
    assert_eq!(file.pitfalls[2].error_pattern.status_code, None);
    assert_eq!(file.pitfalls[2].last_occurred, None);
}

#[test]
fn the_seed_stats_round_trip() {
    let Some(stats) = round_trip::<Stats>("knowledge-stats.yaml") else {
        return;
    };
    assert_eq!(stats.operations.len(), 3);
    assert_eq!(
        stats.operations["ClusterService_GetCluster"].total_attempts,
        500
    );
    assert!((stats.operations["ClusterService_UpdateCluster"].success_rate - 0.8).abs() < 1e-9);
    assert_eq!(
        stats.state_transitions["cluster"]["CREATING_to_ACTIVE"].avg_poll_attempts,
        45.0
    );
}
