//! [`HybridScorer`]: tools scored first, lexically (BM25 over each tool's
//! name, description and parameters) and semantically (the cosine of the
//! turn's embedding with each tool's), the two fused ([`Fusion`]); a group
//! then scores its best tool, plus a share for its own document (name,
//! description, intents and their examples).
//!
//! The embedding model lives outside this crate, behind [`Embeddings`]: the
//! scorer asks it for the tools' vectors once and for each turn's. Without
//! it, or when it fails, the scorer is the lexical half alone.

use std::fmt;
use std::sync::Arc;

use crate::catalog::Catalog;
use crate::name::{GroupId, ToolName};
use crate::routing::budget::DEFAULT_MAX_TOKEN_SHARE;
use crate::routing::calibration::{Isotonic, PerGroup};
use crate::routing::config::Taxonomy;
use crate::routing::fusion::{Fusion, group_scores};
use crate::routing::id_finders::IdFinders;
use crate::routing::lexical::{LexicalScorer, query_terms};
use crate::routing::router::{Confidence, Router};
use crate::routing::scorer::{Evidence, GroupScorer, ToolScore};
use crate::routing::self_test::{ProbeNeeds, probe_tools};
use crate::tool::ToolDefinition;

/// A sentence-embedding model as the router uses it.
pub trait Embeddings: Send + Sync + fmt::Debug {
    /// One vector per text, in order (tool texts: an implementation may
    /// cache them); `None` when the model cannot embed them, or not yet
    /// (one that embeds them in the background: the router scores
    /// lexically meanwhile, and a caller may build it again later).
    fn embed_texts(&self, texts: &[&str]) -> Option<Vec<Vec<f32>>>;

    /// A user turn's vector; `None` when it cannot be embedded (the turn is
    /// then scored lexically).
    fn embed_query(&self, text: &str) -> Option<Vec<f32>>;
}

/// The semantic half: a unit vector per tool (in
/// [`HybridScorer::tool_names`] order, one flat array) and the model that
/// embeds turns into the same space.
#[derive(Clone, Debug)]
struct ToolVectors {
    units: Vec<f32>,
    dimension: usize,
    embeddings: Arc<dyn Embeddings>,
}

impl ToolVectors {
    /// `None` when the vectors are empty or of different lengths.
    fn new(vectors: &[Vec<f32>], embeddings: Arc<dyn Embeddings>) -> Option<Self> {
        let dimension = vectors.first()?.len();
        if dimension == 0 || vectors.iter().any(|v| v.len() != dimension) {
            return None;
        }
        let mut units = Vec::with_capacity(vectors.len() * dimension);
        for vector in vectors {
            units.extend(unit(vector));
        }
        Some(Self {
            units,
            dimension,
            embeddings,
        })
    }

    /// Tool `index`'s unit vector.
    fn tool(&self, index: usize) -> Option<&[f32]> {
        self.units.chunks_exact(self.dimension).nth(index)
    }

    /// The cosine of `query` with every tool, negative ones as 0; `None`
    /// for a query of another length.
    fn cosines(&self, query: &[f32]) -> Option<Vec<f64>> {
        if query.len() != self.dimension {
            return None;
        }
        let query = unit(query);
        Some(
            self.units
                .chunks_exact(self.dimension)
                .map(|tool| f64::from(dot(tool, &query)).max(0.0))
                .collect(),
        )
    }
}

/// Partial sums [`dot`] keeps apart.
const LANES: usize = 16;

/// The dot product of two vectors of one length, summed in [`LANES`]
/// partial sums. One running sum makes every addition wait for the last,
/// which kept the compiler from using vector registers: the cosines were
/// most of a decision's time at 2,490 tools.
fn dot(a: &[f32], b: &[f32]) -> f32 {
    let (a_chunks, a_tail) = a.as_chunks::<LANES>();
    let (b_chunks, b_tail) = b.as_chunks::<LANES>();
    let mut sums = [0.0_f32; LANES];
    for (x, y) in a_chunks.iter().zip(b_chunks) {
        for ((sum, x), y) in sums.iter_mut().zip(x).zip(y) {
            *sum += x * y;
        }
    }
    let tail: f32 = a_tail.iter().zip(b_tail).map(|(x, y)| x * y).sum();
    sums.iter().sum::<f32>() + tail
}

