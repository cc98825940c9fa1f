//! Choosing the tool-first router's settings where they are not
//! reported (the other datasets when one is left out, else a dataset's
//! tuning part): the settings within the token budget that keep the recall
//! floor on every dataset chosen on are played as `toolgate chat` tasks,
//! and the cheapest wins ([`best`]).

use toolgate_core::TokenCounter;
use toolgate_core::routing::{DEFAULT_MAX_TOKEN_SHARE, Fusion, Isotonic};

use crate::costs::Seen;
use crate::dataset::Query;
use crate::find::{SEARCH_GROUPS, find_listing};
use crate::report::{Considered, FittedFusion, Shortfall};
use crate::router_cost::{RouterCost, RouterCosting};
use crate::tool_first::{Fitted, MAX_GROUPS, Prepared, RouterSetting};

/// Tools each routed group arrives with, tried (0: the whole group).
pub(crate) const TOOLS_PER_GROUP: [usize; 4] = [0, 1, 2, 3];

/// A dataset a setting is chosen on, with the model fitted for each
/// fusion method (never on the dataset the choice is reported on).
pub(crate) struct ChoiceSet<'a> {
    pub(crate) prepared: &'a Prepared<'a>,
    pub(crate) fitted: &'a [(Fusion, Fitted)],
    /// Only its tuning part (a dataset chosen on for itself).
    pub(crate) tune_only: bool,
    /// Its tasks, to cost what a setting shows them.
    costing: RouterCosting<'a>,
}

impl<'a> ChoiceSet<'a> {
    pub(crate) fn new(
        prepared: &'a Prepared<'a>,
        fitted: &'a [(Fusion, Fitted)],
        tune_only: bool,
        counter: &'a TokenCounter,
    ) -> Self {
        let queries = choice_queries(prepared, tune_only);
        Self {
            prepared,
            fitted,
            tune_only,
            costing: RouterCosting::new(prepared, counter, &queries),
        }
    }

    fn fitted(&self, fusion: Fusion) -> Option<&Fitted> {
        fitted_for(self.fitted, fusion)
    }

    /// The queries a choice is measured on: every labelled one (its
    /// tuning part when `tune_only`).
    pub(crate) fn queries(&self) -> Vec<&'a Query> {
        choice_queries(self.prepared, self.tune_only)
    }

    /// Group recall and share of all-tools tokens of what `seen` shows
    /// `queries`.
    pub(crate) fn figures(&self, queries: &[&Query], seen: &[Seen]) -> (f64, f64) {
        let all_tools = self.prepared.costs.all_tools as f64;
        let figures = crate::figures::summary(String::new(), queries, seen, all_tools);
        (figures.group_recall, figures.token_fraction)
    }
}

/// The labelled queries of `prepared` (its tuning part when `tune_only`).
fn choice_queries<'a>(prepared: &Prepared<'a>, tune_only: bool) -> Vec<&'a Query> {
    prepared
        .dataset
        .queries
        .iter()
        .filter(|q| !q.gold_groups.is_empty() && (!tune_only || q.tune))
        .collect()
}

/// The model fitted for `fusion` among `fitted`.
pub(crate) fn fitted_for(fitted: &[(Fusion, Fitted)], fusion: Fusion) -> Option<&Fitted> {
    fitted.iter().find(|(f, _)| *f == fusion).map(|(_, f)| f)
}

/// What a fusion method's router is fitted to: `fitted` (its model and
/// calibration) with the setting chosen for it and that setting's figures,
/// and the `search_groups` chosen for the gateway's search.
pub(crate) fn fitted_fusion(
    fitted: &Fitted,
    setting: RouterSetting,
    measured: Measured,
    considered: Vec<Considered>,
    search_groups: usize,
) -> FittedFusion {
    FittedFusion {
        fusion: setting.fusion,
        model: fitted.model,
        calibration: fitted
            .calibration
            .clone()
            .unwrap_or(Isotonic { knots: Vec::new() }),
        route_above: setting.route_above,
        tools_per_group: setting.tools_per_group,
        max_groups: setting.max_groups,
        max_token_share: setting.max_token_share,
        id_finders: setting.id_finders,
        search_groups,
        worst_recall: measured.worst_recall,
        recall: measured.mean_recall,
        token_fraction: measured.token_fraction,
        most_tokens: measured.most_tokens,
        task_cost: measured
            .cost
            .map(|cost| (cost.cached_share, cost.extra_round_trips)),
        considered,
    }
}

