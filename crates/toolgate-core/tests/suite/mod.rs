mod example_catalog;
mod feat_040;
mod fuzz;
