//! [`UserTools`]: the group `user_tools`, the JavaScript tools an owner's
//! agents wrote (through [`super::management`]), listed from the store.
//!
//! It is a [`ListedSource`]: its tools are what the store holds when it is
//! listed, and after each change the management tools announce one
//! ([`UserTools::announce`]); the toolbox relists the group and, when its
//! tools really changed, tells the sessions that loaded it
//! (`notifications/tools/list_changed` in the gateway). A call reads the
//! tool's current record, so it runs the source as last stored.
//!
//! The store is the one source of these tools: where other processes share
//! it (replicas of a gateway on one PostgreSQL database), each request
//! first checks the revision of the tools it will see
//! ([`JsToolStore::js_tools_revision`], one read by key), and when another
//! process changed them they are read again (the listed ones relisted)
//! before the request goes on, and the sessions showing them are told. A
//! store that carries announcements (PostgreSQL's `NOTIFY`) also says which
//! owner's tools another process changed as it happens, so a process shows
//! the change before anyone asks ([`UserJsTools::attach`](super::management::UserJsTools::attach)).
//!
//! Whose tools: with [`ToolOwnership::PerCaller`], a caller whose authority
//! names an owner (a gateway's named client) lists, writes and runs that
//! owner's tools alone: the group is also an [`OwnedTools`] source, whose
//! tools the toolbox shows that caller in place of the listed ones. Every
//! other caller (and every caller with [`ToolOwnership::Shared`]) has the
//! configured owner's, the ones listed.

use std::collections::HashMap;
use std::mem;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Map, Value};
use tokio::sync::{Notify, oneshot};
use toolgate_core::{GroupId, GroupVisibility, NameError, ToolDefinition, ToolName};
use toolgate_store::{JsToolRecord, JsToolStore, ToolOwner};

use super::{JsCall, JsRunner, ToolOwnership};
use crate::context::CallContext;
use crate::error::{SourceError, ToolCallError};
use crate::output::ToolOutput;
use crate::source::{
    CallDeadline, ListedGroup, ListedSource, NamePriority, OwnedSet, OwnedTools, SourceCall,
    SourceChange, SourceListing, SourceTool, Startup, ToolSource,
};

/// The group's id.
pub const USER_TOOLS_GROUP: &str = "user_tools";
/// The group's description.
const DESCRIPTION: &str = "JavaScript tools written by agents";
/// How long a change (or a request that found the store changed) waits for
/// the toolbox to relist `user_tools`.
pub(crate) const RELIST_WAIT: Duration = Duration::from_secs(10);

/// The owner's stored JavaScript tools, as one listed group.
#[derive(Debug)]
pub(crate) struct UserTools {
    group: ListedGroup,
    store: Arc<dyn JsToolStore>,
    /// The owner of callers that name none, whose tools are listed.
    owner: ToolOwner,
    ownership: ToolOwnership,
    runner: JsRunner,
    changes: ChangeSignal,
    /// The store's revision of the listed owner's tools when they were last
    /// listed; `None` when unknown (never listed, or the store could not
    /// say), or where no other process changes them.
    listed_revision: Mutex<Option<u64>>,
    /// The tools of each owner callers named, as last read.
    owned: Mutex<HashMap<ToolOwner, Owned>>,
    /// The revision the next read of an owner's tools gets.
    next_revision: AtomicU64,
}

/// One owner's tools as last read, and the store's revision of them then.
#[derive(Debug)]
struct Owned {
    tools: Arc<OwnedSet>,
    /// As [`UserTools::listed_revision`].
    stored: Option<u64>,
}

impl UserTools {
    pub(crate) fn new(
        store: Arc<dyn JsToolStore>,
        owner: ToolOwner,
        ownership: ToolOwnership,
        runner: JsRunner,
    ) -> Result<Self, NameError> {
        Ok(Self {
            group: ListedGroup {
                id: GroupId::new(USER_TOOLS_GROUP)?,
                description: Some(DESCRIPTION.to_owned()),
                // Listed at start (a read of the store): its tools are in
                // the catalog for the router and `find_tool_groups` from
                // the first turn.
                startup: Startup::Eager,
                visibility: GroupVisibility::OnLoad,
            },
            store,
            owner,
            ownership,
            runner,
            changes: ChangeSignal::default(),
            listed_revision: Mutex::new(None),
            owned: Mutex::new(HashMap::new()),
            next_revision: AtomicU64::new(1),
        })
    }

    /// Whose tools the caller of `context` lists, writes and runs: the
    /// owner its authority names, with per-caller ownership; else the
    /// configured one.
    pub(crate) fn owner_of(&self, context: &CallContext) -> ToolOwner {
        match (self.ownership, context.authority.tool_owner()) {
            (ToolOwnership::PerCaller, Some(owner)) => owner.clone(),
            (ToolOwnership::PerCaller, None) | (ToolOwnership::Shared, _) => self.owner.clone(),
        }
    }

