//! The tools of the manifests directories, loaded at start and reloaded on
//! demand ([`crate::Toolbox::reload_manifests`]: a file watch, SIGHUP).
//!
//! Each `*.json` file is one unit: a group (an array) or a core tool (one
//! object), with the JavaScript file beside it, if any, running its tools
//! through the one [`ManifestScripts`] source. A reload reads every file
//! again and compares it with what it loaded before:
//!
//! - a file that parses and registers replaces its group's definitions
//!   and scripts (or its core tool's): tools already there keep their
//!   place, new ones are appended, removed ones leave, so names of
//!   unchanged tools stay put;
//! - a file that does not parse, collides with other tools, or whose
//!   script cannot be read keeps its previous version, and the reason is
//!   reported; a directory that cannot be listed keeps all of its files;
//! - a new file adds its group; a deleted file's group loses its tools
//!   (sessions that loaded it see none, and loading it again answers that
//!   it is empty) until a file brings it back.
//!
//! Groups whose tools or their definitions changed are announced, so the
//! gateway tells the sessions that loaded them; a change of core tools, or
//! of the groups on offer (which `load_tool_group`'s description lists), is
//! announced to every session.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use toolgate_core::{
    Catalog, GroupId, Manifest, ManifestError, ManifestErrorReason, ManifestFile, ManifestTool,
    Origin, ToolDefinition, ToolName, register_manifest, scan_manifest_dir,
};

use crate::catalog_state::{CatalogChange, CatalogState};
use crate::consolidate::{consolidate, polymorphic_groups};
use crate::javascript::manifest::{JsTool, ManifestScripts, Script, read_script};
use crate::registry::{Route, SourceId, ToolRegistry};
use crate::settings::GroupSettings;

/// What reloading the manifests directories did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ReloadReport {
    /// Groups a new file brought (or brought back).
    pub added_groups: Vec<GroupId>,
    /// Groups whose tools, their definitions or the group's description
    /// changed.
    pub changed_groups: Vec<GroupId>,
    /// Groups whose file is gone: they have no tools now.
    pub removed_groups: Vec<GroupId>,
    /// Core tools (files of one tool) added, changed or removed.
    pub changed_core_tools: Vec<ToolName>,
    /// Files whose script (or which function a tool calls, or its time
    /// limit) changed and nothing the model sees: their next calls run the
    /// new code.
    pub changed_scripts: Vec<PathBuf>,
    /// Files (or directories) that could not be loaded, with why: each
    /// keeps its previous version, if it had one.
    pub errors: Vec<ManifestError>,
}

impl ReloadReport {
    /// Whether the reload changed nothing.
    pub fn is_unchanged(&self) -> bool {
        self.added_groups.is_empty()
            && self.changed_groups.is_empty()
            && self.removed_groups.is_empty()
            && self.changed_core_tools.is_empty()
            && self.changed_scripts.is_empty()
    }
}

/// One line for the operator: what changed, and how many files kept their
/// previous version (their reasons are for the caller to tell).
impl fmt::Display for ReloadReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fn list<T: fmt::Display>(items: &[T]) -> String {
            items
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        }
        let mut parts = Vec::new();
        let groups = [
            ("added", &self.added_groups),
            ("changed", &self.changed_groups),
            ("removed", &self.removed_groups),
        ];
        for (what, ids) in groups {
            if !ids.is_empty() {
                parts.push(format!("groups {what}: {}", list(ids)));
            }
        }
        if !self.changed_core_tools.is_empty() {
            parts.push(format!(
                "core tools changed: {}",
                list(&self.changed_core_tools)
            ));
        }
        if !self.changed_scripts.is_empty() {
            let files: Vec<String> = self
                .changed_scripts
                .iter()
                .map(|path| path.display().to_string())
                .collect();
            parts.push(format!("scripts changed: {}", files.join(", ")));
        }
        if parts.is_empty() {
            parts.push("nothing changed".to_owned());
        }
        write!(f, "manifests reloaded: {}", parts.join("; "))?;
        match self.errors.len() {
            0 => Ok(()),
            1 => write!(f, "; 1 file not loaded"),
            n => write!(f, "; {n} files not loaded"),
        }
    }
}

