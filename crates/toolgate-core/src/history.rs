//! The message model: what a conversation stores, one [`Message`] per
//! event (the user's turn, the model's text, each tool call and result, the
//! host's events, compaction summaries). Rebuilding a conversation's tools
//! from it is `restore.rs`'.

use serde::{Deserialize, Serialize};

/// What a stored message is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MessageKind {
    /// The user's turn.
    User,
    /// The model's text.
    Assistant,
    /// A tool call the model made (`tool_call_id`, `tool_name`, `tool_input`, `tool_status`).
    ToolCall,
    /// The result of a tool call (`tool_call_id`, `tool_name`, `tool_status`).
    ToolResult,
    /// A message from the host; with `tool_name` set, a group event it recorded.
    System,
    /// A compaction summary; `tool_input` holds the loaded-groups snapshot.
    Compaction,
}

impl MessageKind {
    /// The stored spelling: `user`, `assistant`, `tool_call`, ...
    pub fn as_str(self) -> &'static str {
        match self {
            Self::User => "user",
            Self::Assistant => "assistant",
            Self::ToolCall => "tool_call",
            Self::ToolResult => "tool_result",
            Self::System => "system",
            Self::Compaction => "compaction",
        }
    }

    /// The kind stored as `text` (the inverse of [`Self::as_str`]).
    pub fn from_stored(text: &str) -> Option<Self> {
        match text {
            "user" => Some(Self::User),
            "assistant" => Some(Self::Assistant),
            "tool_call" => Some(Self::ToolCall),
            "tool_result" => Some(Self::ToolResult),
            "system" => Some(Self::System),
            "compaction" => Some(Self::Compaction),
            _ => None,
        }
    }
}

/// How a tool call ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolStatus {
    /// Started, no result yet (or the process died before it finished).
    Pending,
    /// Finished successfully.
    Success,
    /// Failed; the error text is the result.
    Error,
}

impl ToolStatus {
    /// The stored spelling: `pending`, `success`, `error`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Success => "success",
            Self::Error => "error",
        }
    }

    /// The status stored as `text` (the inverse of [`Self::as_str`]).
    pub fn from_stored(text: &str) -> Option<Self> {
        match text {
            "pending" => Some(Self::Pending),
            "success" => Some(Self::Success),
            "error" => Some(Self::Error),
            _ => None,
        }
    }
}

/// One stored message of a conversation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Message {
    /// What it is.
    pub kind: MessageKind,
    /// Its text (for a tool result, what the model reads).
    pub content: String,
    /// Links a tool call to its result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// The tool called.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_name: Option<String>,
    /// The call's arguments as JSON text, exactly as the model sent them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_input: Option<String>,
    /// How the call ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_status: Option<ToolStatus>,
}

impl Message {
    pub(crate) fn plain(kind: MessageKind, content: impl Into<String>) -> Self {
        Self {
            kind,
            content: content.into(),
            tool_call_id: None,
            tool_name: None,
            tool_input: None,
            tool_status: None,
        }
    }

    /// A user message.
    pub fn user(content: impl Into<String>) -> Self {
        Self::plain(MessageKind::User, content)
    }

    /// An assistant message.
    pub fn assistant(content: impl Into<String>) -> Self {
        Self::plain(MessageKind::Assistant, content)
    }

    /// A plain system message.
    pub fn system(content: impl Into<String>) -> Self {
        Self::plain(MessageKind::System, content)
    }

    /// A tool call the model made.
    pub fn tool_call(
        tool_call_id: impl Into<String>,
        tool_name: impl Into<String>,
        tool_input: impl Into<String>,
        tool_status: ToolStatus,
    ) -> Self {
        Self {
            tool_call_id: Some(tool_call_id.into()),
            tool_name: Some(tool_name.into()),
            tool_input: Some(tool_input.into()),
            tool_status: Some(tool_status),
            ..Self::plain(MessageKind::ToolCall, "")
        }
    }

    /// The result of a tool call.
    pub fn tool_result(
        tool_call_id: impl Into<String>,
        tool_name: impl Into<String>,
        content: impl Into<String>,
        tool_status: ToolStatus,
    ) -> Self {
        Self {
            tool_call_id: Some(tool_call_id.into()),
            tool_name: Some(tool_name.into()),
            tool_status: Some(tool_status),
            ..Self::plain(MessageKind::ToolResult, content)
        }
    }
}