    /// Whether `owner`'s tools are the listed ones (its changes are
    /// relisted), rather than a caller's own.
    pub(crate) fn lists(&self, owner: &ToolOwner) -> bool {
        *owner == self.owner
    }

    /// The owner of the listed tools, and every owner whose own tools were
    /// read.
    pub(crate) fn known_owners(&self) -> Vec<ToolOwner> {
        let owned = self.owned.lock().unwrap_or_else(PoisonError::into_inner);
        std::iter::once(self.owner.clone())
            .chain(owned.keys().cloned())
            .collect()
    }

    /// Reads `owner`'s tools again (after a change of theirs): the toolbox
    /// shows them from its next view on. A failed read keeps what was known.
    pub(crate) async fn reload_owner(&self, owner: &ToolOwner) {
        let stored = self.stored_revision(owner).await;
        self.read_owner(owner, stored).await;
    }

    /// Reads `owner`'s tools, which the store had at revision `stored`.
    async fn read_owner(&self, owner: &ToolOwner, stored: Option<u64>) {
        match self.store.js_tools(owner).await {
            Ok(records) => {
                let tools = Arc::new(OwnedSet {
                    revision: self.next_revision.fetch_add(1, Ordering::Relaxed),
                    tools: records.into_iter().filter_map(definition).collect(),
                });
                self.owned
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .insert(owner.clone(), Owned { tools, stored });
            }
            Err(error) => tracing::error!(%owner, %error, "reading a client's JavaScript tools"),
        }
    }

    /// The store's revision of `owner`'s tools, read before the tools so
    /// that a change in between is seen at the next check; `None` where no
    /// other process changes them (nothing to check), or when it cannot be
    /// read (logged).
    async fn stored_revision(&self, owner: &ToolOwner) -> Option<u64> {
        if !self.store.is_shared() {
            return None;
        }
        match self.store.js_tools_revision(owner).await {
            Ok(revision) => Some(revision),
            Err(error) => {
                tracing::warn!(%owner, %error, "reading the revision of JavaScript tools");
                None
            }
        }
    }

    /// Announces a change and waits until `user_tools` is relisted.
    pub(crate) async fn relisted(&self) {
        let relisted = self.changes.announce();
        if tokio::time::timeout(RELIST_WAIT, relisted).await.is_err() {
            tracing::warn!(
                "{USER_TOOLS_GROUP} was not relisted within {} s of a change",
                RELIST_WAIT.as_secs()
            );
        }
    }

    /// The script's file name for tool `name`, as errors name it.
    pub(crate) fn file_name(name: &str) -> String {
        format!("{USER_TOOLS_GROUP}/{name}.js")
    }
}

/// A stored tool's definition, as a caller's view shows it.
fn definition(record: JsToolRecord) -> Option<ToolDefinition> {
    ToolDefinition::new(
        record.name,
        record.description,
        Value::Object(record.input_schema),
    )
    .ok()
}

/// A tool as the group lists it: an MCP tool listing (name, description,
/// input schema), so the gateway lists it as it is, and any change of
/// those is a change the sessions hear of.
fn source_tool(record: JsToolRecord) -> SourceTool {
    let mut listing = Map::new();
    listing.insert("name".to_owned(), Value::String(record.name.to_string()));
    listing.insert(
        "description".to_owned(),
        Value::String(record.description.clone()),
    );
    listing.insert(
        "inputSchema".to_owned(),
        Value::Object(record.input_schema.clone()),
    );
    SourceTool {
        name: record.name.to_string(),
        description: record.description,
        input_schema: Value::Object(record.input_schema),
        annotations: None,
        listing,
    }
}

#[async_trait]
impl ToolSource for UserTools {
    /// The script interrupts itself at its time limit; the toolbox waits a
    /// little longer, so the model reads the script's own timeout.
    fn deadline(&self) -> CallDeadline {
        CallDeadline::Own(JsRunner::deadline(self.runner.timeout_of(None)))
    }

    async fn call(
        &self,
        call: SourceCall,
        context: &CallContext,
    ) -> Result<ToolOutput, ToolCallError> {
        let tool = call.tool;
        // The caller's own tool: never another owner's, whatever the name.
        let owner = self.owner_of(context);
        let record = match ToolName::new(tool.as_str()) {
            Ok(name) => self.store.js_tool(&owner, &name).await,
            Err(_) => Ok(None),
        };
        let record = match record {
            Ok(Some(record)) => record,
            // Deleted since the group was listed (by another process
            // sharing the store, say).
            Ok(None) => {
                return Err(ToolCallError::respond(format!(
                    "Tool '{tool}' no longer exists: it was deleted."
                )));
            }
            Err(error) => {
                tracing::error!(%tool, %error, "reading a JavaScript tool");
                return Err(ToolCallError::respond(format!(
                    "Tool '{tool}' cannot run: its source could not be read from the store."
                )));
            }
        };
        let call = JsCall {
            file_name: Self::file_name(&tool),
            tool,
            source: record.source.into(),
            function: record.function,
            group: USER_TOOLS_GROUP.to_owned(),
            timeout: self.runner.timeout_of(None),
            arguments: call.arguments,
        };
        self.runner.run(call, context).await
    }
}

