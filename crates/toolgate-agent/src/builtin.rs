//! The built-in tool groups: `time`, `files`, `web` and, when agents are
//! stored, `prompt_manager`.

mod files;
mod prompt_manager;
mod time;
mod web;

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::Value;
use toolgate_core::{
    Catalog, CatalogError, GroupId, NameError, Origin, SchemaError, ToolDefinition, ToolGroup,
    ToolName,
};

use toolgate_store::AgentStore;

use crate::executor::{CallContext, ToolExecutor, ToolFuture, ToolOutput};

pub use files::FilesAccess;
pub use prompt_manager::PROMPT_TYPES;
pub use web::{MAX_SEARCH_RESULTS, WebConfig};

/// Where the built-in tools act.
#[derive(Clone, Debug)]
pub struct BuiltinConfig {
    /// The directory the `files` tools may see; nothing outside it.
    pub files_root: PathBuf,
    /// Whether `files` may write.
    pub files_access: FilesAccess,
    /// How the `web` tools reach the web.
    pub web: WebConfig,
    /// Where agents are stored; `prompt_manager` is offered only with it.
    pub agents: Option<Arc<dyn AgentStore>>,
}

impl BuiltinConfig {
    /// The built-ins acting under `files_root`, read-only, with the default
    /// web settings and no agent store.
    pub fn new(files_root: impl Into<PathBuf>) -> Self {
        Self {
            files_root: files_root.into(),
            files_access: FilesAccess::ReadOnly,
            web: WebConfig::default(),
            agents: None,
        }
    }
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
    web: web::Web,
    prompts: Option<prompt_manager::PromptManager>,
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
            web: web::Web::new(config.web.clone()),
            prompts: config
                .agents
                .clone()
                .map(prompt_manager::PromptManager::new),
        })
    }

    /// The ids of the built-in groups, in registration order.
    pub fn group_ids() -> [&'static str; 4] {
        [time::GROUP, files::GROUP, web::GROUP, prompt_manager::GROUP]
    }

    /// The built-in groups offered as one polymorphic tool unless configured
    /// otherwise.
    pub fn polymorphic_group_ids() -> [&'static str; 2] {
        [web::GROUP, prompt_manager::GROUP]
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
        let mut groups = vec![
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
            (
                web::GROUP,
                web::DISPLAY_NAME,
                web::DESCRIPTION,
                self.web.definitions()?,
            ),
        ];
        if self.prompts.is_some() {
            groups.push((
                prompt_manager::GROUP,
                prompt_manager::DISPLAY_NAME,
                prompt_manager::DESCRIPTION,
                prompt_manager::PromptManager::definitions()?,
            ));
        }
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
    fn call<'a>(
        &'a self,
        tool: &'a str,
        arguments: Value,
        context: &'a CallContext,
    ) -> ToolFuture<'a> {
        Box::pin(async move {
            if let Some(output) = time::call(tool, &arguments) {
                return output;
            }
            if let Some(output) = self.web.call(tool, &arguments, context).await {
                return output;
            }
            if let Some(prompts) = &self.prompts
                && let Some(output) = prompts.call(tool, &arguments, context).await
            {
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
