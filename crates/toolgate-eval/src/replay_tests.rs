//! The replay on a dataset the test writes: three groups of similar size,
//! three conversations, one of which goes back to a group after using
//! another, so a budget of one group unloads it and the oracle loads it
//! again.

use std::path::Path;
use std::sync::Arc;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use toolgate_core::{Encoding, LoadedSchemas, MetaTool, TokenCounter};

use super::{ConversationFigures, Replay, ReplayMode, replay};
use crate::conversations::{Conversations, GoldCall};
use crate::replay_markdown::{budget_check, replay_markdown};

fn tool(name: &str, group: &str, properties: Value) -> Value {
    let required: Vec<&String> = properties.as_object().unwrap().keys().collect();
    json!({"name": name, "group": group,
           "description": format!("The {name} tool of the {group} service."),
           "parameters": {"type": "object", "properties": properties, "required": required}})
}

/// `files` (3 tools), `mail` and `math` (2 each), and three conversations:
/// `c1` files, mail, files again, then a turn without calls; `c2` math
/// twice (the second call positional); `c3` mail, math, mail. The lines are
/// out of turn order.
pub(crate) fn write_conversations(dir: &Path) {
    let string = json!({"type": "string", "description": "A name."});
    let number = json!({"type": "integer", "description": "A number."});
    let tools = [
        tool("files_list", "files", json!({"folder": string})),
        tool("files_read", "files", json!({"path": string})),
        tool(
            "files_write",
            "files",
            json!({"path": string, "text": string}),
        ),
        tool("mail_send", "mail", json!({"to": string, "body": string})),
        tool("mail_search", "mail", json!({"query": string})),
        tool("math_add", "math", json!({"a": number, "b": number})),
        tool("math_mean", "math", json!({"values": {"type": "array"}})),
    ];
    let lines: Vec<String> = tools.iter().map(ToString::to_string).collect();
    std::fs::write(dir.join("tools.jsonl"), lines.join("\n") + "\n").unwrap();
    let groups = ["files", "mail", "math"]
        .map(|group| json!({"group": group, "description": format!("The {group} service.")}));
    let lines: Vec<String> = groups.iter().map(ToString::to_string).collect();
    std::fs::write(dir.join("groups.jsonl"), lines.join("\n") + "\n").unwrap();
    let turn = |conversation: &str, turn: usize, query: &str, calls: &[&str]| {
        let tools: Vec<&str> = calls.iter().map(|c| c.split('(').next().unwrap()).collect();
        json!({"id": format!("{conversation}/{turn}"), "query": query, "tools": tools,
               "conversation_id": conversation, "turn": turn, "ground_truth_calls": calls})
    };
    let queries = [
        turn(
            "c1",
            1,
            "Mail Bo the summary.",
            &["mail_send(to='bo', body='summary')"],
        ),
        turn(
            "c1",
            0,
            "List the reports and read the first.",
            &["files_list(folder='reports')", "files_read(path='q1.txt')"],
        ),
        turn(
            "c1",
            2,
            "Read the second one too.",
            &["files_read(path='q2.txt')"],
        ),
        turn("c1", 3, "Thanks.", &[]),
        turn("c2", 0, "Add 1 and 2.", &["math_add(a=1, b=2)"]),
        turn("c2", 1, "And 3 and 4?", &["math_add(3, 4)"]),
        turn("c3", 0, "Mail Al.", &["mail_send(to='al', body='hi')"]),
        turn("c3", 1, "What is 5 plus 6?", &["math_add(a=5, b=6)"]),
        turn(
            "c3",
            2,
            "Mail Al the sum.",
            &["mail_send(to='al', body='11')"],
        ),
    ];
    let lines: Vec<String> = queries.iter().map(ToString::to_string).collect();
    std::fs::write(dir.join("queries.jsonl"), lines.join("\n") + "\n").unwrap();
}

fn load() -> (tempfile::TempDir, Conversations) {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("small_multi_turn");
    std::fs::create_dir(&dir).unwrap();
    write_conversations(&dir);
    let data = Conversations::load(&dir).unwrap();
    (root, data)
}

fn counter() -> Arc<TokenCounter> {
    Arc::new(TokenCounter::new(Encoding::O200kBase).unwrap())
}

