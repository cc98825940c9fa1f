//! Token counting with tiktoken (`o200k_base` by default, `cl100k_base`
//! selectable), and [`CatalogCost`]: what a catalog costs on turn 1 with and
//! without toolgate.
//!
//! A tool is counted as the provider receives it: its OpenAI function-tool JSON
//! (see [`ToolDefinition::to_openai_function`]). Providers render tools into
//! their prompt in their own way, so these are the tokens of the payload, a
//! close and reproducible stand-in for what the provider bills.

use std::fmt;
use std::str::FromStr;
use std::sync::{Arc, OnceLock};

use serde::Serialize;
use tiktoken_rs::CoreBPE;

use crate::catalog::Catalog;
use crate::error::TokenizerError;
use crate::name::GroupId;
use crate::origin::Origin;
use crate::prompt::tool_groups_section;
use crate::tool::ToolDefinition;

/// A tiktoken encoding.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Encoding {
    /// GPT-4o and later.
    #[default]
    O200kBase,
    /// GPT-4 and GPT-3.5.
    Cl100kBase,
}

impl Encoding {
    /// The encoding's tiktoken name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::O200kBase => "o200k_base",
            Self::Cl100kBase => "cl100k_base",
        }
    }
}

impl fmt::Display for Encoding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Encoding {
    type Err = String;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        match name {
            "o200k_base" => Ok(Self::O200kBase),
            "cl100k_base" => Ok(Self::Cl100kBase),
            other => Err(format!(
                "unknown encoding `{other}`; use o200k_base or cl100k_base"
            )),
        }
    }
}

/// Counts tokens with one encoding. Building one parses the encoding's ranks
/// (tens of milliseconds): build it once and share it ([`Self::shared`]);
/// a clone shares the ranks.
#[derive(Clone)]
pub struct TokenCounter {
    encoding: Encoding,
    bpe: Arc<CoreBPE>,
}

impl fmt::Debug for TokenCounter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TokenCounter")
            .field("encoding", &self.encoding)
            .finish_non_exhaustive()
    }
}

impl TokenCounter {
    /// A counter for `encoding`.
    pub fn new(encoding: Encoding) -> Result<Self, TokenizerError> {
        let bpe = match encoding {
            Encoding::O200kBase => tiktoken_rs::o200k_base(),
            Encoding::Cl100kBase => tiktoken_rs::cl100k_base(),
        }
        .map_err(|error| TokenizerError {
            encoding: encoding.as_str(),
            message: error.to_string(),
        })?;
        Ok(Self {
            encoding,
            bpe: Arc::new(bpe),
        })
    }

    /// The process's `o200k_base` counter, built on first use and shared
    /// (by the router's token budget, say); `None` when the encoding
    /// cannot be loaded.
    pub fn shared() -> Option<&'static TokenCounter> {
        static SHARED: OnceLock<Option<TokenCounter>> = OnceLock::new();
        SHARED
            .get_or_init(|| TokenCounter::new(Encoding::O200kBase).ok())
            .as_ref()
    }

    /// The encoding in use.
    pub fn encoding(&self) -> Encoding {
        self.encoding
    }

    /// Tokens in `text`, special tokens read as plain text.
    pub fn count(&self, text: &str) -> usize {
        self.bpe.encode_ordinary(text).len()
    }

    /// Tokens of one tool as a provider receives it.
    pub fn tool(&self, tool: &ToolDefinition) -> usize {
        self.count(&tool.to_openai_function().to_string())
    }

    /// Tokens of several tools (an active set, a group).
    pub fn tools<'t>(&self, tools: impl IntoIterator<Item = &'t ToolDefinition>) -> usize {
        tools.into_iter().map(|tool| self.tool(tool)).sum()
    }
}

/// Token cost of one group's schemas.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct GroupCost {
    /// The group.
    pub group: GroupId,
    /// Its enabled tools.
    pub tools: usize,
    /// Tokens of their schemas.
    pub tokens: usize,
}

/// What a catalog costs on turn 1, with every schema against toolgate's core
/// tools plus the group listing.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CatalogCost {
    /// The encoding counted with.
    pub encoding: Encoding,
    /// Enabled tools, meta-tools excluded (what a plain agent would send).
    pub tools: usize,
    /// Tokens of all those schemas: the cost without toolgate.
    pub all_tools_tokens: usize,
    /// Per group, in catalog order.
    pub groups: Vec<GroupCost>,
    /// Core tools sent on turn 1, meta-tools included.
    pub core_tools: usize,
    /// Tokens of the core tools' schemas.
    pub core_tools_tokens: usize,
    /// Tokens of the "Available Tool Groups" prompt section.
    pub listing_tokens: usize,
    /// `core_tools_tokens + listing_tokens`: the cost with toolgate.
    pub turn1_tokens: usize,
    /// `1 - turn1_tokens / all_tools_tokens`, clamped to 0..=1 (0 for an empty catalog).
    pub reduction: f64,
}

impl CatalogCost {
    /// Measures `catalog`.
    pub fn measure(catalog: &Catalog, counter: &TokenCounter) -> Self {
        Self::from_tool_tokens(catalog, counter, |tool| counter.tool(tool))
    }

    /// Measures `catalog` with each tool's schema tokens given by `tokens`
    /// (counted once already, say); `counter` counts the listing.
    pub fn from_tool_tokens(
        catalog: &Catalog,
        counter: &TokenCounter,
        tokens: impl Fn(&ToolDefinition) -> usize,
    ) -> Self {
        let enabled: Vec<&ToolDefinition> = catalog
            .tools()
            .filter(|tool| *tool.origin != Origin::MetaTool)
            .map(|tool| tool.definition)
            .collect();
        let all_tools_tokens = enabled.iter().map(|tool| tokens(tool)).sum();
        let groups = catalog
            .groups()
            .map(|group| {
                let members: Vec<&ToolDefinition> =
                    catalog.group_tools(group.id.as_str()).collect();
                GroupCost {
                    group: group.id.clone(),
                    tools: members.len(),
                    tokens: members.iter().map(|tool| tokens(tool)).sum(),
                }
            })
            .collect();
        let core_tools = catalog.core_tools().count();
        let core_tools_tokens = catalog.core_tools().map(&tokens).sum();
        let listing_tokens =
            tool_groups_section(catalog).map_or(0, |section| counter.count(&section));
        let turn1_tokens = core_tools_tokens + listing_tokens;
        let reduction = if all_tools_tokens == 0 {
            0.0
        } else {
            (1.0 - turn1_tokens as f64 / all_tools_tokens as f64).clamp(0.0, 1.0)
        };
        Self {
            encoding: counter.encoding(),
            tools: enabled.len(),
            all_tools_tokens,
            groups,
            core_tools,
            core_tools_tokens,
            listing_tokens,
            turn1_tokens,
            reduction,
        }
    }
}

#[cfg(test)]
#[path = "tokens_tests.rs"]
mod tests;
