use std::fs;

use pretty_assertions::assert_eq;

use super::*;
use crate::name::{MAX_TOOL_NAME_LEN, fnv1a};

fn dataset(tools: &str, groups: Option<&str>) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("tools.jsonl"), tools).unwrap();
    if let Some(groups) = groups {
        fs::write(dir.path().join("groups.jsonl"), groups).unwrap();
    }
    dir
}

#[test]
fn imports_tools_into_groups_with_descriptions_from_groups_jsonl() {
    let dir = dataset(
        concat!(
            r#"{"name": "list_issues", "description": "List issues", "parameters": {"type": "object", "properties": {"repo": {"type": "string"}}}, "group": "issues", "extra": 1}"#,
            "\n",
            r#"{"name": "get_me", "description": "Me", "parameters": {"type": "object"}, "group": "context"}"#,
            "\n",
            "\n",
            r#"{"name": "issue_write", "description": "Write", "parameters": {"type": "object"}, "group": "issues"}"#,
            "\n",
        ),
        Some(concat!(
            r#"{"group": "context", "description": "", "n_tools": 1}"#,
            "\n",
            r#"{"group": "issues", "description": "GitHub Issues related tools", "n_tools": 2}"#,
            "\n",
        )),
    );
    let mut catalog = Catalog::new();
    let report = import_jsonl(&mut catalog, &dir.path().join("tools.jsonl")).unwrap();
    assert_eq!(
        report,
        ImportReport {
            tools: 3,
            groups: 2,
            ..ImportReport::default()
        }
    );
    let groups: Vec<(&str, &str, &str)> = catalog
        .groups()
        .map(|g| {
            (
                g.id.as_str(),
                g.display_name.as_str(),
                g.description.as_str(),
            )
        })
        .collect();
    assert_eq!(
        groups,
        [
            ("context", "Context", "Tools: get_me"),
            ("issues", "Issues", "GitHub Issues related tools")
        ]
    );
    let issues: Vec<&str> = catalog
        .group_tools("issues")
        .map(|t| t.name.as_str())
        .collect();
    assert_eq!(issues, ["list_issues", "issue_write"]);
}

#[test]
fn bad_lines_are_reported_with_their_number_and_the_rest_loads() {
    let dir = dataset(
        concat!(
            r#"{"name": "ok_tool", "description": "fine", "parameters": {"type": "object"}, "group": "g"}"#,
            "\n",
            r#"{"name": "bad&schema", "parameters": {"type": "string"}, "group": "g"}"#,
            "\n",
            "{broken\n",
            r#"{"name": "array_schema", "parameters": {"type": "array"}, "group": "g"}"#,
            "\n",
            r#"{"name": "core_one", "description": "no group"}"#,
            "\n",
        ),
        Some("{\"group\": \" \"}\n"),
    );
    let path = dir.path().join("tools.jsonl");
    let mut catalog = Catalog::new();
    let report = import_jsonl(&mut catalog, &path).unwrap();
    assert_eq!((report.tools, report.groups), (2, 1));
    assert_eq!(report.renamed_tools, []);
    let errors: Vec<String> = report.errors.iter().map(ToString::to_string).collect();
    let at = |line: usize| format!("{}:{line}: ", path.display());
    assert_eq!(errors.len(), 4);
    assert_eq!(
        errors[0],
        format!(
            "{}:1: group id ` ` must be 1-128 characters with no leading or trailing white space",
            dir.path().join("groups.jsonl").display()
        )
    );
    // Its schema is refused: it is skipped, and takes no name.
    assert_eq!(
        errors[1],
        format!(
            "{}tool `bad&schema`: input schema must have \"type\": \"object\", not \"string\"",
            at(2)
        )
    );
    assert!(errors[2].starts_with(&at(3)), "{}", errors[2]);
    assert_eq!(
        errors[3],
        format!(
            "{}tool `array_schema`: input schema must have \"type\": \"object\", not \"array\"",
            at(4)
        )
    );
    assert!(catalog.core_tools().any(|t| t.name.as_str() == "core_one"));
}

/// A tool line of `group`.
fn tool_line(name: &str, group: &str) -> String {
    serde_json::json!({"name": name, "description": "d", "parameters": {"type": "object"}, "group": group})
        .to_string()
        + "\n"
}

