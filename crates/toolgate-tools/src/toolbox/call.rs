//! One call of a catalog tool, decided once and then run: [`Toolbox::admit`]
//! resolves its name ([`ResolvedCall`]: alias, route, fixed arguments) and
//! decides whether it may run, in one place for every front end: the tool
//! exists, the caller's conversation has it loaded ([`Reach`]), and the
//! caller's [`Authority`](crate::Authority) allows it as it will run (for a
//! polymorphic tool: the action the merged arguments name). Only an
//! [`AdmittedCall`] runs ([`Toolbox::run`]): checked against the input
//! schema of the tool that runs, and run by its source under its deadline.

use std::sync::{Arc, PoisonError};
use std::time::Duration;

use serde_json::{Map, Value};
use toolgate_core::{
    ACTION_PARAMETER, ActionNotAvailable, ActionPolicy, ActiveToolSet, Catalog, CatalogTool,
    GroupId, NotAvailable, Origin, OwnTools, PolicyTarget, PolymorphicTool, ToolDefinition,
    ToolKind, ToolPolicy,
};

use super::Toolbox;
use crate::authority::Authority;
use crate::context::CallContext;
use crate::deadline::call_within_deadline;
use crate::error::ToolCallError;
use crate::output::ToolOutput;
use crate::registry::{Consolidated, Route};
use crate::source::{OwnedSet, SourceCall};
use crate::validate::Validators;

/// A call as it will run: the name the caller used, resolved once to the
/// catalog tool that answers it (through an alias, whose fixed arguments
/// are merged in), with its route. Front ends count, audit and trace the
/// call under [`Self::tool`] and [`Self::group`].
#[derive(Clone, Debug)]
pub struct ResolvedCall {
    /// The name the caller used.
    requested: String,
    /// The catalog tool that answers, when one does.
    target: Option<Target>,
    /// The arguments as the tool receives them.
    arguments: Value,
}

#[derive(Clone, Debug)]
struct Target {
    tool: String,
    group: Option<GroupId>,
    origin: Origin,
    route: Option<Route>,
    /// The input schema of a caller's own tool, which no catalog holds.
    own_schema: Option<Map<String, Value>>,
}

impl ResolvedCall {
    /// The name the caller used.
    pub fn requested(&self) -> &str {
        &self.requested
    }

    /// The catalog tool that answers, by its name; `None` when no tool does.
    pub fn tool(&self) -> Option<&str> {
        self.target.as_ref().map(|target| target.tool.as_str())
    }

    /// The group of the tool that answers; `None` for a core tool or none.
    pub fn group(&self) -> Option<&GroupId> {
        self.target.as_ref()?.group.as_ref()
    }

    /// Where the catalog has the tool that answers from.
    pub fn origin(&self) -> Option<&Origin> {
        self.target.as_ref().map(|target| &target.origin)
    }

    /// The arguments as the tool receives them (an alias's merged in).
    pub fn arguments(&self) -> &Value {
        &self.arguments
    }
}

/// What a call may reach besides the core tools.
#[derive(Clone, Copy, Debug)]
pub enum Reach<'a> {
    /// What a conversation has loaded ([`ActiveToolSet::check_available`]):
    /// a tool of a group it has not loaded is not available, with the hint
    /// to load the group.
    Loaded(&'a ActiveToolSet),
    /// Every tool the caller sees: a turn escalated to the whole catalog, a
    /// request of no session.
    Catalog,
}

/// A call [`Toolbox::admit`] let through: the tool exists, is loaded for
/// the caller, and its authority allows it as it will run. The only thing
/// [`Toolbox::run`] runs.
#[derive(Clone, Debug)]
pub struct AdmittedCall {
    call: ResolvedCall,
    /// For a polymorphic tool the caller may use only some actions of: the
    /// tool narrowed to those.
    actions: Option<PolymorphicTool>,
    /// The tool's own time limit, when its definition sets one.
    timeout: Option<Duration>,
}

impl AdmittedCall {
    /// The call as resolved: what the front end counts it under.
    pub fn call(&self) -> &ResolvedCall {
        &self.call
    }

    /// The tool's own time limit, when its definition sets one (a
    /// manifest's `timeout_seconds`).
    pub fn timeout(&self) -> Option<Duration> {
        self.timeout
    }
}

/// A call [`Toolbox::admit`] refused: what the model reads (the tool is not
/// available, or not this action of it), why, and what the name resolved to.
#[derive(Clone, Debug)]
pub struct RefusedCall {
    call: Box<ResolvedCall>,
    refusal: Refusal,
    text: String,
}

