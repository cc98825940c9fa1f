//! Leave one dataset out: the router's parameters fitted on every dataset
//! but one and measured on the one left out. These are the figures that say
//! how routing does on a catalog it was never tuned on; figures tuned on a
//! dataset's own queries flatter it.

use toolgate_core::TokenCounter;
use toolgate_core::routing::{
    ConfidenceKind, DEFAULT_SEARCH_GROUPS, Fusion, Labelled, PerGroup, Router, RoutingConfig,
    fit_per_group_pooled,
};

use crate::choice::{ChoiceSet, choose, choose_search_groups, fitted_fusion, settings};
use crate::dataset::{Dataset, Query};
use crate::error::{EvalError, Result};
use crate::evaluate::{Measure, SemanticInputs, evaluate_prepared, vectors};
use crate::policy::labelled;
use crate::report::{Evaluation, FittedFusion};
use crate::tool_first::{Fitted, Prepared, fit, fusions};
use crate::tool_router::Fitting;

/// The per-group confidence model fitted on every labelled query of
/// `datasets`, each dataset weighing the same. Intents and recovery groups
/// name one catalog's groups, so the fit uses the lexical router without
/// them.
pub fn fit_across(datasets: &[&Dataset]) -> Result<PerGroup> {
    let mut sets: Vec<Vec<Labelled>> = Vec::new();
    for dataset in datasets {
        let taxonomy = RoutingConfig::default().validate(&dataset.catalog)?;
        let router = Router::lexical(&dataset.catalog, taxonomy);
        let queries: Vec<&Query> = dataset
            .queries
            .iter()
            .filter(|q| !q.gold_groups.is_empty())
            .collect();
        let lexical =
            |router: &Router, query: &Query| router.scores(&query.text, &query.earlier_turns());
        sets.push(labelled(&router, &queries, &lexical));
    }
    let sets: Vec<&[Labelled]> = sets.iter().map(Vec::as_slice).collect();
    Ok(fit_per_group_pooled(&sets))
}

/// Evaluates each of `datasets` with the per-group model fitted on the
/// others ([`fit_across`]), for a model whose context window is
/// `context_window` tokens; the left-out dataset's own queries tune
/// nothing. `progress(dataset, done, total)` is called as queries are
/// processed.
///
/// `semantic` gives each dataset's vectors (in dataset order; missing or
/// `None` entries leave that dataset lexical): the tool-first router's
/// model for each fusion method is fitted on the other datasets' scores.
/// The datasets are prepared once, for the evaluations and for the
/// settings fitted on all of them.
pub fn leave_one_out(
    datasets: &[Dataset],
    semantic: &[Option<SemanticInputs>],
    counter: &TokenCounter,
    config: &RoutingConfig,
    context_window: usize,
    progress: &mut dyn FnMut(&str, usize, usize),
) -> Result<LeftOut> {
    if datasets.len() < 2 {
        return Err(EvalError::LeaveOneOut(datasets.len()));
    }
    let prepared: Vec<Prepared<'_>> = datasets
        .iter()
        .enumerate()
        .map(|(index, dataset)| {
            let inputs = semantic.get(index).and_then(Option::as_ref);
            Prepared::new(dataset, config, vectors(inputs), counter)
        })
        .collect::<Result<_>>()?;
    let mut evaluations = Vec::new();
    for (index, left_out) in datasets.iter().enumerate() {
        let others: Vec<&Dataset> = datasets
            .iter()
            .enumerate()
            .filter(|(other, _)| *other != index)
            .map(|(_, dataset)| dataset)
            .collect();
        let fitted = fit_across(&others)?;
        let config = RoutingConfig {
            confidence: ConfidenceKind::PerGroup,
            per_group: Some(fitted),
            ..config.clone()
        };
        let other_prepared: Vec<&Prepared<'_>> = prepared
            .iter()
            .enumerate()
            .filter(|(other, _)| *other != index)
            .map(|(_, p)| p)
            .collect();
        let measure = Measure {
            config: &config,
            context_window,
        };
        let mut evaluation = evaluate_prepared(
            &prepared[index],
            counter,
            measure,
            Fitting::Across(&other_prepared),
            &mut |done, total| progress(&left_out.name, done, total),
        )?;
        evaluation.tuned_on = others.iter().map(|d| d.name.clone()).collect();
        evaluations.push(evaluation);
    }
    Ok(LeftOut {
        evaluations,
        fitted: fit_fusions(&prepared, counter),
    })
}

