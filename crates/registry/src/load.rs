//! Reading one tool file: `${VAR}` expansion, parsing, and the rules serde cannot express.

use std::path::Path;

use wayline_core::document::{self, DocumentError, Expansion, Format};
use wayline_core::{ToolDefinition, ToolKind, Workflow};

use crate::Error;

/// Where `${VAR}` values come from.
pub type EnvLookup<'a> = &'a dyn Fn(&str) -> Option<String>;

/// The process environment as an [`EnvLookup`].
pub fn process_env(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// Reads and parses one tool file (`.yaml`, `.yml` or `.json`).
///
/// ```no_run
/// let tool = wayline_registry::load_tool_file("tools/github_repo.yaml".as_ref()).unwrap();
/// println!("{}", tool.id);
/// ```
pub fn load_tool_file(path: &Path) -> Result<ToolDefinition, Error> {
    load_tool_file_with(path, &process_env)
}

/// [`load_tool_file`] with `${VAR}` values from `env`.
pub fn load_tool_file_with(path: &Path, env: EnvLookup<'_>) -> Result<ToolDefinition, Error> {
    let format = Format::from_path(path).ok_or_else(|| {
        Error::Document(Box::new(DocumentError::new(
            path.display().to_string(),
            "not a tool file: tool files end in .yaml, .yml or .json",
        )))
    })?;
    let text = read_text(path)?;
    parse_tool(&text, format, &path.display().to_string(), env)
}

/// Reads a workflow file (`.yaml`, `.yml` or `.json`; anything else is read as YAML, which
/// also accepts JSON). Workflows do not expand `${VAR}`: their values are data, and run inputs
/// are the way to parameterise them.
pub fn load_workflow_file(path: &Path) -> Result<Workflow, Error> {
    let text = read_text(path)?;
    let format = Format::from_path(path).unwrap_or(Format::Yaml);
    Ok(Workflow::parse(&text, format, &path.display().to_string())?)
}

/// Parses tool text; `origin` names it in errors.
pub fn parse_tool(
    text: &str,
    format: Format,
    origin: &str,
    env: EnvLookup<'_>,
) -> Result<ToolDefinition, Error> {
    let expansion = expand(text, origin, env)?;
    let tool: ToolDefinition = expansion
        .parse(text, format, origin)
        .map_err(|error| Box::new(explain_list(*error, text, format)))?;
    check_rules(&tool, text, origin)?;
    Ok(tool)
}

/// Reads a whole file as text (a regular file within the document size limit); a failure names
/// the path.
pub(crate) fn read_text(path: &Path) -> Result<String, Error> {
    wayline_durable::read::text(path, document::Limits::configured().max_bytes).map_err(|source| {
        Error::Io {
            path: path.to_owned(),
            source,
        }
    })
}

/// Expands `${VAR}` in `text`; an unset variable is an error located in `origin`.
pub(crate) fn expand(text: &str, origin: &str, env: EnvLookup<'_>) -> Result<Expansion, Error> {
    document::expand_vars(text, env)
        .map_err(|unset| Error::Document(Box::new(unset.into_document_error(text, origin))))
}

/// A file holding a list of tools gets a message that says what to do about it.
fn explain_list(error: DocumentError, text: &str, format: Format) -> DocumentError {
    // Through `document::parse`, so the document's limits hold here too.
    let items = document::parse::<serde_json::Value>(text, format, &error.origin)
        .ok()
        .and_then(|value| value.as_array().map(Vec::len));
    match items {
        Some(count) => DocumentError::new(
            error.origin.clone(),
            format!(
                "a tool file holds one tool as a mapping, but this file holds a list of {count} \
                 item(s); put each tool in a file of its own"
            ),
        )
        .at(text, 1, 1),
        None => error,
    }
}

fn check_rules(tool: &ToolDefinition, text: &str, origin: &str) -> Result<(), Error> {
    // A placeholder of the path that no declared path parameter fills would be sent as it is
    // written (`%7BclusterId%7D`).
    let unfilled = tool.request.as_ref().and_then(|request| {
        let declared: Vec<&str> = request.path_params.iter().map(String::as_str).collect();
        tool.path_placeholders()
            .into_iter()
            .find(|name| !declared.contains(name))
            .map(|name| {
                let hint = document::nearest(name, declared.iter().copied())
                    .map(|near| format!(" (`{near}` is declared: names must match exactly)"))
                    .unwrap_or_default();
                format!(
                    "the path's `{{{name}}}` has no value: list `{name}` in `request.path_params`{hint}"
                )
            })
    });
    let problem = if tool.id.trim().is_empty() {
        Some((
            "id",
            "`id` is empty; give the tool an id that steps can name",
        ))
    } else if tool.kind == ToolKind::Http && tool.base_url.trim().is_empty() {
        Some((
            "base_url",
            "missing required field `base_url` (every http tool needs one, e.g. https://api.example.com)",
        ))
    } else if tool.kind == ToolKind::Code
        && tool
            .code
            .as_ref()
            .is_none_or(|code| code.source.trim().is_empty())
    {
        Some((
            "kind",
            "a `code` tool needs its code: add `code: {source: ...}` (Python; the inputs are the dict `inputs`, the result is what is left in `result`)",
        ))
    } else if tool.kind != ToolKind::Code && tool.code.is_some() {
        Some((
            "code",
            "`code` belongs to code tools; add `kind: code` or remove `code`",
        ))
    } else {
        unfilled.as_deref().map(|message| ("path", message))
    };
    match problem {
        None => Ok(()),
        Some((field, message)) => {
            let mut error = DocumentError::new(origin, message);
            error.field = Some(field.to_owned());
            let (line, column) = line_of_key(text, field).unwrap_or((1, 1));
            Err(Error::Document(Box::new(error.at(text, line, column))))
        }
    }
}

/// The line and column of a top-level `key:` in YAML text, or of `"key"` in JSON text.
fn line_of_key(text: &str, key: &str) -> Option<(usize, usize)> {
    let yaml = format!("{key}:");
    let json = format!("\"{key}\"");
    text.lines().enumerate().find_map(|(index, line)| {
        if line.starts_with(&yaml) {
            Some((index + 1, 1))
        } else {
            line.find(&json).map(|column| (index + 1, column + 1))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_env(_: &str) -> Option<String> {
        None
    }

    #[test]
    fn a_path_placeholder_no_declared_parameter_fills_is_refused() {
        let text = "id: cluster\nname: Cluster\nbase_url: https://api.example\npath: /clusters/{clusterId}\nrequest:\n  path_params: [clusterID]\n";
        let error = parse_tool(text, Format::Yaml, "c.yaml", &no_env).unwrap_err();
        let message = error.to_string();
        assert!(
            message.contains("c.yaml:4:1: the path's `{clusterId}` has no value")
                && message.contains("`clusterID` is declared"),
            "{message}"
        );
        let fixed = text.replace("[clusterID]", "[clusterId]");
        assert!(parse_tool(&fixed, Format::Yaml, "c.yaml", &no_env).is_ok());
        // The flat form fills every placeholder from the inputs of the same name.
        let flat = "id: c\nname: C\nbase_url: https://api.example\npath: /clusters/{clusterId}\n";
        assert!(parse_tool(flat, Format::Yaml, "c.yaml", &no_env).is_ok());
    }

    #[test]
    fn http_tools_need_a_base_url() {
        let err = parse_tool("id: a\nname: A\n", Format::Yaml, "a.yaml", &no_env).unwrap_err();
        assert!(
            err.to_string()
                .contains("missing required field `base_url`"),
            "{err}"
        );
        let cli = "id: a\nname: A\nkind: cli\n";
        assert!(parse_tool(cli, Format::Yaml, "a.yaml", &no_env).is_ok());
    }

    #[test]
    fn code_tools_need_their_code_and_only_they_have_it() {
        let bare = parse_tool(
            "id: a\nname: A\nkind: code\n",
            Format::Yaml,
            "a.yaml",
            &no_env,
        )
        .unwrap_err();
        assert!(bare.to_string().contains("needs its code"), "{bare}");
        let stray = parse_tool(
            "id: a\nname: A\nbase_url: x\ncode: {source: 'result = 1'}\n",
            Format::Yaml,
            "a.yaml",
            &no_env,
        )
        .unwrap_err();
        assert!(stray.to_string().contains("add `kind: code`"), "{stray}");
        let good = "id: a\nname: A\nkind: code\ncode:\n  source: |\n    result = inputs['x'] * 2\n";
        let tool = parse_tool(good, Format::Yaml, "a.yaml", &no_env).unwrap();
        let code = tool.code.unwrap();
        assert_eq!(
            (code.language.as_str(), code.source.as_str()),
            ("python", "result = inputs['x'] * 2\n")
        );
    }

    #[test]
    fn empty_id_points_at_its_line() {
        let err = parse_tool(
            "name: A\nid: ''\nbase_url: x\n",
            Format::Yaml,
            "a.yaml",
            &no_env,
        )
        .unwrap_err();
        let Error::Document(doc) = err else {
            panic!("{err}")
        };
        assert_eq!(doc.line, Some(2));
    }

    #[test]
    fn expanded_secrets_never_reach_the_snippet() {
        let env = |name: &str| (name == "TOKEN").then(|| "s3cret".to_owned());
        let err = parse_tool(
            "id: a\nname: A\nbase_url: x\nretry: ${TOKEN}\n",
            Format::Yaml,
            "a.yaml",
            &env,
        )
        .unwrap_err();
        let text = err.to_string();
        assert!(!text.contains("s3cret"), "{text}");
        assert!(text.contains("${TOKEN}"), "{text}");
    }
}
