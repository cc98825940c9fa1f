//! Live runs against an in-process model that answers from a script: a
//! one-turn task over a two-group catalog the test writes.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use toolgate_agent::Compaction;
use toolgate_core::{COMPACTION_PROMPT, Encoding, LoadedSchemas, TokenCounter};
use toolgate_llm::{
    ChatMessage, ChatModel, ChatRequest, ChatResponse, EventSink, LlmError, ModelFuture,
    StopReason, ToolCall, Usage,
};

use super::{LiveOptions, LivePolicy, LiveTask, live, wilson};
use crate::conversations::Conversations;
use crate::live_markdown::live_markdown;

/// `weather` (forecast) and `mail` (send); one conversation of one turn
/// whose ground truth calls `weather_forecast`.
fn write_dataset(dir: &Path) {
    let tools = [
        json!({"name": "weather_forecast", "group": "weather", "description": "A city's forecast.",
               "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                              "required": ["city"]}}),
        json!({"name": "mail_send", "group": "mail", "description": "Send a mail.",
               "parameters": {"type": "object", "properties": {"to": {"type": "string"}},
                              "required": ["to"]}}),
    ];
    let lines: Vec<String> = tools.iter().map(ToString::to_string).collect();
    std::fs::write(dir.join("tools.jsonl"), lines.join("\n") + "\n").unwrap();
    let groups = ["weather", "mail"]
        .map(|group| json!({"group": group, "description": format!("The {group} service.")}));
    let lines: Vec<String> = groups.iter().map(ToString::to_string).collect();
    std::fs::write(dir.join("groups.jsonl"), lines.join("\n") + "\n").unwrap();
    let query = json!({"id": "c1/0", "query": "Tomorrow in Oslo?", "tools": ["weather_forecast"],
                       "conversation_id": "c1", "turn": 0,
                       "ground_truth_calls": ["weather_forecast(city='Oslo')"]});
    std::fs::write(dir.join("queries.jsonl"), query.to_string() + "\n").unwrap();
}

/// Answers each request with the next scripted step: a tool call (name,
/// arguments), the endpoint refusing the request (the name [`REFUSE`]) or,
/// when the script is done, a text answer; each answer billed 100 tokens in
/// (40 cached) and 10 out.
/// A step's name for a request the endpoint refuses.
const REFUSE: &str = "!refuse";
/// A step's name for a request the endpoint never answers.
const HANG: &str = "!hang";

#[derive(Debug)]
struct Script(Mutex<Vec<(String, Value)>>);

impl Script {
    fn new(steps: &[(&str, Value)]) -> Arc<Self> {
        let mut steps: Vec<_> = steps
            .iter()
            .map(|(name, arguments)| ((*name).to_owned(), arguments.clone()))
            .collect();
        steps.reverse();
        Arc::new(Self(Mutex::new(steps)))
    }
}

impl ChatModel for Script {
    fn provider(&self) -> &str {
        "script"
    }

    fn model(&self) -> &str {
        "scripted"
    }

    fn complete<'a>(&'a self, request: &'a ChatRequest, _events: EventSink<'a>) -> ModelFuture<'a> {
        Box::pin(async move {
            let usage = Some(Usage {
                input_tokens: 100,
                output_tokens: 10,
                cached_input_tokens: Some(40),
            });
            // A compaction's summary call is answered without a step.
            if let Some(ChatMessage::User(text)) = request.messages.last()
                && text == COMPACTION_PROMPT
            {
                return Ok(ChatResponse {
                    text: "The user wants tomorrow's forecast for Oslo.".to_owned(),
                    tool_calls: Vec::new(),
                    stop_reason: StopReason::EndTurn,
                    usage,
                });
            }
            let step = self.0.lock().unwrap().pop();
            Ok(match step {
                Some((name, _)) if name == HANG => std::future::pending().await,
                Some((name, _)) if name == REFUSE => {
                    return Err(LlmError::Provider {
                        url: "http://127.0.0.1/v1/chat/completions".to_owned(),
                        message: "request exceeds the available context size".to_owned(),
                    });
                }
                Some((name, arguments)) => ChatResponse {
                    text: String::new(),
                    tool_calls: vec![ToolCall {
                        id: format!("call_{name}"),
                        name,
                        arguments: arguments.to_string(),
                    }],
                    stop_reason: StopReason::ToolUse,
                    usage,
                },
                None => ChatResponse {
                    text: "Done.".to_owned(),
                    tool_calls: Vec::new(),
                    stop_reason: StopReason::EndTurn,
                    usage,
                },
            })
        })
    }
}

