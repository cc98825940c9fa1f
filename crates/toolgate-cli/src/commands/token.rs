//! `toolgate token create NAME`: a new bearer token for a named client,
//! shown once, with the `[clients.NAME]` table that lets it in.

use std::io::Write;

use toolgate_mcp::{ClientName, TokenHash};

use crate::cli::{TokenArgs, TokenCommand};

/// Random bytes in a token.
const TOKEN_BYTES: usize = 32;

pub(crate) fn run(args: &TokenArgs, out: &mut impl Write) -> anyhow::Result<()> {
    match &args.command {
        TokenCommand::Create { name } => create(name, out),
    }
}

fn create(name: &str, out: &mut impl Write) -> anyhow::Result<()> {
    let name = ClientName::new(name)?;
    let mut bytes = [0u8; TOKEN_BYTES];
    getrandom::fill(&mut bytes)
        .map_err(|error| anyhow::anyhow!("reading random bytes for the token: {error}"))?;
    let token: String = std::iter::once("tg_".to_owned())
        .chain(bytes.iter().map(|byte| format!("{byte:02x}")))
        .collect();
    let hash = TokenHash::of(&token).to_hex();
    write!(
        out,
        "Token for client '{name}' (shown only now: hand it to the client, keep it secret):\n\n\
         {token}\n\n\
         Let it in: add this to toolgate.toml and restart `toolgate serve`.\n\n\
         [clients.{name}]\n\
         token_sha256 = \"{hash}\"\n"
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_token_is_printed_with_the_hash_that_admits_it() {
        let mut out = Vec::new();
        create("ci-bot", &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        let token = text
            .lines()
            .find(|line| line.starts_with("tg_"))
            .expect("no token");
        assert_eq!(token.len(), 3 + 2 * TOKEN_BYTES);
        let hash = TokenHash::of(token).to_hex();
        assert!(
            text.contains(&format!("[clients.ci-bot]\ntoken_sha256 = \"{hash}\"\n")),
            "{text}"
        );
        // A second token is another.
        let mut again = Vec::new();
        create("ci-bot", &mut again).unwrap();
        assert!(!String::from_utf8(again).unwrap().contains(token));
    }

    #[test]
    fn a_bad_name_is_refused_before_any_token_is_made() {
        let mut out = Vec::new();
        let error = create("no spaces", &mut out).unwrap_err().to_string();
        assert!(error.contains("client name \"no spaces\""), "{error}");
        assert!(out.is_empty());
    }
}
