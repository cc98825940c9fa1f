//! The tool-first policies: tool search by each fusion method, the best
//! groups by their best tools, and the router that loads the best tools of
//! the groups it routes, its settings chosen where its figures are not
//! reported (the tuning part, or the other datasets when this one is left
//! out).

use toolgate_core::TokenCounter;
use toolgate_core::routing::{DEFAULT_SEARCH_GROUPS, Decision, Fusion, SelfTest};

use crate::baseline::TOOL_KS;
use crate::choice::{ChoiceSet, Measured, best, fitted_for, fitted_fusion, measure_on, settings};
use crate::figures::{bands, curve_point, router_figures, share_at_cap};
use crate::report::{
    Band, Considered, FittedFusion, LEARNED_ROUTER, PolicyReport, SearchCurve, WITH_ID_FINDERS,
    WITHOUT_ID_FINDERS,
};
use crate::reported::Reported;
use crate::tool_first::{Fitted, Prepared, RouterSetting, fit, fit_labelled, fusions};

/// Where the tool-first router's confidence model comes from.
pub(crate) enum Fitting<'a> {
    /// The dataset's own tuning part.
    Own,
    /// Other datasets only (leave one out).
    Across(&'a [&'a Prepared<'a>]),
}

/// Group counts the best-groups curves are drawn at.
const CURVE_GROUPS: [usize; 10] = [1, 2, 3, 5, 8, 10, 15, 20, 30, 50];

/// What the tool-first policies show and state.
#[derive(Default)]
pub(crate) struct ToolFirst {
    /// Their rows, in report order.
    pub(crate) policies: Vec<PolicyReport>,
    pub(crate) search_curves: Vec<SearchCurve>,
    pub(crate) group_curves: Vec<SearchCurve>,
    /// The headline router's calibration as stated, as fitted alone, and
    /// learning online; and its self-test.
    pub(crate) calibration: Vec<(String, Vec<Band>)>,
    pub(crate) calibration_fitted: Vec<Band>,
    pub(crate) calibration_online: Vec<Band>,
    pub(crate) self_test: Option<SelfTest>,
    /// The headline's setting, and the share of its decisions at its cap.
    pub(crate) setting_name: String,
    pub(crate) at_cap: f64,
    /// What each fusion method's router fits to.
    pub(crate) fitted: Vec<FittedFusion>,
    /// The gateway search's group count, chosen alike.
    pub(crate) search_groups: usize,
    /// The headline setting and its model.
    pub(crate) headline: Option<(RouterSetting, Fitted)>,
    /// What the headline setting was chosen among.
    pub(crate) considered: Vec<Considered>,
}

/// Measures the tool-first policies on `reported`, fitted as `fitting`
/// says.
pub(crate) fn tool_first(
    prepared: &Prepared<'_>,
    counter: &TokenCounter,
    fitting: &Fitting<'_>,
    reported: &Reported<'_>,
) -> ToolFirst {
    let mut out = ToolFirst::default();
    let mut fitted = Vec::new();
    for fusion in fusions(prepared.semantic) {
        curves(prepared, fusion, reported, &mut out);
        let max_groups = prepared.taxonomy.max_groups;
        let model = match fitting {
            Fitting::Own => fit_labelled(
                &[prepared.labelled(fusion, &reported.tuned).as_slice()],
                max_groups,
            ),
            Fitting::Across(others) => fit(others, fusion, max_groups),
        };
        fitted.push((fusion, model));
    }
    // Each fusion method's settings chosen where the figures are not
    // reported: on the other datasets (leave one out), else on this one's
    // tuning part; then the best of them all, the headline.
    let choice_sets: Vec<ChoiceSet<'_>> = match fitting {
        Fitting::Own => vec![ChoiceSet::new(prepared, &fitted, true, counter)],
        Fitting::Across(others) => others
            .iter()
            .map(|other| ChoiceSet::new(other, &fitted, false, counter))
            .collect(),
    };
    // How many groups the gateway's search lists, chosen the same way.
    out.search_groups = crate::choice::choose_search_groups(&choice_sets, counter)
        .map_or(DEFAULT_SEARCH_GROUPS, |(groups, _)| groups);
    let chosen = choose(&fitted, &choice_sets, out.search_groups, &mut out.fitted);
    let headline = fused(&chosen.per_fusion);
    if let Some((setting, model)) = headline.and_then(|s| Some((s, fitted_for(&fitted, s.fusion)?)))
    {
        headline_rows(prepared, setting, model, reported, &mut out);
        for (name, chosen) in [WITHOUT_ID_FINDERS, WITH_ID_FINDERS]
            .iter()
            .zip(&chosen.by_finders)
        {
            if let Some((setting, model)) =
                fused(chosen).and_then(|s| Some((s, fitted_for(&fitted, s.fusion)?)))
            {
                let (seen, _) = prepared.route(setting, model, &reported.queries);
                out.policies.push(reported.summarize(*name, &seen));
            }
        }
        // The same router as `toolgate chat --route` runs it, learning its
        // confidence and recovery groups from the reported queries in order.
        let (seen, learning) = prepared.route_learned(setting, model, &reported.queries);
        out.calibration_online = bands(&learning, &reported.queries);
        out.policies.push(reported.summarize(LEARNED_ROUTER, &seen));
        out.headline = Some((setting, model.clone()));
        out.considered = out
            .fitted
            .iter()
            .find(|fitted| fitted.fusion == setting.fusion)
            .map(|fitted| fitted.considered.clone())
            .unwrap_or_default();
    }
    for (setting, _) in &chosen.per_fusion {
        let Some(model) = fitted_for(&fitted, setting.fusion) else {
            continue;
        };
        let (seen, decisions) = prepared.route(*setting, model, &reported.queries);
        out.policies.push(router_figures(
            reported.summarize(setting.name(), &seen),
            &decisions,
            &seen,
            &reported.queries,
            reported.all,
        ));
    }
    out
}

