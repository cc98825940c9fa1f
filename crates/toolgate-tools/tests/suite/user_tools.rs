//! The `js_tool_management` group and `user_tools`: an agent
//! writes a tool, loads it, calls it, changes it and deletes it; whatever
//! does not check is refused with what was wrong and nothing is stored;
//! owners keep to their own tools; and `js_eval` is there only when
//! enabled.

use std::sync::Arc;
use std::time::Duration;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use toolgate_store::{JsToolStore, MemoryStore, ToolOwner};
use toolgate_tools::{
    Authority, CallContext, JavaScriptConfig, JsEval, JsEvalTool, ToolCallError, ToolOutput,
    Toolbox, ToolboxOptions, UserJsTools,
};

async fn toolbox(store: &Arc<MemoryStore>, owner: &str, config: JavaScriptConfig) -> Arc<Toolbox> {
    let tools = UserJsTools::new(
        Arc::clone(store) as Arc<dyn JsToolStore>,
        ToolOwner::new(owner),
        &config,
        None,
    )
    .unwrap();
    let mut sources = vec![tools.management()];
    sources.extend(JsEvalTool::offered(&config));
    let (toolbox, report) = Toolbox::start(ToolboxOptions {
        sources,
        listed: vec![tools.tools()],
        javascript: config,
        ..ToolboxOptions::default()
    })
    .await
    .unwrap();
    assert!(report.manifest_errors.is_empty(), "{report:?}");
    tools.attach(&toolbox);
    toolbox
}

/// What the model reads of a call, refused or not.
async fn call(toolbox: &Toolbox, name: &str, arguments: Value) -> ToolOutput {
    match toolbox
        .call(name, arguments, &CallContext::new(Authority::everything()))
        .await
    {
        Ok(output) | Err(ToolCallError::RespondToModel(output)) => output,
        Err(fatal) => panic!("{name}: {fatal}"),
    }
}

fn double_tool() -> Value {
    json!({
        "name": "double",
        "description": "Doubles n",
        "parameters": {"type": "object", "properties": {"n": {"type": "number"}}, "required": ["n"]},
        "function": "run",
        "source": "function run({ n }) {\n  return n * 2;\n}\n"
    })
}

