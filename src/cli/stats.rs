//! `sluice stats query`: the catalog query whose CSV output is the table-size snapshot
//! `policies/tables.toml` can point at.

use crate::error::Result;
use crate::policy::tables::STATS_QUERY;
use std::process::ExitCode;

#[derive(clap::Subcommand, Debug)]
pub enum StatsCommand {
    /// Print the query that exports table sizes (reltuples, relpages from pg_class) as CSV.
    Query,
}

pub fn run(command: StatsCommand) -> Result<ExitCode> {
    match command {
        StatsCommand::Query => super::print_stdout(STATS_QUERY)?,
    }
    Ok(ExitCode::SUCCESS)
}
