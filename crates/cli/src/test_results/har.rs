//! The HTTP Archive (HAR 1.2) of a test's exchanges (`--har PATH`): a page per workflow and an
//! entry per request, its response (or, for a request that failed, status 0 and the error in
//! `_error`), with the secrets already masked by the recorder. Bodies that are not UTF-8 are
//! kept in base64, as HAR allows.

use base64::Engine as _;
use serde_json::{Value, json};
use wayline_core::{HttpRequest, HttpResponse};
use wayline_executor::Exchange;

use super::TestResults;

/// The archive.
pub(crate) fn render(results: &TestResults) -> Value {
    let mut pages = Vec::new();
    let mut entries = Vec::new();
    for (index, case) in results.cases.iter().enumerate() {
        if case.exchanges.is_empty() {
            continue;
        }
        let page = format!("page_{}", index + 1);
        pages.push(json!({
            "startedDateTime": case.started_at.to_rfc3339(),
            "id": page,
            "title": format!("{} ({})", case.path, case.id),
            "pageTimings": {},
        }));
        entries.extend(case.exchanges.iter().map(|exchange| entry(exchange, &page)));
    }
    json!({
        "log": {
            "version": "1.2",
            "creator": {"name": "wayline", "version": env!("CARGO_PKG_VERSION")},
            "pages": pages,
            "entries": entries,
        }
    })
}

fn ms(duration: std::time::Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

fn entry(exchange: &Exchange, page: &str) -> Value {
    let time = ms(exchange.duration);
    let mut entry = json!({
        "pageref": page,
        "startedDateTime": exchange.started_at.to_rfc3339(),
        "time": time,
        "request": request(&exchange.request),
        "response": exchange.response.as_ref().map_or_else(no_response, response),
        "cache": {},
        "timings": {"send": 0.0, "wait": time, "receive": 0.0},
    });
    if let Some(error) = &exchange.error {
        entry["_error"] = json!(error);
    }
    entry
}

fn header_list<'a>(headers: impl Iterator<Item = (&'a str, &'a str)>) -> Vec<Value> {
    headers
        .map(|(name, value)| json!({"name": name, "value": value}))
        .collect()
}

fn request(request: &HttpRequest) -> Value {
    let query: Vec<Value> = url::Url::parse(&request.url)
        .map(|url| {
            url.query_pairs()
                .map(|(name, value)| json!({"name": name, "value": value}))
                .collect()
        })
        .unwrap_or_default();
    let body = request.body.as_deref().unwrap_or_default();
    let mut value = json!({
        "method": request.method,
        "url": request.url,
        "httpVersion": "HTTP/1.1",
        "cookies": [],
        "headers": header_list(request.headers.iter().map(|h| (h.name.as_str(), h.value.as_str()))),
        "queryString": query,
        "headersSize": -1,
        "bodySize": body.len(),
    });
    if !body.is_empty() {
        let mime = request
            .header("content-type")
            .unwrap_or("application/octet-stream");
        value["postData"] = match std::str::from_utf8(body) {
            Ok(text) => json!({"mimeType": mime, "text": text}),
            // HAR 1.2 has no encoding for postData: say what it was.
            Err(_) => {
                json!({"mimeType": mime, "text": "", "comment": format!("{} bytes that are not UTF-8, left out", body.len())})
            }
        };
    }
    value
}

fn response(response: &HttpResponse) -> Value {
    let mime = response.header("content-type").unwrap_or("");
    let mut content = json!({"size": response.body.len(), "mimeType": mime});
    match std::str::from_utf8(&response.body) {
        Ok(text) => content["text"] = json!(text),
        Err(_) => {
            content["text"] =
                json!(base64::engine::general_purpose::STANDARD.encode(&response.body));
            content["encoding"] = json!("base64");
        }
    }
    json!({
        "status": response.status,
        "statusText": status_text(response.status),
        "httpVersion": "HTTP/1.1",
        "cookies": [],
        "headers": header_list(response.headers.iter().map(|(n, v)| (n.as_str(), v.as_str()))),
        "content": content,
        "redirectURL": response.header("location").unwrap_or(""),
        "headersSize": -1,
        "bodySize": response.body.len(),
    })
}

/// The response of a request that got none (HAR's convention: status 0).
fn no_response() -> Value {
    json!({
        "status": 0,
        "statusText": "",
        "httpVersion": "",
        "cookies": [],
        "headers": [],
        "content": {"size": 0, "mimeType": ""},
        "redirectURL": "",
        "headersSize": -1,
        "bodySize": -1,
    })
}

fn status_text(status: u16) -> &'static str {
    match status {
        200 => "OK",
        201 => "Created",
        202 => "Accepted",
        204 => "No Content",
        301 => "Moved Permanently",
        302 => "Found",
        304 => "Not Modified",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        409 => "Conflict",
        422 => "Unprocessable Content",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "",
    }
}
