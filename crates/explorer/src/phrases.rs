//! The values a target gives, lifted out of its text before it is read as goals: "update its
//! title to Second draft", "with title hello and color red", "named demo", "rename it to b".
//! Each value phrase becomes one placeholder word (`wlv0`) that the goal of its clause takes;
//! the value keeps its case, and a quoted value (`"a, b. c"`) keeps its punctuation too. An
//! unquoted value ends at a space, and a `,`, `;` or `.` after it ends the clause instead.

/// A value the target gives for a field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Given {
    /// The field, as the target words it (`title`); `name` for "named x" and "rename it to x".
    pub(crate) field: String,
    /// The value, as written.
    pub(crate) value: String,
}

/// The placeholder word for value `index`.
pub(crate) fn placeholder(index: usize) -> String {
    format!("wlv{index}")
}

/// The index a placeholder word stands for.
pub(crate) fn placeholder_index(word: &str) -> Option<usize> {
    word.strip_prefix("wlv")?.parse().ok()
}

/// Words that change a resource: after them, `<field> to <value>` gives a value.
const CHANGING: [&str; 10] = [
    "update", "change", "set", "modify", "rename", "edit", "patch", "put", "replace", "move",
];

/// Words that, before `to`, are no field: the resource referred back to.
const NOT_FIELDS: [&str; 8] = ["it", "its", "them", "this", "that", "one", "all", "both"];

/// Words before a noun: "with a record" gives no value.
const ARTICLES: [&str; 8] = ["a", "an", "the", "its", "their", "this", "that", "some"];

/// Words that start a new clause, ending a `with` list.
const CLAUSE_WORDS: [&str; 4] = ["then", "and", "a", "an"];

/// One whitespace-separated piece of the target, or one quoted text.
#[derive(Debug, Clone)]
struct Token {
    /// As written (a quoted text without its quotes).
    text: String,
    /// Quoted: a value as it is.
    quoted: bool,
    /// Punctuation that followed it (`,`, `;`, `.`), kept for the clause splitting.
    tail: String,
}

impl Token {
    fn lower(&self) -> String {
        self.text.to_lowercase()
    }
}

fn tokens(target: &str) -> Vec<Token> {
    let mut out = Vec::new();
    let mut chars = target.char_indices().peekable();
    while let Some(&(start, character)) = chars.peek() {
        if character.is_whitespace() {
            chars.next();
            continue;
        }
        if matches!(character, '"' | '\'' | '`')
            && let Some(length) = target[start + 1..].find(character)
        {
            let text = target[start + 1..start + 1 + length].to_owned();
            let end = start + 1 + length + 1;
            while chars.peek().is_some_and(|&(at, _)| at < end) {
                chars.next();
            }
            out.push(Token {
                text,
                quoted: true,
                tail: String::new(),
            });
            continue;
        }
        let mut end = start;
        while let Some(&(at, next)) = chars.peek() {
            if next.is_whitespace() {
                break;
            }
            end = at + next.len_utf8();
            chars.next();
        }
        let raw = &target[start..end];
        let text = raw.trim_end_matches([',', ';', '.']);
        out.push(Token {
            text: text.to_owned(),
            quoted: false,
            tail: raw[text.len()..].to_owned(),
        });
    }
    out
}

/// True for a token that may be a field's name (`title`, `blog_text`, `displayName`).
fn field_like(token: &Token) -> bool {
    !token.quoted
        && !token.text.is_empty()
        && token
            .text
            .chars()
            .all(|character| character.is_alphanumeric() || matches!(character, '_' | '-' | '.'))
}

