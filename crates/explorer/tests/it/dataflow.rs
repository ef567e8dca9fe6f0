//! Producer/consumer inference over the tidbx fixture spec: the operation that provides each
//! id another operation needs.

use wayline_explorer::dataflow::{Provides, infer};
use wayline_registry::openapi::ApiSpec;
use wayline_testkit::fixture;

#[test]
fn each_needed_id_points_at_the_operation_that_provides_it() {
    let Some(path) = fixture("tidbcloud/tidbx-openapi.json") else {
        return;
    };
    let spec = ApiSpec::load(&path).unwrap();
    let flow = infer(&spec);
    let first = |operation: &str, input: &str| {
        let producers = flow.producers_of(operation, input);
        assert!(!producers.is_empty(), "{operation}.{input} has no producer");
        (
            producers[0].operation.clone(),
            producers[0].field.clone(),
            producers[0].provides,
        )
    };
    assert_eq!(
        first("ClusterService_GetCluster", "clusterId"),
        (
            "ClusterService_CreateCluster".into(),
            "clusterId".into(),
            Provides::Creates
        )
    );
    // Listing is the next way to find one.
    let producers = flow.producers_of("ClusterService_GetCluster", "clusterId");
    assert_eq!(producers[1].operation, "ClusterService_ListClusters");
    assert_eq!(producers[1].field, "clusters.0.clusterId");
    // Operations that need the id themselves only echo it: never producers.
    assert!(
        producers
            .iter()
            .all(|producer| producer.operation != "BranchService_CreateBranch"),
        "{producers:?}"
    );
    // A dotted path parameter is the field it names.
    assert_eq!(
        first("ClusterService_PartialUpdateCluster", "cluster.clusterId").0,
        "ClusterService_CreateCluster"
    );
    assert_eq!(
        first("BranchService_ResetBranch", "branchId").0,
        "BranchService_CreateBranch"
    );
    // A generic `id` comes from the parent collection only.
    let import = flow.producers_of("ImportService_GetImport", "id");
    assert_eq!(
        import
            .iter()
            .map(|p| p.operation.as_str())
            .collect::<Vec<_>>(),
        ["ImportService_CreateImport", "ImportService_ListImports"]
    );
    assert_eq!(
        first("ImportService_CancelImport", "id").0,
        "ImportService_CreateImport"
    );
    // What a step still needs, given what is known.
    let known = |name: &str| name == "clusterId";
    assert_eq!(
        flow.missing_inputs("BranchService_GetBranch", known),
        ["branchId"]
    );
    assert_eq!(
        flow.needs["ClusterService_CreateCluster"],
        ["displayName", "region"]
    );
}
