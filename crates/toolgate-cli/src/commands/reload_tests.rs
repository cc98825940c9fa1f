// The chains are made of symbolic links.
#![cfg(unix)]

use std::collections::BTreeSet;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

use pretty_assertions::assert_eq;

use super::{Chain, WithoutTokens};

/// A temporary directory, by the path its links resolve to.
fn root() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let real = dir.path().canonicalize().unwrap();
    (dir, real)
}

fn dirs(paths: &[&Path]) -> BTreeSet<PathBuf> {
    paths.iter().map(|path| path.to_path_buf()).collect()
}

#[test]
fn a_plain_file_is_its_own_chain() {
    let (_dir, root) = root();
    let file = root.join("toolgate.toml");
    std::fs::write(&file, "").unwrap();
    let chain = Chain::of(&file);
    assert_eq!(
        chain,
        Chain {
            links: vec![],
            file
        }
    );
    assert_eq!(chain.dirs(), dirs(&[&root]));
}

#[test]
fn a_link_to_a_file_in_another_directory_leads_there() {
    let (_dir, root) = root();
    std::fs::create_dir(root.join("conf")).unwrap();
    std::fs::write(root.join("conf/real.toml"), "").unwrap();
    symlink("conf/real.toml", root.join("toolgate.toml")).unwrap();
    let chain = Chain::of(&root.join("toolgate.toml"));
    assert_eq!(
        chain,
        Chain {
            links: vec![root.join("toolgate.toml")],
            file: root.join("conf/real.toml"),
        }
    );
    assert_eq!(chain.dirs(), dirs(&[&root, &root.join("conf")]));
    assert!(chain.holds(&root.join("conf/real.toml")));
    assert!(!chain.holds(&root.join("conf/other.toml")));
}

#[test]
fn a_config_map_leads_through_its_data_link_and_a_swap_changes_the_chain() {
    let (_dir, root) = root();
    std::fs::create_dir(root.join("..2026_01")).unwrap();
    std::fs::write(root.join("..2026_01/toolgate.toml"), "").unwrap();
    symlink("..2026_01", root.join("..data")).unwrap();
    symlink("..data/toolgate.toml", root.join("toolgate.toml")).unwrap();
    let before = Chain::of(&root.join("toolgate.toml"));
    assert_eq!(
        before,
        Chain {
            links: vec![root.join("toolgate.toml"), root.join("..data")],
            file: root.join("..2026_01/toolgate.toml"),
        }
    );
    assert_eq!(before.dirs(), dirs(&[&root, &root.join("..2026_01")]));

    std::fs::create_dir(root.join("..2026_02")).unwrap();
    std::fs::write(root.join("..2026_02/toolgate.toml"), "").unwrap();
    symlink("..2026_02", root.join("..data_tmp")).unwrap();
    std::fs::rename(root.join("..data_tmp"), root.join("..data")).unwrap();
    let after = Chain::of(&root.join("toolgate.toml"));
    assert_eq!(after.file, root.join("..2026_02/toolgate.toml"));
    assert_ne!(before, after);
}

#[test]
fn links_up_and_through_directories_resolve_as_the_kernel_does() {
    let (_dir, root) = root();
    std::fs::create_dir_all(root.join("etc/toolgate")).unwrap();
    std::fs::create_dir(root.join("app")).unwrap();
    std::fs::write(root.join("etc/toolgate/toolgate.toml"), "").unwrap();
    symlink(root.join("etc"), root.join("app/etc")).unwrap();
    symlink(
        "../app/etc/toolgate/toolgate.toml",
        root.join("app/toolgate.toml"),
    )
    .unwrap();
    let chain = Chain::of(&root.join("app/toolgate.toml"));
    assert_eq!(
        chain,
        Chain {
            links: vec![root.join("app/toolgate.toml"), root.join("app/etc")],
            file: root.join("etc/toolgate/toolgate.toml"),
        }
    );
    assert_eq!(
        chain.file.canonicalize().unwrap(),
        root.join("app/toolgate.toml").canonicalize().unwrap()
    );
}

#[test]
fn a_missing_file_and_a_link_loop_end_the_walk() {
    let (_dir, root) = root();
    let missing = Chain::of(&root.join("gone/toolgate.toml"));
    assert_eq!(missing.file, root.join("gone/toolgate.toml"));
    symlink("b", root.join("a")).unwrap();
    symlink("a", root.join("b")).unwrap();
    let looped = Chain::of(&root.join("a"));
    assert_eq!(looped.links.len(), super::MAX_LINKS);
}

#[test]
fn only_a_listener_without_a_shared_token_opens() {
    let local = "127.0.0.1:8848".parse().unwrap();
    let exposed = "0.0.0.0:8848".parse().unwrap();
    assert_eq!(WithoutTokens::of(None, None), WithoutTokens::Guarded);
    assert_eq!(
        WithoutTokens::of(Some(exposed), Some("shared")),
        WithoutTokens::Guarded
    );
    assert_eq!(
        WithoutTokens::of(Some(local), None),
        WithoutTokens::OpenToThisMachine(local)
    );
    assert_eq!(
        WithoutTokens::of(Some(exposed), None),
        WithoutTokens::OpenToOtherMachines(exposed)
    );
}