/// Tokens of `group`'s schemas.
fn group_tokens(data: &Conversations, counter: &TokenCounter, group: &str) -> usize {
    counter.tools(data.catalog.group_tools(group))
}

/// Each conversation's `(loads, budget unloads, peak schema tokens)`.
fn shape(conversations: &[ConversationFigures]) -> Vec<(usize, usize, usize)> {
    conversations
        .iter()
        .map(|c| (c.loads, c.budget_unloads, c.peak_tool_tokens))
        .collect()
}

#[test]
fn conversations_come_in_turn_order_with_their_calls_as_json() {
    let (_root, data) = load();
    let ids: Vec<&str> = data.conversations.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(ids, ["c1", "c2", "c3"]);
    let c1: Vec<&str> = data.conversations[0]
        .turns
        .iter()
        .map(|t| t.text.as_str())
        .collect();
    assert_eq!(
        c1,
        [
            "List the reports and read the first.",
            "Mail Bo the summary.",
            "Read the second one too.",
            "Thanks."
        ]
    );
    assert_eq!(
        data.conversations[1].turns[1].calls,
        [GoldCall {
            tool: "math_add".to_owned(),
            arguments: r#"{"a":3,"b":4}"#.to_owned(),
        }]
    );
    let groups: Vec<Vec<String>> = data
        .conversations
        .iter()
        .map(|c| {
            c.groups(&data.catalog)
                .iter()
                .map(|g| g.to_string())
                .collect()
        })
        .collect();
    assert_eq!(
        groups,
        [vec!["files", "mail"], vec!["math"], vec!["mail", "math"]]
    );
}

#[tokio::test]
async fn a_budget_of_one_group_unloads_and_reloads_without_a_failed_call_and_lowers_the_peak() {
    let (_root, data) = load();
    let counter = counter();
    let [files, mail, math] =
        ["files", "mail", "math"].map(|group| group_tokens(&data, &counter, group));
    let one_group = files.max(mail).max(math);
    // Any two groups are past the budget: each new group unloads the other.
    assert!(files + mail.min(math) > one_group && mail + math > one_group);
    let core: usize = [MetaTool::LoadToolGroup, MetaTool::UnloadToolGroup]
        .iter()
        .map(|tool| counter.tool(&tool.definition()))
        .sum();
    let all = files + mail + math + core;
    let modes = [
        ReplayMode::NoBudget,
        ReplayMode::Budget(one_group),
        ReplayMode::AllTools,
    ];
    let mut progress = Vec::new();
    let replayed: Replay = replay(
        &data,
        &modes,
        LoadedSchemas::ToolList,
        Arc::clone(&counter),
        &mut |mode, done, total| {
            progress.push((mode, done, total));
        },
    )
    .await
    .unwrap();
    assert_eq!(progress.len(), 9);
    assert_eq!((replayed.conversations, replayed.turns), (3, 9));
    let [unbudgeted, budgeted, all_tools] = &replayed.runs[..] else {
        panic!("{:?}", replayed.runs);
    };

    // Every gold call ran: none refused for an unloaded tool.
    for run in &replayed.runs {
        let total = &run.total;
        assert_eq!(
            (
                total.gold_calls,
                total.unavailable_calls,
                total.other_failed_calls
            ),
            (9, 0, 0),
            "{:?}",
            run.mode
        );
    }

    assert_eq!(
        shape(&unbudgeted.conversations),
        [
            (2, 0, core + files + mail),
            (1, 0, core + math),
            (2, 0, core + mail + math)
        ]
    );
    // c1 goes back to files after mail, c3 back to mail after math: each
    // return unloads the other group and loads the first again.
    assert_eq!(
        shape(&budgeted.conversations),
        [
            (3, 2, core + files.max(mail)),
            (1, 0, core + math),
            (3, 2, core + mail.max(math))
        ]
    );
    assert_eq!(shape(&all_tools.conversations), [(0, 0, all); 3]);
    assert_eq!(budgeted.total.groups_unloaded, 4);
    assert!(budgeted.peak_tool_tokens_sum < unbudgeted.peak_tool_tokens_sum);
    // The reloads cost model calls: one more per return to a group.
    assert_eq!(budgeted.total.model_calls, unbudgeted.total.model_calls + 2);
    assert_eq!(
        all_tools.total.model_calls + 5,
        unbudgeted.total.model_calls
    );

    let check = budget_check(&replayed).unwrap();
    assert_eq!(check.budget, one_group);
    assert_eq!(
        (check.peak_sum, check.unbudgeted_peak_sum),
        (
            budgeted.peak_tool_tokens_sum,
            unbudgeted.peak_tool_tokens_sum
        )
    );
    assert_eq!((check.several_groups, check.halved), (2, 0));
    assert_eq!(check.core_tokens, core);
    let by_groups: Vec<(usize, usize, usize, usize, usize)> = check
        .by_groups
        .iter()
        .map(|u| {
            (
                u.groups,
                u.conversations,
                u.peak_sum,
                u.unbudgeted_peak_sum,
                u.halved,
            )
        })
        .collect();
    assert_eq!(
        by_groups,
        [
            (1, 1, core + math, core + math, 0),
            (
                2,
                2,
                2 * core + files.max(mail) + mail.max(math),
                2 * core + files + 2 * mail + math,
                0
            )
        ]
    );
    assert_eq!(
        check.loaded_peaks(),
        (
            files.max(mail) + math + mail.max(math),
            files + mail + math + mail + math
        )
    );
    assert!(!check.holds());
    let markdown = replay_markdown(&replayed);
    assert!(
        markdown.starts_with("## Replay: small_multi_turn\n\n3 conversations, 9 user turns,"),
        "{markdown}"
    );
    let budget_row = markdown
        .lines()
        .find(|line| line.starts_with(&format!("| budget {one_group} | ")))
        .unwrap_or_else(|| panic!("no budget row in {markdown}"));
    assert!(
        budget_row.ends_with(" | 0 | 0 | 4 (4) | 7 | 25 |"),
        "{budget_row}"
    );
    assert!(markdown.contains("at most half is not met."), "{markdown}");
    assert!(markdown.contains("\n| c3 | 3 | 2 | "), "{markdown}");
    assert!(markdown.contains("\n| 2 | 2 | "), "{markdown}");
}

