//! The `js_tool_management` group: an agent creates, lists,
//! updates and deletes its own JavaScript tools, which the `user_tools`
//! group ([`UserTools`]) then offers.
//!
//! A tool is the fields of a manifest entry (`name`, `description`,
//! `parameters`, `function`) plus its `source`. Nothing is stored until all
//! of it checks: the name follows the catalog's rule and no other tool,
//! alias or meta-tool holds it, nor a tool of an MCP server not listed yet
//! (each is listed first to learn its tools' names: a tool agents write
//! must never take one, whoever owns it); the schema is an object schema that
//! compiles; the source compiles and defines the function (checked by
//! evaluating it in a fresh runtime under the call limits, so top-level code
//! runs then too). Each refusal says what was wrong and where.
//!
//! Tools are stored per owner, in the store, not the manifest directory:
//! an agent's id in `toolgate chat`; in `toolgate serve`, each named
//! client's own (its authority names it), and the configured owner's for
//! the operator, or for everyone when `[tools.javascript] owner` names one.
//! After a change the management tool waits until the toolbox shows it (the
//! listed owner's tools relisted, or a client's read again), so the tool it
//! answers about can be called at once.

use std::sync::{Arc, OnceLock, Weak};
use std::time::{Duration, SystemTime};

use async_trait::async_trait;
use serde_json::{Map, Value, json};
use tokio::sync::broadcast;
use toolgate_core::{GroupId, MetaTool, Origin, ToolDefinition, ToolGroup, ToolName};
use toolgate_js::JsError;
use toolgate_store::{JsToolRecord, JsToolStore, ToolOwner};

use super::user_tools::{RELIST_WAIT, USER_TOOLS_GROUP, UserTools};
use super::{JavaScriptConfig, JsRunner, ToolOwnership, run_off_workers};
use crate::builtin::BuiltinConfig;
use crate::catalog_state::CatalogChange;
use crate::context::CallContext;
use crate::error::{ToolCallError, ToolboxError};
use crate::listing::NotListed;
use crate::output::ToolOutput;
use crate::source::{CallDeadline, ListedSource, OwnedTools, SourceCall, SourceOffer, ToolSource};
use crate::toolbox::Toolbox;

/// The group's id.
pub const JS_TOOL_MANAGEMENT_GROUP: &str = "js_tool_management";
const DISPLAY_NAME: &str = "JS Tool Management";
const DESCRIPTION: &str = "Create, list, update, and delete user JavaScript tools";

const CREATE: &str = "create_js_tool";
const LIST: &str = "list_user_tools";
const UPDATE: &str = "update_js_tool";
const DELETE: &str = "delete_js_tool";

/// The longest source taken, in bytes.
const MAX_SOURCE_BYTES: usize = 256 << 10;
/// The longest description taken, in characters.
const MAX_DESCRIPTION_CHARS: usize = 10_000;
/// The most tools one owner may have.
const MAX_TOOLS_PER_OWNER: usize = 100;

/// The JavaScript tools agents write, for one owner: the
/// `js_tool_management` group, a [`ToolSource`] for
/// [`ToolboxOptions::sources`](crate::ToolboxOptions::sources), and the
/// `user_tools` group it fills, a [`ListedSource`] for
/// [`ToolboxOptions::listed`](crate::ToolboxOptions::listed). Once the
/// toolbox is started, [`UserJsTools::attach`] it: a new tool's name is
/// checked against its catalog.
///
/// ```no_run
/// # async fn example() -> Result<(), Box<dyn std::error::Error>> {
/// use std::sync::Arc;
/// use toolgate_store::{MemoryStore, ToolOwner};
/// use toolgate_tools::{JavaScriptConfig, Toolbox, ToolboxOptions, UserJsTools};
///
/// let config = JavaScriptConfig::default();
/// let js = UserJsTools::new(Arc::new(MemoryStore::new()), ToolOwner::new("team"), &config, None)?;
/// let options = ToolboxOptions {
///     sources: vec![js.management()],
///     listed: vec![js.tools()],
///     javascript: config,
///     ..ToolboxOptions::default()
/// };
/// let (toolbox, _report) = Toolbox::start(options).await?;
/// js.attach(&toolbox);
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct UserJsTools {
    management: Arc<JsToolManagement>,
    tools: Arc<UserTools>,
}