/// What [`leave_one_out`] measures and fits.
#[derive(Clone, Debug)]
pub struct LeftOut {
    /// Each dataset measured with everything fitted on the others.
    pub evaluations: Vec<Evaluation>,
    /// The settings each fusion method fits to on all the datasets.
    pub fitted: Vec<FittedFusion>,
}

/// [`FittedFusion`] for every fusion method the vectors allow, fitted on
/// every labelled query of `prepared` (each dataset weighing the same).
fn fit_fusions(prepared: &[Prepared<'_>], counter: &TokenCounter) -> Vec<FittedFusion> {
    let all: Vec<&Prepared<'_>> = prepared.iter().collect();
    let with_vectors = prepared.iter().all(|p| p.semantic);
    let max_groups = prepared.first().map_or(20, |p| p.taxonomy.max_groups);
    let fitted: Vec<(Fusion, Fitted)> = fusions(with_vectors)
        .into_iter()
        .map(|fusion| (fusion, fit(&all, fusion, max_groups)))
        .collect();
    let sets: Vec<ChoiceSet<'_>> = prepared
        .iter()
        .map(|p| ChoiceSet::new(p, &fitted, false, counter))
        .collect();
    let search_groups =
        choose_search_groups(&sets, counter).map_or(DEFAULT_SEARCH_GROUPS, |(groups, _)| groups);
    fitted
        .iter()
        .filter_map(|(fusion, model)| {
            let (setting, measured, considered) = choose(&settings(*fusion), &sets)?;
            Some(fitted_fusion(
                model,
                setting,
                measured,
                considered,
                search_groups,
            ))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::small_dataset;

    #[test]
    fn each_dataset_is_measured_with_a_model_fitted_on_the_others_only() {
        let a = small_dataset("a");
        let b = small_dataset("b");
        let c = small_dataset("c");
        let counter = TokenCounter::new(toolgate_core::Encoding::O200kBase).unwrap();
        let datasets = [a, b, c];
        let left_out = leave_one_out(
            &datasets,
            &[],
            &counter,
            &RoutingConfig::default(),
            crate::DEFAULT_CONTEXT_WINDOW,
            &mut |_, _, _| {},
        )
        .unwrap();
        let evaluations = left_out.evaluations;
        // No vectors: the lexical fusion alone is fitted on all three.
        let fitted: Vec<Fusion> = left_out.fitted.iter().map(|f| f.fusion).collect();
        assert_eq!(fitted, [Fusion::Lexical]);
        // Three copies of one catalog: the costliest one's share is the mean.
        let lexical = &left_out.fitted[0];
        assert!(lexical.token_fraction > 0.0, "{lexical:?}");
        assert!(
            (lexical.most_tokens - lexical.token_fraction).abs() < 1e-12,
            "{lexical:?}"
        );
        let tuned_on: Vec<Vec<String>> = evaluations.iter().map(|e| e.tuned_on.clone()).collect();
        assert_eq!(
            tuned_on,
            [["b", "c"], ["a", "c"], ["a", "b"]].map(|names| names.map(str::to_owned).to_vec())
        );
        let expected = describe_fit(&fit_across(&[&datasets[1], &datasets[2]]).unwrap());
        assert_eq!(evaluations[0].confidence_model, expected);
        let [a, _, _] = datasets;
        assert!(matches!(
            leave_one_out(
                &[a],
                &[],
                &counter,
                &RoutingConfig::default(),
                crate::DEFAULT_CONTEXT_WINDOW,
                &mut |_, _, _| {}
            ),
            Err(EvalError::LeaveOneOut(1))
        ));
    }

    fn describe_fit(model: &PerGroup) -> String {
        crate::policy::describe(toolgate_core::routing::Confidence::PerGroup(*model))
    }
}
