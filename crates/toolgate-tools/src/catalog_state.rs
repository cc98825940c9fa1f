//! [`CatalogState`]: the catalog and the registry behind their locks, with
//! what keeps them consistent while listed sources come and change: the
//! compiled input schemas, the groups offered as one polymorphic tool, and
//! the broadcast of real changes. The toolbox and the listing code share it;
//! neither reaches into the other.

use std::collections::BTreeMap;
use std::sync::{PoisonError, RwLock, RwLockReadGuard};

use tokio::sync::broadcast;
use toolgate_core::{ActionPolicy, Catalog, GroupId};

use crate::consolidate::Consolidation;
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
}

impl CatalogState {
    /// The catalog as it is now.
    pub(crate) fn catalog(&self) -> RwLockReadGuard<'_, Catalog> {
        self.catalog.read().unwrap_or_else(PoisonError::into_inner)
    }
}