impl UserJsTools {
    /// `owner`'s tools in `store`, run under `config`'s limits, reaching
    /// the files root and the web as the built-in tools of `builtins` do.
    pub fn new(
        store: Arc<dyn JsToolStore>,
        owner: ToolOwner,
        config: &JavaScriptConfig,
        builtins: Option<&BuiltinConfig>,
    ) -> Result<Self, ToolboxError> {
        let runner = JsRunner::with_builtins(config.clone(), builtins)?;
        let tools = Arc::new(UserTools::new(
            Arc::clone(&store),
            owner,
            config.ownership,
            runner.clone(),
        )?);
        let management = Arc::new(JsToolManagement {
            offer: offer()?,
            store,
            ownership: config.ownership,
            runner,
            timeout: config.timeout,
            tools: Arc::clone(&tools),
            toolbox: OnceLock::new(),
        });
        Ok(Self { management, tools })
    }

    /// The `js_tool_management` group's source.
    pub fn management(&self) -> Arc<dyn ToolSource> {
        Arc::clone(&self.management) as Arc<dyn ToolSource>
    }

    /// The `user_tools` group's source.
    pub fn tools(&self) -> Arc<dyn ListedSource> {
        Arc::clone(&self.tools) as Arc<dyn ListedSource>
    }

    /// The `user_tools` group as a source whose tools are each caller's own,
    /// with per-caller ownership ([`ToolboxOptions::owned`](crate::ToolboxOptions::owned)).
    pub fn owned(&self) -> Option<Arc<dyn OwnedTools>> {
        (self.management.ownership == ToolOwnership::PerCaller)
            .then(|| Arc::clone(&self.tools) as Arc<dyn OwnedTools>)
    }

    /// Offers these tools in `options`: the management group's source, the
    /// `user_tools` group first among the listed sources (its tools give up
    /// any name another listed source's tool has all the same), and its
    /// owned tools.
    pub fn add_to(&self, options: &mut crate::ToolboxOptions) {
        options.sources.push(self.management());
        options.listed.insert(0, self.tools());
        options.owned = self.owned();
    }

    /// Checks new tools' names against `toolbox`'s catalog from now on
    /// (without keeping it alive). Until then, creating a tool is refused.
    /// Where other processes share the store, what they announce they
    /// changed is shown from then on too, before anyone asks (sessions of
    /// this process that show those tools are told).
    pub fn attach(&self, toolbox: &Arc<Toolbox>) {
        let _ = self.management.toolbox.set(Arc::downgrade(toolbox));
        if let Some(changes) = self.management.store.js_tool_changes() {
            match tokio::runtime::Handle::try_current() {
                Ok(runtime) => {
                    runtime.spawn(follow_changes(
                        Arc::downgrade(&self.tools),
                        changes,
                        Arc::downgrade(toolbox),
                    ));
                }
                Err(error) => tracing::warn!(
                    %error,
                    "changes other processes make to JavaScript tools show at the next request only"
                ),
            }
        }
    }
}

/// Shows the changes other processes announce of the tools in the store as
/// they announce them: the listed owner's are relisted when they moved (the
/// toolbox tells the sessions that loaded the group), and an owner's own,
/// when this process read them, are read again (and those sessions told).
/// Missed announcements check every owner known. Ends with the tools or
/// the toolbox.
async fn follow_changes(
    tools: Weak<UserTools>,
    mut changes: broadcast::Receiver<ToolOwner>,
    toolbox: Weak<Toolbox>,
) {
    loop {
        let owners = match changes.recv().await {
            Ok(owner) => vec![owner],
            Err(broadcast::error::RecvError::Lagged(_)) => Vec::new(),
            Err(broadcast::error::RecvError::Closed) => return,
        };
        let (Some(tools), Some(toolbox)) = (tools.upgrade(), toolbox.upgrade()) else {
            return;
        };
        let owners = if owners.is_empty() {
            tools.known_owners()
        } else {
            owners
        };
        for owner in owners {
            if tools.lists(&owner) {
                tools.catch_up().await;
            } else if tools.tools_of(&owner).is_some() && tools.prepare(&owner).await {
                toolbox.announce(CatalogChange::Group(tools.group().id.clone()));
            }
        }
    }
}

