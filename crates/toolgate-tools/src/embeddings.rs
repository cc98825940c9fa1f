//! [`LocalEmbeddings`]: the built-in embedding model (toolgate-embed) as the
//! router's [`Embeddings`]: tool vectors through the on-disk cache, so a
//! restart embeds only the tools whose text changed, and a turn embedded on
//! its own.
//!
//! The model is loaded on first use, so a gateway whose clients never
//! search pays nothing for it. When it cannot be loaded the failure is
//! logged once and the router scores lexically from then on. In the
//! background mode ([`LocalEmbeddings::in_background`], the gateway's), tool
//! texts missing from the cache are embedded on a thread of their own and
//! the caller is answered lexically meanwhile, so a cold cache of thousands
//! of tools never holds up a request. Otherwise (`toolgate chat --route`,
//! `toolgate route`) the caller waits, and a [`Progress`] given with
//! [`LocalEmbeddings::with_progress`] hears how far the embedding got.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use toolgate_core::routing::Embeddings;
use toolgate_embed::{EmbedError, Embedder, MODEL_FILE, TOKENIZER_FILE, VectorCache};

use crate::progress::{Progress, Step};

/// Tool texts embedded between two progress reports: two of the model's
/// batches, so a report costs nothing next to the work.
const PROGRESS_CHUNK: usize = 64;

/// The local model and its vector cache, loaded on first use.
#[derive(Debug)]
pub struct LocalEmbeddings {
    inner: Arc<Inner>,
    background: bool,
    /// Hears how far an embedding of tool texts got.
    progress: Option<Progress>,
}

#[derive(Debug)]
struct Inner {
    model_dir: PathBuf,
    cache_dir: PathBuf,
    loaded: OnceLock<Option<Loaded>>,
    /// A background embedding of tool texts is running.
    warming: AtomicBool,
}

#[derive(Debug)]
struct Loaded {
    embedder: Embedder,
    cache: Mutex<VectorCache>,
}

impl LocalEmbeddings {
    /// The model in `model_dir`, with tool vectors cached in `cache_dir`;
    /// nothing is read until the first embedding.
    pub fn new(model_dir: &Path, cache_dir: &Path) -> Self {
        Self {
            inner: Arc::new(Inner {
                model_dir: model_dir.to_path_buf(),
                cache_dir: cache_dir.to_path_buf(),
                loaded: OnceLock::new(),
                warming: AtomicBool::new(false),
            }),
            background: false,
            progress: None,
        }
    }

    /// Tool texts missing from the cache are embedded in chunks, each
    /// reported to `progress` ([`Step::Embedding`]); a cached text costs
    /// nothing and reports nothing.
    pub fn with_progress(mut self, progress: Progress) -> Self {
        self.progress = Some(progress);
        self
    }

    /// Tool texts missing from the cache are embedded on a thread of their
    /// own: [`Embeddings::embed_texts`] answers `None` until they all are,
    /// then from the cache.
    pub fn in_background(mut self) -> Self {
        self.background = true;
        self
    }

    /// Whether a background embedding is running.
    pub fn is_warming(&self) -> bool {
        self.inner.warming.load(Ordering::Acquire)
    }

