//! `sluice stats query`: the catalog query whose CSV output is the table-size snapshot
//! `policies/tables.toml` can point at; `sluice stats columns`: the one whose output is the
//! column-statistics snapshot `[plan] stats` builds fixtures from.

use crate::error::Result;
use crate::policy::tables::STATS_QUERY;
use std::process::ExitCode;

#[derive(clap::Subcommand, Debug)]
pub enum StatsCommand {
    /// Print the query that exports table sizes (reltuples, relpages from pg_class) as CSV.
    Query,
    /// Print the query that exports column statistics (pg_stats, pg_stats_ext) and table figures
    /// (reltuples, relpages, relallvisible) as CSV, for `[plan] stats`.
    Columns,
}

pub fn run(command: StatsCommand) -> Result<ExitCode> {
    match command {
        StatsCommand::Query => super::print_stdout(STATS_QUERY)?,
        StatsCommand::Columns => super::print_stdout(crate::plan::snapshot::COLUMNS_QUERY)?,
    }
    Ok(ExitCode::SUCCESS)
}
