use std::fs;

use pretty_assertions::assert_eq;
use serde_json::json;

use super::*;

fn write(dir: &Path, name: &str, value: &str) {
    fs::write(dir.join(name), value).unwrap();
}

fn group_of(manifest: Manifest) -> (ToolGroup, Vec<ManifestTool>) {
    match manifest {
        Manifest::Group { group, tools } => (group, tools),
        Manifest::CoreTool(tool) => panic!("expected a group, got {tool:?}"),
    }
}

/// The `_meta` entry supplies group metadata and is not a tool.
#[test]
fn a_meta_entry_is_group_metadata_not_a_tool() {
    let text = json!([
        {"_meta": true, "display_name": "Google Gmail", "description": "Email tools"},
        {"name": "gmail_search", "description": "Search", "function": "gmailSearch",
         "parameters": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}}
    ])
    .to_string();
    let (group, tools) = group_of(parse_manifest("google_gmail", &text).unwrap());
    assert_eq!(
        group,
        ToolGroup::new(
            GroupId::new("google_gmail").unwrap(),
            "Google Gmail",
            "Email tools"
        )
    );
    assert_eq!(tools.len(), 1);
    assert_eq!(tools[0].definition.name.as_str(), "gmail_search");
    assert_eq!(tools[0].function.as_deref(), Some("gmailSearch"));
}

/// Without `_meta`, the display name and description are generated.
#[test]
fn without_meta_the_display_name_and_description_are_generated() {
    let text = json!([
        {"name": "tool1", "description": "Tool 1", "function": "fn1"},
        {"name": "tool2", "description": "Tool 2", "function": "fn2"}
    ])
    .to_string();
    let (group, tools) = group_of(parse_manifest("my_tools", &text).unwrap());
    assert_eq!(tools.len(), 2);
    assert_eq!(group.display_name, "My Tools");
    assert_eq!(group.description, "Tools: tool1, tool2");
}

#[test]
fn a_meta_entry_with_fields_missing_falls_back_field_by_field() {
    let text = r#"[{"_meta": true, "description": "Only a description"}, {"name": "t"}]"#;
    let (group, _) = group_of(parse_manifest("js_tool_management", text).unwrap());
    assert_eq!(group.display_name, "JS Tool Management");
    assert_eq!(group.description, "Only a description");
}

#[test]
fn a_meta_only_manifest_is_a_group_with_no_tools() {
    let text = r#"[{"_meta": true, "display_name": "Empty", "description": "Nothing yet"}]"#;
    let (group, tools) = group_of(parse_manifest("empty", text).unwrap());
    assert_eq!(group.display_name, "Empty");
    assert!(tools.is_empty());
}

#[test]
fn an_object_file_is_a_core_tool_with_its_schema_timeout_and_annotations() {
    let text = json!({
        "name": "get_current_time", "description": "Now", "function": "getCurrentTime",
        "parameters": {"type": "object", "properties": {"timezone": {"type": "string"}}},
        "timeout_seconds": 5, "annotations": {"readOnlyHint": true}
    })
    .to_string();
    let Manifest::CoreTool(tool) = parse_manifest("get_current_time", &text).unwrap() else {
        panic!("expected a core tool");
    };
    assert_eq!(tool.definition.timeout, Some(Duration::from_secs(5)));
    assert_eq!(
        tool.definition.annotations.unwrap().read_only_hint,
        Some(true)
    );
    assert_eq!(
        tool.definition.input_schema["properties"]["timezone"]["type"],
        "string"
    );
}

