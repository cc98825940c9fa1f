//! `toolgate migrate`: rewrites old tool names through the alias map (the
//! data migration of tools folded into polymorphic ones). The stored agents' tool lists and the
//! configuration's `[agent] tools` list get the names that answer now; each
//! change is printed; running it again changes nothing.
//!
//! The alias map is the catalog's: the `[aliases]` table, plus each member
//! of a group exposed as one polymorphic tool, which now answers as that
//! tool. Conversation histories are left as they are: restoring them resolves
//! the aliases.

use std::collections::BTreeMap;
use std::ops::Range;
use std::sync::Arc;

use anyhow::Context;
use toolgate_store::{AgentStore, SqliteStore};
use toolgate_tools::Toolbox;

use super::tool_setup::ToolSetup;
use crate::cli::MigrateArgs;
use crate::output::{eprint, init_logging, print};
use crate::settings::Settings;

pub(crate) fn run(args: &MigrateArgs) -> anyhow::Result<()> {
    init_logging();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    runtime.block_on(migrate(args))
}

async fn migrate(args: &MigrateArgs) -> anyhow::Result<()> {
    let (store, store_path) = crate::store::open_sqlite(args.store.as_deref(), "conversations.db")?;
    let store = Arc::new(store);
    let settings = Settings::load(args.tools.config.as_deref())?;
    let aliases = alias_map(args, &settings, &store).await?;
    let verb = if args.dry_run {
        "would change"
    } else {
        "changed"
    };
    let mut out = String::new();
    let mut changes = 0;

    for mut agent in store.agents().await.context("reading the stored agents")? {
        let Some(tools) = renamed(&agent.tools, &aliases) else {
            continue;
        };
        out.push_str(&format!(
            "agent `{}` ({verb}): tools {} -> {}\n",
            agent.id,
            list(&agent.tools),
            list(&tools)
        ));
        changes += 1;
        if !args.dry_run {
            agent.tools = tools;
            store
                .save_agent(agent)
                .await
                .context("storing a migrated agent")?;
        }
    }

    if let Some(file) = &settings.file
        && let Some(span) = file.agent_tools.clone()
        && let Some(rewrite) = rewrite_config(&file.text, span, &settings.agent.tools, &aliases)
    {
        let path = &file.path;
        out.push_str(&format!(
            "{} [agent] ({verb}): tools {} -> {}\n",
            path.display(),
            list(&rewrite.old),
            list(&rewrite.new)
        ));
        changes += 1;
        if !args.dry_run {
            std::fs::write(path, rewrite.text)
                .with_context(|| format!("writing {}", path.display()))?;
        }
    }

    if changes == 0 {
        out.push_str(&format!(
            "Nothing to migrate: no stored agent in {} and no [agent] tools list names an old tool ({} aliases known).\n",
            store_path.display(),
            aliases.len()
        ));
    }
    print(&out);
    Ok(())
}

/// Old name -> the tool that answers now, from the catalog the arguments
/// describe (upstreams started and listed, so their groups consolidate).
async fn alias_map(
    args: &MigrateArgs,
    settings: &Settings,
    store: &Arc<SqliteStore>,
) -> anyhow::Result<BTreeMap<String, String>> {
    let mut setup = ToolSetup::new(&args.tools, settings)?;
    setup.start_upstreams_eagerly();
    let mut options = setup.into_options();
    options.meta_tools = vec![toolgate_core::MetaTool::UnloadToolGroup];
    if let Some(builtins) = &mut options.builtins {
        builtins.agents = Some(Arc::clone(store) as Arc<dyn AgentStore>);
    }
    let (toolbox, report) = Toolbox::start(options)
        .await
        .context("building the tool catalog")?;
    for (upstream, state) in &report.listed {
        if let Err(error) = state {
            eprint(&format!(
                "warning: upstream '{upstream}' did not start ({error}); aliases of its tools are unknown\n"
            ));
        }
    }
    let aliases = toolbox.with_catalog(|catalog| {
        catalog
            .aliases()
            .map(|(old, alias)| (old.to_owned(), alias.tool.to_string()))
            .collect()
    });
    toolbox.shutdown().await;
    Ok(aliases)
}

