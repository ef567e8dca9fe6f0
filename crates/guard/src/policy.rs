//! The policy: diagnostic states with the tools each allows, the evidence each needs before the
//! next, tool classes, evidence rules, panic thresholds and break-glass limits — all data, read
//! from YAML and checked before use.

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use wayline_core::ToolDefinition;
use wayline_core::document::{self, Format};

use crate::Error;
use crate::glob::{Glob, Name};

/// What a tool can do, from harmless to dangerous.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum ToolClass {
    /// Reads only.
    Read,
    /// Changes something that can be changed back.
    Write,
    /// Deletes, restarts or otherwise changes something irreversibly.
    Destructive,
    /// Acts with raised permissions (exec into a pod, port-forward, sudo).
    Privileged,
}

/// What a tool says about itself (an MCP server's tool annotations). Hints classify a tool
/// that no pattern of the policy and no definition classifies; they never override those.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Hints {
    /// `readOnlyHint`: it changes nothing.
    pub read_only: Option<bool>,
    /// `destructiveHint`: its changes may not be undone (MCP's default, when it is not
    /// read-only, is yes).
    pub destructive: Option<bool>,
}

impl Hints {
    /// Hints from the two annotations.
    pub fn new(read_only: Option<bool>, destructive: Option<bool>) -> Self {
        Hints {
            read_only,
            destructive,
        }
    }

    /// The class they give, if they say anything: read-only is a read; otherwise destructive
    /// unless the tool says it is not.
    pub fn class(self) -> Option<ToolClass> {
        match (self.read_only, self.destructive) {
            (Some(true), _) => Some(ToolClass::Read),
            (None, None) => None,
            (_, Some(false)) => Some(ToolClass::Write),
            (_, _) => Some(ToolClass::Destructive),
        }
    }
}

impl ToolClass {
    /// Every class, harmless first.
    pub const ALL: [ToolClass; 4] = [
        ToolClass::Read,
        ToolClass::Write,
        ToolClass::Destructive,
        ToolClass::Privileged,
    ];

    /// The lower-case name.
    pub fn name(self) -> &'static str {
        match self {
            ToolClass::Read => "read",
            ToolClass::Write => "write",
            ToolClass::Destructive => "destructive",
            ToolClass::Privileged => "privileged",
        }
    }

    /// True for classes that change things.
    pub fn changes_things(self) -> bool {
        self != ToolClass::Read
    }

    /// True for the classes that change the system's resources (write and destructive): what
    /// a burst of calls makes rapid fire. Privileged tools (`exec`, `debug`) have their own
    /// signal, escalating permissions.
    pub fn changes_resources(self) -> bool {
        matches!(self, ToolClass::Write | ToolClass::Destructive)
    }
}

/// A policy as written in YAML.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct PolicyFile {
    /// A name for messages.
    #[serde(default = "default_name")]
    pub name: String,
    /// The state a session starts in (default: the first state).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub initial_state: Option<String>,
    /// The states, in diagnostic order (a move to an earlier state is a move back).
    pub states: IndexMap<String, StateConfig>,
    /// Tool classes by name pattern; a tool no pattern names is classed by its metadata.
    #[serde(default)]
    pub classes: IndexMap<ToolClass, Vec<String>>,
    /// Which tool results count as which evidence: `pattern: evidence_type`.
    #[serde(default)]
    pub evidence: IndexMap<String, String>,
    /// Panic-detection thresholds.
    #[serde(default)]
    pub panic: PanicConfig,
    /// Emergency override limits.
    #[serde(default)]
    pub break_glass: BreakGlassConfig,
}

fn default_name() -> String {
    "policy".into()
}

