use std::time::Duration;

use pretty_assertions::assert_eq;
use toolgate_core::GroupId;
use toolgate_tools::{CallDeadline, ToolSource};

use crate::config::UpstreamConfig;
use crate::upstream::Upstream;

#[test]
fn an_upstream_call_is_bounded_by_its_own_timeouts_not_the_toolbox_deadline() {
    let mut config = UpstreamConfig::stdio(GroupId::new("slow").unwrap(), "slow-server", &[]);
    config.startup_timeout = Duration::from_secs(20);
    config.call_timeout = Duration::from_secs(300);
    assert_eq!(
        Upstream::new(config).deadline(),
        CallDeadline::Own(Duration::from_secs(325)),
        "start-up, then the call, then a margin for the upstream's own timeout to answer"
    );
}
