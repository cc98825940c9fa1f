//! [`Toolbox::start`]: the catalog assembled from the options, source by
//! source, in the order that decides who keeps a contested name (meta-tools,
//! built-ins, other sources, manifests, imported catalogs, each caller's own
//! tools, listed sources), then the groups offered as one tool, the aliases
//! and the meta-tools' search; last, the eager listed sources started.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, RwLock};

use tokio::sync::broadcast;
use toolgate_core::routing::RoutingConfig;
use toolgate_core::{
    ActionPolicy, Alias, Catalog, GroupId, GroupListing, MetaTool, MetaTools, Origin, import_jsonl,
};

use super::{
    StartReport, Toolbox, ToolboxOptions, register_listed_group, register_offered_group,
    source_route, watch_changes,
};
use crate::builtin::{BuiltinConfig, BuiltinTools};
use crate::catalog_state::CatalogState;
use crate::consolidate::{Consolidation, consolidate, polymorphic_groups};
use crate::error::ToolboxError;
use crate::javascript::JsRunner;
use crate::javascript::manifest::ManifestScripts;
use crate::listing::ListedSlot;
use crate::manifests::ManifestTools;
use crate::registry::{Route, SourceId, ToolRegistry};
use crate::source::{ListedSource, OwnedTools, Startup, ToolSource};
use crate::validate::Validators;

/// The groups offered as one polymorphic tool, with their action policies.
type Polymorphic = BTreeMap<GroupId, (ActionPolicy, Consolidation)>;

impl Toolbox {
    /// Builds the catalog (meta-tools, built-ins, other sources, manifests,
    /// catalogs, one deferred group per listed source) and starts the eager
    /// listed sources. Their failures are reported, not fatal.
    pub async fn start(options: ToolboxOptions) -> Result<(Arc<Self>, StartReport), ToolboxError> {
        let mut report = StartReport::default();
        let mut assembly = Assembly::default();
        let meta = MetaTools::new(options.meta_tools.iter().copied());
        assembly.add_meta_tools(&meta)?;
        assembly.add_builtins(&options, &mut report)?;
        assembly.add_sources(&options.sources)?;
        let manifests = assembly.add_manifests(&options, &mut report)?;
        assembly.import_catalogs(&options.jsonl_catalogs, &mut report);
        let owned = assembly.add_owned(options.owned.as_ref());
        let listed = assembly.add_listed(&options.listed)?;
        let polymorphic = assembly.consolidate_groups(&options.groups)?;
        assembly.add_aliases(&options.aliases)?;
        let meta = assembly.searching_meta_tools(meta, &options, &mut report)?;
        let Assembly {
            catalog,
            registry,
            sources,
        } = assembly;
        let toolbox = Arc::new(Self {
            state: CatalogState {
                catalog: RwLock::new(catalog),
                registry: RwLock::new(registry),
                validators: Validators::default(),
                polymorphic: RwLock::new(polymorphic),
                changes: broadcast::channel(64).0,
                renamed: Mutex::new(Vec::new()),
            },
            sources: RwLock::new(sources),
            listed: RwLock::new(listed),
            reconfiguring: tokio::sync::Mutex::new(()),
            group_settings: options.groups.clone(),
            manifests,
            action_calls: Mutex::new(BTreeMap::new()),
            meta,
            call_timeout: options.call_timeout,
            owned,
            views: Mutex::new(Vec::new()),
            withheld: report.withheld_builtins.clone(),
        });
        toolbox.start_listed(&mut report).await;
        report.renamed = toolbox.state.take_renamed();
        Ok((toolbox, report))
    }

    /// Starts the listed sources that start eagerly, each in its place (so
    /// earlier ones keep contested names), and watches every listed source
    /// for changes.
    async fn start_listed(self: &Arc<Self>, report: &mut StartReport) {
        let listed = self.listed();
        for slot in &listed {
            if slot.source.group().startup == Startup::Eager {
                let listed = slot
                    .ensure_listed(&self.state, &listed)
                    .await
                    .map(|listed| listed.tools);
                report.listed.push((slot.source.group().id.clone(), listed));
            }
            tokio::spawn(watch_changes(Arc::downgrade(self), Arc::clone(slot)));
        }
    }
}

