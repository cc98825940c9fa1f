//! [`Metrics`]: what the gateway counts, exposed in Prometheus' text format
//! at `/metrics` on the HTTP listener.
//!
//! Every label value comes from a bounded set the gateway owns (MCP method
//! names, the catalog's groups and tools, configured upstreams): a name a
//! client makes up is counted under `(unknown)`, so no client can grow the
//! series without bound.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::Duration;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric};
use prometheus_client::metrics::counter::{ConstCounter, Counter};
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;
use toolgate_core::{Catalog, Origin, TokenCounter, tool_groups_section};

/// The label of a tool name no catalog tool holds.
pub(crate) const UNKNOWN: &str = "(unknown)";

/// The group label of the core tools (the meta-tools).
pub(crate) const CORE: &str = "core";

/// MCP methods counted under their own name; any other is `other`.
const METHODS: &[&str] = &[
    "initialize",
    "notifications/initialized",
    "notifications/cancelled",
    "notifications/progress",
    "notifications/roots/list_changed",
    "ping",
    "tools/list",
    "tools/call",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "resources/subscribe",
    "resources/unsubscribe",
    "prompts/list",
    "prompts/get",
    "completion/complete",
    "logging/setLevel",
];

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct MethodLabels {
    method: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CallLabels {
    group: String,
    tool: String,
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct GroupLabels {
    group: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct UpstreamLabels {
    upstream: String,
}

/// How a tool call ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// A result.
    Ok,
    /// An error result (the tool failed, timed out, or was given bad
    /// arguments).
    Error,
    /// Refused before running: unknown, or not in the session's loaded
    /// groups.
    Unavailable,
    /// Refused by a rate limit.
    Limited,
}

impl Outcome {
    pub(crate) fn label(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::Error => "error",
            Self::Unavailable => "unavailable",
            Self::Limited => "limited",
        }
    }
}

/// The gateway's counters, gauges and histograms.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    requests: Family<MethodLabels, Counter>,
    tool_calls: Family<CallLabels, Counter>,
    call_seconds: Family<GroupLabels, Histogram>,
    group_loads: Family<GroupLabels, Counter>,
    sessions_opened: Counter,
    sessions_restored: Counter,
    sessions_left_memory: Counter,
    sessions_held: Gauge,
    restarts: Arc<UpstreamRestarts>,
    lists: Counter,
    tokens_listed: Counter,
    tokens_saved: Counter,
    /// The catalog's token costs, at the revision they were counted for.
    costs: RwLock<Option<Arc<TokenCosts>>>,
    /// Set while costs are being counted.
    costing: AtomicBool,
}

/// What each tool's schema costs a model, counted once per catalog
/// revision (the tokenizer is built for it and dropped after).
#[derive(Debug)]
pub(crate) struct TokenCosts {
    revision: u64,
    per_tool: HashMap<String, u64>,
    /// Every enabled tool but the meta-tools: what a client without
    /// toolgate would list.
    all_tools: u64,
    /// The group listing `load_tool_group`'s description carries.
    listing: u64,
}

impl TokenCosts {
    /// What tool `name`'s schema costs (0 for a tool it does not know).
    pub(crate) fn tool(&self, name: &str) -> u64 {
        self.per_tool.get(name).copied().unwrap_or(0)
    }

    /// What every tool but the meta-tools costs together.
    pub(crate) fn all_tools(&self) -> u64 {
        self.all_tools
    }

    /// The costs of `catalog`'s tools, as `toolgate catalog` counts them.
    pub(crate) fn of(catalog: &Catalog, counter: &TokenCounter) -> Self {
        let mut per_tool = HashMap::new();
        let mut all_tools = 0;
        for tool in catalog.tools() {
            let tokens = counter.tool(tool.definition) as u64;
            if *tool.origin != Origin::MetaTool {
                all_tools += tokens;
            }
            per_tool.insert(tool.definition.name.as_str().to_owned(), tokens);
        }
        let listing =
            tool_groups_section(catalog).map_or(0, |section| counter.count(&section) as u64);
        Self {
            revision: catalog.revision(),
            per_tool,
            all_tools,
            listing,
        }
    }
}

/// Restarts per upstream, read at each scrape.
#[derive(Debug, Default)]
pub(crate) struct UpstreamRestarts {
    counts: Mutex<Vec<(String, Arc<AtomicU64>)>>,
}

impl UpstreamRestarts {
    /// Sets the upstreams counted: at start, and when a new configuration
    /// adds or removes some.
    pub(crate) fn set(&self, counts: Vec<(String, Arc<AtomicU64>)>) {
        *self.counts.lock().unwrap_or_else(PoisonError::into_inner) = counts;
    }
}

