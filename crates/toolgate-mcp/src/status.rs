//! The status page at `/` on the HTTP listener, behind the same token as
//! `/mcp`: the groups and tools with what their schemas cost, the
//! upstreams' health, sessions, and charts of group loads and tokens saved
//! over the last half hour. Every figure comes from the gateway's metrics,
//! read from the same exposition `/metrics` serves, so the two agree. The
//! page is plain HTML and inline SVG: no script, no request elsewhere.

use std::collections::{BTreeMap, VecDeque};
use std::fmt::Write as _;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use toolgate_store::ConversationStore;

use crate::gateway::Gateway;
use crate::upstream::UpstreamHealth;

/// How often the charts get a point.
pub(crate) const SAMPLE_EVERY: Duration = Duration::from_secs(10);
/// Points kept: half an hour.
const KEPT: usize = 180;
/// How often the page reloads itself, in seconds.
const REFRESH_SECONDS: u32 = 10;

/// The metrics the page shows, by name as `/metrics` has them.
mod names {
    pub(super) const SESSIONS_IN_MEMORY: &str = "toolgate_sessions_in_memory";
    pub(super) const SESSIONS_OPENED: &str = "toolgate_sessions_opened_total";
    pub(super) const TOOL_CALLS: &str = "toolgate_tool_calls_total";
    pub(super) const GROUP_LOADS: &str = "toolgate_group_loads_total";
    pub(super) const TOKENS_SAVED: &str = "toolgate_tool_tokens_saved_total";
    pub(super) const TOOL_LISTS: &str = "toolgate_tool_lists_total";
    pub(super) const RESTARTS: &str = "toolgate_upstream_restarts_total";
}

/// One sample of the Prometheus text exposition.
#[derive(Debug, Clone, PartialEq)]
struct Sample {
    name: String,
    labels: Vec<(String, String)>,
    value: f64,
}

/// A scrape of the gateway's own metrics.
#[derive(Debug, Default)]
pub(crate) struct Scrape {
    samples: Vec<Sample>,
}

impl Scrape {
    /// Reads an exposition; lines it does not understand are passed over.
    pub(crate) fn parse(text: &str) -> Self {
        let samples = text
            .lines()
            .filter(|line| !line.starts_with('#') && !line.trim().is_empty())
            .filter_map(parse_line)
            .collect();
        Self { samples }
    }

    /// The sum of `name` over every label set.
    pub(crate) fn total(&self, name: &str) -> f64 {
        self.samples
            .iter()
            .filter(|sample| sample.name == name)
            .map(|sample| sample.value)
            .sum()
    }

    /// `name` summed by the value of `label`.
    fn by_label(&self, name: &str, label: &str) -> BTreeMap<String, f64> {
        let mut sums = BTreeMap::new();
        for sample in self.samples.iter().filter(|sample| sample.name == name) {
            if let Some((_, value)) = sample.labels.iter().find(|(key, _)| key == label) {
                *sums.entry(value.clone()).or_insert(0.0) += sample.value;
            }
        }
        sums
    }
}

/// `name{key="value",...} number`, with the exposition's escapes.
fn parse_line(line: &str) -> Option<Sample> {
    let (series, value) = line.trim().rsplit_once(' ')?;
    let value = value.parse().ok()?;
    let Some((name, rest)) = series.split_once('{') else {
        return Some(Sample {
            name: series.to_owned(),
            labels: Vec::new(),
            value,
        });
    };
    let mut labels = Vec::new();
    let mut rest = rest.strip_suffix('}')?;
    while !rest.is_empty() {
        let (key, after) = rest.split_once("=\"")?;
        let mut text = String::new();
        let mut chars = after.char_indices();
        let end = loop {
            match chars.next()? {
                (_, '\\') => match chars.next()?.1 {
                    'n' => text.push('\n'),
                    other => text.push(other),
                },
                (at, '"') => break at,
                (_, other) => text.push(other),
            }
        };
        labels.push((key.trim_start_matches(',').to_owned(), text));
        rest = after[end + 1..].trim_start_matches(',');
    }
    Some(Sample {
        name: name.to_owned(),
        labels,
        value,
    })
}