/// Tool search by `fusion` at several k, and its best groups each with its
/// 1 to 3 best tools at several group counts.
fn curves(prepared: &Prepared<'_>, fusion: Fusion, reported: &Reported<'_>, out: &mut ToolFirst) {
    let curve = |ks: &[usize], seen: &[Vec<crate::costs::Seen>]| {
        ks.iter()
            .zip(seen)
            .map(|(k, seen)| curve_point(*k, &reported.summarize(String::new(), seen)))
            .collect()
    };
    let seen = prepared.tool_search(&prepared.costs, fusion, &TOOL_KS, &reported.queries);
    out.search_curves.push(SearchCurve {
        method: fusion.label(),
        points: curve(&TOOL_KS, &seen),
    });
    for m in [1, 2, 3] {
        let seen =
            prepared.group_search(&prepared.costs, fusion, &CURVE_GROUPS, m, &reported.queries);
        out.group_curves.push(SearchCurve {
            method: format!("groups[{}]@{m}", fusion.label()),
            points: curve(&CURVE_GROUPS, &seen),
        });
    }
}

/// The settings chosen per fusion method, and among those without id
/// finders and those with them.
struct Chosen {
    per_fusion: Vec<(RouterSetting, Measured)>,
    by_finders: [Vec<(RouterSetting, Measured)>; 2],
}

/// Chooses each fusion method's setting on `sets`, recording what each
/// fits to in `fitted_settings`.
fn choose(
    fitted: &[(Fusion, Fitted)],
    sets: &[ChoiceSet<'_>],
    search_groups: usize,
    fitted_settings: &mut Vec<FittedFusion>,
) -> Chosen {
    let mut chosen = Chosen {
        per_fusion: Vec::new(),
        by_finders: [Vec::new(), Vec::new()],
    };
    for (fusion, model) in fitted {
        let trials = measure_on(&settings(*fusion), sets);
        if let Some(best) = trials.best() {
            chosen.per_fusion.push(best);
            let considered = trials.considered(Some(best.0));
            fitted_settings.push(fitted_fusion(
                model,
                best.0,
                best.1,
                considered,
                search_groups,
            ));
        }
        // The same choice among the settings without id finders, and among
        // those with them: what the nested choice was between.
        for (shown, per) in chosen.by_finders.iter_mut().enumerate() {
            per.extend(best(
                trials
                    .each()
                    .filter(|(setting, _)| setting.id_finders == (shown == 1)),
            ));
        }
    }
    chosen
}

/// The best of `chosen` among the fused methods: the router fuses both
/// kinds of evidence; each alone is reported beside it, not a candidate.
fn fused(chosen: &[(RouterSetting, Measured)]) -> Option<RouterSetting> {
    best(
        chosen
            .iter()
            .copied()
            .filter(|(setting, _)| setting.fusion.is_fused()),
    )
    .map(|(setting, _)| setting)
}

/// The headline router's row and its calibration, as stated and as
/// fitted alone, and its self-test.
fn headline_rows(
    prepared: &Prepared<'_>,
    setting: RouterSetting,
    model: &Fitted,
    reported: &Reported<'_>,
    out: &mut ToolFirst,
) {
    let report = &reported.queries;
    let (seen, decisions) = prepared.route(setting, model, report);
    out.calibration
        .push((setting.name(), bands(&decisions, report)));
    let fitted_alone: Vec<Decision> = decisions
        .iter()
        .cloned()
        .map(|mut decision| {
            decision.confidence = decision.fitted_confidence;
            decision
        })
        .collect();
    out.calibration_fitted = bands(&fitted_alone, report);
    out.self_test = prepared.self_test(setting, model);
    out.setting_name = setting.name();
    out.at_cap = share_at_cap(&decisions, setting.max_groups);
    out.policies.push(router_figures(
        reported.summarize("tool_router", &seen),
        &decisions,
        &seen,
        report,
        reported.all,
    ));
}