/// One diagnostic state.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct StateConfig {
    /// What happens in it.
    #[serde(default)]
    pub description: String,
    /// Tools allowed (patterns).
    #[serde(default)]
    pub allowed_tools: Vec<String>,
    /// Tools blocked (patterns); a block wins over an allow.
    #[serde(default)]
    pub blocked_tools: Vec<String>,
    /// Classes allowed for tools no pattern of this state names (default: read).
    #[serde(default = "read_only")]
    pub allowed_classes: Vec<ToolClass>,
    /// Evidence to gather here before moving on.
    #[serde(default)]
    pub required_evidence: Vec<EvidenceRequirement>,
    /// Where a session may go from here.
    #[serde(default)]
    pub next_states: Vec<String>,
    /// Seconds to spend here at least before moving on.
    #[serde(default)]
    pub min_time_in_state: u64,
    /// What to tell the operator here.
    #[serde(default)]
    pub guidance_message: String,
}

fn read_only() -> Vec<ToolClass> {
    vec![ToolClass::Read]
}

/// Evidence of a type, at least `min_count` items.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct EvidenceRequirement {
    /// The evidence type (`symptoms`).
    #[serde(rename = "type")]
    pub kind: String,
    /// How many items.
    #[serde(default = "one")]
    pub min_count: usize,
}

fn one() -> usize {
    1
}

/// Panic-detection thresholds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields, default)]
#[non_exhaustive]
pub struct PanicConfig {
    /// State-changing calls (write or destructive) within `rapid_fire_window_seconds` that make
    /// rapid fire (this call included).
    pub rapid_fire_count: usize,
    /// The rapid-fire window.
    pub rapid_fire_window_seconds: u64,
    /// Evidence items a write needs, in any state, not to be bypassing diagnostics.
    pub min_evidence_for_write: usize,
    /// States in which any write bypasses diagnostics.
    pub early_states: Vec<String>,
    /// Distinct domains (namespaces, resources) among the last `domain_window` calls, with no
    /// evidence gathered in between, that make jumping between domains.
    pub domain_switches: usize,
    /// Calls looked at for domain jumping.
    pub domain_window: usize,
    /// Input names that say which domain a call is about.
    pub domain_inputs: Vec<String>,
    /// The state a blocking intervention sends the session back to (never forward).
    pub forced_state: String,
}

impl Default for PanicConfig {
    fn default() -> Self {
        PanicConfig {
            rapid_fire_count: 2,
            rapid_fire_window_seconds: 30,
            min_evidence_for_write: 3,
            early_states: vec!["gathering".into(), "analyzing".into()],
            domain_switches: 3,
            domain_window: 5,
            domain_inputs: vec!["namespace".into(), "resource".into(), "domain".into()],
            forced_state: "analyzing".into(),
        }
    }
}

/// Emergency override limits.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields, default)]
#[non_exhaustive]
pub struct BreakGlassConfig {
    /// The longest grant, in minutes.
    pub max_minutes: u64,
    /// Hours after a grant by which it must be reviewed.
    pub review_within_hours: u64,
}

impl Default for BreakGlassConfig {
    fn default() -> Self {
        BreakGlassConfig {
            max_minutes: 60,
            review_within_hours: 48,
        }
    }
}

/// A checked policy, its patterns compiled.
#[derive(Debug, Clone)]
pub struct Policy {
    file: PolicyFile,
    initial: usize,
    states: Vec<CompiledState>,
    classes: Vec<(ToolClass, Vec<Glob>)>,
    evidence: Vec<(Glob, String)>,
}

#[derive(Debug, Clone)]
pub(crate) struct CompiledState {
    pub(crate) name: String,
    pub(crate) allowed: Vec<Glob>,
    pub(crate) blocked: Vec<Glob>,
    pub(crate) next: Vec<usize>,
}

/// The table of MCP-ocs's ADR-005, with patterns that classify MCP-ocs's real tools.
pub const DEFAULT_POLICY: &str = include_str!("default_policy.yaml");

impl Policy {
    /// The policy of MCP-ocs's ADR-005.
    pub fn default_policy() -> Policy {
        Policy::from_yaml(DEFAULT_POLICY, "default").expect("the default policy is valid")
    }

    /// Reads and checks a policy.
    pub fn from_yaml(text: &str, origin: &str) -> Result<Policy, Error> {
        let file: PolicyFile = document::parse(text, Format::Yaml, origin)?;
        Policy::new(file, origin)
    }

