//! Reloading the manifests directories: changed files replace their
//! group's tools and scripts (tools that stay keep their place), a bad file
//! keeps its previous version and says why, new files add groups, deleted
//! ones take them away, and only real changes are announced.

use std::path::Path;
use std::sync::Arc;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tokio::sync::broadcast;
use toolgate_core::{GroupId, ManifestErrorReason};
use toolgate_tools::{
    Authority, CallContext, CatalogChange, GroupExposure, GroupSettings, ToolOutput, Toolbox,
    ToolboxOptions,
};

use super::calls::call;

fn write(dir: &Path, name: &str, text: &str) {
    std::fs::write(dir.join(name), text).unwrap();
}

/// A group manifest with a fixed description, so adding a tool changes the
/// group's tools but not how the group is offered.
fn mathx(tools: &[(&str, &str)]) -> String {
    let mut entries =
        vec![json!({"_meta": true, "display_name": "Math", "description": "Arithmetic"})];
    entries.extend(tools.iter().map(|(name, description)| {
        json!({"name": name, "description": description,
               "parameters": {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}}})
    }));
    Value::Array(entries).to_string()
}

const MATHX_JS: &str = "function mathx_add({a, b}) { return a + b; }\n\
                        function mathx_sub({a, b}) { return a - b; }\n\
                        function mathx_mul({a, b}) { return a * b; }\n";

async fn start(dir: &Path) -> Arc<Toolbox> {
    let (toolbox, report) = Toolbox::start(ToolboxOptions {
        manifest_dirs: vec![dir.to_path_buf()],
        ..ToolboxOptions::default()
    })
    .await
    .unwrap();
    assert!(report.manifest_errors.is_empty(), "{report:?}");
    toolbox
}

fn group_tools(toolbox: &Toolbox, group: &str) -> Vec<String> {
    toolbox.with_catalog(|catalog| {
        catalog
            .group_tools(group)
            .map(|tool| tool.name.to_string())
            .collect()
    })
}

/// The changes announced so far.
fn announced(changes: &mut broadcast::Receiver<CatalogChange>) -> Vec<CatalogChange> {
    std::iter::from_fn(|| changes.try_recv().ok()).collect()
}

fn group(id: &str) -> CatalogChange {
    CatalogChange::Group(GroupId::new(id).unwrap())
}