impl Collector for UpstreamRestarts {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let counts = self
            .counts
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        if counts.is_empty() {
            return Ok(());
        }
        let counter = ConstCounter::new(0u64);
        let mut family = encoder.encode_descriptor(
            "upstream_restarts",
            "Times an upstream MCP server was started again after it exited",
            None,
            counter.metric_type(),
        )?;
        for (upstream, count) in counts {
            let labels = UpstreamLabels { upstream };
            ConstCounter::new(count.load(Ordering::Relaxed))
                .encode(family.encode_family(&labels)?)?;
        }
        Ok(())
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// Every metric at zero.
    pub fn new() -> Self {
        let mut registry = Registry::with_prefix("toolgate");
        let requests = Family::<MethodLabels, Counter>::default();
        registry.register(
            "mcp_requests",
            "MCP requests received over HTTP, by method",
            requests.clone(),
        );
        let tool_calls = Family::<CallLabels, Counter>::default();
        registry.register(
            "tool_calls",
            "Tool calls by group, tool and outcome (ok, error, unavailable, limited)",
            tool_calls.clone(),
        );
        let call_seconds = Family::<GroupLabels, Histogram>::new_with_constructor(|| {
            // 0.5 ms to ~60 s.
            Histogram::new(exponential_buckets(0.0005, 2.5, 14))
        });
        registry.register(
            "tool_call_duration_seconds",
            "Time from a tool call's arrival to its answer, by group",
            call_seconds.clone(),
        );
        let group_loads = Family::<GroupLabels, Counter>::default();
        registry.register(
            "group_loads",
            "Groups loaded into a session (a load of a group already loaded is not counted)",
            group_loads.clone(),
        );
        let sessions_opened = Counter::default();
        registry.register(
            "sessions_opened",
            "HTTP sessions opened",
            sessions_opened.clone(),
        );
        let sessions_restored = Counter::default();
        registry.register(
            "sessions_restored",
            "HTTP sessions brought back into memory from their history (after leaving memory, \
             on another replica, or after a restart)",
            sessions_restored.clone(),
        );
        let sessions_left_memory = Counter::default();
        registry.register(
            "sessions_left_memory",
            "HTTP sessions let go from memory (idle, or beyond the cap); their history stays",
            sessions_left_memory.clone(),
        );
        let sessions_held = Gauge::default();
        registry.register(
            "sessions_in_memory",
            "HTTP sessions held in memory now",
            sessions_held.clone(),
        );
        let restarts = Arc::new(UpstreamRestarts::default());
        registry.register_collector(Box::new(Arc::clone(&restarts)));
        let lists = Counter::default();
        registry.register("tool_lists", "tools/list answers", lists.clone());
        let tokens_listed = Counter::default();
        registry.register(
            "tool_tokens_listed",
            "Tokens (o200k_base) of the tool schemas tools/list answered with, core tools and \
             the group listing included",
            tokens_listed.clone(),
        );
        let tokens_saved = Counter::default();
        registry.register(
            "tool_tokens_saved",
            "Tokens (o200k_base) every schema of the catalog would have cost, less what \
             tools/list answered with, summed over answers (answers before the catalog's costs \
             were counted are left out)",
            tokens_saved.clone(),
        );
        Self {
            registry,
            requests,
            tool_calls,
            call_seconds,
            group_loads,
            sessions_opened,
            sessions_restored,
            sessions_left_memory,
            sessions_held,
            restarts,
            lists,
            tokens_listed,
            tokens_saved,
            costs: RwLock::new(None),
            costing: AtomicBool::new(false),
        }
    }

