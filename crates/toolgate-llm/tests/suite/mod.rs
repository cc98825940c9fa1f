mod embeddings;
mod faults;
mod prompted;
mod support;
mod wire;
