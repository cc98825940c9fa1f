mod faults;
mod prompt_manager;
mod routing;
mod support;
mod turns;
mod web;
