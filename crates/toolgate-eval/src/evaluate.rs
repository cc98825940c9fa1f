//! [`evaluate`]: every policy on one dataset, tuned on the tuning part and
//! measured on the reported part, with the same token counter.
//!
//! The policies, in report order: every tool, the core tools and listing
//! alone, the tiered router (and its decisions with the groups sent as
//! polymorphic tools), the router blended with embeddings when
//! [`SemanticInputs`] are given, the one-softmax router when the per-group
//! model is fitted, then BM25 over tools at the router's token budget and the
//! router's best 1 to 3 groups.

use toolgate_core::routing::{Fusion, RoutingConfig, Taxonomy};
use toolgate_core::{GroupSearch, ListingForm, Origin, TokenCounter, tool_groups_section_as};

use crate::agent::Page;
use crate::costing::{Routed, Shown, chat_searches};
use crate::costs::{Costs, Seen};
use crate::dataset::{Dataset, Query};
use crate::error::Result;
use crate::figures::bands;
use crate::keywords::keyword_query;
use crate::report::{Evaluation, FIND_WITHOUT_ID_FINDERS, PolicyReport, TaskCost};
use crate::reported::Reported;
use crate::task_cost::{FIND_BY_KEYWORDS, Found, task_costs};
use crate::tool_first::{Fitted, Prepared, Reads, RouterSetting, Vectors};
use crate::tool_router::{Fitting, tool_first};
use crate::whole_groups::whole_groups;

/// Embeddings for the semantic policies: one vector per grouped tool (in
/// [`toolgate_core::routing::tool_texts`] order) and one per query (in
/// dataset order).
#[derive(Clone, Debug)]
pub struct SemanticInputs {
    /// Tool vectors.
    pub tools: Vec<Vec<f32>>,
    /// Query vectors.
    pub queries: Vec<Vec<f32>>,
    /// The vectors of the queries' [keyword rewrites](crate::keyword_query),
    /// in dataset order; without them a rewrite is scored lexically.
    pub keywords: Vec<Vec<f32>>,
    /// What produced them.
    pub model: String,
}

/// Evaluates every policy on `dataset`, for a model whose context window is
/// `context_window` tokens (a task that passes it is not done).
/// `progress(done, total)` is called as queries are processed.
///
/// ```no_run
/// use toolgate_core::routing::RoutingConfig;
/// use toolgate_core::{Encoding, TokenCounter};
/// use toolgate_eval::{DEFAULT_CONTEXT_WINDOW, Dataset, evaluate, markdown};
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let dataset = Dataset::load(std::path::Path::new("data/seal_tools"))?;
/// let counter = TokenCounter::new(Encoding::O200kBase)?;
/// let config = RoutingConfig::default();
/// let evaluation = evaluate(&dataset, &counter, &config, DEFAULT_CONTEXT_WINDOW, None, &mut |_, _| {})?;
/// let table: String = markdown(&evaluation, "o200k_base");
/// # Ok(())
/// # }
/// ```
pub fn evaluate(
    dataset: &Dataset,
    counter: &TokenCounter,
    config: &RoutingConfig,
    context_window: usize,
    semantic: Option<&SemanticInputs>,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<Evaluation> {
    let prepared = Prepared::new(dataset, config, vectors(semantic), counter)?;
    let measure = Measure {
        config,
        context_window,
    };
    evaluate_prepared(&prepared, counter, measure, Fitting::Own, progress)
}

/// What an evaluation is measured with besides the dataset: the routing
/// settings and the model's context window.
#[derive(Clone, Copy)]
pub(crate) struct Measure<'c> {
    pub(crate) config: &'c RoutingConfig,
    pub(crate) context_window: usize,
}

/// The vectors of `semantic`, as [`Prepared::new`] takes them.
pub(crate) fn vectors(semantic: Option<&SemanticInputs>) -> Option<Vectors<'_>> {
    semantic.map(|s| {
        (
            s.tools.as_slice(),
            s.queries.as_slice(),
            s.keywords.as_slice(),
        )
    })
}

