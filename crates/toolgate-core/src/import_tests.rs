use std::fs;

use pretty_assertions::assert_eq;

use super::*;

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
            errors: vec![]
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
            r#"{"name": "requestFirst Aid Assistance", "parameters": {}, "group": "g"}"#,
            "\n",
            "{broken\n",
            r#"{"name": "array_schema", "parameters": {"type": "array"}, "group": "g"}"#,
            "\n",
            r#"{"name": "core_one", "description": "no group"}"#,
            "\n",
        ),
        None,
    );
    let path = dir.path().join("tools.jsonl");
    let mut catalog = Catalog::new();
    let report = import_jsonl(&mut catalog, &path).unwrap();
    assert_eq!((report.tools, report.groups), (2, 1));
    let errors: Vec<String> = report.errors.iter().map(ToString::to_string).collect();
    let at = |line: usize| format!("{}:{line}: ", path.display());
    assert_eq!(errors.len(), 3);
    assert_eq!(
        errors[0],
        format!(
            "{}tool name `requestFirst Aid Assistance` has the character ' ', outside MCP's A-Za-z0-9_./-",
            at(2)
        )
    );
    assert!(errors[1].starts_with(&at(3)), "{}", errors[1]);
    assert_eq!(
        errors[2],
        format!(
            "{}tool `array_schema`: input schema must have \"type\": \"object\", not \"array\"",
            at(4)
        )
    );
    assert!(catalog.core_tools().any(|t| t.name.as_str() == "core_one"));
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
