//! `sluice lint [PATHS...]`: lint migrations and query files on disk.

use super::{OutputArgs, ProjectArgs};
use crate::error::Result;
use crate::lint::{self, load};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub struct LintArgs {
    /// Files or directories to report on (default: every configured migration and query file).
    /// The schema is still built from the whole migration history.
    pub paths: Vec<PathBuf>,
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
    let (sources, settings) = load::load(&loaded, &root, &args.paths)?;
    let selected = |display: &str| selection.is_empty() || load::is_selected(display, &selection);
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
    args.output.emit(&report)
}
