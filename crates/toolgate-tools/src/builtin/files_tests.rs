use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use pretty_assertions::assert_eq;
use serde_json::json;

use super::*;

const SECRET: &str = "OUTSIDE SECRET";

/// Every way this system resolves paths: each test runs under all of them.
#[cfg(any(target_os = "linux", target_os = "android"))]
const RESOLUTIONS: [Resolution; 2] = [Resolution::Kernel, Resolution::Walk];
#[cfg(not(any(target_os = "linux", target_os = "android")))]
const RESOLUTIONS: [Resolution; 1] = [Resolution::Walk];

fn files(root: &Path, resolution: Resolution) -> Files {
    let root = root.canonicalize().unwrap();
    Files::resolving(root, FilesAccess::ReadWrite, resolution).unwrap()
}

fn write(path: &Path, content: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, content).unwrap();
}

fn symlink(target: impl AsRef<Path>, link: &Path) {
    std::os::unix::fs::symlink(target, link).unwrap();
}

fn answer(result: Result<ToolOutput, ToolOutput>) -> ToolOutput {
    let (Ok(output) | Err(output)) = result;
    output
}

/// A root whose links stay inside it, some relative, one absolute; and a
/// directory outside it.
fn linked_root() -> (tempfile::TempDir, tempfile::TempDir) {
    let root = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let at = |relative: &str| root.path().join(relative);
    write(&at("docs/a.txt"), "alpha");
    write(&outside.path().join("secret.txt"), SECRET);
    symlink("docs/a.txt", &at("relative"));
    symlink("relative", &at("chain"));
    symlink("docs", &at("docs_link"));
    std::fs::create_dir(at("docs/sub")).unwrap();
    symlink("../a.txt", &at("docs/sub/up"));
    symlink(
        root.path().canonicalize().unwrap().join("docs/a.txt"),
        &at("absolute"),
    );
    symlink(outside.path(), &at("escape"));
    symlink(outside.path().join("secret.txt"), &at("to_secret"));
    symlink(outside.path().join("missing.txt"), &at("to_missing"));
    symlink("../../outside_missing", &at("docs/up_twice"));
    (root, outside)
}

#[test]
fn links_that_stay_inside_the_root_are_followed() {
    for resolution in RESOLUTIONS {
        let (root, _outside) = linked_root();
        let canonical = root.path().canonicalize().unwrap();
        let files = files(root.path(), resolution);
        for path in [
            "docs/a.txt".to_owned(),
            "./docs/./a.txt".to_owned(),
            "relative".to_owned(),
            "chain".to_owned(),
            "docs_link/a.txt".to_owned(),
            "docs/sub/up".to_owned(),
            "absolute".to_owned(),
            canonical.join("docs/a.txt").display().to_string(),
            canonical.join("docs/../docs/a.txt").display().to_string(),
            canonical
                .join("docs_link/sub/../sub/up")
                .display()
                .to_string(),
        ] {
            assert_eq!(
                answer(files.read(&json!({ "path": path }))),
                ToolOutput::text("alpha"),
                "{resolution:?} {path}"
            );
        }
        let listed = files.list(&json!({"path": "docs_link"})).unwrap();
        let names: Vec<_> = listed.structured.unwrap()["entries"]
            .as_array()
            .unwrap()
            .iter()
            .map(|entry| entry["name"].as_str().unwrap().to_owned())
            .collect();
        assert_eq!(names, ["a.txt", "sub", "up_twice"], "{resolution:?}");

        let written = files
            .write(&json!({"path": "docs_link/new.txt", "content": "beta"}))
            .unwrap();
        assert_eq!(
            written,
            ToolOutput::json(json!({"path": "docs_link/new.txt", "bytes_written": 4}))
        );
        assert_eq!(
            std::fs::read_to_string(root.path().join("docs/new.txt")).unwrap(),
            "beta"
        );
    }
}

