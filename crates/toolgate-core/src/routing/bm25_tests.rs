use super::Bm25;

fn doc(text: &str) -> Vec<(String, f64)> {
    text.split_whitespace()
        .map(|t| (t.to_owned(), 1.0))
        .collect()
}

#[test]
fn rarer_and_more_frequent_terms_score_higher() {
    let index = Bm25::new([
        doc("weather forecast rain"),
        doc("email send inbox"),
        doc("weather map"),
    ]);
    let scores = index.scores(&doc("weather rain"));
    assert!(
        scores[0] > scores[2],
        "{scores:?}: rain is rare and only in doc 0"
    );
    assert!(scores[2] > 0.0 && scores[1] == 0.0, "{scores:?}");
    assert_eq!(index.scores(&doc("nothing")), vec![0.0; 3]);
}

#[test]
fn a_long_document_does_not_win_by_length_alone() {
    let long = format!("email {}", "filler ".repeat(200));
    let index = Bm25::new([doc(&long), doc("email inbox")]);
    let scores = index.scores(&doc("email"));
    assert!(scores[1] > scores[0], "{scores:?}");
}

#[test]
fn the_same_query_scores_the_same_to_the_last_bit() {
    let documents = [
        "create issue in repository with labels",
        "list pull requests of a repository",
        "search code across repositories by query",
        "get weather forecast for a city",
    ];
    let query = doc("repository issue labels query city forecast pull");
    let first = Bm25::new(documents.map(doc)).scores(&query);
    for _ in 0..20 {
        let again = Bm25::new(documents.map(doc)).scores(&query);
        let bits = |scores: &[f64]| scores.iter().map(|s| s.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&again), bits(&first));
    }
}
