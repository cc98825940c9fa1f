//! The files root as one open directory handle, and every path under it
//! opened from that handle. A path is never checked and then opened again
//! by name: each component is looked up relative to the handle of the
//! directory it is in, so a symbolic link that another process swaps in
//! while a call runs is either followed and judged like any link, or not
//! seen at all. It never leads an open outside the root.
//!
//! On Linux the kernel resolves the whole path: `openat2` with
//! `RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS` fails with `EXDEV` at any step
//! that would leave the root (`..` above it, an absolute link, a `/proc`
//! magic link). Where it says so, where `openat2` is missing or filtered,
//! and on the other Unix systems, the walk does the same one component at
//! a time: `fstatat` without following, a link's target read with
//! `readlinkat` and walked in turn, each directory opened with `O_NOFOLLOW`
//! from its parent's handle, `..` back to the handle it came from and never
//! above the root. The walk also follows an absolute link whose target is
//! written under the root's own path, as the files tools always did; any
//! other absolute target is outside.
//!
//! Nothing but a regular file or a directory is opened: the type is read
//! before the open (`O_PATH` and `fstat`, or `fstatat`), every open uses
//! `O_NONBLOCK`, and the opened handle's type is checked again, so a named
//! pipe or a device swapped in meanwhile never blocks a thread nor gets
//! read.
//!
//! This file uses nothing of the crate: the `files` benchmark compiles it
//! on its own.

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io;
use std::os::fd::{BorrowedFd, OwnedFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Component, Path, PathBuf};

use rustix::fs::{AtFlags, Dir, FileType, Mode, OFlags, Stat, fstat, openat, readlinkat, statat};
use rustix::io::Errno;

/// Most symbolic links followed in one path, the kernel's own limit.
/// Entries found changed under the walk count too, so a walk always ends.
const MAX_LINKS: usize = 40;

/// How a directory is opened: to be read, never through a link.
const DIRECTORY: OFlags = OFlags::RDONLY
    .union(OFlags::DIRECTORY)
    .union(OFlags::NOFOLLOW)
    .union(OFlags::CLOEXEC);
/// How a file is opened to be read: without blocking on a named pipe, never
/// becoming the controlling terminal.
const READ: OFlags = OFlags::RDONLY
    .union(OFlags::NONBLOCK)
    .union(OFlags::NOCTTY)
    .union(OFlags::CLOEXEC);

/// How paths are opened beneath the root.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Resolution {
    /// The kernel resolves each path (`openat2` with `RESOLVE_BENEATH`);
    /// the walk answers where it refuses.
    #[cfg(any(target_os = "linux", target_os = "android"))]
    Kernel,
    /// One component at a time from the root's handle.
    Walk,
}

impl Resolution {
    /// The best this system has.
    #[cfg(any(target_os = "linux", target_os = "android"))]
    pub(super) fn native() -> Self {
        Self::Kernel
    }

    /// The best this system has.
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    pub(super) fn native() -> Self {
        Self::Walk
    }
}

/// Why a path was not opened.
#[derive(Debug)]
pub(super) enum Refusal {
    /// It leads outside the root: the same answer whether anything is
    /// there or not.
    Outside,
    /// It is neither a regular file nor a directory; it was not opened.
    Special(Special),
    /// The file to write is a directory or a symbolic link.
    LinkOrDirectory,
    /// The system said no.
    Io(io::Error),
}

impl From<Errno> for Refusal {
    fn from(error: Errno) -> Self {
        Self::Io(error.into())
    }
}

impl From<io::Error> for Refusal {
    fn from(error: io::Error) -> Self {
        Self::Io(error)
    }
}

/// A file that is neither a regular file nor a directory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Special {
    Fifo,
    Socket,
    Device,
    Other,
}

impl Special {
    fn of(kind: FileType) -> Self {
        match kind {
            FileType::Fifo => Self::Fifo,
            FileType::Socket => Self::Socket,
            FileType::BlockDevice | FileType::CharacterDevice => Self::Device,
            _ => Self::Other,
        }
    }
}

/// What a directory entry is, links not followed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum EntryKind {
    Directory,
    File,
    Symlink,
    /// A named pipe, socket or device.
    Special,
    /// The file system did not say.
    Unknown,
}

