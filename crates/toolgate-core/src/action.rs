//! [`Action`]: one operation of a polymorphic tool, and [`ActionPolicy`]:
//! which of them callers may use. Kept apart from [`crate::PolymorphicTool`]
//! because the catalog's aliases name actions too.

use serde_json::{Map, Value};

/// The parameter that names the action.
pub const ACTION_PARAMETER: &str = "action";

/// One operation of a polymorphic tool.
#[derive(Clone, Debug, PartialEq)]
pub struct Action {
    /// The value of `action` that selects it, e.g. `search`.
    pub name: String,
    /// What it does, for the model.
    pub description: String,
    /// Its arguments: an object schema (`properties`, `required`).
    pub parameters: Map<String, Value>,
}

impl Action {
    /// An action from its schema's parts.
    pub fn new(
        name: impl Into<String>,
        description: impl Into<String>,
        parameters: Map<String, Value>,
    ) -> Self {
        Self {
            name: name.into(),
            description: description.into(),
            parameters,
        }
    }

    pub(crate) fn properties(&self) -> impl Iterator<Item = (&String, &Value)> {
        self.parameters
            .get("properties")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
    }

    pub(crate) fn required(&self) -> impl Iterator<Item = &str> {
        self.parameters
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
    }

    /// The allowed values of `parameter` in this action's schema, when it is a
    /// string enum.
    pub(crate) fn enum_values(&self, parameter: &str) -> Option<Vec<&str>> {
        let values = self
            .parameters
            .get("properties")?
            .get(parameter)?
            .get("enum")?
            .as_array()?;
        values.iter().map(Value::as_str).collect()
    }
}

/// Which actions callers may use. Denied actions are left out of the schema,
/// and a call naming one is refused with the allowed ones listed.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct ActionPolicy {
    /// When set, only these actions are allowed.
    pub allow: Option<Vec<String>>,
    /// These actions are refused, whatever `allow` says.
    pub deny: Vec<String>,
}

impl ActionPolicy {
    /// Lists that refuse `actions` and allow every other.
    pub fn deny<S: Into<String>>(actions: impl IntoIterator<Item = S>) -> Self {
        Self {
            allow: None,
            deny: actions.into_iter().map(Into::into).collect(),
        }
    }

    /// Whether `action` may be called.
    pub fn allows(&self, action: &str) -> bool {
        let allowed = self
            .allow
            .as_ref()
            .is_none_or(|allow| allow.iter().any(|a| a == action));
        allowed && !self.deny.iter().any(|a| a == action)
    }

    /// Names the policy mentions that are not among `actions`: a typo in the
    /// configuration would otherwise allow or deny nothing, silently.
    pub fn unknown_actions<'a>(&'a self, actions: &'a [&str]) -> Vec<&'a str> {
        self.allow
            .iter()
            .flatten()
            .chain(&self.deny)
            .map(String::as_str)
            .filter(|name| !actions.contains(name))
            .collect()
    }
}