/// `route_above` values tried.
pub(crate) const ROUTE_ABOVE: [f64; 8] = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8];

/// Mean token share, over the datasets a setting is chosen on, that a
/// chosen setting may spend: the goal is at most 15% on a catalog never
/// seen, so the choice keeps a margin.
pub(crate) const CHOICE_BUDGET: f64 = 0.10;

/// Token share a chosen setting may spend on any one dataset it is chosen
/// on: the goal itself, which holds per catalog. Without it a setting that
/// spends 1-2% on large catalogs could spend 15-25% on small ones and
/// still keep within [`CHOICE_BUDGET`] on average.
pub(crate) const CHOICE_BUDGET_EACH: f64 = 0.15;

/// The settings of `fusion` tried: each without id finders and with them.
pub(crate) fn settings(fusion: Fusion) -> Vec<RouterSetting> {
    let mut out = Vec::new();
    for id_finders in [false, true] {
        for route_above in ROUTE_ABOVE {
            for tools_per_group in TOOLS_PER_GROUP {
                out.push(RouterSetting {
                    fusion,
                    route_above,
                    tools_per_group,
                    max_groups: MAX_GROUPS,
                    max_token_share: Some(DEFAULT_MAX_TOKEN_SHARE),
                    id_finders,
                });
            }
        }
    }
    out
}

/// Group recall a setting must keep on each dataset it is chosen on to be
/// chosen by what a task costs: the floor each catalog left out is held
/// to. On a dataset where no setting within the token budget reaches it,
/// the floor is the best recall any reaches there, less
/// [`RECALL_SLACK`].
pub(crate) const RECALL_FLOOR: f64 = 0.95;

/// How far below the floor a setting's recall may fall on a dataset: the
/// same two or three queries in a hundred that separate a setting's figures
/// between folds.
pub(crate) const RECALL_SLACK: f64 = 0.01;

/// What [`measure_on`] does with each setting's showing on a set: the
/// setting's index, the set, its queries and what each was shown.
type Showing<'e> = dyn FnMut(usize, &ChoiceSet<'_>, &[&Query], &[Seen]) + 'e;

/// Mean group recall and token share over `sets` of each of `settings`
/// (all of one fusion method), each set with its own fitted model,
/// measured on its labelled queries (its tuning part when `tune_only`);
/// and, for the settings within the token budget that keep the recall
/// floor on every dataset ([`RECALL_FLOOR`]), what a `chat` task costs with what they show
/// ([`RouterCost`], the mean over `sets`).
pub(crate) fn measure_on(settings: &[RouterSetting], sets: &[ChoiceSet<'_>]) -> Trials {
    let mut trials = Trials {
        settings: settings.to_vec(),
        measured: Vec::new(),
        figures: vec![Vec::new(); settings.len()],
        floors: Vec::new(),
        datasets: sets
            .iter()
            .map(|set| set.prepared.dataset.name.clone())
            .collect(),
    };
    let Some(fusion) = settings.first().map(|s| s.fusion) else {
        return trials;
    };
    let per_set = |settings: &[RouterSetting], each: &mut Showing<'_>| {
        for set in sets {
            let Some(fitted) = set.fitted(fusion) else {
                continue;
            };
            let queries = set.queries();
            for (index, (seen, _)) in set
                .prepared
                .route_many(settings, fitted, &queries)
                .into_iter()
                .enumerate()
            {
                each(index, set, &queries, &seen);
            }
        }
    };
    let figures = &mut trials.figures;
    per_set(settings, &mut |index, set, queries, seen| {
        figures[index].push(set.figures(queries, seen));
    });
    trials.measured = trials
        .figures
        .iter()
        .map(|figures| Measured::over(figures, sets.len()))
        .collect();
    // Only the settings that keep the floor are costed: the rest are never
    // chosen by cost.
    trials.floors = recall_floors(&trials.figures, &trials.measured);
    let keeping: Vec<usize> = (0..settings.len())
        .filter(|i| {
            trials.measured[*i].within_budget() && keeps(&trials.figures[*i], &trials.floors)
        })
        .collect();
    let kept: Vec<RouterSetting> = keeping.iter().map(|i| settings[*i]).collect();
    let mut costs = vec![Vec::new(); kept.len()];
    per_set(&kept, &mut |index, set, _, seen| {
        costs[index].push(set.costing.cost(seen));
    });
    for (i, costs) in keeping.into_iter().zip(costs) {
        trials.measured[i].cost = RouterCost::mean(&costs);
    }
    trials
}