    /// The model where toolgate looks for it (`setting`, else
    /// `TOOLGATE_EMBED_MODEL`, else the data directory), with its cache in
    /// the cache directory; `env` reads an environment variable. An error
    /// when there is no such directory or it lacks the model's files.
    pub fn find(
        setting: Option<&Path>,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Self, EmbedError> {
        let model = toolgate_embed::model_dir(setting, env).ok_or(EmbedError::NowhereToLook)?;
        if !model.is_dir() {
            return Err(EmbedError::NoModelDir { dir: model });
        }
        for file in [MODEL_FILE, TOKENIZER_FILE] {
            if !model.join(file).is_file() {
                return Err(EmbedError::MissingFile { dir: model, file });
            }
        }
        let cache = vector_cache_dir(env).unwrap_or_else(|| model.join("vectors"));
        Ok(Self::new(&model, &cache))
    }

    /// The model directory.
    pub fn dir(&self) -> &Path {
        &self.inner.model_dir
    }

    /// Loads the model now (a caller that wants the cost at start-up, or
    /// the error).
    pub fn load(&self) -> Result<(), String> {
        match self.inner.loaded() {
            Some(_) => Ok(()),
            None => Err(format!(
                "the embedding model in {} could not be loaded (see the log)",
                self.inner.model_dir.display()
            )),
        }
    }

    /// The cached vectors of every text, or `None` after starting (once) a
    /// thread that embeds the missing ones into the cache.
    fn cached_or_warming(&self, loaded: &Loaded, texts: &[&str]) -> Option<Vec<Vec<f32>>> {
        let missing: Vec<String> = {
            let cache = loaded.cache.lock().unwrap_or_else(PoisonError::into_inner);
            let missing: Vec<String> = texts
                .iter()
                .filter(|text| cache.get(text).is_none())
                .map(|text| (*text).to_owned())
                .collect();
            if missing.is_empty() {
                return Some(
                    texts
                        .iter()
                        .map(|text| cache.get(text).map(<[f32]>::to_vec).unwrap_or_default())
                        .collect(),
                );
            }
            missing
        };
        if self
            .inner
            .warming
            .compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
        {
            let inner = Arc::clone(&self.inner);
            let spawned = std::thread::Builder::new()
                .name("toolgate-embed-tools".to_owned())
                .spawn(move || {
                    tracing::info!(tools = missing.len(), "embedding tools for routing");
                    if let Some(loaded) = inner.loaded() {
                        let texts: Vec<&str> = missing.iter().map(String::as_str).collect();
                        loaded.embed_into_cache(&texts, None);
                    }
                    inner.warming.store(false, Ordering::Release);
                });
            if let Err(error) = spawned {
                tracing::warn!(%error, "could not start embedding the tools; routing lexically");
                self.inner.warming.store(false, Ordering::Release);
            }
        }
        None
    }
}

impl Loaded {
    /// Embeds `texts` through the cache and saves it; the vectors, or
    /// `None` (logged) when the model fails. The texts missing from the
    /// cache are embedded a chunk at a time, each reported to `progress`.
    fn embed_into_cache(
        &self,
        texts: &[&str],
        progress: Option<&Progress>,
    ) -> Option<Vec<Vec<f32>>> {
        let mut cache = self.cache.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(progress) = progress {
            let missing: Vec<&str> = texts
                .iter()
                .copied()
                .filter(|text| cache.get(text).is_none())
                .collect();
            let mut done = 0;
            for chunk in missing.chunks(PROGRESS_CHUNK) {
                if let Err(error) = cache.embed(&self.embedder, chunk) {
                    tracing::warn!(%error, "embedding the tools failed; routing lexically");
                    return None;
                }
                done += chunk.len();
                progress.report(Step::Embedding {
                    done,
                    total: missing.len(),
                });
            }
        }
        let vectors = match cache.embed(&self.embedder, texts) {
            Ok(vectors) => vectors,
            Err(error) => {
                tracing::warn!(%error, "embedding the tools failed; routing lexically");
                return None;
            }
        };
        if let Err(error) = cache.save() {
            tracing::warn!(%error, "the tool vectors were not cached");
        }
        Some(vectors)
    }
}

impl Inner {
    fn loaded(&self) -> Option<&Loaded> {
        self.loaded
            .get_or_init(|| match Embedder::load(&self.model_dir) {
                Ok(embedder) => {
                    let cache = VectorCache::open(&self.cache_dir, &embedder);
                    Some(Loaded {
                        embedder,
                        cache: Mutex::new(cache),
                    })
                }
                Err(error) => {
                    tracing::warn!(%error, "the embedding model did not load; routing lexically");
                    None
                }
            })
            .as_ref()
    }
}

/// `$XDG_CACHE_HOME/toolgate/vectors`, else `~/.cache/toolgate/vectors`.
pub fn vector_cache_dir(env: &dyn Fn(&str) -> Option<String>) -> Option<PathBuf> {
    let base = env("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| {
            env("HOME")
                .filter(|h| !h.is_empty())
                .map(|home| PathBuf::from(home).join(".cache"))
        })?;
    Some(base.join("toolgate/vectors"))
}

impl Embeddings for LocalEmbeddings {
    fn embed_texts(&self, texts: &[&str]) -> Option<Vec<Vec<f32>>> {
        let loaded = self.inner.loaded()?;
        if self.background {
            return self.cached_or_warming(loaded, texts);
        }
        loaded.embed_into_cache(texts, self.progress.as_ref())
    }

    fn embed_query(&self, text: &str) -> Option<Vec<f32>> {
        match self.inner.loaded()?.embedder.embed(&[text]) {
            Ok(mut vectors) => vectors.pop(),
            Err(error) => {
                tracing::warn!(%error, "embedding a request failed; scoring it lexically");
                None
            }
        }
    }
}
