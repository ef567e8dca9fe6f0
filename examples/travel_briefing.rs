//! Travel briefing (the Python structure-ai-bot project's third example): geocode a city, then
//! weather, country and exchange rates, and post a combined report to an echo service.
//!
//! ```sh
//! cargo run --example travel_briefing                                  # embedded demo API
//! cargo run --example travel_briefing -- --live --input=city=Oslo
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
    "id: geocode_city\nname: Geocode City\ndescription: City name to coordinates (Open-Meteo)\n\
     base_url: https://geocoding-api.open-meteo.com\npath: /v1/search\n",
    "id: open_meteo\nname: Open-Meteo Weather\ndescription: Current weather at a coordinate\n\
     base_url: https://api.open-meteo.com\npath: /v1/forecast\n",
    "id: rest_countries\nname: REST Countries\ndescription: Country details by ISO code\n\
     base_url: https://restcountries.com\npath: /v3.1/alpha/{code}\n",
    "id: exchange_rate\nname: Exchange Rate\ndescription: Latest rates for a base currency\n\
     base_url: https://open.er-api.com\npath: /v6/latest/{base}\n",
    "id: httpbin_post\nname: Echo\ndescription: POST JSON and get it echoed back\n\
     base_url: https://httpbin.org\nmethod: POST\npath: /post\n",
];

const WORKFLOW: &str = r#"
id: travel_briefing
name: Travel briefing
inputs:
  city: {default: Paris}
  home_currency: {default: USD}
steps:
  - {id: step_1, tool_id: geocode_city, input_mapping: {name: $input.city, count: "1"}}
  - id: step_2
    tool_id: open_meteo
    input_mapping:
      latitude: step_1.results.0.latitude
      longitude: step_1.results.0.longitude
      current: temperature_2m,wind_speed_10m,relative_humidity_2m
  - {id: step_3, tool_id: rest_countries, input_mapping: {code: step_1.results.0.country_code}}
  - {id: step_4, tool_id: exchange_rate, input_mapping: {base: $input.home_currency}}
  - id: step_5
    tool_id: httpbin_post
    input_mapping:
      city: step_1.results.0.name
      country: step_1.results.0.country
      temperature_c: step_2.current.temperature_2m
      wind_kmh: step_2.current.wind_speed_10m
      humidity_pct: step_2.current.relative_humidity_2m
      country_population: step_3.items.0.population
      country_region: step_3.items.0.region
      exchange_base: step_4.base_code
      rates_updated: step_4.time_last_update_utc
"#;

fn main() -> ExitCode {
    support::Example {
        tools: TOOLS,
        workflow: WORKFLOW,
        inputs: &[],
        demo_prefix: &[
            ("geocode_city", "/geocoding"),
            ("open_meteo", "/open-meteo"),
            ("rest_countries", "/restcountries"),
            ("exchange_rate", "/er-api"),
            ("httpbin_post", "/httpbin"),
        ],
    }
    .main()
}