/// What [`measure_on`] found of each setting tried.
#[derive(Debug)]
pub(crate) struct Trials {
    pub(crate) settings: Vec<RouterSetting>,
    /// Each setting's figures over the datasets.
    pub(crate) measured: Vec<Measured>,
    /// Each setting's `(group recall, token share)` on each dataset.
    figures: Vec<Vec<(f64, f64)>>,
    /// Each dataset's recall floor ([`recall_floors`]).
    floors: Vec<f64>,
    /// The datasets' names.
    datasets: Vec<String>,
}

impl Trials {
    /// Each setting with its figures.
    pub(crate) fn each(&self) -> impl Iterator<Item = (RouterSetting, Measured)> + '_ {
        self.settings
            .iter()
            .copied()
            .zip(self.measured.iter().copied())
    }

    /// The best setting ([`best`]).
    pub(crate) fn best(&self) -> Option<(RouterSetting, Measured)> {
        best(self.each())
    }

    /// The best setting of each [`TOOLS_PER_GROUP`] value, and where it
    /// fell short of the floors or of the token budget on one dataset;
    /// `chosen` is marked.
    pub(crate) fn considered(&self, chosen: Option<RouterSetting>) -> Vec<Considered> {
        TOOLS_PER_GROUP
            .iter()
            .filter_map(|tools| {
                let index = best(
                    (0..self.settings.len())
                        .filter(|i| self.settings[*i].tools_per_group == *tools)
                        .map(|i| (i, self.measured[i])),
                )?
                .0;
                let (setting, measured) = (self.settings[index], self.measured[index]);
                let short = self.figures[index]
                    .iter()
                    .zip(&self.floors)
                    .zip(&self.datasets)
                    .filter(|(((recall, tokens), floor), _)| {
                        recall < *floor || *tokens > CHOICE_BUDGET_EACH
                    })
                    .map(|(((recall, tokens), floor), dataset)| Shortfall {
                        dataset: dataset.clone(),
                        recall: *recall,
                        floor: *floor,
                        token_fraction: *tokens,
                        over_budget: *tokens > CHOICE_BUDGET_EACH,
                    })
                    .collect();
                Some(Considered {
                    tools_per_group: *tools,
                    route_above: setting.route_above,
                    id_finders: setting.id_finders,
                    worst_recall: measured.worst_recall,
                    token_fraction: measured.token_fraction,
                    most_tokens: measured.most_tokens,
                    short,
                    task_cost: measured
                        .cost
                        .map(|cost| (cost.cached_share, cost.extra_round_trips)),
                    chosen: chosen == Some(setting),
                })
            })
            .collect()
    }
}

/// Each dataset's recall floor, from every setting's `(recall, token
/// share)` on each ([`measure_on`]): [`RECALL_FLOOR`], or where no setting
/// within the token budget reaches it, the best recall one reaches there
/// less [`RECALL_SLACK`].
fn recall_floors(figures: &[Vec<(f64, f64)>], measured: &[Measured]) -> Vec<f64> {
    let sets = figures.iter().map(Vec::len).max().unwrap_or(0);
    (0..sets)
        .map(|set| {
            let best = figures
                .iter()
                .zip(measured)
                .filter(|(_, m)| m.within_budget())
                .filter_map(|(f, _)| f.get(set).map(|f| f.0))
                .fold(f64::NEG_INFINITY, f64::max);
            if best >= RECALL_FLOOR {
                RECALL_FLOOR
            } else {
                best - RECALL_SLACK
            }
        })
        .collect()
}

/// Whether a setting's recall on each dataset (`figures`) keeps that
/// dataset's floor.
fn keeps(figures: &[(f64, f64)], floors: &[f64]) -> bool {
    figures.len() == floors.len() && figures.iter().zip(floors).all(|(f, floor)| f.0 >= *floor)
}

/// A setting's figures over the datasets it is chosen on.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Measured {
    /// Group recall on the dataset where it is lowest.
    pub(crate) worst_recall: f64,
    /// Mean group recall.
    pub(crate) mean_recall: f64,
    /// Mean share of all-tools tokens.
    pub(crate) token_fraction: f64,
    /// Share of all-tools tokens on the dataset where it is highest.
    pub(crate) most_tokens: f64,
    /// What a `chat` task costs with it, where it keeps the recall floor.
    pub(crate) cost: Option<RouterCost>,
}

