//! The built-in tool groups: `time`, `files`, `web` and, when agents are
//! stored, `prompt_manager`.

mod arguments;
mod files;
mod html;
mod prompt_manager;
mod time;
mod web;

use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Value;
use toolgate_core::{GroupId, ToolDefinition, ToolGroup};
use toolgate_store::AgentStore;

use crate::context::CallContext;
use crate::error::{ToolCallError, ToolboxError};
use crate::output::ToolOutput;
use crate::source::{SourceCall, SourceOffer, ToolSource};

pub(crate) use files::Files;
pub use files::FilesAccess;
pub use html::{
    CHECK_EVERY_STEPS, ConversionCancelled, MAX_STEPS_PER_BYTE, PageText, html_to_text,
    html_to_text_until,
};
pub use prompt_manager::PROMPT_TYPES;
pub(crate) use web::{MAX_BODY_BYTES, checked_address, client, request_error};
pub use web::{MAX_SEARCH_RESULTS, WebConfig};

/// Where the built-in `files` tools act.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FilesRoot {
    /// Under this directory, and nothing outside it.
    Dir(PathBuf),
    /// Nowhere: the `files` group is not offered and scripts reach no file.
    /// The text says why, and how to offer it, for the operator (the start
    /// report and the gateway's status page show it).
    Withheld(String),
}

/// Where the built-in tools act.
#[derive(Clone, Debug)]
pub struct BuiltinConfig {
    /// Where the `files` tools may act; nothing outside it.
    pub files_root: FilesRoot,
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
            files_root: FilesRoot::Dir(files_root.into()),
            files_access: FilesAccess::ReadOnly,
            web: WebConfig::default(),
            agents: None,
        }
    }

    /// The built-in groups left out, each with why: `files` when its root
    /// is withheld.
    pub fn withheld(&self) -> Vec<(GroupId, String)> {
        match &self.files_root {
            FilesRoot::Dir(_) => Vec::new(),
            FilesRoot::Withheld(why) => GroupId::new(files::GROUP)
                .map(|group| vec![(group, why.clone())])
                .unwrap_or_default(),
        }
    }

    /// The `files` tools over the root, when there is one.
    pub(crate) fn files(&self) -> Result<Option<Files>, ToolboxError> {
        let FilesRoot::Dir(dir) = &self.files_root else {
            return Ok(None);
        };
        let root = dir
            .canonicalize()
            .map_err(|source| ToolboxError::FilesRoot {
                path: dir.clone(),
                source,
            })?;
        Ok(Some(Files::new(root, self.files_access)?))
    }
}

/// The built-in groups: a [`ToolSource`] whose tools are known from the
/// start.
#[derive(Debug)]
pub struct BuiltinTools {
    /// `None` when the files root is withheld.
    files: Option<files::Files>,
    web: web::Web,
    prompts: Option<prompt_manager::PromptManager>,
    /// The groups offered, each with its tools.
    offer: Vec<(ToolGroup, Vec<ToolDefinition>)>,
}

impl BuiltinTools {
    /// The built-in tools acting under `config.files_root` (without the
    /// `files` group when it is withheld).
    pub fn new(config: &BuiltinConfig) -> Result<Self, ToolboxError> {
        let files = config.files()?;
        let web = web::Web::new(config.web.clone());
        let prompts = config
            .agents
            .clone()
            .map(prompt_manager::PromptManager::new);
        let mut groups = vec![(
            time::GROUP,
            time::DISPLAY_NAME,
            time::DESCRIPTION,
            time::definitions()?,
        )];
        if let Some(files) = &files {
            groups.push((
                files::GROUP,
                files::DISPLAY_NAME,
                files::DESCRIPTION,
                files.definitions()?,
            ));
        }
        groups.push((
            web::GROUP,
            web::DISPLAY_NAME,
            web::DESCRIPTION,
            web.definitions()?,
        ));
        if prompts.is_some() {
            groups.push((
                prompt_manager::GROUP,
                prompt_manager::DISPLAY_NAME,
                prompt_manager::DESCRIPTION,
                prompt_manager::PromptManager::definitions()?,
            ));
        }
        let offer = groups
            .into_iter()
            .map(|(id, display_name, description, tools)| {
                Ok((
                    ToolGroup::new(GroupId::new(id)?, display_name, description),
                    tools,
                ))
            })
            .collect::<Result<_, ToolboxError>>()?;
        Ok(Self {
            files,
            web,
            prompts,
            offer,
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

    /// Runs a built-in tool; `None` when `tool` is not one.
    async fn run(&self, tool: &str, arguments: Value, context: &CallContext) -> Option<ToolOutput> {
        if let Some(output) = time::call(tool, &arguments) {
            return Some(output);
        }
        if let Some(output) = self.web.call(tool, &arguments, context).await {
            return Some(output);
        }
        if let Some(prompts) = &self.prompts
            && let Some(output) = prompts.call(tool, &arguments, context).await
        {
            return Some(output);
        }
        match &self.files {
            Some(files) => files.call(tool, arguments, &context.cancel).await,
            None => None,
        }
    }
}

#[async_trait]
impl ToolSource for BuiltinTools {
    fn offer(&self) -> SourceOffer {
        SourceOffer {
            core_tools: Vec::new(),
            groups: self.offer.clone(),
        }
    }

    /// Runs the tool until it answers or `context.cancel` is cancelled.
    async fn call(
        &self,
        call: SourceCall,
        context: &CallContext,
    ) -> Result<ToolOutput, ToolCallError> {
        let output = tokio::select! {
            output = self.run(&call.tool, call.arguments, context) => output,
            () = context.cancel.cancelled() => {
                return Err(ToolCallError::respond(format!("Tool '{}' was cancelled.", call.tool)));
            }
        };
        output
            .ok_or_else(|| ToolCallError::Fatal(format!("'{}' is not a built-in tool", call.tool)))
    }
}

#[cfg(test)]
#[path = "builtin_tests.rs"]
mod tests;
