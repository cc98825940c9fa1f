use std::sync::{Arc, Mutex};

use pretty_assertions::assert_eq;
use toolgate_core::GroupId;

use super::*;

/// A writer whose bytes the test reads back.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Captured {
    fn text(&self) -> String {
        String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
    }
}

#[test]
fn upstreams_then_embedding_are_shown_on_one_line_cleared_at_the_end() {
    let out = Captured::default();
    let line = TerminalProgress::to(Box::new(out.clone()));
    line.expect_upstreams(2);
    let progress = line.progress();
    let (clock, fetch) = (
        GroupId::new("clock").unwrap(),
        GroupId::new("fetch").unwrap(),
    );
    progress.report(Step::Starting { source: &clock });
    progress.report(Step::Started { source: &clock });
    progress.report(Step::Starting { source: &fetch });
    progress.report(Step::Started { source: &fetch });
    for done in [64, 128, 150] {
        progress.report(Step::Embedding { done, total: 150 });
    }
    line.finish();
    // Started after the command went on: not shown.
    progress.report(Step::Starting { source: &clock });
    let blank = |n: usize| " ".repeat(n);
    assert_eq!(
        out.text(),
        [
            "\rstarting upstream 'clock' (1/2)".to_owned(),
            format!("\r{}\r", blank(31)),
            "\rstarting upstream 'fetch' (2/2)".to_owned(),
            format!("\r{}\r", blank(31)),
            "\rembedding tool texts for routing: 64/150".to_owned(),
            "\rembedding tool texts for routing: 128/150".to_owned(),
            format!("\r{}\r", blank(41)),
        ]
        .concat()
    );
}
