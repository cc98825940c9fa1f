//! Sources configured before a listed one are listed first, for their
//! tools' names; one that fails there is tried once, not again before each
//! later source (which started it, and reported its failure, once more
//! each).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use async_trait::async_trait;
use pretty_assertions::assert_eq;
use serde_json::json;
use toolgate_core::{GroupId, GroupVisibility};
use toolgate_tools::{
    CallContext, ListedGroup, ListedSource, SourceCall, SourceChange, SourceError, SourceListing,
    SourceTool, Startup, ToolCallError, ToolOutput, ToolSource, Toolbox, ToolboxOptions,
};

/// A listed source with one tool, or failing to start; it counts the
/// times it was asked to list.
#[derive(Debug)]
struct Counted {
    group: ListedGroup,
    fails: bool,
    attempts: AtomicU64,
}

impl Counted {
    fn new(id: &str, startup: Startup, fails: bool) -> Arc<Self> {
        Arc::new(Self {
            group: ListedGroup {
                id: GroupId::new(id).unwrap(),
                description: None,
                startup,
                visibility: GroupVisibility::OnLoad,
            },
            fails,
            attempts: AtomicU64::new(0),
        })
    }
}

#[async_trait]
impl ToolSource for Counted {
    async fn call(
        &self,
        call: SourceCall,
        _context: &CallContext,
    ) -> Result<ToolOutput, ToolCallError> {
        Ok(ToolOutput::text(call.tool))
    }
}

#[async_trait]
impl ListedSource for Counted {
    fn group(&self) -> &ListedGroup {
        &self.group
    }

    async fn list(&self) -> Result<SourceListing, SourceError> {
        self.attempts.fetch_add(1, Ordering::SeqCst);
        if self.fails {
            return Err(SourceError::new(std::io::Error::other("cannot run it")));
        }
        let name = format!("{}_tool", self.group.id);
        let schema = json!({"type": "object", "properties": {}});
        Ok(SourceListing {
            tools: vec![SourceTool {
                listing: json!({"name": name, "inputSchema": schema})
                    .as_object()
                    .unwrap()
                    .clone(),
                description: format!("{name} does it"),
                input_schema: schema,
                annotations: None,
                name,
            }],
            about: None,
            generation: 1,
        })
    }

    async fn running_generation(&self) -> Option<u64> {
        None
    }

    async fn stop(&self) {}

    async fn shutdown(&self) {}

    async fn changed(&self) -> SourceChange {
        std::future::pending().await
    }
}

#[tokio::test]
async fn an_earlier_source_that_fails_is_started_once_for_every_later_one() {
    let broken = Counted::new("broken", Startup::Lazy, true);
    let first = Counted::new("first", Startup::Eager, false);
    let second = Counted::new("second", Startup::Eager, false);
    let options = ToolboxOptions {
        listed: vec![
            Arc::clone(&broken) as Arc<dyn ListedSource>,
            Arc::clone(&first) as Arc<dyn ListedSource>,
            Arc::clone(&second) as Arc<dyn ListedSource>,
        ],
        ..ToolboxOptions::default()
    };
    let (toolbox, report) = Toolbox::start(options).await.unwrap();
    assert_eq!(broken.attempts.load(Ordering::SeqCst), 1);
    let listed: Vec<(String, bool)> = report
        .listed
        .iter()
        .map(|(group, state)| (group.to_string(), state.is_ok()))
        .collect();
    assert_eq!(
        listed,
        [("first".to_owned(), true), ("second".to_owned(), true)]
    );
    // Its own first load tries it again.
    let loaded = toolbox.prepare("broken").await;
    assert!(loaded.is_err(), "{loaded:?}");
    assert_eq!(broken.attempts.load(Ordering::SeqCst), 2);
}
