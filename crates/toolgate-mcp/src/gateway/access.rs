//! Who is calling and what they see: a request's [`RequestScope`], built
//! once where it comes in, and the catalog as its client sees it (the
//! toolbox's view for its authority).

use std::sync::Arc;

use toolgate_core::Catalog;
use toolgate_store::{ConversationId, ConversationStore, ToolOwner};
use toolgate_tools::Authority;

use super::{Access, Gateway};
use crate::clients::{ClientKey, ClientName, Clients, Owner};
use crate::oauth::OAuth;
use crate::scope::{RequestScope, ScopedLimits};

impl<S: ConversationStore + 'static> Gateway<S> {
    /// The scope of a request of `owner` in `session` (`None`: a stateless
    /// request): what its client may use (its policy; everything for the
    /// operator and for a client without one), counted against its rate
    /// limits, and the client's own JavaScript tools. Decided once, where
    /// the request comes in.
    pub(crate) async fn scope(
        &self,
        session: Option<ConversationId>,
        owner: Owner,
    ) -> RequestScope {
        let authority = self.authority_of(&owner.client);
        self.toolbox.prepare_caller(&authority).await;
        RequestScope::new(session, owner, authority)
    }

    /// The scope of a request of the operator (a stdio connection, the
    /// shared token) in `session`, for front ends of this library that
    /// serve one.
    pub async fn operator_scope(&self, session: Option<ConversationId>) -> RequestScope {
        self.scope(session, Owner::default()).await
    }

    /// The scope of a request of the named `client` in `session`, for front
    /// ends of this library that establish who is calling themselves: what
    /// its policy allows, counted against its limits, with its own
    /// JavaScript tools.
    pub async fn client_scope(
        &self,
        session: Option<ConversationId>,
        client: ClientName,
    ) -> RequestScope {
        let owner = Owner {
            client: Some(client),
            subject: None,
        };
        self.scope(session, owner).await
    }

    /// What `caller` may use, as now: its policy (everything for the
    /// operator and for a client without one), counted against its limits;
    /// a named client's JavaScript tools are its own.
    fn authority_of(&self, client: &ClientKey) -> Authority {
        let access = self.access();
        let authority = match client
            .as_ref()
            .and_then(|client| access.policies.get(client))
        {
            Some(policy) => Authority::policy(Arc::clone(policy)),
            None => Authority::everything(),
        };
        let authority = authority.with_limits(Arc::new(ScopedLimits {
            limits: Arc::clone(&access.rate_limits),
            client: client.clone(),
        }));
        match client {
            Some(client) => authority.with_tool_owner(client_tool_owner(client)),
            None => authority,
        }
    }

    /// Runs `f` on the catalog as the request of `scope` sees it
    /// ([`Toolbox::view`](toolgate_tools::Toolbox::view)).
    pub(crate) fn with_view<T>(&self, scope: &RequestScope, f: impl FnOnce(&Catalog) -> T) -> T {
        self.toolbox.with_view(scope.authority(), f)
    }

    /// Who may come in, what each may use, and how often, as now.
    pub fn access(&self) -> Arc<Access> {
        Arc::clone(
            &self
                .access
                .read()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        )
    }

    /// Replaces the clients, their policies and the rate limits at once.
    /// Sessions stay; every one is told to list its tools again, as what it
    /// may see may have changed. Rate limits start full again.
    pub async fn update_access(&self, access: Access) {
        *self
            .access
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Arc::new(access);
        self.toolbox.forget_views();
        self.sessions.notify_group_changed(None, true).await;
    }

    /// Sets who signs in (the named clients and the OAuth issuer's
    /// tokens), keeping the policies and rate limits.
    pub fn set_sign_in(&self, clients: Clients, oauth: Option<Arc<OAuth>>) {
        let mut access = self
            .access
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        *access = Arc::new(Access {
            clients,
            policies: access.policies.clone(),
            rate_limits: Arc::clone(&access.rate_limits),
            oauth,
        });
    }

    /// Whether `caller` sees the whole catalog (no policy narrows it).
    pub(crate) fn sees_everything(&self, client: &ClientKey) -> bool {
        !self.authority_of(client).narrows()
    }
}

/// Whose JavaScript tools a named client writes and runs: its own, apart
/// from any agent's of `toolgate chat` sharing the store.
fn client_tool_owner(client: &ClientName) -> ToolOwner {
    ToolOwner::new(format!("client:{client}"))
}
