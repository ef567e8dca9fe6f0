//! Geo weather (the Python structure-ai-bot project's first example): where am I, what is the
//! weather there, and which country is it? Two calls fan out from the IP lookup.
//!
//! ```sh
//! cargo run --example geo_weather            # against the embedded demo API
//! cargo run --example geo_weather -- --live  # ip-api.com, api.open-meteo.com, restcountries.com
//! ```
//!
//! What to put in your own `Cargo.toml` to use this file as it is (with `examples/support/`
//! beside it as `src/support/`: the demo API and the way the examples show a run):
//!
//! ```toml
//! [dependencies]
//! wayline = { version = "0.1", default-features = false, features = ["graph", "registry", "executor", "http", "testing"] }
//! tokio = { version = "1", features = ["rt-multi-thread"] }
//! serde_json = "1"
//! indexmap = "2"
//! ```

mod support;

use std::process::ExitCode;

const TOOLS: &[&str] = &[
    "id: ip_geolocation\nname: IP Geolocation\ndescription: Where the caller's IP address is\n\
     base_url: http://ip-api.com\npath: /json/\n",
    "id: open_meteo\nname: Open-Meteo Weather\ndescription: Current weather at a coordinate\n\
     base_url: https://api.open-meteo.com\npath: /v1/forecast\n",
    "id: rest_countries\nname: REST Countries\ndescription: Country details by ISO code\n\
     base_url: https://restcountries.com\npath: /v3.1/alpha/{code}\n",
];

const WORKFLOW: &str = r#"
id: geo_weather
name: Geo weather
steps:
  - id: step_1
    tool_id: ip_geolocation
  - id: step_2
    tool_id: open_meteo
    input_mapping: {latitude: step_1.lat, longitude: step_1.lon, current: "temperature_2m,wind_speed_10m"}
  - id: step_3
    tool_id: rest_countries
    input_mapping: {code: step_1.countryCode}
"#;

fn main() -> ExitCode {
    support::Example {
        tools: TOOLS,
        workflow: WORKFLOW,
        inputs: &[],
        demo_prefix: &[
            ("ip_geolocation", "/ip-api"),
            ("open_meteo", "/open-meteo"),
            ("rest_countries", "/restcountries"),
        ],
    }
    .main()
}
