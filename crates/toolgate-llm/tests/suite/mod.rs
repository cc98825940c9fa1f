mod faults;
mod support;
mod wire;
