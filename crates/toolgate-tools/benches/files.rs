//! What the `files` tools pay to open every path beneath one handle of the
//! root, per read, write and list, against the path-based check it
//! replaced (kept below as it was: the path resolved and checked, then
//! opened again by name) and against plain `std::fs` on the same paths with
//! no check at all, in the same run (divan).
//!
//! `cargo bench -p toolgate-tools --bench files`. `kernel` is `openat2` with
//! `RESOLVE_BENEATH` (Linux), `walk` the component-by-component walk used
//! where the kernel refuses (an absolute link) and on other Unix systems.
//! Before the benches it prints the file handles the process holds: none
//! left behind by the calls, one held for each open root.
#![cfg_attr(
    unix,
    expect(
        clippy::unwrap_used,
        clippy::print_stderr,
        reason = "benchmark setup: a broken fixture should abort loudly; the handle count is a figure to read"
    )
)]

#[cfg(unix)]
#[path = "../src/builtin/files/root.rs"]
#[expect(dead_code, reason = "the benches use part of what the tools use")]
mod root;

#[cfg(not(unix))]
fn main() {}

#[cfg(unix)]
fn main() {
    unix::handles();
    divan::main();
}

#[cfg(unix)]
mod unix {
    use std::fmt;
    use std::io::{Read, Write};
    use std::path::{Path, PathBuf};
    use std::sync::LazyLock;

    use divan::Bencher;

    use crate::root::{Resolution, RootDir};

    /// A root with a file at the top, one four directories down, and a
    /// directory of 100 files.
    struct Fixture {
        _dir: tempfile::TempDir,
        path: PathBuf,
        kernel: RootDir,
        walk: RootDir,
    }

    static FIXTURE: LazyLock<Fixture> = LazyLock::new(|| {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().canonicalize().unwrap();
        let text = "a line of text\n".repeat(256);
        std::fs::write(path.join("notes.txt"), &text).unwrap();
        std::fs::create_dir_all(path.join("src/a/b/c")).unwrap();
        std::fs::write(path.join("src/a/b/c/deep.txt"), &text).unwrap();
        std::fs::create_dir(path.join("many")).unwrap();
        for number in 0..100 {
            std::fs::write(path.join(format!("many/{number}.txt")), "x").unwrap();
        }
        #[cfg(any(target_os = "linux", target_os = "android"))]
        let kernel = RootDir::open(path.clone(), Resolution::Kernel).unwrap();
        #[cfg(not(any(target_os = "linux", target_os = "android")))]
        let kernel = RootDir::open(path.clone(), Resolution::Walk).unwrap();
        let walk = RootDir::open(path.clone(), Resolution::Walk).unwrap();
        Fixture {
            _dir: dir,
            path,
            kernel,
            walk,
        }
    });

    /// How a path is opened.
    #[derive(Clone, Copy, Debug)]
    enum Way {
        /// `std::fs` on `root.join(path)`, no check: the floor.
        Unchecked,
        /// The check it replaced, then the open by name.
        Checked,
        Kernel,
        Walk,
    }