/// What one manifest file loaded: its manifest (tools in catalog order) and
/// its script.
#[derive(Clone, Debug, PartialEq)]
struct Loaded {
    manifest: Manifest,
    script: Option<Script>,
}

impl Loaded {
    fn tools(&self) -> &[ManifestTool] {
        match &self.manifest {
            Manifest::CoreTool(tool) => std::slice::from_ref(tool),
            Manifest::Group { tools, .. } => tools,
            _ => &[],
        }
    }

    fn group(&self) -> Option<&GroupId> {
        match &self.manifest {
            Manifest::Group { group, .. } => Some(&group.id),
            _ => None,
        }
    }

    fn core_tool(&self) -> Option<&ToolName> {
        match &self.manifest {
            Manifest::CoreTool(tool) => Some(&tool.definition.name),
            _ => None,
        }
    }

    /// What the model sees of it: the group and the tools' definitions.
    fn shown(&self) -> (Option<&toolgate_core::ToolGroup>, Vec<&ToolDefinition>) {
        let group = match &self.manifest {
            Manifest::Group { group, .. } => Some(group),
            _ => None,
        };
        (group, self.tools().iter().map(|t| &t.definition).collect())
    }
}

/// What the manifests loaded, by file.
#[derive(Debug, Default)]
struct Files {
    loaded: BTreeMap<PathBuf, Loaded>,
    /// Groups whose file went away: still in the catalog, with no tools,
    /// for a file to fill again.
    emptied: BTreeSet<GroupId>,
}

/// The manifests directories and what they loaded.
#[derive(Debug)]
pub(crate) struct ManifestTools {
    dirs: Vec<PathBuf>,
    scripts: Arc<ManifestScripts>,
    /// The source id of `scripts`.
    source: SourceId,
    /// `[groups]` settings: a group a reload brings may be polymorphic.
    settings: BTreeMap<String, GroupSettings>,
    /// Held for a whole load, so reloads never interleave.
    files: Mutex<Files>,
}

impl ManifestTools {
    pub(crate) fn new(
        dirs: Vec<PathBuf>,
        scripts: Arc<ManifestScripts>,
        source: SourceId,
        settings: BTreeMap<String, GroupSettings>,
    ) -> Self {
        Self {
            dirs,
            scripts,
            source,
            settings,
            files: Mutex::new(Files::default()),
        }
    }

    /// Loads every manifest into a catalog being built; returns how many
    /// files loaded. Bad files, and scripts that cannot be read, go to
    /// `errors` (the tools of such a script answer that it cannot run).
    pub(crate) fn load(
        &self,
        catalog: &mut Catalog,
        registry: &mut ToolRegistry,
        errors: &mut Vec<ManifestError>,
    ) -> usize {
        let mut files = self.lock_files();
        let mut report = ReloadReport::default();
        let scan = self.scan(&files, &mut report);
        let mut applier = Applier::new(self, catalog, registry, &mut report, false);
        applier.apply_scan(&mut files, scan);
        errors.extend(report.errors);
        files.loaded.len()
    }

    /// Reads the manifests again and applies what changed (see the module
    /// documentation); what changed is sent on `state.changes`. The files
    /// are read before the catalog is locked: calls go on meanwhile.
    pub(crate) fn reload(&self, state: &CatalogState) -> ReloadReport {
        let mut files = self.lock_files();
        let mut report = ReloadReport::default();
        let scan = self.scan(&files, &mut report);
        let (groups, everyone) = {
            let mut catalog = state
                .catalog
                .write()
                .unwrap_or_else(PoisonError::into_inner);
            let mut registry = state
                .registry
                .write()
                .unwrap_or_else(PoisonError::into_inner);
            let mut applier = Applier::new(self, &mut catalog, &mut registry, &mut report, true);
            applier.apply_scan(&mut files, scan);
            (applier.changed, applier.offer_changed)
        };
        if !report.is_unchanged() {
            state.validators.forget_all();
        }
        let everyone =
            (everyone || !report.changed_core_tools.is_empty()).then_some(CatalogChange::CoreTools);
        for change in groups.into_iter().map(CatalogChange::Group).chain(everyone) {
            // Nobody listening (no gateway) is fine.
            let _ = state.changes.send(change);
        }
        report
    }