/// Why a call was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// No tool of that name is within the call's reach: none the caller
    /// sees, or one of a group its conversation has not loaded.
    OutOfReach,
    /// The caller's authority does not allow the tool (or the action) as it
    /// would run.
    NotAllowed,
}

impl RefusedCall {
    /// Why it was refused.
    pub fn refusal(&self) -> Refusal {
        self.refusal
    }

    /// The call as resolved: what the front end counts it under.
    pub fn call(&self) -> &ResolvedCall {
        &self.call
    }

    /// What the model reads.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// What the model reads, as a tool's error result.
    pub fn output(&self) -> ToolOutput {
        ToolOutput::error(self.text.clone())
    }
}

/// What one caller's view of the catalog was made from
/// ([`Toolbox::view_key`]): a view serves while its key stays the same.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ViewKey {
    /// The catalog's revision.
    catalog: u64,
    /// The revision of the caller's own tools (0 without any).
    own: u64,
}

impl Target {
    fn kind(&self) -> ToolKind<'_> {
        ToolKind::of(&self.origin, self.group.as_ref())
    }
}

impl Toolbox {
    /// Resolves a call of `name` by the caller with `authority` once: an
    /// alias becomes the tool it stands for, its fixed arguments merged over
    /// `arguments`; a name no catalog tool holds may be one of the caller's
    /// own tools ([`ToolboxOptions::owned`](crate::ToolboxOptions::owned)).
    /// The tool's group, origin and route come with it.
    pub fn resolve(&self, name: &str, arguments: Value, authority: &Authority) -> ResolvedCall {
        let (tool, arguments, found) = self.with_catalog(|catalog| {
            let (tool, arguments) = match catalog.alias(name) {
                Some(alias) => (alias.tool.to_string(), alias.arguments(arguments)),
                None => (name.to_owned(), arguments),
            };
            let found = catalog
                .tool(&tool)
                .map(|found| (found.group.cloned(), found.origin.clone()));
            (tool, arguments, found)
        });
        let route = self
            .state
            .registry
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&tool)
            .cloned();
        // A caller with tools of its own calls them by name: what the
        // catalog lists in their group is another owner's.
        let owns = |group: &Option<GroupId>| {
            authority.tool_owner().is_some()
                && self
                    .owned
                    .as_ref()
                    .is_some_and(|(owned, _)| group.as_ref() == Some(owned.group_id()))
        };
        let target = match found {
            Some((group, _)) if owns(&group) => self.own_tool(&tool, authority),
            Some((group, origin)) => Some(Target {
                tool,
                group,
                origin,
                route,
                own_schema: None,
            }),
            None => self.own_tool(&tool, authority),
        };
        ResolvedCall {
            requested: name.to_owned(),
            target,
            arguments,
        }
    }

    /// The caller's own tool `name`, when its authority names an owner who
    /// has one.
    fn own_tool(&self, name: &str, authority: &Authority) -> Option<Target> {
        let (owned, source) = self.owned.as_ref()?;
        let tools = owned.tools_of(authority.tool_owner()?)?;
        let tool = tools.tools.iter().find(|tool| tool.name.as_str() == name)?;
        let group = owned.group_id().clone();
        Some(Target {
            tool: name.to_owned(),
            origin: Origin::Upstream {
                server: group.to_string(),
            },
            group: Some(group),
            route: Some(Route::Source {
                source: *source,
                tool: name.to_owned(),
                listing: None,
            }),
            own_schema: Some(tool.input_schema.clone()),
        })
    }

    /// Before the view and the calls of a caller with `authority`: makes
    /// the tools it sees current. Its own tools, when its authority names
    /// an owner, are read from their store (and read again when another
    /// process changed them: the sessions showing them are told); else the
    /// listed sources catch up ([`ListedSource::catch_up`](crate::ListedSource::catch_up)).
    pub async fn prepare_caller(&self, authority: &Authority) {
        if let (Some((owned, _)), Some(owner)) = (&self.owned, authority.tool_owner()) {
            if owned.prepare(owner).await {
                self.announce(crate::CatalogChange::Group(owned.group_id().clone()));
            }
            return;
        }
        for slot in self.listed() {
            slot.source.catch_up().await;
        }
    }

    /// Decides whether a call of `name` by the caller with `authority` may
    /// run, once for every front end: its name resolved ([`Self::resolve`]);
    /// the tool in what the caller may `reach`, as the caller sees the
    /// catalog ([`Self::view`]); allowed by the authority as it will run (a
    /// polymorphic tool's action, named in the merged arguments, included).
    /// A refusal is the answer the model reads: the tool is "not available",
    /// as one that does not exist (with the hint to load its group when the
    /// conversation has not), or the action is not available to this caller.
    /// Nothing runs, starts or is counted here.
    pub fn admit(
        &self,
        name: &str,
        arguments: Value,
        authority: &Authority,
        reach: Reach<'_>,
    ) -> Result<AdmittedCall, RefusedCall> {
        let call = self.resolve(name, arguments, authority);
        let refuse = |call: ResolvedCall, refusal: Refusal, text: String| {
            Err(RefusedCall {
                call: Box::new(call),
                refusal,
                text,
            })
        };
        let Some(target) = &call.target else {
            return refuse(call, Refusal::OutOfReach, not_available_text(name));
        };
        // Within reach, as the caller sees the catalog: the tool that runs,
        // whatever name led to it (an alias is judged as the call it makes).
        let checked = self.with_view(authority, |view| {
            let definition = match reach {
                Reach::Loaded(active) => active.check_available(view, &target.tool),
                Reach::Catalog => {
                    view.tool(&target.tool)
                        .map(|tool| tool.definition)
                        .ok_or(NotAvailable {
                            tool: name.to_owned(),
                            group: None,
                        })
                }
            };
            definition
                .map(|definition| definition.timeout)
                .map_err(|not_available| NotAvailable {
                    tool: name.to_owned(),
                    ..not_available
                })
        });
        let timeout = match checked {
            Ok(timeout) => timeout,
            Err(not_available) => {
                return refuse(call, Refusal::OutOfReach, not_available.to_string());
            }
        };
        let actions = match &target.route {
            Some(Route::Polymorphic(consolidated)) => {
                let Some(narrowed) = permitted_actions(authority, target, consolidated) else {
                    return refuse(call, Refusal::NotAllowed, not_available_text(name));
                };
                if let Some(narrowed) = &narrowed
                    && let Some(action) =
                        call.arguments.get(ACTION_PARAMETER).and_then(Value::as_str)
                    && consolidated.tool.actions().iter().any(|a| a.name == action)
                    && !narrowed.actions().iter().any(|a| a.name == action)
                {
                    // An action the tool has but this caller may not use.
                    let text = ActionNotAvailable {
                        tool: target.tool.clone(),
                        action: action.to_owned(),
                    }
                    .to_string();
                    return refuse(call, Refusal::NotAllowed, text);
                }
                narrowed
            }
            Some(Route::Source { .. } | Route::Unbound) | None => {
                let permitted = authority.permits(&PolicyTarget::tool(target.kind(), &target.tool));
                if !permitted || target.kind() == ToolKind::Meta {
                    return refuse(call, Refusal::NotAllowed, not_available_text(name));
                }
                None
            }
        };
        Ok(AdmittedCall {
            call,
            actions,
            timeout,
        })
    }

    /// Runs catalog tool `name` for `context`'s caller, reaching every tool
    /// it sees: [`Self::admit`], then [`Self::run`].
    pub async fn call(
        &self,
        name: &str,
        arguments: Value,
        context: &CallContext,
    ) -> Result<ToolOutput, ToolCallError> {
        match self.admit(name, arguments, &context.authority, Reach::Catalog) {
            Ok(admitted) => self.run(admitted, context).await,
            Err(refused) => Err(ToolCallError::RespondToModel(refused.output())),
        }
    }

    /// Runs an admitted call for `context`'s caller: a polymorphic tool
    /// resolves its action from the merged arguments among those the caller
    /// may use (a mistake answers the structured error, listing them) and
    /// runs the member tool behind it; arguments are checked against the
    /// input schema of the tool that runs; then its source runs it, under
    /// its deadline: past it, `context.cancel` is cancelled and the model
    /// reads that the call timed out.
    pub async fn run(
        &self,
        call: AdmittedCall,
        context: &CallContext,
    ) -> Result<ToolOutput, ToolCallError> {
        let AdmittedCall {
            call:
                ResolvedCall {
                    requested,
                    target,
                    arguments,
                },
            actions,
            ..
        } = call;
        let Some(target) = target else {
            return Err(not_available(&requested));
        };
        if let Some(Route::Polymorphic(consolidated)) = &target.route {
            let tool = actions.as_ref().unwrap_or(&consolidated.tool);
            return self
                .call_action(&requested, &target, consolidated, tool, &arguments, context)
                .await;
        }
        match &target.own_schema {
            Some(schema) => Validators::check_once(&target.tool, schema, &arguments)
                .map_err(ToolCallError::respond)?,
            None => self.with_catalog(|catalog| match catalog.tool(&target.tool) {
                Some(tool) => self
                    .state
                    .validators
                    .check(&target.tool, &tool.definition.input_schema, &arguments)
                    .map_err(ToolCallError::respond),
                None => Err(not_available(&requested)),
            })?,
        }
        self.dispatch(target.route.as_ref(), &target.tool, arguments, context)
            .await
    }

    /// Runs one action of a consolidated group: resolved among the actions
    /// of `tool` (the group's tool, narrowed to what the caller may use),
    /// counted, checked against the member's schema, run, and answered with
    /// a `type` field.
    async fn call_action(
        &self,
        requested: &str,
        target: &Target,
        consolidated: &Consolidated,
        tool: &PolymorphicTool,
        arguments: &Value,
        context: &CallContext,
    ) -> Result<ToolOutput, ToolCallError> {
        let call = match tool.resolve(arguments) {
            Ok(call) => call,
            Err(error) => {
                return Err(ToolCallError::RespondToModel(ToolOutput::json_error(
                    error.to_json(),
                )));
            }
        };
        let action = call.action.name.clone();
        let Some(index) = consolidated
            .tool
            .actions()
            .iter()
            .position(|candidate| candidate.name == action)
        else {
            return Err(not_available(requested));
        };
        *self
            .action_calls
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry((target.tool.clone(), action.clone()))
            .or_default() += 1;
        let member = &consolidated.members[index];
        let member_name = member.definition.name.as_str();
        if let Err(text) = self.state.validators.check(
            member_name,
            &member.definition.input_schema,
            &call.arguments,
        ) {
            return Err(ToolCallError::RespondToModel(
                ToolOutput::invalid_action_arguments(&action, &text),
            ));
        }
        let output = match self
            .dispatch(Some(&member.route), member_name, call.arguments, context)
            .await
        {
            Ok(output) => output,
            Err(ToolCallError::RespondToModel(output)) => output,
            Err(fatal @ ToolCallError::Fatal(_)) => return Err(fatal),
        };
        Ok(output.typed(&action))
    }

    /// Runs a catalog tool (not a polymorphic one) by its route, under its
    /// source's deadline.
    async fn dispatch(
        &self,
        route: Option<&Route>,
        name: &str,
        arguments: Value,
        context: &CallContext,
    ) -> Result<ToolOutput, ToolCallError> {
        match route {
            Some(Route::Source { source, tool, .. }) => {
                let call = SourceCall {
                    tool: tool.clone(),
                    arguments,
                };
                let Some(source) = self.source(*source) else {
                    return Err(not_available(name));
                };
                call_within_deadline(source.as_ref(), name, call, context, self.call_timeout).await
            }
            Some(Route::Unbound) => Err(ToolCallError::respond(format!(
                "Tool '{name}' is defined by a manifest or catalog file but has no implementation in this gateway."
            ))),
            Some(Route::Polymorphic(_)) | None => Err(not_available(name)),
        }
    }

    /// What a caller with `authority` sees of the catalog besides what
    /// every caller sees, and when that changes: `None` when its view is the
    /// whole catalog, else the catalog's revision and the revision of the
    /// caller's own tools (0 without any). A view made for one key serves
    /// while the key stays the same.
    pub fn view_key(&self, authority: &Authority) -> Option<ViewKey> {
        let own = self.own_tools(authority);
        if !authority.narrows() && own.is_none() {
            return None;
        }
        Some(ViewKey {
            catalog: self.with_catalog(Catalog::revision),
            own: own.map_or(0, |(_, set)| set.revision),
        })
    }

    /// The caller's own tools and their group, when its authority names an
    /// owner whose tools are known ([`Self::prepare_caller`]).
    pub(super) fn own_tools(&self, authority: &Authority) -> Option<(GroupId, Arc<OwnedSet>)> {
        let (owned, _) = self.owned.as_ref()?;
        let set = owned.tools_of(authority.tool_owner()?)?;
        Some((owned.group_id().clone(), set))
    }

    /// The catalog as a caller with `authority` sees it
    /// ([`Catalog::restricted`]): what it may not use is gone, a
    /// polymorphic tool offers only the actions it may call, and the group
    /// of each caller's own tools holds this caller's. `None` when its view
    /// is the whole catalog ([`Self::view_key`]).
    pub fn catalog_for(&self, authority: &Authority) -> Option<Catalog> {
        let own = self.own_tools(authority);
        let groups = match authority.group_lists() {
            Some(groups) => groups,
            None if own.is_some() => Arc::new(ToolPolicy::default()),
            None => return None,
        };
        let own = own.map(|(group, set)| {
            let origin = Origin::Upstream {
                server: group.to_string(),
            };
            let tools = set
                .tools
                .iter()
                .filter(|tool| {
                    let kind = ToolKind::Grouped(group.as_str());
                    authority.permits(&PolicyTarget::tool(kind, tool.name.as_str()))
                })
                .map(|tool| (tool.clone(), origin.clone()))
                .collect();
            let scope = {
                use std::hash::{Hash, Hasher};
                let mut hasher = std::collections::hash_map::DefaultHasher::new();
                (authority.tool_owner(), set.revision).hash(&mut hasher);
                hasher.finish()
            };
            OwnTools {
                group,
                tools,
                scope,
            }
        });
        // The polymorphic tools, taken before the catalog's lock: the
        // registry is never read under it.
        let polymorphic = self.polymorphic_tools();
        Some(self.with_catalog(|catalog| {
            let view = |tool: CatalogTool<'_>| match polymorphic.get(tool.definition.name.as_str())
            {
                Some(consolidated) => visible_actions(authority, tool, consolidated),
                None => {
                    let target = PolicyTarget::tool(tool.kind(), tool.definition.name.as_str());
                    authority.permits(&target).then(|| tool.definition.clone())
                }
            };
            catalog.restricted_with(&groups, view, own)
        }))
    }

    /// Every polymorphic tool of the registry, by name.
    fn polymorphic_tools(&self) -> std::collections::HashMap<String, Arc<Consolidated>> {
        let registry = self
            .state
            .registry
            .read()
            .unwrap_or_else(PoisonError::into_inner);
        registry
            .polymorphic()
            .map(|(name, consolidated)| (name.to_owned(), Arc::clone(consolidated)))
            .collect()
    }
}

