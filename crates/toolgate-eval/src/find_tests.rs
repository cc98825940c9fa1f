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

/// Asked after a router showed some tools, the search lists only the
/// others (they are loaded already), and nothing after a showing of every
/// tool.
#[test]
fn the_search_after_a_showing_skips_the_tools_it_showed() {
    let dataset = small_dataset("after");
    let counter = TokenCounter::new(Encoding::O200kBase).unwrap();
    let prepared = Prepared::new(&dataset, &RoutingConfig::default(), None, &counter).unwrap();
    let queries: Vec<&Query> = dataset.queries.iter().collect();
    let mut taxonomy = prepared.taxonomy.clone();
    taxonomy.search_results = 1;
    let shown = |tools: &[&str], all: bool| Seen {
        tools: tools.iter().map(|t| (*t).to_owned()).collect(),
        all,
        ..Seen::default()
    };
    // "search my mail" (the third query), after mail_search was shown.
    let mut showings = vec![Seen::default(); queries.len()];
    showings[2] = shown(&["mail_search"], false);
    showings[1] = shown(&[], true);
    let pages = find_after(&prepared, &taxonomy, &counter, &queries, &showings);
    assert_eq!(pages.len(), queries.len());
    let tools: Vec<Vec<String>> = pages[2].iter().map(|p| p.tools.clone()).collect();
    assert_eq!(tools, [["mail_send"]]);
    assert!(pages[1].is_empty(), "every tool shown: {:?}", pages[1]);
    // With nothing shown it is the search from the start.
    let first = find_across(&prepared, &taxonomy, &counter, &queries, &[1]);
    let from_start: Vec<Vec<String>> = pages[0].iter().map(|p| p.tools.clone()).collect();
    let expected: Vec<Vec<String>> = first[0][0].iter().map(|p| p.tools.clone()).collect();
    assert_eq!(from_start, expected);
}