impl EntryKind {
    fn of(kind: FileType) -> Self {
        match kind {
            FileType::Directory => Self::Directory,
            FileType::RegularFile => Self::File,
            FileType::Symlink => Self::Symlink,
            FileType::Unknown => Self::Unknown,
            _ => Self::Special,
        }
    }
}

/// One entry of a directory.
#[derive(Debug)]
pub(super) struct Entry {
    pub(super) name: OsString,
    pub(super) kind: EntryKind,
}

/// What a path led to, open.
#[derive(Debug)]
pub(super) enum Opened {
    File(File),
    Directory(Directory),
}

impl Opened {
    /// The file, or the error of reading a directory.
    pub(super) fn into_file(self) -> io::Result<File> {
        match self {
            Self::File(file) => Ok(file),
            Self::Directory(_) => Err(Errno::ISDIR.into()),
        }
    }

    /// The directory, or the error of listing a file.
    pub(super) fn into_directory(self) -> io::Result<Directory> {
        match self {
            Self::File(_) => Err(Errno::NOTDIR.into()),
            Self::Directory(directory) => Ok(directory),
        }
    }
}

/// The root, held open for as long as the tools live.
#[derive(Debug)]
pub(super) struct RootDir {
    handle: OwnedFd,
    /// Its canonical path: absolute paths and absolute link targets are
    /// read against it, as text.
    path: PathBuf,
    resolution: Resolution,
}

impl RootDir {
    /// Opens the directory at `path`, which must be canonical. `Kernel`
    /// becomes `Walk` where `openat2` is missing or filtered.
    pub(super) fn open(path: PathBuf, resolution: Resolution) -> io::Result<Self> {
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
        let handle = rustix::fs::open(&path, flags, Mode::empty())?;
        let resolution = match resolution {
            #[cfg(any(target_os = "linux", target_os = "android"))]
            Resolution::Kernel => {
                let probe = kernel::open(&handle, Path::new("."), OFlags::PATH);
                if matches!(probe, Err(Errno::NOSYS | Errno::PERM)) {
                    Resolution::Walk
                } else {
                    Resolution::Kernel
                }
            }
            Resolution::Walk => Resolution::Walk,
        };
        Ok(Self {
            handle,
            path,
            resolution,
        })
    }

    /// `requested` as a path beneath the root, read as text: nothing is
    /// touched. An absolute path must start with the root's path; a
    /// relative one must not use `..` (what follows the root's path in an
    /// absolute one may, and is resolved beneath the root).
    pub(super) fn beneath(&self, requested: &str) -> Result<PathBuf, Refusal> {
        let requested = Path::new(requested);
        let relative = if requested.is_absolute() {
            requested
                .strip_prefix(&self.path)
                .map_err(|_| Refusal::Outside)?
        } else if requested
            .components()
            .any(|component| component == Component::ParentDir)
        {
            return Err(Refusal::Outside);
        } else {
            requested
        };
        Ok(relative
            .components()
            .filter(|component| *component != Component::CurDir)
            .collect())
    }

    /// The file or directory at `relative` (from [`RootDir::beneath`]),
    /// every symbolic link followed and judged.
    pub(super) fn resolve(&self, relative: &Path) -> Result<Opened, Refusal> {
        match self.resolution {
            #[cfg(any(target_os = "linux", target_os = "android"))]
            Resolution::Kernel => self.resolve_in_kernel(relative),
            Resolution::Walk => self.walk(relative),
        }
    }

    #[cfg(any(target_os = "linux", target_os = "android"))]
    fn resolve_in_kernel(&self, relative: &Path) -> Result<Opened, Refusal> {
        // The walk judges what the kernel will not resolve beneath the root
        // (an absolute link may still lead inside), and stands in when a
        // rename raced the lookup of `..`.
        let walk_instead = |error: &Errno| {
            matches!(
                *error,
                Errno::XDEV | Errno::AGAIN | Errno::NOSYS | Errno::PERM
            )
        };
        let path = if relative.as_os_str().is_empty() {
            Path::new(".")
        } else {
            relative
        };
        // First a handle that only names the file, to learn what it is.
        let probe = match kernel::open(&self.handle, path, OFlags::PATH) {
            Ok(probe) => probe,
            Err(error) if walk_instead(&error) => return self.walk(relative),
            Err(error) => return Err(error.into()),
        };
        match file_type(&fstat(&probe)?) {
            FileType::Directory => {
                let directory = openat(&probe, ".", DIRECTORY, Mode::empty())?;
                Ok(Opened::Directory(Directory::new(directory)?))
            }
            FileType::RegularFile => match kernel::open(&self.handle, path, READ) {
                Ok(file) => opened(file),
                Err(error) if walk_instead(&error) => self.walk(relative),
                Err(error) => Err(error.into()),
            },
            kind => Err(Refusal::Special(Special::of(kind))),
        }
    }