    fn lock_files(&self) -> MutexGuard<'_, Files> {
        self.files.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Every file of the directories, read, with its script; files that
    /// cannot be used go to `report.errors`. Files of a directory that
    /// cannot be listed, and files that failed, count as seen: they keep
    /// what they loaded.
    fn scan(&self, files: &Files, report: &mut ReloadReport) -> Scan {
        let mut scan = Scan::default();
        for dir in &self.dirs {
            let entries = match scan_manifest_dir(dir) {
                Ok(entries) => entries,
                Err(error) => {
                    report.errors.push(ManifestError {
                        path: dir.clone(),
                        reason: ManifestErrorReason::Io(error.to_string()),
                    });
                    scan.seen
                        .extend(files.loaded.keys().filter(|p| p.starts_with(dir)).cloned());
                    continue;
                }
            };
            for ManifestFile { path, manifest } in entries {
                scan.seen.insert(path.clone());
                if path == *dir {
                    // An entry the listing failed on: nothing of the
                    // directory may be taken as deleted.
                    scan.seen
                        .extend(files.loaded.keys().filter(|p| p.starts_with(dir)).cloned());
                }
                let manifest = match manifest {
                    Ok(manifest) => manifest,
                    Err(reason) => {
                        report.errors.push(ManifestError { path, reason });
                        continue;
                    }
                };
                let script_path = path.with_extension("js");
                let script = read_script(&script_path).map(|script| match script {
                    Script::Source(source) => {
                        let file_name = script_path
                            .file_name()
                            .map(|name| name.to_string_lossy().into_owned())
                            .unwrap_or_default();
                        match self.scripts.load_problem(&source, &file_name) {
                            Some(problem) => Script::Broken(problem),
                            None => Script::Source(source),
                        }
                    }
                    other => other,
                });
                let problem = match &script {
                    Some(Script::Unreadable(reason)) => {
                        Some(ManifestErrorReason::Io(reason.clone()))
                    }
                    Some(Script::Broken(reason)) => {
                        Some(ManifestErrorReason::Script(reason.clone()))
                    }
                    _ => None,
                };
                if let Some(reason) = problem {
                    report.errors.push(ManifestError {
                        path: script_path,
                        reason,
                    });
                    // A script that worked keeps working until it works again.
                    if files.loaded.contains_key(&path) {
                        continue;
                    }
                }
                scan.read.push((path, Loaded { manifest, script }));
            }
        }
        scan
    }
}

/// The files a scan read.
#[derive(Debug, Default)]
struct Scan {
    /// Files that keep existing: read, failed, or in a directory that could
    /// not be listed.
    seen: BTreeSet<PathBuf>,
    /// Files read, in load order.
    read: Vec<(PathBuf, Loaded)>,
}

/// Applies files to the catalog, noting what changed.
struct Applier<'a> {
    tools: &'a ManifestTools,
    catalog: &'a mut Catalog,
    registry: &'a mut ToolRegistry,
    report: &'a mut ReloadReport,
    /// Groups to announce.
    changed: BTreeSet<GroupId>,
    /// Groups came, went, or changed their description.
    offer_changed: bool,
    /// Not the first load: a group is consolidated here, not by the
    /// toolbox's start.
    reloading: bool,
}

impl<'a> Applier<'a> {
    fn new(
        tools: &'a ManifestTools,
        catalog: &'a mut Catalog,
        registry: &'a mut ToolRegistry,
        report: &'a mut ReloadReport,
        reloading: bool,
    ) -> Self {
        Self {
            tools,
            catalog,
            registry,
            report,
            changed: BTreeSet::new(),
            offer_changed: false,
            reloading,
        }
    }

    /// Applies a scan: files gone first (so a group one frees can go to
    /// another), then files read that differ from what they loaded.
    fn apply_scan(&mut self, files: &mut Files, scan: Scan) {
        let gone: Vec<PathBuf> = files
            .loaded
            .keys()
            .filter(|path| !scan.seen.contains(*path))
            .cloned()
            .collect();
        for path in gone {
            if let Some(old) = files.loaded.remove(&path) {
                self.remove(files, &old);
            }
        }
        for (path, new) in scan.read {
            let old = files.loaded.get(&path).cloned();
            if old.as_ref() == Some(&new) {
                continue;
            }
            match self.apply(files, &path, old.as_ref(), new) {
                Ok(loaded) => {
                    files.loaded.insert(path, loaded);
                }
                Err(reason) => self.report.errors.push(ManifestError { path, reason }),
            }
        }
    }

