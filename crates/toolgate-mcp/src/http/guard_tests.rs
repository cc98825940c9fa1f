use super::*;

#[test]
fn only_the_exact_bearer_token_is_authorized() {
    let header = |text: &'static str| http::HeaderValue::from_static(text);
    assert!(authorized(Some(&header("Bearer s3cret")), "s3cret"));
    assert!(!authorized(Some(&header("Bearer s3cre")), "s3cret"));
    assert!(!authorized(Some(&header("Bearer s3cretX")), "s3cret"));
    assert!(!authorized(Some(&header("Basic s3cret")), "s3cret"));
    assert!(authorized(Some(&header("bearer s3cret")), "s3cret"));
    assert!(authorized(Some(&header("BEARER  s3cret")), "s3cret"));
    assert!(!authorized(Some(&header("Bearers3cret")), "s3cret"));
    assert!(!authorized(None, "s3cret"));
}