#[tokio::test]
async fn with_the_schemas_in_the_conversation_the_tool_list_stays_and_a_reload_sends_them_again() {
    let (_root, data) = load();
    let counter = counter();
    let one_group = ["files", "mail", "math"]
        .map(|group| group_tokens(&data, &counter, group))
        .into_iter()
        .max()
        .unwrap();
    let modes = [ReplayMode::NoBudget, ReplayMode::Budget(one_group)];
    let replayed = replay(
        &data,
        &modes,
        LoadedSchemas::Conversation,
        Arc::clone(&counter),
        &mut |_, _, _| {},
    )
    .await
    .unwrap();
    assert_eq!(replayed.loaded_schemas, "conversation");
    let [unbudgeted, budgeted] = &replayed.runs[..] else {
        panic!("{:?}", replayed.runs);
    };
    // The oracle sees a load in the history, not in the tool list, and
    // calls the loaded tools by name.
    for run in &replayed.runs {
        let total = &run.total;
        assert_eq!(
            (
                total.gold_calls,
                total.unavailable_calls,
                total.other_failed_calls
            ),
            (9, 0, 0),
            "{:?}",
            run.mode
        );
    }
    // The tool list: the meta-tools, `call_tool` among them, on every call.
    let listed: usize = [
        MetaTool::LoadToolGroup,
        MetaTool::UnloadToolGroup,
        MetaTool::CallTool,
    ]
    .iter()
    .map(|tool| counter.tool(&tool.definition()))
    .sum();
    assert_eq!(
        shape(&unbudgeted.conversations),
        [(2, 0, listed), (1, 0, listed), (2, 0, listed)]
    );
    assert_eq!(
        shape(&budgeted.conversations),
        [(3, 2, listed), (1, 0, listed), (3, 2, listed)]
    );
    // An unload takes nothing out of the conversation, and a reload's
    // answer carries the group's schemas again.
    assert!(budgeted.total.input_tokens > unbudgeted.total.input_tokens);
    let markdown = replay_markdown(&replayed);
    assert!(
        markdown.contains("The tool list is the same on every call:")
            && !markdown.contains("Best budget"),
        "{markdown}"
    );
}
