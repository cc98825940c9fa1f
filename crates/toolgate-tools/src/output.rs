//! [`ToolOutput`]: what a tool call returns, whatever its source, before any
//! front end sees it. The agent loop turns it into the text a model reads,
//! the gateway into an MCP `CallToolResult`; each converts at its edge only.

use serde_json::{Value, json};
use toolgate_core::typed_result;

/// One block of a tool's result.
#[derive(Clone, Debug, PartialEq)]
pub enum Content {
    /// Text the model reads.
    Text(String),
    /// Anything else a tool returned (an image, audio, an embedded resource,
    /// a link to one, or text with annotations), as its MCP content JSON: the
    /// gateway passes it on whole, and a model reads a one-line placeholder.
    Block(Value),
}

impl Content {
    /// The text of a text block (annotated or not); `None` for other content.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            Self::Text(text) => Some(text),
            Self::Block(block) if block.get("type").and_then(Value::as_str) == Some("text") => {
                Some(block.get("text").and_then(Value::as_str).unwrap_or(""))
            }
            Self::Block(_) => None,
        }
    }

    /// The block as a model reads it.
    pub fn model_text(&self) -> String {
        if let Some(text) = self.as_text() {
            return text.to_owned();
        }
        match self {
            Self::Text(text) => text.clone(),
            Self::Block(block) => {
                let field = |name: &str| block.get(name).and_then(Value::as_str).unwrap_or("");
                match field("type") {
                    "image" => format!("[image: {}]", field("mimeType")),
                    "audio" => format!("[audio: {}]", field("mimeType")),
                    "resource_link" => format!("[resource: {}]", field("uri")),
                    _ => "[embedded resource]".to_owned(),
                }
            }
        }
    }
}

/// What a tool call returned: its content, the same result as JSON when
/// there is one, and whether it is an error the model should correct.
///
/// Tool errors are results, not failures: the conversation goes on and the
/// model reads them.
///
/// ```
/// use serde_json::json;
/// use toolgate_tools::ToolOutput;
///
/// let output = ToolOutput::json(json!({"ok": true}));
/// assert_eq!(output.model_text(), "{\n  \"ok\": true\n}");
/// assert!(!output.is_error);
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ToolOutput {
    /// The blocks of the result, in order.
    pub content: Vec<Content>,
    /// The structured result, when the tool has one.
    pub structured: Option<Value>,
    /// Whether the call failed.
    pub is_error: bool,
    /// Protocol metadata the source attached (MCP `_meta`, an object),
    /// passed on as is. Boxed: results rarely carry it.
    pub meta: Option<Box<Value>>,
}

impl ToolOutput {
    /// A plain text success.
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            content: vec![Content::Text(text.into())],
            ..Self::default()
        }
    }

    /// A structured success; the text is the value as pretty JSON.
    pub fn json(value: Value) -> Self {
        Self {
            content: vec![Content::Text(
                serde_json::to_string_pretty(&value).unwrap_or_else(|_| value.to_string()),
            )],
            structured: Some(value),
            ..Self::default()
        }
    }

    /// An error the model reads.
    pub fn error(text: impl Into<String>) -> Self {
        Self {
            is_error: true,
            ..Self::text(text)
        }
    }

    /// A structured error (a `{"type": "error", ...}` object): the JSON is
    /// both the text and the structured content.
    pub fn json_error(value: Value) -> Self {
        Self {
            content: vec![Content::Text(value.to_string())],
            structured: Some(value),
            is_error: true,
            meta: None,
        }
    }

    /// The text a model reads: the blocks joined by newlines (other content
    /// named by its kind), or the structured result when there is no block.
    pub fn model_text(&self) -> String {
        let text = self
            .content
            .iter()
            .map(Content::model_text)
            .collect::<Vec<_>>()
            .join("\n");
        match (&self.structured, text.is_empty()) {
            (Some(structured), true) => structured.to_string(),
            _ => text,
        }
    }

    /// The result as one action of a polymorphic tool answers it: its text
    /// becomes the `type`d JSON of [`typed_result`] (as the text block and
    /// the structured content); blocks that are not text are kept.
    pub fn typed(self, action: &str) -> Self {
        let text = match &self.structured {
            Some(structured) if !self.content.iter().any(|block| block.as_text().is_some()) => {
                structured.to_string()
            }
            _ => self
                .content
                .iter()
                .filter_map(Content::as_text)
                .collect::<Vec<_>>()
                .join("\n"),
        };
        let typed = typed_result(action, &text, self.is_error);
        let mut content = vec![Content::Text(typed.to_string())];
        content.extend(
            self.content
                .into_iter()
                .filter(|block| block.as_text().is_none()),
        );
        Self {
            content,
            structured: Some(typed),
            is_error: self.is_error,
            meta: self.meta,
        }
    }

    /// An action's arguments that break its member's schema, as a
    /// polymorphic tool answers them.
    pub(crate) fn invalid_action_arguments(action: &str, text: &str) -> Self {
        Self::json_error(json!({"type": "error", "action": action, "error": text}))
    }
}

#[cfg(test)]
#[path = "output_tests.rs"]
mod tests;
