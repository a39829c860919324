//! `sluice plan`: EXPLAIN plan comparison on a production-scale fixture.

use crate::cli::OutputArgs;
use crate::config::{self, Loaded};
use crate::error::{Error, IoAction, Result};
use crate::git;
use crate::plan::snapshot::Snapshot;
use crate::plan::{self, capacity::Workload, sources, MigrationSql, PlanOptions, QuerySource, ScaleSpec};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

#[derive(clap::Args, Debug)]
pub struct PlanArgs {
    /// Base git revision; the merge base of the head with it is compared (default: origin/main, else main, else
    /// master), like `sluice check`.
    #[arg(long, value_name = "REV", conflicts_with = "base_dir")]
    pub base: Option<String>,
    /// Head git revision (default: the working tree; HEAD when CI is set).
    #[arg(long, value_name = "REV", conflicts_with = "head_dir")]
    pub head: Option<String>,
    /// Base migrations directory, instead of a git revision.
    #[arg(long, value_name = "DIR", requires = "head_dir")]
    pub base_dir: Option<PathBuf>,
    /// Head migrations directory, instead of a git revision.
    #[arg(long, value_name = "DIR", requires = "base_dir")]
    pub head_dir: Option<PathBuf>,
    /// The scale spec (default: `[plan] scale` in sluice.toml).
    #[arg(long, value_name = "FILE")]
    pub scale: Option<PathBuf>,
    /// A production statistics snapshot (`sluice stats columns | psql --csv`): tables and columns
    /// the scale spec does not name follow it (default: `[plan] stats`).
    #[arg(long, value_name = "FILE")]
    pub stats: Option<PathBuf>,
    /// How the fixture is filled: generated rows, or production's statistics installed
    /// (needs --stats; --analyze falls back to generated rows). Default: `[plan] fixture`, else generated.
    #[arg(long, value_enum, value_name = "KIND")]
    pub fixture: Option<config::FixtureKind>,
    /// Query directory or file (repeatable; default: `[queries] dirs`).
    #[arg(long, value_name = "DIR")]
    pub queries: Vec<PathBuf>,
    /// Pool size and peak rates for `pool-capacity` (default: workload.toml in the policies directory).
    #[arg(long, value_name = "FILE")]
    pub workload: Option<PathBuf>,
    /// Also run each query (EXPLAIN ANALYZE, rolled back) with sample parameters.
    #[arg(long)]
    pub analyze: bool,
    /// Runs per query and side under --analyze; the median is reported.
    #[arg(long, value_name = "N", default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub repeat: u32,
    /// A PostgreSQL server to use instead of an ephemeral one; Sluice works only in sluice_* databases it creates.
    /// A postgresql:// URI or key=value string; sslmode (disable, prefer, require, verify-ca, verify-full) and
    /// sslrootcert are honoured as libpq does. A generic DATABASE_URL is never used (the report says it was ignored).
    #[arg(long, env = "SLUICE_DATABASE_URL", value_name = "URL", hide_env_values = true)]
    pub database_url: Option<String>,
    /// Keep the databases this run created (printed at the end).
    #[arg(long)]
    pub keep: bool,
    /// Use a throwaway PostgreSQL cluster instead of the cached one.
    #[arg(long)]
    pub no_cache: bool,
    /// Where the ephemeral cluster and its cached fixtures live (default: $SLUICE_CACHE_DIR, else ~/.cache/sluice; /var/tmp/sluice as root).
    #[arg(long, value_name = "DIR")]
    pub cache_dir: Option<PathBuf>,
    /// Seconds each planning or analysing statement may take before it becomes a finding.
    #[arg(long, value_name = "SECONDS", default_value_t = 30)]
    pub statement_timeout: u64,
    /// Rows from which a sequential scan is reported (overrides `[plan] seq_scan_rows`).
    #[arg(long, value_name = "ROWS")]
    pub seq_scan_rows: Option<u64>,
    /// sluice.toml to use instead of the nearest one.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    #[command(flatten)]
    pub output: OutputArgs,
}

pub fn run(args: PlanArgs) -> Result<ExitCode> {
    let cwd = std::env::current_dir().map_err(|e| Error::Other(format!("cannot read the working directory: {e}")))?;
    let loaded = config::load(args.config.as_deref(), &cwd, &crate::lint::rule_level_problem)?;
    let (options, compared) = options(&args, &loaded, &cwd)?;
    let mut report = plan::compare(&options)?;
    report.notes.insert(0, compared);
    if options.server.database_url.is_none() && super::generic_database_url_set() {
        report.notes.insert(1, crate::check::ignored_database_url_note());
    }
    args.output.emit(&report)
}

