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

#[derive(Debug)]
pub(crate) struct CatalogState {
    pub(crate) catalog: RwLock<Catalog>,
    pub(crate) registry: RwLock<ToolRegistry>,
    pub(crate) validators: Validators,
    /// Groups offered as one polymorphic tool, with their action policies.
    pub(crate) polymorphic: BTreeMap<GroupId, (ActionPolicy, Consolidation)>,
    /// Groups whose tools really changed after a listed source announced it.
    pub(crate) changes: broadcast::Sender<GroupId>,
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