    /// The same as [`RootDir::resolve`], one component at a time.
    fn walk(&self, relative: &Path) -> Result<Opened, Refusal> {
        let mut pending = Vec::new();
        push_steps(&mut pending, relative);
        // The directories entered, each opened from the one before it; the
        // root is below them all.
        let mut entered: Vec<OwnedFd> = Vec::new();
        // Links followed, and entries found changed since they were looked at.
        let mut turns = 0;
        while let Some(step) = pending.pop() {
            let name = match step {
                Step::Up => {
                    if entered.pop().is_none() {
                        return Err(Refusal::Outside);
                    }
                    continue;
                }
                Step::Name(name) => name,
            };
            let here = entered.last().unwrap_or(&self.handle);
            let last = pending.is_empty();
            match file_type(&statat(here, &name, AtFlags::SYMLINK_NOFOLLOW)?) {
                FileType::Symlink => {
                    turns += 1;
                    if turns > MAX_LINKS {
                        return Err(Errno::LOOP.into());
                    }
                    let target = readlinkat(here, &name, Vec::new())?;
                    let target = PathBuf::from(OsString::from_vec(target.into_bytes()));
                    if target.is_absolute() {
                        let rest = target
                            .strip_prefix(&self.path)
                            .map_err(|_| Refusal::Outside)?;
                        entered.clear();
                        push_steps(&mut pending, rest);
                    } else {
                        push_steps(&mut pending, &target);
                    }
                }
                FileType::Directory => match openat(here, &name, DIRECTORY, Mode::empty()) {
                    Ok(directory) => entered.push(directory),
                    // It became a link or a file since: look again.
                    Err(Errno::LOOP | Errno::NOTDIR) if turns < MAX_LINKS => {
                        turns += 1;
                        pending.push(Step::Name(name));
                    }
                    Err(error) => return Err(error.into()),
                },
                FileType::RegularFile if last => {
                    match openat(here, &name, READ | OFlags::NOFOLLOW, Mode::empty()) {
                        Ok(file) => return opened(file),
                        Err(Errno::LOOP) if turns < MAX_LINKS => {
                            turns += 1;
                            pending.push(Step::Name(name));
                        }
                        Err(error) => return Err(error.into()),
                    }
                }
                kind if last => return Err(Refusal::Special(Special::of(kind))),
                _ => return Err(Errno::NOTDIR.into()),
            }
        }
        let directory = match entered.pop() {
            Some(directory) => directory,
            None => openat(&self.handle, ".", DIRECTORY, Mode::empty())?,
        };
        Ok(Opened::Directory(Directory::new(directory)?))
    }
}

/// An open directory under the root, read once.
#[derive(Debug)]
pub(super) struct Directory(Dir);

impl Directory {
    fn new(handle: OwnedFd) -> io::Result<Self> {
        Ok(Self(Dir::new(handle)?))
    }

