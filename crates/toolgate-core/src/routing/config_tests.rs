use pretty_assertions::assert_eq;

use super::RoutingConfig;
use crate::routing::test_catalogs::catalog;

#[test]
fn a_config_naming_an_unknown_group_is_refused_with_the_known_ones() {
    let catalog = catalog();
    let config: RoutingConfig =
        toml::from_str("[[intent]]\nname = \"mail\"\ngroups = [\"gmial\"]\n").unwrap();
    assert_eq!(
        config.validate(&catalog).unwrap_err().to_string(),
        "[routing]: intent 'mail' names group 'gmial', which is not in the catalog. Known groups: gmail, calendar, weather"
    );
    let thresholds: RoutingConfig =
        toml::from_str("thresholds = { high = 0.5, medium = 0.8 }\n").unwrap();
    assert!(
        thresholds
            .validate(&catalog)
            .unwrap_err()
            .to_string()
            .contains("medium <= high")
    );
}