/// A point of the charts.
#[derive(Debug, Clone, Copy)]
struct Point {
    at: jiff::Timestamp,
    loads: f64,
    saved: f64,
}

/// The charts' points, the oldest first.
#[derive(Debug, Default)]
pub(crate) struct History {
    points: Mutex<VecDeque<Point>>,
}

impl History {
    /// Takes a point from `gateway`'s metrics now.
    pub(crate) fn sample<S: ConversationStore + 'static>(&self, gateway: &Gateway<S>) {
        self.record(&Scrape::parse(&gateway.metrics().render()));
    }

    /// Takes a point from `scrape`.
    fn record(&self, scrape: &Scrape) {
        let point = Point {
            at: jiff::Timestamp::now(),
            loads: scrape.total(names::GROUP_LOADS),
            saved: scrape.total(names::TOKENS_SAVED),
        };
        let mut points = self.points.lock().unwrap_or_else(PoisonError::into_inner);
        if points.len() == KEPT {
            points.pop_front();
        }
        points.push_back(point);
    }

    fn points(&self) -> Vec<Point> {
        self.points
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .copied()
            .collect()
    }
}

/// The page, as it is now.
pub(crate) fn render<S: ConversationStore + 'static>(
    gateway: &Gateway<S>,
    history: &History,
) -> String {
    let scrape = Scrape::parse(&gateway.metrics().render());
    // The last point is now, so the charts end where the figures are.
    history.record(&scrape);
    let mut page = String::with_capacity(16 * 1024);
    page.push_str(HEAD);
    let _ = write!(
        page,
        "<meta http-equiv=\"refresh\" content=\"{REFRESH_SECONDS}\"></head><body>\
         <h1>toolgate {}</h1><p class=\"note\">Refreshes every {REFRESH_SECONDS} s; \
         figures are this gateway's own (each replica has its own page).</p>",
        env!("CARGO_PKG_VERSION")
    );
    page.push_str("<section class=\"cards\">");
    for (label, name) in [
        ("sessions in memory", names::SESSIONS_IN_MEMORY),
        ("sessions opened", names::SESSIONS_OPENED),
        ("tool calls", names::TOOL_CALLS),
        ("group loads", names::GROUP_LOADS),
        ("tool lists", names::TOOL_LISTS),
        ("tokens saved", names::TOKENS_SAVED),
    ] {
        let _ = write!(
            page,
            "<div class=\"card\"><div class=\"value\" data-metric=\"{name}\">{}</div>\
             <div class=\"label\">{label}</div></div>",
            whole(scrape.total(name))
        );
    }
    page.push_str("</section>");
    let points = history.points();
    page.push_str("<section class=\"charts\">");
    chart(&mut page, "Group loads", "loads", &points, |point| {
        point.loads
    });
    chart(&mut page, "Tokens saved", "saved", &points, |point| {
        point.saved
    });
    page.push_str("</section>");
    upstreams(&mut page, gateway, &scrape);
    groups(&mut page, gateway, &scrape);
    page.push_str("</body></html>\n");
    page
}

