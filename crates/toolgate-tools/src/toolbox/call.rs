//! One call of a catalog tool: its name resolved once ([`ResolvedCall`]:
//! alias, route, fixed arguments), judged against the caller's
//! [`Authority`](crate::Authority) as it will run (for a polymorphic tool:
//! the action the merged arguments name), checked against the input schema
//! of the tool that runs, and run by its source under its deadline.

use std::sync::{Arc, PoisonError};

use serde_json::{Map, Value};
use toolgate_core::{
    ACTION_PARAMETER, ActionNotAvailable, ActionPolicy, Catalog, CatalogTool, GroupId,
    NotAvailable, Origin, OwnTools, PolicyTarget, PolymorphicTool, ToolDefinition, ToolKind,
    ToolPolicy,
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

    /// Makes the caller's own tools known (read from their store), when its
    /// authority names an owner: before its view and its calls.
    pub async fn prepare_caller(&self, authority: &Authority) {
        if let (Some((owned, _)), Some(owner)) = (&self.owned, authority.tool_owner()) {
            owned.prepare(owner).await;
        }
    }

    /// Runs catalog tool `name` for `context`'s caller: [`Self::resolve`],
    /// then [`Self::run`].
    pub async fn call(
        &self,
        name: &str,
        arguments: Value,
        context: &CallContext,
    ) -> Result<ToolOutput, ToolCallError> {
        self.run(self.resolve(name, arguments, &context.authority), context)
            .await
    }

    /// Runs a resolved call for `context`'s caller: a tool (or action) its
    /// authority does not permit is not available, as a tool that does not
    /// exist; a polymorphic tool resolves its action from the merged
    /// arguments (a mistake answers the structured error, listing the
    /// actions this caller may use) and runs the member tool behind it;
    /// arguments are checked against the input schema of the tool that runs;
    /// then its source runs it, under its deadline: past it, `context.cancel`
    /// is cancelled and the model reads that the call timed out.
    /// Availability in a session is the caller's business.
    pub async fn run(
        &self,
        call: ResolvedCall,
        context: &CallContext,
    ) -> Result<ToolOutput, ToolCallError> {
        let ResolvedCall {
            requested,
            target,
            arguments,
        } = call;
        let Some(target) = target else {
            return Err(not_available(&requested));
        };
        if let Some(Route::Polymorphic(consolidated)) = &target.route {
            return self
                .call_action(&requested, &target, consolidated, &arguments, context)
                .await;
        }
        let permitted = context
            .authority
            .permits(&PolicyTarget::tool(target.kind(), &target.tool));
        if !permitted || target.kind() == ToolKind::Meta {
            return Err(not_available(&requested));
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
    /// the caller may use, counted, checked against the member's schema,
    /// run, and answered with a `type` field.
    async fn call_action(
        &self,
        requested: &str,
        target: &Target,
        consolidated: &Consolidated,
        arguments: &Value,
        context: &CallContext,
    ) -> Result<ToolOutput, ToolCallError> {
        let Some(narrowed) = permitted_actions(&context.authority, target, consolidated) else {
            return Err(not_available(requested));
        };
        if let Some(narrowed) = &narrowed
            && let Some(action) = arguments.get(ACTION_PARAMETER).and_then(Value::as_str)
            && consolidated.tool.actions().iter().any(|a| a.name == action)
            && !narrowed.actions().iter().any(|a| a.name == action)
        {
            // An action the tool has but this caller may not use.
            return Err(ToolCallError::respond(
                ActionNotAvailable {
                    tool: target.tool.clone(),
                    action: action.to_owned(),
                }
                .to_string(),
            ));
        }
        let tool = narrowed.as_ref().unwrap_or(&consolidated.tool);
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
    ToolCallError::respond(
        NotAvailable {
            tool: name.to_owned(),
            group: None,
        }
        .to_string(),
    )
}