#[test]
fn every_path_out_of_the_root_gets_the_same_answer() {
    for resolution in RESOLUTIONS {
        let (root, outside) = linked_root();
        let outside_path = outside.path().canonicalize().unwrap();
        let files = files(root.path(), resolution);
        for path in [
            "escape/secret.txt".to_owned(),
            "escape/missing.txt".to_owned(),
            "to_secret".to_owned(),
            "to_missing".to_owned(),
            "docs/up_twice".to_owned(),
            "../secret.txt".to_owned(),
            "docs/../../secret.txt".to_owned(),
            outside_path.join("secret.txt").display().to_string(),
            root.path()
                .canonicalize()
                .unwrap()
                .join("../secret.txt")
                .display()
                .to_string(),
        ] {
            let outside_root = ToolOutput::error("Parameter 'path' is outside the files root.");
            for result in [
                files.read(&json!({ "path": path })),
                files.list(&json!({ "path": path })),
                files.search(
                    &json!({"query": "secret", "path": path}),
                    &CancellationToken::new(),
                ),
                files.write(&json!({"path": format!("{path}/new.txt"), "content": "x"})),
            ] {
                assert_eq!(answer(result), outside_root, "{resolution:?} {path}");
            }
        }
        assert_eq!(
            std::fs::read_to_string(outside.path().join("secret.txt")).unwrap(),
            SECRET
        );
        assert!(!outside.path().join("new.txt").exists());
    }
}

#[test]
fn a_write_never_goes_through_a_link() {
    let (root, outside) = linked_root();
    for resolution in RESOLUTIONS {
        let files = files(root.path(), resolution);
        for path in ["to_secret", "to_missing", "relative", "docs_link"] {
            assert_eq!(
                answer(files.write(&json!({"path": path, "content": "x"}))),
                ToolOutput::error(format!(
                    "Cannot write '{path}': it is a directory or a symbolic link."
                )),
                "{resolution:?}"
            );
        }
    }
    assert!(!outside.path().join("missing.txt").exists());
    assert_eq!(
        std::fs::read_to_string(outside.path().join("secret.txt")).unwrap(),
        SECRET
    );
    assert_eq!(
        std::fs::read_to_string(root.path().join("docs/a.txt")).unwrap(),
        "alpha"
    );
}

#[test]
fn a_link_loop_is_an_error_not_a_hang() {
    let root = tempfile::tempdir().unwrap();
    symlink("second", &root.path().join("first"));
    symlink("first", &root.path().join("second"));
    for resolution in RESOLUTIONS {
        let files = files(root.path(), resolution);
        let output = answer(files.read(&json!({"path": "first/x"})));
        assert!(
            output.is_error && output.model_text().starts_with("Cannot use 'first/x': "),
            "{resolution:?}: {}",
            output.model_text()
        );
    }
}

#[test]
fn a_named_pipe_is_refused_under_every_resolution() {
    let root = tempfile::tempdir().unwrap();
    write(&root.path().join("notes.txt"), "gamma");
    let made = std::process::Command::new("mkfifo")
        .arg(root.path().join("pipe"))
        .status()
        .unwrap();
    assert!(made.success(), "mkfifo failed");
    symlink("pipe", &root.path().join("to_pipe"));
    // Were the pipe opened to be read, the read would wait for a writer
    // that never comes: the test would hang rather than fail.
    for resolution in RESOLUTIONS {
        let files = files(root.path(), resolution);
        for path in ["pipe", "to_pipe"] {
            let refused = ToolOutput::error(format!(
                "Cannot use '{path}': it is a named pipe (FIFO), not a regular file or directory."
            ));
            assert_eq!(answer(files.read(&json!({ "path": path }))), refused);
            assert_eq!(answer(files.list(&json!({ "path": path }))), refused);
        }
        assert_eq!(
            answer(files.write(&json!({"path": "pipe", "content": "x"}))),
            ToolOutput::error(
                "Cannot use 'pipe': it is a named pipe (FIFO), not a regular file or directory."
            )
        );
        let found = files
            .search(&json!({"query": "gamma"}), &CancellationToken::new())
            .unwrap();
        assert_eq!(found.structured.unwrap()["matches"][0]["path"], "notes.txt");
    }
}

/// Swaps `a` and `b` (both under `dir`) with `renameat2(RENAME_EXCHANGE)`,
/// from four threads, until stopped: what another process on the machine
/// could do while the tools run. Several threads keep the swaps coming
/// while the machine is busy with other work.
#[cfg(any(target_os = "linux", target_os = "android"))]
struct Swapper {
    stop: Arc<AtomicBool>,
    threads: Vec<std::thread::JoinHandle<usize>>,
}