    impl fmt::Display for Way {
        fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
            let name = match self {
                Self::Unchecked => "unchecked_std_fs",
                Self::Checked => "checked_then_opened_by_name",
                Self::Kernel => "kernel",
                Self::Walk => "walk",
            };
            formatter.write_str(name)
        }
    }

    const WAYS: [Way; 4] = [Way::Unchecked, Way::Checked, Way::Kernel, Way::Walk];

    fn beneath(way: Way) -> &'static RootDir {
        match way {
            Way::Kernel => &FIXTURE.kernel,
            Way::Unchecked | Way::Checked | Way::Walk => &FIXTURE.walk,
        }
    }

    fn read(way: Way, path: &str) -> String {
        let root = &FIXTURE.path;
        let mut text = String::new();
        match way {
            Way::Unchecked => {
                std::fs::File::open(root.join(path))
                    .unwrap()
                    .read_to_string(&mut text)
                    .unwrap();
            }
            Way::Checked => {
                let path = replaced::resolve_existing(root, path).unwrap();
                std::fs::File::open(path)
                    .unwrap()
                    .read_to_string(&mut text)
                    .unwrap();
            }
            Way::Kernel | Way::Walk => {
                let root = beneath(way);
                let relative = root.beneath(path).unwrap();
                let opened = root.resolve(&relative).unwrap();
                opened
                    .into_file()
                    .unwrap()
                    .read_to_string(&mut text)
                    .unwrap();
            }
        }
        text
    }

    /// Creates or empties `path` and writes nothing: what is measured is
    /// the resolution and the open, not the file system's block work.
    fn write(way: Way, path: &str) {
        let root = &FIXTURE.path;
        let (parent, name) = path.rsplit_once('/').unwrap_or((".", path));
        match way {
            Way::Unchecked => std::fs::write(root.join(path), "").unwrap(),
            Way::Checked => {
                let directory = replaced::resolve_existing(root, parent).unwrap();
                let path = directory.join(name);
                if let Ok(meta) = std::fs::symlink_metadata(&path) {
                    assert!(meta.file_type().is_file());
                }
                std::fs::write(path, "").unwrap();
            }
            Way::Kernel | Way::Walk => {
                let root = beneath(way);
                let relative = root.beneath(parent).unwrap();
                let directory = root.resolve(&relative).unwrap().into_directory().unwrap();
                let mut file = directory.create_file(std::ffi::OsStr::new(name)).unwrap();
                file.write_all(b"").unwrap();
            }
        }
    }

    /// Each entry's name, and its size as `files_list` reports it.
    fn list(way: Way, path: &str) -> Vec<(String, u64)> {
        let root = &FIXTURE.path;
        let from_std = |directory: &Path| {
            std::fs::read_dir(directory)
                .unwrap()
                .map(|entry| {
                    let entry = entry.unwrap();
                    let _ = entry.file_type().unwrap();
                    let size = entry.metadata().unwrap().len();
                    (entry.file_name().to_string_lossy().into_owned(), size)
                })
                .collect()
        };
        match way {
            Way::Unchecked => from_std(&root.join(path)),
            Way::Checked => from_std(&replaced::resolve_existing(root, path).unwrap()),
            Way::Kernel | Way::Walk => {
                let root = beneath(way);
                let relative = root.beneath(path).unwrap();
                let mut directory = root.resolve(&relative).unwrap().into_directory().unwrap();
                let entries = directory.entries().unwrap();
                entries
                    .into_iter()
                    .map(|entry| {
                        let size = directory.size(&entry.name).unwrap();
                        (entry.name.to_string_lossy().into_owned(), size)
                    })
                    .collect()
            }
        }
    }

    #[divan::bench(args = WAYS, sample_count = 1000, sample_size = 10)]
    fn read_top_level_file(bencher: Bencher, way: Way) {
        bencher.bench(|| read(way, "notes.txt"));
    }

    #[divan::bench(args = WAYS, sample_count = 1000, sample_size = 10)]
    fn read_four_directories_down(bencher: Bencher, way: Way) {
        bencher.bench(|| read(way, "src/a/b/c/deep.txt"));
    }

    #[divan::bench(args = WAYS, sample_count = 1000, sample_size = 10)]
    fn write_empty_top_level_file(bencher: Bencher, way: Way) {
        bencher.bench(|| write(way, "notes_copy.txt"));
    }

    #[divan::bench(args = WAYS, sample_count = 1000, sample_size = 10)]
    fn write_empty_four_directories_down(bencher: Bencher, way: Way) {
        bencher.bench(|| write(way, "src/a/b/c/deep_copy.txt"));
    }

    #[divan::bench(args = WAYS, sample_count = 1000, sample_size = 10)]
    fn list_100_entries(bencher: Bencher, way: Way) {
        bencher.bench(|| list(way, "many"));
    }

    /// The handles this process holds, from `/proc/self/fd` (Linux) or
    /// `/dev/fd`.
    fn open_handles() -> usize {
        let listing = std::fs::read_dir("/proc/self/fd").or_else(|_| std::fs::read_dir("/dev/fd"));
        // The listing's own handle is one of them.
        listing.unwrap().count() - 1
    }

    /// Prints the handles held: before any root is open, with one more,
    /// and after 1,000 reads, writes and lists through each way.
    pub(super) fn handles() {
        let before = open_handles();
        let root = RootDir::open(FIXTURE.path.clone(), Resolution::Walk).unwrap();
        let with_one_more = open_handles();
        drop(root);
        let with_fixture = open_handles();
        for way in WAYS {
            for _ in 0..1000 {
                read(way, "src/a/b/c/deep.txt");
                write(way, "src/a/b/c/deep_copy.txt");
                list(way, "many");
            }
        }
        let after = open_handles();
        eprintln!(
            "open handles: {before} before the fixture, {with_fixture} with its two roots open, \
             {with_one_more} with a third, {after} after 1,000 reads, writes and lists each way"
        );
    }

    /// The resolution the files tools used before: the path resolved and
    /// checked by name, then opened again by name.
    mod replaced {
        use std::ffi::OsString;
        use std::fs;
        use std::path::{Component, Path, PathBuf};

        const MAX_LINKS: usize = 40;

        pub(super) fn resolve_existing(root: &Path, requested: &str) -> Result<PathBuf, String> {
            let candidate = Path::new(requested);
            if !candidate.is_absolute()
                && candidate
                    .components()
                    .any(|c| matches!(c, Component::ParentDir))
            {
                return Err("outside".to_owned());
            }
            let joined = if candidate.is_absolute() {
                candidate.to_path_buf()
            } else {
                root.join(candidate)
            };
            if !leads_to(&joined).starts_with(root) {
                return Err("outside".to_owned());
            }
            let resolved = joined.canonicalize().map_err(|error| error.to_string())?;
            if !resolved.starts_with(root) {
                return Err("outside".to_owned());
            }
            let kind = fs::metadata(&resolved)
                .map_err(|error| error.to_string())?
                .file_type();
            if kind.is_file() || kind.is_dir() {
                Ok(resolved)
            } else {
                Err("special".to_owned())
            }
        }

        fn leads_to(path: &Path) -> PathBuf {
            enum Step {
                Prefix(OsString),
                Root(OsString),
                Up,
                Name(OsString),
            }
            fn steps(path: &Path) -> Vec<Step> {
                let mut steps: Vec<Step> = path
                    .components()
                    .filter_map(|component| match component {
                        Component::Prefix(prefix) => {
                            Some(Step::Prefix(prefix.as_os_str().to_owned()))
                        }
                        Component::RootDir => Some(Step::Root(component.as_os_str().to_owned())),
                        Component::CurDir => None,
                        Component::ParentDir => Some(Step::Up),
                        Component::Normal(name) => Some(Step::Name(name.to_owned())),
                    })
                    .collect();
                steps.reverse();
                steps
            }
            let mut pending = steps(path);
            let mut links = 0;
            let mut at = PathBuf::new();
            while let Some(step) = pending.pop() {
                match step {
                    Step::Prefix(prefix) => at = PathBuf::from(prefix),
                    Step::Root(root) => at.push(root),
                    Step::Up => {
                        at.pop();
                    }
                    Step::Name(name) => {
                        let next = at.join(&name);
                        match fs::read_link(&next) {
                            Ok(target) if links < MAX_LINKS => {
                                links += 1;
                                pending.extend(steps(&target));
                            }
                            _ => at = next,
                        }
                    }
                }
            }
            at
        }
    }
}