/// Thirty tasks in a `window`-token window, no compaction, no time limit.
fn options(window: usize) -> LiveOptions {
    LiveOptions {
        tasks: 30,
        skip: 0,
        context_window: window,
        compaction: Compaction::Off,
        time_limit: None,
    }
}

async fn run(policy: LivePolicy, steps: &[(&str, Value)], window: usize) -> super::Live {
    run_with(policy, steps, options(window), write_dataset).await
}

async fn run_with(
    policy: LivePolicy,
    steps: &[(&str, Value)],
    options: LiveOptions,
    dataset: impl FnOnce(&Path),
) -> super::Live {
    let dir = tempfile::tempdir().unwrap();
    dataset(dir.path());
    let data = Conversations::load(dir.path()).unwrap();
    let counter = Arc::new(TokenCounter::new(Encoding::O200kBase).unwrap());
    let mut progress = Vec::new();
    let live = live(
        &data,
        Script::new(steps),
        &[policy],
        options,
        counter,
        &mut |policy, _, done, total| progress.push((policy, done, total)),
    )
    .await
    .unwrap();
    let task = options.skip + 1;
    assert_eq!(progress, vec![(policy, task, task)]);
    live
}

fn task(live: &super::Live) -> LiveTask {
    let mut task = live.runs[0].tasks[0].clone();
    assert!(task.seconds >= 0.0);
    task.seconds = 0.0;
    task
}

#[tokio::test]
async fn a_load_then_a_valid_call_succeeds_and_its_bill_is_summed() {
    let live = run(
        LivePolicy::Deferred(LoadedSchemas::ToolList),
        &[
            ("load_tool_group", json!({"group_name": "weather"})),
            ("weather_forecast", json!({"city": "Oslo"})),
        ],
        16_384,
    )
    .await;
    assert_eq!(
        task(&live),
        LiveTask {
            conversation: "c1".to_owned(),
            turns: 1,
            gold: vec!["weather_forecast".to_owned()],
            called: vec!["load_tool_group".to_owned(), "weather_forecast".to_owned()],
            succeeded: true,
            model_calls: 3,
            input_tokens: 300,
            cached_input_tokens: 120,
            output_tokens: 30,
            compactions: 0,
            seconds: 0.0,
            error: None,
        }
    );
    assert_eq!(
        (live.runs[0].succeeded, live.model.as_str()),
        (1, "scripted")
    );
}

#[tokio::test]
async fn a_conversation_past_the_compaction_threshold_is_compacted_and_its_summary_billed() {
    let options = LiveOptions {
        // Below the conversation once the weather group is loaded, above
        // it with a summary in place of the history (339 tokens).
        compaction: Compaction::AboveTokens(350),
        ..options(16_384)
    };
    let live = run_with(
        LivePolicy::Deferred(LoadedSchemas::ToolList),
        &[
            ("load_tool_group", json!({"group_name": "weather"})),
            ("weather_forecast", json!({"city": "Oslo"})),
        ],
        options,
        |dir| {
            write_dataset(dir);
            let second = json!({"id": "c1/1", "query": "Thanks!", "tools": [],
                                "conversation_id": "c1", "turn": 1, "ground_truth_calls": []});
            let queries = std::fs::read_to_string(dir.join("queries.jsonl")).unwrap();
            std::fs::write(dir.join("queries.jsonl"), format!("{queries}{second}\n")).unwrap();
        },
    )
    .await;
    let task = task(&live);
    assert!(task.succeeded, "{task:?}");
    // Compacted in each turn (at most once a turn).
    assert_eq!(task.compactions, 2, "{task:?}");
    // The task's four calls and the two summaries', each billed.
    assert_eq!(
        (task.model_calls, task.input_tokens, task.output_tokens),
        (6, 600, 60)
    );
}

