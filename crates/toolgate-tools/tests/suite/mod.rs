mod deadline;
mod fuzz;
mod javascript;
mod prompt_manager;
mod reload;
mod toolbox;
mod web;
