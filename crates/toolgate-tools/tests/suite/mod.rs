mod deadline;
mod fuzz;
mod javascript;
mod js_examples;
mod prompt_manager;
mod toolbox;
mod web;
