use pretty_assertions::assert_eq;
use toolgate_core::{Origin, ToolDefinition, ToolGroup};

use super::*;

#[test]
fn fnv1a_is_the_published_function() {
    assert_eq!(fnv1a(&[]), 0x811c_9dc5);
    assert_eq!(fnv1a(&["a"]), 0xe40c_292c);
    assert_eq!(fnv1a(&["foo", "bar"]), 0xbf9c_f968);
}

#[test]
fn sanitizing_keeps_what_mcp_allows() {
    assert_eq!(sanitize("PDF&URLTool"), "PDF_URLTool");
    assert_eq!(sanitize("fs/read.file-v2"), "fs/read.file-v2");
    assert_eq!(sanitize("naïve tool"), "na_ve_tool");
}

fn catalog_with(group: &str, tools: &[&str]) -> Catalog {
    let mut catalog = Catalog::new();
    let tools = tools
        .iter()
        .map(|name| {
            let definition = ToolDefinition::new(
                ToolName::new(*name).unwrap(),
                "x",
                serde_json::json!({"type": "object"}),
            )
            .unwrap();
            (definition, Origin::Builtin)
        })
        .collect();
    catalog
        .register_group_with_tools(
            ToolGroup::new(GroupId::new(group).unwrap(), "G", "g"),
            Origin::Builtin,
            tools,
        )
        .unwrap();
    catalog
}

#[test]
fn a_name_falls_back_in_order_and_the_hash_is_pinned() {
    let catalog = catalog_with("other", &["PDF_URLTool", "shared", "pdf__shared"]);
    let none = HashMap::new();
    let name = |original: &str| {
        exposed_name(&catalog, "pdf", original, &none, &[])
            .unwrap()
            .to_string()
    };
    assert_eq!(name("ok_name"), "ok_name");
    assert_eq!(name("Tool&More"), "Tool_More");
    // Taken by another group, sanitized or not: the hash suffix.
    assert_eq!(name("PDF&URLTool"), "PDF_URLTool_1c3e12ee");
    assert_eq!(name("shared"), "shared_793fb9a6");
    let long = "x".repeat(100);
    let exposed = name(&long);
    assert_eq!(exposed.len(), MAX_TOOL_NAME_LEN);
    assert_eq!(
        exposed,
        format!("{}_{:08x}", "x".repeat(55), fnv1a(&["pdf", "\0", &long]))
    );
}

#[test]
fn a_name_given_to_one_tool_is_not_given_to_another() {
    let catalog = Catalog::new();
    let mut taken = HashMap::new();
    taken.insert(ToolName::new("a_b").unwrap(), "a&b".to_owned());
    let exposed = exposed_name(&catalog, "g", "a b", &taken, &[]).unwrap();
    assert_eq!(
        exposed.as_str(),
        format!("a_b_{:08x}", fnv1a(&["g", "\0", "a b"]))
    );
    // The tool the name was given to keeps it.
    assert_eq!(
        exposed_name(&catalog, "g", "a&b", &taken, &[])
            .unwrap()
            .as_str(),
        "a_b"
    );
}

#[test]
fn a_rename_says_why() {
    let group = GroupId::new("pdf").unwrap();
    let renamed = |original: &str, exposed: &str| {
        RenamedTool::of(&group, original, &ToolName::new(exposed).unwrap())
            .map(|renamed| renamed.to_string())
    };
    assert_eq!(renamed("same", "same"), None);
    assert_eq!(
        renamed("PDF&URLTool", "PDF_URLTool").unwrap(),
        "tool \"PDF&URLTool\" of 'pdf' is exposed as 'PDF_URLTool': its name has the character '&', outside MCP's A-Za-z0-9_./-"
    );
    assert_eq!(
        renamed(&"y".repeat(70), "y_0").unwrap(),
        format!(
            "tool \"{}\" of 'pdf' is exposed as 'y_0': its name is 70 characters long; MCP allows 1-64",
            "y".repeat(70)
        )
    );
    assert_eq!(
        renamed("shared", "pdf__shared").unwrap(),
        "tool \"shared\" of 'pdf' is exposed as 'pdf__shared': its name is taken by another group's tool"
    );
}
