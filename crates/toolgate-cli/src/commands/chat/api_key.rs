//! The API key, checked before the first request: without one, a chat with
//! a hosted provider would only fail on the network (a DNS error offline, a
//! 401 online), neither of which says where a key goes. A server on this
//! machine or its network (Ollama, vLLM, llama.cpp) needs none, so a base
//! URL there goes on without one.

use std::net::IpAddr;
use std::path::Path;

use toolgate_llm::{ProviderConfig, ProviderKind};

/// `Ok` when `config` has a key or its base URL is local; else an error
/// naming the variables and settings that give one. `file` is the
/// configuration file in use, if any.
pub(crate) fn check(config: &ProviderConfig, file: Option<&Path>) -> anyhow::Result<()> {
    if config.api_key.is_some() || is_local(&config.base_url) {
        return Ok(());
    }
    let variable = match config.kind {
        ProviderKind::OpenAi => "OPENAI_API_KEY",
        ProviderKind::Anthropic => "ANTHROPIC_API_KEY",
    };
    let file = file.map_or_else(
        || "toolgate.toml".to_owned(),
        |path| path.display().to_string(),
    );
    anyhow::bail!(
        "no API key for {} at {}: set {variable} (or TOOLGATE_API_KEY), or name a key file or \
         variable with `api_key_file` or `api_key_env` under [model] in {file}; a server on \
         this machine or your network (--base-url http://localhost:11434/v1, say) needs none",
        config.kind,
        config.base_url
    )
}

/// Whether `base_url` is on this machine or a private network: a loopback,
/// private or link-local address, `localhost`, a name of one label (a
/// container's), or one under `.local`, `.internal`, `.lan` or
/// `.home.arpa`.
fn is_local(base_url: &str) -> bool {
    let rest = base_url
        .split_once("://")
        .map_or(base_url, |(_, rest)| rest);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let host = authority
        .rsplit_once('@')
        .map_or(authority, |(_, host)| host);
    let host = match host.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or_default(),
        None => host.split(':').next().unwrap_or_default(),
    };
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    if let Ok(address) = host.parse::<IpAddr>() {
        return match address {
            IpAddr::V4(v4) => v4.is_loopback() || v4.is_private() || v4.is_link_local(),
            IpAddr::V6(v6) => {
                let first = v6.segments()[0];
                v6.is_loopback() || (first & 0xfe00) == 0xfc00 || (first & 0xffc0) == 0xfe80
            }
        };
    }
    !host.is_empty()
        && (!host.contains('.')
            || [".localhost", ".local", ".internal", ".lan", ".home.arpa"]
                .iter()
                .any(|suffix| host.ends_with(suffix)))
}

#[cfg(test)]
#[path = "api_key_tests.rs"]
mod tests;
