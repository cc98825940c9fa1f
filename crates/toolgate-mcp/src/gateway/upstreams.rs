//! A new list of upstreams applied while the gateway serves (a reloaded
//! configuration): each upstream is compared by name with the one running,
//! and only the difference is applied, through the toolbox's run-time
//! changes of listed sources ([`Toolbox::add_listed`] and its siblings).
//!
//! Upstreams removed go first (their names are free again), then those
//! whose configuration changed are replaced in place, then new ones join
//! after every upstream already there: names of tools that run never move.
//! Sessions keep their loaded groups; those whose visible tools changed
//! are told by the toolbox's announcements.

use std::sync::{Arc, PoisonError};

use toolgate_core::GroupId;
use toolgate_store::ConversationStore;
use toolgate_tools::{Joined, ListedSource, Toolbox};

use super::{Gateway, UpstreamChanges};
use crate::config::UpstreamConfig;
use crate::upstream::{Upstream, restart_counts};

impl<S: ConversationStore + 'static> Gateway<S> {
    /// The upstreams as they are now, in priority order.
    pub(crate) fn upstreams(&self) -> Vec<Arc<Upstream>> {
        self.upstreams
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The names of the upstreams, in priority order.
    pub fn upstream_names(&self) -> Vec<GroupId> {
        self.upstreams()
            .iter()
            .map(|upstream| upstream.name().clone())
            .collect()
    }

    /// Makes the upstreams `configs` (a reloaded configuration): removed
    /// ones stop and take their groups away, changed ones restart in place
    /// keeping their tools' names, new ones join after the others. An
    /// upstream whose configuration did not change keeps running untouched.
    pub async fn update_upstreams(&self, configs: Vec<UpstreamConfig>) -> UpstreamChanges {
        let _reconfiguring = self.reconfiguring.lock().await;
        let toolbox = Arc::clone(&self.toolbox);
        let mut running = self.upstreams();
        let mut changes = UpstreamChanges::default();

        let (kept, gone): (Vec<_>, Vec<_>) = running
            .drain(..)
            .partition(|upstream| configs.iter().any(|c| c.name == *upstream.name()));
        running = kept;
        for upstream in gone {
            toolbox.remove_listed(upstream.name().as_str()).await;
            changes.removed.push(upstream.name().clone());
        }
        self.publish(&running);

        for config in configs {
            let name = config.name.clone();
            match running.iter().position(|u| u.name() == &config.name) {
                Some(place) if running[place].config() == &config => {}
                Some(place) => {
                    let upstream = Arc::new(Upstream::new(config));
                    match toolbox.replace_listed(listed(&upstream)).await {
                        Ok(joined) => {
                            running[place] = upstream;
                            changes.changed.push((name, joined));
                        }
                        Err(error) => changes.refused.push((name, error.to_string())),
                    }
                }
                None => match add(&toolbox, config).await {
                    Ok((upstream, joined)) => {
                        running.push(upstream);
                        changes.added.push((name, joined));
                    }
                    Err(reason) => changes.refused.push((name, reason)),
                },
            }
            self.publish(&running);
        }
        if self.deferral != toolgate_core::Deferral::Always {
            // Whether to go on sending every tool depends on all of them.
            toolbox.list_every_source().await;
        }
        self.redecide().await;
        changes
    }

    /// Makes `running` the gateway's upstreams, and counts their restarts.
    fn publish(&self, running: &[Arc<Upstream>]) {
        *self
            .upstreams
            .write()
            .unwrap_or_else(PoisonError::into_inner) = running.to_vec();
        self.metrics
            .upstream_restarts()
            .set(restart_counts(running));
    }
}

/// Starts an upstream new to the toolbox.
async fn add(
    toolbox: &Arc<Toolbox>,
    config: UpstreamConfig,
) -> Result<(Arc<Upstream>, Joined), String> {
    let upstream = Arc::new(Upstream::new(config));
    let joined = toolbox
        .add_listed(listed(&upstream))
        .await
        .map_err(|error| error.to_string())?;
    Ok((upstream, joined))
}

fn listed(upstream: &Arc<Upstream>) -> Arc<dyn ListedSource> {
    Arc::clone(upstream) as Arc<dyn ListedSource>
}
