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
    assert_eq!(title_case("pdf"), "Pdf");
    assert_eq!(title_case("Public Health"), "Public Health");
}
