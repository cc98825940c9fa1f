//! Every call the toolbox runs is under a deadline: its source's own, else
//! the toolbox's `call_timeout` (built-ins included). A call past it is
//! cancelled and answered as timed out.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use pretty_assertions::assert_eq;
use serde_json::json;
use toolgate_core::{ToolDefinition, ToolName};
use toolgate_tools::{
    Authority, BuiltinConfig, CallContext, CallDeadline, DEFAULT_CALL_TIMEOUT, GroupExposure,
    GroupSettings, SourceCall, SourceOffer, ToolCallError, ToolOutput, ToolSource, Toolbox,
    ToolboxOptions,
};

/// A source with one tool, `wait`, that answers after `answers_after`, or
/// (without it) only once its call is cancelled; it records that it saw the
/// cancellation.
#[derive(Debug)]
struct Slow {
    deadline: CallDeadline,
    answers_after: Option<Duration>,
    saw_cancel: AtomicBool,
}

impl Slow {
    fn new(deadline: CallDeadline, answers_after: Option<Duration>) -> Arc<Self> {
        Arc::new(Self {
            deadline,
            answers_after,
            saw_cancel: AtomicBool::new(false),
        })
    }
}

#[async_trait]
impl ToolSource for Slow {
    fn offer(&self) -> SourceOffer {
        let wait = ToolDefinition::new(
            ToolName::new("wait").unwrap(),
            "Waits",
            json!({"type": "object"}),
        )
        .unwrap();
        SourceOffer {
            core_tools: vec![wait],
            groups: Vec::new(),
        }
    }

    fn deadline(&self) -> CallDeadline {
        self.deadline
    }

    async fn call(
        &self,
        _call: SourceCall,
        context: &CallContext,
    ) -> Result<ToolOutput, ToolCallError> {
        match self.answers_after {
            Some(after) => tokio::time::sleep(after).await,
            None => {
                context.cancel.cancelled().await;
                self.saw_cancel.store(true, Ordering::SeqCst);
            }
        }
        Ok(ToolOutput::text("done"))
    }
}

async fn toolbox(source: &Arc<Slow>, call_timeout: Duration) -> Arc<Toolbox> {
    let options = ToolboxOptions {
        sources: vec![Arc::clone(source) as Arc<dyn ToolSource>],
        call_timeout,
        ..ToolboxOptions::default()
    };
    Toolbox::start(options).await.unwrap().0
}

fn refusal(result: Result<ToolOutput, ToolCallError>) -> String {
    match result {
        Err(ToolCallError::RespondToModel(output)) => {
            assert!(output.is_error);
            output.model_text()
        }
        other => panic!("expected an answer for the model, got {other:?}"),
    }
}

#[test]
fn the_default_deadline_is_a_minute() {
    assert_eq!(DEFAULT_CALL_TIMEOUT, Duration::from_secs(60));
    assert_eq!(ToolboxOptions::default().call_timeout, DEFAULT_CALL_TIMEOUT);
}

#[tokio::test]
async fn a_call_past_the_deadline_is_cancelled_and_answered_as_timed_out() {
    let slow = Slow::new(CallDeadline::Toolbox, None);
    let toolbox = toolbox(&slow, Duration::from_millis(50)).await;
    let context = CallContext::new(Authority::everything());
    let answer = tokio::time::timeout(
        Duration::from_secs(10),
        toolbox.call("wait", json!({}), &context),
    )
    .await
    .expect("the toolbox answers at its deadline");
    assert_eq!(
        refusal(answer),
        "Tool 'wait' did not finish within 0.05s; the call was cancelled."
    );
    assert!(
        !context.cancel.is_cancelled(),
        "the caller's own token (a turn's, a request's) is left alone"
    );
    assert!(
        slow.saw_cancel.load(Ordering::SeqCst),
        "the source was told, and had time to stop"
    );
}

#[tokio::test]
async fn a_source_with_a_deadline_of_its_own_is_not_cut_short() {
    let slow = Slow::new(
        CallDeadline::Own(Duration::from_secs(10)),
        Some(Duration::from_millis(100)),
    );
    let toolbox = toolbox(&slow, Duration::from_millis(10)).await;
    let context = CallContext::new(Authority::everything());
    let output = toolbox.call("wait", json!({}), &context).await.unwrap();
    assert_eq!(output.model_text(), "done");
    assert!(!context.cancel.is_cancelled());
}

#[tokio::test]
async fn a_builtin_call_is_under_the_toolbox_deadline() {
    // A server that accepts connections and never answers; `web` itself
    // would wait 30 s for it.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/page", listener.local_addr().unwrap());
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((stream, _)) = listener.accept().await {
            held.push(stream);
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let mut builtins = BuiltinConfig::new(dir.path());
    builtins.web.allow_private_addresses = true;
    builtins.web.timeout = Duration::from_secs(30);
    let web_as_tools = GroupSettings {
        expose: Some(GroupExposure::Tools),
        ..GroupSettings::default()
    };
    let (toolbox, _) = Toolbox::start(ToolboxOptions {
        builtins: Some(builtins),
        groups: BTreeMap::from([("web".to_owned(), web_as_tools)]),
        call_timeout: Duration::from_millis(100),
        ..ToolboxOptions::default()
    })
    .await
    .unwrap();
    assert!(toolbox.catalog().group("web").is_some());
    let context = CallContext::new(Authority::everything());
    let answer = tokio::time::timeout(
        Duration::from_secs(10),
        toolbox.call("web_fetch", json!({"url": url}), &context),
    )
    .await
    .expect("the toolbox answers at its deadline");
    assert_eq!(
        refusal(answer),
        "Tool 'web_fetch' did not finish within 0.1s; the call was cancelled."
    );
    assert!(!context.cancel.is_cancelled());
}