/// The management tools' source.
#[derive(Debug)]
struct JsToolManagement {
    offer: SourceOffer,
    store: Arc<dyn JsToolStore>,
    ownership: ToolOwnership,
    runner: JsRunner,
    /// The time limit of the check of a source.
    timeout: Duration,
    tools: Arc<UserTools>,
    toolbox: OnceLock<Weak<Toolbox>>,
}

/// The group and its four tools.
fn offer() -> Result<SourceOffer, ToolboxError> {
    let name = json!({
        "type": "string",
        "description": "The tool's name: 1-64 characters of A-Za-z0-9_./-"
    });
    let fields = json!({
        "name": name,
        "description": {"type": "string", "description": "What the tool does, for the model that will call it"},
        "parameters": {"type": "object", "description": "JSON Schema of the tool's arguments: an object schema, e.g. {\"type\": \"object\", \"properties\": {\"n\": {\"type\": \"number\"}}, \"required\": [\"n\"]}. Default: no arguments"},
        "function": {"type": "string", "description": "The function of `source` a call runs, with the arguments as one object; it returns the result (or a Promise of it). Default: the tool's name"},
        "source": {"type": "string", "description": "The JavaScript source (a classic script) defining the function. Plain ECMAScript: no file system, network, modules or timers"}
    });
    let definition = |tool: &str, description: &str, schema: Value| {
        Ok::<_, ToolboxError>(ToolDefinition::new(
            ToolName::new(tool)?,
            description,
            schema,
        )?)
    };
    let tools = vec![
        definition(
            CREATE,
            "Create a JavaScript tool of your own. It is checked (name, schema, the source compiles and defines the function) before it is stored; then it is in the group 'user_tools'.",
            json!({"type": "object", "properties": fields, "required": ["name", "description", "source"]}),
        )?,
        definition(
            LIST,
            "List your JavaScript tools; with `name`, show that one with its source.",
            json!({"type": "object", "properties": {"name": name}}),
        )?,
        definition(
            UPDATE,
            "Change one of your JavaScript tools: the fields given replace the stored ones, and the result is checked like a new tool.",
            json!({"type": "object", "properties": fields, "required": ["name"]}),
        )?,
        definition(
            DELETE,
            "Delete one of your JavaScript tools.",
            json!({"type": "object", "properties": {"name": name}, "required": ["name"]}),
        )?,
    ];
    let group = ToolGroup::new(
        GroupId::new(JS_TOOL_MANAGEMENT_GROUP)?,
        DISPLAY_NAME,
        DESCRIPTION,
    );
    Ok(SourceOffer {
        core_tools: Vec::new(),
        groups: vec![(group, tools)],
    })
}

/// The fields of a create or update call.
struct Fields<'a> {
    description: Option<&'a str>,
    parameters: Option<&'a Map<String, Value>>,
    function: Option<&'a str>,
    source: Option<&'a str>,
}

impl<'a> Fields<'a> {
    fn read(arguments: &'a Value) -> Result<Self, String> {
        let parameters = match arguments.get("parameters") {
            None | Some(Value::Null) => None,
            Some(Value::Object(schema)) => Some(schema),
            Some(_) => return Err("`parameters` must be a JSON Schema object".to_owned()),
        };
        Ok(Self {
            description: text(arguments, "description")?,
            parameters,
            function: text(arguments, "function")?,
            source: text(arguments, "source")?,
        })
    }
}

/// A string argument, if given.
fn text<'a>(arguments: &'a Value, field: &str) -> Result<Option<&'a str>, String> {
    match arguments.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => Ok(Some(text)),
        Some(_) => Err(format!("`{field}` must be a string")),
    }
}

/// Why a call is answered with an error: the text, with what was not done.
type Refusal = String;

impl JsToolManagement {
    async fn run(&self, tool: &str, arguments: &Value, context: &CallContext) -> ToolOutput {
        let owner = self.tools.owner_of(context);
        let (outcome, failed) = match tool {
            CREATE => (
                self.create(&owner, arguments, context).await,
                "Tool not created",
            ),
            UPDATE => (
                self.update(&owner, arguments, context).await,
                "Tool not updated",
            ),
            DELETE => (self.delete(&owner, arguments).await, "Tool not deleted"),
            _ => (self.list(&owner, arguments).await, "Tools not listed"),
        };
        match outcome {
            Ok(output) => output,
            Err(reason) => ToolOutput::error(format!("{failed}: {reason}")),
        }
    }

