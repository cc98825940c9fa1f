use super::{Fusion, group_scores, ranking};

#[test]
fn rrf_adds_the_reciprocal_ranks_of_both_rankings() {
    let lexical = [3.0, 0.0, 1.0];
    let semantic = [0.1, 0.9, 0.5];
    let fused = Fusion::Rrf { k: 1.0 }.fuse(&lexical, Some(&semantic));
    // Tool 0: lexical rank 1, semantic rank 3; tool 1: semantic rank 1
    // only; tool 2: lexical rank 2, semantic rank 2.
    assert_eq!(
        fused,
        [1.0 / 2.0 + 1.0 / 4.0, 1.0 / 2.0, 1.0 / 3.0 + 1.0 / 3.0]
    );
}

#[test]
fn a_blend_scales_each_score_to_the_catalog_before_weighing() {
    let lexical = [4.0, 2.0, 0.0];
    let semantic = [0.25, 0.75, 0.5];
    let fused = Fusion::Blend { weight: 0.5 }.fuse(&lexical, Some(&semantic));
    assert_eq!(fused, [0.5, 0.75, 0.25]);
}

#[test]
fn without_vectors_every_method_is_lexical() {
    let lexical = [1.0, 2.0];
    for fusion in [
        Fusion::Semantic,
        Fusion::Rrf { k: 60.0 },
        Fusion::Blend { weight: 1.0 },
    ] {
        assert_eq!(fusion.fuse(&lexical, None), lexical);
        assert_eq!(fusion.fuse(&lexical, Some(&[0.5])), lexical, "{fusion:?}");
    }
}

#[test]
fn a_group_scores_its_best_tool_and_ranking_skips_tools_without_evidence() {
    assert_eq!(
        group_scores(&[0.2, 0.7, 0.1, 0.0], &[0, 0, 1, 2], 3),
        [0.7, 0.1, 0.0]
    );
    assert_eq!(ranking(&[0.2, 0.0, 0.7, 0.2]), [2, 0, 3]);
}

#[test]
fn fusion_is_read_from_the_configuration() {
    let rrf: Fusion = toml::from_str("method = \"rrf\"\nk = 10.0").unwrap();
    assert_eq!(rrf, Fusion::Rrf { k: 10.0 });
    assert_eq!(rrf.label(), "rrf(k=10)");
    assert!(toml::from_str::<Fusion>("method = \"rrf\"\nkk = 1.0").is_err());
}