impl Measured {
    /// The figures of one setting over `sets` datasets: its group recall
    /// and token share on each that was measured.
    pub(crate) fn over(figures: &[(f64, f64)], sets: usize) -> Self {
        let n = sets.max(1) as f64;
        let worst = figures.iter().map(|f| f.0).fold(f64::INFINITY, f64::min);
        Self {
            worst_recall: if worst.is_finite() { worst } else { 0.0 },
            mean_recall: figures.iter().map(|f| f.0).sum::<f64>() / n,
            token_fraction: figures.iter().map(|f| f.1).sum::<f64>() / n,
            most_tokens: figures.iter().map(|f| f.1).fold(0.0, f64::max),
            cost: None,
        }
    }

    /// Within [`CHOICE_BUDGET`] on average and [`CHOICE_BUDGET_EACH`] on
    /// every dataset.
    fn within_budget(&self) -> bool {
        self.token_fraction <= CHOICE_BUDGET && self.most_tokens <= CHOICE_BUDGET_EACH
    }

    /// Better by recall alone: within the budget, a higher worst-dataset
    /// recall (a router that holds on catalogs it was not tuned on), then a
    /// higher mean, then fewer tokens; outside it, fewer tokens on the
    /// costliest dataset.
    pub(crate) fn better_than(&self, other: &Self) -> bool {
        let key = |m: &Self| (m.within_budget(), m.worst_recall, m.mean_recall);
        let (a, b) = (key(self), key(other));
        if a.0 != b.0 {
            return a.0;
        }
        if !a.0 {
            return self.most_tokens < other.most_tokens;
        }
        match a.1.total_cmp(&b.1).then(a.2.total_cmp(&b.2)) {
            std::cmp::Ordering::Equal => self.token_fraction < other.token_fraction,
            ordering => ordering.is_gt(),
        }
    }
}

/// The best setting among `candidates` on `sets` (see [`best`]), with its
/// figures there.
pub(crate) fn choose(
    candidates: &[RouterSetting],
    sets: &[ChoiceSet<'_>],
) -> Option<(RouterSetting, Measured, Vec<Considered>)> {
    let trials = measure_on(candidates, sets);
    let (setting, measured) = trials.best()?;
    Some((setting, measured, trials.considered(Some(setting))))
}

/// The best of measured settings: among those costed (they keep the recall
/// floor, [`measure_on`]), what a `chat` task costs decides, by the rule
/// that decides each job's policy in the cost summary
/// ([`cheapest`](crate::cost_choice::cheapest)), a tie going to the
/// better by recall. Where none was costed, recall decides
/// ([`Measured::better_than`]).
pub(crate) fn best<S>(measured: impl IntoIterator<Item = (S, Measured)>) -> Option<(S, Measured)> {
    let mut measured: Vec<(S, Measured)> = measured.into_iter().collect();
    let index = crate::cost_choice::cheapest(
        &measured,
        |(_, m)| m.cost.map(|c| (c.cached_share, c.extra_round_trips)),
        |(_, a), (_, b)| {
            if a.better_than(b) {
                std::cmp::Ordering::Less
            } else if b.better_than(a) {
                std::cmp::Ordering::Greater
            } else {
                std::cmp::Ordering::Equal
            }
        },
    )?;
    Some(measured.swap_remove(index))
}

/// The [`SEARCH_GROUPS`] value (the groups `find_tool_groups` lists) whose answers hold the most on `sets`, as
/// the router's settings are chosen ([`best`]: the highest worst-dataset
/// group recall within the token budget, then the highest mean, then the
/// fewest tokens), with its figures there.
pub(crate) fn choose_search_groups(
    sets: &[ChoiceSet<'_>],
    counter: &TokenCounter,
) -> Option<(usize, Measured)> {
    let mut per_value = vec![Vec::new(); SEARCH_GROUPS.len()];
    for set in sets {
        let queries = set.queries();
        for (groups, figures) in SEARCH_GROUPS.iter().zip(&mut per_value) {
            let seen = find_listing(
                set.prepared,
                &set.prepared.taxonomy,
                *groups,
                counter,
                &queries,
            );
            figures.push(set.figures(&queries, &seen));
        }
    }
    best(
        SEARCH_GROUPS
            .iter()
            .zip(&per_value)
            .map(|(groups, figures)| (*groups, Measured::over(figures, sets.len()))),
    )
}

#[cfg(test)]
#[path = "choice_tests.rs"]
mod tests;
