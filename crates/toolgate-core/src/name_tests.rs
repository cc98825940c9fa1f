use pretty_assertions::assert_eq;

use super::*;

#[test]
fn tool_names_follow_the_mcp_rule() {
    for ok in ["a", "gmail_search", "fs/read.file-v2", &"x".repeat(64)] {
        assert!(ToolName::new(ok).is_ok(), "{ok} should be valid");
    }
    assert_eq!(
        ToolName::new("").unwrap_err().to_string(),
        "tool name `` must be 1-64 characters long, not 0"
    );
    assert_eq!(
        ToolName::new("x".repeat(65)).unwrap_err().to_string(),
        format!(
            "tool name `{}` must be 1-64 characters long, not 65",
            "x".repeat(65)
        )
    );
    assert_eq!(
        ToolName::new("requestFirst Aid").unwrap_err().to_string(),
        "tool name `requestFirst Aid` has the character ' ', outside MCP's A-Za-z0-9_./-"
    );
    assert!(ToolName::new("émoji").is_err());
}

#[test]
fn group_ids_reject_blank_padded_and_control_characters() {
    assert!(GroupId::new("Public Health").is_ok());
    assert!(GroupId::new("").is_err());
    assert!(GroupId::new(" padded").is_err());
    assert!(GroupId::new("line\nbreak").is_err());
    assert!(GroupId::new("x".repeat(129)).is_err());
}

#[test]
fn names_deserialize_through_validation() {
    let name: ToolName = serde_json::from_str("\"pdf_info\"").unwrap();
    assert_eq!(name.as_str(), "pdf_info");
    assert!(serde_json::from_str::<ToolName>("\"bad name\"").is_err());
}

#[test]
fn title_case_splits_on_separators() {
    assert_eq!(title_case("my_tools"), "My Tools");
    assert_eq!(title_case("google_gmail_settings"), "Google Gmail Settings");
    assert_eq!(title_case("git"), "Git");
    assert_eq!(title_case("Public Health"), "Public Health");
}

#[test]
fn title_case_writes_a_word_without_a_vowel_as_an_abbreviation() {
    assert_eq!(title_case("fs"), "FS");
    assert_eq!(title_case("pdf"), "PDF");
    assert_eq!(title_case("crm_sync"), "CRM Sync");
    assert_eq!(title_case("aws_s3"), "Aws S3");
    assert_eq!(title_case("my_http_tools"), "My HTTP Tools");
    assert_eq!(title_case("2024"), "2024");
}

#[test]
fn fnv1a_is_the_published_function() {
    assert_eq!(fnv1a(&[]), 0x811c_9dc5);
    assert_eq!(fnv1a(&["a"]), 0xe40c_292c);
    assert_eq!(fnv1a(&["foo", "bar"]), 0xbf9c_f968);
}

#[test]
fn sanitizing_replaces_what_the_rules_refuse() {
    assert_eq!(sanitize_tool_name("PDF&URL Tool"), "PDF_URL_Tool");
    assert_eq!(sanitize_tool_name("fs/read.file-v2"), "fs/read.file-v2");
    assert_eq!(sanitize_tool_name("naïve"), "na_ve");
    assert_eq!(sanitize_group_id(" Public\tHealth\n"), "Public Health");
    assert_eq!(sanitize_group_id("Public Health"), "Public Health");
}

fn strings<T: ToString>(names: impl Iterator<Item = T>) -> Vec<String> {
    names.map(|name| name.to_string()).collect()
}

#[test]
fn tool_name_candidates_go_from_the_own_name_to_hashed_ones() {
    let hashed = |prefix: &str, key: &[&str]| format!("{prefix}_{:08x}", fnv1a(key));
    assert_eq!(
        strings(ToolName::candidates(Some("pdf"), "ok_name").take(3)),
        ["ok_name", "pdf__ok_name", "ok_name"]
    );
    assert_eq!(
        strings(ToolName::candidates(Some("pdf"), "PDF&URL").take(3)),
        [
            "PDF_URL".to_owned(),
            hashed("PDF_URL", &["pdf", "\0", "PDF&URL"]),
            hashed("PDF_URL", &["pdf", "\0", "PDF&URL", "\0", "1"]),
        ]
    );
    // Without a group: no qualified name, and an empty group in the hash.
    assert_eq!(
        strings(ToolName::candidates(None, "a b").take(2)),
        ["a_b".to_owned(), hashed("a_b", &["", "\0", "a b"])]
    );
    let long = "y".repeat(70);
    let names = strings(ToolName::candidates(Some("g"), &long));
    assert_eq!(names.len(), 16);
    assert_eq!(names[0], hashed(&"y".repeat(55), &["g", "\0", &long]));
    assert!(names.iter().all(|name| name.len() == MAX_TOOL_NAME_LEN));
}

#[test]
fn group_id_candidates_go_from_the_own_id_to_hashed_ones() {
    assert_eq!(
        strings(GroupId::candidates("Public Health").take(2)),
        ["Public Health", "Public Health"]
    );
    assert_eq!(
        strings(GroupId::candidates("Mail ").take(2)),
        ["Mail".to_owned(), format!("Mail_{:08x}", fnv1a(&["Mail "]))]
    );
    let long = format!("{} {}", "g".repeat(118), "x".repeat(20));
    let names = strings(GroupId::candidates(&long));
    assert_eq!(names.len(), 16);
    // Cut to 119 characters, the space it ends with dropped.
    assert_eq!(
        names[0],
        format!("{}_{:08x}", "g".repeat(118), fnv1a(&[&long]))
    );
}
