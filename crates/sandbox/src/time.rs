//! Bay's timestamps: naive UTC ISO-8601 with microseconds and no offset
//! (`2026-11-22T04:02:59.609120`). Read with or without an offset; written as Bay writes them.

use chrono::{DateTime, NaiveDateTime, SecondsFormat, Utc};
use serde::{Deserialize, Deserializer, Serializer};

/// `at` as Bay writes it.
pub fn format(at: DateTime<Utc>) -> String {
    at.naive_utc().format("%Y-%m-%dT%H:%M:%S%.6f").to_string()
}

/// A Bay timestamp: naive (taken as UTC) or with an offset.
pub fn parse(text: &str) -> Option<DateTime<Utc>> {
    if let Ok(at) = DateTime::parse_from_rfc3339(text) {
        return Some(at.with_timezone(&Utc));
    }
    NaiveDateTime::parse_from_str(text, "%Y-%m-%dT%H:%M:%S%.f")
        .ok()
        .map(|naive| naive.and_utc())
}

/// Serde for a required Bay timestamp.
pub(crate) mod required {
    use super::*;

    pub(crate) fn serialize<S: Serializer>(
        at: &DateTime<Utc>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&format(*at))
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<DateTime<Utc>, D::Error> {
        let text = String::deserialize(deserializer)?;
        parse(&text).ok_or_else(|| serde::de::Error::custom(format!("`{text}` is not a timestamp")))
    }
}

/// Serde for an optional Bay timestamp (`null` allowed).
pub(crate) mod optional {
    use super::*;

    pub(crate) fn serialize<S: Serializer>(
        at: &Option<DateTime<Utc>>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        match at {
            Some(at) => serializer.serialize_str(&format(*at)),
            None => serializer.serialize_none(),
        }
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Option<DateTime<Utc>>, D::Error> {
        let text = Option::<String>::deserialize(deserializer)?;
        text.map(|text| {
            parse(&text)
                .ok_or_else(|| serde::de::Error::custom(format!("`{text}` is not a timestamp")))
        })
        .transpose()
    }
}

/// RFC 3339 for humans and logs.
pub fn rfc3339(at: DateTime<Utc>) -> String {
    at.to_rfc3339_opts(SecondsFormat::Micros, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn naive_and_offset_timestamps_read_and_bays_form_is_written() {
        let naive = parse("2026-11-22T04:02:59.609120").unwrap();
        assert_eq!(format(naive), "2026-11-22T04:02:59.609120");
        assert_eq!(parse("2026-11-22T04:02:59.609120Z"), Some(naive));
        assert_eq!(parse("2026-11-22T05:02:59.609120+01:00"), Some(naive));
        assert_eq!(
            parse("2026-11-22T04:02:59"),
            Some("2026-11-22T04:02:59Z".parse().unwrap())
        );
        assert_eq!(parse("yesterday"), None);
        assert_eq!(rfc3339(naive), "2026-11-22T04:02:59.609120Z");
    }
}
