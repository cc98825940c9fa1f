mod deadline;
mod fuzz;
mod javascript;
mod prompt_manager;
mod toolbox;
mod user_tools;
mod web;