/// [`evaluate`] on a prepared dataset, the tool-first router fitted as
/// `fitting` says.
pub(crate) fn evaluate_prepared(
    prepared: &Prepared<'_>,
    counter: &TokenCounter,
    measure: Measure<'_>,
    fitting: Fitting<'_>,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<Evaluation> {
    let Measure {
        config,
        context_window,
    } = measure;
    let dataset = prepared.dataset;
    let catalog = &dataset.catalog;
    let taxonomy = config.validate(catalog)?;
    let costs = Costs::new(catalog, counter);
    let reported = Reported::new(&dataset.queries, costs.all_tools);
    let whole = whole_groups(catalog, &taxonomy, config, &costs, &reported, progress);
    let first = tool_first(prepared, counter, &fitting, &reported);
    let mut policies = whole.policies;
    policies.extend(first.policies);
    policies.extend(find_rows(prepared, counter, &reported, first.search_groups));
    let task_costs = costs_per_task(
        prepared,
        counter,
        &reported.queries,
        &whole.router_seen,
        first
            .headline
            .as_ref()
            .map(|(setting, model)| (*setting, model)),
        (first.search_groups, context_window),
    );
    Ok(Evaluation {
        dataset: dataset.name.clone(),
        tools: catalog
            .tools()
            .filter(|t| *t.origin != Origin::MetaTool)
            .count(),
        groups: catalog.groups().count(),
        all_tools_tokens: costs.all_tools,
        listing_tokens: costs.core_and_listing,
        listing_forms: ListingForm::ALL
            .into_iter()
            .map(|form| {
                let section = tool_groups_section_as(catalog, form);
                (form.as_str(), section.map_or(0, |s| counter.count(&s)))
            })
            .collect(),
        listing_form: (
            ListingForm::fitting(catalog, GroupSearch::NotOffered).as_str(),
            ListingForm::fitting(catalog, GroupSearch::Offered).as_str(),
        ),
        tune_queries: dataset.queries.iter().filter(|q| q.tune).count(),
        max_groups: whole.max_groups,
        report_queries: reported.queries.len(),
        split_rule: dataset.split_rule.clone(),
        confidence_model: whole.confidence_model,
        tuned_on: Vec::new(),
        policies,
        calibration: bands(&whole.decisions, &reported.queries),
        bm25_tools_curve: whole.tools_curve,
        bm25_groups_curve: whole.groups_curve,
        search_curves: first.search_curves,
        tool_router_calibration: first.calibration,
        tool_router_calibration_online: first.calibration_online,
        tool_router_calibration_fitted: first.calibration_fitted,
        tool_router_self_test: first.self_test,
        tool_router_setting: first.setting_name,
        tool_router_considered: first.considered,
        tool_router_at_cap: first.at_cap,
        search_groups: first.search_groups,
        group_curves: first.group_curves,
        task_costs,
        context_window,
        defaults: Vec::new(),
        fitted: first.fitted,
    })
}

/// The gateway's search, one call per query, as the shipped defaults
/// score (fitted on the public datasets, this one among them), listing at
/// most `search_groups` groups; the same without id finders, and with the
/// fewest groups offered.
fn find_rows(
    prepared: &Prepared<'_>,
    counter: &TokenCounter,
    reported: &Reported<'_>,
    search_groups: usize,
) -> Vec<PolicyReport> {
    let find = |taxonomy: &Taxonomy, groups: usize| {
        crate::find::find_listing(prepared, taxonomy, groups, counter, &reported.queries)
    };
    let mut rows =
        vec![reported.summarize("find_tool_groups", &find(&prepared.taxonomy, search_groups))];
    let rewritten = keyword_queries(&reported.queries);
    let rewritten: Vec<&Query> = rewritten.iter().collect();
    let by_keywords = crate::find::find_listing(
        prepared,
        &prepared.taxonomy,
        search_groups,
        counter,
        &rewritten,
    );
    rows.push(reported.summarize(FIND_BY_KEYWORDS, &by_keywords));
    let mut without = prepared.taxonomy.clone();
    without.id_finders = Some(false);
    rows.push(reported.summarize(FIND_WITHOUT_ID_FINDERS, &find(&without, search_groups)));
    let fewest = crate::find::SEARCH_GROUPS[0];
    if search_groups != fewest {
        rows.push(reported.summarize(
            format!("find_tool_groups({fewest} groups)"),
            &find(&prepared.taxonomy, fewest),
        ));
    }
    rows
}

