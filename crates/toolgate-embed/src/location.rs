//! Where the model files are: a setting, else `TOOLGATE_EMBED_MODEL`, else
//! `$XDG_DATA_HOME/toolgate/models/all-MiniLM-L6-v2` (`XDG_DATA_HOME`
//! defaulting to `~/.local/share`).

use std::path::PathBuf;

/// The model directory's name under the data directory.
pub const MODEL_NAME: &str = "all-MiniLM-L6-v2";

/// The environment variable naming a model directory.
pub const MODEL_DIR_ENV: &str = "TOOLGATE_EMBED_MODEL";

/// The model directory: `setting` when given, else `TOOLGATE_EMBED_MODEL`,
/// else [`default_model_dir`]. `env` reads an environment variable. Whether
/// the directory exists is for [`Embedder::load`](crate::Embedder::load) to
/// say.
pub fn model_dir(
    setting: Option<&std::path::Path>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Option<PathBuf> {
    if let Some(dir) = setting {
        return Some(dir.to_path_buf());
    }
    if let Some(dir) = env(MODEL_DIR_ENV).filter(|v| !v.is_empty()) {
        return Some(PathBuf::from(dir));
    }
    default_model_dir(env)
}

/// `$XDG_DATA_HOME/toolgate/models/all-MiniLM-L6-v2`, or under
/// `$HOME/.local/share` when `XDG_DATA_HOME` is unset or relative; `None`
/// without either.
pub fn default_model_dir(env: &dyn Fn(&str) -> Option<String>) -> Option<PathBuf> {
    let data = env("XDG_DATA_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| {
            env("HOME")
                .filter(|h| !h.is_empty())
                .map(|home| PathBuf::from(home).join(".local/share"))
        })?;
    Some(data.join("toolgate/models").join(MODEL_NAME))
}

#[cfg(test)]
#[path = "location_tests.rs"]
mod tests;
