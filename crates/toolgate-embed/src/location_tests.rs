use std::path::{Path, PathBuf};

use super::*;

fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
    move |name| {
        pairs
            .iter()
            .find(|(key, _)| *key == name)
            .map(|(_, value)| value.to_string())
    }
}

#[test]
fn a_setting_comes_first_then_the_variable_then_the_data_directory() {
    let all = [
        ("TOOLGATE_EMBED_MODEL", "/models/mine"),
        ("XDG_DATA_HOME", "/data"),
        ("HOME", "/home/u"),
    ];
    assert_eq!(
        model_dir(Some(Path::new("/set")), &env(&all)),
        Some(PathBuf::from("/set"))
    );
    assert_eq!(
        model_dir(None, &env(&all)),
        Some(PathBuf::from("/models/mine"))
    );
    assert_eq!(
        model_dir(None, &env(&all[1..])),
        Some(PathBuf::from("/data/toolgate/models/all-MiniLM-L6-v2"))
    );
}

#[test]
fn the_data_directory_defaults_to_local_share() {
    assert_eq!(
        default_model_dir(&env(&[("HOME", "/home/u"), ("XDG_DATA_HOME", "relative")])),
        Some(PathBuf::from(
            "/home/u/.local/share/toolgate/models/all-MiniLM-L6-v2"
        ))
    );
    assert_eq!(default_model_dir(&env(&[])), None);
}
