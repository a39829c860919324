//! `sluice`'s subcommands, parsed by clap from these definitions, and the dispatch to them.

use super::{check, completions, freeze, init, lint, man, plan, queries, reviewers, rules, stats};
use crate::error::Error;
use clap::{CommandFactory, Parser, Subcommand};
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
    Check(Box<check::CheckArgs>),
    /// List the rules, or print one rule's documentation.
    Rules(rules::RulesArgs),
    /// The change-freeze calendar: may I deploy now?
    #[command(subcommand)]
    Freeze(freeze::FreezeCommand),
    /// Compare EXPLAIN plans on production-scale fixtures.
    Plan(Box<plan::PlanArgs>),
    /// Production table sizes for the lock and rewrite rules.
    #[command(subcommand)]
    Stats(stats::StatsCommand),
    /// Set Sluice up in this repository: write sluice.toml and policy skeletons.
    Init(init::InitArgs),
    /// Print a shell completion script (bash, zsh, fish, powershell, elvish).
    Completions(completions::CompletionsArgs),
    /// Print the man page (or write one per command with --out-dir).
    Man(man::ManArgs),
    /// List the domain reviewers the base revision's identity.toml names (for CI to resolve teams).
    Reviewers(reviewers::ReviewersArgs),
    /// List the SQL Sluice reads from application code (database calls, mappers, sqlx data).
    Queries(queries::QueriesArgs),
}

/// The binary's entry point: parse, run, turn errors into exit code 2. The work runs on
/// threads with the stack the SQL depth limits are sized for ([`crate::sql::depth::STACK_BYTES`]).
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let outcome = crate::sql::depth::configure_thread_pool()
        .map_err(|e| {
            Error::Other(format!(
                "cannot start the worker threads ({e}): this process may not start more threads or reserve their \
                 stacks (a limit on memory or threads). No verdict."
            ))
        })
        .and_then(|()| crate::sql::depth::with_stack(|| run(cli)));
    match outcome {
        Ok(code) => code,
        Err(error) => {
            eprintln!("sluice: error: {error}");
            ExitCode::from(2)
        }
    }
}

fn run(cli: Cli) -> Result<ExitCode, Error> {
    match cli.command {
        Command::Lint(args) => lint::run(args),
        Command::Check(args) => check::run(*args),
        Command::Rules(args) => rules::run(args),
        Command::Freeze(command) => freeze::run(command),
        Command::Plan(args) => plan::run(*args),
        Command::Stats(command) => stats::run(command),
        Command::Init(args) => init::run(args),
        Command::Completions(args) => completions::run(args, Cli::command()),
        Command::Man(args) => man::run(args, Cli::command()),
        Command::Reviewers(args) => reviewers::run(args),
        Command::Queries(args) => queries::run(args),
    }
}
