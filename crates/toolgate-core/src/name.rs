//! Validated identifiers: [`ToolName`] and [`GroupId`].
//!
//! Names are checked once, when they enter the process (manifest, import, upstream
//! listing), so every other module can rely on them without re-checking.
//! Tool names follow MCP's rule (1-64 characters of `A-Za-z0-9_./-`) because they
//! are sent to providers and MCP clients verbatim. Group ids are looser: public
//! catalogs use ids such as `Public Health`, and a group id only ever travels
//! inside a JSON string argument.
//!
//! A name from outside that breaks these rules is renamed, not dropped: the
//! gateway exposes an upstream tool, and an import loads a tool or group,
//! under the first free name of [`ToolName::candidates`] or
//! [`GroupId::candidates`]. The rule lives here, once, so a tool gets the
//! same name whichever way it enters.

use std::borrow::Borrow;
use std::fmt;

use serde::{Deserialize, Deserializer, Serialize};

/// The candidate closest to `requested`, if one is close enough to be a
/// likely typo or a partial name (`gmail` -> `google_gmail`, `file_path` ->
/// `path`): what a "did you mean" in an answer to the model names. On a tie
/// the earlier candidate wins.
pub fn closest_name<'a>(
    requested: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    const CLOSE_ENOUGH: f64 = 0.85;
    /// A shorter fragment matches too much to be a useful hint.
    const MIN_FRAGMENT: usize = 3;
    let wanted = requested.to_lowercase();
    let mut best: Option<(f64, &str)> = None;
    for candidate in candidates {
        let name = candidate.to_lowercase();
        let contains =
            wanted.len() >= MIN_FRAGMENT && (name.contains(&wanted) || wanted.contains(&name));
        let similarity = if contains {
            0.9
        } else {
            strsim::jaro_winkler(&wanted, &name)
        };
        if similarity >= CLOSE_ENOUGH && best.is_none_or(|(score, _)| similarity > score) {
            best = Some((similarity, candidate));
        }
    }
    best.map(|(_, candidate)| candidate)
}

/// Longest tool name MCP allows.
pub const MAX_TOOL_NAME_LEN: usize = 64;
/// Longest group id toolgate accepts.
pub const MAX_GROUP_ID_LEN: usize = 128;

/// Length of a hashed name's suffix: `_` and 8 hex digits.
const HASH_SUFFIX_LEN: usize = 9;
/// Hashed names tried before giving up (a collision of 32-bit hashes among
/// one catalog's names is already unlikely).
const HASH_ATTEMPTS: u32 = 16;

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

    /// The names a tool its source calls `original` may be exposed under,
    /// best first, valid ones only: `original` itself, `group__original`
    /// (with a group), [`sanitize_tool_name`] of `original`, then that name
    /// cut to 55 characters with `_` and 8 hex digits of a stable hash
    /// ([`fnv1a`] of the group id, a NUL and `original`; the attempts after
    /// the first add a NUL and the attempt number, 16 in all). The caller
    /// takes the first one it holds free, so a name is kept when valid and
    /// free, and a refused one gets the same name on every run and build.
    ///
    /// ```
    /// use toolgate_core::ToolName;
    /// let names: Vec<String> = ToolName::candidates(Some("pdf"), "PDF&URL")
    ///     .take(2)
    ///     .map(|name| name.to_string())
    ///     .collect();
    /// assert_eq!(names, ["PDF_URL", "PDF_URL_1b9c5ff4"]);
    /// ```
    pub fn candidates<'a>(
        group: Option<&'a str>,
        original: &'a str,
    ) -> impl Iterator<Item = ToolName> + 'a {
        let sanitized = sanitize_tool_name(original);
        let prefix: String = sanitized
            .chars()
            .take(MAX_TOOL_NAME_LEN - HASH_SUFFIX_LEN)
            .collect();
        let qualified = group.map(|group| format!("{group}__{original}"));
        let key = [group.unwrap_or_default(), "\0", original];
        [Some(original.to_owned()), qualified, Some(sanitized)]
            .into_iter()
            .flatten()
            .chain(hashed_names(prefix, key))
            .filter_map(|name| Self::new(name).ok())
    }

    /// The name as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// `name` with every character outside MCP's `A-Za-z0-9_./-` replaced by