    /// Applies `new` from `path` over `old`: the catalog, the routes and the
    /// scripts. On error nothing changed. Returns what the file loaded now
    /// (tools in catalog order).
    fn apply(
        &mut self,
        files: &mut Files,
        path: &Path,
        old: Option<&Loaded>,
        mut new: Loaded,
    ) -> Result<Loaded, ManifestErrorReason> {
        let catalog_error = |error| ManifestErrorReason::Catalog(Box::new(error));
        let origin_of = |function: Option<String>| Origin::Manifest {
            path: path.to_path_buf(),
            function,
        };
        match (old.map(|old| &old.manifest), &mut new.manifest) {
            (
                Some(Manifest::Group {
                    group: old_group,
                    tools: old_tools,
                }),
                Manifest::Group { group, tools },
            ) if old_group.id == group.id => {
                *tools = keep_order(old_tools, std::mem::take(tools));
                let id = group.id.as_str();
                // The group's tools as the catalog holds them (one
                // polymorphic tool, when consolidated) lose their routes.
                let held: Vec<ToolName> = self
                    .catalog
                    .group_tools(id)
                    .map(|tool| tool.name.clone())
                    .collect();
                let definitions = tools
                    .iter()
                    .map(|tool| (tool.definition.clone(), origin_of(tool.function.clone())))
                    .collect();
                self.catalog
                    .replace_group_tools(id, definitions)
                    .map_err(catalog_error)?;
                if *old_group != *group {
                    self.catalog
                        .update_group(group.clone())
                        .map_err(catalog_error)?;
                    self.offer_changed = true;
                }
                for name in held {
                    self.registry.remove(name.as_str());
                }
            }
            (Some(Manifest::CoreTool(old_tool)), Manifest::CoreTool(tool)) => {
                self.catalog
                    .replace_core_tool(
                        old_tool.definition.name.as_str(),
                        tool.definition.clone(),
                        origin_of(tool.function.clone()),
                    )
                    .map_err(catalog_error)?;
            }
            (Some(_), _) => {
                // A group became a core tool or the other way round.
                return self.change_kind(files, path, old, new);
            }
            (None, Manifest::Group { group, tools }) if files.emptied.contains(&group.id) => {
                let definitions = tools
                    .iter()
                    .map(|tool| (tool.definition.clone(), origin_of(tool.function.clone())))
                    .collect();
                self.catalog
                    .replace_group_tools(group.id.as_str(), definitions)
                    .map_err(catalog_error)?;
                self.catalog
                    .update_group(group.clone())
                    .map_err(catalog_error)?;
                files.emptied.remove(&group.id);
            }
            (None, _) => register_manifest(self.catalog, path, new.manifest.clone())?,
        }
        self.unroute(old);
        self.route(path, &new);
        self.note(old, &new, path);
        if let Some(group) = new.group()
            && self.reloading
        {
            self.consolidate(group);
        }
        Ok(new)
    }

    /// Replaces `old` by `new` of the other kind (a group by a core tool or
    /// the other way round); on error the previous version is put back (at
    /// the end of the catalog).
    fn change_kind(
        &mut self,
        files: &mut Files,
        path: &Path,
        old: Option<&Loaded>,
        new: Loaded,
    ) -> Result<Loaded, ManifestErrorReason> {
        if let Some(old) = old {
            self.remove(files, old);
        }
        let error = match self.apply(files, path, None, new) {
            Ok(loaded) => return Ok(loaded),
            Err(error) => error,
        };
        if let Some(old) = old
            && self.apply(files, path, None, old.clone()).is_err()
        {
            tracing::warn!(path = %path.display(), "a manifest's previous version could not be put back");
        }
        Err(error)
    }

