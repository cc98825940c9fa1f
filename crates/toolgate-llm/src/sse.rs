//! An incremental Server-Sent Events parser: feed it bytes as they arrive,
//! take whole events out.

/// One event: its `event:` name (empty when none) and its `data:` lines
/// joined by `\n`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct SseEvent {
    pub(crate) event: String,
    pub(crate) data: String,
}

/// Parses `text/event-stream` bodies, chunk by chunk. Lines may end in `\n`,
/// `\r\n` or `\r`; chunks may split lines, events and UTF-8 characters.
#[derive(Debug, Default)]
pub(crate) struct SseParser {
    /// Bytes of the line not yet ended.
    pending: Vec<u8>,
    /// The last chunk ended in `\r`: a `\n` starting the next one is its pair.
    after_cr: bool,
    event: String,
    data: Vec<String>,
}

impl SseParser {
    /// Feeds a chunk; returns the events it completed.
    pub(crate) fn feed(&mut self, chunk: &[u8]) -> Vec<SseEvent> {
        let mut events = Vec::new();
        let mut bytes = chunk;
        if self.after_cr && bytes.first() == Some(&b'\n') {
            bytes = &bytes[1..];
        }
        self.after_cr = false;
        let mut start = 0;
        let mut index = 0;
        while index < bytes.len() {
            match bytes[index] {
                b'\n' | b'\r' => {
                    self.pending.extend_from_slice(&bytes[start..index]);
                    let line =
                        String::from_utf8_lossy(&std::mem::take(&mut self.pending)).into_owned();
                    if let Some(event) = self.line(&line) {
                        events.push(event);
                    }
                    if bytes[index] == b'\r' {
                        if bytes.get(index + 1) == Some(&b'\n') {
                            index += 1;
                        } else if index + 1 == bytes.len() {
                            self.after_cr = true;
                        }
                    }
                    index += 1;
                    start = index;
                }
                _ => index += 1,
            }
        }
        self.pending.extend_from_slice(&bytes[start..]);
        events
    }

    /// Whether a partial event or line is waiting for more bytes.
    pub(crate) fn has_partial(&self) -> bool {
        !self.pending.is_empty() || !self.data.is_empty()
    }

    fn line(&mut self, line: &str) -> Option<SseEvent> {
        if line.is_empty() {
            if self.data.is_empty() {
                self.event.clear();
                return None;
            }
            return Some(SseEvent {
                event: std::mem::take(&mut self.event),
                data: std::mem::take(&mut self.data).join("\n"),
            });
        }
        if line.starts_with(':') {
            return None;
        }
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line, ""),
        };
        match field {
            "event" => self.event = value.to_owned(),
            "data" => self.data.push(value.to_owned()),
            _ => {}
        }
        None
    }
}

#[cfg(test)]
#[path = "sse_tests.rs"]
mod tests;
