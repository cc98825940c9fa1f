use std::path::Path;

use pretty_assertions::assert_eq;
use toolgate_llm::{ApiKey, ProviderConfig, ProviderKind};

use super::*;

#[test]
fn servers_on_this_machine_or_its_network_are_local() {
    for url in [
        "http://localhost:11434/v1",
        "http://127.0.0.1:8080/v1",
        "http://[::1]:8080/v1",
        "http://192.168.1.10:11434/v1",
        "http://user:pass@10.0.0.2/v1",
        "http://ollama:11434/v1",
        "http://gpu-box.local:8000",
        "http://host.docker.internal:11434/v1",
        "http://[fd00::2]:8000",
    ] {
        assert!(is_local(url), "{url}");
    }
    for url in [
        "https://api.openai.com/v1",
        "https://api.anthropic.com",
        "https://openrouter.ai/api/v1",
        "https://8.8.8.8/v1",
        "https://localhost.example.com/v1",
    ] {
        assert!(!is_local(url), "{url}");
    }
}

#[test]
fn a_hosted_provider_without_a_key_is_refused_naming_where_keys_go() {
    let hosted = ProviderConfig::new(ProviderKind::Anthropic, "https://api.anthropic.com", "m");
    assert_eq!(
        check(&hosted, Some(Path::new("conf/toolgate.toml")))
            .unwrap_err()
            .to_string(),
        "no API key for anthropic at https://api.anthropic.com: set ANTHROPIC_API_KEY (or \
         TOOLGATE_API_KEY), or name a key file or variable with `api_key_file` or `api_key_env` \
         under [model] in conf/toolgate.toml; a server on this machine or your network \
         (--base-url http://localhost:11434/v1, say) needs none"
    );
    let mut keyed = hosted;
    keyed.api_key = Some(ApiKey::new("sk-test"));
    assert!(check(&keyed, None).is_ok());
    let local = ProviderConfig::new(ProviderKind::OpenAi, "http://localhost:11434/v1", "m");
    assert!(check(&local, None).is_ok());
}