/// The list with every old name replaced and repeats dropped (first place
/// kept); `None` when nothing changes.
fn renamed(names: &[String], aliases: &BTreeMap<String, String>) -> Option<Vec<String>> {
    let mut result: Vec<String> = Vec::with_capacity(names.len());
    for name in names {
        let current = aliases.get(name).unwrap_or(name);
        if !result.contains(current) {
            result.push(current.clone());
        }
    }
    (result != names).then_some(result)
}

fn list(names: &[String]) -> String {
    format!("[{}]", names.join(", "))
}

/// The configuration text with its `[agent] tools` array (`old`, at `span`)
/// rewritten, when a name in it changes; the rest of the file is kept byte
/// for byte.
fn rewrite_config(
    text: &str,
    span: Range<usize>,
    old: &[String],
    aliases: &BTreeMap<String, String>,
) -> Option<Rewrite> {
    let new = renamed(old, aliases)?;
    // A JSON string literal is a valid TOML basic string.
    let items: Vec<String> = new
        .iter()
        .map(|name| serde_json::Value::String(name.clone()).to_string())
        .collect();
    let array = format!("[{}]", items.join(", "));
    let mut rewritten = String::with_capacity(text.len());
    rewritten.push_str(&text[..span.start]);
    rewritten.push_str(&array);
    rewritten.push_str(&text[span.end..]);
    Some(Rewrite {
        text: rewritten,
        old: old.to_vec(),
        new,
    })
}

/// A rewritten configuration and the list it changed.
struct Rewrite {
    text: String,
    old: Vec<String>,
    new: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn aliases() -> BTreeMap<String, String> {
        [
            ("web_search", "web"),
            ("web_fetch", "web"),
            ("old_clock", "clock"),
        ]
        .into_iter()
        .map(|(a, b)| (a.to_owned(), b.to_owned()))
        .collect()
    }

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn old_names_become_new_ones_once_and_current_lists_are_left_alone() {
        assert_eq!(
            renamed(
                &names(&["time", "web_search", "web_fetch", "old_clock"]),
                &aliases()
            ),
            Some(names(&["time", "web", "clock"]))
        );
        assert_eq!(renamed(&names(&["time", "web"]), &aliases()), None);
    }

    /// The rewrite of a configuration text, read as `toolgate` reads it.
    fn rewrite(text: &str) -> Option<Rewrite> {
        let settings =
            Settings::parse(text.to_owned(), std::path::PathBuf::from("toolgate.toml")).unwrap();
        let file = settings.file.as_ref().unwrap();
        rewrite_config(
            &file.text,
            file.agent_tools.clone()?,
            &settings.agent.tools,
            &aliases(),
        )
    }

    #[test]
    fn the_config_array_is_rewritten_in_place_and_only_once() {
        let text = "# my agent\n[agent]\nname = \"Sage\"  # keep me\ntools = [\"web_search\", \"web_fetch\", \"time\"]\n\n[web]\nsearch_url = \"http://127.0.0.1:8888\"\n";
        let Rewrite {
            text: rewritten,
            old,
            new,
        } = rewrite(text).unwrap();
        assert_eq!(
            rewritten,
            "# my agent\n[agent]\nname = \"Sage\"  # keep me\ntools = [\"web\", \"time\"]\n\n[web]\nsearch_url = \"http://127.0.0.1:8888\"\n"
        );
        assert_eq!(old, names(&["web_search", "web_fetch", "time"]));
        assert_eq!(new, names(&["web", "time"]));
        assert!(rewrite(&rewritten).is_none());
        assert!(rewrite("[model]\nmodel = \"m\"\n").is_none());
    }
}
