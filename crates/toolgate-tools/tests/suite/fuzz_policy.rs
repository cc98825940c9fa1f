//! Fuzz target of the policy decision: any caller (everything, nothing, or a
//! policy of allow and deny lists over groups, tools and actions) calling
//! any tool, alias or action through the toolbox. What runs (and what the
//! caller's view of the catalog lists) must equal what a reference model,
//! written plainly here from the rules on `ToolPolicy`, says.
//!
//! Inputs: `TOOLGATE_FUZZ_CASES_POLICY_DECISION` or `PROPTEST_CASES` (see
//! `scripts/fuzz`).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use proptest::prelude::*;
use serde_json::{Map, Value, json};
use toolgate_core::{
    ActionPolicy, Alias, GroupId, ToolDefinition, ToolGroup, ToolName, ToolPolicy,
};
use toolgate_fuzz::{Target, fuzz};
use toolgate_tools::{
    Authority, CallContext, GroupExposure, GroupSettings, SourceCall, SourceOffer, ToolCallError,
    ToolOutput, ToolSource, Toolbox, ToolboxOptions,
};

/// Core tool `ping`, group `mail` (one polymorphic tool; its `delete`
/// action denied for everyone) and group `notes`; each call is remembered.
#[derive(Debug, Default)]
struct Recorder {
    ran: Mutex<Option<String>>,
}

fn tool(name: &str) -> ToolDefinition {
    ToolDefinition::new(
        ToolName::new(name).unwrap(),
        format!("{name} does it"),
        json!({"type": "object"}),
    )
    .unwrap()
}

#[async_trait]
impl ToolSource for Recorder {
    fn offer(&self) -> SourceOffer {
        let group = |id: &str| ToolGroup::new(GroupId::new(id).unwrap(), id, format!("{id} tools"));
        SourceOffer {
            core_tools: vec![tool("ping")],
            groups: vec![
                (
                    group("mail"),
                    vec![tool("mail_search"), tool("mail_send"), tool("mail_delete")],
                ),
                (group("notes"), vec![tool("notes_add"), tool("notes_list")]),
            ],
        }
    }

    async fn call(
        &self,
        call: SourceCall,
        _context: &CallContext,
    ) -> Result<ToolOutput, ToolCallError> {
        *self.ran.lock().unwrap() = Some(call.tool);
        Ok(ToolOutput::text("done"))
    }
}

async fn toolbox(recorder: &Arc<Recorder>) -> Arc<Toolbox> {
    let alias = |tool: &str| Alias::new(ToolName::new(tool).unwrap());
    let options = ToolboxOptions {
        sources: vec![Arc::clone(recorder) as Arc<dyn ToolSource>],
        groups: BTreeMap::from([(
            "mail".to_owned(),
            GroupSettings {
                expose: Some(GroupExposure::Polymorphic),
                policy: ActionPolicy {
                    allow: None,
                    deny: vec!["delete".into()],
                },
            },
        )]),
        aliases: vec![
            ("old_send".to_owned(), alias("mail").with_action("send")),
            ("jot".to_owned(), alias("notes_add")),
            ("ping2".to_owned(), alias("ping")),
        ],
        ..ToolboxOptions::default()
    };
    Toolbox::start(options).await.unwrap().0
}

const GROUPS: &[&str] = &["mail", "notes", "web"];
const TOOLS: &[&str] = &[
    "mail",
    "mail_search",
    "mail_send",
    "notes_add",
    "notes_list",
    "ping",
    "load_tool_group",
    "old_send",
];
const ACTIONS: &[&str] = &["search", "send", "delete", "zap"];

fn subset(names: &'static [&'static str]) -> impl Strategy<Value = BTreeSet<String>> {
    prop::sample::subsequence(names, 0..=names.len())
        .prop_map(|names| names.into_iter().map(str::to_owned).collect())
}

fn action_lists() -> impl Strategy<Value = Option<ActionPolicy>> {
    prop::option::of(
        (prop::option::of(subset(ACTIONS)), subset(ACTIONS)).prop_map(|(allow, deny)| {
            ActionPolicy {
                allow: allow.map(|allow| allow.into_iter().collect()),
                deny: deny.into_iter().collect(),
            }
        }),
    )
}

/// Who calls: `None` the operator (everything), `Some(None)` nobody said
/// (nothing), `Some(Some(policy))` a client's policy.
fn caller() -> impl Strategy<Value = Option<Option<ToolPolicy>>> {
    let policy = (
        prop::option::of(subset(GROUPS)),
        subset(GROUPS),
        prop::option::of(subset(TOOLS)),
        subset(TOOLS),
        action_lists(),
    )
        .prop_map(
            |(allow_groups, deny_groups, allow_tools, deny_tools, actions)| ToolPolicy {
                allow_groups,
                deny_groups,
                allow_tools,
                deny_tools,
                actions: actions
                    .map(|actions| BTreeMap::from([("mail".to_owned(), actions)]))
                    .unwrap_or_default(),
            },
        );
    prop_oneof![
        1 => Just(None),
        1 => Just(Some(None)),
        8 => policy.prop_map(|policy| Some(Some(policy))),
    ]
}

/// A call: the name, and the action its arguments name (if any).
fn call() -> impl Strategy<Value = (&'static str, Option<&'static str>)> {
    (
        prop::sample::select(vec![
            "mail",
            "mail_search",
            "mail_send",
            "mail_delete",
            "old_send",
            "notes_add",
            "jot",
            "notes_list",
            "ping",
            "ping2",
            "load_tool_group",
            "nothing",
        ]),
        prop::option::of(prop::sample::select(ACTIONS.to_vec())),
    )
}

/// What the reference model says a caller may do, from the rules as
/// `ToolPolicy` documents them.
struct Model<'a>(&'a Option<Option<ToolPolicy>>);