    /// The `name` argument, checked.
    fn name(arguments: &Value) -> Result<ToolName, Refusal> {
        let name = text(arguments, "name")?.ok_or("`name` is required")?;
        ToolName::new(name).map_err(|error| error.to_string())
    }

    async fn create(
        &self,
        owner: &ToolOwner,
        arguments: &Value,
        context: &CallContext,
    ) -> Result<ToolOutput, Refusal> {
        let name = Self::name(arguments)?;
        self.check_name_is_free(&name).await?;
        if self.stored(owner, &name).await?.is_some() {
            return Err(format!(
                "you already have a tool named '{name}'; {UPDATE} changes it"
            ));
        }
        let count = self.records(owner).await?.len();
        if count >= MAX_TOOLS_PER_OWNER {
            return Err(format!(
                "you have {count} tools, the most allowed; delete one first"
            ));
        }
        let fields = Fields::read(arguments)?;
        let record = JsToolRecord::new(
            owner.clone(),
            name.clone(),
            fields.description.unwrap_or_default(),
            fields.parameters.cloned().unwrap_or_default(),
            fields.function.unwrap_or(name.as_str()),
            fields.source.unwrap_or_default(),
        );
        let record = self.checked(record, CREATE, context).await?;
        let created = self
            .store
            .create_js_tool(record)
            .await
            .map_err(|error| store_failed(&error))?;
        if created.is_none() {
            return Err(format!(
                "you already have a tool named '{name}'; {UPDATE} changes it"
            ));
        }
        self.shown(owner).await;
        Ok(ToolOutput::text(format!(
            "Created tool '{name}' in group '{USER_TOOLS_GROUP}'. Call load_tool_group with \
             group_name '{USER_TOOLS_GROUP}' to use it (where that group is loaded, it is \
             available now)."
        )))
    }

    async fn update(
        &self,
        owner: &ToolOwner,
        arguments: &Value,
        context: &CallContext,
    ) -> Result<ToolOutput, Refusal> {
        let name = Self::name(arguments)?;
        let Some(stored) = self.stored(owner, &name).await? else {
            return Err(self.no_such_tool(owner, &name).await);
        };
        let fields = Fields::read(arguments)?;
        let mut record = stored;
        if let Some(description) = fields.description {
            description.clone_into(&mut record.description);
        }
        if let Some(parameters) = fields.parameters {
            record.input_schema = parameters.clone();
        }
        if let Some(function) = fields.function {
            function.clone_into(&mut record.function);
        }
        if let Some(source) = fields.source {
            source.clone_into(&mut record.source);
        }
        let record = self.checked(record, UPDATE, context).await?;
        let updated = self
            .store
            .update_js_tool(record)
            .await
            .map_err(|error| store_failed(&error))?;
        if updated.is_none() {
            return Err(self.no_such_tool(owner, &name).await);
        }
        self.shown(owner).await;
        Ok(ToolOutput::text(format!(
            "Updated tool '{name}'; calls run the new version now."
        )))
    }

    async fn delete(&self, owner: &ToolOwner, arguments: &Value) -> Result<ToolOutput, Refusal> {
        let name = Self::name(arguments)?;
        let deleted = self
            .store
            .delete_js_tool(owner, &name)
            .await
            .map_err(|error| store_failed(&error))?;
        if !deleted {
            return Err(self.no_such_tool(owner, &name).await);
        }
        self.shown(owner).await;
        Ok(ToolOutput::text(format!("Deleted tool '{name}'.")))
    }

    async fn list(&self, owner: &ToolOwner, arguments: &Value) -> Result<ToolOutput, Refusal> {
        if text(arguments, "name")?.is_some() {
            let name = Self::name(arguments)?;
            let Some(record) = self.stored(owner, &name).await? else {
                return Err(self.no_such_tool(owner, &name).await);
            };
            let mut shown = summary(&record);
            shown.insert("source".to_owned(), Value::String(record.source));
            return Ok(ToolOutput::json(json!({"tools": [shown]})));
        }
        let tools: Vec<Value> = self
            .records(owner)
            .await?
            .iter()
            .map(|record| Value::Object(summary(record)))
            .collect();
        Ok(ToolOutput::json(json!({
            "group": USER_TOOLS_GROUP,
            "tools": tools,
        })))
    }

