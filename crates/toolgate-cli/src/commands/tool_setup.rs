//! What `serve`, `chat`, `route` and `migrate` share: the tools the command
//! line describes (the tool options, the configuration's sections, the
//! `mcpServers` files), turned into toolbox options and upstreams.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, bail};
use toolgate_mcp::Upstream;
use toolgate_mcp::config::{UpstreamConfig, parse_mcp_servers_json};
use toolgate_store::{JsToolStore, ToolOwner};
use toolgate_tools::{
    BuiltinConfig, FilesAccess, FilesRoot, JsEvalTool, ListedSource, Startup, ToolboxOptions,
    UserJsTools,
};

use crate::cli::ToolArgs;
use crate::settings::Settings;

pub(crate) use self::progress::TerminalProgress;

mod progress;

/// The tools the arguments describe: the toolbox options, the upstream MCP
/// servers, and the configuration files they came from.
pub(crate) struct ToolSetup {
    pub(crate) options: ToolboxOptions,
    pub(crate) upstreams: Vec<UpstreamConfig>,
    pub(crate) config_files: Vec<PathBuf>,
}

impl ToolSetup {
    /// The tools `args` and `settings` describe; `--mcp-config` files are
    /// read here.
    pub(crate) fn new(args: &ToolArgs, settings: &Settings) -> anyhow::Result<Self> {
        let mut setup = Self::upstreams(settings, &args.mcp_config)?;
        let tools = &settings.tools;
        // What the built-in groups act on, and JavaScript tools reach,
        // whether or not the groups are offered.
        let reach = BuiltinConfig {
            files_access: if args.allow_write {
                FilesAccess::ReadWrite
            } else {
                FilesAccess::ReadOnly
            },
            web: tools.web.clone(),
            ..BuiltinConfig::new(args.files_root.as_deref().unwrap_or(Path::new(".")))
        };
        setup.options = ToolboxOptions {
            manifest_dirs: manifest_dirs(&args.manifests),
            jsonl_catalogs: args.jsonl.clone(),
            builtins: (!args.no_builtins).then(|| reach.clone()),
            script_reach: Some(reach),
            groups: tools.groups.clone(),
            aliases: tools.aliases.clone(),
            call_timeout: tools.call_timeout,
            sources: JsEvalTool::offered(&tools.javascript).into_iter().collect(),
            javascript: tools.javascript.clone(),
            ..ToolboxOptions::default()
        };
        Ok(setup)
    }

    /// Offers the JavaScript tools agents write (`js_tool_management`, and
    /// `user_tools`, whose tools give up any name an upstream's tool has):
    /// `owner`'s, in `store`.
    /// Built-in groups, they are left out with the others
    /// (`--no-builtins`): then `None`. Attach what it returns to the
    /// toolbox once that has started.
    pub(crate) fn add_user_js_tools(
        &mut self,
        store: Arc<dyn JsToolStore>,
        owner: ToolOwner,
    ) -> anyhow::Result<Option<UserJsTools>> {
        if self.options.builtins.is_none() {
            return Ok(None);
        }
        let tools = UserJsTools::new(
            store,
            owner,
            &self.options.javascript,
            self.options.script_reach.as_ref(),
        )?;
        tools.add_to(&mut self.options);
        Ok(Some(tools))
    }

    /// The upstreams of `settings` and of the `mcpServers` files, with no
    /// other tools. A name declared twice is an error.
    pub(crate) fn upstreams(settings: &Settings, mcp_config: &[PathBuf]) -> anyhow::Result<Self> {
        let mut upstreams = settings.upstreams.clone();
        let mut config_files: Vec<PathBuf> =
            settings.path().map(Path::to_path_buf).into_iter().collect();
        for path in mcp_config {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("reading {}", path.display()))?;
            for mut upstream in parse_mcp_servers_json(&text, path)? {
                crate::settings::start_in_dir_of(path, &mut upstream);
                if upstreams.iter().any(|u| u.name == upstream.name) {
                    bail!(
                        "{}: upstream '{}' is already declared in {}",
                        path.display(),
                        upstream.name,
                        config_files
                            .iter()
                            .map(|f| f.display().to_string())
                            .collect::<Vec<_>>()
                            .join(", ")
                    );
                }
                upstreams.push(upstream);
            }
            config_files.push(path.clone());
        }
        Ok(Self {
            options: ToolboxOptions::default(),
            upstreams,
            config_files,
        })
    }

    /// Starts every upstream with the toolbox, so its tools are known at
    /// once (to route over them, or to report on them).
    pub(crate) fn start_upstreams_eagerly(&mut self) {
        for upstream in &mut self.upstreams {
            upstream.startup = Startup::Eager;
        }
    }

    /// Shows the upstreams' starts on `line`: those that start before the
    /// command goes on are the eager ones and every one configured before
    /// the last of them (listed first, so their tools' names never change).
    pub(crate) fn show_progress(&mut self, line: &TerminalProgress) {
        let starting = self
            .upstreams
            .iter()
            .rposition(|upstream| upstream.startup == Startup::Eager)
            .map_or(0, |last| last + 1);
        line.expect_upstreams(starting);
        for upstream in &mut self.upstreams {
            upstream.progress = Some(line.progress());
        }
    }

    /// Leaves the `files` group out (and JavaScript tools without files)
    /// when its root was not given and would be the working directory while
    /// that is the filesystem root or holds the home directory: where a
    /// desktop app starts the gateway, which must not hand every file of
    /// the machine to a model. The start report says why and how to serve
    /// a directory.
    pub(crate) fn withhold_broad_files_root(&mut self, args: &ToolArgs) {
        if args.files_root.is_some() {
            return;
        }
        let Ok(dir) = std::env::current_dir().and_then(|dir| dir.canonicalize()) else {
            return;
        };
        let home = std::env::var_os("HOME")
            .map(PathBuf::from)
            .and_then(|home| home.canonicalize().ok());
        let what = if dir.parent().is_none() {
            "the filesystem root"
        } else if home.as_deref() == Some(dir.as_path()) {
            "your home directory"
        } else if home.is_some_and(|home| home.starts_with(&dir)) {
            "a directory holding your home directory"
        } else {
            return;
        };
        let why = FilesRoot::Withheld(format!(
            "the working directory is {} ({what}); give --files-root DIR to serve a directory",
            dir.display()
        ));
        for reach in [&mut self.options.builtins, &mut self.options.script_reach]
            .into_iter()
            .flatten()
        {
            reach.files_root = why.clone();
        }
    }

    /// The toolbox options with the upstreams as its listed sources, after
    /// any given already.
    pub(crate) fn into_options(self) -> ToolboxOptions {
        let mut options = self.options;
        options.listed.extend(
            self.upstreams
                .into_iter()
                .map(|config| Arc::new(Upstream::new(config)) as Arc<dyn ListedSource>),
        );
        options
    }
}