    fn handle(&self) -> io::Result<BorrowedFd<'_>> {
        Ok(self.0.fd()?)
    }

    /// Its entries, without `.` and `..`.
    pub(super) fn entries(&mut self) -> io::Result<Vec<Entry>> {
        let mut entries = Vec::new();
        while let Some(entry) = self.0.read() {
            let entry = entry?;
            let name = OsStr::from_bytes(entry.file_name().to_bytes());
            if name == "." || name == ".." {
                continue;
            }
            let mut kind = entry.file_type();
            // Some file systems leave the type out of the listing.
            if kind == FileType::Unknown {
                kind = statat(self.handle()?, name, AtFlags::SYMLINK_NOFOLLOW)
                    .map_or(FileType::Unknown, |stat| file_type(&stat));
            }
            entries.push(Entry {
                name: name.to_owned(),
                kind: EntryKind::of(kind),
            });
        }
        Ok(entries)
    }

    /// The size of entry `name` (of the link itself, for a link).
    pub(super) fn size(&self, name: &OsStr) -> Option<u64> {
        let stat = statat(self.handle().ok()?, name, AtFlags::SYMLINK_NOFOLLOW).ok()?;
        u64::try_from(stat.st_size).ok()
    }

    /// Subdirectory `name`, not through a link.
    pub(super) fn directory(&self, name: &OsStr) -> io::Result<Directory> {
        Directory::new(openat(self.handle()?, name, DIRECTORY, Mode::empty())?)
    }

    /// Regular file `name` to read, not through a link.
    pub(super) fn file(&self, name: &OsStr) -> Result<File, Refusal> {
        let file = openat(self.handle()?, name, READ | OFlags::NOFOLLOW, Mode::empty())?;
        Ok(opened(file)?.into_file()?)
    }

    /// Regular file `name` to write, created or emptied: never through a
    /// link, never a directory or a special file.
    pub(super) fn create_file(&self, name: &OsStr) -> Result<File, Refusal> {
        let here = self.handle()?;
        match statat(here, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(stat) => match file_type(&stat) {
                FileType::RegularFile => {}
                FileType::Directory | FileType::Symlink => return Err(Refusal::LinkOrDirectory),
                kind => return Err(Refusal::Special(Special::of(kind))),
            },
            Err(Errno::NOENT) => {}
            Err(error) => return Err(error.into()),
        }
        let flags = OFlags::WRONLY
            | OFlags::CREATE
            | OFlags::TRUNC
            | OFlags::NOFOLLOW
            | OFlags::NONBLOCK
            | OFlags::NOCTTY
            | OFlags::CLOEXEC;
        let everyone_reads_and_writes =
            Mode::RUSR | Mode::WUSR | Mode::RGRP | Mode::WGRP | Mode::ROTH | Mode::WOTH;
        match openat(here, name, flags, everyone_reads_and_writes) {
            Ok(file) => match file_type(&fstat(&file)?) {
                FileType::RegularFile => Ok(File::from(file)),
                kind => Err(Refusal::Special(Special::of(kind))),
            },
            // A link or a directory put there since the look.
            Err(Errno::LOOP | Errno::ISDIR) => Err(Refusal::LinkOrDirectory),
            Err(error) => Err(error.into()),
        }
    }
}

/// One step of a path still to walk.
enum Step {
    Up,
    Name(OsString),
}

/// Puts `path`'s steps on `pending`, the first on top.
fn push_steps(pending: &mut Vec<Step>, path: &Path) {
    for component in path.components().rev() {
        match component {
            Component::ParentDir => pending.push(Step::Up),
            Component::Normal(name) => pending.push(Step::Name(name.to_owned())),
            Component::CurDir | Component::RootDir | Component::Prefix(_) => {}
        }
    }
}

/// An opened handle as what it turned out to be.
fn opened(handle: OwnedFd) -> Result<Opened, Refusal> {
    match file_type(&fstat(&handle)?) {
        FileType::RegularFile => Ok(Opened::File(File::from(handle))),
        FileType::Directory => Ok(Opened::Directory(Directory::new(handle)?)),
        kind => Err(Refusal::Special(Special::of(kind))),
    }
}

fn file_type(stat: &Stat) -> FileType {
    FileType::from_raw_mode(stat.st_mode)
}

/// `openat2` beneath a directory.
#[cfg(any(target_os = "linux", target_os = "android"))]
mod kernel {
    use std::os::fd::OwnedFd;
    use std::path::Path;

    use rustix::fs::{Mode, OFlags, ResolveFlags, openat2};
    use rustix::io::Errno;

    /// `path` opened with `flags`, beneath `directory`.
    pub(super) fn open(directory: &OwnedFd, path: &Path, flags: OFlags) -> Result<OwnedFd, Errno> {
        let resolve = ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS;
        openat2(
            directory,
            path,
            flags | OFlags::CLOEXEC,
            Mode::empty(),
            resolve,
        )
    }
}