/// Tools per group the tool router's cost is measured at (0: whole groups).
const COSTED_TOOLS_PER_GROUP: [usize; 4] = [1, 2, 3, 0];

/// Tools a router showing the best tools across groups (with no cap per
/// group, by the turn and the turns before it) shows, tried.
const ROUTED_ACROSS: [usize; 4] = [5, 10, 20, 40];

/// [`task_costs`] of every policy: the tiered router's showings
/// (`tiered`), the headline tool router's setting (`chosen`) at each of
/// [`COSTED_TOOLS_PER_GROUP`], the gateway's search listing at most
/// `search_groups` groups and ranking tools across groups, and tool search
/// by the headline's fusion; for a
/// model whose context window is `window` tokens.
fn costs_per_task(
    prepared: &Prepared<'_>,
    counter: &TokenCounter,
    report: &[&Query],
    tiered: &[Seen],
    chosen: Option<(RouterSetting, &Fitted)>,
    (search_groups, window): (usize, usize),
) -> Vec<TaskCost> {
    let mut shown: Vec<(String, Vec<Seen>)> = Vec::new();
    if let Some((setting, model)) = chosen {
        for tools_per_group in COSTED_TOOLS_PER_GROUP {
            let setting = RouterSetting {
                tools_per_group,
                ..setting
            };
            let (seen, _) = prepared.route(setting, model, report);
            let label = crate::report::tools_per_group_label(tools_per_group);
            shown.push((format!("tool_router({label})"), seen));
        }
    }
    let fusion = chosen.map_or(Fusion::Lexical, |(setting, _)| setting.fusion);
    for k in ROUTED_ACROSS {
        let seen = report
            .iter()
            .map(|query| {
                let ranked = prepared.tool_ranking(fusion, query, Reads::EarlierTurns);
                let best = &ranked[..k.min(ranked.len())];
                prepared.costs.tools_seen(&prepared.dataset.catalog, best)
            })
            .collect();
        shown.push((format!("tool_router(top {k} across groups)"), seen));
    }
    // The gateway's search scores with the fusion chosen for the catalog
    // (on the others), as the tool search beside it does: what a build
    // chosen without it would ship.
    let mut searching = prepared.taxonomy.clone();
    searching.fusion = chosen.map(|(setting, _)| setting.fusion);
    let mut showings: Vec<(String, &[Seen])> = vec![("tiered_router".to_owned(), tiered)];
    showings.extend(
        shown
            .iter()
            .map(|(name, seen)| (name.clone(), seen.as_slice())),
    );
    // Where `chat` offers the search, what it answers after each showing.
    let pages: Vec<Vec<Vec<Page>>> = showings
        .iter()
        .map(|(_, seen)| match chat_searches(&prepared.dataset.catalog) {
            true => crate::find::find_after(prepared, &searching, counter, report, seen),
            false => Vec::new(),
        })
        .collect();
    let routed: Routed<'_> = showings
        .into_iter()
        .zip(&pages)
        .map(|((name, seen), pages)| Shown { name, seen, pages })
        .collect();
    let find = |queries: &[&Query]| {
        crate::find::find_ranked(prepared, &searching, search_groups, counter, queries)
    };
    let found = find(report);
    let rewritten = keyword_queries(report);
    let found_by_keywords = find(&rewritten.iter().collect::<Vec<_>>());
    let across = crate::find::find_across(
        prepared,
        &searching,
        counter,
        report,
        &crate::find::FIND_ACROSS,
    );
    let found = Found {
        request: &found,
        keywords: &found_by_keywords,
        across: &across,
    };
    task_costs(prepared, counter, report, &routed, found, fusion, window)
}

/// `queries` with their text replaced by its [keyword rewrite](keyword_query):
/// what a model would send `find_tool_groups`.
fn keyword_queries(queries: &[&Query]) -> Vec<Query> {
    queries
        .iter()
        .map(|query| Query {
            text: keyword_query(&query.text),
            ..(*query).clone()
        })
        .collect()
}

#[cfg(test)]
#[path = "evaluate_tests.rs"]
mod tests;
