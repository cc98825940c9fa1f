mod compaction;
mod faults;
mod loaded_schemas;
mod routing;
mod support;
mod turns;