fn group_tools(toolbox: &Toolbox, group: &str) -> Vec<String> {
    toolbox
        .catalog()
        .group_tools(group)
        .map(|tool| tool.name.to_string())
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tool_is_created_loaded_called_updated_and_deleted() {
    let store = Arc::new(MemoryStore::new());
    let toolbox = toolbox(&store, "sage", JavaScriptConfig::default()).await;
    assert_eq!(
        group_tools(&toolbox, "js_tool_management"),
        [
            "create_js_tool",
            "list_user_tools",
            "update_js_tool",
            "delete_js_tool"
        ]
    );
    let group = toolbox
        .catalog()
        .group("js_tool_management")
        .unwrap()
        .clone();
    assert_eq!(
        (group.display_name.as_str(), group.description.as_str()),
        (
            "JS Tool Management",
            "Create, list, update, and delete user JavaScript tools"
        )
    );

    let created = call(&toolbox, "create_js_tool", double_tool()).await;
    assert_eq!(
        created,
        ToolOutput::text(
            "Created tool 'double' in group 'user_tools'. Call load_tool_group with group_name \
             'user_tools' to use it (where that group is loaded, it is available now)."
        )
    );
    toolbox.prepare("user_tools").await.unwrap();
    assert_eq!(group_tools(&toolbox, "user_tools"), ["double"]);
    assert_eq!(
        call(&toolbox, "double", json!({"n": 21})).await,
        ToolOutput::text("42")
    );
    assert_eq!(
        call(&toolbox, "double", json!({})).await.model_text(),
        "Invalid arguments for tool 'double': \"n\" is a required property."
    );

    let listed = call(&toolbox, "list_user_tools", json!({})).await;
    let listed = listed.structured.unwrap();
    assert_eq!(listed["group"], "user_tools");
    assert_eq!(listed["tools"][0]["name"], "double");
    assert_eq!(listed["tools"][0]["function"], "run");
    assert!(listed["tools"][0].get("source").is_none());
    let one = call(&toolbox, "list_user_tools", json!({"name": "double"})).await;
    assert_eq!(
        one.structured.unwrap()["tools"][0]["source"],
        "function run({ n }) {\n  return n * 2;\n}\n"
    );

    let updated = call(
        &toolbox,
        "update_js_tool",
        json!({"name": "double", "source": "const run = ({ n }) => ({ twice: n + n });"}),
    )
    .await;
    assert_eq!(
        updated,
        ToolOutput::text("Updated tool 'double'; calls run the new version now.")
    );
    assert_eq!(
        call(&toolbox, "double", json!({"n": 4})).await,
        ToolOutput::json(json!({"twice": 8}))
    );

    // A new schema is listed and checked at once.
    call(
        &toolbox,
        "update_js_tool",
        json!({"name": "double", "parameters": {"type": "object", "properties": {"n": {"type": "string"}}}}),
    )
    .await;
    assert_eq!(
        toolbox
            .catalog()
            .tool("double")
            .unwrap()
            .definition
            .input_schema["properties"]["n"]["type"],
        "string"
    );
    assert_eq!(
        call(&toolbox, "double", json!({"n": 4})).await.model_text(),
        "Invalid arguments for tool 'double': 'n': 4 is not of type \"string\"."
    );

    assert_eq!(
        call(&toolbox, "delete_js_tool", json!({"name": "double"})).await,
        ToolOutput::text("Deleted tool 'double'.")
    );
    assert_eq!(group_tools(&toolbox, "user_tools"), Vec::<String>::new());
    assert_eq!(
        call(&toolbox, "double", json!({"n": 1})).await,
        ToolOutput::error("Tool 'double' is not available for this agent.")
    );
    assert_eq!(
        call(&toolbox, "delete_js_tool", json!({"name": "double"})).await,
        ToolOutput::error(
            "Tool not deleted: you have no tool named 'double' (you have none; create_js_tool makes one)"
        )
    );
    assert_eq!(store.js_tools(&ToolOwner::new("sage")).await.unwrap(), []);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_change_is_announced_for_the_group() {
    let store = Arc::new(MemoryStore::new());
    let toolbox = toolbox(&store, "sage", JavaScriptConfig::default()).await;
    toolbox.prepare("user_tools").await.unwrap();
    let mut changes = toolbox.subscribe_changes();
    call(&toolbox, "create_js_tool", double_tool()).await;
    // The answer came once the group was relisted and announced.
    assert_eq!(
        changes.try_recv().unwrap(),
        toolgate_tools::CatalogChange::Group(toolgate_core::GroupId::new("user_tools").unwrap())
    );
    // A new source lists the same: nothing to announce.
    call(
        &toolbox,
        "update_js_tool",
        json!({"name": "double", "source": "function run() { return 0; }"}),
    )
    .await;
    assert!(changes.try_recv().is_err());
    call(&toolbox, "delete_js_tool", json!({"name": "double"})).await;
    assert_eq!(
        changes.try_recv().unwrap(),
        toolgate_tools::CatalogChange::Group(toolgate_core::GroupId::new("user_tools").unwrap())
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn what_does_not_check_is_refused_and_nothing_is_stored() {
    let store = Arc::new(MemoryStore::new());
    let toolbox = toolbox(&store, "sage", JavaScriptConfig::default()).await;
    let with = |changes: Value| {
        let mut tool = double_tool();
        for (key, value) in changes.as_object().unwrap() {
            tool[key] = value.clone();
        }
        tool
    };
    let cases = [
        (
            with(json!({"name": "two words"})),
            "Tool not created: tool name `two words` has the character ' ', outside MCP's A-Za-z0-9_./-",
        ),
        (
            with(json!({"name": "x".repeat(65)})),
            "Tool not created: tool name `xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx` must be 1-64 characters long, not 65",
        ),
        (
            with(json!({"name": "list_user_tools"})),
            "Tool not created: the name 'list_user_tools' is taken by a tool of group 'js_tool_management'",
        ),
        (
            with(json!({"name": "load_tool_group"})),
            "Tool not created: 'load_tool_group' is the name of a meta-tool",
        ),
        (
            with(json!({"description": "  "})),
            "Tool not created: `description` is blank: say what the tool does",
        ),
        (
            with(json!({"parameters": {"type": "array"}})),
            "Tool not created: `parameters`: input schema must have \"type\": \"object\", not \"array\"",
        ),
        (
            with(json!({"parameters": {"type": "object", "properties": {"n": {"type": "numbr"}}}})),
            "Tool not created: `parameters` is not a valid JSON Schema: \"numbr\" is not valid under any of the schemas listed in the 'anyOf' keyword",
        ),
        (
            with(json!({"source": "function run({ n }) {\n  return n * ;\n}"})),
            "Tool not created: `source` does not compile: SyntaxError: unexpected token in expression: ';' (user_tools/double.js, line 2)",
        ),
        (
            with(json!({"function": "walk"})),
            "Tool not created: `source` defines no function `walk` (user_tools/double.js); define it, or name the one to call in `function`",
        ),
        (
            with(json!({"source": "throw new Error('not now');\nfunction run() {}"})),
            "Tool not created: `source` throws when evaluated: Error: not now (user_tools/double.js, line 1)",
        ),
    ];
    for (tool, refusal) in cases {
        let output = call(&toolbox, "create_js_tool", tool.clone()).await;
        assert_eq!(output, ToolOutput::error(refusal), "{tool}");
    }
    assert_eq!(store.js_tools(&ToolOwner::new("sage")).await.unwrap(), []);

    // An update that does not check leaves the stored tool as it was.
    call(&toolbox, "create_js_tool", double_tool()).await;
    let stored = store.js_tools(&ToolOwner::new("sage")).await.unwrap();
    let output = call(
        &toolbox,
        "update_js_tool",
        json!({"name": "double", "source": "function walk() {}"}),
    )
    .await;
    assert_eq!(
        output,
        ToolOutput::error(
            "Tool not updated: `source` defines no function `run` (user_tools/double.js); define it, or name the one to call in `function`"
        )
    );
    assert_eq!(
        store.js_tools(&ToolOwner::new("sage")).await.unwrap(),
        stored
    );
    assert_eq!(
        call(&toolbox, "create_js_tool", double_tool()).await,
        ToolOutput::error(
            "Tool not created: you already have a tool named 'double'; update_js_tool changes it"
        )
    );
    assert_eq!(
        call(&toolbox, "update_js_tool", json!({"name": "triple"})).await,
        ToolOutput::error("Tool not updated: you have no tool named 'triple'; yours are: double")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn top_level_code_that_never_ends_is_refused_in_time() {
    let store = Arc::new(MemoryStore::new());
    let config = JavaScriptConfig {
        timeout: Duration::from_millis(200),
        ..JavaScriptConfig::default()
    };
    let toolbox = toolbox(&store, "sage", config).await;
    let mut tool = double_tool();
    tool["source"] = json!("for (;;) {}\nfunction run() {}");
    assert_eq!(
        call(&toolbox, "create_js_tool", tool).await,
        ToolOutput::error(
            "Tool not created: evaluating `source` (user_tools/double.js) timed out after 0.2 s: its top-level code must finish"
        )
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn two_owners_do_not_see_each_others_tools() {
    let store = Arc::new(MemoryStore::new());
    let sage = toolbox(&store, "sage", JavaScriptConfig::default()).await;
    let atlas = toolbox(&store, "atlas", JavaScriptConfig::default()).await;
    call(&sage, "create_js_tool", double_tool()).await;
    let mut atlas_tool = double_tool();
    atlas_tool["source"] = json!("function run({ n }) { return 'atlas ' + n; }");
    // The same name is free for another owner.
    call(&atlas, "create_js_tool", atlas_tool).await;

    sage.prepare("user_tools").await.unwrap();
    atlas.prepare("user_tools").await.unwrap();
    assert_eq!(
        call(&sage, "double", json!({"n": 2})).await,
        ToolOutput::text("4")
    );
    assert_eq!(
        call(&atlas, "double", json!({"n": 2})).await,
        ToolOutput::text("atlas 2")
    );
    call(&atlas, "delete_js_tool", json!({"name": "double"})).await;
    assert_eq!(group_tools(&atlas, "user_tools"), Vec::<String>::new());
    assert_eq!(
        call(&sage, "list_user_tools", json!({}))
            .await
            .structured
            .unwrap()["tools"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    assert_eq!(
        call(&sage, "double", json!({"n": 3})).await,
        ToolOutput::text("6")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn js_eval_is_off_by_default_and_on_when_enabled() {
    let store = Arc::new(MemoryStore::new());
    let off = toolbox(&store, "sage", JavaScriptConfig::default()).await;
    assert!(off.catalog().tool("js_eval").is_none());
    assert_eq!(
        call(&off, "js_eval", json!({"code": "1 + 1"})).await,
        ToolOutput::error("Tool 'js_eval' is not available for this agent.")
    );

    let config = JavaScriptConfig {
        eval: JsEval::On,
        timeout: Duration::from_millis(300),
        ..JavaScriptConfig::default()
    };
    let on = toolbox(&store, "sage", config).await;
    let tool = on.catalog().tool("js_eval").map(|tool| tool.group.cloned());
    assert_eq!(tool, Some(None), "a core tool");
    assert_eq!(
        call(
            &on,
            "js_eval",
            json!({"code": "const xs = [3, 1, 2];\nxs.sort()"})
        )
        .await,
        ToolOutput::text("[1,2,3]")
    );
    assert_eq!(
        call(&on, "js_eval", json!({"code": "({ answer: 42 })"})).await,
        ToolOutput::json(json!({"answer": 42}))
    );
    assert_eq!(
        call(&on, "js_eval", json!({"code": "let a = 1;\na.b.c"})).await,
        ToolOutput::error(
            "Tool 'js_eval' failed: TypeError: cannot read property 'c' of undefined (js_eval.js, line 2)"
        )
    );
    assert_eq!(
        call(&on, "js_eval", json!({"code": "while (true) {}"})).await,
        ToolOutput::error("Tool 'js_eval' (js_eval.js) timed out after 0.3 s.")
    );
}