/// The comparison to run and a note saying what it compares.
fn options(args: &PlanArgs, loaded: &config::Loaded, cwd: &Path) -> Result<(PlanOptions, String)> {
    let stats = match (&args.stats, &loaded.config.plan.stats) {
        (Some(s), _) => Some(cwd.join(s)),
        (None, Some(s)) => Some(loaded.resolve(s)),
        (None, None) => None,
    };
    let snapshot = stats.as_deref().map(Snapshot::load).transpose()?;
    let spec = match (&args.scale, &loaded.config.plan.scale) {
        (Some(s), _) => ScaleSpec::load(&cwd.join(s))?,
        (None, Some(s)) => ScaleSpec::load(&loaded.resolve(s))?,
        (None, None) => match &stats {
            Some(path) => ScaleSpec::empty(path),
            None => {
                return Err(Error::Usage(
                    "no scale spec: pass --scale FILE or --stats FILE, or set `[plan] scale` or `[plan] stats` in sluice.toml"
                        .into(),
                ))
            }
        },
    };
    let mode = match args.fixture.or(loaded.config.plan.fixture) {
        Some(config::FixtureKind::Statistics) if snapshot.is_none() => {
            return Err(Error::Usage(
                "a statistics fixture installs production's statistics: pass --stats FILE or set `[plan] stats`".into(),
            ))
        }
        Some(config::FixtureKind::Statistics) => plan::fixture::Mode::Statistics,
        _ => plan::fixture::Mode::Generated,
    };
    let query_paths: Vec<PathBuf> =
        if args.queries.is_empty() { loaded.query_dirs() } else { args.queries.iter().map(|q| cwd.join(q)).collect() };
    let (root, base, head, queries, compared) = match (&args.base_dir, &args.head_dir) {
        (Some(b), Some(h)) => {
            let root = if loaded.file.is_some() { loaded.root.clone() } else { cwd.to_path_buf() };
            let (base_dir, head_dir) = (cwd.join(b), cwd.join(h));
            let mut queries = Vec::new();
            for path in &query_paths {
                for file in sql_files(path)? {
                    queries.push(QuerySource::load(&root, &file)?);
                }
            }
            let compared = format!("compared the migrations in {} (base) and {} (head)", b.display(), h.display());
            (root, migrations(&base_dir, loaded)?, migrations(&head_dir, loaded)?, queries, compared)
        }
        _ => {
            let repo = git::open(cwd)?;
            let head = git::resolve_head(&repo, args.head.as_deref(), git::in_ci())?;
            let base = git::resolve_base(&repo, args.base.as_deref(), &head)?;
            let sides = sources::from_git(&repo, &git::Side::Rev(base), &head, loaded, &query_paths)?;
            let head_name = match head {
                git::Side::WorkTree => "the working tree".to_string(),
                git::Side::Rev(oid) => oid.to_string()[..10].to_string(),
            };
            let compared = format!(
                "compared the migrations (git) of {} (base) and {head_name} (head): {} and {} migration(s)",
                &base.to_string()[..10],
                sides.base.len(),
                sides.head.len()
            );
            (repo.root().to_path_buf(), sides.base, sides.head, sides.queries, compared)
        }
    };
    if queries.is_empty() {
        return Err(Error::Usage(format!(
            "no query files (*.sql) in {}; pass --queries DIR",
            query_paths.iter().map(|d| d.display().to_string()).collect::<Vec<_>>().join(", ")
        )));
    }
    let workload = match &args.workload {
        Some(w) => Some(Workload::load(&cwd.join(w))?),
        None => {
            let default = loaded.policies_dir().join("workload.toml");
            if default.is_file() {
                Some(Workload::load(&default)?)
            } else {
                None
            }
        }
    };
    let mut options = PlanOptions::new(root, base, head, queries, spec).with_config(&loaded.config.plan);
    options.stats = snapshot;
    options.mode = mode;
    if let Some(n) = args.seq_scan_rows {
        options.thresholds.seq_scan_rows = n;
    }
    options.analyze = args.analyze;
    options.repeat = args.repeat as usize;
    options.workload = workload;
    options.production = production_workload(loaded, &options.root)?;
    options.keep = args.keep;
    options.statement_timeout = Duration::from_secs(args.statement_timeout.max(1));
    options.server.database_url = args.database_url.clone().filter(|u| !u.is_empty());
    options.server.no_cache = args.no_cache;
    options.server.cache_dir = args.cache_dir.as_ref().map(|d| cwd.join(d));
    Ok((options, compared))
}

/// Production's workload (`[queries] workload`), read from disk as `lint` reads it: with two
/// snapshots, its measured rates feed `pool-capacity` when `workload.toml` gives no rates.
fn production_workload(loaded: &Loaded, root: &Path) -> Result<Option<crate::queries::workload::Workload>> {
    use crate::queries::workload;
    let files: Vec<(PathBuf, String)> = loaded
        .workload_files()
        .into_iter()
        .map(|path| {
            let shown = crate::source::display_path(&path, root);
            (path, shown)
        })
        .collect();
    if files.is_empty() {
        return Ok(None);
    }
    loaded.check_named_files_of("[queries] workload", &config::disk_file_problem)?;
    let reading =
        workload::Reading::now(loaded.snapshot_max_age_days()).with_interval(loaded.config.queries.workload_interval);
    workload::load(&files, &|path| crate::error::read_text(path), &reading).map(Some)
}

/// `*.sql` files under `path` (or `path` itself), sorted.
fn sql_files(path: &Path) -> Result<Vec<PathBuf>> {
    if path.is_file() {
        return Ok(vec![path.to_path_buf()]);
    }
    let mut out = Vec::new();
    let mut stack = vec![path.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let entries = std::fs::read_dir(&dir).map_err(|e| Error::io_while(IoAction::List, &dir, e))?;
        for entry in entries {
            let entry = entry.map_err(|e| Error::io_while(IoAction::List, &dir, e))?;
            let p = entry.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|e| e == "sql") {
                out.push(p);
            }
        }
    }
    out.sort();
    Ok(out)
}

/// A migrations directory in the order of the project's migration tool.
fn migrations(dir: &Path, loaded: &Loaded) -> Result<Vec<MigrationSql>> {
    if !dir.is_dir() {
        return Err(Error::Usage(format!("{}: no such migrations directory", dir.display())));
    }
    sources::dir_migrations(dir, loaded)
}