#[tokio::test(flavor = "multi_thread")]
async fn an_edited_script_runs_on_the_next_call_and_is_not_announced() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "mathx.json", &mathx(&[("mathx_add", "Adds")]));
    write(dir.path(), "mathx.js", MATHX_JS);
    let toolbox = start(dir.path()).await;
    let mut changes = toolbox.subscribe_changes();
    assert_eq!(
        call(&toolbox, "mathx_add", json!({"a": 2, "b": 3})).await,
        ToolOutput::text("5")
    );

    write(
        dir.path(),
        "mathx.js",
        "function mathx_add({a, b}) { return `${a} plus ${b}`; }\n",
    );
    let report = toolbox.reload_manifests();
    assert_eq!(report.changed_scripts, [dir.path().join("mathx.json")]);
    assert!(report.changed_groups.is_empty(), "{report:?}");
    assert_eq!(
        call(&toolbox, "mathx_add", json!({"a": 2, "b": 3})).await,
        ToolOutput::text("2 plus 3")
    );
    // The tool list is the same: nobody needs to list again.
    assert_eq!(announced(&mut changes), []);

    let again = toolbox.reload_manifests();
    assert!(again.is_unchanged(), "{again:?}");
    assert_eq!(again.to_string(), "manifests reloaded: nothing changed");
    assert_eq!(announced(&mut changes), []);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tool_added_to_a_manifest_is_appended_and_the_others_stay_put() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "mathx.json",
        &mathx(&[("mathx_add", "Adds"), ("mathx_sub", "Subtracts")]),
    );
    write(dir.path(), "mathx.js", MATHX_JS);
    let toolbox = start(dir.path()).await;
    let mut changes = toolbox.subscribe_changes();

    // Reordered, one description changed, one tool new.
    write(
        dir.path(),
        "mathx.json",
        &mathx(&[
            ("mathx_mul", "Multiplies"),
            ("mathx_sub", "Subtracts b from a"),
            ("mathx_add", "Adds"),
        ]),
    );
    let report = toolbox.reload_manifests();
    assert_eq!(
        report.changed_groups,
        [GroupId::new("mathx").unwrap()],
        "{report:?}"
    );
    assert_eq!(
        report.to_string(),
        "manifests reloaded: groups changed: mathx"
    );
    assert_eq!(
        group_tools(&toolbox, "mathx"),
        ["mathx_add", "mathx_sub", "mathx_mul"]
    );
    let sub = toolbox.with_catalog(|catalog| {
        catalog
            .tool("mathx_sub")
            .map(|tool| tool.definition.description.clone())
    });
    assert_eq!(sub.as_deref(), Some("Subtracts b from a"));
    assert_eq!(
        call(&toolbox, "mathx_mul", json!({"a": 6, "b": 7})).await,
        ToolOutput::text("42")
    );
    assert_eq!(announced(&mut changes), [group("mathx")]);

    // A tool taken out leaves; the others keep their order.
    write(
        dir.path(),
        "mathx.json",
        &mathx(&[("mathx_add", "Adds"), ("mathx_mul", "Multiplies")]),
    );
    toolbox.reload_manifests();
    assert_eq!(group_tools(&toolbox, "mathx"), ["mathx_add", "mathx_mul"]);
    let refused = toolbox
        .call(
            "mathx_sub",
            json!({"a": 1, "b": 1}),
            &CallContext::new(Authority::everything()),
        )
        .await
        .unwrap_err();
    assert!(refused.to_string().contains("mathx_sub"), "{refused}");
    assert_eq!(announced(&mut changes), [group("mathx")]);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_broken_manifest_keeps_its_previous_version_and_says_why() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "mathx.json", &mathx(&[("mathx_add", "Adds")]));
    write(dir.path(), "mathx.js", MATHX_JS);
    let toolbox = start(dir.path()).await;
    let mut changes = toolbox.subscribe_changes();

    write(dir.path(), "mathx.json", r#"[{"name": "mathx_add", "#);
    write(
        dir.path(),
        "mathx.js",
        "function mathx_add() { return 'new'; }\n",
    );
    let report = toolbox.reload_manifests();
    assert_eq!(report.errors.len(), 1, "{report:?}");
    assert_eq!(report.errors[0].path, dir.path().join("mathx.json"));
    assert!(
        matches!(report.errors[0].reason, ManifestErrorReason::Json(_)),
        "{report:?}"
    );
    assert!(report.is_unchanged(), "{report:?}");
    assert_eq!(
        report.to_string(),
        "manifests reloaded: nothing changed; 1 file not loaded"
    );
    // The previous version, script included, is still what runs.
    assert_eq!(group_tools(&toolbox, "mathx"), ["mathx_add"]);
    assert_eq!(
        call(&toolbox, "mathx_add", json!({"a": 1, "b": 2})).await,
        ToolOutput::text("3")
    );
    assert_eq!(announced(&mut changes), []);

    // A script that cannot be read keeps the previous version too.
    write(dir.path(), "mathx.json", &mathx(&[("mathx_add", "Adds")]));
    std::fs::remove_file(dir.path().join("mathx.js")).unwrap();
    std::fs::create_dir(dir.path().join("mathx.js")).unwrap();
    let report = toolbox.reload_manifests();
    assert_eq!(report.errors.len(), 1, "{report:?}");
    assert_eq!(report.errors[0].path, dir.path().join("mathx.js"));
    assert_eq!(
        call(&toolbox, "mathx_add", json!({"a": 1, "b": 2})).await,
        ToolOutput::text("3")
    );

    // A script that does not compile keeps the previous version too, and
    // the report says where it fails.
    std::fs::remove_dir(dir.path().join("mathx.js")).unwrap();
    write(
        dir.path(),
        "mathx.js",
        "function mathx_add() {\n  return 'new' +;\n}\n",
    );
    let report = toolbox.reload_manifests();
    assert_eq!(report.errors.len(), 1, "{report:?}");
    assert_eq!(report.errors[0].path, dir.path().join("mathx.js"));
    assert!(
        matches!(&report.errors[0].reason, ManifestErrorReason::Script(reason)
            if reason.starts_with("does not load: SyntaxError") && reason.ends_with("(line 2)")),
        "{report:?}"
    );
    assert_eq!(
        call(&toolbox, "mathx_add", json!({"a": 1, "b": 2})).await,
        ToolOutput::text("3")
    );

    // Fixed: the new version loads.
    write(
        dir.path(),
        "mathx.js",
        "function mathx_add() { return 'new'; }\n",
    );
    let report = toolbox.reload_manifests();
    assert!(report.errors.is_empty(), "{report:?}");
    assert_eq!(
        call(&toolbox, "mathx_add", json!({"a": 1, "b": 2})).await,
        ToolOutput::text("new")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_new_file_adds_its_group_and_a_deleted_one_takes_it_away() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "mathx.json", &mathx(&[("mathx_add", "Adds")]));
    write(dir.path(), "mathx.js", MATHX_JS);
    let toolbox = start(dir.path()).await;
    let mut changes = toolbox.subscribe_changes();

    write(
        dir.path(),
        "textx.json",
        r#"[{"name": "textx_upper", "parameters": {"type": "object", "properties": {"s": {"type": "string"}}}}]"#,
    );
    write(
        dir.path(),
        "textx.js",
        "function textx_upper({s}) { return s.toUpperCase(); }\n",
    );
    let report = toolbox.reload_manifests();
    assert_eq!(report.added_groups, [GroupId::new("textx").unwrap()]);
    assert_eq!(
        call(&toolbox, "textx_upper", json!({"s": "hi"})).await,
        ToolOutput::text("HI")
    );
    // Every session hears of it: `load_tool_group` lists the groups.
    assert_eq!(
        announced(&mut changes),
        [group("textx"), CatalogChange::CoreTools]
    );

    std::fs::remove_file(dir.path().join("textx.json")).unwrap();
    let report = toolbox.reload_manifests();
    assert_eq!(report.removed_groups, [GroupId::new("textx").unwrap()]);
    assert_eq!(group_tools(&toolbox, "textx"), Vec::<String>::new());
    let offered: Vec<String> = toolbox.with_catalog(|catalog| {
        catalog
            .available_groups()
            .map(|group| group.id.to_string())
            .collect()
    });
    assert_eq!(offered, ["mathx"]);
    assert!(
        toolbox
            .call(
                "textx_upper",
                json!({"s": "hi"}),
                &CallContext::new(Authority::everything())
            )
            .await
            .is_err()
    );
    assert_eq!(
        announced(&mut changes),
        [group("textx"), CatalogChange::CoreTools]
    );

    // Back again.
    write(
        dir.path(),
        "textx.json",
        r#"[{"name": "textx_upper", "parameters": {"type": "object", "properties": {"s": {"type": "string"}}}}]"#,
    );
    let report = toolbox.reload_manifests();
    assert_eq!(report.added_groups, [GroupId::new("textx").unwrap()]);
    assert_eq!(
        call(&toolbox, "textx_upper", json!({"s": "again"})).await,
        ToolOutput::text("AGAIN")
    );
    // The first group never moved.
    assert_eq!(group_tools(&toolbox, "mathx"), ["mathx_add"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_core_tool_file_changes_in_place_and_every_session_hears_of_it() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "a_first.json",
        r#"{"name": "first", "description": "One"}"#,
    );
    write(
        dir.path(),
        "b_second.json",
        r#"{"name": "second", "description": "Two"}"#,
    );
    let toolbox = start(dir.path()).await;
    let mut changes = toolbox.subscribe_changes();
    let core = |toolbox: &Toolbox| -> Vec<(String, String)> {
        toolbox.with_catalog(|catalog| {
            catalog
                .core_tools()
                .map(|tool| (tool.name.to_string(), tool.description.clone()))
                .filter(|(name, _)| name != "load_tool_group")
                .collect()
        })
    };

    write(
        dir.path(),
        "a_first.json",
        r#"{"name": "first", "description": "Uno"}"#,
    );
    let report = toolbox.reload_manifests();
    assert_eq!(report.changed_core_tools.len(), 1, "{report:?}");
    assert_eq!(
        core(&toolbox),
        [
            ("first".to_owned(), "Uno".to_owned()),
            ("second".to_owned(), "Two".to_owned())
        ]
    );
    assert_eq!(announced(&mut changes), [CatalogChange::CoreTools]);

    std::fs::remove_file(dir.path().join("a_first.json")).unwrap();
    toolbox.reload_manifests();
    assert_eq!(core(&toolbox), [("second".to_owned(), "Two".to_owned())]);
    assert_eq!(announced(&mut changes), [CatalogChange::CoreTools]);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_polymorphic_group_is_consolidated_again_with_its_new_tools() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "mathx.json",
        &mathx(&[("mathx_add", "Adds"), ("mathx_sub", "Subtracts")]),
    );
    write(dir.path(), "mathx.js", MATHX_JS);
    let mut groups = std::collections::BTreeMap::new();
    groups.insert(
        "mathx".to_owned(),
        GroupSettings {
            expose: Some(GroupExposure::Polymorphic),
            ..GroupSettings::default()
        },
    );
    let (toolbox, _) = Toolbox::start(ToolboxOptions {
        manifest_dirs: vec![dir.path().to_path_buf()],
        groups,
        ..ToolboxOptions::default()
    })
    .await
    .unwrap();
    assert_eq!(group_tools(&toolbox, "mathx"), ["mathx"]);

    write(
        dir.path(),
        "mathx.json",
        &mathx(&[
            ("mathx_add", "Adds"),
            ("mathx_sub", "Subtracts"),
            ("mathx_mul", "Multiplies"),
        ]),
    );
    let report = toolbox.reload_manifests();
    assert_eq!(report.changed_groups.len(), 1, "{report:?}");
    assert_eq!(group_tools(&toolbox, "mathx"), ["mathx"]);
    let product = call(&toolbox, "mathx", json!({"action": "mul", "a": 6, "b": 7})).await;
    assert_eq!(
        product.structured,
        Some(json!({"type": "result", "action": "mul", "result": 42}))
    );
    // An old tool name is still an alias of its action.
    let sum = call(&toolbox, "mathx_add", json!({"a": 1, "b": 2})).await;
    assert_eq!(
        sum.structured,
        Some(json!({"type": "result", "action": "add", "result": 3}))
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_group_file_that_becomes_one_tool_and_back_is_followed() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "mathx.json", &mathx(&[("mathx_add", "Adds")]));
    write(dir.path(), "mathx.js", MATHX_JS);
    let toolbox = start(dir.path()).await;

    write(
        dir.path(),
        "mathx.json",
        r#"{"name": "mathx_mul", "parameters": {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}}}"#,
    );
    let report = toolbox.reload_manifests();
    assert_eq!(report.removed_groups, [GroupId::new("mathx").unwrap()]);
    assert_eq!(report.changed_core_tools.len(), 1, "{report:?}");
    assert_eq!(group_tools(&toolbox, "mathx"), Vec::<String>::new());
    assert_eq!(
        call(&toolbox, "mathx_mul", json!({"a": 2, "b": 4})).await,
        ToolOutput::text("8")
    );

    write(dir.path(), "mathx.json", &mathx(&[("mathx_add", "Adds")]));
    let report = toolbox.reload_manifests();
    assert_eq!(report.added_groups, [GroupId::new("mathx").unwrap()]);
    assert!(toolbox.with_catalog(|catalog| catalog.tool("mathx_mul").is_none()));
    assert_eq!(
        call(&toolbox, "mathx_add", json!({"a": 2, "b": 4})).await,
        ToolOutput::text("6")
    );
}
