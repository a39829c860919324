//! Argument parsing and dispatch. Each subcommand lives in its own file; the library does the work.

mod check;
mod freeze;
mod lint;
mod plan;
mod rules;

use crate::error::Error;
use crate::finding::Report;
use crate::report::{self, FailOn, Format, RenderOptions};
use clap::{Parser, Subcommand};
use std::io::{IsTerminal, Write};
use std::process::ExitCode;

#[derive(Parser, Debug)]
#[command(name = "sluice", version, about = "The deployment-safety and migration-review gate", long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Lint migrations and query files against the schema their history builds.
    Lint(lint::LintArgs),
    /// The pull-request gate: review what changed between two revisions.
    Check(check::CheckArgs),
    /// List the rules, or print one rule's documentation.
    Rules(rules::RulesArgs),
    /// The change-freeze calendar: may I deploy now?
    #[command(subcommand)]
    Freeze(freeze::FreezeCommand),
    /// Compare EXPLAIN plans on production-scale fixtures.
    Plan(plan::PlanArgs),
}

/// Output options shared by the commands that print findings.
#[derive(clap::Args, Debug, Clone)]
pub struct OutputArgs {
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// Show the facts each finding used (index, table size, transaction mode).
    #[arg(long)]
    pub explain: bool,
    /// The lowest severity that makes the command exit 1.
    #[arg(long, value_enum, default_value_t = FailOn::Error)]
    pub fail_on: FailOn,
}

impl OutputArgs {
    /// Prints the report and returns the gate's exit code: 1 when it fails, else 0.
    pub fn emit(&self, report: &Report) -> Result<ExitCode, Error> {
        let options = RenderOptions {
            color: stdout_color(),
            explain: self.explain,
        };
        let text = report::render(report, self.format, &options);
        print_stdout(&text)?;
        Ok(if self.fail_on.fails(report) {
            ExitCode::from(1)
        } else {
            ExitCode::SUCCESS
        })
    }
}

pub fn stdout_color() -> bool {
    std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()) && std::io::stdout().is_terminal()
}

/// Writes to stdout; a closed pipe (`sluice … | head`) is not an error.
pub fn print_stdout(text: &str) -> Result<(), Error> {
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(text.as_bytes()).and_then(|_| stdout.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(Error::Other(format!("cannot write output: {e}"))),
        _ => Ok(()),
    }
}

/// The binary's entry point: parse, run, turn errors into exit code 2.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Lint(args) => lint::run(args),
        Command::Check(args) => check::run(args),
        Command::Rules(args) => rules::run(args),
        Command::Freeze(command) => freeze::run(command),
        Command::Plan(args) => plan::run(args),
    };
    match result {
        Ok(code) => code,
        Err(error) => {
            eprintln!("sluice: error: {error}");
            ExitCode::from(2)
        }
    }
}
