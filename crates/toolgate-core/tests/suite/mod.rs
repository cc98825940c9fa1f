mod example_catalog;
mod fuzz;
mod groups_on_demand;
