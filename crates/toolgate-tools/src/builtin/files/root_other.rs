//! The files root where there is no Unix: the same items as `root.rs`, but
//! without a way to open a path beneath a directory handle (every
//! component relative to its parent's handle, no link followed by name),
//! every path is refused as unsupported rather than opened by name.

#![allow(
    dead_code,
    reason = "the same items as on Unix; most are never built here"
)]

use std::convert::Infallible;
use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

/// How paths are opened beneath the root.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Resolution {
    /// One component at a time from the root's handle.
    Walk,
}

impl Resolution {
    /// The best this system has.
    pub(super) fn native() -> Self {
        Self::Walk
    }
}

/// Why a path was not opened.
#[derive(Debug)]
pub(super) enum Refusal {
    Outside,
    Special(Special),
    LinkOrDirectory,
    Io(io::Error),
}

/// A file that is neither a regular file nor a directory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Special {
    Fifo,
    Socket,
    Device,
    Other,
}

/// What a directory entry is, links not followed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum EntryKind {
    Directory,
    File,
    Symlink,
    Special,
    Unknown,
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
    pub(super) fn into_file(self) -> io::Result<File> {
        match self {
            Self::File(file) => Ok(file),
            Self::Directory(directory) => match directory.0 {},
        }
    }

    pub(super) fn into_directory(self) -> io::Result<Directory> {
        match self {
            Self::File(_) => Err(io::ErrorKind::NotADirectory.into()),
            Self::Directory(directory) => Ok(directory),
        }
    }
}

/// The root, by path only.
#[derive(Debug)]
pub(super) struct RootDir {
    path: PathBuf,
}

impl RootDir {
    pub(super) fn open(path: PathBuf, _: Resolution) -> io::Result<Self> {
        Ok(Self { path })
    }

    pub(super) fn beneath(&self, requested: &str) -> Result<PathBuf, Refusal> {
        let requested = Path::new(requested);
        let relative = if requested.is_absolute() {
            requested
                .strip_prefix(&self.path)
                .map_err(|_| Refusal::Outside)?
        } else {
            requested
        };
        Ok(relative.to_path_buf())
    }

    pub(super) fn resolve(&self, _: &Path) -> Result<Opened, Refusal> {
        Err(Refusal::Io(io::Error::new(
            io::ErrorKind::Unsupported,
            "the files tools need a Unix system",
        )))
    }
}

/// An open directory: none can be opened here.
#[derive(Debug)]
pub(super) struct Directory(Infallible);

impl Directory {
    pub(super) fn entries(&mut self) -> io::Result<Vec<Entry>> {
        match self.0 {}
    }

    pub(super) fn size(&self, _: &OsStr) -> Option<u64> {
        match self.0 {}
    }

    pub(super) fn directory(&self, _: &OsStr) -> io::Result<Directory> {
        match self.0 {}
    }

    pub(super) fn file(&self, _: &OsStr) -> Result<File, Refusal> {
        match self.0 {}
    }

    pub(super) fn create_file(&self, _: &OsStr) -> Result<File, Refusal> {
        match self.0 {}
    }
}
