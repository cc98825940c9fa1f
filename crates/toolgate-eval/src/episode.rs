//! What one task costs a user: the model calls of an episode, each call's
//! prompt laid out as the providers bill it, priced uncached and with each
//! provider's prefix cache.
//!
//! An [`Episode`] is what a policy and an agent make of one task: the tools
//! every task shares, the task's own first tool list, the system prompt,
//! the request, then one [`Round`] per extra round trip (the calls the
//! model makes to get the tools it lacks and their answers), then the calls
//! that use the tools. Each model call sends, in the providers' order (the
//! tool list, then the system prompt, then the messages; Anthropic documents
//! it, OpenAI renders tools ahead of the messages too):
//!
//! ```text
//! [shared tools][task's tools][tools listed by rounds 1..r][system][request][routed message][round 1..r messages]
//! ```
//!
//! so a round that adds schemas to the tool list changes the prompt before
//! the system prompt and everything after it, while one that answers in the
//! conversation only appends. The tool calls that do the task, and their
//! results, are the same for every policy and left out; the calls that make
//! them are counted, since each carries the whole prompt.
//!
//! The cache ([`CacheRules`]) reads the longest prefix an earlier call of
//! the episode sent, or, under [`Traffic::Busy`], the prefix every task of
//! the policy shares (warm: other tasks sent it moments ago, as in a
//! deployment serving many); under [`Traffic::Light`] no other task did.

use serde::Serialize;

/// Where the schemas a task loads go.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Placement {
    /// Added to the tool list the provider receives (what `tools/list`
    /// and `list_changed` do).
    ToolList,
    /// In the answer of the call that loaded them; the tool list stays as
    /// it was, and the model calls them through `call_tool` (`[tools]
    /// loaded_schemas = "conversation"`). A router's showing stays in the
    /// tool list.
    Conversation,
    /// The same, and a router's showing too goes in a message after the
    /// request, so every task sends the same tool list and system prompt.
    ConversationRouted,
}

impl Placement {
    /// Every placement, in report order.
    pub const ALL: [Self; 3] = [Self::ToolList, Self::Conversation, Self::ConversationRouted];

    /// How the report names it.
    pub fn label(self) -> &'static str {
        match self {
            Self::ToolList => "tool list",
            Self::Conversation => "conversation",
            Self::ConversationRouted => "conversation, routed too",
        }
    }

    /// Where loaded schemas go: in the tool list or not.
    pub(crate) fn lists_loads(self) -> bool {
        self == Self::ToolList
    }
}

/// How much else the cache has seen when a task starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Traffic {
    /// Other tasks of the policy sent its shared prefix moments ago: the
    /// tools and listing every task shares are read from the cache.
    Busy,
    /// No other task within the cache's lifetime (five minutes): each task
    /// writes its whole first prompt.
    Light,
}

/// One extra round trip: what it adds to the tool list and to the
/// conversation (the model's calls and their answers).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Round {
    /// Schema tokens appended to the tool list.
    pub(crate) listed: usize,
    /// Tokens of the calls and their answers.
    pub(crate) messages: usize,
}

/// Two sets of calls made in the same round trip (parallel calls).
impl std::ops::Add for Round {
    type Output = Self;

    fn add(self, other: Self) -> Self {
        Self {
            listed: self.listed + other.listed,
            messages: self.messages + other.messages,
        }
    }
}

/// One task under one policy and agent.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Episode {
    /// Tool-list tokens every task of the policy sends (meta-tools, a
    /// search tool; every tool for all-tools).
    pub(crate) shared_tools: usize,
    /// This task's own tool-list tokens on its first call (what a router
    /// showed).
    pub(crate) task_tools: usize,
    /// System-prompt tokens every task shares (the group listing).
    pub(crate) system: usize,
    /// The request's tokens.
    pub(crate) request: usize,
    /// A router's showing sent as a message after the request.
    pub(crate) routed_message: usize,
    /// Extra round trips, in order.
    pub(crate) rounds: Vec<Round>,
    /// Calls once every needed tool is visible: one per needed tool (each
    /// calls it), then the answer.
    pub(crate) using_calls: usize,
    /// Whether every needed tool became visible.
    pub(crate) done: bool,
}

/// One prompt segment: its tokens and whether every task sends it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Segment {
    id: SegmentId,
    tokens: usize,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SegmentId {
    SharedTools,
    TaskTools,
    Listed(usize),
    System,
    Request,
    RoutedMessage,
    Messages(usize),
}

impl SegmentId {
    fn shared(self) -> bool {
        matches!(self, Self::SharedTools | Self::System)
    }
}

impl Episode {
    /// Model calls in the episode.
    pub(crate) fn calls(&self) -> usize {
        self.rounds.len() + self.using_calls
    }

