//! Argument parsing and dispatch. Each subcommand lives in its own file; the library does the work.

mod check;
mod completions;
mod freeze;
mod init;
mod lint;
mod man;
mod plan;
mod queries;
mod reviewers;
mod rules;
mod stats;

use crate::config;
use crate::error::Error;
use crate::finding::Report;
use crate::freeze::cache::CalendarCache;
use crate::report::{self, FailOn, Format, RenderOptions};
use crate::schema::cache::SchemaCache;
use clap::{Parser, Subcommand};
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
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

/// Where the project is: `sluice.toml` and the directories it names, overridable by flags.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct ProjectArgs {
    /// Configuration file (default: the nearest sluice.toml, walking up from the working directory).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Migrations directory (overrides [migrations] dir).
    #[arg(long, value_name = "DIR")]
    pub migrations: Option<PathBuf>,
    /// Query directory (overrides [queries] dirs; repeatable).
    #[arg(long, value_name = "DIR")]
    pub queries: Vec<PathBuf>,
    /// Policies directory (overrides [policies] dir).
    #[arg(long, value_name = "DIR")]
    pub policies: Option<PathBuf>,
}

impl ProjectArgs {
    /// Loads the configuration and applies the flags (their paths are relative to `cwd`).
    pub fn load(&self, cwd: &Path) -> Result<config::Loaded, Error> {
        let mut loaded = config::load(self.config.as_deref(), cwd)?;
        let absolute = |p: &PathBuf| cwd.join(p);
        let queries: Vec<PathBuf> = self.queries.iter().map(absolute).collect();
        loaded.config.override_dirs(
            self.migrations.as_ref().map(absolute).as_ref(),
            &queries,
            self.policies.as_ref().map(absolute).as_ref(),
        );
        Ok(loaded)
    }
}

/// Whether `DATABASE_URL` is set: `check` and `plan` never use it (it names the application's
/// own database in many CI setups), and say so.
pub fn generic_database_url_set() -> bool {
    std::env::var_os("DATABASE_URL").is_some_and(|v| !v.is_empty())
}

pub fn current_dir() -> Result<PathBuf, Error> {
    std::env::current_dir().map_err(|e| Error::Other(format!("cannot read the working directory: {e}")))
}

/// Output options shared by the commands that print findings.
#[derive(clap::Args, Debug, Clone)]
pub struct OutputArgs {
    /// How to print the findings: a table with source excerpts for people, or a format for CI.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// Show the facts each finding used (index, table size, transaction mode).
    #[arg(long)]
    pub explain: bool,
    /// The lowest severity that makes the command exit 1.
    #[arg(long, value_enum, default_value_t = FailOn::Error)]
    pub fail_on: FailOn,
    /// Also write the report in another format to a file, from the same run (repeatable):
    /// `--output sarif=sluice.sarif --output markdown=report.md`.
    #[arg(long, value_name = "FORMAT=FILE", value_parser = parse_output)]
    pub output: Vec<(Format, PathBuf)>,
}

fn parse_output(value: &str) -> Result<(Format, PathBuf), String> {
    let (format, file) = value.split_once('=').ok_or("expected FORMAT=FILE, e.g. sarif=sluice.sarif")?;
    let format = <Format as clap::ValueEnum>::from_str(format, true)
        .map_err(|_| format!("unknown format `{format}`; one of table, json, sarif, github, gitlab, markdown"))?;
    if file.is_empty() {
        return Err("expected FORMAT=FILE with a file name".into());
    }
    Ok((format, PathBuf::from(file)))
}

/// Sluice's cache: snapshots of the replayed schema (so linting the newest migration replays only
/// what changed) and validated freeze calendars (so an unchanged calendar is not parsed again).
#[derive(clap::Args, Debug, Clone, Default)]
pub struct CacheArgs {
    /// Work from scratch: neither read nor write the cache (schema snapshots, validated freeze
    /// calendars).
    #[arg(long)]
    pub no_cache: bool,
    /// Where cached schemas, validated calendars and `sluice plan`'s fixtures live [default:
    /// $SLUICE_CACHE_DIR, else $XDG_CACHE_HOME/sluice or ~/.cache/sluice; /var/tmp/sluice as root].
    /// Safe to delete.
    #[arg(long, value_name = "DIR")]
    pub cache_dir: Option<PathBuf>,
}

impl CacheArgs {
    pub fn schema_cache(&self) -> SchemaCache {
        if self.no_cache {
            SchemaCache::disabled()
        } else {
            SchemaCache::in_cache_dir(self.cache_dir.as_deref())
        }
    }

    pub fn calendar_cache(&self) -> CalendarCache {
        if self.no_cache {
            CalendarCache::disabled()
        } else {
            CalendarCache::in_cache_dir(self.cache_dir.as_deref())
        }
    }
}

impl OutputArgs {
    /// Writes the `--output` files, prints the report and returns the gate's exit code:
    /// 1 when it fails, else 0.
    pub fn emit(&self, report: &Report) -> Result<ExitCode, Error> {
        for (format, path) in &self.output {
            let options = RenderOptions { color: false, explain: self.explain, fail_on: self.fail_on };
            std::fs::File::create(path)
                .and_then(|file| {
                    let mut file = std::io::BufWriter::new(file);
                    report::write(report, *format, &options, &mut file)?;
                    file.flush()
                })
                .map_err(|e| Error::write(path, e))?;
        }
        let options = RenderOptions { color: stdout_color(), explain: self.explain, fail_on: self.fail_on };
        write_stdout(|out| report::write(report, self.format, &options, out))?;
        Ok(if self.fail_on.fails(report) { ExitCode::from(1) } else { ExitCode::SUCCESS })
    }
}

pub fn stdout_color() -> bool {
    std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()) && std::io::stdout().is_terminal()
}

/// Writes to stdout; a closed pipe (`sluice … | head`) is not an error.
pub fn print_stdout(text: &str) -> Result<(), Error> {
    write_stdout(|out| out.write_all(text.as_bytes()))
}

/// Runs `write` on stdout; a closed pipe is not an error.
fn write_stdout(write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>) -> Result<(), Error> {
    // Stdout flushes at every line: a report of megabytes took thousands of system calls.
    let mut stdout = std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
    match write(&mut stdout).and_then(|_| stdout.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(Error::Other(format!("cannot write output: {e}"))),
        _ => Ok(()),
    }
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
        Command::Completions(args) => completions::run(args),
        Command::Man(args) => man::run(args),
        Command::Reviewers(args) => reviewers::run(args),
        Command::Queries(args) => queries::run(args),
    }
}