#[cfg(any(target_os = "linux", target_os = "android"))]
impl Swapper {
    fn start(dir: &Path, a: &str, b: &str) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let threads = (0..4)
            .map(|_| {
                let stop = Arc::clone(&stop);
                let (a, b) = (dir.join(a), dir.join(b));
                std::thread::spawn(move || {
                    let mut swaps = 0;
                    while !stop.load(Ordering::Relaxed) {
                        rustix::fs::renameat_with(
                            rustix::fs::CWD,
                            &a,
                            rustix::fs::CWD,
                            &b,
                            rustix::fs::RenameFlags::EXCHANGE,
                        )
                        .unwrap();
                        swaps += 1;
                    }
                    swaps
                })
            })
            .collect();
        Self { stop, threads }
    }

    /// Stops the swaps; how many there were.
    fn stop(mut self) -> usize {
        self.stop.store(true, Ordering::Relaxed);
        self.threads
            .drain(..)
            .map(|thread| thread.join().unwrap())
            .sum()
    }
}

#[cfg(any(target_os = "linux", target_os = "android"))]
impl Drop for Swapper {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// The calls (0-based) whose answer held the secret, and those after which
/// the outside file had changed (it is then put back, so that later reads
/// can still tell).
#[cfg(any(target_os = "linux", target_os = "android"))]
#[derive(Debug, Default, PartialEq)]
struct Leaks {
    read: Vec<usize>,
    searched: Vec<usize>,
    written: Vec<usize>,
}

/// 1,000 reads, searches and writes of `path` while the swapper runs; the
/// leaks, and how many reads answered the inside file.
#[cfg(any(target_os = "linux", target_os = "android"))]
fn race(files: &Files, path: &str, outside: &Path) -> (Leaks, usize) {
    let mut leaks = Leaks::default();
    let mut served = 0;
    for call in 0..1000 {
        let read = answer(files.read(&json!({ "path": path })));
        if read.model_text().contains(SECRET) {
            leaks.read.push(call);
        }
        if read.model_text().starts_with("inside") {
            served += 1;
        }
        let search = json!({"query": "secret"});
        let found = answer(files.search(&search, &CancellationToken::new()));
        if found.model_text().contains(SECRET) {
            leaks.searched.push(call);
        }
        let _ = files.write(&json!({ "path": path, "content": format!("inside {call}") }));
        if std::fs::read_to_string(outside).unwrap() != SECRET {
            leaks.written.push(call);
            std::fs::write(outside, SECRET).unwrap();
        }
    }
    (leaks, served)
}

#[cfg(any(target_os = "linux", target_os = "android"))]
#[test]
fn a_file_swapped_with_a_link_to_outside_is_never_read_nor_written() {
    for resolution in RESOLUTIONS {
        let root = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let secret = outside.path().join("secret.txt");
        write(&secret, SECRET);
        write(&root.path().join("flip"), "inside");
        symlink(&secret, &root.path().join("link"));
        let files = files(root.path(), resolution);

        let swapper = Swapper::start(root.path(), "flip", "link");
        let (leaks, served) = race(&files, "flip", &secret);
        let swaps = swapper.stop();
        assert_eq!(leaks, Leaks::default(), "{resolution:?}, {swaps} swaps");
        assert!(served > 0, "{resolution:?}: no read answered");
        assert_eq!(std::fs::read_to_string(&secret).unwrap(), SECRET);
    }
}

#[cfg(any(target_os = "linux", target_os = "android"))]
#[test]
fn a_directory_swapped_with_a_link_to_outside_is_never_read_nor_written() {
    for resolution in RESOLUTIONS {
        let root = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let secret = outside.path().join("h.txt");
        write(&secret, SECRET);
        write(&root.path().join("d/h.txt"), "inside");
        symlink(outside.path(), &root.path().join("link"));
        let files = files(root.path(), resolution);

        let swapper = Swapper::start(root.path(), "d", "link");
        let (leaks, served) = race(&files, "d/h.txt", &secret);
        let swaps = swapper.stop();
        assert_eq!(leaks, Leaks::default(), "{resolution:?}, {swaps} swaps");
        assert!(served > 0, "{resolution:?}: no read answered");
        assert_eq!(std::fs::read_to_string(&secret).unwrap(), SECRET);
    }
}
