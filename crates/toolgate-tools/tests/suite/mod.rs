mod deadline;
mod prompt_manager;
mod toolbox;
mod web;
