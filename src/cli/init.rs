//! `sluice init`: set Sluice up in an existing repository (the work is in `crate::init`).

use crate::config::Layout;
use crate::error::Result;
use crate::init::{self, discover::display, Options, Outcome};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub struct InitArgs {
    /// Migrations directory (default: detected; several candidates are listed and one must be picked).
    #[arg(long, value_name = "DIR")]
    pub migrations: Option<PathBuf>,
    /// The migration tool that runs them (goose, sqlx, flyway, …; default: detected as `sluice lint`
    /// would, which asks for this when the files fit two tools).
    #[arg(long, value_name = "TOOL", value_parser = parse_layout, default_value = "auto")]
    pub layout: Layout,
    /// Query directory holding the SQL the application runs (default: detected among queries/,
    /// sql/, db/queries/; repeatable).
    #[arg(long, value_name = "DIR")]
    pub queries: Vec<PathBuf>,
    /// Directory for identity.toml and tables.toml.
    #[arg(long, value_name = "DIR", default_value = "policies")]
    pub policies: PathBuf,
    /// The PostgreSQL major version production runs (default: 15).
    #[arg(long, value_name = "VERSION")]
    pub postgres_version: Option<u32>,
    /// Overwrite sluice.toml and the policy files when they exist.
    #[arg(long)]
    pub force: bool,
}

pub fn run(args: InitArgs) -> Result<ExitCode> {
    let options = Options {
        root: super::current_dir()?,
        migrations: args.migrations,
        layout: args.layout,
        queries: args.queries,
        policies: args.policies,
        postgres_version: args.postgres_version,
        force: args.force,
    };
    let outcome = init::init(&options)?;
    for warning in &outcome.warnings {
        eprintln!("sluice: warning: {warning}");
    }
    super::print_stdout(&summary(&outcome))?;
    Ok(ExitCode::SUCCESS)
}

/// A `layout` value as sluice.toml spells it.
fn parse_layout(value: &str) -> Result<Layout, String> {
    toml::Value::String(value.to_string()).try_into().map_err(|e: toml::de::Error| e.message().to_string())
}

fn summary(outcome: &Outcome) -> String {
    let written: Vec<String> = outcome.written.iter().map(|p| display(p)).collect();
    let queries = match outcome.queries.as_slice() {
        [] => "none found (set [queries] dirs)".to_string(),
        dirs => dirs.iter().map(|d| format!("{}/", display(d))).collect::<Vec<_>>().join(", "),
    };
    let found = |sources: &[crate::init::discover::FoundSource], what: &str| match sources {
        [] => format!("none found (set [queries] {what})"),
        found => found
            .iter()
            .map(|f| format!("{} ({} quer(ies))", display(&f.path), f.queries))
            .collect::<Vec<_>>()
            .join(", "),
    };
    let (sqlc, code) = (found(&outcome.sqlc, "sqlc"), found(&outcome.code, "code"));
    let policies = display(&outcome.policies);
    format!(
        "\
Wrote {written}.
  migrations: {migrations}/ ({summary})
  queries:    {queries}
  sqlc:       {sqlc}
  code:       {code}

Next steps:
  1. Declare what identifies a row in {policies}/identity.toml: {tables} table(s) with a primary key
     or unique constraint are listed with `identity = []` to fill in.
  2. Export production table sizes so lock findings match reality:
       sluice stats query | psql \"$DATABASE_URL\" --csv > {policies}/table-stats.csv
     then uncomment `stats = \"table-stats.csv\"` in {policies}/tables.toml.
  3. Run `sluice lint`, commit, and make `sluice check` a required check on pull requests
     (the GitHub Action and pre-commit hook: {docs}#adopt-it-in-your-repository).
",
        written = written.join(", "),
        migrations = display(&outcome.migrations.path),
        summary = outcome.migrations.summary(),
        tables = outcome.keyed_tables,
        docs = env!("CARGO_PKG_REPOSITORY"),
    )
}
