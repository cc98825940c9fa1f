mod faults;
mod routing;
mod support;
mod turns;
