use pretty_assertions::assert_eq;

use super::*;

fn close(a: f64, b: f64) {
    assert!((a - b).abs() < 1e-9, "{a} != {b}");
}

/// Every tool sent on every call: the warm cache holds the tool list, so
/// the first call reads it and writes only the request.
#[test]
fn a_fixed_tool_list_is_read_from_the_cache() {
    let episode = Episode {
        shared_tools: 2000,
        request: 10,
        using_calls: 2,
        done: true,
        ..Episode::default()
    };
    assert_eq!(episode.calls(), 2);
    assert_eq!(episode.uncached(), 4020);
    // Anthropic: 2,000 read + 10 written, then 2,010 read.
    close(episode.cached(&ANTHROPIC), 200.0 + 12.5 + 201.0);
    // OpenAI: hits in 128-token steps past 1,024: 1,920 of 2,000 and of 2,010.
    close(episode.cached(&OPENAI), 2.0 * (192.0 + 90.0));
}

/// A load that adds schemas to the tool list changes the prompt before the
/// system prompt: the next call writes the listing again. Answering in the
/// conversation only appends, so the next call reads all it sent before.
#[test]
fn a_load_into_the_tool_list_breaks_the_cached_prefix() {
    let listed = Episode {
        shared_tools: 100,
        system: 2000,
        request: 10,
        rounds: vec![Round {
            listed: 500,
            messages: 50,
        }],
        using_calls: 1,
        done: true,
        ..Episode::default()
    };
    let in_conversation = Episode {
        rounds: vec![Round {
            listed: 0,
            messages: 550,
        }],
        ..listed
    };
    assert_eq!(listed.uncached(), 2110 + 2660);
    assert_eq!(in_conversation.uncached(), listed.uncached());
    // The last call carries the most: what must fit in the context window.
    assert_eq!(listed.largest_prompt(), 2660);
    assert_eq!(in_conversation.largest_prompt(), 2660);
    // First call alike: the shared 2,100 read, the request written.
    let first = 210.0 + 12.5;
    // After the load: 100 tokens in common (under the minimum), all written.
    close(listed.cached(&ANTHROPIC), first + 2660.0 * 1.25);
    // In the conversation: the first call's 2,110 read, the answer written.
    close(
        in_conversation.cached(&ANTHROPIC),
        first + 211.0 + 550.0 * 1.25,
    );
}

/// Under the cache's minimum nothing is read, and nothing costs a write.
#[test]
fn a_short_prompt_is_billed_as_it_is() {
    let episode = Episode {
        shared_tools: 100,
        request: 10,
        using_calls: 2,
        done: true,
        ..Episode::default()
    };
    close(episode.cached(&ANTHROPIC), 220.0);
    close(episode.cached(&OPENAI), 220.0);
}

/// The task's own tools are not warm: another task's prompt differs there.
#[test]
fn a_task_s_own_tools_are_not_read_from_other_tasks() {
    let episode = Episode {
        shared_tools: 100,
        task_tools: 1500,
        system: 2000,
        request: 10,
        using_calls: 1,
        done: true,
        ..Episode::default()
    };
    close(episode.cached(&ANTHROPIC), 3610.0 * 1.25);
}

/// A router's showing sent after the request leaves the tool list and the
/// system prompt the same for every task, so they stay warm.
#[test]
fn a_routed_message_after_the_request_keeps_the_head_warm() {
    let in_tools = Episode {
        shared_tools: 100,
        task_tools: 1500,
        system: 2000,
        request: 10,
        using_calls: 1,
        done: true,
        ..Episode::default()
    };
    let in_message = Episode {
        task_tools: 0,
        routed_message: 1500,
        ..in_tools.clone()
    };
    assert_eq!(in_message.uncached(), in_tools.uncached());
    close(in_tools.cached(&ANTHROPIC), 3610.0 * 1.25);
    close(in_message.cached(&ANTHROPIC), 210.0 + 1510.0 * 1.25);
}

/// With light traffic nothing is warm: the first call writes its whole
/// prompt, shared tools and listing included, and later calls read it.
#[test]
fn with_light_traffic_the_first_call_writes_the_shared_prefix_too() {
    let episode = Episode {
        shared_tools: 3000,
        system: 500,
        request: 100,
        using_calls: 2,
        done: true,
        ..Episode::default()
    };
    // Busy: 3,500 read and the request written, then all 3,600 read.
    close(episode.cached(&ANTHROPIC), 350.0 + 125.0 + 360.0);
    // Light: all 3,600 written, then read.
    close(
        episode.cached_with(&ANTHROPIC, Traffic::Light),
        4500.0 + 360.0,
    );
}
