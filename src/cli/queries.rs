//! `sluice queries [PATHS…]`: list the queries Sluice reads from application code.

use crate::error::Result;
use crate::queries::listing;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub struct QueriesArgs {
    /// Files or directories to read (default: the working directory).
    pub paths: Vec<PathBuf>,
    /// A table for people, or JSON (every query's full SQL and whether Sluice parses it).
    #[arg(long, value_enum, default_value_t = ListFormat::Table)]
    pub format: ListFormat,
    /// Also read the files .gitignore names (a repository's tracked files are always read).
    #[arg(long)]
    pub no_ignore: bool,
    /// A function or method of the project's own whose first argument is SQL (`rawQuery`,
    /// `db.rawQuery`), as `[queries] calls` names them; repeatable.
    #[arg(long = "call", value_name = "FUNCTION")]
    pub calls: Vec<String>,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ListFormat {
    Table,
    Json,
}

pub fn run(args: QueriesArgs) -> Result<ExitCode> {
    let paths = if args.paths.is_empty() { vec![PathBuf::from(".")] } else { args.paths };
    if let Some(problem) = args.calls.iter().find_map(|c| crate::config::call_problem(c)) {
        return Err(crate::error::Error::Usage(format!("--call: {problem}")));
    }
    let found = listing::scan(&paths, args.no_ignore, &crate::queries::code::ProjectCalls::new(args.calls))?;
    super::write_stdout(|out| match args.format {
        ListFormat::Table => listing::write_table(&found, out),
        ListFormat::Json => listing::write_json(&found, out),
    })?;
    Ok(ExitCode::SUCCESS)
}
