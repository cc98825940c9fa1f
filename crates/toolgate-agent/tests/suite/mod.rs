mod compaction;
mod faults;
mod load_budget;
mod loaded_schemas;
mod named_loads;
mod routing;
mod support;
mod turns;
