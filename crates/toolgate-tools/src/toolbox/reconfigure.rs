//! Listed sources (MCP servers) added, replaced and removed while the
//! toolbox runs: a gateway applying a new configuration.
//!
//! The rules that keep sessions whole across such a change:
//!
//! - a source added comes after every source already there, whatever its
//!   place in the configuration, so the tools that run keep their names
//!   (its own tools are qualified where a name is taken);
//! - a source replaced (its command, address or settings changed) keeps its
//!   place and the names its tools had; it is listed again at once when the
//!   one before it ran, so sessions that loaded it go on;
//! - a source removed takes its group and tools away, and frees its name;
//! - each change is announced ([`crate::CatalogChange`]): the group, for
//!   the sessions that loaded it, and the groups on offer, for everyone.

use std::sync::{Arc, PoisonError};

use toolgate_core::{CatalogError, GroupId, GroupVisibility};

use super::{Toolbox, position_of, register_listed_group, watch_changes};
use crate::catalog_state::CatalogChange;
use crate::consolidate::polymorphic_groups;
use crate::error::{SourceError, ToolboxError};
use crate::listing::{Listed, ListedSlot, default_description};
use crate::registry::SourceId;
use crate::source::{ListedSource, Startup, ToolSource};

/// How a listed source added or replaced at run time came in.
#[derive(Debug)]
pub enum Joined {
    /// Not started: it starts at the first load of its group.
    Waiting,
    /// Started and listed, with this many tools.
    Listed(usize),
    /// Starting or listing it failed; its group stays on offer, and a load
    /// tries again.
    Failed(SourceError),
}

impl Toolbox {
    /// The groups of the listed sources, in priority order.
    pub fn listed_groups(&self) -> Vec<GroupId> {
        self.listed()
            .iter()
            .map(|slot| slot.source.group().id.clone())
            .collect()
    }

    /// Adds a listed source after the others, its group deferred until it
    /// is listed (at once when it starts eagerly or its tools are always
    /// visible). Its group id must be free.
    pub async fn add_listed(
        self: &Arc<Self>,
        source: Arc<dyn ListedSource>,
    ) -> Result<Joined, ToolboxError> {
        let _reconfiguring = self.reconfiguring.lock().await;
        let spec = source.group().clone();
        {
            let mut catalog = self
                .state
                .catalog
                .write()
                .unwrap_or_else(PoisonError::into_inner);
            register_listed_group(&mut catalog, &spec)?;
            if let Some(consolidation) =
                polymorphic_groups(&self.group_settings, &catalog).remove(&spec.id)
            {
                self.state
                    .polymorphic
                    .write()
                    .unwrap_or_else(PoisonError::into_inner)
                    .insert(spec.id.clone(), consolidation);
            }
        }
        let slot = Arc::new(ListedSlot::new(
            Arc::clone(&source),
            self.push_source(source),
        ));
        self.listed
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .push(Arc::clone(&slot));
        tokio::spawn(watch_changes(Arc::downgrade(self), Arc::clone(&slot)));
        let listed = self.list_now(&slot, starts_at_once(&spec)).await;
        // A new group is on offer: every session's group list changed.
        let _ = self.state.changes.send(CatalogChange::CoreTools);
        Ok(joined(listed))
    }