/// `_`. Not cut: a long name is cut by the hashed names of
/// [`ToolName::candidates`].
///
/// ```
/// assert_eq!(toolgate_core::sanitize_tool_name("PDF&URL Tool"), "PDF_URL_Tool");
/// ```
pub fn sanitize_tool_name(name: &str) -> String {
    name.chars()
        .map(|c| if is_tool_name_char(c) { c } else { '_' })
        .collect()
}

/// 32-bit FNV-1a of the concatenated `parts`: the hash of hashed names,
/// small, and stable across runs, platforms and Rust versions (unlike
/// `DefaultHasher`).
pub fn fnv1a(parts: &[&str]) -> u32 {
    const OFFSET: u32 = 0x811c_9dc5;
    const PRIME: u32 = 0x0100_0193;
    parts
        .iter()
        .flat_map(|part| part.bytes())
        .fold(OFFSET, |hash, byte| {
            (hash ^ u32::from(byte)).wrapping_mul(PRIME)
        })
}

/// `{prefix}_{hash:08x}` for each of the [`HASH_ATTEMPTS`] attempts: the
/// hash of `key`, then of `key`, a NUL and the attempt number.
fn hashed_names<const N: usize>(prefix: String, key: [&str; N]) -> impl Iterator<Item = String> {
    (0..HASH_ATTEMPTS).map(move |attempt| {
        let salt = attempt.to_string();
        let hash = if attempt == 0 {
            fnv1a(&key)
        } else {
            let mut salted = key.to_vec();
            salted.extend(["\0", salt.as_str()]);
            fnv1a(&salted)
        };
        format!("{prefix}_{hash:08x}")
    })
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

    /// The ids a group its file calls `original` may be loaded under, best
    /// first, valid ones only: `original` itself, [`sanitize_group_id`] of
    /// `original`, then that id cut to 119 characters with `_` and 8 hex
    /// digits of a stable hash ([`fnv1a`] of `original`; the attempts after
    /// the first add a NUL and the attempt number, 16 in all). As for
    /// [`ToolName::candidates`], the caller takes the first free one.
    ///
    /// ```
    /// use toolgate_core::GroupId;
    /// let first = GroupId::candidates(" Public\tHealth").next().unwrap();
    /// assert_eq!(first.as_str(), "Public Health");
    /// ```
    pub fn candidates(original: &str) -> impl Iterator<Item = GroupId> + '_ {
        let sanitized = sanitize_group_id(original);
        let prefix: String = sanitized
            .chars()
            .take(MAX_GROUP_ID_LEN - HASH_SUFFIX_LEN)
            .collect();
        [original.to_owned(), sanitized]
            .into_iter()
            .chain(hashed_names(prefix.trim_end().to_owned(), [original]))
            .filter_map(|id| Self::new(id).ok())
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// `id` with every control character replaced by a space, then trimmed.
/// Not cut: a long id is cut by the hashed ids of [`GroupId::candidates`].
pub fn sanitize_group_id(id: &str) -> String {
    let spaced: String = id
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    spaced.trim().to_owned()
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
/// A word without a vowel (`a e i o u y`) is read as an abbreviation and
/// written in capitals: `fs` -> `FS`, `pdf_tools` -> `PDF Tools`, `http` ->
/// `HTTP`; any other word gets a capital first letter (`git` -> `Git`).
pub fn title_case(id: &str) -> String {
    id.split(['_', '-', ' '])
        .filter(|word| !word.is_empty())
        .map(|word| {
            if is_abbreviation(word) {
                return word.to_uppercase();
            }
            let mut chars = word.chars();
            match chars.next() {
                Some(first) => first.to_uppercase().chain(chars).collect::<String>(),
                None => String::new(),
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// A word of letters (and digits) none of which is a vowel: `fs`, `crm`,
/// `s3`. Capitals already in the word are left as they are.
fn is_abbreviation(word: &str) -> bool {
    word.chars().all(|c| c.is_ascii_alphanumeric())
        && word.chars().any(|c| c.is_ascii_alphabetic())
        && !word
            .chars()
            .any(|c| matches!(c.to_ascii_lowercase(), 'a' | 'e' | 'i' | 'o' | 'u' | 'y'))
}

#[cfg(test)]
#[path = "name_tests.rs"]
mod tests;
