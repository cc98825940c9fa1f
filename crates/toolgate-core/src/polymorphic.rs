//! [`PolymorphicTool`]: one tool with an `action` enum standing for several
//! related operations.
//!
//! A polymorphic tool is built from actions, each with its own object schema
//! (usually a former tool's input schema). The tool's input schema is the
//! `action` enum followed by the union of the actions' parameters, so it stays
//! stable as actions are added: a new action is a new enum value. Calls are
//! resolved back to one action with [`PolymorphicTool::resolve`], which
//! answers a mistake with a structured [`ActionError`] naming what is allowed,
//! so a model corrects itself on the next call.
//!
//! Every result a polymorphic tool gives carries a `type` field; see
//! [`typed_result`].

use std::fmt;

use serde_json::{Map, Value, json};

use crate::action::{ACTION_PARAMETER, Action, ActionPolicy};
use crate::contract::ActionFault;
use crate::error::SchemaError;
use crate::name::ToolName;
use crate::tool::{ToolDefinition, one_line};

/// Why a polymorphic tool could not be built.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PolymorphicError {
    /// It has no action a caller may use.
    #[error("polymorphic tool `{tool}` has no allowed action")]
    NoActions {
        /// The tool.
        tool: String,
    },
    /// Two actions share a name.
    #[error("polymorphic tool `{tool}` has two actions named `{action}`")]
    DuplicateAction {
        /// The tool.
        tool: String,
        /// The repeated action.
        action: String,
    },
    /// An action declares a parameter named `action`.
    #[error("action `{action}` of `{tool}` has its own `action` parameter")]
    ActionParameter {
        /// The tool.
        tool: String,
        /// The action.
        action: String,
    },
    /// The generated schema is not a valid object schema.
    #[error("polymorphic tool `{tool}`: {source}")]
    Schema {
        /// The tool.
        tool: String,
        /// What is wrong with it.
        source: SchemaError,
    },
}

/// A tool with an `action` enum. Build it with [`PolymorphicTool::new`] or
/// [`PolymorphicTool::consolidate`].
///
/// ```
/// use serde_json::json;
/// use toolgate_core::{Action, ActionPolicy, PolymorphicTool, ToolName};
///
/// let params = |schema: serde_json::Value| schema.as_object().unwrap().clone();
/// let tool = PolymorphicTool::new(
///     ToolName::new("web")?,
///     "Search the web or fetch a page.",
///     vec![
///         Action::new("search", "Search the web", params(json!({
///             "properties": {"query": {"type": "string"}}, "required": ["query"]}))),
///         Action::new("fetch", "Fetch a page", params(json!({
///             "properties": {"url": {"type": "string"}}, "required": ["url"]}))),
///     ],
///     &ActionPolicy::default(),
/// )?;
/// let call = tool.resolve(&json!({"action": "search", "query": "rust"})).unwrap();
/// assert_eq!(call.action.name, "search");
/// assert_eq!(call.arguments, json!({"query": "rust"}));
///
/// let error = tool.resolve(&json!({"action": "serch", "query": "rust"})).unwrap_err();
/// assert_eq!(error.to_json()["allowed_actions"], json!(["search", "fetch"]));
/// assert_eq!(error.to_json()["did_you_mean"], "search");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct PolymorphicTool {
    name: ToolName,
    description: String,
    actions: Vec<Action>,
    denied: Vec<String>,
    enums: Vec<(String, Vec<String>)>,
    definition: ToolDefinition,
}

impl PolymorphicTool {
    /// A tool offering the actions `policy` allows, in the order given.
    pub fn new(
        name: ToolName,
        description: impl Into<String>,
        actions: Vec<Action>,
        policy: &ActionPolicy,
    ) -> Result<Self, PolymorphicError> {
        let tool = name.to_string();
        for (index, action) in actions.iter().enumerate() {
            if actions[..index].iter().any(|a| a.name == action.name) {
                return Err(PolymorphicError::DuplicateAction {
                    tool,
                    action: action.name.clone(),
                });
            }
            if action.properties().any(|(p, _)| p == ACTION_PARAMETER) {
                return Err(PolymorphicError::ActionParameter {
                    tool,
                    action: action.name.clone(),
                });
            }
        }
        let (actions, denied): (Vec<Action>, Vec<Action>) =
            actions.into_iter().partition(|a| policy.allows(&a.name));
        if actions.is_empty() {
            return Err(PolymorphicError::NoActions { tool });
        }
        let description = description.into();
        let enums = shared_enums(&actions);
        let schema = input_schema(&actions);
        let definition = ToolDefinition::new(
            name.clone(),
            tool_description(&description, &actions),
            schema,
        )
        .map_err(|source| PolymorphicError::Schema { tool, source })?;
        Ok(Self {
            name,
            description,
            actions,
            denied: denied.into_iter().map(|a| a.name).collect(),
            enums,
            definition,
        })
    }