#[test]
fn a_refused_tool_name_loads_under_the_name_the_gateway_would_expose() {
    let long = format!("{}&more", "x".repeat(70));
    let lines = [
        tool_line("PDF&URLTool", "pdf"),
        tool_line(&long, "pdf"),
        // Sanitized, both are `a_b`, which a valid name holds: hashed.
        tool_line("a b", "pdf"),
        tool_line("a_b", "pdf"),
        // Sanitized, both are `c_d`: the first by its text gets it.
        tool_line("c&d", "other"),
        tool_line("c d", "other"),
        tool_line("requestFirst Aid Assistance", "other"),
    ];
    let dir = dataset(&lines.concat(), None);
    let path = dir.path().join("tools.jsonl");
    let mut catalog = Catalog::new();
    let report = import_jsonl(&mut catalog, &path).unwrap();
    assert_eq!(report.errors, []);
    assert_eq!((report.tools, report.groups), (7, 2));
    let hashed = |prefix: &str, group: &str, original: &str| {
        format!("{prefix}_{:08x}", fnv1a(&[group, "\0", original]))
    };
    let renamed = |line: usize, original: &str, loaded: &str| ImportRename {
        path: path.clone(),
        line,
        original: original.to_owned(),
        loaded: ToolName::new(loaded).unwrap(),
        reason: ToolName::new(original).unwrap_err(),
    };
    let long_loaded = hashed(&"x".repeat(55), "pdf", &long);
    assert_eq!(long_loaded.len(), MAX_TOOL_NAME_LEN);
    assert_eq!(
        report.renamed_tools,
        [
            renamed(1, "PDF&URLTool", "PDF_URLTool"),
            renamed(2, &long, &long_loaded),
            renamed(3, "a b", "a_b_f78ff054"),
            renamed(5, "c&d", &hashed("c_d", "other", "c&d")),
            renamed(6, "c d", "c_d"),
            renamed(
                7,
                "requestFirst Aid Assistance",
                "requestFirst_Aid_Assistance"
            ),
        ]
    );
    assert_eq!(hashed("a_b", "pdf", "a b"), "a_b_f78ff054");
    assert_eq!(
        report.renamed_tools[0].to_string(),
        format!(
            "{}:1: loaded as `PDF_URLTool`: tool name `PDF&URLTool` has the character '&', outside MCP's A-Za-z0-9_./-",
            path.display()
        )
    );
    let members = |group: &str| -> Vec<String> {
        catalog
            .group_tools(group)
            .map(|tool| tool.name.to_string())
            .collect()
    };
    assert_eq!(
        members("pdf"),
        ["PDF_URLTool", long_loaded.as_str(), "a_b_f78ff054", "a_b"]
    );
    assert_eq!(
        members("other"),
        [
            hashed("c_d", "other", "c&d").as_str(),
            "c_d",
            "requestFirst_Aid_Assistance"
        ]
    );

    // The names do not depend on the order of the lines.
    let reversed: Vec<String> = lines.iter().rev().cloned().collect();
    let dir = dataset(&reversed.concat(), None);
    let again = import_jsonl(&mut Catalog::new(), &dir.path().join("tools.jsonl")).unwrap();
    assert_eq!(loaded_names(&again), loaded_names(&report));
}

/// Each renamed tool's original and loaded name, by original.
fn loaded_names(report: &ImportReport) -> Vec<(&str, &str)> {
    let mut names: Vec<(&str, &str)> = report
        .renamed_tools
        .iter()
        .map(|renamed| (renamed.original.as_str(), renamed.loaded.as_str()))
        .collect();
    names.sort_unstable();
    names
}

#[test]
fn a_refused_name_never_takes_a_name_the_catalog_holds() {
    let mut catalog = Catalog::new();
    let first = dataset(&tool_line("PDF_URLTool", "one"), None);
    import_jsonl(&mut catalog, &first.path().join("tools.jsonl")).unwrap();
    let second = dataset(&tool_line("PDF&URLTool", "two"), None);
    let report = import_jsonl(&mut catalog, &second.path().join("tools.jsonl")).unwrap();
    assert_eq!(report.errors, []);
    let loaded: Vec<String> = report
        .renamed_tools
        .iter()
        .map(|renamed| renamed.loaded.to_string())
        .collect();
    assert_eq!(
        loaded,
        [format!(
            "PDF_URLTool_{:08x}",
            fnv1a(&["two", "\0", "PDF&URLTool"])
        )]
    );
}

#[test]
fn a_refused_group_id_loads_under_a_sanitized_one() {
    let long = "g".repeat(130);
    let tools = [
        tool_line("tab_tool", "Public\tHealth"),
        tool_line("long_tool", &long),
        tool_line("padded_tool", "Mail "),
        tool_line("mail_tool", "Mail"),
    ]
    .concat();
    let dir = dataset(
        &tools,
        Some("{\"group\": \"Public\\tHealth\", \"description\": \"Health tools\"}\n"),
    );
    let path = dir.path().join("tools.jsonl");
    let mut catalog = Catalog::new();
    let report = import_jsonl(&mut catalog, &path).unwrap();
    assert_eq!(report.errors, []);
    assert_eq!((report.tools, report.groups), (4, 4));
    let long_loaded = format!("{}_{:08x}", "g".repeat(119), fnv1a(&[&long]));
    let mail_loaded = format!("Mail_{:08x}", fnv1a(&["Mail "]));
    let renamed = |path: &Path, line: usize, original: &str, loaded: &str| ImportRename {
        path: path.to_path_buf(),
        line,
        original: original.to_owned(),
        loaded: GroupId::new(loaded).unwrap(),
        reason: GroupId::new(original).unwrap_err(),
    };
    assert_eq!(
        report.renamed_groups,
        [
            renamed(
                &dir.path().join("groups.jsonl"),
                1,
                "Public\tHealth",
                "Public Health"
            ),
            renamed(&path, 2, &long, &long_loaded),
            // `Mail` is another group's own id.
            renamed(&path, 3, "Mail ", &mail_loaded),
        ]
    );
    let groups: Vec<(String, Vec<String>)> = catalog
        .groups()
        .map(|group| {
            let tools = catalog
                .group_tools(group.id.as_str())
                .map(|tool| tool.name.to_string())
                .collect();
            (group.id.to_string(), tools)
        })
        .collect();
    let group = |id: &str, tool: &str| (id.to_owned(), vec![tool.to_owned()]);
    assert_eq!(
        groups,
        [
            group("Public Health", "tab_tool"),
            group(&long_loaded, "long_tool"),
            group(&mail_loaded, "padded_tool"),
            group("Mail", "mail_tool"),
        ]
    );
    assert_eq!(
        catalog.group("Public Health").unwrap().description,
        "Health tools"
    );
}

#[test]
fn a_missing_tools_file_is_an_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tools.jsonl");
    let error = import_jsonl(&mut Catalog::new(), &path).unwrap_err();
    assert!(
        error
            .to_string()
            .starts_with(&format!("{}: ", path.display())),
        "{error}"
    );
}