/// The catalog, the routes of its tools and the sources that run them, as
/// start-up assembles them. A source's id is its place in `sources`.
#[derive(Default)]
struct Assembly {
    catalog: Catalog,
    registry: ToolRegistry,
    sources: Vec<Arc<dyn ToolSource>>,
}

impl Assembly {
    /// The id the next source added gets.
    fn next_id(&self) -> SourceId {
        SourceId(self.sources.len())
    }

    /// The meta-tools offered besides `load_tool_group`.
    fn add_meta_tools(&mut self, meta: &MetaTools) -> Result<(), ToolboxError> {
        for definition in meta.extra_definitions() {
            self.catalog
                .register_tool(definition, None, Origin::MetaTool)?;
        }
        Ok(())
    }

    /// The built-in groups, but those a listed source has the name of.
    fn add_builtins(
        &mut self,
        options: &ToolboxOptions,
        report: &mut StartReport,
    ) -> Result<(), ToolboxError> {
        let Some(config) = &options.builtins else {
            return Ok(());
        };
        report.withheld_builtins = config.withheld();
        let listed_ids: Vec<&GroupId> = options.listed.iter().map(|s| &s.group().id).collect();
        let builtins = Arc::new(BuiltinTools::new(config)?);
        let id = self.next_id();
        for (group, tools) in builtins.offer().groups {
            if listed_ids.contains(&&group.id) {
                report.shadowed_builtins.push(group.id);
                continue;
            }
            report.builtin_groups.push(group.id.clone());
            register_offered_group(&mut self.catalog, &mut self.registry, id, group, tools)?;
        }
        self.sources.push(builtins);
        Ok(())
    }

    /// Sources whose tools are known from the start: their core tools and
    /// their groups.
    fn add_sources(&mut self, sources: &[Arc<dyn ToolSource>]) -> Result<(), ToolboxError> {
        for source in sources {
            let id = self.next_id();
            let offer = source.offer();
            for tool in offer.core_tools {
                self.registry
                    .insert(tool.name.clone(), source_route(id, &tool.name));
                self.catalog.register_tool(tool, None, Origin::Builtin)?;
            }
            for (group, tools) in offer.groups {
                register_offered_group(&mut self.catalog, &mut self.registry, id, group, tools)?;
            }
            self.sources.push(Arc::clone(source));
        }
        Ok(())
    }

    /// The manifests directories' tools, run by one JavaScript source that
    /// reaches what `script_reach` (else `builtins`) lets it.
    fn add_manifests(
        &mut self,
        options: &ToolboxOptions,
        report: &mut StartReport,
    ) -> Result<ManifestTools, ToolboxError> {
        let reach: Option<&BuiltinConfig> =
            options.script_reach.as_ref().or(options.builtins.as_ref());
        let runner = Arc::new(JsRunner::with_builtins(options.javascript.clone(), reach)?);
        let scripts = Arc::new(ManifestScripts::new(runner));
        let manifests = ManifestTools::new(
            options.manifest_dirs.clone(),
            Arc::clone(&scripts),
            self.next_id(),
            options.groups.clone(),
        );
        self.sources.push(scripts);
        report.manifest_files = manifests.load(
            &mut self.catalog,
            &mut self.registry,
            &mut report.manifest_errors,
        );
        Ok(manifests)
    }

    /// The tools of `tools.jsonl` catalogs: listed and loaded, with nothing
    /// to run them.
    fn import_catalogs(&mut self, paths: &[std::path::PathBuf], report: &mut StartReport) {
        for path in paths {
            match import_jsonl(&mut self.catalog, path) {
                Ok(imported) => {
                    report.imported_tools += imported.tools;
                    report.import_errors.extend(imported.errors);
                }
                Err(error) => report.import_errors.push(error),
            }
        }
        for tool in self.catalog.tools() {
            if matches!(tool.origin, Origin::Import { .. }) {
                self.registry
                    .insert(tool.definition.name.clone(), Route::Unbound);
            }
        }
    }

