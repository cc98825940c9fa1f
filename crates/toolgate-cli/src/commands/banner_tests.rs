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

#[test]
fn an_upstream_that_failed_at_start_says_why_even_one_started_on_first_load() {
    let mut catalog = Catalog::new();
    for id in ["lazy", "eager", "idle"] {
        let group = toolgate_core::ToolGroup::new(GroupId::new(id).unwrap(), id, "tools");
        let origin = toolgate_core::Origin::Upstream {
            server: id.to_owned(),
        };
        catalog.register_deferred_group(group, origin).unwrap();
    }
    let report = StartReport {
        listed: vec![(
            GroupId::new("eager").unwrap(),
            Err(toolgate_tools::SourceError::new(std::io::Error::other(
                "MCP server 'eager' failed to start: connection closed; stderr: bad cert\nset SSL_CERT_FILE",
            ))),
        )],
        ..StartReport::default()
    };
    let failed = [(
        GroupId::new("lazy").unwrap(),
        "connection closed; stderr: no module named mcp".to_owned(),
    )];
    let mut out = String::new();
    describe_catalog(&mut out, &catalog, &report, &failed);
    assert_eq!(
        out,
        "  core tools: load_tool_group\n  groups:\n\
         \x20   - lazy: FAILED: connection closed; stderr: no module named mcp (tried again on first load)\n\
         \x20   - eager: FAILED: MCP server 'eager' failed to start: connection closed; stderr: bad cert\n\
         \x20       set SSL_CERT_FILE\n\
         \x20   - idle: upstream, starts on first load\n"
    );
}
