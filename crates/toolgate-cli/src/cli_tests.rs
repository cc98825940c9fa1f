//! What the command line refuses before anything runs.

use clap::Parser;

use super::Cli;

/// Parses `toolgate` with `args`; the error's kind when it is refused.
fn parse(args: &[&str]) -> Result<(), clap::error::ErrorKind> {
    let argv = std::iter::once("toolgate").chain(args.iter().copied());
    Cli::try_parse_from(argv)
        .map(drop)
        .map_err(|error| error.kind())
}

// `requires` alone lets them through: clap drops a requirement on an
// argument that conflicts with one given (`--live` with `--dataset`).
#[test]
fn an_option_of_another_eval_mode_is_refused_not_ignored() {
    use clap::error::ErrorKind::ArgumentConflict;
    for live_only in [
        &["--base-url", "http://127.0.0.1:8077/v1"][..],
        &["--policy", "search"],
        &["--tasks", "5"],
        &["--skip", "5"],
        &["--time-limit", "300"],
    ] {
        let args = [&["eval", "--dataset", "data"][..], live_only].concat();
        assert_eq!(parse(&args), Err(ArgumentConflict), "{args:?}");
        let args = [&["eval", "--replay", "data"][..], live_only].concat();
        assert_eq!(parse(&args), Err(ArgumentConflict), "{args:?}");
        let args = [&["eval", "--live", "data"][..], live_only].concat();
        assert_eq!(parse(&args), Ok(()), "{args:?}");
    }
    let args = ["eval", "--live", "data", "--budget", "4096"];
    assert_eq!(parse(&args), Err(ArgumentConflict));
    assert_eq!(parse(&["eval", "--dataset", "data"]), Ok(()));
}
