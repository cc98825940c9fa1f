//! [`CatalogState`]: the catalog and the registry behind their locks, with
//! what keeps them consistent while listed sources come and change: the
//! compiled input schemas, the groups offered as one polymorphic tool, the
//! broadcast of real changes and the renames not yet told to the operator. The toolbox and the listing code share it;
//! neither reaches into the other.

use std::collections::BTreeMap;
use std::sync::{Mutex, PoisonError, RwLock, RwLockReadGuard};

use tokio::sync::broadcast;
use toolgate_core::{ActionPolicy, Catalog, GroupId};

use crate::consolidate::Consolidation;
use crate::naming::RenamedTool;
use crate::registry::ToolRegistry;
use crate::validate::Validators;

/// A change of the tools on offer, for the sessions it concerns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CatalogChange {
    /// A group's tools (or their definitions) changed: sessions that loaded
    /// it (every session, for a group always visible) should list again.
    Group(GroupId),
    /// Core tools changed, or the groups on offer (which `load_tool_group`
    /// lists): every session should list again.
    CoreTools,
}

#[derive(Debug)]
pub(crate) struct CatalogState {
    pub(crate) catalog: RwLock<Catalog>,
    pub(crate) registry: RwLock<ToolRegistry>,
    pub(crate) validators: Validators,
    /// Groups offered as one polymorphic tool, with their action policies.
    /// Groups of sources added at run time join it.
    pub(crate) polymorphic: RwLock<BTreeMap<GroupId, (ActionPolicy, Consolidation)>>,
    /// Groups whose tools really changed (a listed source announced it, a
    /// manifest was reloaded), and changes every session sees.
    pub(crate) changes: broadcast::Sender<CatalogChange>,
    /// Listed tools exposed under another name, not yet told to the
    /// operator.
    pub(crate) renamed: Mutex<Vec<RenamedTool>>,
}

impl CatalogState {
    /// The catalog as it is now.
    pub(crate) fn catalog(&self) -> RwLockReadGuard<'_, Catalog> {
        self.catalog.read().unwrap_or_else(PoisonError::into_inner)
    }

    /// Queues a rename for the operator.
    pub(crate) fn queue_renamed(&self, renamed: RenamedTool) {
        self.renamed
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(renamed);
    }

    /// The renames not told yet, which are now the caller's to tell.
    pub(crate) fn take_renamed(&self) -> Vec<RenamedTool> {
        std::mem::take(&mut *self.renamed.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// Logs the renames not told yet: those of sources listed after start.
    pub(crate) fn log_renamed(&self) {
        for renamed in self.take_renamed() {
            tracing::warn!("{renamed}");
        }
    }
}
