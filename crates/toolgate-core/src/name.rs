//! Validated identifiers: [`ToolName`] and [`GroupId`].
//!
//! Names are checked once, when they enter the process (manifest, import, upstream
//! listing), so every other module can rely on them without re-checking.
//! Tool names follow MCP's rule (1-64 characters of `A-Za-z0-9_./-`) because they
//! are sent to providers and MCP clients verbatim. Group ids are looser: public
//! catalogs use ids such as `Public Health`, and a group id only ever travels
//! inside a JSON string argument.

use std::borrow::Borrow;
use std::fmt;

use serde::{Deserialize, Deserializer, Serialize};

/// Longest tool name MCP allows.
pub const MAX_TOOL_NAME_LEN: usize = 64;
/// Longest group id toolgate accepts.
pub const MAX_GROUP_ID_LEN: usize = 128;

/// A tool name or group id that breaks the naming rules.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NameError {
    /// Empty or longer than 64 characters.
    #[error("tool name `{name}` must be 1-64 characters long, not {length}")]
    ToolNameLength {
        /// The rejected name.
        name: String,
        /// Its length in characters.
        length: usize,
    },
    /// A character outside `A-Za-z0-9_./-`.
    #[error("tool name `{name}` has the character {character:?}, outside MCP's A-Za-z0-9_./-")]
    ToolNameCharacter {
        /// The rejected name.
        name: String,
        /// The first offending character.
        character: char,
    },
    /// Blank, padded with white space, or too long.
    #[error("group id `{id}` must be 1-128 characters with no leading or trailing white space")]
    GroupIdShape {
        /// The rejected id.
        id: String,
    },
    /// A control character.
    #[error("group id {id:?} has the control character {character:?}")]
    GroupIdCharacter {
        /// The rejected id.
        id: String,
        /// The first offending character.
        character: char,
    },
}

/// Name of a tool, e.g. `gmail_search`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(transparent)]
pub struct ToolName(String);

impl ToolName {
    /// Checks `name` against MCP's tool-name rule.
    ///
    /// ```
    /// use toolgate_core::ToolName;
    /// assert!(ToolName::new("gmail_search").is_ok());
    /// assert!(ToolName::new("has space").is_err());
    /// ```
    pub fn new(name: impl Into<String>) -> Result<Self, NameError> {
        let name = name.into();
        let length = name.chars().count();
        if length == 0 || length > MAX_TOOL_NAME_LEN {
            return Err(NameError::ToolNameLength { name, length });
        }
        if let Some(character) = name.chars().find(|c| !is_tool_name_char(*c)) {
            return Err(NameError::ToolNameCharacter { name, character });
        }
        Ok(Self(name))
    }

    /// For names fixed in this crate's source, known to be valid.
    pub(crate) fn new_unchecked(name: &str) -> Self {
        debug_assert!(Self::new(name).is_ok(), "invalid built-in tool name {name}");
        Self(name.to_owned())
    }

    /// The name as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Whether `c` may appear in a tool name: MCP allows `A-Za-z0-9_./-`.
pub fn is_tool_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '/' | '-')
}

/// Stable identifier of a tool group, e.g. `google_gmail`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(transparent)]
pub struct GroupId(String);

impl GroupId {
    /// Checks `id`: not blank, at most [`MAX_GROUP_ID_LEN`] characters, no control
    /// characters and no leading or trailing white space.
    ///
    /// ```
    /// use toolgate_core::GroupId;
    /// assert!(GroupId::new("google_gmail").is_ok());
    /// assert!(GroupId::new("Public Health").is_ok());
    /// assert!(GroupId::new(" ").is_err());
    /// ```
    pub fn new(id: impl Into<String>) -> Result<Self, NameError> {
        let id = id.into();
        let length = id.chars().count();
        if id.trim().is_empty() || length > MAX_GROUP_ID_LEN || id.trim() != id {
            return Err(NameError::GroupIdShape { id });
        }
        if let Some(character) = id.chars().find(|c| c.is_control()) {
            return Err(NameError::GroupIdCharacter { id, character });
        }
        Ok(Self(id))
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

macro_rules! string_newtype_impls {
    ($type:ty) => {
        impl fmt::Display for $type {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl AsRef<str> for $type {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl Borrow<str> for $type {
            fn borrow(&self) -> &str {
                &self.0
            }
        }

        impl TryFrom<&str> for $type {
            type Error = NameError;
            fn try_from(value: &str) -> Result<Self, Self::Error> {
                Self::new(value)
            }
        }

        impl TryFrom<String> for $type {
            type Error = NameError;
            fn try_from(value: String) -> Result<Self, Self::Error> {
                Self::new(value)
            }
        }

        impl<'de> Deserialize<'de> for $type {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let raw = String::deserialize(deserializer)?;
                Self::new(raw).map_err(serde::de::Error::custom)
            }
        }
    };
}

string_newtype_impls!(ToolName);
string_newtype_impls!(GroupId);

/// `my_tools` -> `My Tools`: the display name of a group that does not set one.
pub fn title_case(id: &str) -> String {
    id.split(['_', '-', ' '])
        .filter(|word| !word.is_empty())
        .map(|word| {
            let mut chars = word.chars();
            match chars.next() {
                Some(first) => first.to_uppercase().chain(chars).collect::<String>(),
                None => String::new(),
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
#[path = "name_tests.rs"]
mod tests;