    /// The prompt of call `call` (from 0): the rounds before it done.
    fn prompt(&self, call: usize) -> Vec<Segment> {
        let done = call.min(self.rounds.len());
        let mut segments = vec![
            Segment {
                id: SegmentId::SharedTools,
                tokens: self.shared_tools,
            },
            Segment {
                id: SegmentId::TaskTools,
                tokens: self.task_tools,
            },
        ];
        segments.extend(
            self.rounds[..done]
                .iter()
                .enumerate()
                .map(|(i, r)| Segment {
                    id: SegmentId::Listed(i),
                    tokens: r.listed,
                }),
        );
        segments.push(Segment {
            id: SegmentId::System,
            tokens: self.system,
        });
        segments.push(Segment {
            id: SegmentId::Request,
            tokens: self.request,
        });
        segments.push(Segment {
            id: SegmentId::RoutedMessage,
            tokens: self.routed_message,
        });
        segments.extend(
            self.rounds[..done]
                .iter()
                .enumerate()
                .map(|(i, r)| Segment {
                    id: SegmentId::Messages(i),
                    tokens: r.messages,
                }),
        );
        segments.retain(|s| s.tokens > 0);
        segments
    }

    /// Tokens of the largest prompt any call sends (its last): what must fit
    /// in the model's context window.
    pub(crate) fn largest_prompt(&self) -> usize {
        (0..self.calls())
            .map(|call| self.prompt(call).iter().map(|s| s.tokens).sum::<usize>())
            .max()
            .unwrap_or(0)
    }

    /// Input tokens of every call, summed: the bill without a cache.
    pub(crate) fn uncached(&self) -> usize {
        (0..self.calls())
            .map(|call| self.prompt(call).iter().map(|s| s.tokens).sum::<usize>())
            .sum()
    }

    /// The bill under `rules` with busy traffic ([`Self::cached_with`]).
    pub(crate) fn cached(&self, rules: &CacheRules) -> f64 {
        self.cached_with(rules, Traffic::Busy)
    }

    /// The bill under `rules` and `traffic`, in input-token equivalents (a
    /// token read from the cache counts `rules.read`, one written
    /// `rules.write`).
    pub(crate) fn cached_with(&self, rules: &CacheRules, traffic: Traffic) -> f64 {
        let mut sent: Vec<Vec<Segment>> = Vec::new();
        if traffic == Traffic::Busy {
            let warm = self
                .prompt(0)
                .into_iter()
                .take_while(|s| s.id.shared())
                .collect();
            sent.push(warm);
        }
        let mut bill = 0.0;
        for call in 0..self.calls() {
            let prompt = self.prompt(call);
            let total: usize = prompt.iter().map(|s| s.tokens).sum();
            let common = sent
                .iter()
                .map(|earlier| common_prefix(earlier, &prompt))
                .max()
                .unwrap_or(0);
            let read = rules.readable(common);
            let write = if total >= rules.min_tokens {
                rules.write
            } else {
                1.0
            };
            bill += read as f64 * rules.read + (total - read) as f64 * write;
            sent.push(prompt);
        }
        bill
    }
}

/// Tokens of the segments `a` and `b` begin with alike.
fn common_prefix(a: &[Segment], b: &[Segment]) -> usize {
    a.iter()
        .zip(b)
        .take_while(|(x, y)| x == y)
        .map(|(x, _)| x.tokens)
        .sum()
}

/// A provider's prefix cache as its documentation states it.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct CacheRules {
    /// The provider and model the prices are for.
    pub provider: &'static str,
    /// Dollars per million uncached input tokens.
    pub input_per_million: f64,
    /// A token read from the cache, as a share of the input price.
    pub read: f64,
    /// A token written to the cache, as a share of the input price (1 when
    /// writing costs nothing extra).
    pub write: f64,
    /// The shortest prefix the cache keeps.
    pub min_tokens: usize,
    /// Cache hits come in multiples of this many tokens past `min_tokens`
    /// (1: at any segment end).
    pub step: usize,
    /// Where the rules are published, and when they were read.
    pub source: &'static str,
}

impl CacheRules {
    /// Tokens of a common prefix of `common` tokens the cache returns.
    fn readable(&self, common: usize) -> usize {
        if common < self.min_tokens {
            return 0;
        }
        let step = self.step.max(1);
        self.min_tokens + (common - self.min_tokens) / step * step
    }
}

/// Anthropic's prompt cache (Claude Sonnet 4.x): a breakpoint at the end
/// of every call (automatic caching), reads at 0.1x, writes (5-minute
/// lifetime) at 1.25x, prefixes of at least 1,024 tokens, matched at block
/// ends; the order is tools, system, messages.
pub const ANTHROPIC: CacheRules = CacheRules {
    provider: "Anthropic, Claude Sonnet 4.x",
    input_per_million: 3.0,
    read: 0.1,
    write: 1.25,
    min_tokens: 1024,
    step: 1,
    source: "docs.anthropic.com/en/docs/build-with-claude/prompt-caching and anthropic.com/pricing, as of 2026-11",
};

/// OpenAI's automatic prompt cache (GPT-5.4): reads at 0.1x, writes free,
/// prompts of at least 1,024 tokens, hits in 128-token steps.
pub const OPENAI: CacheRules = CacheRules {
    provider: "OpenAI, GPT-5.4",
    input_per_million: 2.5,
    read: 0.1,
    write: 1.0,
    min_tokens: 1024,
    step: 128,
    source: "developers.openai.com/api/docs/guides/prompt-caching and /pricing, as of 2026-11",
};

/// The caches every cost is reported under, in report order.
pub const CACHES: [CacheRules; 2] = [ANTHROPIC, OPENAI];

#[cfg(test)]
#[path = "episode_tests.rs"]
mod tests;