// The clock is paused: it jumps to the limit once the hanging call is all
// that is left to wait for.
#[tokio::test(start_paused = true)]
async fn a_task_past_its_time_limit_is_stopped_with_the_bill_of_its_calls_so_far() {
    let options = LiveOptions {
        time_limit: Some(Duration::from_secs(300)),
        ..options(16_384)
    };
    let live = run_with(
        LivePolicy::Deferred(LoadedSchemas::ToolList),
        &[
            ("load_tool_group", json!({"group_name": "weather"})),
            (HANG, json!({})),
        ],
        options,
        write_dataset,
    )
    .await;
    let task = task(&live);
    assert_eq!(
        (
            task.succeeded,
            task.error.as_deref(),
            task.called.as_slice(),
            task.model_calls,
            task.input_tokens,
        ),
        (
            false,
            Some("the task passed its time limit of 300 s"),
            ["load_tool_group".to_owned()].as_slice(),
            1,
            100,
        )
    );
}

#[tokio::test]
async fn a_task_the_endpoint_stops_keeps_the_bill_of_its_calls_so_far() {
    let live = run(
        LivePolicy::Deferred(LoadedSchemas::ToolList),
        &[
            ("load_tool_group", json!({"group_name": "weather"})),
            (REFUSE, json!({})),
        ],
        16_384,
    )
    .await;
    let task = task(&live);
    assert!(!task.succeeded);
    assert!(
        task.error
            .as_deref()
            .unwrap_or_default()
            .contains("context size"),
        "{:?}",
        task.error
    );
    assert_eq!(
        (
            task.model_calls,
            task.input_tokens,
            task.cached_input_tokens,
            task.output_tokens
        ),
        (1, 100, 40, 10)
    );
}

#[tokio::test]
async fn skipped_tasks_are_left_out_and_the_next_ones_played() {
    let options = LiveOptions {
        skip: 1,
        ..options(16_384)
    };
    let live = run_with(
        LivePolicy::Deferred(LoadedSchemas::ToolList),
        &[
            ("load_tool_group", json!({"group_name": "mail"})),
            ("mail_send", json!({"to": "ada@example.com"})),
        ],
        options,
        |dir| {
            write_dataset(dir);
            let second = json!({"id": "c2/0", "query": "Mail Ada.", "tools": ["mail_send"],
                                "conversation_id": "c2", "turn": 0,
                                "ground_truth_calls": ["mail_send(to='ada@example.com')"]});
            let queries = std::fs::read_to_string(dir.join("queries.jsonl")).unwrap();
            std::fs::write(dir.join("queries.jsonl"), format!("{queries}{second}\n")).unwrap();
        },
    )
    .await;
    let task = task(&live);
    assert_eq!((task.conversation.as_str(), task.succeeded), ("c2", true));
}

#[tokio::test]
async fn a_call_through_call_tool_counts_as_the_tool_it_names() {
    let live = run(
        LivePolicy::Deferred(LoadedSchemas::Conversation),
        &[
            ("load_tool_group", json!({"group_name": "weather"})),
            (
                "call_tool",
                json!({"name": "weather_forecast", "arguments": {"city": "Oslo"}}),
            ),
        ],
        16_384,
    )
    .await;
    let task = task(&live);
    assert_eq!(
        (task.called, task.succeeded),
        (
            vec!["load_tool_group".to_owned(), "weather_forecast".to_owned()],
            true
        )
    );
}

