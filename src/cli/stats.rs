//! `sluice stats`: the read-only queries whose `psql --csv` output Sluice reads as production
//! evidence — table sizes (`policies/tables.toml`), column statistics (`[plan] stats`, the
//! fixtures' shape), the workload (`[queries] workload`) and index usage
//! (`[policies] index_usage`).

use crate::error::Result;
use std::process::ExitCode;

#[derive(clap::Subcommand, Debug)]
pub enum StatsCommand {
    /// Print the query that exports table sizes (reltuples, relpages from pg_class) as CSV.
    Query,
    /// Print the query that exports the workload (calls and times per statement, from
    /// pg_stat_statements) as CSV.
    Workload,
    /// Print the query that exports index usage (scans per index since the statistics reset,
    /// from pg_stat_user_indexes) as CSV.
    Indexes,
    /// Print the query that exports column statistics (pg_stats, pg_stats_ext) and table figures
    /// (reltuples, relpages, relallvisible) as CSV, for `[plan] stats`.
    Columns,
}

pub fn run(command: StatsCommand) -> Result<ExitCode> {
    let query = match command {
        StatsCommand::Query => crate::policy::tables::STATS_QUERY,
        StatsCommand::Workload => crate::queries::workload::EXPORT_QUERY,
        StatsCommand::Indexes => crate::policy::index_usage::EXPORT_QUERY,
        StatsCommand::Columns => crate::plan::snapshot::COLUMNS_QUERY,
    };
    super::print_stdout(query)?;
    Ok(ExitCode::SUCCESS)
}