/// `target` with its value phrases replaced by placeholders, and the values in placeholder
/// order. `resources` are the spec's resources: "rename the post to b" renames, and `post`
/// is no field.
pub(crate) fn lift(target: &str, resources: &[String]) -> (String, Vec<Given>) {
    let tokens = tokens(target);
    let mut out: Vec<String> = Vec::new();
    let mut given: Vec<Given> = Vec::new();
    // Whether the clause so far has a changing word (for `<field> to <value>`).
    let mut changing: Option<String> = None;
    let is_resource = |word: &str| {
        let singular = wayline_registry::openapi::singular(word);
        resources.iter().any(|resource| {
            let resource = crate::names::normalize(resource);
            resource == crate::names::normalize(word)
                || resource == crate::names::normalize(&singular)
        })
    };
    let mut push_value = |out: &mut Vec<String>, field: String, value: &Token| {
        out.push(format!("{}{}", placeholder(given.len()), value.tail));
        given.push(Given {
            field,
            value: value.text.clone(),
        });
    };
    let mut index = 0;
    while index < tokens.len() {
        let token = &tokens[index];
        let lower = token.lower();
        if CHANGING.contains(&lower.as_str()) {
            changing = Some(lower.clone());
        }
        // `<field> to <value>` or `rename it to <value>`.
        if let Some(verb) = &changing
            && lower == "to"
            && !token.quoted
            && let Some(value) = tokens.get(index + 1)
            && index > 0
        {
            let before = &tokens[index - 1];
            let before_lower = before.lower();
            let refers_back =
                NOT_FIELDS.contains(&before_lower.as_str()) || is_resource(&before_lower);
            if refers_back && verb == "rename" {
                push_value(&mut out, "name".to_owned(), value);
                index += 2;
                continue;
            }
            // The field is the word just before, as it was put out (not a value lifted, not
            // an id: "move file 3 to trash" gives none).
            let put_out = format!("{}{}", before.text, before.tail);
            if !refers_back
                && field_like(before)
                && before.text.chars().any(char::is_alphabetic)
                && !CHANGING.contains(&before_lower.as_str())
                && before.tail.is_empty()
                && !before.quoted
                && out.last() == Some(&put_out)
            {
                out.pop();
                push_value(&mut out, before.text.clone(), value);
                index += 2;
                continue;
            }
        }
        // `named <value>`, `called <value>`.
        if matches!(lower.as_str(), "named" | "called")
            && !token.quoted
            && let Some(value) = tokens.get(index + 1)
        {
            push_value(&mut out, "name".to_owned(), value);
            index += 2;
            continue;
        }
        // `with <field> <value> [and <field> <value>]`, `with <field>=<value>`.
        if lower == "with" && !token.quoted {
            let mut at = index + 1;
            let mut took = 0;
            while let Some(field) = tokens.get(at) {
                if (!field_like(field) && !field.text.contains('='))
                    || ARTICLES.contains(&field.lower().as_str())
                {
                    break;
                }
                // `title=hello`
                if let Some((name, value)) = field.text.split_once('=')
                    && !name.is_empty()
                    && !value.is_empty()
                {
                    let value = Token {
                        text: value.to_owned(),
                        quoted: false,
                        tail: field.tail.clone(),
                    };
                    push_value(&mut out, name.to_owned(), &value);
                    at += 1;
                } else {
                    let mut value_at = at + 1;
                    if tokens.get(value_at).is_some_and(|next| {
                        matches!(next.lower().as_str(), "=" | ":" | "of" | "as")
                    }) {
                        value_at += 1;
                    }
                    let Some(value) = tokens.get(value_at) else {
                        break;
                    };
                    let name = field.text.trim_end_matches(':');
                    if name.is_empty() || is_resource(&field.lower()) {
                        break;
                    }
                    push_value(&mut out, name.to_owned(), value);
                    at = value_at + 1;
                }
                took += 1;
                // Another pair after `and` (not a new clause: `and create ...`).
                let last_tail = &tokens[at - 1].tail;
                let continues = last_tail.is_empty()
                    && tokens.get(at).is_some_and(|next| next.lower() == "and")
                    && tokens.get(at + 1).is_some_and(|next| {
                        let next = next.lower();
                        field_like(&tokens[at + 1])
                            && !CLAUSE_WORDS.contains(&next.as_str())
                            && !CHANGING.contains(&next.as_str())
                            && crate::verbs::verb_of(&next).is_none()
                            && tokens.get(at + 2).is_some()
                    });
                if !continues {
                    break;
                }
                at += 1;
            }
            if took > 0 {
                index = at;
                continue;
            }
        }
        if token.tail.is_empty() || lower == "then" {
            // The clause goes on.
        } else {
            changing = None;
        }
        if lower == "then" {
            changing = None;
        }
        let text = if token.quoted {
            format!("\"{}\"", token.text)
        } else {
            token.text.clone()
        };
        out.push(format!("{text}{}", token.tail));
        index += 1;
    }
    (out.join(" "), given)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lifted(target: &str) -> (String, Vec<(String, String)>) {
        let (text, given) = lift(target, &["post".to_owned(), "file".to_owned()]);
        (
            text,
            given
                .into_iter()
                .map(|given| (given.field, given.value))
                .collect(),
        )
    }

    fn pairs(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(field, value)| ((*field).to_owned(), (*value).to_owned()))
            .collect()
    }

    #[test]
    fn values_in_the_words_people_use() {
        assert_eq!(
            lifted("create a post, then update its title to Second-Draft, then read it"),
            (
                "create a post, then update its wlv0, then read it".to_owned(),
                pairs(&[("title", "Second-Draft")])
            )
        );
        assert_eq!(
            lifted("create a post with title hello and blogText 'first words, all of them'"),
            (
                "create a post wlv0 wlv1".to_owned(),
                pairs(&[("title", "hello"), ("blogText", "first words, all of them")])
            )
        );
        assert_eq!(
            lifted("create a post with title=hi and create a file named notes.txt"),
            (
                "create a post wlv0 and create a file wlv1".to_owned(),
                pairs(&[("title", "hi"), ("name", "notes.txt")])
            )
        );
        assert_eq!(
            lifted("create a file, then rename it to b.txt."),
            (
                "create a file, then rename it wlv0.".to_owned(),
                pairs(&[("name", "b.txt")])
            )
        );
        assert_eq!(
            lifted("rename the file to \"a b\""),
            ("rename the file wlv0".to_owned(), pairs(&[("name", "a b")]))
        );
        // "with a record" names a resource, and "move file 3 to trash" an id: no values.
        assert_eq!(lifted("create a post with a file").1, pairs(&[]));
        assert_eq!(lifted("move file 3 to trash").1, pairs(&[]));
        // `to` with no changing word is no value; a quoted command stays quoted.
        assert_eq!(
            lifted("add a post to the list, run `aws s3 ls`").1,
            pairs(&[])
        );
        assert_eq!(lifted("run `aws s3 ls`").0, "run \"aws s3 ls\"".to_owned());
        assert_eq!(placeholder_index("wlv12"), Some(12));
        assert_eq!(placeholder_index("wlvx"), None);
    }
}
