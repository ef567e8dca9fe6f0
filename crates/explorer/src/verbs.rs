//! The words a target says what to do with, and the verbs they mean, in any of their forms
//! ("read", "reads", "reading"; "get", "getting"; "create", "creating").

/// Words and the verbs they mean.
const VERBS: [(&str, &str); 31] = [
    ("run", "run"),
    ("execute", "run"),
    ("create", "create"),
    ("add", "create"),
    ("make", "create"),
    ("new", "create"),
    ("provision", "create"),
    ("get", "read"),
    ("show", "read"),
    ("describe", "read"),
    ("check", "read"),
    ("read", "read"),
    ("fetch", "read"),
    ("inspect", "read"),
    ("list", "list"),
    ("find", "list"),
    ("update", "update"),
    ("scale", "update"),
    ("modify", "update"),
    ("change", "update"),
    ("rename", "update"),
    ("edit", "update"),
    ("patch", "update"),
    ("put", "update"),
    ("replace", "update"),
    ("resize", "update"),
    ("delete", "delete"),
    ("remove", "delete"),
    ("destroy", "delete"),
    ("drop", "delete"),
    ("teardown", "delete"),
];

/// The verb `word` means, in any of its forms (`read`, `reads`, `reading`, `getting`,
/// `creating`).
pub(crate) fn verb_of(word: &str) -> Option<&'static str> {
    let find = |word: &str| {
        VERBS
            .iter()
            .find(|(text, _)| *text == word)
            .map(|(_, meaning)| *meaning)
    };
    find(word)
        .or_else(|| word.strip_suffix('s').and_then(find))
        .or_else(|| {
            let stem = word.strip_suffix("ing")?;
            find(stem)
                .or_else(|| find(&format!("{stem}e")))
                // `getting` → `get`
                .or_else(|| {
                    let mut chars = stem.chars().rev();
                    let (last, before) = (chars.next()?, chars.next()?);
                    (last == before)
                        .then(|| find(&stem[..stem.len() - last.len_utf8()]))
                        .flatten()
                })
        })
}
