use pretty_assertions::assert_eq;
use serde_json::json;

use super::*;
use crate::group::ToolGroup;
use crate::name::ToolName;

fn counter() -> TokenCounter {
    TokenCounter::new(Encoding::O200kBase).unwrap()
}

#[test]
fn counts_text_with_the_real_encodings() {
    // Reference values from OpenAI's tiktoken for "hello world".
    assert_eq!(counter().count("hello world"), 2);
    assert_eq!(
        TokenCounter::new(Encoding::Cl100kBase)
            .unwrap()
            .count("hello world"),
        2
    );
    assert_eq!(counter().count(""), 0);
    assert!(counter().count("tiktoken is great!") > 3);
}

#[test]
fn encodings_parse_from_their_names() {
    assert_eq!("o200k_base".parse::<Encoding>(), Ok(Encoding::O200kBase));
    assert_eq!("cl100k_base".parse::<Encoding>(), Ok(Encoding::Cl100kBase));
    assert_eq!(
        "p50k".parse::<Encoding>().unwrap_err(),
        "unknown encoding `p50k`; use o200k_base or cl100k_base"
    );
}

#[test]
fn a_tool_is_counted_as_its_openai_function_json() {
    let counter = counter();
    let tool = ToolDefinition::new(
        ToolName::new("pdf_info").unwrap(),
        "Get page count and metadata of a PDF file",
        json!({"type": "object", "properties": {"path": {"type": "string"}}}),
    )
    .unwrap();
    assert_eq!(
        counter.tool(&tool),
        counter.count(&tool.to_openai_function().to_string())
    );
    assert_eq!(counter.tools([&tool, &tool]), 2 * counter.tool(&tool));
}

#[test]
fn catalog_cost_compares_all_schemas_with_core_plus_listing() {
    let counter = counter();
    let mut catalog = Catalog::new();
    let big_schema = json!({"type": "object", "properties": (0..20)
        .map(|i| (format!("field_{i}"), json!({"type": "string", "description": "A rather descriptive field"})))
        .collect::<serde_json::Map<_, _>>()});
    let tools: Vec<_> = (0..10)
        .map(|i| {
            let name = ToolName::new(format!("tool_{i}")).unwrap();
            (
                ToolDefinition::new(name, "Does a thing", big_schema.clone()).unwrap(),
                Origin::Builtin,
            )
        })
        .collect();
    let group = ToolGroup::new(GroupId::new("big").unwrap(), "Big", "Big tools");
    catalog
        .register_group_with_tools(group, Origin::Builtin, tools)
        .unwrap();

    let cost = CatalogCost::measure(&catalog, &counter);
    let all: Vec<&ToolDefinition> = catalog.group_tools("big").collect();
    assert_eq!(cost.tools, 10);
    assert_eq!(cost.all_tools_tokens, counter.tools(all));
    assert_eq!(cost.core_tools, 1);
    assert_eq!(cost.core_tools_tokens, counter.tools(catalog.core_tools()));
    assert_eq!(
        cost.listing_tokens,
        counter.count(&tool_groups_section(&catalog).unwrap())
    );
    assert_eq!(
        cost.turn1_tokens,
        cost.core_tools_tokens + cost.listing_tokens
    );
    assert_eq!(
        cost.groups,
        [GroupCost {
            group: GroupId::new("big").unwrap(),
            tools: 10,
            tokens: cost.all_tools_tokens
        }]
    );
    let expected = 1.0 - cost.turn1_tokens as f64 / cost.all_tools_tokens as f64;
    assert!((cost.reduction - expected).abs() < 1e-12);
    assert!(cost.reduction > 0.8, "{}", cost.reduction);
}

#[test]
fn an_empty_catalog_has_no_reduction() {
    let cost = CatalogCost::measure(&Catalog::new(), &counter());
    assert_eq!(
        (cost.tools, cost.all_tools_tokens, cost.listing_tokens),
        (0, 0, 0)
    );
    assert_eq!(cost.reduction, 0.0);
}