    /// Counts a tools/list answer of the catalog at `revision` with these
    /// tools. False when the catalog's costs are not counted for this
    /// revision yet: then the caller should [`count_costs`](Self::count_costs).
    pub(crate) fn listed<'a>(&self, revision: u64, names: impl Iterator<Item = &'a str>) -> bool {
        self.lists.inc();
        let Some(costs) = self.costs_at(revision) else {
            return false;
        };
        let listed = costs.listing
            + names
                .map(|name| costs.per_tool.get(name).copied().unwrap_or(0))
                .sum::<u64>();
        self.tokens_listed.inc_by(listed);
        self.tokens_saved
            .inc_by(costs.all_tools.saturating_sub(listed));
        true
    }

    /// The catalog's costs, if counted for `revision`.
    pub(crate) fn costs_at(&self, revision: u64) -> Option<Arc<TokenCosts>> {
        self.costs
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
            .filter(|costs| costs.revision == revision)
    }

    /// Counts the catalog's costs with `count` on a blocking thread, unless
    /// that is under way.
    pub(crate) fn count_costs(
        self: &Arc<Self>,
        count: impl FnOnce(&TokenCounter) -> TokenCosts + Send + 'static,
    ) {
        if self.costing.swap(true, Ordering::AcqRel) {
            return;
        }
        let metrics = Arc::clone(self);
        tokio::task::spawn_blocking(move || {
            match TokenCounter::shared() {
                Some(counter) => {
                    let costs = count(counter);
                    *metrics
                        .costs
                        .write()
                        .unwrap_or_else(PoisonError::into_inner) = Some(Arc::new(costs));
                }
                None => tracing::warn!(
                    "tool token costs not counted: the o200k_base encoding did not load"
                ),
            }
            metrics.costing.store(false, Ordering::Release);
        });
    }

    /// Counts an MCP request; `method` as the client sent it.
    pub fn request(&self, method: &str) {
        let method = METHODS
            .iter()
            .find(|known| **known == method)
            .copied()
            .unwrap_or("other");
        self.requests.get_or_create(&MethodLabels { method }).inc();
    }

    /// Counts a tool call. `group` and `tool` must come from the catalog (or
    /// be `core` for a meta-tool, and `(unknown)` for a name no tool holds).
    pub fn tool_call(&self, group: &str, tool: &str, outcome: Outcome, took: Duration) {
        self.tool_calls
            .get_or_create(&CallLabels {
                group: group.to_owned(),
                tool: tool.to_owned(),
                outcome: outcome.label(),
            })
            .inc();
        self.call_seconds
            .get_or_create(&GroupLabels {
                group: group.to_owned(),
            })
            .observe(took.as_secs_f64());
    }

    /// Counts a group newly loaded into a session.
    pub(crate) fn group_loaded(&self, group: &str) {
        self.group_loads
            .get_or_create(&GroupLabels {
                group: group.to_owned(),
            })
            .inc();
    }

    pub(crate) fn session_opened(&self) {
        self.sessions_opened.inc();
    }

    pub(crate) fn session_restored(&self) {
        self.sessions_restored.inc();
    }

    pub(crate) fn session_left_memory(&self) {
        self.sessions_left_memory.inc();
    }

    pub(crate) fn sessions_in_memory(&self, held: usize) {
        self.sessions_held
            .set(i64::try_from(held).unwrap_or(i64::MAX));
    }

    pub(crate) fn upstream_restarts(&self) -> &UpstreamRestarts {
        &self.restarts
    }

    /// Every metric in the Prometheus text exposition format (OpenMetrics
    /// flavour), as `/metrics` answers.
    pub fn render(&self) -> String {
        let mut text = String::new();
        if prometheus_client::encoding::text::encode(&mut text, &self.registry).is_err() {
            // Writing to a String does not fail; say so if it ever does.
            let _ = writeln!(text, "# the metrics could not be encoded");
        }
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_method_no_client_should_send_is_counted_as_other() {
        let metrics = Metrics::new();
        metrics.request("tools/call");
        metrics.request("tools/call");
        metrics.request("x".repeat(500).as_str());
        let text = metrics.render();
        assert!(
            text.contains("toolgate_mcp_requests_total{method=\"tools/call\"} 2"),
            "{text}"
        );
        assert!(
            text.contains("toolgate_mcp_requests_total{method=\"other\"} 1"),
            "{text}"
        );
        assert!(!text.contains("xxxx"), "{text}");
    }

    #[test]
    fn tool_calls_are_counted_by_outcome_with_their_duration() {
        let metrics = Metrics::new();
        metrics.tool_call("time", "time_now", Outcome::Ok, Duration::from_millis(2));
        metrics.tool_call("time", "time_now", Outcome::Error, Duration::from_millis(2));
        metrics.tool_call("", UNKNOWN, Outcome::Unavailable, Duration::ZERO);
        let text = metrics.render();
        for line in [
            "toolgate_tool_calls_total{group=\"time\",tool=\"time_now\",outcome=\"ok\"} 1",
            "toolgate_tool_calls_total{group=\"time\",tool=\"time_now\",outcome=\"error\"} 1",
            "toolgate_tool_calls_total{group=\"\",tool=\"(unknown)\",outcome=\"unavailable\"} 1",
            "toolgate_tool_call_duration_seconds_count{group=\"time\"} 2",
        ] {
            assert!(text.contains(line), "no {line:?} in\n{text}");
        }
    }

    #[test]
    fn upstream_restarts_are_read_at_each_scrape() {
        let metrics = Metrics::new();
        assert!(!metrics.render().contains("upstream_restarts"));
        let count = Arc::new(AtomicU64::new(0));
        metrics
            .upstream_restarts()
            .set(vec![("git".to_owned(), Arc::clone(&count))]);
        count.store(3, Ordering::Relaxed);
        let text = metrics.render();
        assert!(
            text.contains("toolgate_upstream_restarts_total{upstream=\"git\"} 3"),
            "{text}"
        );
    }
}
