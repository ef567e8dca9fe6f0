//! An embedded demo API on loopback, so the examples run anywhere with no network: canned
//! answers shaped like the public APIs the examples call (ip-api, Open-Meteo, REST Countries,
//! ExchangeRate-API, GitHub, httpbin), each under its own path prefix, with a little latency.

use std::time::Duration;

use serde_json::{Value, json};
use wayline::executor::testing::{MockServer, RecordedRequest, Reply};

/// Cities the geocoder knows: name, latitude, longitude, country, ISO code.
const CITIES: [(&str, f64, f64, &str, &str); 8] = [
    ("Lisbon", 38.7167, -9.1333, "Portugal", "PT"),
    ("Oslo", 59.9127, 10.7461, "Norway", "NO"),
    ("Tokyo", 35.6895, 139.6917, "Japan", "JP"),
    ("Paris", 48.8534, 2.3488, "France", "FR"),
    ("Nairobi", -1.2833, 36.8167, "Kenya", "KE"),
    ("Lima", -12.0432, -77.0282, "Peru", "PE"),
    ("Sydney", -33.8679, 151.2073, "Australia", "AU"),
    ("Toronto", 43.7001, -79.4163, "Canada", "CA"),
];

/// Countries: ISO code, capital, region, population, currency code, currency name.
const COUNTRIES: [(&str, &str, &str, u64, &str, &str); 8] = [
    ("PT", "Lisbon", "Europe", 10_749_635, "EUR", "Euro"),
    ("NO", "Oslo", "Europe", 5_606_944, "NOK", "Norwegian krone"),
    ("JP", "Tokyo", "Asia", 123_210_000, "JPY", "Japanese yen"),
    ("FR", "Paris", "Europe", 68_373_433, "EUR", "Euro"),
    (
        "KE",
        "Nairobi",
        "Africa",
        53_330_978,
        "KES",
        "Kenyan shilling",
    ),
    ("PE", "Lima", "Americas", 34_352_720, "PEN", "Peruvian sol"),
    (
        "AU",
        "Canberra",
        "Oceania",
        27_536_874,
        "AUD",
        "Australian dollar",
    ),
    (
        "CA",
        "Ottawa",
        "Americas",
        41_651_653,
        "CAD",
        "Canadian dollar",
    ),
];

/// Units of each currency per euro.
const PER_EUR: [(&str, f64); 9] = [
    ("EUR", 1.0),
    ("USD", 1.08),
    ("NOK", 11.52),
    ("JPY", 162.3),
    ("KES", 139.9),
    ("PEN", 4.05),
    ("AUD", 1.64),
    ("CAD", 1.47),
    ("GBP", 0.85),
];

/// Starts the demo API.
pub(crate) async fn start() -> std::io::Result<MockServer> {
    MockServer::start(|request| {
        let path = request.path().to_owned();
        let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
        let reply = match segments.as_slice() {
            ["ip-api", "json"] => Reply::json(200, ip_api()),
            ["open-meteo", "v1", "forecast"] => forecast(request),
            ["geocoding", "v1", "search"] => geocode(request),
            ["restcountries", "v3.1", "alpha", code] => country(code),
            ["er-api", "v6", "latest", base] => rates(base),
            ["httpbin", "post"] => {
                Reply::json(200, json!({"json": request.json(), "url": request.target}))
            }
            ["github", "repos", owner, repo, rest @ ..] => github(owner, repo, rest),
            _ => Reply::json(
                404,
                json!({"message": format!("the demo API has no {path}")}),
            ),
        };
        // A little latency, different per service, so parallel steps visibly overlap.
        reply.delay(Duration::from_millis(20 + 10 * (path.len() as u64 % 5)))
    })
    .await
}

fn ip_api() -> Value {
    json!({
        "status": "success", "country": "Portugal", "countryCode": "PT", "city": "Lisbon",
        "lat": 38.7167, "lon": -9.1333, "timezone": "Europe/Lisbon", "query": "203.0.113.7"
    })
}

fn number(request: &RecordedRequest, name: &str) -> Option<f64> {
    request.query(name)?.parse().ok()
}

