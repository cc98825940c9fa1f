//! The `toolgate` binary: parses arguments and dispatches; each command lives
//! in `commands/`. This is the only crate that prints.

mod cli;
mod commands;
mod output;
mod settings;
mod store;

use std::io::Write;
use std::process::ExitCode;

use clap::Parser;

use crate::cli::{Cli, Command};

/// jemalloc, with its background thread, hands freed memory back to the
/// system within seconds. The gateway frees in bursts: HTTP sessions that
/// leave memory after a wave of clients release ~75 KB each, which the
/// system allocator keeps resident, so a gateway stayed at its peak.
#[cfg(not(target_env = "msvc"))]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Catalog(args) => {
            let stdout = std::io::stdout();
            let mut out = stdout.lock();
            commands::catalog::run(&args, &mut out).and_then(|()| Ok(out.flush()?))
        }
        // Never hold stdout here: with --stdio it is the protocol, written
        // by the runtime's own tasks.
        Command::Serve(args) => commands::serve::run(*args),
        // Streams the answer to stdout as it arrives: no lock held here either.
        Command::Chat(args) => commands::chat::run(*args),
        Command::Route(args) => commands::route::run(&args),
        Command::Eval(args) => commands::eval::run(&args),
        Command::Migrate(args) => commands::migrate::run(&args),
        Command::Token(args) => {
            let stdout = std::io::stdout();
            let mut out = stdout.lock();
            commands::token::run(&args, &mut out).and_then(|()| Ok(out.flush()?))
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            // A closed pipe (`toolgate catalog | head`) is not an error worth reporting.
            if error
                .downcast_ref::<std::io::Error>()
                .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
            {
                return ExitCode::SUCCESS;
            }
            let _ = writeln!(std::io::stderr(), "error: {error:#}");
            ExitCode::FAILURE
        }
    }
}
