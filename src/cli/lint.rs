//! `sluice lint [PATHS...]`: lint migrations and query files on disk.

use super::{OutputArgs, ProjectArgs};
use crate::config::Loaded;
use crate::error::Result;
use crate::finding::Report;
use crate::lint::baseline::{self, Baseline};
use crate::lint::since::{self, Since};
use crate::lint::{self, load};
use crate::policy::identity;
use std::collections::BTreeSet;
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
    /// Report the findings recorded in this baseline file as info; new findings keep their severity.
    #[arg(long, value_name = "FILE")]
    pub baseline: Option<PathBuf>,
    /// Record this run's findings in FILE (to adopt Sluice on an existing history), then report
    /// them as recorded.
    #[arg(long, value_name = "FILE")]
    pub write_baseline: Option<PathBuf>,
    #[command(flatten)]
    pub project: ProjectArgs,
    #[command(flatten)]
    pub output: OutputArgs,
}

pub fn run(args: LintArgs) -> Result<ExitCode> {
    let cwd = super::current_dir()?;
    let loaded = args.project.load(&cwd)?;
    let root = load::display_root(&cwd);
    let selection = load::selection(&args.paths, &root)?;
    let baseline = args.baseline.as_deref().map(Baseline::load).transpose()?;
    let (sources, settings) = load::load(&loaded, &root, &args.paths)?;
    let since = since_version(&args, &loaded);
    let replayed_only = match &since {
        Some(since) => since::replayed_only(&sources.migrations, since)?,
        None => BTreeSet::new(),
    };
    let selected = |display: &str| {
        !replayed_only.contains(display) && (selection.is_empty() || load::is_selected(display, &selection))
    };
    let mut report = lint::lint(&sources, &settings, &selected);
    let checked =
        sources.migrations.iter().map(|m| &m.up).chain(&sources.queries).filter(|f| selected(&f.display)).count();
    report.notes.push(format!(
        "Checked {checked} file(s): {} migration(s) replayed, {} query file(s).",
        sources.migrations.len(),
        sources.queries.len()
    ));
    if args.output.explain {
        report.notes.push(sources.tool.clone());
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
    adopt(&mut report, baseline.as_ref(), args.write_baseline.as_deref())?;
    args.output.emit(&report)
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
fn adopt(report: &mut Report, baseline: Option<&Baseline>, write: Option<&std::path::Path>) -> Result<()> {
    let written = match write {
        Some(path) => {
            let count = baseline::write(path, report)?;
            report.notes.push(format!("Wrote {count} finding(s) to the baseline {}.", path.display()));
            Some(Baseline::load(path)?)
        }
        None => None,
    };
    if let Some(baseline) = written.as_ref().or(baseline) {
        baseline.apply(report);
    }
    Ok(())
}