    /// One tool standing for `members` (a group's tools): each member becomes
    /// an action named after it, less the `prefix` the members share
    /// (`gmail_search` in group `gmail` becomes `search`), with the member's
    /// input schema as its parameters. Returns the tool and, for each of its
    /// actions in order, the member it stands for.
    pub fn consolidate<'d>(
        name: ToolName,
        description: impl Into<String>,
        members: &[&'d ToolDefinition],
        prefix: &str,
        policy: &ActionPolicy,
    ) -> Result<(Self, Vec<&'d ToolDefinition>), PolymorphicError> {
        let names = action_names(members, prefix);
        let actions = members
            .iter()
            .zip(&names)
            .map(|(member, action)| {
                Action::new(
                    action.clone(),
                    member.description.clone(),
                    member.input_schema.clone(),
                )
            })
            .collect();
        let tool = Self::new(name, description, actions, policy)?;
        let targets = tool
            .actions
            .iter()
            .map(|action| {
                let index = names
                    .iter()
                    .position(|name| *name == action.name)
                    .unwrap_or_else(|| unreachable!("every action comes from a member"));
                members[index]
            })
            .collect();
        Ok((tool, targets))
    }

    /// The tool's name.
    pub fn name(&self) -> &ToolName {
        &self.name
    }

    /// The description it was given (the definition adds the action list).
    pub fn description(&self) -> &str {
        &self.description
    }

    /// The allowed actions, in order.
    pub fn actions(&self) -> &[Action] {
        &self.actions
    }

    /// The action names, in order.
    pub fn action_names(&self) -> Vec<&str> {
        self.actions.iter().map(|a| a.name.as_str()).collect()
    }

    /// The definition sent to models and clients.
    pub fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    /// The action a call names and its arguments without `action`; or the
    /// structured error the caller reads: an unknown or denied action, an
    /// enum parameter with a value outside its enum, or a parameter the
    /// action requires but the call lacks.
    pub fn resolve(&self, arguments: &Value) -> Result<ActionCall<'_>, Box<ActionError>> {
        let Some(object) = arguments.as_object() else {
            return Err(self.error(ActionFault::NotAnObject));
        };
        let action_name = match object.get(ACTION_PARAMETER) {
            Some(Value::String(name)) => name.as_str(),
            Some(other) => {
                return Err(self.error(ActionFault::ActionNotString(other)));
            }
            None => return Err(self.error(ActionFault::MissingAction)),
        };
        let Some((index, action)) = self
            .actions
            .iter()
            .enumerate()
            .find(|(_, a)| a.name == action_name)
        else {
            let fault = if self.denied.iter().any(|d| d == action_name) {
                ActionFault::ActionDenied(action_name)
            } else {
                ActionFault::InvalidAction(action_name)
            };
            let mut error = self.error(fault);
            error.did_you_mean = close_match(action_name, self.action_names());
            return Err(error);
        };
        for (parameter, allowed) in &self.enums {
            if let Some(value) = object.get(parameter) {
                let known = value
                    .as_str()
                    .is_some_and(|v| allowed.iter().any(|a| a == v));
                if !known {
                    let shown = value
                        .as_str()
                        .map_or_else(|| value.to_string(), str::to_owned);
                    let mut error = self.error(ActionFault::InvalidValue {
                        parameter,
                        value: shown,
                    });
                    error.parameter = Some(parameter.clone());
                    error.did_you_mean = value
                        .as_str()
                        .and_then(|v| close_match(v, allowed.iter().map(String::as_str)));
                    return Err(error);
                }
            }
        }
        for required in action.required() {
            let missing = object.get(required).is_none_or(|value| {
                value.is_null() || value.as_str().is_some_and(|text| text.trim().is_empty())
            });
            if missing {
                let mut error = self.error(ActionFault::MissingRequired {
                    parameter: required,
                    action: &action.name,
                });
                error.action = Some(action.name.clone());
                error.parameter = Some(required.to_owned());
                return Err(error);
            }
        }
        let mut rest = object.clone();
        rest.remove(ACTION_PARAMETER);
        Ok(ActionCall {
            index,
            action,
            arguments: Value::Object(rest),
        })
    }

    fn error(&self, fault: ActionFault<'_>) -> Box<ActionError> {
        Box::new(ActionError {
            message: fault.to_string(),
            allowed_actions: self.action_names().into_iter().map(str::to_owned).collect(),
            allowed_values: self.enums.clone(),
            did_you_mean: None,
            action: None,
            parameter: None,
        })
    }
}

