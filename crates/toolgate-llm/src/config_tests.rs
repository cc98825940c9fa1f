use std::collections::HashMap;

use pretty_assertions::assert_eq;

use super::{
    DEFAULT_CONTEXT_WINDOW, DEFAULT_MAX_TOOL_TOKENS, ModelSettings, OPENAI_MAX_TOOLS, ProviderKind,
    ToolCalls,
};

fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
    let map: HashMap<String, String> = pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    move |name| map.get(name).cloned()
}

#[test]
fn the_environment_overrides_the_file_and_defaults_fill_the_rest() {
    let settings: ModelSettings =
        toml::from_str("provider = \"anthropic\"\nmodel = \"claude-file\"\nmax_tokens = 1000\n")
            .unwrap();
    let config = settings
        .resolve(&env(&[
            ("TOOLGATE_MODEL", "claude-env"),
            ("ANTHROPIC_API_KEY", "sk-ant-1"),
        ]))
        .unwrap();
    assert_eq!(config.kind, ProviderKind::Anthropic);
    assert_eq!(config.model, "claude-env");
    assert_eq!(config.base_url, "https://api.anthropic.com");
    assert_eq!(config.max_tokens, Some(1000));
    assert!(config.stream);
    assert_eq!(
        config.api_key.as_ref().map(|k| k.expose()),
        Some("sk-ant-1")
    );
    assert_eq!(
        config.key_source,
        "the environment variable ANTHROPIC_API_KEY"
    );

    let openai = ModelSettings::default()
        .resolve(&env(&[
            ("TOOLGATE_MODEL", "llama3.1"),
            ("TOOLGATE_BASE_URL", "http://localhost:11434/v1/"),
        ]))
        .unwrap();
    assert_eq!(openai.kind, ProviderKind::OpenAi);
    assert_eq!(openai.base_url, "http://localhost:11434/v1");
    assert!(openai.api_key.is_none(), "a local server needs no key");
    assert!(openai.key_source.contains("OPENAI_API_KEY"));
}

#[test]
fn the_key_comes_from_a_file_or_a_named_variable_and_never_shows() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("key");
    std::fs::write(&path, "sk-secret-from-file\n").unwrap();
    let settings = ModelSettings {
        model: Some("m".into()),
        api_key_file: Some(path.clone()),
        ..ModelSettings::default()
    };
    let config = settings
        .resolve(&env(&[("OPENAI_API_KEY", "sk-env")]))
        .unwrap();
    assert_eq!(
        config.api_key.as_ref().map(|k| k.expose()),
        Some("sk-secret-from-file")
    );
    assert!(!format!("{config:?}").contains("sk-secret"), "{config:?}");

    let named = ModelSettings {
        model: Some("m".into()),
        api_key_env: Some("MY_KEY".into()),
        ..ModelSettings::default()
    };
    assert_eq!(
        named
            .resolve(&env(&[("MY_KEY", "sk-mine")]))
            .unwrap()
            .key_source,
        "the environment variable MY_KEY"
    );
    assert_eq!(
        named.resolve(&env(&[])).unwrap_err().to_string(),
        "api_key_env names MY_KEY, which is not set"
    );

    std::fs::write(&path, "  \n").unwrap();
    let error = settings.resolve(&env(&[])).unwrap_err().to_string();
    assert!(error.contains("is empty"), "{error}");
}

#[test]
fn bad_settings_are_named() {
    let no_model = ModelSettings::default().resolve(&env(&[])).unwrap_err();
    assert_eq!(
        no_model.to_string(),
        "no model configured: set `model` under [model] in the config file, or TOOLGATE_MODEL"
    );
    let provider = ModelSettings::default()
        .resolve(&env(&[
            ("TOOLGATE_MODEL", "m"),
            ("TOOLGATE_PROVIDER", "gemini"),
        ]))
        .unwrap_err();
    assert!(
        provider
            .to_string()
            .starts_with("unknown provider 'gemini'"),
        "{provider}"
    );
    let timeout = ModelSettings {
        model: Some("m".into()),
        read_timeout_seconds: Some(0.0),
        ..ModelSettings::default()
    };
    assert!(
        timeout
            .resolve(&env(&[]))
            .unwrap_err()
            .to_string()
            .contains("read_timeout_seconds")
    );
    let unknown = toml::from_str::<ModelSettings>("modle = \"typo\"\n").unwrap_err();
    assert!(unknown.to_string().contains("modle"), "{unknown}");
    assert!(toml::from_str::<ModelSettings>("").unwrap().model.is_none());
}

