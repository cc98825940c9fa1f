mod deadline;
mod fuzz;
mod prompt_manager;
mod toolbox;
mod web;
