use super::{CosineFloor, Fusion, group_scores, ranking};

const BLEND: Fusion = Fusion::Blend {
    weight: 0.5,
    floor: CosineFloor::Lowest,
};

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
    let fused = BLEND.fuse(&lexical, Some(&semantic));
    assert_eq!(fused, [0.5, 0.75, 0.25]);
}

#[test]
fn a_blend_from_the_median_gives_the_tools_below_it_no_semantic_share() {
    let lexical = [0.0, 0.0, 0.0, 0.0, 2.0];
    let semantic = [0.2, 0.3, 0.4, 0.8, 0.1];
    let median = Fusion::Blend {
        weight: 0.5,
        floor: CosineFloor::Median,
    };
    // Median 0.3, highest 0.8: 0.4 is a fifth of the way up.
    let fused = median.fuse(&lexical, Some(&semantic));
    let expected = [0.0, 0.0, 0.1, 0.5, 0.5];
    for (f, e) in fused.iter().zip(expected) {
        assert!((f - e).abs() < 1e-12, "{fused:?}");
    }
    // From the lowest, every tool above it keeps a share.
    let fused = BLEND.fuse(&lexical, Some(&semantic));
    assert!(fused[..4].iter().all(|f| *f > 0.0), "{fused:?}");
    assert_eq!(median.label(), "blend(0.5, median)");
    let read: Fusion =
        toml::from_str("method = \"blend\"\nweight = 0.5\nfloor = \"median\"").unwrap();
    assert_eq!(read, median);
    let read: Fusion = toml::from_str("method = \"blend\"\nweight = 0.5").unwrap();
    assert_eq!(read, BLEND);
}

#[test]
fn without_vectors_every_method_is_lexical() {
    let lexical = [1.0, 2.0];
    for fusion in [
        Fusion::Semantic,
        Fusion::Rrf { k: 60.0 },
        Fusion::Blend {
            weight: 1.0,
            floor: CosineFloor::Median,
        },
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