    /// Reads a policy file.
    pub fn load(path: &std::path::Path) -> Result<Policy, Error> {
        let text = wayline_durable::read::text(path, document::Limits::configured().max_bytes)
            .map_err(|source| Error::io("read", path, source))?;
        Policy::from_yaml(&text, &path.display().to_string())
    }

    /// Checks `file`: every state named exists, every state can be reached, no pattern both
    /// allows and blocks, every pattern compiles.
    pub fn new(file: PolicyFile, origin: &str) -> Result<Policy, Error> {
        let mut problems = Vec::new();
        let mut compile = |pattern: &str, at: &str| match Glob::new(pattern) {
            Ok(glob) => Some(glob),
            Err(error) => {
                problems.push(format!("{at}: {error}"));
                None
            }
        };
        if file.states.is_empty() {
            return Err(Error::Policy {
                origin: origin.to_owned(),
                problems: vec!["it has no states; list at least one under `states`".into()],
            });
        }
        let index_of = |name: &str| file.states.get_index_of(name);
        let mut states = Vec::new();
        for (name, config) in &file.states {
            let at = format!("states.{name}");
            let allowed = config
                .allowed_tools
                .iter()
                .filter_map(|p| compile(p, &format!("{at}.allowed_tools")))
                .collect();
            let blocked = config
                .blocked_tools
                .iter()
                .filter_map(|p| compile(p, &format!("{at}.blocked_tools")))
                .collect();
            states.push(CompiledState {
                name: name.clone(),
                allowed,
                blocked,
                next: Vec::new(),
            });
        }
        let mut classes = Vec::new();
        for (class, patterns) in &file.classes {
            let globs = patterns
                .iter()
                .filter_map(|p| compile(p, &format!("classes.{}", class.name())))
                .collect();
            classes.push((*class, globs));
        }
        // Most dangerous first: a tool named by two classes takes the worse.
        classes.sort_by_key(|(class, _)| std::cmp::Reverse(*class));
        let evidence = file
            .evidence
            .iter()
            .filter_map(|(pattern, kind)| {
                compile(pattern, "evidence").map(|glob| (glob, kind.clone()))
            })
            .collect();
        for (position, (name, config)) in file.states.iter().enumerate() {
            for next in &config.next_states {
                match index_of(next) {
                    Some(index) => states[position].next.push(index),
                    None => problems.push(format!(
                        "states.{name}.next_states: unknown state `{next}`{}",
                        document::nearest(next, file.states.keys().map(String::as_str))
                            .map(|near| format!(" (did you mean `{near}`?)"))
                            .unwrap_or_default()
                    )),
                }
            }
            for pattern in &config.allowed_tools {
                if config.blocked_tools.contains(pattern) {
                    problems.push(format!(
                        "states.{name}: `{pattern}` is both allowed and blocked; keep it in one list"
                    ));
                }
            }
        }
        let initial = match &file.initial_state {
            Some(name) => index_of(name).unwrap_or_else(|| {
                problems.push(format!("initial_state: unknown state `{name}`"));
                0
            }),
            None => 0,
        };
        for forced in std::iter::once(&file.panic.forced_state).chain(&file.panic.early_states) {
            if index_of(forced).is_none() {
                problems.push(format!("panic: unknown state `{forced}`"));
            }
        }
        // Reachability from the initial state.
        let mut reached = vec![false; states.len()];
        let mut queue = vec![initial];
        while let Some(at) = queue.pop() {
            if std::mem::replace(&mut reached[at], true) {
                continue;
            }
            queue.extend(states[at].next.iter().copied());
        }
        for (index, state) in states.iter().enumerate() {
            if !reached[index] {
                problems.push(format!(
                    "states.{}: unreachable from `{}`; list it in some state's next_states",
                    state.name, states[initial].name
                ));
            }
        }
        if file.break_glass.max_minutes == 0 {
            problems.push("break_glass.max_minutes: must be at least 1".into());
        }
        if !problems.is_empty() {
            return Err(Error::Policy {
                origin: origin.to_owned(),
                problems,
            });
        }
        Ok(Policy {
            file,
            initial,
            states,
            classes,
            evidence,
        })
    }

    /// The policy as written.
    pub fn file(&self) -> &PolicyFile {
        &self.file
    }