fn forecast(request: &RecordedRequest) -> Reply {
    let (Some(lat), Some(lon)) = (number(request, "latitude"), number(request, "longitude")) else {
        return Reply::json(
            400,
            json!({"error": true, "reason": "latitude and longitude are required"}),
        );
    };
    // Warmer near the equator; a touch of longitude so cities differ.
    let temperature = ((28.0 - lat.abs() * 0.45 + (lon / 60.0)) * 10.0).round() / 10.0;
    json_reply(json!({
        "latitude": lat, "longitude": lon,
        "current": {
            "time": "2026-11-22T12:00",
            "temperature_2m": temperature,
            "wind_speed_10m": ((lat.abs() / 4.0 + 3.0) * 10.0).round() / 10.0,
            "relative_humidity_2m": 40 + (lon.abs() as i64 % 50)
        }
    }))
}

fn geocode(request: &RecordedRequest) -> Reply {
    let name = request.query("name").unwrap_or_default();
    let found = CITIES
        .iter()
        .find(|(city, ..)| city.eq_ignore_ascii_case(&name));
    match found {
        Some((city, lat, lon, country, code)) => json_reply(json!({"results": [{
            "name": city, "latitude": lat, "longitude": lon, "country": country, "country_code": code
        }]})),
        None => json_reply(json!({"generationtime_ms": 0.2})),
    }
}

fn country(code: &str) -> Reply {
    let found = COUNTRIES
        .iter()
        .find(|(iso, ..)| iso.eq_ignore_ascii_case(code));
    let Some((iso, capital, region, population, currency, currency_name)) = found else {
        return Reply::json(404, json!({"status": 404, "message": "Not Found"}));
    };
    let name = CITIES
        .iter()
        .find(|city| city.4 == *iso)
        .map_or(*iso, |city| city.3);
    json_reply(json!([{
        "name": {"common": name}, "cca2": iso, "capital": [capital], "region": region,
        "population": population, "currencies": {*currency: {"name": currency_name}}
    }]))
}

fn rates(base: &str) -> Reply {
    let Some((_, base_per_eur)) = PER_EUR.iter().find(|(code, _)| *code == base) else {
        return Reply::json(
            404,
            json!({"result": "error", "error-type": "unsupported-code"}),
        );
    };
    let rates: serde_json::Map<String, Value> = PER_EUR
        .iter()
        .map(|(code, per_eur)| {
            let rate = (per_eur / base_per_eur * 10_000.0).round() / 10_000.0;
            ((*code).to_owned(), json!(rate))
        })
        .collect();
    json_reply(json!({
        "result": "success", "base_code": base,
        "time_last_update_utc": "Sun, 22 Nov 2026 00:02:31 +0000", "rates": rates
    }))
}

fn github(owner: &str, repo: &str, rest: &[&str]) -> Reply {
    let full = format!("{owner}/{repo}");
    match rest {
        [] => json_reply(json!({
            "full_name": full, "description": "A demo repository", "language": "Rust",
            "stargazers_count": 4211, "forks_count": 377, "open_issues_count": 42,
            "html_url": format!("https://github.com/{full}")
        })),
        ["contributors"] => json_reply(json!([
            {"login": "ada", "contributions": 812},
            {"login": "grace", "contributions": 455},
            {"login": "linus", "contributions": 120}
        ])),
        ["releases"] => json_reply(json!([
            {"tag_name": "v2.3.0", "name": "Fall release", "published_at": "2026-10-01T10:00:00Z"},
            {"tag_name": "v2.2.1", "name": "Fixes", "published_at": "2026-08-12T09:30:00Z"}
        ])),
        ["issues"] => json_reply(json!([
            {"number": 1234, "title": "Retries ignore Retry-After dates",
             "html_url": format!("https://github.com/{full}/issues/1234")}
        ])),
        ["stats", "commit_activity"] => json_reply(json!([
            {"week": 1_763_251_200, "total": 31, "days": [2, 6, 5, 7, 4, 5, 2]}
        ])),
        _ => Reply::json(404, json!({"message": "Not Found"})),
    }
}

fn json_reply(body: Value) -> Reply {
    Reply::json(200, body)
}