impl Model<'_> {
    /// Whether the caller may use `tool` of `group` (`None`: a core tool),
    /// calling `action` of it (run by `member`) when it is polymorphic.
    fn may(&self, group: Option<&str>, tool: &str, action: Option<(&str, &str)>) -> bool {
        let policy = match self.0 {
            None => return true,
            Some(None) => return false,
            Some(Some(policy)) => policy,
        };
        let mut names = vec![tool];
        if let Some((_, member)) = action {
            names.push(member);
        }
        if names.iter().any(|name| policy.deny_tools.contains(*name)) {
            return false;
        }
        match group {
            None => {
                if policy.allow_tools.is_none() && policy.allow_groups.is_some() {
                    return false;
                }
            }
            Some(group) => {
                if let Some(allowed) = &policy.allow_groups
                    && !allowed.contains(group)
                {
                    return false;
                }
                if policy.deny_groups.contains(group) {
                    return false;
                }
            }
        }
        if let Some(allowed) = &policy.allow_tools
            && !names.iter().any(|name| allowed.contains(*name))
        {
            return false;
        }
        if let (Some((action, _)), Some(lists)) = (action, policy.actions.get(tool)) {
            if let Some(allow) = &lists.allow
                && !allow.iter().any(|a| a == action)
            {
                return false;
            }
            if lists.deny.iter().any(|a| a == action) {
                return false;
            }
        }
        true
    }

    /// The source tool that runs for a call of `name` naming `action`, or
    /// `None` when the call is refused.
    fn runs(&self, name: &str, action: Option<&str>) -> Option<String> {
        let (tool, action) = match name {
            "old_send" => ("mail", Some("send")),
            "mail_search" => ("mail", Some("search")),
            "mail_send" => ("mail", Some("send")),
            "mail_delete" => ("mail", Some("delete")),
            "jot" => ("notes_add", action),
            "ping2" => ("ping", action),
            other => (other, action),
        };
        match tool {
            "mail" => {
                // `delete` is denied for everyone by the group's settings.
                let action = action.filter(|action| ["search", "send"].contains(action))?;
                let member = format!("mail_{action}");
                self.may(Some("mail"), "mail", Some((action, &member)))
                    .then_some(member)
            }
            "notes_add" | "notes_list" => {
                self.may(Some("notes"), tool, None).then(|| tool.to_owned())
            }
            "ping" => self.may(None, "ping", None).then(|| "ping".to_owned()),
            // Meta-tools are answered by the front end, never run here.
            _ => None,
        }
    }
}

/// What runs for any caller and call is what the reference model says; a
/// refusal is an error result the model reads; the caller's view of the
/// catalog lists a tool exactly when the model lets it use it (for `mail`,
/// the actions it may call).
#[test]
fn fuzz_policy_decision() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let recorder = Arc::new(Recorder::default());
    let toolbox = runtime.block_on(toolbox(&recorder));
    fuzz(
        Target::new("policy_decision", 512),
        (caller(), call()),
        &[],
        |(caller, (name, action))| {
            let authority = match &caller {
                None => Authority::everything(),
                Some(None) => Authority::nothing(),
                Some(Some(policy)) => Authority::policy(Arc::new(policy.clone())),
            };
            let model = Model(&caller);
            let mut arguments = Map::new();
            if let Some(action) = action {
                arguments.insert("action".into(), Value::from(action));
            }
            *recorder.ran.lock().unwrap() = None;
            let context = CallContext::new(authority.clone());
            let result = runtime.block_on(toolbox.call(name, Value::Object(arguments), &context));
            let ran = recorder.ran.lock().unwrap().take();
            prop_assert_eq!(&ran, &model.runs(name, action), "{} {:?}", name, action);
            match result {
                Ok(output) => prop_assert!(!output.is_error && ran.is_some(), "{output:?}"),
                Err(ToolCallError::RespondToModel(output)) => {
                    prop_assert!(output.is_error && ran.is_none(), "{output:?}");
                    prop_assert!(!output.model_text().to_lowercase().contains("forbidden"));
                }
                Err(fatal @ ToolCallError::Fatal(_)) => {
                    return Err(TestCaseError::fail(format!("{fatal}")));
                }
            }
            // The view lists what the caller may use.
            let listed = |view: &toolgate_core::Catalog| {
                let tools: Vec<bool> = ["notes_add", "notes_list", "ping"]
                    .into_iter()
                    .map(|tool| view.tool(tool).is_some())
                    .collect();
                let actions: Vec<String> = view
                    .tool("mail")
                    .and_then(|mail| {
                        mail.definition.input_schema["properties"]["action"]["enum"]
                            .as_array()
                            .cloned()
                    })
                    .unwrap_or_default()
                    .iter()
                    .filter_map(|action| action.as_str().map(str::to_owned))
                    .collect();
                (tools, actions)
            };
            let (tools, actions) = match toolbox.catalog_for(&authority) {
                Some(view) => listed(&view),
                None => toolbox.with_catalog(listed),
            };
            let expected_tools: Vec<bool> = [
                (Some("notes"), "notes_add"),
                (Some("notes"), "notes_list"),
                (None, "ping"),
            ]
            .into_iter()
            .map(|(group, tool)| model.may(group, tool, None))
            .collect();
            prop_assert_eq!(tools, expected_tools);
            let expected_actions: Vec<String> = ["search", "send"]
                .into_iter()
                .filter(|action| {
                    let member = format!("mail_{action}");
                    model.may(Some("mail"), "mail", Some((action, &member)))
                })
                .map(str::to_owned)
                .collect();
            prop_assert_eq!(actions, expected_actions);
            Ok(())
        },
    );
}