#[test]
fn the_tool_limit_is_openais_by_default_and_can_be_set() {
    let settings = |provider: &str, max_tools: Option<usize>| ModelSettings {
        provider: Some(provider.into()),
        model: Some("m".into()),
        max_tools,
        ..ModelSettings::default()
    };
    let limit = |s: ModelSettings| s.resolve(&env(&[])).unwrap().max_tools;
    assert_eq!(limit(settings("openai", None)), Some(OPENAI_MAX_TOOLS));
    assert_eq!(limit(settings("anthropic", None)), None);
    assert_eq!(limit(settings("openai", Some(500))), Some(500));
    assert_eq!(limit(settings("anthropic", Some(64))), Some(64));
    let zero = settings("openai", Some(0)).resolve(&env(&[])).unwrap_err();
    assert!(zero.to_string().contains("max_tools"), "{zero}");
}

#[test]
fn the_tool_token_limit_has_a_default_for_every_wire_and_can_be_set() {
    let settings = |provider: &str, max_tool_tokens: Option<usize>| ModelSettings {
        provider: Some(provider.into()),
        model: Some("m".into()),
        max_tool_tokens,
        ..ModelSettings::default()
    };
    let limit = |s: ModelSettings| s.resolve(&env(&[])).unwrap().tool_limits().tokens;
    for provider in ["openai", "anthropic"] {
        assert_eq!(
            limit(settings(provider, None)),
            Some(DEFAULT_MAX_TOOL_TOKENS)
        );
        assert_eq!(limit(settings(provider, Some(30_000))), Some(30_000));
    }
    let zero = settings("anthropic", Some(0))
        .resolve(&env(&[]))
        .unwrap_err();
    assert!(zero.to_string().contains("max_tool_tokens"), "{zero}");
}

#[test]
fn the_context_window_is_told_or_known_from_the_model_name_or_the_default() {
    let window = |model: &str, told: Option<usize>| {
        ModelSettings {
            model: Some(model.into()),
            context_window: told,
            ..ModelSettings::default()
        }
        .resolve(&env(&[]))
        .map(|config| config.context_window)
    };
    assert_eq!(window("claude-sonnet-4-5", None), Ok(200_000));
    assert_eq!(window("gpt-4o-mini", None), Ok(128_000));
    assert_eq!(window("openai/gpt-5-mini", None), Ok(400_000));
    assert_eq!(window("llama3.1:8b", None), Ok(DEFAULT_CONTEXT_WINDOW));
    assert_eq!(window("llama3.1:8b", Some(32_768)), Ok(32_768));
    assert_eq!(window("claude-sonnet-4-5", Some(1_000_000)), Ok(1_000_000));
    assert_eq!(
        window("m", Some(10)).unwrap_err().to_string(),
        "context_window must be at least 1000 tokens, not 10"
    );
}

#[test]
fn tool_calls_are_native_unless_the_file_or_the_environment_says_prompted() {
    let settings: ModelSettings =
        toml::from_str("model = \"qwen2.5-coder-1.5b-instruct\"\ntool_calls = \"prompted\"\n")
            .unwrap();
    assert_eq!(
        settings.resolve(&env(&[])).unwrap().tool_calls,
        ToolCalls::Prompted
    );
    assert_eq!(
        settings
            .resolve(&env(&[("TOOLGATE_TOOL_CALLS", "Prompted-Text")]))
            .unwrap()
            .tool_calls,
        ToolCalls::PromptedText
    );
    let native = ModelSettings {
        model: Some("m".into()),
        ..ModelSettings::default()
    };
    assert_eq!(
        native.resolve(&env(&[])).unwrap().tool_calls,
        ToolCalls::Native
    );
    let unknown = native
        .resolve(&env(&[("TOOLGATE_TOOL_CALLS", "json")]))
        .unwrap_err();
    assert_eq!(
        unknown.to_string(),
        "unknown tool_calls 'json': use native, prompted or prompted-text"
    );
}
