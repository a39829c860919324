//! The command line. The parser and the dispatch are `command`; each subcommand lives in its
//! own file; this module holds what the subcommands share (the project, output and cache
//! arguments, stdout). The library does the work.

mod check;
pub mod command;
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
pub mod synopsis;

use crate::config;
use crate::error::Error;
use crate::finding::Report;
use crate::freeze::cache::CalendarCache;
use crate::report::{self, FailOn, Format, RenderOptions};
use crate::schema::cache::SchemaCache;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

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
        let mut loaded = config::load(self.config.as_deref(), cwd, &crate::lint::rule_level_problem)?;
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
    #[arg(long, value_enum, value_name = "SEVERITY", default_value_t = FailOn::Error)]
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

    pub fn scan_cache(&self) -> crate::queries::code_scan::ScanCache {
        if self.no_cache {
            crate::queries::code_scan::ScanCache::disabled()
        } else {
            crate::queries::code_scan::ScanCache::in_cache_dir(self.cache_dir.as_deref())
        }
    }

    /// The findings of unchanged queries, for the project `identity` names.
    pub fn query_cache(&self, identity: &[&[u8]]) -> crate::lint::query_cache::QueryCache {
        if self.no_cache {
            crate::lint::query_cache::QueryCache::disabled()
        } else {
            crate::lint::query_cache::QueryCache::in_cache_dir(self.cache_dir.as_deref(), identity)
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

/// Colour only on a terminal that shows it: not with `NO_COLOR` set, nor with `TERM=dumb`
/// (Emacs shells, some CI logs), nor into a pipe or a file.
pub fn stdout_color() -> bool {
    color_allowed(std::env::var_os("NO_COLOR").as_deref(), std::env::var_os("TERM").as_deref())
        && std::io::stdout().is_terminal()
}

fn color_allowed(no_color: Option<&std::ffi::OsStr>, term: Option<&std::ffi::OsStr>) -> bool {
    no_color.is_none_or(|v| v.is_empty()) && term.is_none_or(|t| t != "dumb")
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

#[cfg(test)]
mod tests {
    use super::color_allowed;
    use std::ffi::OsStr;

    #[test]
    fn no_color_and_a_dumb_terminal_turn_colour_off() {
        assert!(color_allowed(None, Some(OsStr::new("xterm-256color"))));
        assert!(color_allowed(Some(OsStr::new("")), None));
        assert!(!color_allowed(Some(OsStr::new("1")), Some(OsStr::new("xterm"))));
        assert!(!color_allowed(None, Some(OsStr::new("dumb"))));
    }
}
