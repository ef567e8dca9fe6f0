//! XPath 3.1 over an XML document, for Arazzo's `xpath` criteria and selectors, evaluated by
//! Xee (`xee-xpath`, feature `xpath`). Without the feature, every query is refused saying so.

/// Why an XPath query could not be evaluated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum XPathError {
    /// The context is not an XML document.
    #[cfg_attr(not(feature = "xpath"), expect(dead_code))]
    Document(String),
    /// The query does not compile, or fails as it runs (a type error, say).
    #[cfg_attr(not(feature = "xpath"), expect(dead_code))]
    Query(String),
    /// This build evaluates no XPath (feature `xpath` off).
    #[cfg_attr(feature = "xpath", expect(dead_code))]
    NotBuilt,
}

/// Whether `query` holds over `xml`: the effective boolean value of what it gives (a node is
/// true, an empty result false, a boolean itself).
#[cfg(feature = "xpath")]
pub(crate) fn holds(xml: &str, query: &str) -> Result<bool, XPathError> {
    evaluate(xml, query, |sequence, _| {
        sequence
            .effective_boolean_value()
            .map_err(|error| XPathError::Query(error.to_string()))
    })
}

/// The string values of what `query` selects in `xml`, in document order.
#[cfg(feature = "xpath")]
pub(crate) fn select(xml: &str, query: &str) -> Result<Vec<String>, XPathError> {
    evaluate(xml, query, |sequence, xot| {
        sequence
            .iter()
            .map(|item| {
                item.string_value(xot.xot())
                    .map_err(|error| XPathError::Query(error.to_string()))
            })
            .collect()
    })
}

#[cfg(feature = "xpath")]
fn evaluate<T>(
    xml: &str,
    query: &str,
    answer: impl FnOnce(&xee_xpath::Sequence, &xee_xpath::Documents) -> Result<T, XPathError>,
) -> Result<T, XPathError> {
    use xee_xpath::{Documents, Queries, Query};
    let mut documents = Documents::new();
    let document = documents
        .add_string_without_uri(xml)
        .map_err(|error| XPathError::Document(error.to_string()))?;
    let queries = Queries::default();
    let compiled = queries
        .sequence(query)
        .map_err(|error| XPathError::Query(error.to_string()))?;
    let sequence = compiled
        .execute(&mut documents, document)
        .map_err(|error| XPathError::Query(error.to_string()))?;
    answer(&sequence, &documents)
}

#[cfg(not(feature = "xpath"))]
pub(crate) fn holds(_xml: &str, _query: &str) -> Result<bool, XPathError> {
    Err(XPathError::NotBuilt)
}

#[cfg(not(feature = "xpath"))]
pub(crate) fn select(_xml: &str, _query: &str) -> Result<Vec<String>, XPathError> {
    Err(XPathError::NotBuilt)
}

#[cfg(all(test, feature = "xpath"))]
mod tests {
    use super::*;

    const PETS: &str = "<pets><pet status='available'>rex</pet><pet status='sold'>ada</pet></pets>";

    #[test]
    fn queries_hold_by_their_effective_boolean_value() {
        assert_eq!(holds(PETS, "/pets/pet[@status='available']"), Ok(true));
        assert_eq!(holds(PETS, "/pets/pet[@status='lost']"), Ok(false));
        assert_eq!(holds(PETS, "count(//pet) = 2"), Ok(true));
        assert_eq!(holds(PETS, "count(//pet) = 3"), Ok(false));
        assert!(matches!(holds(PETS, "//pet[@"), Err(XPathError::Query(_))));
        assert!(matches!(
            holds("not xml", "/a"),
            Err(XPathError::Document(_))
        ));
    }

    #[test]
    fn selections_give_string_values() {
        assert_eq!(
            select(PETS, "//pet/text()"),
            Ok(vec!["rex".to_owned(), "ada".to_owned()])
        );
        assert_eq!(
            select(PETS, "string(//pet[2]/@status)"),
            Ok(vec!["sold".to_owned()])
        );
        assert_eq!(select(PETS, "//cat"), Ok(vec![]));
    }
}
