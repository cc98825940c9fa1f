//! The personal-assistant catalog in `examples/tools`, loaded once per test.
//! Its tools are classified as a personal assistant's are: 13 core tools (with
//! `load_tool_group`) and 14 groups, `config` holding 17 tools.

use std::path::PathBuf;

use toolgate_core::{Catalog, load_manifest_dirs};

pub(crate) fn examples_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/tools")
}

pub(crate) fn example_catalog() -> Catalog {
    let mut catalog = Catalog::new();
    let report = load_manifest_dirs(&mut catalog, &[examples_dir()]);
    assert_eq!(report.errors, [], "the shipped examples must load cleanly");
    catalog
}

pub(crate) fn names<'a>(
    tools: impl IntoIterator<Item = &'a toolgate_core::ToolDefinition>,
) -> Vec<&'a str> {
    tools.into_iter().map(|tool| tool.name.as_str()).collect()
}