/// A call resolved to one action.
#[derive(Clone, Debug, PartialEq)]
pub struct ActionCall<'t> {
    /// The action's position among [`PolymorphicTool::actions`].
    pub index: usize,
    /// The action.
    pub action: &'t Action,
    /// The call's arguments without `action`.
    pub arguments: Value,
}

/// A call a polymorphic tool refused, with what it allows.
/// [`to_json`](Self::to_json) is what the caller reads:
/// `{"type":"error","error":"Invalid action 'x'","allowed_actions":[...]}`,
/// plus `allowed_<parameter>s` for each other enum parameter and
/// `did_you_mean` when a close match exists.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ActionError {
    /// What was wrong.
    pub message: String,
    /// The actions the tool allows.
    pub allowed_actions: Vec<String>,
    /// Each other enum parameter and its allowed values.
    pub allowed_values: Vec<(String, Vec<String>)>,
    /// The allowed value closest to the wrong one.
    pub did_you_mean: Option<String>,
    /// The action, when the error is about one action's parameters.
    pub action: Option<String>,
    /// The parameter at fault, when there is one.
    pub parameter: Option<String>,
}

impl ActionError {
    /// The error as the JSON result the caller reads.
    pub fn to_json(&self) -> Value {
        let mut object = Map::new();
        object.insert("type".into(), "error".into());
        object.insert("error".into(), self.message.clone().into());
        if let Some(close) = &self.did_you_mean {
            object.insert("did_you_mean".into(), close.clone().into());
        }
        if let Some(action) = &self.action {
            object.insert("action".into(), action.clone().into());
        }
        if let Some(parameter) = &self.parameter {
            object.insert("parameter".into(), parameter.clone().into());
        }
        object.insert("allowed_actions".into(), json!(self.allowed_actions));
        for (parameter, values) in &self.allowed_values {
            object.insert(format!("allowed_{parameter}s"), json!(values));
        }
        Value::Object(object)
    }
}

impl fmt::Display for ActionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_json().to_string())
    }
}

impl std::error::Error for ActionError {}

/// A polymorphic tool's result with its `type` field: a result that already
/// is a JSON object with a string `type` is kept as it is; any other becomes
/// `{"type":"result","action":...,"result":...}` (or `"type":"error"` with
/// `"error"` for a failure), the text parsed as JSON when it is JSON.
///
/// ```
/// use serde_json::json;
/// use toolgate_core::typed_result;
///
/// assert_eq!(
///     typed_result("get_me", r#"{"login":"octo"}"#, false),
///     json!({"type": "result", "action": "get_me", "result": {"login": "octo"}}),
/// );
/// assert_eq!(
///     typed_result("get_me", "Bad credentials", true),
///     json!({"type": "error", "action": "get_me", "error": "Bad credentials"}),
/// );
/// ```
pub fn typed_result(action: &str, text: &str, is_error: bool) -> Value {
    let parsed: Option<Value> = serde_json::from_str(text).ok();
    if let Some(Value::Object(object)) = &parsed
        && object.get("type").is_some_and(Value::is_string)
    {
        return Value::Object(object.clone());
    }
    if is_error {
        json!({"type": "error", "action": action, "error": text})
    } else {
        let result = parsed.unwrap_or_else(|| Value::String(text.to_owned()));
        json!({"type": "result", "action": action, "result": result})
    }
}

/// The action names [`PolymorphicTool::consolidate`] gives `members`, before
/// any policy: their names less `prefix` (and the `_`, `__`, `.` or `-`
/// after it) when every stripped name stays non-empty and distinct, else
/// their full names.
pub fn action_names(members: &[&ToolDefinition], prefix: &str) -> Vec<String> {
    let strip = |name: &str| -> Option<String> {
        let rest = name.strip_prefix(prefix)?;
        let rest = rest
            .strip_prefix("__")
            .or_else(|| rest.strip_prefix(['_', '.', '-']))?;
        (!rest.is_empty()).then(|| rest.to_owned())
    };
    let stripped: Option<Vec<String>> = members.iter().map(|m| strip(m.name.as_str())).collect();
    match stripped {
        Some(names) if !prefix.is_empty() && all_distinct(&names) => names,
        _ => members.iter().map(|m| m.name.to_string()).collect(),
    }
}

fn all_distinct(names: &[String]) -> bool {
    names
        .iter()
        .enumerate()
        .all(|(index, name)| !names[..index].contains(name))
}