    /// Refuses a name another tool, an alias or a meta-tool holds: the
    /// owner's own tools are `user_tools`', and a name is theirs to reuse.
    /// The names of the MCP servers' tools are reserved before a server is
    /// first listed: each never listed is listed to learn them, and one
    /// that cannot be refuses the name (it might be one of its tools').
    async fn check_name_is_free(&self, name: &ToolName) -> Result<(), Refusal> {
        if MetaTool::from_name(name.as_str()).is_some() {
            return Err(format!("'{name}' is the name of a meta-tool"));
        }
        let Some(toolbox) = self.toolbox.get().and_then(Weak::upgrade) else {
            tracing::error!("JavaScript tool management is not attached to its toolbox");
            return Err("tool management is not ready; try again later".to_owned());
        };
        if let Err(NotListed { group, error }) = toolbox.reserve_listed_names().await {
            return Err(format!(
                "the tools of the MCP server '{group}' reserve their names, and it could not \
                 be listed to learn them ({error}); try again once it runs"
            ));
        }
        toolbox.with_catalog(|catalog| {
            if catalog.tool_state(name.as_str()).is_some() {
                return match catalog.group_of(name.as_str()) {
                    Some(group) if group.as_str() == USER_TOOLS_GROUP => Ok(()),
                    Some(group) => {
                        if let Some(Origin::Upstream { server }) =
                            catalog.tool(name.as_str()).map(|tool| tool.origin)
                        {
                            return Err(format!(
                                "the name '{name}' is taken by a tool of the MCP server '{server}'"
                            ));
                        }
                        Err(format!(
                            "the name '{name}' is taken by a tool of group '{group}'"
                        ))
                    }
                    None => Err(format!("the name '{name}' is taken by a core tool")),
                };
            }
            match catalog.alias(name.as_str()) {
                Some(alias) => Err(format!(
                    "the name '{name}' is an alias of the tool '{}'",
                    alias.tool
                )),
                None => Ok(()),
            }
        })
    }

    /// `record` once it checks: its description, schema, function and
    /// source.
    async fn checked(
        &self,
        mut record: JsToolRecord,
        tool: &'static str,
        context: &CallContext,
    ) -> Result<JsToolRecord, Refusal> {
        let description = record.description.trim();
        if description.is_empty() {
            return Err("`description` is blank: say what the tool does".to_owned());
        }
        let length = description.chars().count();
        if length > MAX_DESCRIPTION_CHARS {
            return Err(format!(
                "`description` is {length} characters long, more than the {MAX_DESCRIPTION_CHARS} allowed"
            ));
        }
        let definition = ToolDefinition::new(
            record.name.clone(),
            description,
            Value::Object(record.input_schema.clone()),
        )
        .map_err(|error| format!("`parameters`: {error}"))?;
        if let Err(error) =
            jsonschema::validator_for(&Value::Object(definition.input_schema.clone()))
        {
            return Err(format!("`parameters` is not a valid JSON Schema: {error}"));
        }
        record.description = definition.description;
        record.input_schema = definition.input_schema;
        if record.source.len() > MAX_SOURCE_BYTES {
            return Err(format!(
                "`source` is {} bytes long, more than the {MAX_SOURCE_BYTES} allowed",
                record.source.len()
            ));
        }
        let file_name = UserTools::file_name(record.name.as_str());
        let checked = {
            let (source, function, file_name) = (
                record.source.clone(),
                record.function.clone(),
                file_name.clone(),
            );
            let limits = self.runner.limits(self.timeout);
            let permit = self
                .runner
                .turn(tool, context)
                .await
                .map_err(|error| error.to_string())?;
            run_off_workers(tool, context, move || {
                let checked = toolgate_js::check_function(&source, &file_name, &function, &limits);
                drop(permit);
                checked
            })
            .await
            .map_err(|error| error.to_string())?
        };
        match checked {
            Ok(()) => Ok(record),
            Err(error) => Err(source_refusal(&file_name, &record.function, &error)),
        }
    }

    async fn stored(
        &self,
        owner: &ToolOwner,
        name: &ToolName,
    ) -> Result<Option<JsToolRecord>, Refusal> {
        self.store
            .js_tool(owner, name)
            .await
            .map_err(|error| store_failed(&error))
    }

