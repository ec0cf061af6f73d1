//! The binaries' `main`: `kapply`, and `kubectl-kapply`, the same program
//! under the name kubectl looks for on the PATH to run `kubectl kapply ...`
//! (as krew plugins are found).

use crate::cli::{self, Cli, Command};
use anyhow::Context;
use clap::{CommandFactory, FromArgMatches};
use std::process::ExitCode;

/// How the program was started: as a kubectl plugin when its file name is
/// `kubectl-kapply` (kubectl runs plugins by their path), so that usage and
/// help say `kubectl kapply`.
pub fn bin_name(argv0: Option<&std::ffi::OsStr>) -> &'static str {
    let file = argv0
        .and_then(|a| std::path::Path::new(a).file_name())
        .and_then(|f| f.to_str())
        .unwrap_or("kapply");
    if file.starts_with("kubectl-kapply") {
        "kubectl kapply"
    } else {
        "kapply"
    }
}

/// Parse the arguments, then run the TUI or a command.
pub fn main() -> ExitCode {
    let bin = bin_name(std::env::args_os().next().as_deref());
    let matches = Cli::command().bin_name(bin).get_matches();
    let args = match Cli::from_arg_matches(&matches) {
        Ok(a) => a,
        Err(e) => e.exit(),
    };
    if let Some(Command::Completion(a)) = &args.command {
        // Completes the `kapply` command (kubectl completes plugins itself).
        return completion(a.shell);
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::from(2);
        }
    };
    let result = runtime.block_on(async move {
        match args.command {
            None => cli::tui(args.tui).await,
            Some(Command::Tui(a)) => cli::tui(a).await,
            Some(Command::Diff(a)) => cli::diff(a).await,
            Some(Command::Plan(a)) => cli::plan(a).await,
            Some(Command::Apply(a)) => cli::apply(a).await,
            Some(Command::Delete(a)) => cli::delete(a).await,
            Some(Command::Export(a)) => cli::export(a).await,
            Some(Command::Release(a)) => cli::release(a).await,
            Some(Command::Migrate(a)) => cli::migrate(a).await,
            Some(Command::Demo(a)) => cli::demo(a).await.context("kapply demo"),
            Some(Command::Completion(_)) => Ok(0),
        }
    });
    // Work still under way (the TUI quit while a request or a DNS lookup
    // was out) must not hold the exit up: the runtime is not waited for.
    runtime.shutdown_background();
    match result {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            // Errors quote manifests and servers: no control character
            // reaches the terminal.
            eprintln!("{}", crate::text::escape_controls(&format!("error: {e:#}")));
            // kubectl diff's convention: >1 is an error.
            ExitCode::from(2)
        }
    }
}

/// `kapply completion SHELL`: the script for the `kapply` command. A closed
/// pipe (`| head`) is not an error.
fn completion(shell: clap_complete::Shell) -> ExitCode {
    use std::io::Write as _;
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "kapply", &mut script);
    match std::io::stdout().write_all(&script) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            eprintln!("error: writing the completion script: {e}");
            ExitCode::from(2)
        }
        _ => ExitCode::SUCCESS,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsStr;

    #[test]
    fn plugin_name_from_argv0() {
        assert_eq!(
            bin_name(Some(OsStr::new("/usr/local/bin/kubectl-kapply"))),
            "kubectl kapply"
        );
        assert_eq!(
            bin_name(Some(OsStr::new("kubectl-kapply"))),
            "kubectl kapply"
        );
        assert_eq!(
            bin_name(Some(OsStr::new("./target/debug/kapply"))),
            "kapply"
        );
        assert_eq!(bin_name(None), "kapply");
    }
}
