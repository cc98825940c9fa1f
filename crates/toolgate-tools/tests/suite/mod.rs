mod deadline;
mod fuzz;
mod javascript;
mod javascript_host;
mod prompt_manager;
mod site;
mod toolbox;
mod web;