    /// Puts `source` in the place of the listed source of the same group
    /// (its configuration changed). The old one is shut down; the new one
    /// keeps the names its tools had and is listed at once when the old one
    /// ran (or it starts eagerly, or its tools are always visible), else at
    /// the next load.
    pub async fn replace_listed(
        self: &Arc<Self>,
        source: Arc<dyn ListedSource>,
    ) -> Result<Joined, ToolboxError> {
        let _reconfiguring = self.reconfiguring.lock().await;
        let spec = source.group().clone();
        let group = spec.id.as_str();
        let listed = self.listed();
        let old = position_of(&listed, group)
            .map(|index| Arc::clone(&listed[index]))
            .ok_or_else(|| CatalogError::UnknownGroupId(group.to_owned()))?;
        let old_spec = old.source.group().clone();
        let was_running = old.source.running_generation().await.is_some();
        let retired = old.retire().await;
        let was_listed = retired.was_listed;
        let slot = Arc::new(ListedSlot::inheriting(
            Arc::clone(&source),
            self.push_source(source),
            retired,
        ));
        {
            let mut listed = self.listed.write().unwrap_or_else(PoisonError::into_inner);
            if let Some(place) = listed.iter().position(|other| Arc::ptr_eq(other, &old)) {
                listed[place] = Arc::clone(&slot);
            }
        }
        tokio::spawn(watch_changes(Arc::downgrade(self), Arc::clone(&slot)));
        let offer_changed =
            spec.visibility != old_spec.visibility || spec.description != old_spec.description;
        if offer_changed {
            let mut catalog = self
                .state
                .catalog
                .write()
                .unwrap_or_else(PoisonError::into_inner);
            catalog.set_group_visibility(group, spec.visibility)?;
            if let Some(description) = &spec.description {
                catalog.set_group_description(group, description.clone())?;
            } else if !was_listed {
                catalog.set_group_description(group, default_description(group, None))?;
            }
        }
        let listed = self
            .list_now(&slot, was_running || starts_at_once(&spec))
            .await;
        self.state
            .registry
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .forget_source(old.id());
        let group_changed = match &listed {
            Some(Ok(listed)) => listed.changed,
            // The old tools cannot run any more: they go until a listing.
            Some(Err(_)) | None if was_listed => {
                self.state
                    .catalog
                    .write()
                    .unwrap_or_else(PoisonError::into_inner)
                    .defer_group(group)?;
                self.state.validators.forget_all();
                true
            }
            Some(Err(_)) | None => false,
        };
        if group_changed {
            let _ = self
                .state
                .changes
                .send(CatalogChange::Group(spec.id.clone()));
        }
        if offer_changed {
            let _ = self.state.changes.send(CatalogChange::CoreTools);
        }
        Ok(joined(listed))
    }

    /// Removes the listed source of `group`: it is shut down (calls under
    /// way fail), its group and tools leave the catalog, and the name is
    /// free for another. False when no listed source has that group.
    pub async fn remove_listed(&self, group: &str) -> bool {
        let _reconfiguring = self.reconfiguring.lock().await;
        let slot = {
            let mut listed = self.listed.write().unwrap_or_else(PoisonError::into_inner);
            match position_of(&listed, group) {
                Some(index) => listed.remove(index),
                None => return false,
            }
        };
        slot.retire().await;
        self.state
            .registry
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .forget_source(slot.id());
        if let Err(error) = self
            .state
            .catalog
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .remove_group(group)
        {
            tracing::warn!(group, %error, "a removed source's group stayed");
        }
        self.state
            .polymorphic
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(group);
        self.state.validators.forget_all();
        let id = slot.source.group().id.clone();
        for change in [CatalogChange::Group(id), CatalogChange::CoreTools] {
            let _ = self.state.changes.send(change);
        }
        true
    }

    /// Appends a source; its id.
    fn push_source(&self, source: Arc<dyn ListedSource>) -> SourceId {
        let mut sources = self.sources.write().unwrap_or_else(PoisonError::into_inner);
        sources.push(source as Arc<dyn ToolSource>);
        SourceId(sources.len() - 1)
    }

    /// Lists `slot` now when `now`, in its place among the listed sources.
    async fn list_now(
        &self,
        slot: &Arc<ListedSlot>,
        now: bool,
    ) -> Option<Result<Listed, SourceError>> {
        if !now {
            return None;
        }
        let listed = self.listed();
        let index = listed.iter().position(|other| Arc::ptr_eq(other, slot))?;
        Some(self.ensure_listed(&listed, index).await)
    }
}

/// Whether a source is listed as soon as it joins.
fn starts_at_once(spec: &crate::source::ListedGroup) -> bool {
    spec.startup == Startup::Eager || spec.visibility == GroupVisibility::Always
}

fn joined(listed: Option<Result<Listed, SourceError>>) -> Joined {
    match listed {
        None => Joined::Waiting,
        Some(Ok(listed)) => Joined::Listed(listed.tools),
        Some(Err(error)) => Joined::Failed(error),
    }
}
