//! `[routing]`, checked the same way whatever the command: every setting
//! that does not depend on the catalog when the file is read, and the
//! groups it names once the command has built its catalog (`serve` with or
//! without `--route`, `chat`, `route`). Either error names the file and the
//! line of the key at fault, as the other sections' errors do.
//!
//! The table is read into toolgate-core's [`RoutingConfig`], which keeps no
//! spans; a second, lenient read of the same text finds where each key and
//! each `[[routing.intent]]` sits.

use std::ops::Range;

use serde::Deserialize;
use serde::de::IgnoredAny;
use toml::Spanned;
use toolgate_core::Catalog;
use toolgate_core::routing::{RoutingConfig, RoutingError};

/// Where the parts of `[routing]` sit in the file (byte ranges).
#[derive(Debug, Default)]
pub(crate) struct RoutingPlaces {
    /// The table itself.
    table: Option<Range<usize>>,
    /// Each key checked on its own, by name.
    keys: Vec<(&'static str, Range<usize>)>,
    /// Each `[[routing.intent]]`, with its name.
    intents: Vec<(Option<String>, Range<usize>)>,
}

impl RoutingPlaces {
    /// The places in `text`, whose `[routing]` table is at `table`; none
    /// when the text does not read (the first read then failed already).
    pub(crate) fn find(text: &str, table: Option<Range<usize>>) -> Self {
        let Ok(file) = toml::from_str::<SpannedFile>(text) else {
            return Self {
                table,
                ..Self::default()
            };
        };
        let Some(routing) = file.routing else {
            return Self {
                table,
                ..Self::default()
            };
        };
        let RoutingSpans {
            intent,
            recovery_groups,
            thresholds,
            per_group,
            max_groups,
            temperature,
            fusion,
            calibration,
            route_above,
            max_token_share,
            tools_per_group,
            search_groups,
            search_tools,
            search,
            search_results,
            route_tools,
        } = routing.into_inner();
        let keys = [
            ("recovery_groups", recovery_groups),
            ("thresholds", thresholds),
            ("per_group", per_group),
            ("max_groups", max_groups),
            ("temperature", temperature),
            ("fusion", fusion),
            ("calibration", calibration),
            ("route_above", route_above),
            ("max_token_share", max_token_share),
            ("tools_per_group", tools_per_group),
            ("search_groups", search_groups),
            ("search_tools", search_tools),
            ("search", search),
            ("search_results", search_results),
            ("route_tools", route_tools),
        ]
        .into_iter()
        .filter_map(|(key, span)| Some((key, span?.span())))
        .collect();
        let intents = intent
            .into_iter()
            .map(|intent| {
                let span = intent.span();
                (intent.into_inner().name, span)
            })
            .collect();
        Self {
            table,
            keys,
            intents,
        }
    }

    /// Where the setting `error` is about sits: its key, else its intent,
    /// else the table.
    pub(crate) fn of(&self, error: &RoutingError) -> Option<Range<usize>> {
        let key = |name: &str| {
            self.keys
                .iter()
                .find(|(key, _)| *key == name)
                .map(|(_, span)| span.clone())
        };
        let intent = |name: &str| {
            self.intents
                .iter()
                .find(|(intent, _)| intent.as_deref() == Some(name))
                .map(|(_, span)| span.clone())
        };
        let place = match error {
            RoutingError::UnknownGroup { place, .. } => match place
                .strip_prefix("intent '")
                .and_then(|rest| rest.strip_suffix('\''))
            {
                Some(name) => intent(name),
                None => key(place),
            },
            RoutingError::EmptyIntent(name) => intent(name),
            RoutingError::Thresholds { .. } => key("thresholds"),
            RoutingError::PerGroup => key("per_group"),
            RoutingError::MaxGroups => key("max_groups"),
            RoutingError::Temperature(_) => key("temperature"),
            RoutingError::Fusion(_) => key("fusion"),
            RoutingError::Calibration(_) => key("calibration"),
            RoutingError::RouteAbove(_) => key("route_above"),
            RoutingError::MaxTokenShare(_) => key("max_token_share"),
            RoutingError::ToolsPerGroup(_) => key("tools_per_group"),
            RoutingError::SearchGroups => key("search_groups"),
            RoutingError::SearchTools(_) => key("search_tools"),
            RoutingError::SearchResults(_) => key("search_results"),
            RoutingError::RouteTools(_) => key("route_tools"),
            // A group name that is not a group id, and what core adds.
            _ => None,
        };
        place.or_else(|| self.table.clone())
    }
}

/// Checks what of `config` does not depend on the catalog: everything but
/// whether the groups it names exist, checked once the catalog is built
/// ([`Settings::routing_taxonomy`](super::Settings::routing_taxonomy)).
pub(crate) fn check_alone(config: &RoutingConfig) -> Result<(), RoutingError> {
    let mut alone = config.clone();
    alone.recovery_groups.clear();
    // Intents that name groups are checked with the catalog; one that
    // names none is refused here.
    alone.intents.retain(|intent| intent.groups.is_empty());
    alone.validate(&Catalog::new()).map(drop)
}

/// The file, read only for where `[routing]`'s parts sit.
#[derive(Deserialize)]
struct SpannedFile {
    #[serde(default)]
    routing: Option<Spanned<RoutingSpans>>,
}

/// `[routing]`'s keys checked on their own; the others are ignored here.
#[derive(Deserialize)]
struct RoutingSpans {
    #[serde(default)]
    intent: Vec<Spanned<IntentName>>,
    #[serde(default)]
    recovery_groups: Option<Spanned<IgnoredAny>>,
    #[serde(default)]
    thresholds: Option<Spanned<IgnoredAny>>,
    #[serde(default)]
    per_group: Option<Spanned<IgnoredAny>>,
    #[serde(default)]
    max_groups: Option<Spanned<IgnoredAny>>,
    #[serde(default)]
    temperature: Option<Spanned<IgnoredAny>>,
    #[serde(default)]
    fusion: Option<Spanned<IgnoredAny>>,
    #[serde(default)]
    calibration: Option<Spanned<IgnoredAny>>,
    #[serde(default)]
    route_above: Option<Spanned<IgnoredAny>>,
    #[serde(default)]
    max_token_share: Option<Spanned<IgnoredAny>>,
    #[serde(default)]
    tools_per_group: Option<Spanned<IgnoredAny>>,
    #[serde(default)]
    search_groups: Option<Spanned<IgnoredAny>>,
    #[serde(default)]
    search_tools: Option<Spanned<IgnoredAny>>,
    #[serde(default)]
    search: Option<Spanned<IgnoredAny>>,
    #[serde(default)]
    search_results: Option<Spanned<IgnoredAny>>,
    #[serde(default)]
    route_tools: Option<Spanned<IgnoredAny>>,
}

/// A `[[routing.intent]]`'s name; the rest is ignored here.
#[derive(Deserialize)]
struct IntentName {
    #[serde(default)]
    name: Option<String>,
}