    /// Takes away what `old` loaded: its group keeps no tools, its core tool
    /// goes.
    fn remove(&mut self, files: &mut Files, old: &Loaded) {
        if let Some(group) = old.group() {
            let held: Vec<ToolName> = self
                .catalog
                .group_tools(group.as_str())
                .map(|tool| tool.name.clone())
                .collect();
            if let Err(error) = self.catalog.replace_group_tools(group.as_str(), Vec::new()) {
                tracing::warn!(%group, %error, "a removed manifest's group kept its tools");
                return;
            }
            for name in held {
                self.registry.remove(name.as_str());
            }
            files.emptied.insert(group.clone());
            self.report.removed_groups.push(group.clone());
            self.changed.insert(group.clone());
            self.offer_changed = true;
        }
        if let Some(name) = old.core_tool() {
            if let Err(error) = self.catalog.remove_tool(name.as_str()) {
                tracing::warn!(tool = %name, %error, "a removed manifest's tool stayed");
                return;
            }
            self.report.changed_core_tools.push(name.clone());
        }
        self.unroute(Some(old));
    }

    /// Forgets the routes and scripts of `old`'s tools.
    fn unroute(&mut self, old: Option<&Loaded>) {
        let Some(old) = old else { return };
        for tool in old.tools() {
            self.registry.remove(tool.definition.name.as_str());
        }
        let names = old.tools().iter().map(|tool| tool.definition.name.as_str());
        self.tools.scripts.replace(names, Vec::new());
    }

    /// Routes `new`'s tools: to their script when the manifest has one,
    /// else to nothing.
    fn route(&mut self, path: &Path, new: &Loaded) {
        let Some(script) = &new.script else {
            for tool in new.tools() {
                self.registry
                    .insert(tool.definition.name.clone(), Route::Unbound);
            }
            return;
        };
        let file_name = path
            .with_extension("js")
            .file_name()
            .map(|name| name.to_string_lossy().into_owned())
            .unwrap_or_default();
        // A manifest's file stem is its group: the settings its calls get.
        let group = path
            .file_stem()
            .map(|stem| stem.to_string_lossy().into_owned())
            .unwrap_or_default();
        let mut scripts = Vec::new();
        for tool in new.tools() {
            let name = &tool.definition.name;
            self.registry.insert(
                name.clone(),
                Route::Source {
                    source: self.tools.source,
                    tool: name.to_string(),
                    listing: None,
                },
            );
            let js = JsTool {
                file_name: file_name.clone(),
                group: group.clone(),
                script: script.clone(),
                function: tool.function.clone().unwrap_or_else(|| name.to_string()),
                timeout: self.tools.scripts.timeout_of(tool.definition.timeout),
            };
            scripts.push((name.to_string(), js));
        }
        self.tools.scripts.replace([], scripts);
    }

    /// Notes in the report (and the changes to announce) what going from
    /// `old` to `new` changed.
    fn note(&mut self, old: Option<&Loaded>, new: &Loaded, path: &Path) {
        let shown_changed = old.is_none_or(|old| old.shown() != new.shown());
        match (new.group(), new.core_tool()) {
            (Some(group), _) if old.is_none() => {
                self.report.added_groups.push(group.clone());
                self.changed.insert(group.clone());
                self.offer_changed = true;
            }
            (Some(group), _) if shown_changed => {
                self.report.changed_groups.push(group.clone());
                self.changed.insert(group.clone());
            }
            (_, Some(name)) if shown_changed => {
                self.report.changed_core_tools.push(name.clone());
            }
            _ => self.report.changed_scripts.push(path.to_path_buf()),
        }
    }

    /// Offers `group` as one polymorphic tool again, when it is configured
    /// so.
    fn consolidate(&mut self, group: &GroupId) {
        let polymorphic = polymorphic_groups(&self.tools.settings, self.catalog);
        let Some((policy, scope)) = polymorphic.get(group) else {
            return;
        };
        if let Err(reason) = consolidate(self.catalog, self.registry, group, policy, *scope) {
            tracing::warn!(%group, %reason, "group left as separate tools");
        }
    }
}

/// `new` in the order of `old` for the tools both hold, the others after
/// in their own order: a reload never moves a tool that stays.
fn keep_order(old: &[ManifestTool], new: Vec<ManifestTool>) -> Vec<ManifestTool> {
    let mut new: Vec<Option<ManifestTool>> = new.into_iter().map(Some).collect();
    let mut ordered = Vec::with_capacity(new.len());
    for kept in old {
        let slot = new.iter_mut().find(|tool| {
            tool.as_ref()
                .is_some_and(|tool| tool.definition.name == kept.definition.name)
        });
        if let Some(slot) = slot {
            ordered.extend(slot.take());
        }
    }
    ordered.extend(new.into_iter().flatten());
    ordered
}
