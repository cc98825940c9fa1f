use pretty_assertions::assert_eq;
use serde_json::json;

use super::*;
use crate::catalog::ToolState;
use crate::group::ToolGroup;
use crate::listing_form::GROUP_DESCRIPTION_MAX_CHARS;
use crate::name::{GroupId, ToolName};
use crate::origin::Origin;
use crate::tool::ToolDefinition;

fn catalog(groups: &[(&str, &str)]) -> Catalog {
    let mut catalog = Catalog::new();
    for (id, description) in groups {
        let group = ToolGroup::new(GroupId::new(*id).unwrap(), *id, *description);
        let tool =
            ToolDefinition::new(ToolName::new(format!("{id}_tool")).unwrap(), "d", json!({}))
                .unwrap();
        catalog
            .register_group_with_tools(group, Origin::Builtin, vec![(tool, Origin::Builtin)])
            .unwrap();
    }
    catalog
}

#[test]
fn the_section_has_the_exact_contract_format() {
    let catalog = catalog(&[
        (
            "config",
            "Manage providers, models, agents, app settings, environment variables, and tool states",
        ),
        (
            "pdf",
            "Extract text, get info, and render pages from PDF files",
        ),
    ]);
    assert_eq!(
        tool_groups_section(&catalog).unwrap(),
        "## Available Tool Groups\n\
         \n\
         Use `load_tool_group` to load tools from a group before using them: the tools you name, or the whole group.\n\
         \n\
         - config: Manage providers, models, agents, app settings, environment variables, and tool states\n\
         - pdf: Extract text, get info, and render pages from PDF files"
    );
}

#[test]
fn the_section_follows_the_base_prompt_after_a_separator() {
    let catalog = catalog(&[("pdf", "PDFs")]);
    let section = tool_groups_section(&catalog).unwrap();
    assert_eq!(
        system_prompt("You are helpful.", &catalog),
        format!("You are helpful.\n\n---\n\n{section}")
    );
    assert_eq!(system_prompt("  \n", &catalog), section);
    assert_eq!(system_prompt("", &catalog), section);
}

#[test]
fn without_groups_the_base_prompt_is_unchanged() {
    let catalog = Catalog::new();
    assert_eq!(tool_groups_section(&catalog), None);
    assert_eq!(system_prompt("Base", &catalog), "Base");
}

#[test]
fn groups_without_available_tools_are_left_out() {
    let mut catalog = catalog(&[("pdf", "PDFs"), ("mail", "Mail")]);
    catalog
        .set_tool_state("pdf_tool", ToolState::Disabled)
        .unwrap();
    assert!(
        tool_groups_section(&catalog)
            .unwrap()
            .ends_with("\n\n- mail: Mail")
    );
}

#[test]
fn the_section_is_identical_from_call_to_call() {
    let catalog = catalog(&[("b", "B"), ("a", "A"), ("c", "C")]);
    let first = tool_groups_section(&catalog).unwrap();
    assert!(
        first.ends_with("- b: B\n- a: A\n- c: C"),
        "registration order, not sorted"
    );
    assert_eq!(tool_groups_section(&catalog).unwrap(), first);
}

#[test]
fn special_characters_are_kept_and_newlines_flattened() {
    let description = "Émails & <attachments>: \"quotes\", `ticks`, 100% — 日本語\nsecond line";
    let catalog = catalog(&[("mail", description)]);
    assert!(tool_groups_section(&catalog).unwrap().ends_with(
        "- mail: Émails & <attachments>: \"quotes\", `ticks`, 100% — 日本語 second line"
    ));
}

#[test]
fn a_very_long_description_is_cut_on_a_word_boundary_with_an_ellipsis() {
    let long = "word ".repeat(100);
    let cut = listing_description(&long);
    assert!(
        cut.chars().count() <= GROUP_DESCRIPTION_MAX_CHARS,
        "{}",
        cut.chars().count()
    );
    assert!(cut.ends_with("word…"), "{cut}");
    assert!(!cut.contains("wor…"));

    let exact = "x".repeat(GROUP_DESCRIPTION_MAX_CHARS);
    assert_eq!(
        listing_description(&exact),
        exact,
        "at the limit nothing is cut"
    );

    let giant_word = "y".repeat(500);
    let cut = listing_description(&giant_word);
    assert_eq!(cut.chars().count(), GROUP_DESCRIPTION_MAX_CHARS);
    assert!(cut.ends_with('…'));

    let multibyte = "é".repeat(300);
    assert_eq!(
        listing_description(&multibyte).chars().count(),
        GROUP_DESCRIPTION_MAX_CHARS
    );
}

#[test]
fn a_cut_that_falls_between_words_keeps_the_last_whole_word() {
    // 198 characters of words, a space at index 199 - 1: the cut keeps "ends".
    let head = format!("{} ends", "a".repeat(194));
    let text = format!("{head} and more words follow here");
    assert_eq!(head.chars().count(), GROUP_DESCRIPTION_MAX_CHARS - 1);
    assert_eq!(listing_description(&text), format!("{head}…"));
}
