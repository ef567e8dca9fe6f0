//! XPath 3.1 over an XML document, for Arazzo's `xpath` criteria and selectors, evaluated by
//! Xee (`xee-xpath`, feature `xpath`). Without the feature, every query is refused saying so.
//!
//! A document nested deeper than [`MAX_XML_DEPTH`] elements is refused before it is parsed (a
//! parser's time can grow with the square of the nesting: 200,000 levels took 38 s), and an
//! evaluation runs on a thread of its own that the caller waits for while its run lasts: it
//! gives up when the run is cancelled or passes its deadline, or after [`MAX_XPATH_TIME`] (a
//! query can loop: `for $i in 1 to 10000000000 return $i`). An evaluation given up on finishes
//! on its thread and is thrown away.

use std::time::Duration;
#[cfg(feature = "xpath")]
use std::time::Instant;

/// The deepest nesting of elements an XML document may have (libxml2's default).
pub(crate) const MAX_XML_DEPTH: usize = 256;

/// The longest one evaluation may take.
#[cfg_attr(not(feature = "xpath"), expect(dead_code))]
pub(crate) const MAX_XPATH_TIME: Duration = Duration::from_secs(10);

/// Why an XPath query could not be evaluated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum XPathError {
    /// The context is not an XML document (or nests deeper than allowed).
    Document(String),
    /// The query does not compile, or fails as it runs (a type error, say).
    #[cfg_attr(not(feature = "xpath"), expect(dead_code))]
    Query(String),
    /// The evaluation was given up: the run stopped, or it took longer than allowed.
    #[cfg_attr(not(feature = "xpath"), expect(dead_code))]
    Stopped(String),
    /// This build evaluates no XPath (feature `xpath` off).
    #[cfg_attr(feature = "xpath", expect(dead_code))]
    NotBuilt,
}

/// Whether the run an evaluation serves has stopped (cancelled, or past its deadline).
pub(crate) type Stop<'a> = &'a dyn Fn() -> bool;

/// Refuses `xml` when its elements nest deeper than [`MAX_XML_DEPTH`], by one pass over the
/// text (comments, CDATA, declarations, processing instructions and quoted attribute values
/// skipped).
#[cfg_attr(not(feature = "xpath"), expect(dead_code))]
fn check_depth(xml: &str) -> Result<(), XPathError> {
    let bytes = xml.as_bytes();
    let (mut depth, mut at) = (0usize, 0usize);
    let skip_to = |from: usize, end: &[u8]| {
        bytes[from..]
            .windows(end.len())
            .position(|window| window == end)
            .map_or(bytes.len(), |found| from + found + end.len())
    };
    while let Some(found) = bytes[at..].iter().position(|&byte| byte == b'<') {
        at += found + 1;
        match bytes.get(at) {
            Some(b'/') => {
                depth = depth.saturating_sub(1);
                at = skip_to(at, b">");
            }
            Some(b'?') => at = skip_to(at, b"?>"),
            Some(b'!') if bytes[at..].starts_with(b"!--") => at = skip_to(at, b"-->"),
            Some(b'!') if bytes[at..].starts_with(b"![CDATA[") => at = skip_to(at, b"]]>"),
            Some(b'!') => at = skip_to(at, b">"),
            Some(_) => {
                // An element's start tag: to its `>`, past quoted attribute values.
                let mut quote = None;
                let mut closed_itself = false;
                while let Some(&byte) = bytes.get(at) {
                    at += 1;
                    match (quote, byte) {
                        (Some(open), _) if byte == open => quote = None,
                        (Some(_), _) => {}
                        (None, b'"' | b'\'') => quote = Some(byte),
                        (None, b'>') => {
                            closed_itself = bytes.get(at.wrapping_sub(2)) == Some(&b'/');
                            break;
                        }
                        _ => {}
                    }
                }
                if !closed_itself {
                    depth += 1;
                    if depth > MAX_XML_DEPTH {
                        return Err(XPathError::Document(format!(
                            "its elements nest deeper than {MAX_XML_DEPTH} levels"
                        )));
                    }
                }
            }
            None => break,
        }
    }
    Ok(())
}

/// Runs `work` on a thread of its own and waits for it while `stop` says the run goes on, at
/// most [`MAX_XPATH_TIME`].
#[cfg(feature = "xpath")]
fn watched<T: Send + 'static>(
    stop: Stop<'_>,
    work: impl FnOnce() -> Result<T, XPathError> + Send + 'static,
) -> Result<T, XPathError> {
    let (send, answer) = std::sync::mpsc::channel();
    std::thread::Builder::new()
        .name("wayline-xpath".to_owned())
        .spawn(move || {
            let _ = send.send(work());
        })
        .map_err(|error| XPathError::Query(format!("cannot start the evaluation: {error}")))?;
    let started = Instant::now();
    loop {
        match answer.recv_timeout(Duration::from_millis(20)) {
            Ok(result) => return result,
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                return Err(XPathError::Query("the evaluation failed".to_owned()));
            }
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
        }
        if stop() {
            return Err(XPathError::Stopped(
                "the run was cancelled or passed its deadline during the evaluation".to_owned(),
            ));
        }
        if started.elapsed() > MAX_XPATH_TIME {
            return Err(XPathError::Stopped(format!(
                "the evaluation took longer than {} s",
                MAX_XPATH_TIME.as_secs()
            )));
        }
    }
}

