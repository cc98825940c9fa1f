use pretty_assertions::assert_eq;
use toolgate_core::routing::RoutingConfig;
use toolgate_core::{Encoding, TokenCounter};

use super::*;
use crate::fixtures::small_dataset;

/// Ranked across groups, an answer lists the best k tools whatever their
/// group, and asking again lists the next k, never one listed before.
#[test]
fn the_search_across_groups_pages_its_ranking_k_tools_at_a_time() {
    let dataset = small_dataset("across");
    let counter = TokenCounter::new(Encoding::O200kBase).unwrap();
    let prepared = Prepared::new(&dataset, &RoutingConfig::default(), None, &counter).unwrap();
    let queries: Vec<&Query> = dataset.queries.iter().collect();
    let answers = find_across(&prepared, &prepared.taxonomy, &counter, &queries, &[1, 3]);
    assert_eq!(answers.len(), queries.len());
    // "search my mail": both mail tools match, mail_search the better.
    let [by_one, by_three] = answers[2].as_slice() else {
        panic!("one list of answers per k: {:?}", answers[2]);
    };
    let tools = |pages: &[Page]| -> Vec<Vec<String>> {
        pages.iter().map(|page| page.tools.clone()).collect()
    };
    assert_eq!(tools(by_one), [["mail_search"], ["mail_send"]]);
    assert_eq!(tools(by_three), [["mail_search", "mail_send"]]);
    assert_eq!(by_three[0].groups, [GroupId::new("mail").unwrap()]);
    // Each answer counts the call and its text, which names its tools.
    let call = counter.count(FIND_TOOL_GROUPS_TOOL_NAME)
        + counter.count(&json!({"query": "search my mail"}).to_string());
    for page in by_one.iter().chain(by_three) {
        assert!(page.tokens > call + 2 * page.tools.len(), "{page:?}");
    }
}
