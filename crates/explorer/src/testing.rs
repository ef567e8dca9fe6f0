//! Test support (feature `testing`): a loopback simulation of the tidbx fixture API's cluster
//! and branch operations, for exercising the explorer. A cluster (and a branch) is `CREATING`
//! for [`POLLS`] polls, then `ACTIVE` (a cluster named `doomed` ends `DELETED` instead); a
//! missing required field is a 400; a branch on a
//! cluster that is not `ACTIVE`, or deleting a cluster that still has branches, is a 409.
//! Every call is counted.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::Json;
use axum::Router;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};

/// How many polls a new cluster or branch stays `CREATING`.
pub const POLLS: u32 = 2;

/// The simulation's state.
#[derive(Debug, Default)]
pub struct Sim {
    clusters: HashMap<String, (u32, Value)>,
    branches: HashMap<String, (u32, Value)>,
    next: u32,
    /// Every call: method, route, status answered.
    pub calls: Vec<(String, String, u16)>,
}

/// The simulation, shared with its server.
pub type Shared = Arc<Mutex<Sim>>;

fn answer(sim: &Shared, method: &str, route: &str, status: StatusCode, body: Value) -> Response {
    sim.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .calls
        .push((method.to_owned(), route.to_owned(), status.as_u16()));
    (status, Json(body)).into_response()
}

fn refuse(sim: &Shared, method: &str, route: &str, status: StatusCode, message: &str) -> Response {
    answer(
        sim,
        method,
        route,
        status,
        json!({"code": status.as_u16(), "message": message}),
    )
}

async fn create_cluster(State(sim): State<Shared>, Json(body): Json<Value>) -> Response {
    for field in ["displayName", "region"] {
        if body.get(field).is_none() {
            return refuse(
                &sim,
                "POST",
                "/clusters",
                StatusCode::BAD_REQUEST,
                &format!("{field} is required"),
            );
        }
    }
    let cluster = {
        let mut state = sim
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        state.next += 1;
        let id = format!("c-{}", state.next);
        let node_group = format!("ng-{}", state.next);
        let cluster = json!({"clusterId": id, "displayName": body["displayName"], "region": body["region"], "state": "CREATING",
            "tidbNodeSetting": {"tidbNodeGroups": [{"tidbNodeGroupId": node_group}]}});
        state.clusters.insert(id, (POLLS, cluster.clone()));
        cluster
    };
    answer(&sim, "POST", "/clusters", StatusCode::OK, cluster)
}

async fn get_cluster(State(sim): State<Shared>, Path(id): Path<String>) -> Response {
    let found = {
        let mut state = sim
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        state.clusters.get_mut(&id).map(|(polls, cluster)| {
            if *polls > 0 {
                *polls -= 1;
            } else if cluster["displayName"] == json!("doomed") {
                cluster["state"] = json!("DELETED");
            } else {
                cluster["state"] = json!("ACTIVE");
            }
            cluster.clone()
        })
    };
    match found {
        Some(cluster) => answer(&sim, "GET", "/clusters/{id}", StatusCode::OK, cluster),
        None => refuse(
            &sim,
            "GET",
            "/clusters/{id}",
            StatusCode::NOT_FOUND,
            "no such cluster",
        ),
    }
}

async fn delete_cluster(State(sim): State<Shared>, Path(id): Path<String>) -> Response {
    let verdict = {
        let mut state = sim
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let busy = state
            .branches
            .values()
            .any(|(_, branch)| branch["clusterId"] == json!(id));
        match (state.clusters.contains_key(&id), busy) {
            (false, _) => Err((StatusCode::NOT_FOUND, "no such cluster")),
            (true, true) => Err((StatusCode::CONFLICT, "the cluster still has branches")),
            (true, false) => {
                state.clusters.remove(&id);
                Ok(())
            }
        }
    };
    match verdict {
        Ok(()) => answer(&sim, "DELETE", "/clusters/{id}", StatusCode::OK, json!({})),
        Err((status, message)) => refuse(&sim, "DELETE", "/clusters/{id}", status, message),
    }
}

async fn create_branch(
    State(sim): State<Shared>,
    Path(cluster): Path<String>,
    Json(body): Json<Value>,
) -> Response {
    let route = "/clusters/{id}/branches";
    if body.get("displayName").is_none() {
        return refuse(
            &sim,
            "POST",
            route,
            StatusCode::BAD_REQUEST,
            "displayName is required",
        );
    }
    let created = {
        let mut state = sim
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let active = state
            .clusters
            .get(&cluster)
            .map(|(_, found)| found["state"] == json!("ACTIVE"));
        match active {
            None => Err((StatusCode::NOT_FOUND, "no such cluster")),
            Some(false) => Err((StatusCode::CONFLICT, "the cluster is not ACTIVE")),
            Some(true) => {
                state.next += 1;
                let id = format!("b-{}", state.next);
                let branch = json!({"branchId": id, "clusterId": cluster, "displayName": body["displayName"], "state": "CREATING"});
                state.branches.insert(id, (POLLS, branch.clone()));
                Ok(branch)
            }
        }
    };
    match created {
        Ok(branch) => answer(&sim, "POST", route, StatusCode::OK, branch),
        Err((status, message)) => refuse(&sim, "POST", route, status, message),
    }
}