/// The polymorphic tool `tool` as a caller with `authority` sees it: only
/// the actions it may call, or nothing when it may call none.
fn visible_actions(
    authority: &Authority,
    tool: CatalogTool<'_>,
    consolidated: &Consolidated,
) -> Option<ToolDefinition> {
    let target = Target {
        tool: tool.definition.name.to_string(),
        group: tool.group.cloned(),
        origin: tool.origin.clone(),
        route: None,
        own_schema: None,
    };
    match permitted_actions(authority, &target, consolidated)? {
        Some(narrowed) => Some(narrowed.definition().clone()),
        None => Some(tool.definition.clone()),
    }
}

/// The actions of `consolidated` a caller with `authority` may call:
/// `Some(None)` all of them, `Some(Some(tool))` the tool narrowed to those
/// it may, `None` none.
fn permitted_actions(
    authority: &Authority,
    target: &Target,
    consolidated: &Consolidated,
) -> Option<Option<PolymorphicTool>> {
    let tool = &consolidated.tool;
    let permitted: Vec<bool> = tool
        .actions()
        .iter()
        .zip(&consolidated.members)
        .map(|(action, member)| {
            let member = member.definition.name.as_str();
            let member = (member != target.tool).then_some(member);
            authority.permits(
                &PolicyTarget::tool(target.kind(), &target.tool).with_action(&action.name, member),
            )
        })
        .collect();
    if permitted.iter().all(|allowed| *allowed) {
        return Some(None);
    }
    let actions = tool
        .actions()
        .iter()
        .zip(&permitted)
        .filter(|(_, allowed)| **allowed)
        .map(|(action, _)| action.clone())
        .collect();
    // Actions the caller may not call are left out, not denied: to it they
    // do not exist.
    PolymorphicTool::new(
        tool.name().clone(),
        tool.description(),
        actions,
        &ActionPolicy::default(),
    )
    .ok()
    .map(Some)
}

pub(super) fn not_available(name: &str) -> ToolCallError {
    ToolCallError::respond(not_available_text(name))
}

/// "Not available", as for a tool that does not exist.
fn not_available_text(name: &str) -> String {
    NotAvailable {
        tool: name.to_owned(),
        group: None,
    }
    .to_string()
}
