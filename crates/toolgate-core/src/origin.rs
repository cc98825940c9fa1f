//! Where a tool or group came from.
//!
//! Origins are carried by every catalog entry so that a collision can name both
//! parties ("already registered by manifest tools/gmail.json") and so that
//! executors know how to run a tool (a manifest entry may name a JavaScript
//! function; an upstream tool is forwarded to its server).

use std::fmt;
use std::path::PathBuf;

/// Where a catalog entry came from.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Origin {
    /// toolgate's own meta-tools (`load_tool_group`, ...). Always core.
    MetaTool,
    /// A tool compiled into the host program.
    Builtin,
    /// A JSON manifest file.
    Manifest {
        /// The manifest file.
        path: PathBuf,
        /// The JavaScript function the entry names, if any; kept for the executor.
        function: Option<String>,
    },
    /// An upstream MCP server.
    Upstream {
        /// The server's configured name.
        server: String,
    },
    /// A `tools.jsonl` catalog import.
    Import {
        /// The imported file.
        path: PathBuf,
    },
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::MetaTool => f.write_str("toolgate's meta-tools"),
            Self::Builtin => f.write_str("the built-in tools"),
            Self::Manifest { path, .. } => write!(f, "manifest {}", path.display()),
            Self::Upstream { server } => write!(f, "upstream MCP server `{server}`"),
            Self::Import { path } => write!(f, "import {}", path.display()),
        }
    }
}
