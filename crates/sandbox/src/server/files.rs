//! The filesystem routes: read, write, delete, list, upload and download a sandbox's files.

use std::collections::HashMap;

use axum::body::Bytes;
use axum::extract::multipart::MultipartRejection;
use axum::extract::{Multipart, Path, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::IntoResponse;
use serde_json::json;

use super::Shared;
use super::reply::{Failure, Reply, body, missing, ok, path_query};

pub(super) async fn read_file(
    State(api): State<Shared>,
    Path(id): Path<String>,
    Query(query): Query<HashMap<String, String>>,
) -> Reply {
    let content = api.provider.read_file(&id, path_query(&query)?).await?;
    ok(StatusCode::OK, json!({ "content": content }))
}

#[derive(serde::Deserialize)]
pub(super) struct WriteBody {
    path: String,
    content: String,
}

pub(super) async fn write_file(
    State(api): State<Shared>,
    headers: HeaderMap,
    Path(id): Path<String>,
    bytes: Bytes,
) -> Reply {
    let request: WriteBody = body(&headers, &bytes)?;
    api.provider
        .write_file(&id, &request.path, &request.content)
        .await?;
    ok(StatusCode::OK, json!({"status": "ok"}))
}

pub(super) async fn delete_file(
    State(api): State<Shared>,
    Path(id): Path<String>,
    Query(query): Query<HashMap<String, String>>,
) -> Reply {
    api.provider.delete_file(&id, path_query(&query)?).await?;
    ok(StatusCode::OK, json!({"status": "ok"}))
}

pub(super) async fn list_files(
    State(api): State<Shared>,
    Path(id): Path<String>,
    Query(query): Query<HashMap<String, String>>,
) -> Reply {
    let path = query.get("path").map_or(".", String::as_str);
    let entries = api.provider.list_files(&id, path).await?;
    ok(StatusCode::OK, json!({ "entries": entries }))
}

pub(super) async fn upload(
    State(api): State<Shared>,
    Path(id): Path<String>, // Taken as a result, so that a body that is not multipart is answered after the auth
    // check, as every other request is (a 401 before a 422).
    form: Result<Multipart, MultipartRejection>,
) -> Reply {
    let mut form = form.map_err(|rejection| {
        Failure::Unprocessable(vec![json!({
            "type": "value_error", "loc": ["body"], "msg": rejection.body_text(), "input": null
        })])
    })?;
    let mut file = None;
    let mut path = None;
    let unreadable = |error: axum::extract::multipart::MultipartError| {
        Failure::Unprocessable(vec![json!({
            "type": "value_error", "loc": ["body"], "msg": error.body_text(), "input": null
        })])
    };
    while let Some(field) = form.next_field().await.map_err(unreadable)? {
        match field.name() {
            Some("file") => file = Some(field.bytes().await.map_err(unreadable)?),
            Some("path") => path = Some(field.text().await.map_err(unreadable)?),
            _ => {}
        }
    }
    let file = file.ok_or_else(|| missing("body", "file"))?;
    let path = path.ok_or_else(|| missing("body", "path"))?;
    ok(
        StatusCode::OK,
        api.provider.upload(&id, &path, file.to_vec()).await?,
    )
}

pub(super) async fn download(
    State(api): State<Shared>,
    Path(id): Path<String>,
    Query(query): Query<HashMap<String, String>>,
) -> Reply {
    let path = path_query(&query)?;
    let bytes = api.provider.download(&id, path).await?;
    let name = path.rsplit('/').next().unwrap_or(path);
    Ok((
        StatusCode::OK,
        [
            (header::CONTENT_TYPE, "application/octet-stream".to_owned()),
            (header::CONTENT_DISPOSITION, attachment(name)),
        ],
        bytes,
    )
        .into_response())
}

/// A `Content-Disposition` for a download named `name`, in ASCII as a header must be: each
/// character a quoted `filename` cannot hold (not printable ASCII, `"`, `\\`) as `_`, and when
/// any was, the name itself in `filename*` (RFC 6266, UTF-8 percent-encoded), as Bay sends it.
pub(super) fn attachment(name: &str) -> String {
    let plain: String = name
        .chars()
        .map(|ch| {
            if ch.is_ascii_graphic() && ch != '"' && ch != '\\' || ch == ' ' {
                ch
            } else {
                '_'
            }
        })
        .collect();
    if plain == name {
        return format!("attachment; filename=\"{plain}\"");
    }
    let encoded: String = name
        .bytes()
        .map(|byte| {
            if byte.is_ascii_alphanumeric() || b"!#$&+-.^_`|~".contains(&byte) {
                char::from(byte).to_string()
            } else {
                format!("%{byte:02X}")
            }
        })
        .collect();
    format!("attachment; filename=\"{plain}\"; filename*=UTF-8''{encoded}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn downloads_are_named_in_ascii_with_the_real_name_beside() {
        assert_eq!(
            attachment("report.txt"),
            "attachment; filename=\"report.txt\""
        );
        assert_eq!(
            attachment("报告 emoji 🧪.txt"),
            "attachment; filename=\"__ emoji _.txt\"; filename*=UTF-8''%E6%8A%A5%E5%91%8A%20emoji%20%F0%9F%A7%AA.txt"
        );
        let odd = attachment("a\"b\r\nc.txt");
        assert!(
            odd.starts_with("attachment; filename=\"a_b__c.txt\"; filename*="),
            "{odd}"
        );
        assert!(axum::http::HeaderValue::from_str(&odd).is_ok());
    }
}
