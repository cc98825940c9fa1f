//! Whether the gateway defers its tools or sends every one of them
//! ([`Delivery`]): decided when it starts, for its whole catalog (every
//! upstream listed once to know its tools), against `[tools] defer` and the
//! context window it assumes. A gateway that sends every tool lists each one
//! a client may use, offers no meta-tool and answers a call of any tool at
//! once. Its sessions keep that mode while upstreams change, until the
//! catalog passes the threshold: from then on the gateway defers, and every
//! session is told its tool list changed (to the core tools and the group
//! listing; nothing is loaded). A gateway that defers keeps deferring until
//! it restarts.

use toolgate_core::{Catalog, Delivery, Mode, TokenCounter, ToolKind};
use toolgate_store::ConversationStore;

use super::Gateway;

impl<S: ConversationStore + 'static> Gateway<S> {
    /// How the gateway delivers its tools now.
    pub fn delivery(&self) -> Delivery {
        *self
            .delivery
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Whether the gateway sends every tool now.
    pub(crate) fn sends_whole(&self) -> bool {
        self.delivery().mode == Mode::Whole
    }

    /// Decides again once the catalog changed: a gateway sending every tool
    /// defers from now on when its catalog passed the threshold, and tells
    /// every session. A deferring one stays so.
    pub(crate) async fn redecide(&self) {
        if !self.sends_whole() {
            return;
        }
        let decided = self.with_catalog(|catalog| self.decide(catalog));
        if decided.mode == Mode::Whole {
            *self
                .delivery
                .write()
                .unwrap_or_else(std::sync::PoisonError::into_inner) = decided;
            return;
        }
        tracing::warn!(
            "the catalog passed the threshold of sending every tool ({decided}): the gateway \
             defers its tools from now on; sessions start again from the core tools"
        );
        *self
            .delivery
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = decided;
        self.sessions.notify_group_changed(None, true).await;
    }

    /// How `catalog` is delivered by the gateway's setting: its tools but
    /// the meta-tools, their schemas counted as the gateway counts them.
    pub(crate) fn decide(&self, catalog: &Catalog) -> Delivery {
        let tools: Vec<_> = catalog
            .tools()
            .filter(|tool| tool.kind() != ToolKind::Meta)
            .map(|tool| tool.definition)
            .collect();
        let tokens = match TokenCounter::shared() {
            Some(counter) => counter.tools(tools.iter().copied()),
            None => {
                tracing::warn!("the tokenizer is not available: tools are deferred");
                usize::MAX
            }
        };
        self.deferral
            .decide(tools.len(), tokens, self.context_window, None)
    }
}
