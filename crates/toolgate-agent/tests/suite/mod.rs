mod faults;
mod support;
mod turns;
