//! Each caller's view of the catalog ([`Toolbox::view`]): made from its
//! authority (its policy, its own tools) by [`Toolbox::catalog_for`], and
//! kept while the catalog and the caller's own tools stay as they were, so
//! the requests of one client share one view.

use std::sync::{Arc, PoisonError};

use toolgate_core::Catalog;

use super::Toolbox;
use super::call::ViewKey;
use crate::authority::Authority;

/// Views kept at once; the oldest goes first. One per client in use.
const VIEWS_KEPT: usize = 256;

/// A view, with the authority and the key it was made for.
#[derive(Debug)]
pub(crate) struct KeptView {
    authority: Authority,
    key: ViewKey,
    view: Arc<Catalog>,
}

impl Toolbox {
    /// The catalog as a caller with `authority` sees it, when that is not
    /// the whole catalog ([`Self::catalog_for`]); made once per catalog
    /// revision and revision of the caller's own tools.
    pub fn view(&self, authority: &Authority) -> Option<Arc<Catalog>> {
        let key = self.view_key(authority)?;
        let kept = self
            .views
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .find(|kept| kept.key == key && kept.authority.sees_as(authority))
            .map(|kept| Arc::clone(&kept.view));
        if kept.is_some() {
            return kept;
        }
        let view = Arc::new(self.catalog_for(authority)?);
        let mut views = self.views.lock().unwrap_or_else(PoisonError::into_inner);
        views.retain(|kept| !kept.authority.sees_as(authority));
        if views.len() >= VIEWS_KEPT {
            views.remove(0);
        }
        views.push(KeptView {
            authority: authority.clone(),
            key,
            view: Arc::clone(&view),
        });
        Some(view)
    }

    /// Runs `f` on the catalog as a caller with `authority` sees it.
    pub fn with_view<T>(&self, authority: &Authority, f: impl FnOnce(&Catalog) -> T) -> T {
        match self.view(authority) {
            Some(view) => f(&view),
            None => self.with_catalog(f),
        }
    }

    /// Runs `f` on the caller's view and the whole catalog (the same catalog
    /// twice when it sees the whole): what the load budget counts in.
    pub(crate) fn with_view_and_catalog<T>(
        &self,
        authority: &Authority,
        f: impl FnOnce(&Catalog, &Catalog) -> T,
    ) -> T {
        let view = self.view(authority);
        let catalog = self.catalog();
        f(view.as_deref().unwrap_or(&catalog), &catalog)
    }

    /// Lets go of every view kept: the callers' policies changed.
    pub fn forget_views(&self) {
        self.views
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
    }
}
