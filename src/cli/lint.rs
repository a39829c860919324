//! `sluice lint [PATHS...]`: lint migrations and query files on disk.

use super::{CacheArgs, OutputArgs, ProjectArgs};
use crate::config::Loaded;
use crate::error::Result;
use crate::finding::Report;
use crate::lint::baseline::{self, Baseline};
use crate::lint::since::{self, Since};
use crate::lint::{self, load};
use crate::policy::identity;
use crate::schema::cache::Use;
use std::collections::{BTreeSet, HashSet};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub struct LintArgs {
    /// Files or directories to report on (default: every configured migration and query file).
    /// The schema is still built from the whole migration history.
    pub paths: Vec<PathBuf>,
    /// Report migrations from this version on (as the layout defines it: `0042` for
    /// `0042_add_index.sql`); earlier ones are replayed without being reported. Overrides
    /// [migrations] since.
    #[arg(long, value_name = "VERSION")]
    pub since: Option<String>,
    /// Leave out the findings recorded in this baseline file (one line says how many); new
    /// findings keep their severity.
    #[arg(long, value_name = "FILE")]
    pub baseline: Option<PathBuf>,
    /// With --baseline or --write-baseline, list the recorded findings too, as info.
    #[arg(long)]
    pub show_baselined: bool,
    /// Record this run's findings in FILE (to adopt Sluice on an existing history), then report
    /// them as recorded.
    #[arg(long, value_name = "FILE")]
    pub write_baseline: Option<PathBuf>,
    /// The time between the two workload snapshots ([queries] workload), when they have no
    /// captured_at column: 90s, 5m, 1h.
    #[arg(long, value_name = "DURATION", value_parser = crate::queries::workload::parse_interval)]
    pub workload_interval: Option<std::time::Duration>,
    #[command(flatten)]
    pub project: ProjectArgs,
    #[command(flatten)]
    pub output: OutputArgs,
    #[command(flatten)]
    pub cache: CacheArgs,
}

/// For `--explain`: how much of the history the cache saved replaying.
pub fn describe_cache(cache: &Use, migrations: usize) -> String {
    let mut text = if cache.resumed_at > 0 {
        format!(
            "Schema cache: the schema after the first {} of {migrations} migration(s) came from the cache; {} replayed.",
            cache.resumed_at,
            migrations - cache.resumed_at
        )
    } else {
        format!("Schema cache: no cached schema applied; {migrations} migration(s) replayed.")
    };
    if let Some(count) = cache.stored_at {
        text.push_str(&format!(" Stored the schema after the first {count}."));
    }
    text
}

pub fn run(args: LintArgs) -> Result<ExitCode> {
    let cwd = super::current_dir()?;
    let mut loaded = args.project.load(&cwd)?;
    loaded.config.queries.workload_interval = args.workload_interval;
    let root = load::display_root(&cwd);
    let selection = load::Selection::of(&args.paths, &root)?;
    let baseline = args.baseline.as_deref().map(Baseline::load).transpose()?;
    let since = since_version(&args, &loaded);
    let mut cache = args.cache.schema_cache();
    if !selection.is_empty() || since.is_some() {
        // Only part of the history may be reported, so the run may resume from a snapshot: read
        // the one the last run with these arguments used while the history is read. A selection
        // that starts at the first migration resumes nothing, so it never leaves a hint.
        let migrations_dir = loaded.migrations_dir();
        let mut identity = vec![migrations_dir.as_os_str().as_encoded_bytes()];
        identity.extend(args.paths.iter().map(|path| path.as_os_str().as_encoded_bytes()));
        identity.extend(since.as_ref().map(|since| since.version.as_bytes()));
        cache = cache.prefetching_for(&identity);
    }
    let (mut sources, mut settings) = load::load_with(&loaded, &root, &args.paths, &args.cache.scan_cache())?;
    settings.cache = cache;
    // One cache of query findings per project: its root and configuration file.
    let project_root = std::path::absolute(&loaded.root).unwrap_or_else(|_| loaded.root.clone());
    let config_file = loaded.file.as_deref().map(|f| std::path::absolute(f).unwrap_or_else(|_| f.to_path_buf()));
    let mut identity = vec![project_root.as_os_str().as_encoded_bytes()];
    identity.extend(config_file.as_ref().map(|f| f.as_os_str().as_encoded_bytes()));
    settings.query_cache = args.cache.query_cache(&identity);
    // A down file named on the command line is linted as the rollback it is, not as a query file.
    let downs: Vec<usize> = sources
        .migrations
        .iter()
        .enumerate()
        .filter(|(_, m)| m.down.as_ref().is_some_and(|(display, _)| selection.names(display)))
        .map(|(i, _)| i)
        .collect();
    let down_displays: HashSet<String> =
        downs.iter().filter_map(|&i| sources.migrations[i].down.as_ref().map(|(display, _)| display.clone())).collect();
    sources.queries.retain(|q| !down_displays.contains(&q.query.file));
    let replayed_only = match &since {
        Some(since) => since::replayed_only(&sources.migrations, since)?,
        None => BTreeSet::new(),
    };
    let selected =
        |display: &str| !replayed_only.contains(display) && (selection.is_empty() || selection.selects(display));
    let (mut report, cache_use) = lint::lint_reporting_cache(&sources, &settings, &selected)?;
    report.findings.extend(measured_pool(&loaded, &sources)?.into_iter().filter(|f| selected(&f.file)));
    report.findings.extend(submodules(&loaded, &root)?.into_iter().filter(|f| selected(&f.file)));
    for &index in &downs {
        let down = lint::lint_down(&sources, &settings, index);
        report.findings.extend(down.findings);
    }
    report.sort();
    let checked = sources
        .migrations
        .iter()
        .map(|m| &m.display)
        .chain(sources.queries.iter().map(|q| &q.query.file).collect::<BTreeSet<_>>())
        .filter(|display| selected(display))
        .count()
        + downs.len();
    report.notes.insert(
        0,
        format!(
            "Checked {checked} file(s): {} migration(s) replayed, {}.",
            sources.migrations.len(),
            crate::queries::describe_counts(&sources.queries)
        ),
    );
    if args.output.explain {
        report.notes.push(sources.tool.clone());
        if settings.cache.is_enabled() {
            report.notes.push(describe_cache(&cache_use, sources.migrations.len()));
        }
    }
    let identity_file = load::display_path(&loaded.policies_dir().join(identity::FILE), &root);
    report.notes.extend(settings.policies.identity.pending_note(&identity_file));
    if let Some(since) = &since {
        report.notes.push(format!(
            "Since {}: the {} migration(s) before it were replayed without being reported.",
            since.version,
            replayed_only.len()
        ));
    }
    adopt(&mut report, baseline.as_ref(), args.write_baseline.as_deref(), args.show_baselined)?;
    args.output.emit(&report)
}