async fn get_branch(
    State(sim): State<Shared>,
    Path((_, branch)): Path<(String, String)>,
) -> Response {
    let route = "/clusters/{id}/branches/{branch}";
    let found = {
        let mut state = sim
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        state.branches.get_mut(&branch).map(|(polls, found)| {
            if *polls > 0 {
                *polls -= 1;
            } else {
                found["state"] = json!("ACTIVE");
            }
            found.clone()
        })
    };
    match found {
        Some(branch) => answer(&sim, "GET", route, StatusCode::OK, branch),
        None => refuse(&sim, "GET", route, StatusCode::NOT_FOUND, "no such branch"),
    }
}

async fn delete_branch(
    State(sim): State<Shared>,
    Path((_, branch)): Path<(String, String)>,
) -> Response {
    let route = "/clusters/{id}/branches/{branch}";
    let removed = sim
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .branches
        .remove(&branch)
        .is_some();
    if removed {
        answer(&sim, "DELETE", route, StatusCode::OK, json!({}))
    } else {
        refuse(
            &sim,
            "DELETE",
            route,
            StatusCode::NOT_FOUND,
            "no such branch",
        )
    }
}

/// Starts the simulation on a loopback port (panics when no loopback port can be bound: it
/// is for tests): its origin (`http://127.0.0.1:PORT`; the API is
/// under `/v1beta1`) and its state.
pub async fn start() -> (String, Shared) {
    serve(None).await
}

/// As [`start`], with the API behind HTTP digest auth (MD5, qop `auth`) for `username` and
/// `password`: a request without a right answer gets a 401 challenge (counted as a call).
pub async fn start_with_digest(username: &str, password: &str) -> (String, Shared) {
    serve(Some((username.to_owned(), password.to_owned()))).await
}

const REALM: &str = "simulation";
const NONCE: &str = "sim-nonce-1";

fn md5_hex(text: &str) -> String {
    use md5::Digest as _;
    md5::Md5::digest(text.as_bytes())
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

/// A parameter of a `Digest` Authorization value.
fn digest_field<'a>(value: &'a str, name: &str) -> Option<&'a str> {
    let start = value.find(&format!("{name}="))? + name.len() + 1;
    let rest = &value[start..];
    match rest.strip_prefix('"') {
        Some(quoted) => quoted.split('"').next(),
        None => rest.split(',').next().map(str::trim),
    }
}

/// True when `authorization` answers the simulation's challenge for `method` as `credentials`.
fn digest_holds(authorization: &str, method: &str, credentials: &(String, String)) -> bool {
    let (username, password) = credentials;
    let field = |name| digest_field(authorization, name).unwrap_or_default();
    if !authorization.starts_with("Digest ")
        || field("username") != username
        || field("nonce") != NONCE
    {
        return false;
    }
    let ha1 = md5_hex(&format!("{username}:{REALM}:{password}"));
    let ha2 = md5_hex(&format!("{method}:{}", field("uri")));
    let expected = md5_hex(&format!(
        "{ha1}:{NONCE}:{}:{}:auth:{ha2}",
        field("nc"),
        field("cnonce")
    ));
    field("response") == expected
}

async fn guard(
    State((sim, credentials)): State<(Shared, Option<(String, String)>)>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let Some(credentials) = credentials else {
        return next.run(request).await;
    };
    let authorization = request
        .headers()
        .get("authorization")
        .and_then(|value| value.to_str().ok())
        .unwrap_or_default();
    if digest_holds(authorization, request.method().as_str(), &credentials) {
        return next.run(request).await;
    }
    sim.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .calls
        .push((
            request.method().to_string(),
            request.uri().path().to_owned(),
            401,
        ));
    (
        StatusCode::UNAUTHORIZED,
        [(
            "www-authenticate",
            format!(r#"Digest realm="{REALM}", qop="auth", nonce="{NONCE}", algorithm=MD5"#),
        )],
        "authentication required",
    )
        .into_response()
}

async fn serve(credentials: Option<(String, String)>) -> (String, Shared) {
    let sim: Shared = Arc::default();
    let app = Router::new()
        .route("/v1beta1/clusters", post(create_cluster))
        .route(
            "/v1beta1/clusters/{id}",
            get(get_cluster).delete(delete_cluster),
        )
        .route("/v1beta1/clusters/{id}/branches", post(create_branch))
        .route(
            "/v1beta1/clusters/{id}/branches/{branch}",
            get(get_branch).delete(delete_branch),
        )
        .layer(axum::middleware::from_fn_with_state(
            (Arc::clone(&sim), credentials),
            guard,
        ))
        .with_state(Arc::clone(&sim));
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
        .await
        .expect("a loopback port for the simulation");
    let address = listener.local_addr().expect("the simulation's address");
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (format!("http://{address}"), sim)
}

/// Calls answered with `status`.
pub fn count(sim: &Shared, status: u16) -> usize {
    sim.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .calls
        .iter()
        .filter(|(_, _, answered)| *answered == status)
        .count()
}

/// Calls of `method` `route`.
pub fn calls(sim: &Shared, method: &str, route: &str) -> usize {
    sim.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .calls
        .iter()
        .filter(|(m, r, _)| m == method && r == route)
        .count()
}