    /// The source of each caller's own tools, and its id.
    fn add_owned(
        &mut self,
        owned: Option<&Arc<dyn OwnedTools>>,
    ) -> Option<(Arc<dyn OwnedTools>, SourceId)> {
        owned.map(|owned| {
            let id = self.next_id();
            self.sources.push(Arc::clone(owned) as Arc<dyn ToolSource>);
            (Arc::clone(owned), id)
        })
    }

    /// One deferred group per listed source, in priority order; their slots.
    fn add_listed(
        &mut self,
        listed: &[Arc<dyn ListedSource>],
    ) -> Result<Vec<Arc<ListedSlot>>, ToolboxError> {
        let mut slots = Vec::new();
        for source in listed {
            register_listed_group(&mut self.catalog, source.group())?;
            let id = self.next_id();
            self.sources.push(Arc::clone(source) as Arc<dyn ToolSource>);
            slots.push(Arc::new(ListedSlot::new(Arc::clone(source), id)));
        }
        Ok(slots)
    }

    /// Makes each group configured so (and each built-in that is by default)
    /// one polymorphic tool. A group named by its id that cannot be one
    /// stops the start; one reached only through `*` stays as it is.
    fn consolidate_groups(
        &mut self,
        settings: &BTreeMap<String, crate::settings::GroupSettings>,
    ) -> Result<Polymorphic, ToolboxError> {
        let polymorphic = polymorphic_groups(settings, &self.catalog);
        for (group, (policy, scope)) in &polymorphic {
            if self.catalog.group_listing(group.as_str()) != Some(GroupListing::Listed) {
                continue;
            }
            let consolidated =
                consolidate(&mut self.catalog, &mut self.registry, group, policy, *scope);
            if let Err(reason) = consolidated {
                if *scope == Consolidation::Named {
                    return Err(ToolboxError::Polymorphic {
                        group: group.clone(),
                        reason,
                    });
                }
                tracing::warn!(%group, %reason, "group left as separate tools");
            }
        }
        Ok(polymorphic)
    }

    /// Old tool names and what they call now.
    fn add_aliases(&mut self, aliases: &[(String, Alias)]) -> Result<(), ToolboxError> {
        for (old, alias) in aliases {
            self.catalog
                .register_alias(old, alias.clone())
                .map_err(|source| ToolboxError::Alias {
                    alias: old.clone(),
                    source: Box::new(source),
                })?;
        }
        Ok(())
    }

    /// `meta`, with `find_tool_groups` added when the catalog has more
    /// groups than [`ToolboxOptions::search_above_groups`], and the router's
    /// settings (checked against the catalog) and the embedding model where
    /// it answers.
    fn searching_meta_tools(
        &mut self,
        mut meta: MetaTools,
        options: &ToolboxOptions,
        report: &mut StartReport,
    ) -> Result<MetaTools, ToolboxError> {
        let groups = self.catalog.groups().count();
        let above = options.search_above_groups.filter(|above| {
            groups > *above && !options.meta_tools.contains(&MetaTool::FindToolGroups)
        });
        let add_search = above.is_some();
        if add_search {
            let mut offered = options.meta_tools.clone();
            offered.push(MetaTool::FindToolGroups);
            meta = MetaTools::new(offered);
            self.catalog.register_tool(
                MetaTool::FindToolGroups.definition(),
                None,
                Origin::MetaTool,
            )?;
            report.search_added = above;
        }
        // The router's settings matter (and are checked) only where
        // `find_tool_groups` answers.
        let searches = add_search || options.meta_tools.contains(&MetaTool::FindToolGroups);
        let routing = match &options.routing {
            Some(routing) if searches => Some(routing.clone()),
            None if add_search => Some(RoutingConfig::default()),
            Some(_) | None => None,
        };
        if let Some(routing) = routing {
            meta = meta.with_taxonomy(routing.validate(&self.catalog)?);
        }
        if let Some(embeddings) = &options.embeddings {
            meta = meta.with_embeddings(Arc::clone(embeddings));
        }
        Ok(meta.with_found_tools(options.found_tools))
    }
}
