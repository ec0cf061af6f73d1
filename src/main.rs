//! The kapply binary: parse arguments, then run the TUI or a command.

use anyhow::Context;
use clap::Parser;
use kapply::cli::{self, Cli, Command};
use std::process::ExitCode;

fn main() -> ExitCode {
    let args = Cli::parse();
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
            Some(Command::Demo(a)) => cli::demo(a).await.context("kapply demo"),
        }
    });
    match result {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            // Errors quote manifests and servers: no control character
            // reaches the terminal.
            eprintln!(
                "{}",
                kapply::text::escape_controls(&format!("error: {e:#}"))
            );
            // kubectl diff's convention: >1 is an error.
            ExitCode::from(2)
        }
    }
}