/// Enum parameters whose values the errors list: string enums declared with
/// the same values by every action that has them.
fn shared_enums(actions: &[Action]) -> Vec<(String, Vec<String>)> {
    let mut enums: Vec<(String, Vec<String>)> = Vec::new();
    let mut conflicting: Vec<String> = Vec::new();
    for action in actions {
        for (parameter, _) in action.properties() {
            let Some(values) = action.enum_values(parameter) else {
                continue;
            };
            let values: Vec<String> = values.into_iter().map(str::to_owned).collect();
            match enums.iter().find(|(p, _)| p == parameter) {
                Some((_, known)) if *known != values => conflicting.push(parameter.clone()),
                Some(_) => {}
                None => enums.push((parameter.clone(), values)),
            }
        }
    }
    enums.retain(|(parameter, _)| !conflicting.contains(parameter));
    enums
}

/// `action` first, then every action's parameters in order of first use. A
/// parameter some actions lack says which actions take it; the top level
/// requires `action` and what every action requires.
fn input_schema(actions: &[Action]) -> Value {
    let names: Vec<&str> = actions.iter().map(|a| a.name.as_str()).collect();
    let mut properties = Map::new();
    properties.insert(
        ACTION_PARAMETER.to_owned(),
        json!({
            "type": "string",
            "enum": names,
            "description": "The operation to run; see the tool description.",
        }),
    );
    let mut users: Vec<(String, Vec<&str>)> = Vec::new();
    for action in actions {
        for (parameter, schema) in action.properties() {
            match users.iter_mut().find(|(p, _)| p == parameter) {
                Some((_, by)) => by.push(&action.name),
                None => {
                    users.push((parameter.clone(), vec![&action.name]));
                    properties.insert(parameter.clone(), schema.clone());
                }
            }
        }
    }
    for (parameter, by) in &users {
        if by.len() == actions.len() {
            continue;
        }
        let Some(Value::Object(schema)) = properties.get_mut(parameter) else {
            continue;
        };
        let scope = format!("For {}.", by.join(", "));
        let description = match schema.get("description").and_then(Value::as_str) {
            Some(text) => format!("{scope} {}", one_line(text)),
            None => scope,
        };
        schema.insert("description".to_owned(), description.into());
    }
    let mut required = vec![ACTION_PARAMETER.to_owned()];
    if let Some((first, rest)) = actions.split_first() {
        for parameter in first.required() {
            if rest.iter().all(|a| a.required().any(|r| r == parameter)) {
                required.push(parameter.to_owned());
            }
        }
    }
    json!({"type": "object", "properties": properties, "required": required})
}

/// The description with one line per action.
fn tool_description(description: &str, actions: &[Action]) -> String {
    let mut text = one_line(description);
    text.push_str("\nActions:");
    for action in actions {
        let required: Vec<&str> = action.required().collect();
        text.push_str(&format!("\n- {}", action.name));
        if !required.is_empty() {
            text.push_str(&format!(" ({})", required.join(", ")));
        }
        let summary = one_line(&action.description);
        if !summary.is_empty() {
            text.push_str(": ");
            text.push_str(&summary);
        }
    }
    text
}

/// The candidate closest to `wanted`, if close enough to be a likely typo.
fn close_match<'a>(wanted: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<String> {
    const CLOSE_ENOUGH: f64 = 0.8;
    // A name over four times as long as every candidate (and 256 bytes) is
    // no typo of one. Comparing it would cost its length times each
    // candidate's, and the caller chooses its length.
    const LONGEST_TYPO_RATIO: usize = 4;
    let candidates: Vec<&str> = candidates.into_iter().collect();
    let longest = candidates.iter().map(|c| c.len()).max().unwrap_or(0);
    if wanted.len() > LONGEST_TYPO_RATIO * longest.max(64) {
        return None;
    }
    let wanted = wanted.to_lowercase();
    candidates
        .into_iter()
        .map(|candidate| {
            let lower = candidate.to_lowercase();
            let similarity = if lower.len() >= 3 && wanted.len() >= 3 && lower.contains(&wanted) {
                0.9
            } else {
                strsim::jaro_winkler(&wanted, &lower)
            };
            (similarity, candidate)
        })
        .filter(|(similarity, _)| *similarity >= CLOSE_ENOUGH)
        .fold(
            None,
            |best: Option<(f64, &str)>, (similarity, candidate)| match best {
                Some((score, _)) if score >= similarity => best,
                _ => Some((similarity, candidate)),
            },
        )
        .map(|(_, candidate)| candidate.to_owned())
}

#[cfg(test)]
#[path = "polymorphic_tests.rs"]
mod tests;
