//! Quickstart: a travel briefing as a graph of API calls, run by the engine.
//!
//! ```sh
//! cargo run --example quickstart                         # against the embedded demo API
//! cargo run --example quickstart -- --input=city=Tokyo   # another city
//! cargo run --example quickstart -- --live               # against the real public APIs
//! ```
//!
//! The city is geocoded; then the weather and the country are fetched in parallel (fan-out);
//! the exchange rate needs the country's currency; a `transform` step joins it all (fan-in)
//! with CEL, no I/O. The embedded demo API answers on loopback, so this runs with no network.
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
    "id: geocode\nname: Geocode\ndescription: City name to coordinates and country\n\
     base_url: https://geocoding-api.open-meteo.com\npath: /v1/search\n\
     request: {query_params: [name, count]}\n\
     response_extract:\n  fields: {name: results.0.name, lat: results.0.latitude, lon: results.0.longitude, \
     country_code: results.0.country_code}\n",
    "id: forecast\nname: Forecast\ndescription: Current weather at a coordinate\n\
     base_url: https://api.open-meteo.com\npath: /v1/forecast\n\
     request: {query_params: [latitude, longitude, current]}\n\
     response_extract:\n  fields: {temperature: current.temperature_2m, wind: current.wind_speed_10m}\n",
    "id: country\nname: Country\ndescription: Country details by ISO code\n\
     base_url: https://restcountries.com\npath: /v3.1/alpha/{code}\n\
     request: {path_params: [code]}\n\
     response_extract:\n  fields: {name: 0.name.common, capital: 0.capital.0, population: 0.population, \
     currency: '$[0].currencies'}\n",
    "id: rates\nname: Exchange rates\ndescription: Latest rates for a base currency\n\
     base_url: https://open.er-api.com\npath: /v6/latest/{base}\n",
];

const WORKFLOW: &str = r#"
id: quickstart
name: Travel briefing
inputs:
  city: {description: where you are going, default: Lisbon}
  home_currency: {description: what you pay in, default: USD}
steps:
  - id: place
    tool_id: geocode
    input_mapping: {name: $input.city, count: "1"}
    validations:
      - {field: lat, check: not_null, message: "the geocoder does not know this city"}
  - id: weather
    tool_id: forecast
    input_mapping: {latitude: place.lat, longitude: place.lon, current: "temperature_2m,wind_speed_10m"}
  - id: country
    tool_id: country
    input_mapping: {code: place.country_code}
  - id: money
    tool_id: rates
    input_mapping: {base: $input.home_currency}
    outputs:
      local_currency: "steps.country.currency.map(code, code)[0]"
      rate: "body.rates[steps.country.currency.map(code, code)[0]]"
  - id: briefing
    kind: transform
    outputs:
      headline: >-
        steps.place.name + ", " + steps.country.name + ": " +
        string(steps.weather.temperature) + " °C, wind " + string(steps.weather.wind) + " km/h"
      capital: steps.country.capital
      population: steps.country.population
      money: >-
        "1 " + inputs.home_currency + " = " + string(steps.money.rate) + " " + steps.money.local_currency
"#;

fn main() -> ExitCode {
    support::Example {
        tools: TOOLS,
        workflow: WORKFLOW,
        inputs: &[],
        demo_prefix: &[
            ("geocode", "/geocoding"),
            ("forecast", "/open-meteo"),
            ("country", "/restcountries"),
            ("rates", "/er-api"),
        ],
    }
    .main()
}