    async fn records(&self, owner: &ToolOwner) -> Result<Vec<JsToolRecord>, Refusal> {
        self.store
            .js_tools(owner)
            .await
            .map_err(|error| store_failed(&error))
    }

    /// That the owner has no tool `name`, and which it has.
    async fn no_such_tool(&self, owner: &ToolOwner, name: &ToolName) -> Refusal {
        let names: Vec<String> = self
            .records(owner)
            .await
            .unwrap_or_default()
            .iter()
            .map(|record| record.name.to_string())
            .collect();
        if names.is_empty() {
            format!("you have no tool named '{name}' (you have none; {CREATE} makes one)")
        } else {
            format!(
                "you have no tool named '{name}'; yours are: {}",
                names.join(", ")
            )
        }
    }

    /// Makes a change of `owner`'s tools shown: the listed owner's are
    /// relisted (and the sessions that loaded the group told by the
    /// toolbox); a caller's own are read again, and the sessions that loaded
    /// the group told to list again.
    async fn shown(&self, owner: &ToolOwner) {
        if self.tools.lists(owner) {
            return self.tools.relisted().await;
        }
        self.tools.reload_owner(owner).await;
        if let Some(toolbox) = self.toolbox.get().and_then(Weak::upgrade) {
            toolbox.announce(CatalogChange::Group(self.tools.group().id.clone()));
        }
    }
}

/// What the model reads when the source does not check.
fn source_refusal(file: &str, function: &str, error: &JsError) -> Refusal {
    let at = |line: &Option<u32>| match line {
        Some(line) => format!("{file}, line {line}"),
        None => file.to_owned(),
    };
    match error {
        JsError::Thrown { message, line } if message.starts_with("SyntaxError") => {
            format!("`source` does not compile: {message} ({})", at(line))
        }
        JsError::Thrown { message, line } => {
            format!("`source` throws when evaluated: {message} ({})", at(line))
        }
        JsError::NotAFunction { .. } => format!(
            "`source` defines no function `{function}` ({file}); define it, or name the one to \
             call in `function`"
        ),
        JsError::Timeout { limit } => format!(
            "evaluating `source` ({file}) timed out after {} s: its top-level code must finish",
            limit.as_secs_f64()
        ),
        other => format!(
            "evaluating `source` failed: {}",
            super::describe(function, file, other)
        ),
    }
}

fn store_failed(error: &toolgate_store::StoreError) -> Refusal {
    tracing::error!(%error, "JavaScript tool store");
    "the tool store failed; try again later".to_owned()
}

/// A tool as `list_user_tools` shows it, without its source.
fn summary(record: &JsToolRecord) -> Map<String, Value> {
    let time = |time: SystemTime| {
        jiff::Timestamp::try_from(time)
            .map(|time| Value::String(time.to_string()))
            .unwrap_or(Value::Null)
    };
    let mut shown = Map::new();
    shown.insert("name".to_owned(), Value::String(record.name.to_string()));
    shown.insert(
        "description".to_owned(),
        Value::String(record.description.clone()),
    );
    shown.insert(
        "parameters".to_owned(),
        Value::Object(record.input_schema.clone()),
    );
    shown.insert(
        "function".to_owned(),
        Value::String(record.function.clone()),
    );
    shown.insert("created".to_owned(), time(record.created));
    shown.insert("updated".to_owned(), time(record.updated));
    shown
}

#[async_trait]
impl ToolSource for JsToolManagement {
    fn offer(&self) -> SourceOffer {
        self.offer.clone()
    }

    /// A create or update evaluates the source under the call limits, and
    /// then waits for the relisting.
    fn deadline(&self) -> CallDeadline {
        CallDeadline::Own(JsRunner::deadline(self.timeout).saturating_add(RELIST_WAIT))
    }

    async fn call(
        &self,
        call: SourceCall,
        context: &CallContext,
    ) -> Result<ToolOutput, ToolCallError> {
        match call.tool.as_str() {
            CREATE | LIST | UPDATE | DELETE => {}
            other => {
                return Err(ToolCallError::Fatal(format!(
                    "'{other}' is not a JavaScript tool management tool"
                )));
            }
        }
        Ok(self.run(&call.tool, &call.arguments, context).await)
    }
}
