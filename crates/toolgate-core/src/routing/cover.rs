//! The routing rules: from the groups' chances, most probable first, to the
//! groups routed and their raw cover (the chance that no needed group is
//! left out, or the softmax mass they hold). The router decides by them, and
//! the fits of its confidence model ([`crate::routing::fit_temperature`],
//! [`crate::routing::calibration_samples`]) replay them on labelled turns,
//! so both count a cover the same way.

use crate::name::GroupId;
use crate::routing::config::Thresholds;

/// Softmax temperature when none is configured or fit.
pub const DEFAULT_TEMPERATURE: f64 = 0.12;

/// Probability mass the routed groups should reach.
pub const COVERAGE_TARGET: f64 = 0.9;

/// Softmax of scores scaled by the best one, at `temperature`.
pub fn probabilities(scores: &[f64], temperature: f64) -> Vec<f64> {
    let top = scores.iter().copied().fold(0.0_f64, f64::max);
    if top <= 0.0 || scores.is_empty() {
        return vec![1.0 / scores.len().max(1) as f64; scores.len()];
    }
    let exps: Vec<f64> = scores
        .iter()
        .map(|s| ((s / top - 1.0) / temperature).exp())
        .collect();
    let sum: f64 = exps.iter().sum();
    exps.into_iter().map(|e| e / sum).collect()
}

/// The most probable groups until their mass reaches [`COVERAGE_TARGET`]
/// (at most `max_groups`), and that mass.
pub(crate) fn route_by_mass(ranked: &[(GroupId, f64)], max_groups: usize) -> (Vec<GroupId>, f64) {
    let mut routed = Vec::new();
    let mut mass = 0.0;
    for (group, probability) in ranked.iter().take(max_groups) {
        routed.push(group.clone());
        mass += probability;
        if mass >= COVERAGE_TARGET {
            break;
        }
    }
    (routed, mass.min(1.0))
}

/// Per-group chances, most probable first: the fewest groups whose cover
/// (the chance that no needed group is outside them, through `calibrate`)
/// reaches the high threshold; else the fewest reaching the medium one; else
/// all `max_groups`. Returns them and their raw cover.
pub(crate) fn route_by_cover(
    ranked: &[(GroupId, f64)],
    max_groups: usize,
    thresholds: Thresholds,
    calibrate: &dyn Fn(f64) -> f64,
) -> (Vec<GroupId>, f64) {
    let mut medium = None;
    let mut last = 0.0;
    let count = ranked.len().min(max_groups);
    let probabilities: Vec<f64> = ranked.iter().map(|(_, p)| *p).collect();
    for (index, cover) in covers(&probabilities, max_groups).into_iter().enumerate() {
        last = cover;
        let calibrated = calibrate(cover);
        if calibrated >= thresholds.high {
            return (names(&ranked[..=index]), cover);
        }
        if medium.is_none() && calibrated >= thresholds.medium {
            medium = Some((index + 1, cover));
        }
    }
    match medium {
        Some((routed, cover)) => (names(&ranked[..routed]), cover),
        None => (names(&ranked[..count]), last),
    }
}

/// `ranked` with the groups at `places` (ascending) first, the others
/// after them, each part in its order.
pub(crate) fn affordable_first(ranked: &[(GroupId, f64)], places: &[usize]) -> Vec<(GroupId, f64)> {
    let mut order = Vec::with_capacity(ranked.len());
    let mut passed_over = Vec::new();
    let mut next = places.iter().peekable();
    for (place, entry) in ranked.iter().enumerate() {
        if next.next_if(|p| **p == place).is_some() {
            order.push(entry.clone());
        } else {
            passed_over.push(entry.clone());
        }
    }
    order.extend(passed_over);
    order
}

/// The first `count` groups of `ranked` (most probable first), at least
/// one, with their raw cover (every later group's chance counted as left
/// out).
pub(crate) fn route_prefix(ranked: &[(GroupId, f64)], count: usize) -> (Vec<GroupId>, f64) {
    let count = count.max(1).min(ranked.len());
    let probabilities: Vec<f64> = ranked.iter().map(|(_, p)| *p).collect();
    let cover = covers(&probabilities, count).last().copied().unwrap_or(0.0);
    (names(&ranked[..count]), cover)
}

/// The raw cover of each prefix of the groups' chances, most probable first
/// (the best group, the best two, ...), at most `max_groups` long.
pub(crate) fn covers(probabilities: &[f64], max_groups: usize) -> Vec<f64> {
    // ln P(no needed group among the groups not routed yet).
    let mut outside: f64 = probabilities
        .iter()
        .map(|p| (1.0 - p).max(1e-12).ln())
        .sum();
    probabilities
        .iter()
        .take(max_groups)
        .map(|probability| {
            outside -= (1.0 - probability).max(1e-12).ln();
            outside.exp().min(1.0)
        })
        .collect()
}

fn names(ranked: &[(GroupId, f64)]) -> Vec<GroupId> {
    ranked.iter().map(|(group, _)| group.clone()).collect()
}

#[cfg(test)]
#[path = "cover_tests.rs"]
mod tests;
