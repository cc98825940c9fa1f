//! Semantic routing: an embeddings endpoint's view of each group, blended
//! with the router's lexical scores.

use toolgate_core::routing::Router;
use toolgate_core::routing::semantic::{blend, cosine_scores, group_texts};
use toolgate_llm::{EmbeddingsClient, LlmError};

use toolgate_tools::Toolbox;

/// Group embeddings, computed once, and the client that embeds each turn.
#[derive(Debug)]
pub struct SemanticRouting {
    client: EmbeddingsClient,
    /// One vector per router group, in the router's group order.
    vectors: Vec<Vec<f32>>,
    weight: f64,
}

impl SemanticRouting {
    /// Embeds every group of `router` (its name, description and tools, as
    /// `toolbox`'s catalog has them). `weight` (0 to 1) is the semantic share of
    /// the blended score.
    pub async fn new(
        client: EmbeddingsClient,
        router: &Router,
        toolbox: &Toolbox,
        weight: f64,
    ) -> Result<Self, LlmError> {
        let texts = {
            let catalog = toolbox.catalog();
            group_texts(&catalog, router.groups())
        };
        let vectors = client.embed(&texts, &mut |_| {}).await?;
        Ok(Self {
            client,
            vectors,
            weight,
        })
    }

    /// The blended scores of a turn, in the router's group order. If the
    /// endpoint fails, the lexical scores alone (the turn is not held up).
    pub async fn scores(&self, router: &Router, query: &str, context: &[&str]) -> Vec<f64> {
        let lexical = router.scores(query, context);
        match self.client.embed(&[query.to_owned()], &mut |_| {}).await {
            Ok(vectors) if vectors.len() == 1 => blend(
                &lexical,
                &cosine_scores(&vectors[0], &self.vectors),
                self.weight,
            ),
            Ok(_) => lexical,
            Err(error) => {
                tracing::warn!(%error, "embedding the turn failed; routing on words alone");
                lexical
            }
        }
    }
}