/// The manifest directories given, else `./tools` when it exists.
fn manifest_dirs(given: &[PathBuf]) -> Vec<PathBuf> {
    if given.is_empty() {
        let default = PathBuf::from("tools");
        if default.is_dir() {
            return vec![default];
        }
    }
    given.to_vec()
}

/// The client of a `[routing.embeddings]` endpoint, with its key from the
/// environment variable the settings name.
pub(crate) fn embeddings_client(
    settings: &toolgate_core::routing::semantic::EmbeddingsConfig,
) -> anyhow::Result<toolgate_llm::EmbeddingsClient> {
    use toolgate_llm::{ApiKey, ProviderConfig, ProviderKind};
    let mut config = ProviderConfig::new(ProviderKind::OpenAi, &settings.base_url, &settings.model);
    if let Some(variable) = &settings.api_key_env {
        let key = std::env::var(variable)
            .ok()
            .filter(|k| !k.trim().is_empty())
            .with_context(|| {
                format!("[routing.embeddings] api_key_env names {variable}, which is not set")
            })?;
        config.api_key = Some(ApiKey::new(key.trim()));
        config.key_source = format!("the environment variable {variable}");
    }
    Ok(toolgate_llm::EmbeddingsClient::new(config)?)
}

/// The local embedding model the router scores with: `Ok(None)` when
/// `[routing]` turns it off (`semantic = false`), `Err` saying why when its
/// files are missing (the router then scores lexically). `background`: tools
/// missing from the vector cache are embedded on a thread of their own
/// while the router answers lexically (the gateway, which must not hold up
/// a request); else the first routing waits for them.
pub(crate) fn find_local_embeddings(
    routing: &toolgate_core::routing::RoutingConfig,
    background: bool,
) -> Result<Option<Arc<dyn toolgate_core::routing::Embeddings>>, String> {
    find_embeddings(routing, background, None)
}

/// [`find_local_embeddings`], telling `line` how far a foreground
/// embedding got.
fn find_embeddings(
    routing: &toolgate_core::routing::RoutingConfig,
    background: bool,
    line: Option<&TerminalProgress>,
) -> Result<Option<Arc<dyn toolgate_core::routing::Embeddings>>, String> {
    if routing.semantic == Some(false) {
        return Ok(None);
    }
    let env = |name: &str| std::env::var(name).ok();
    match toolgate_tools::LocalEmbeddings::find(routing.embed_model.as_deref(), &env) {
        Ok(embeddings) if background => Ok(Some(Arc::new(embeddings.in_background()))),
        Ok(embeddings) => Ok(Some(Arc::new(match line {
            Some(line) => embeddings.with_progress(line.progress()),
            None => embeddings,
        }))),
        Err(error) => Err(format!(
            "note: routing lexically: {error} (scripts/install-model installs it; \
             `semantic = false` in [routing] silences this)\n"
        )),
    }
}

/// `tools` offering `find_tool_groups` as `serve` and `chat` do: above
/// `above` groups, answering with `routing` (the search offered is answered
/// with `[routing]` too, not only the one `--route` offers), scoring with
/// `embeddings` beside BM25 where there is a model, and loading the tools
/// it lists, so the model calls one at once instead of loading a group
/// first (the episode cost's choice).
pub(crate) fn offer_search(
    tools: &mut ToolboxOptions,
    routing: &toolgate_core::routing::RoutingConfig,
    above: usize,
    embeddings: Option<Arc<dyn toolgate_core::routing::Embeddings>>,
) {
    tools.search_above_groups = Some(above);
    tools.routing = Some(routing.clone());
    tools.found_tools = toolgate_core::FoundTools::Loaded;
    tools.embeddings = embeddings;
}

/// The local model for a command that routes every turn and waits for the
/// tool texts to be embedded (shown on `line`): a missing model is said
/// once on stderr.
pub(crate) fn local_embeddings(
    routing: &toolgate_core::routing::RoutingConfig,
    line: Option<&TerminalProgress>,
) -> Option<Arc<dyn toolgate_core::routing::Embeddings>> {
    find_embeddings(routing, false, line).unwrap_or_else(|note| {
        crate::output::eprint(&note);
        None
    })
}