#[test]
fn bad_manifests_name_the_reason() {
    let cases = [
        (
            "{",
            "invalid JSON: EOF while parsing an object at line 1 column 1",
        ),
        (
            "42",
            "a manifest must hold one tool object or an array of tools, not a number",
        ),
        (r#"[{"description": "no name"}]"#, "entry 0: missing `name`"),
        (
            r#"[{"name": "bad name"}]"#,
            "entry 0: tool name `bad name` has the character ' ', outside MCP's A-Za-z0-9_./-",
        ),
        (
            r#"[{"name": "a"}, {"name": "a"}]"#,
            "entry 1: duplicate tool name `a`",
        ),
        (
            r#"[{"name": "a", "parameters": {"type": "array"}}]"#,
            "entry 0: tool `a`: input schema must have \"type\": \"object\", not \"array\"",
        ),
        (
            r#"[{"name": "a", "paramters": {}}]"#,
            "entry 0: unknown field `paramters`, expected one of `name`, `description`, `inputSchema`, `input_schema`, `parameters`, `function`, `timeout_seconds`, `annotations`",
        ),
        (
            r#"[{"name": "a"}, {"_meta": true}]"#,
            "entry 1: a `_meta` entry must be the first element",
        ),
        (r#"[{"_meta": false}]"#, "entry 0: `_meta` must be true"),
        (r#"[7]"#, "entry 0: a tool must be an object, not a number"),
        (
            r#"{"_meta": true}"#,
            "entry 0: a `_meta` entry belongs in a group array, not alone",
        ),
    ];
    for (text, reason) in cases {
        let error = parse_manifest("g", text).unwrap_err();
        assert_eq!(error.to_string(), reason, "for {text}");
    }
}

#[test]
fn a_directory_loads_every_good_file_and_reports_each_bad_one() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "get_current_time.json",
        r#"{"name": "get_current_time", "description": "Now"}"#,
    );
    write(
        dir.path(),
        "pdf.json",
        r#"[{"_meta": true, "display_name": "PDF Tools", "description": "PDFs"}, {"name": "pdf_info"}]"#,
    );
    write(dir.path(), "broken.json", "[{");
    write(
        dir.path(),
        "shadow.json",
        r#"[{"name": "pdf_info"}, {"name": "other"}]"#,
    );
    write(dir.path(), "notes.txt", "ignored: not a manifest");
    fs::create_dir(dir.path().join("nested.json")).unwrap();

    let mut catalog = Catalog::new();
    let missing = dir.path().join("missing");
    let report = load_manifest_dirs(&mut catalog, &[dir.path().to_path_buf(), missing.clone()]);

    let loaded: Vec<_> = report
        .loaded
        .iter()
        .map(|p| p.file_name().unwrap().to_str().unwrap())
        .collect();
    assert_eq!(loaded, ["get_current_time.json", "pdf.json"]);
    let errors: Vec<String> = report.errors.iter().map(ToString::to_string).collect();
    let broken = dir.path().join("broken.json");
    let clash = dir.path().join("shadow.json");
    let pdf = dir.path().join("pdf.json");
    assert_eq!(errors.len(), 3, "{errors:#?}");
    assert!(
        errors[0].starts_with(&format!("{}: invalid JSON", broken.display())),
        "{}",
        errors[0]
    );
    assert_eq!(
        errors[1],
        format!(
            "{}: tool `pdf_info` from manifest {} is already registered by manifest {}",
            clash.display(),
            clash.display(),
            pdf.display()
        )
    );
    assert!(
        errors[2].starts_with(&format!("{}: cannot read", missing.display())),
        "{}",
        errors[2]
    );

    // The clashing file left nothing behind.
    assert!(catalog.group("shadow").is_none());
    assert!(catalog.tool("other").is_none());
    assert_eq!(catalog.group_tools("pdf").count(), 1);
    assert!(
        catalog
            .core_tools()
            .any(|tool| tool.name.as_str() == "get_current_time")
    );
    let origin = catalog.tool("get_current_time").unwrap().origin.clone();
    assert_eq!(
        origin,
        Origin::Manifest {
            path: dir.path().join("get_current_time.json"),
            function: None
        }
    );
}

#[test]
fn a_manifest_group_colliding_with_a_builtin_group_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "config.json", r#"[{"name": "js_get_config"}]"#);
    let mut catalog = Catalog::new();
    let builtin = ToolGroup::new(GroupId::new("config").unwrap(), "Configuration", "Settings");
    catalog.register_group(builtin, Origin::Builtin).unwrap();
    let report = load_manifest_dirs(&mut catalog, &[dir.path()]);
    let path = dir.path().join("config.json");
    assert_eq!(
        report
            .errors
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>(),
        [format!(
            "{}: tool group `config` from manifest {} is already registered by the built-in tools",
            path.display(),
            path.display()
        )]
    );
    assert!(catalog.tool("js_get_config").is_none());
}

#[cfg(unix)]
#[test]
fn unreadable_entries_and_symlink_loops_are_reported_and_the_rest_loads() {
    use std::os::unix::fs::symlink;
    let dir = tempfile::tempdir().unwrap();
    let tools = dir.path().join("tools");
    fs::create_dir(&tools).unwrap();
    write(&tools, "good.json", r#"{"name": "good_tool"}"#);
    // A loop of two links, a link to nothing, a pipe.
    symlink("b.json", tools.join("a.json")).unwrap();
    symlink("a.json", tools.join("b.json")).unwrap();
    symlink("missing.json", tools.join("gone.json")).unwrap();
    let made = std::process::Command::new("mkfifo")
        .arg(tools.join("pipe.json"))
        .status()
        .unwrap();
    assert!(made.success(), "mkfifo failed");
    // Directory links back up the tree: directories, so not manifests, and
    // nothing walks into them.
    symlink("..", tools.join("parent.json")).unwrap();
    symlink(".", tools.join("up")).unwrap();
    // A manifest directory that is itself a link loop.
    let looped = dir.path().join("looped");
    symlink("looped", &looped).unwrap();

    let mut catalog = Catalog::new();
    let report = load_manifest_dirs(&mut catalog, &[tools.clone(), looped.clone()]);

    assert_eq!(report.loaded, [tools.join("good.json")]);
    assert!(catalog.tool("good_tool").is_some());
    let errors: Vec<String> = report.errors.iter().map(ToString::to_string).collect();
    let at = |name: &str| tools.join(name).display().to_string();
    let loop_reason = fs::metadata(tools.join("a.json")).unwrap_err();
    assert_eq!(
        errors,
        [
            format!("{}: cannot read: {loop_reason}", at("a.json")),
            format!("{}: cannot read: {loop_reason}", at("b.json")),
            format!(
                "{}: cannot read: a symbolic link to nothing (its target does not exist)",
                at("gone.json")
            ),
            format!(
                "{}: not a regular file (a named pipe, socket or device); not opened",
                at("pipe.json")
            ),
            format!("{}: cannot read: {loop_reason}", looped.display()),
        ]
    );
    assert!(
        errors[0].contains("Too many levels of symbolic links"),
        "{}",
        errors[0]
    );
}

#[test]
fn a_scan_reads_every_manifest_in_name_order_and_registers_nothing() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "b_broken.json", "[");
    write(dir.path(), "a_tool.json", r#"{"name": "a_tool"}"#);
    write(dir.path(), "notes.txt", "not a manifest");
    let files = scan_manifest_dir(dir.path()).unwrap();
    let paths: Vec<&Path> = files.iter().map(|file| file.path.as_path()).collect();
    assert_eq!(
        paths,
        [
            dir.path().join("a_tool.json"),
            dir.path().join("b_broken.json")
        ]
    );
    assert!(matches!(files[0].manifest, Ok(Manifest::CoreTool(_))));
    assert!(matches!(
        files[1].manifest,
        Err(ManifestErrorReason::Json(_))
    ));
    assert!(scan_manifest_dir(&dir.path().join("missing")).is_err());
}