/// An `unread-text` error for each git submodule at or under the migrations directory (as the
/// repository's index records them): a submodule not checked out is an empty directory on disk,
/// and the migrations in it would go unread without a word. Outside a git repository, none.
fn submodules(loaded: &Loaded, root: &std::path::Path) -> Result<Vec<crate::finding::Finding>> {
    let dir = std::path::absolute(loaded.migrations_dir()).unwrap_or_else(|_| loaded.migrations_dir());
    let Ok(repo) = crate::git::open(&dir) else { return Ok(Vec::new()) };
    let found = crate::git::submodules::under(&repo, &crate::git::Side::WorkTree, &dir)?;
    Ok(found
        .into_iter()
        .map(|path| {
            let shown = load::display_path(&repo.root().join(&path), root);
            let why = format!(
                "{shown} is a git submodule where the migrations live: its files are another repository's, and \
                 Sluice did not read the migrations in it (lint them in a checkout of that repository)"
            );
            load::unread_file(&shown, why)
        })
        .collect())
}

/// `pool-capacity` on production's measured load, when the workload has rates and
/// `policies/workload.toml` declares the pool.
fn measured_pool(loaded: &Loaded, sources: &lint::Sources) -> Result<Vec<crate::finding::Finding>> {
    let Some(workload) = &sources.workload else { return Ok(Vec::new()) };
    let path = loaded.policies_dir().join("workload.toml");
    if workload.busy.is_none() || !path.is_file() {
        return Ok(Vec::new());
    }
    let pool = crate::plan::capacity::Workload::load(&path)?;
    Ok(lint::apply_levels(
        crate::plan::capacity::measured_load(&pool, workload).into_iter().collect(),
        &loaded.config.rules,
    ))
}

/// `--since`, else `[migrations] since`.
fn since_version(args: &LintArgs, loaded: &Loaded) -> Option<Since> {
    match (&args.since, &loaded.config.migrations.since) {
        (Some(version), _) => Some(Since { version: version.clone(), origin: since::Origin::Flag }),
        (None, Some(version)) => Some(Since {
            version: version.clone(),
            origin: since::Origin::Config(loaded.file.clone().unwrap_or_else(|| PathBuf::from("sluice.toml"))),
        }),
        (None, None) => None,
    }
}

/// Applies `--baseline` and `--write-baseline`: the file written records this run's findings as
/// they came out, before any older baseline turned some into info.
fn adopt(report: &mut Report, baseline: Option<&Baseline>, write: Option<&std::path::Path>, show: bool) -> Result<()> {
    let written = match write {
        Some(path) => {
            let count = baseline::write(path, report)?;
            report.notes.push(format!("Wrote {count} finding(s) to the baseline {}.", path.display()));
            Some(Baseline::load(path)?)
        }
        None => None,
    };
    if let Some(baseline) = written.as_ref().or(baseline) {
        baseline.apply(report, show);
    }
    Ok(())
}