#[tokio::test]
async fn arguments_the_schema_refuses_or_an_unloaded_tool_fail_the_task() {
    let live = run(
        LivePolicy::Search,
        &[
            ("weather_forecast", json!({"city": "Oslo"})),
            ("load_tool_group", json!({"group_name": "weather"})),
            ("weather_forecast", json!({"town": "Oslo"})),
        ],
        16_384,
    )
    .await;
    let task = task(&live);
    assert_eq!(
        (task.called, task.succeeded, task.model_calls),
        (vec!["load_tool_group".to_owned()], false, 4)
    );
    let report = live_markdown(&live);
    assert!(
        report.contains("| serve, find_tool_groups | 1 | 0 (0%) | 0-79% | 400 (160) | 40 | 4.0 |"),
        "{report}"
    );
    assert!(
        report.contains("- c1: missing weather_forecast; ran load_tool_group\n"),
        "{report}"
    );
}

#[tokio::test]
async fn all_tools_is_left_out_when_the_schemas_take_more_than_half_the_window() {
    let live = run(LivePolicy::AllTools, &[], 16_384).await;
    assert_eq!(live.runs[0].skipped, None);
    let dir = tempfile::tempdir().unwrap();
    write_dataset(dir.path());
    let data = Conversations::load(dir.path()).unwrap();
    let counter = Arc::new(TokenCounter::new(Encoding::O200kBase).unwrap());
    let small = options(2 * live.all_tool_tokens - 1);
    let skipped = super::live(
        &data,
        Script::new(&[]),
        &[LivePolicy::AllTools],
        small,
        counter,
        &mut |_, _, _, _| panic!("nothing runs"),
    )
    .await
    .unwrap();
    assert_eq!(
        skipped.runs[0].skipped,
        Some(format!(
            "its {} tokens of schemas take more than half the {}-token window",
            live.all_tool_tokens,
            2 * live.all_tool_tokens - 1
        ))
    );
}

#[test]
fn the_wilson_interval_is_the_textbook_one() {
    let round = |(low, high): (f64, f64)| ((low * 1e4).round() / 1e4, (high * 1e4).round() / 1e4);
    assert_eq!(round(wilson(0, 30)), (0.0, 0.1135));
    assert_eq!(round(wilson(15, 30)), (0.3315, 0.6685));
    assert_eq!(round(wilson(30, 30)), (0.8865, 1.0));
    assert_eq!(wilson(0, 0), (0.0, 1.0));
}

/// `chat`'s policies offer `find_tool_groups` above twelve groups, as
/// `chat` does, and not below; `serve`'s offers it always.
#[tokio::test]
async fn chat_policies_offer_the_search_above_twelve_groups() {
    use toolgate_core::{Catalog, GroupId, Origin, ToolDefinition, ToolGroup, ToolName};
    let catalog_of = |groups: usize| {
        let mut catalog = Catalog::new();
        for g in 0..groups {
            let id = GroupId::new(format!("g{g}")).unwrap();
            let tool = ToolDefinition::new(
                ToolName::new(format!("g{g}_tool")).unwrap(),
                "A tool.",
                json!({"type": "object"}),
            )
            .unwrap();
            catalog
                .register_group_with_tools(
                    ToolGroup::new(id, "G", "A group."),
                    Origin::Builtin,
                    vec![(tool, Origin::Builtin)],
                )
                .unwrap();
        }
        catalog
    };
    let counter = Arc::new(TokenCounter::new(Encoding::O200kBase).unwrap());
    let offers = async |groups: usize, policy: LivePolicy| {
        let data = Conversations {
            name: "test".to_owned(),
            catalog: catalog_of(groups),
            conversations: Vec::new(),
        };
        let model: Arc<dyn ChatModel> = Script::new(&[]);
        let agent = super::agent(&data, model, policy, options(16_384), &counter)
            .await
            .unwrap();
        agent
            .toolbox()
            .meta_tools()
            .recognize("find_tool_groups")
            .is_some()
    };
    for placement in [LoadedSchemas::ToolList, LoadedSchemas::Conversation] {
        assert!(offers(13, LivePolicy::Deferred(placement)).await);
        assert!(!offers(12, LivePolicy::Deferred(placement)).await);
    }
    assert!(offers(2, LivePolicy::Search).await);
}
