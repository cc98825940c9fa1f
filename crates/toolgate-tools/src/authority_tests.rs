use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;

use toolgate_core::ActionPolicy;

use super::*;

fn grouped<'a>(group: &'a str, tool: &'a str) -> PolicyTarget<'a> {
    PolicyTarget::tool(ToolKind::Grouped(group), tool)
}

#[test]
fn a_context_that_says_no_caller_may_do_nothing() {
    let none = Authority::default();
    assert!(!none.permits(&grouped("time", "time_now")));
    assert!(!none.permits(&PolicyTarget::tool(ToolKind::Meta, "load_tool_group")));
    assert!(none.reach("files", "files_read", "read").is_err());
    let operator = Authority::everything();
    assert!(operator.permits(&grouped("time", "time_now")));
    assert!(!operator.narrows());
    assert!(none.narrows());
    assert!(operator.reach("files", "files_read", "read").is_ok());
}

#[test]
fn a_host_function_is_judged_as_the_tool_it_does_under_either_name() {
    let policy = |policy: ToolPolicy| Authority::policy(Arc::new(policy));
    let no_files = policy(ToolPolicy {
        deny_groups: BTreeSet::from(["files".to_owned()]),
        ..ToolPolicy::default()
    });
    assert_eq!(
        no_files.reach("files", "files_read", "read").unwrap_err(),
        "files_read is not available to this caller"
    );
    assert!(no_files.reach("web", "web_fetch", "fetch").is_ok());
    let no_fetch = policy(ToolPolicy {
        actions: BTreeMap::from([("web".to_owned(), ActionPolicy::deny(["fetch"]))]),
        ..ToolPolicy::default()
    });
    assert!(no_fetch.reach("web", "web_fetch", "fetch").is_err());
    let by_old_name = policy(ToolPolicy {
        deny_tools: BTreeSet::from(["web_fetch".to_owned()]),
        ..ToolPolicy::default()
    });
    assert!(by_old_name.reach("web", "web_fetch", "fetch").is_err());
    let only_web = policy(ToolPolicy {
        allow_tools: Some(BTreeSet::from(["web".to_owned()])),
        ..ToolPolicy::default()
    });
    assert!(only_web.reach("web", "web_fetch", "fetch").is_ok());
    assert!(only_web.reach("files", "files_read", "read").is_err());
}

#[derive(Debug, Default)]
struct Counted(Mutex<Vec<String>>);

impl CallerLimits for Counted {
    fn admit(&self, tool: &str) -> Result<(), String> {
        let mut seen = self.0.lock().unwrap();
        seen.push(tool.to_owned());
        if seen.len() > 1 {
            return Err("rate limit reached".to_owned());
        }
        Ok(())
    }
}

#[test]
fn what_a_host_function_does_counts_against_the_callers_limits() {
    let counted = Arc::new(Counted::default());
    let authority =
        Authority::everything().with_limits(Arc::clone(&counted) as Arc<dyn CallerLimits>);
    assert!(authority.reach("files", "files_read", "read").is_ok());
    assert_eq!(
        authority.reach("web", "web_fetch", "fetch").unwrap_err(),
        "rate limit reached"
    );
    assert_eq!(*counted.0.lock().unwrap(), ["files_read", "web_fetch"]);
}