/// `vector` scaled to length 1 (all zeros stays all zeros).
fn unit(vector: &[f32]) -> Vec<f32> {
    let norm = vector.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        vector.iter().map(|x| x / norm).collect()
    } else {
        vector.to_vec()
    }
}

/// Share of the best tool's score a group's own document can add.
pub const GROUP_DOCUMENT_SHARE: f64 = 0.5;

/// Tools first, then groups; see the module documentation.
#[derive(Debug)]
pub struct HybridScorer {
    lexical: LexicalScorer,
    semantic: Option<ToolVectors>,
    fusion: Fusion,
}

/// The text a tool is embedded by: its name with its words spaced out, its
/// description and its parameters' names.
pub fn tool_text(tool: &ToolDefinition) -> String {
    let mut text = terms_spaced(tool.name.as_str());
    text.push_str(": ");
    text.push_str(tool.description.trim());
    if let Some(serde_json::Value::Object(properties)) = tool.input_schema.get("properties")
        && !properties.is_empty()
    {
        let names: Vec<String> = properties.keys().map(|n| terms_spaced(n)).collect();
        text.push_str(" (");
        text.push_str(&names.join(", "));
        text.push(')');
    }
    text
}

/// `get_weatherForecast` -> `get weather forecast`.
fn terms_spaced(identifier: &str) -> String {
    identifier
        .split(|c: char| !c.is_alphanumeric())
        .flat_map(|word| {
            let mut parts = Vec::new();
            let mut current = String::new();
            let mut previous_lower = false;
            for c in word.chars() {
                if c.is_uppercase() && previous_lower && !current.is_empty() {
                    parts.push(std::mem::take(&mut current));
                }
                previous_lower = c.is_lowercase() || c.is_ascii_digit();
                current.extend(c.to_lowercase());
            }
            parts.push(current);
            parts
        })
        .filter(|part| !part.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

impl HybridScorer {
    /// Indexes `catalog` lexically and, with `embeddings`, embeds every
    /// grouped tool's [`tool_text`]; when that fails (or gives a vector per
    /// tool it should not), the scorer stays lexical.
    pub fn new(
        catalog: &Catalog,
        taxonomy: &Taxonomy,
        embeddings: Option<Arc<dyn Embeddings>>,
        fusion: Fusion,
    ) -> Self {
        let lexical = LexicalScorer::new(catalog, taxonomy);
        let semantic = embeddings.and_then(|embeddings| {
            let texts = tool_texts(catalog);
            let texts: Vec<&str> = texts.iter().map(|(_, text)| text.as_str()).collect();
            let vectors = embeddings.embed_texts(&texts)?;
            if vectors.len() != lexical.tool_names().len() {
                return None;
            }
            ToolVectors::new(&vectors, embeddings)
        });
        Self {
            lexical,
            semantic,
            fusion,
        }
    }

    /// Whether turns are scored semantically too.
    pub fn is_semantic(&self) -> bool {
        self.semantic.is_some()
    }

    /// The fusion in use.
    pub fn fusion(&self) -> Fusion {
        self.fusion
    }

    /// The tools scored, in order.
    pub fn tool_names(&self) -> &[ToolName] {
        self.lexical.tool_names()
    }

    /// A turn's raw evidence: BM25 of every tool and group document, and
    /// the cosine of every tool when the turn could be embedded.
    pub fn raw(&self, query: &str, context: &[&str]) -> RawEvidence {
        let terms = query_terms(query, context);
        let semantic = self
            .semantic
            .as_ref()
            .and_then(|s| s.cosines(&s.embeddings.embed_query(query)?));
        RawEvidence {
            lexical: self.lexical.tool_bm25(&terms),
            semantic,
            documents: self.lexical.group_bm25(&terms),
        }
    }

    /// The [`SelfTest`](crate::routing::SelfTest)'s probes
    /// ([`probe_tools`]), raw: each tool's description scored as a turn,
    /// lexically by its words and semantically by the tool's own vector
    /// (of which the description is most), the tool itself left out; with
    /// what it needs ([`ProbeNeeds`], with `catalog`'s id `finders`).
    pub fn raw_probes(
        &self,
        catalog: &Catalog,
        finders: &IdFinders,
    ) -> Vec<(RawEvidence, ProbeNeeds)> {
        probe_tools(catalog, self.tool_names(), finders)
            .into_iter()
            .map(|(index, description, needs)| {
                let terms = query_terms(&description, &[]);
                let mut raw = RawEvidence {
                    lexical: self.lexical.tool_bm25(&terms),
                    semantic: self
                        .semantic
                        .as_ref()
                        .and_then(|s| s.cosines(s.tool(index)?)),
                    documents: self.lexical.group_bm25(&terms),
                };
                leave_out(&mut raw, index);
                (raw, needs)
            })
            .collect()
    }

    /// Group scores and tool scores from raw evidence (which
    /// `toolgate eval` computes once and combines many ways).
    pub fn combine(&self, raw: &RawEvidence) -> Evidence {
        self.combine_with(self.fusion, raw)
    }

    /// [`Self::combine`] by another fusion method.
    pub fn combine_with(&self, fusion: Fusion, raw: &RawEvidence) -> Evidence {
        self.fused(fusion, raw).named(&self.lexical)
    }

    /// `raw` fused by `fusion` over this scorer's tools and groups.
    fn fused(&self, fusion: Fusion, raw: &RawEvidence) -> Combined {
        combine(
            fusion,
            raw,
            self.lexical.tool_groups(),
            self.lexical.groups().len(),
        )
    }
}

/// The evidence [`HybridScorer::combine`] starts from.
#[derive(Clone, Debug, PartialEq)]
pub struct RawEvidence {
    /// BM25 of each tool.
    pub lexical: Vec<f64>,
    /// Cosine of each tool, when the turn was embedded.
    pub semantic: Option<Vec<f64>>,
    /// BM25 of each group's own document.
    pub documents: Vec<f64>,
}

/// `raw` with tool `index` left out of both kinds of evidence.
pub fn leave_out(raw: &mut RawEvidence, index: usize) {
    if let Some(score) = raw.lexical.get_mut(index) {
        *score = 0.0;
    }
    if let Some(score) = raw.semantic.as_mut().and_then(|s| s.get_mut(index)) {
        *score = 0.0;
    }
}

/// Fused tool scores and the group scores they give.
#[derive(Clone, Debug, PartialEq)]
pub struct Combined {
    /// Per group, in group order.
    pub groups: Vec<f64>,
    /// Per tool, in tool order.
    pub tools: Vec<f64>,
}

impl Combined {
    fn named(self, lexical: &LexicalScorer) -> Evidence {
        Evidence {
            tools: lexical.named(&self.tools),
            groups: self.groups,
        }
    }
}

/// `raw` fused by `fusion`: each tool's score, and each group's (its best
/// tool's, plus up to [`GROUP_DOCUMENT_SHARE`] of the best tool's score
/// for its own document, by that document's BM25 relative to the best).
pub fn combine(fusion: Fusion, raw: &RawEvidence, tool_group: &[usize], groups: usize) -> Combined {
    let tools = fusion.fuse(&raw.lexical, raw.semantic.as_deref());
    let mut group = group_scores(&tools, tool_group, groups);
    let best_tool = tools.iter().copied().fold(0.0_f64, f64::max);
    let best_document = raw.documents.iter().copied().fold(0.0_f64, f64::max);
    if best_document > 0.0 {
        for (score, document) in group.iter_mut().zip(&raw.documents) {
            *score += GROUP_DOCUMENT_SHARE * best_tool * document / best_document;
        }
    }
    Combined {
        groups: group,
        tools,
    }
}

/// The text embedded for each tool, in scorer order (each group's tools in
/// catalog order, groups in catalog order).
pub fn tool_texts(catalog: &Catalog) -> Vec<(ToolName, String)> {
    catalog
        .groups()
        .flat_map(|group| catalog.group_tools(group.id.as_str()))
        .map(|tool| (tool.name.clone(), tool_text(tool)))
        .collect()
}

impl GroupScorer for HybridScorer {
    fn scores(&self, query: &str, context: &[&str]) -> Vec<f64> {
        self.evidence(query, context).groups
    }

    fn groups(&self) -> &[GroupId] {
        self.lexical.groups()
    }

    fn tool_scores(&self, query: &str, context: &[&str]) -> Vec<ToolScore> {
        self.evidence(query, context).tools
    }

    fn evidence(&self, query: &str, context: &[&str]) -> Evidence {
        self.combine(&self.raw(query, context))
    }

    fn evidence_of_every_tool(&self, query: &str, context: &[&str]) -> Evidence {
        let combined = self.fused(self.fusion, &self.raw(query, context));
        Evidence {
            tools: self.lexical.every(&combined.tools),
            groups: combined.groups,
        }
    }

    fn is_semantic(&self) -> bool {
        self.semantic.is_some()
    }

    fn probes(&self, catalog: &Catalog, finders: &IdFinders) -> Vec<(Evidence, ProbeNeeds)> {
        self.raw_probes(catalog, finders)
            .into_iter()
            .map(|(raw, needs)| {
                let mut evidence = self.combine(&raw);
                evidence.sort_best_first();
                (evidence, needs)
            })
            .collect()
    }
}

#[cfg(test)]
#[path = "hybrid_tests.rs"]
mod tests;

/// The fusion when none is configured: chosen by leave-one-dataset-out
/// evaluation among the methods that use both kinds of evidence (the fit on
/// the six catalogs the defaults come from chose it over the blend from
/// the lowest cosine by 0.003 of recall on the hardest, 0.946 to 0.943;
/// BENCHMARKS.md).
pub const DEFAULT_FUSION: Fusion = Fusion::Blend {
    weight: 0.5,
    floor: crate::routing::fusion::CosineFloor::Median,
};

/// What the router does when `[routing]` leaves it open, fitted together
/// on labelled turns of public catalogs: how groups are routed, what they
/// arrive with, and the confidence model with its calibration.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FittedDefaults {
    /// `route_above`.
    pub route_above: f64,
    /// `tools_per_group`.
    pub tools_per_group: usize,
    /// `id_finders`.
    pub id_finders: bool,
    /// The per-group model.
    pub model: PerGroup,
    /// The calibration's knots.
    pub knots: &'static [(f64, f64)],
}

impl FittedDefaults {
    /// The calibration.
    pub fn calibration(&self) -> Isotonic {
        Isotonic {
            knots: self.knots.to_vec(),
        }
    }
}

/// [`DEFAULT_FUSION`] with the embedding model, as `toolgate eval
/// --leave-one-out` fits it on all seven catalogs it is validated on
/// (bfcl_multi_turn, toolbench_stable, seal_tools, restbench, api_bank,
/// livemcpbench and ultratool), the procedure each fold of that evaluation
/// follows on the six it keeps: group recall 0.946 on the hardest of them,
/// 0.985 on average, at 7.7% of all-tools tokens (13.8% on the costliest), with id
/// finders, at most 50 groups a turn
/// ([`ConfidenceKind::default_max_groups`](crate::routing::ConfidenceKind::default_max_groups))
/// and within the token budget
/// ([`DEFAULT_MAX_TOKEN_SHARE`](crate::routing::DEFAULT_MAX_TOKEN_SHARE)).
pub const HYBRID_DEFAULTS: FittedDefaults = FittedDefaults {
    route_above: 0.1,
    tools_per_group: 1,
    id_finders: true,
    model: PerGroup {
        weight: 4.688,
        bias: -3.273,
        rank: -1.310,
    },
    knots: &[
        (0.0375, 0.0),
        (0.0572, 0.0),
        (0.0611, 0.0),
        (0.2259, 0.2016),
        (0.5285, 0.4887),
        (0.7439, 0.6723),
        (0.864, 0.7993),
        (0.9219, 0.8827),
        (0.9678, 0.9336),
        (0.9871, 0.9538),
        (0.9959, 0.9786),
        (1.0, 0.9994),
    ],
};

/// The same for [`Fusion::Lexical`], the router without the embedding
/// model: 0.867 on the hardest, 0.959 on average, at 7.6%.
pub const LEXICAL_DEFAULTS: FittedDefaults = FittedDefaults {
    route_above: 0.1,
    tools_per_group: 1,
    id_finders: true,
    model: PerGroup {
        weight: 4.388,
        bias: -3.006,
        rank: -1.446,
    },
    knots: &[
        (0.0524, 0.0),
        (0.1121, 0.0895),
        (0.2792, 0.2193),
        (0.3989, 0.3673),
        (0.5614, 0.5163),
        (0.717, 0.5826),
        (0.7891, 0.7116),
        (0.8662, 0.7502),
        (0.907, 0.8368),
        (0.9395, 0.8732),
        (0.9503, 0.9008),
        (0.9931, 0.9305),
    ],
};

impl Router {
    /// The router toolgate runs: tools scored first ([`HybridScorer`], by
    /// the configured fusion, semantically too when `embeddings` is given
    /// and works), groups by their best tools, the per-group confidence
    /// and its calibration as configured, else the defaults fitted for the
    /// scorer that results ([`HYBRID_DEFAULTS`], [`LEXICAL_DEFAULTS`]).
    /// Those defaults were fitted on other catalogs, so the router restates
    /// them for `catalog` by its self-test ([`Router::self_tested`]: about
    /// 0.1 s at 2,500 tools); a configured calibration (fitted on the
    /// catalog's own turns, say) is taken as it is. A turn's tools keep
    /// within `[routing] max_token_share` of what sending every tool costs
    /// ([`DEFAULT_MAX_TOKEN_SHARE`] when unset), counted with `o200k_base`.
    pub fn hybrid(
        catalog: &Catalog,
        mut taxonomy: Taxonomy,
        embeddings: Option<Arc<dyn Embeddings>>,
    ) -> Self {
        let share = taxonomy.max_token_share.unwrap_or(DEFAULT_MAX_TOKEN_SHARE);
        taxonomy.max_token_share = Some(share);
        Self::hybrid_built(catalog, taxonomy, embeddings)
    }

    /// [`Self::hybrid`] for searching the catalog (`find_tool_groups`),
    /// whose answer is one line per group and tool, not schemas: no token
    /// budget applies.
    pub fn hybrid_search(
        catalog: &Catalog,
        mut taxonomy: Taxonomy,
        embeddings: Option<Arc<dyn Embeddings>>,
    ) -> Self {
        taxonomy.max_token_share = None;
        Self::hybrid_built(catalog, taxonomy, embeddings)
    }

    fn hybrid_built(
        catalog: &Catalog,
        mut taxonomy: Taxonomy,
        embeddings: Option<Arc<dyn Embeddings>>,
    ) -> Self {
        let fusion = taxonomy.fusion.unwrap_or(DEFAULT_FUSION);
        let scorer = HybridScorer::new(catalog, &taxonomy, embeddings, fusion);
        let defaults = if scorer.is_semantic() && fusion != Fusion::Lexical {
            HYBRID_DEFAULTS
        } else {
            LEXICAL_DEFAULTS
        };
        let model = taxonomy.per_group.unwrap_or(defaults.model);
        taxonomy.route_above = taxonomy.route_above.or(Some(defaults.route_above));
        taxonomy.tools_per_group = taxonomy.tools_per_group.or(Some(defaults.tools_per_group));
        let configured = taxonomy.calibration.clone();
        let id_finders = taxonomy.id_finders.unwrap_or(defaults.id_finders);
        // Counted, and its id finders read, before the self-test, so that
        // its probes are decided as turns are.
        let mut router = Self::new(Box::new(scorer), taxonomy)
            .with_confidence(Confidence::PerGroup(model))
            .counted(catalog);
        if id_finders {
            router = router.with_id_finders(Arc::new(IdFinders::new(catalog)));
        }
        match configured {
            Some(calibration) => router.with_calibration(calibration),
            None => router
                .with_calibration(defaults.calibration())
                .self_tested(catalog),
        }
    }
}
