mod embeddings;
mod faults;
mod support;
mod wire;
