//! A step of one of the SUT's command-line tools: the command line split into words as a POSIX
//! shell would (quotes group, backslashes escape; an unclosed quote is an error, not a word),
//! its first word the tool, made into a `kind: cli` tool that the engine runs without a shell.

use indexmap::IndexMap;
use serde_json::{Value, json};
use wayline_core::ToolDefinition;
use wayline_registry::openapi::Operation;

use crate::intent::operation_resource;

/// What a command-line step runs: the tool, and the request as the session records it (the
/// TiDB Cloud explorer's CLI shape, `{name, args}`).
#[derive(Debug)]
pub(crate) struct CommandStep {
    pub(crate) tool: ToolDefinition,
    pub(crate) request: Value,
}

/// Why a command-line step cannot run, with the request to record for it.
#[derive(Debug)]
pub(crate) struct Refused {
    pub(crate) error: String,
    pub(crate) request: Value,
}

/// The step for `operation` (a command-line tool) with the command line in `inputs.command`.
pub(crate) fn command_step(
    operation: &Operation,
    inputs: &IndexMap<String, Value>,
) -> Result<CommandStep, Refused> {
    let name = operation_resource(operation);
    let line = inputs
        .get("command")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let refused = |error: String| Refused {
        error,
        request: json!({"name": name, "args": []}),
    };
    let Some(words) = shlex::split(line) else {
        return Err(refused(format!(
            "`{line}` is not a command line (an unclosed quote, or a backslash at the end); \
             close the quote"
        )));
    };
    let Some((program, args)) = words.split_first() else {
        return Err(refused(format!("no command to run for `{name}`")));
    };
    if *program != name {
        return Err(refused(format!(
            "`{line}` does not run `{name}`; a step of this tool runs only it"
        )));
    }
    let tool = json!({
        "id": operation.id, "name": name, "kind": "cli",
        "command": {"program": program, "args": args},
    });
    let tool = serde_json::from_value::<ToolDefinition>(tool)
        .map_err(|error| refused(error.to_string()))?;
    Ok(CommandStep {
        tool,
        request: json!({"name": program, "args": args}),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool_operation() -> Operation {
        Operation::new("cli_tiup", crate::intent::CLI_METHOD, "/tiup")
    }

    fn line(text: &str) -> IndexMap<String, Value> {
        IndexMap::from([("command".to_owned(), Value::from(text))])
    }

    #[test]
    fn quotes_group_words_and_the_tool_comes_first() {
        let step = command_step(&tool_operation(), &line("tiup playground --tag 'my db'")).unwrap();
        assert_eq!(
            step.request["args"],
            json!(["playground", "--tag", "my db"])
        );
        let refused = command_step(&tool_operation(), &line("ls /")).unwrap_err();
        assert!(
            refused.error.contains("does not run `tiup`"),
            "{}",
            refused.error
        );
        assert_eq!(refused.request, json!({"name": "tiup", "args": []}));
    }

    #[test]
    fn a_backslash_escapes_as_in_a_shell() {
        let step = command_step(&tool_operation(), &line(r"tiup a\ b '\sql' \x")).unwrap();
        assert_eq!(step.request["args"], json!(["a b", "\\sql", "x"]));
    }

    #[test]
    fn an_unclosed_quote_is_refused() {
        let refused = command_step(&tool_operation(), &line("tiup 'playground")).unwrap_err();
        assert!(
            refused.error.contains("unclosed quote"),
            "{}",
            refused.error
        );
        let refused = command_step(&tool_operation(), &line("")).unwrap_err();
        assert!(refused.error.contains("no command"), "{}", refused.error);
    }
}
