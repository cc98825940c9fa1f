use pretty_assertions::assert_eq;
use toolgate_core::{GroupId, ToolName};
use toolgate_tools::{RenameReason, RenamedTool};

use super::*;

#[test]
fn each_renamed_tool_gets_a_line() {
    let report = StartReport {
        renamed: vec![
            RenamedTool {
                group: GroupId::new("pdf").unwrap(),
                original: "PDF&URLTool".to_owned(),
                exposed: ToolName::new("PDF_URLTool").unwrap(),
                reason: RenameReason::InvalidName(ToolName::new("PDF&URLTool").unwrap_err()),
            },
            RenamedTool {
                group: GroupId::new("clock2").unwrap(),
                original: "now".to_owned(),
                exposed: ToolName::new("clock2__now").unwrap(),
                reason: RenameReason::NameTaken,
            },
        ],
        ..StartReport::default()
    };
    let mut out = String::new();
    describe_sources(&mut out, &report, &[], &[]);
    assert_eq!(
        out,
        "  renamed:   tool \"PDF&URLTool\" of 'pdf' is exposed as 'PDF_URLTool': its name has the character '&', outside MCP's A-Za-z0-9_./-\n\
         \x20 renamed:   tool \"now\" of 'clock2' is exposed as 'clock2__now': its name is taken by another group's tool\n"
    );
}