const HEAD: &str = "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
<title>toolgate status</title><style>\
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222}\
h1{font-size:1.4em;margin:0}h2{font-size:1.1em;margin:1.2em 0 .4em}\
.note{color:#666;margin:.2em 0 1em}.cards{display:flex;flex-wrap:wrap;gap:.8em}\
.card{border:1px solid #ddd;border-radius:6px;padding:.6em 1em;min-width:9em}\
.value{font-size:1.5em;font-variant-numeric:tabular-nums}.label{color:#666}\
.charts{display:flex;flex-wrap:wrap;gap:1.5em;margin-top:1em}\
table{border-collapse:collapse}td,th{border-bottom:1px solid #eee;padding:.25em .8em;\
text-align:left}td.n{text-align:right;font-variant-numeric:tabular-nums}\
.running{color:#17803d}.failed,.exited{color:#b42318}.idle,.closed,.starting{color:#666}\
</style>";

/// A number as a whole count (an empty sum is -0.0: shown as 0).
fn whole(value: f64) -> String {
    format!("{:.0}", value + 0.0)
}

/// A line chart of `value` over `points`, as inline SVG.
fn chart(
    page: &mut String,
    title: &str,
    id: &str,
    points: &[Point],
    value: impl Fn(&Point) -> f64,
) {
    const WIDTH: f64 = 420.0;
    const HEIGHT: f64 = 140.0;
    const PAD: f64 = 24.0;
    let _ = write!(
        page,
        "<figure><figcaption>{title}, last 30 minutes</figcaption>\
         <svg id=\"chart-{id}\" width=\"{WIDTH}\" height=\"{HEIGHT}\" role=\"img\" \
         aria-label=\"{title}\">"
    );
    let (Some(first), Some(last)) = (points.first(), points.last()) else {
        page.push_str("</svg></figure>");
        return;
    };
    let span = last.at.duration_since(first.at).as_secs_f64().max(1.0);
    let top = points.iter().map(&value).fold(0.0_f64, f64::max).max(1.0);
    let coordinates: Vec<String> = points
        .iter()
        .map(|point| {
            let x = PAD
                + (point.at.duration_since(first.at).as_secs_f64() / span) * (WIDTH - 2.0 * PAD);
            let y = HEIGHT - PAD - (value(point) / top) * (HEIGHT - 2.0 * PAD);
            format!("{x:.1},{y:.1}")
        })
        .collect();
    let _ = write!(
        page,
        "<line x1=\"{PAD}\" y1=\"{bottom}\" x2=\"{right}\" y2=\"{bottom}\" stroke=\"#bbb\"/>\
         <text x=\"{PAD}\" y=\"14\" font-size=\"11\" fill=\"#666\">{}</text>\
         <polyline fill=\"none\" stroke=\"#2563eb\" stroke-width=\"2\" points=\"{}\"/>\
         <text x=\"{right}\" y=\"{label}\" font-size=\"11\" fill=\"#666\" text-anchor=\"end\" \
         data-last=\"{}\">now: {}</text></svg></figure>",
        whole(top),
        coordinates.join(" "),
        whole(value(last)),
        whole(value(last)),
        bottom = HEIGHT - PAD,
        right = WIDTH - PAD,
        label = HEIGHT - 6.0,
    );
}

fn upstreams<S: ConversationStore + 'static>(
    page: &mut String,
    gateway: &Gateway<S>,
    scrape: &Scrape,
) {
    let health = gateway.upstream_health();
    page.push_str("<h2>Upstreams</h2>");
    if health.is_empty() {
        page.push_str("<p class=\"note\">No upstream MCP server is configured.</p>");
        return;
    }
    let restarts = scrape.by_label(names::RESTARTS, "upstream");
    page.push_str(
        "<table id=\"upstreams\"><tr><th>upstream</th><th>state</th><th>restarts</th>\
         <th>detail</th></tr>",
    );
    for (name, state) in health {
        let detail = match &state {
            UpstreamHealth::Running { uptime } => format!("up {}", duration(*uptime)),
            UpstreamHealth::Failed { reason, retry_in } => {
                format!("{}; retried in {}", escape(reason), duration(*retry_in))
            }
            _ => String::new(),
        };
        let _ = write!(
            page,
            "<tr><td>{}</td><td class=\"{label}\">{label}</td><td class=\"n\">{}</td>\
             <td>{detail}</td></tr>",
            escape(name.as_str()),
            whole(restarts.get(name.as_str()).copied().unwrap_or(0.0)),
            label = state.label(),
        );
    }
    page.push_str("</table>");
}

fn groups<S: ConversationStore + 'static>(
    page: &mut String,
    gateway: &Gateway<S>,
    scrape: &Scrape,
) {
    let loads = scrape.by_label(names::GROUP_LOADS, "group");
    let calls = scrape.by_label(names::TOOL_CALLS, "group");
    let costs = gateway.tool_costs();
    let rows = gateway.with_catalog(|catalog| {
        catalog
            .groups()
            .map(|group| {
                let tools: Vec<String> = catalog
                    .group_tools(group.id.as_str())
                    .map(|tool| tool.name.as_str().to_owned())
                    .collect();
                (
                    group.id.as_str().to_owned(),
                    group.display_name.clone(),
                    tools,
                )
            })
            .collect::<Vec<_>>()
    });
    let _ = write!(
        page,
        "<h2>Groups</h2><p class=\"note\">Token costs are of each tool's schema (o200k_base){}.</p>\
         <table id=\"groups\"><tr><th>group</th><th>tools</th><th>schema tokens</th>\
         <th>loads</th><th>calls</th><th>tool: tokens</th></tr>",
        match &costs {
            Some(costs) => format!("; all tools together: {}", costs.all_tools()),
            None => "; being counted, shown on the next refresh".to_owned(),
        }
    );
    for (id, display, tools) in rows {
        // Not counted yet: shown as "…" rather than as a cost of 0.
        let tokens = |tool: &str| {
            costs
                .as_ref()
                .map_or_else(|| "…".to_owned(), |costs| costs.tool(tool).to_string())
        };
        let total = costs.as_ref().map_or_else(
            || "…".to_owned(),
            |costs| {
                tools
                    .iter()
                    .map(|tool| costs.tool(tool))
                    .sum::<u64>()
                    .to_string()
            },
        );
        let listed: Vec<String> = tools
            .iter()
            .map(|tool| format!("{}: {}", escape(tool), tokens(tool)))
            .collect();
        let _ = write!(
            page,
            "<tr data-group=\"{id}\"><td title=\"{display}\">{id}</td><td class=\"n\">{}</td>\
             <td class=\"n\">{total}</td><td class=\"n\" data-loads>{}</td>\
             <td class=\"n\">{}</td><td>{}</td></tr>",
            tools.len(),
            whole(loads.get(&id).copied().unwrap_or(0.0)),
            whole(calls.get(&id).copied().unwrap_or(0.0)),
            listed.join(", "),
            id = escape(&id),
            display = escape(&display),
        );
    }
    page.push_str("</table>");
    let _ = write!(
        page,
        "<p class=\"note\" data-delivery>Tools sent: {}.</p>",
        escape(&gateway.delivery().explained())
    );
    // A built-in group its configuration leaves out: why, and how to offer it.
    for (group, why) in gateway.toolbox().withheld_groups() {
        let _ = write!(
            page,
            "<p class=\"note\" data-withheld=\"{group}\">Not served: {group}: {}</p>",
            escape(why),
            group = escape(group.as_str()),
        );
    }
}

/// A duration in words: `42 s`, `7 min`, `3 h`.
fn duration(duration: Duration) -> String {
    let seconds = duration.as_secs();
    match seconds {
        0..120 => format!("{seconds} s"),
        120..7200 => format!("{} min", seconds / 60),
        _ => format!("{} h", seconds / 3600),
    }
}

/// `text` for HTML text and attribute values.
fn escape(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => escaped.push_str("&amp;"),
            '<' => escaped.push_str("&lt;"),
            '>' => escaped.push_str("&gt;"),
            '"' => escaped.push_str("&quot;"),
            '\'' => escaped.push_str("&#39;"),
            other => escaped.push(other),
        }
    }
    escaped
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_exposition_is_read_with_its_labels_and_escapes() {
        let scrape = Scrape::parse(
            "# HELP toolgate_group_loads_total Groups.\n\
             # TYPE toolgate_group_loads_total counter\n\
             toolgate_group_loads_total{group=\"time\"} 3\n\
             toolgate_group_loads_total{group=\"we\\\"b\"} 2\n\
             toolgate_tool_calls_total{group=\"time\",tool=\"time_now\",outcome=\"ok\"} 5\n\
             toolgate_tool_calls_total{group=\"time\",tool=\"time_now\",outcome=\"error\"} 1\n\
             toolgate_sessions_in_memory 4\n\
             # EOF\n",
        );
        assert_eq!(scrape.total(names::GROUP_LOADS), 5.0);
        assert_eq!(scrape.total(names::SESSIONS_IN_MEMORY), 4.0);
        let loads = scrape.by_label(names::GROUP_LOADS, "group");
        assert_eq!(loads["we\"b"], 2.0);
        let calls = scrape.by_label(names::TOOL_CALLS, "group");
        assert_eq!(calls["time"], 6.0);
    }

    #[test]
    fn text_from_upstreams_cannot_become_markup() {
        assert_eq!(
            escape("<script>alert('x')</script> & \"q\""),
            "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;q&quot;"
        );
    }
}