/// Whether `query` holds over `xml`: the effective boolean value of what it gives (a node is
/// true, an empty result false, a boolean itself).
#[cfg(feature = "xpath")]
pub(crate) fn holds(xml: String, query: String, stop: Stop<'_>) -> Result<bool, XPathError> {
    evaluate(xml, query, stop, |sequence, _| {
        sequence
            .effective_boolean_value()
            .map_err(|error| XPathError::Query(error.to_string()))
    })
}

/// The string values of what `query` selects in `xml`, in document order.
#[cfg(feature = "xpath")]
pub(crate) fn select(
    xml: String,
    query: String,
    stop: Stop<'_>,
) -> Result<Vec<String>, XPathError> {
    evaluate(xml, query, stop, |sequence, xot| {
        sequence
            .iter()
            .map(|item| {
                item.string_value(xot.xot())
                    .map_err(|error| XPathError::Query(error.to_string()))
            })
            .collect()
    })
}

/// `query` evaluated over `xml` and read by `answer`: the document's depth checked first, the
/// evaluation [`watched`].
#[cfg(feature = "xpath")]
fn evaluate<T: Send + 'static>(
    xml: String,
    query: String,
    stop: Stop<'_>,
    answer: impl FnOnce(&xee_xpath::Sequence, &xee_xpath::Documents) -> Result<T, XPathError>
    + Send
    + 'static,
) -> Result<T, XPathError> {
    use xee_xpath::{Documents, Queries, Query};
    check_depth(&xml)?;
    watched(stop, move || {
        let mut documents = Documents::new();
        let document = documents
            .add_string_without_uri(&xml)
            .map_err(|error| XPathError::Document(error.to_string()))?;
        let queries = Queries::default();
        let compiled = queries
            .sequence(&query)
            .map_err(|error| XPathError::Query(error.to_string()))?;
        let sequence = compiled
            .execute(&mut documents, document)
            .map_err(|error| XPathError::Query(error.to_string()))?;
        answer(&sequence, &documents)
    })
}

#[cfg(not(feature = "xpath"))]
pub(crate) fn holds(_xml: String, _query: String, _stop: Stop<'_>) -> Result<bool, XPathError> {
    Err(XPathError::NotBuilt)
}

#[cfg(not(feature = "xpath"))]
pub(crate) fn select(
    _xml: String,
    _query: String,
    _stop: Stop<'_>,
) -> Result<Vec<String>, XPathError> {
    Err(XPathError::NotBuilt)
}

#[cfg(all(test, feature = "xpath"))]
mod tests {
    use super::*;

    const PETS: &str = "<pets><pet status='available'>rex</pet><pet status='sold'>ada</pet></pets>";

    fn never() -> bool {
        false
    }

    fn holds(xml: &str, query: &str) -> Result<bool, XPathError> {
        super::holds(xml.to_owned(), query.to_owned(), &never)
    }

    fn select(xml: &str, query: &str) -> Result<Vec<String>, XPathError> {
        super::select(xml.to_owned(), query.to_owned(), &never)
    }

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

    /// Issue 31, item 9: 200,000 nested elements took 38 s; they are refused at once, and
    /// what a document's comments, CDATA and attributes hold does not count.
    #[test]
    fn deep_documents_are_refused_and_loops_given_up() {
        let deep = format!("{}{}", "<a>".repeat(200_000), "</a>".repeat(200_000));
        let refused = holds(&deep, "/a").unwrap_err();
        assert!(
            matches!(&refused, XPathError::Document(reason) if reason.contains("deeper than 256")),
            "{refused:?}"
        );
        let fine = format!(
            "<r><!-- {} --><![CDATA[{}]]><x a='x>y' b=\"/>\"/>{}{}</r>",
            "<a>".repeat(300),
            "<a>".repeat(300),
            "<i>".repeat(200),
            "</i>".repeat(200)
        );
        assert_eq!(holds(&fine, "count(//i) = 200"), Ok(true));
        // A stopped run gives the evaluation up.
        let stopped = super::holds(
            PETS.to_owned(),
            "count(for $i in 1 to 1000000 return $i * $i) > 0".to_owned(),
            &|| true,
        );
        assert!(
            matches!(stopped, Err(XPathError::Stopped(_))),
            "{stopped:?}"
        );
    }
}