    /// The policy as YAML.
    pub fn to_yaml(&self) -> String {
        serde_norway::to_string(&self.file).unwrap_or_default()
    }

    /// The initial state.
    pub fn initial_state(&self) -> &str {
        &self.states[self.initial].name
    }

    /// The configuration of a state.
    pub fn state(&self, name: &str) -> Option<&StateConfig> {
        self.file.states.get(name)
    }

    pub(crate) fn compiled(&self, name: &str) -> Option<(usize, &CompiledState)> {
        let index = self.file.states.get_index_of(name)?;
        Some((index, &self.states[index]))
    }

    /// The position of a state in diagnostic order.
    pub fn position(&self, name: &str) -> Option<usize> {
        self.file.states.get_index_of(name)
    }

    /// The class of a tool: by the policy's patterns (the most dangerous class that names it),
    /// else by its metadata (`destructive: true`, HTTP method), else `write` for a tool nothing
    /// is known about — an unknown tool is not assumed harmless.
    pub fn classify(&self, name: &str, tool: Option<&ToolDefinition>) -> ToolClass {
        self.classify_name(&Name::new(name), tool, Hints::default())
    }

    /// The class of a tool known by name and by what it says about itself (MCP annotations):
    /// the policy's patterns first, the hints only for a tool no pattern names.
    pub fn classify_hinted(&self, name: &str, hints: Hints) -> ToolClass {
        self.classify_name(&Name::new(name), None, hints)
    }

    pub(crate) fn classify_name(
        &self,
        name: &Name,
        tool: Option<&ToolDefinition>,
        hints: Hints,
    ) -> ToolClass {
        for (class, globs) in &self.classes {
            if globs.iter().any(|glob| name.matched_by(glob)) {
                return *class;
            }
        }
        let Some(tool) = tool else {
            return hints.class().unwrap_or(ToolClass::Write);
        };
        if tool.destructive == Some(true) {
            return ToolClass::Destructive;
        }
        // A command's method field is a default, not a fact: a `cli` tool nothing names is a
        // write. (`idempotent` says a call can be repeated, not that it changes nothing, so it
        // does not make a tool read.)
        if tool.kind == wayline_core::tool::ToolKind::Cli {
            return ToolClass::Write;
        }
        match tool.method.to_ascii_uppercase().as_str() {
            "GET" | "HEAD" | "OPTIONS" => ToolClass::Read,
            "DELETE" => ToolClass::Destructive,
            _ => ToolClass::Write,
        }
    }

    /// The evidence type a successful call of `tool` yields, if any.
    pub fn evidence_of(&self, tool: &str) -> Option<&str> {
        self.evidence
            .iter()
            .find(|(glob, _)| glob.matches(tool))
            .map(|(_, kind)| kind.as_str())
    }

    /// Panic thresholds.
    pub fn panic(&self) -> &PanicConfig {
        &self.file.panic
    }

    /// The domain a call is about, from its arguments as `argument` gives them by name: the
    /// first of the policy's `domain_inputs` (`namespace`, `resource`, `domain`) that is a
    /// string. One reading for every caller (the engine's steps, the MCP gateway's calls), so
    /// jumping between domains is seen wherever calls come from.
    ///
    /// ```
    /// use serde_json::json;
    /// let policy = wayline_guard::Policy::default_policy();
    /// let arguments = json!({"namespace": "payments", "pod": "api-1"});
    /// assert_eq!(policy.domain_of(|name| arguments.get(name)), Some("payments"));
    /// ```
    pub fn domain_of<'a>(
        &self,
        argument: impl Fn(&str) -> Option<&'a serde_json::Value>,
    ) -> Option<&'a str> {
        self.file
            .panic
            .domain_inputs
            .iter()
            .find_map(|name| argument(name).and_then(serde_json::Value::as_str))
    }

    /// Break-glass limits.
    pub fn break_glass(&self) -> &BreakGlassConfig {
        &self.file.break_glass
    }

    /// State names in order.
    pub fn state_names(&self) -> impl Iterator<Item = &str> {
        self.file.states.keys().map(String::as_str)
    }
}