#[async_trait]
impl OwnedTools for UserTools {
    fn group_id(&self) -> &GroupId {
        &self.group.id
    }

    /// Reads the owner's tools the first time; then, where other processes
    /// share the store, again whenever its revision of them moved.
    async fn prepare(&self, owner: &ToolOwner) -> bool {
        let known = self
            .owned
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(owner)
            .map(|owned| owned.stored);
        let Some(known) = known else {
            self.reload_owner(owner).await;
            return false;
        };
        let stored = self.stored_revision(owner).await;
        if stored.is_none() || stored == known {
            return false;
        }
        self.read_owner(owner, stored).await;
        true
    }

    fn tools_of(&self, owner: &ToolOwner) -> Option<Arc<OwnedSet>> {
        self.owned
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(owner)
            .map(|owned| Arc::clone(&owned.tools))
    }
}

#[async_trait]
impl ListedSource for UserTools {
    fn group(&self) -> &ListedGroup {
        &self.group
    }

    /// A tool an agent wrote never takes a configured server's tool's name:
    /// when one is listed under a name such a tool holds, the agent's is
    /// renamed.
    fn name_priority(&self) -> NamePriority {
        NamePriority::Yields
    }

    async fn list(&self) -> Result<SourceListing, SourceError> {
        let revision = self.stored_revision(&self.owner).await;
        let records = self
            .store
            .js_tools(&self.owner)
            .await
            .map_err(SourceError::new)?;
        *self
            .listed_revision
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = revision;
        Ok(SourceListing {
            tools: records.into_iter().map(source_tool).collect(),
            about: None,
            generation: 0,
        })
    }

    /// Always "running", at one generation: the store needs no start, and a
    /// change is relisted through [`ListedSource::changed`] alone, which
    /// is what makes the toolbox tell the sessions.
    async fn running_generation(&self) -> Option<u64> {
        Some(0)
    }

    async fn stop(&self) {}

    async fn shutdown(&self) {
        self.changes.close();
    }

    async fn changed(&self) -> SourceChange {
        self.changes.next().await
    }

    /// Where other processes share the store: relists the group when the
    /// store's revision of the listed owner's tools is not the one listed.
    async fn catch_up(&self) {
        let Some(stored) = self.stored_revision(&self.owner).await else {
            return;
        };
        let listed = *self
            .listed_revision
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if listed != Some(stored) {
            self.relisted().await;
        }
    }
}

/// Changes announced and not yet relisted, between the management tools
/// and the toolbox's watch of this source.
///
/// The toolbox calls [`ListedSource::changed`] in a loop and relists the
/// group each time it answers; so when it calls again, the changes it last
/// answered for are in the catalog, and whoever announced them may go on
/// (a tool just created can be called at once).
#[derive(Debug, Default)]
struct ChangeSignal {
    state: Mutex<SignalState>,
    /// Wakes [`Self::next`]; a wake with nobody waiting is kept for the
    /// next wait.
    wake: Notify,
}

#[derive(Debug, Default)]
struct SignalState {
    /// Announced, not yet answered by `next`.
    announced: Vec<oneshot::Sender<()>>,
    /// Answered by `next`: being relisted.
    relisting: Vec<oneshot::Sender<()>>,
    closed: bool,
}

impl ChangeSignal {
    fn state(&self) -> std::sync::MutexGuard<'_, SignalState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn announce(&self) -> oneshot::Receiver<()> {
        let (done, relisted) = oneshot::channel();
        {
            let mut state = self.state();
            if state.closed {
                // Dropping `done` answers at once: nothing will relist.
                return relisted;
            }
            state.announced.push(done);
        }
        self.wake.notify_one();
        relisted
    }

    fn close(&self) {
        let mut state = self.state();
        state.closed = true;
        // Whoever waits on these is answered: nothing will relist.
        state.announced.clear();
        state.relisting.clear();
        drop(state);
        self.wake.notify_one();
    }

    async fn next(&self) -> SourceChange {
        let relisted = mem::take(&mut self.state().relisting);
        for done in relisted {
            let _ = done.send(());
        }
        loop {
            {
                let mut state = self.state();
                if state.closed {
                    return SourceChange::Closed;
                }
                if !state.announced.is_empty() {
                    state.relisting = mem::take(&mut state.announced);
                    return SourceChange::ToolsChanged;
                }
            }
            self.wake.notified().await;
        }
    }
}

#[cfg(test)]
#[path = "user_tools_tests.rs"]
mod tests;
