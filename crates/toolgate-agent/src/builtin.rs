//! The built-in tool groups: `time` and `files`.

mod files;
mod time;

use std::path::PathBuf;

use serde_json::Value;
use toolgate_core::{
    Catalog, CatalogError, GroupId, NameError, Origin, SchemaError, ToolDefinition, ToolGroup,
    ToolName,
};

use crate::executor::{ToolExecutor, ToolFuture, ToolOutput};

pub use files::FilesAccess;

/// Where the built-in tools act.
#[derive(Clone, Debug)]
pub struct BuiltinConfig {
    /// The directory the `files` tools may see; nothing outside it.
    pub files_root: PathBuf,
    /// Whether `files` may write.
    pub files_access: FilesAccess,
}

/// Why the built-in tools could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum BuiltinError {
    /// The files root is missing or unreadable.
    #[error("files root `{path}`: {source}")]
    FilesRoot {
        /// The configured root.
        path: PathBuf,
        /// Why it failed.
        source: std::io::Error,
    },
    /// A built-in definition is invalid (a bug in toolgate).
    #[error("built-in tool definition: {0}")]
    Definition(#[from] SchemaError),
    /// A built-in name is invalid (a bug in toolgate).
    #[error("built-in tool name: {0}")]
    Name(#[from] NameError),
    /// The catalog refused a built-in tool or group.
    #[error(transparent)]
    Catalog(#[from] Box<CatalogError>),
}

/// The built-in groups and their executor.
#[derive(Debug)]
pub struct BuiltinTools {
    files: files::Files,
}

impl BuiltinTools {
    /// The built-in tools acting under `config.files_root`.
    pub fn new(config: &BuiltinConfig) -> Result<Self, BuiltinError> {
        let root = config
            .files_root
            .canonicalize()
            .map_err(|source| BuiltinError::FilesRoot {
                path: config.files_root.clone(),
                source,
            })?;
        Ok(Self {
            files: files::Files::new(root, config.files_access),
        })
    }

    /// The ids of the built-in groups, in registration order.
    pub fn group_ids() -> [&'static str; 2] {
        [time::GROUP, files::GROUP]
    }

    /// Registers the built-in groups whose ids `skip` does not name (a
    /// configured source of the same name takes precedence), and returns the
    /// ids registered.
    pub fn register(
        &self,
        catalog: &mut Catalog,
        skip: impl Fn(&str) -> bool,
    ) -> Result<Vec<GroupId>, BuiltinError> {
        let mut registered = Vec::new();
        let groups = [
            (
                time::GROUP,
                time::DISPLAY_NAME,
                time::DESCRIPTION,
                time::definitions()?,
            ),
            (
                files::GROUP,
                files::DISPLAY_NAME,
                files::DESCRIPTION,
                self.files.definitions()?,
            ),
        ];
        for (id, display_name, description, tools) in groups {
            if skip(id) {
                continue;
            }
            let id = GroupId::new(id)?;
            let group = ToolGroup::new(id.clone(), display_name, description);
            let tools = tools
                .into_iter()
                .map(|tool| (tool, Origin::Builtin))
                .collect();
            catalog
                .register_group_with_tools(group, Origin::Builtin, tools)
                .map_err(Box::new)?;
            registered.push(id);
        }
        Ok(registered)
    }
}

impl ToolExecutor for BuiltinTools {
    fn call<'a>(&'a self, tool: &'a str, arguments: Value) -> ToolFuture<'a> {
        Box::pin(async move {
            if let Some(output) = time::call(tool, &arguments) {
                return output;
            }
            if let Some(output) = self.files.call(tool, arguments).await {
                return output;
            }
            ToolOutput::error(format!("'{tool}' is not a built-in tool."))
        })
    }
}

fn definition(
    name: &str,
    description: &str,
    schema: Value,
) -> Result<ToolDefinition, BuiltinError> {
    Ok(ToolDefinition::new(
        ToolName::new(name)?,
        description,
        schema,
    )?)
}

/// A string argument, or the error the model reads.
fn string_argument<'a>(arguments: &'a Value, name: &str) -> Result<&'a str, ToolOutput> {
    optional_string(arguments, name)?
        .ok_or_else(|| ToolOutput::error(format!("Required parameter '{name}' is missing.")))
}

fn optional_string<'a>(arguments: &'a Value, name: &str) -> Result<Option<&'a str>, ToolOutput> {
    match arguments.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => Ok(Some(text)),
        Some(_) => Err(ToolOutput::error(format!(
            "Parameter '{name}' must be a string."
        ))),
    }
}

fn optional_count(arguments: &Value, name: &str) -> Result<Option<usize>, ToolOutput> {
    match arguments.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(value) => value
            .as_u64()
            .and_then(|count| usize::try_from(count).ok())
            .map(Some)
            .ok_or_else(|| {
                ToolOutput::error(format!(
                    "Parameter '{name}' must be a non-negative integer."
                ))
            }),
    }
}

#[cfg(test)]
#[path = "builtin_tests.rs"]
mod tests;
