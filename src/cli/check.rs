//! `sluice check`: the pull-request gate over the change between two revisions.

use super::{OutputArgs, ProjectArgs};
use crate::check::{self, Deploy, Options};
use crate::error::{Error, Result};
use crate::report::{markdown, RenderOptions};
use chrono::{DateTime, FixedOffset};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
#[command(long_about = "The pull-request gate: reviews the migrations, query files and policies changed between \
two revisions, read through git (no checkout). Lints the added migrations against the schema the base side's \
history builds, the added or modified query files, and the unchanged query files an added migration affects; \
reports edited, deleted, renamed, out-of-order and conflicting migrations. The configuration is the head side's \
sluice.toml (nearest to the working directory) unless --config names one. When GITHUB_STEP_SUMMARY is set, the \
markdown report is appended to it whatever --format prints.")]
pub struct CheckArgs {
    /// A directory inside the repository to review (default: the working directory).
    #[arg(long, value_name = "DIR")]
    pub repo: Option<PathBuf>,
    /// Base revision; the merge base of the head with it is compared (default: origin/main, else main, else
    /// master).
    #[arg(long, value_name = "REV")]
    pub base: Option<String>,
    /// Head revision (default: the working tree with uncommitted changes; HEAD when CI is set).
    #[arg(long, value_name = "REV")]
    pub head: Option<String>,
    /// Deployment environment, for the change-freeze calendar (checked when the calendar is configured;
    /// until then the report says it was not checked).
    #[arg(long, value_name = "ENV")]
    pub env: Option<String>,
    /// Service name, for the change-freeze calendar (see --env).
    #[arg(long, value_name = "NAME")]
    pub service: Option<String>,
    /// Deployment time for the change-freeze calendar, RFC 3339 (e.g. 2025-12-13T09:00:00-05:00; default: now).
    #[arg(long, value_name = "TIME", value_parser = parse_time)]
    pub at: Option<DateTime<FixedOffset>>,
    #[command(flatten)]
    pub project: ProjectArgs,
    #[command(flatten)]
    pub output: OutputArgs,
}

fn parse_time(text: &str) -> Result<DateTime<FixedOffset>, String> {
    DateTime::parse_from_rfc3339(text)
        .map_err(|e| format!("`{text}` is not an RFC 3339 time ({e}); write e.g. 2025-12-13T09:00:00Z"))
}

pub fn run(args: CheckArgs) -> Result<ExitCode> {
    let cwd = super::current_dir()?;
    let absolute = |p: &PathBuf| std::path::absolute(cwd.join(p)).unwrap_or_else(|_| cwd.join(p));
    let dir = absolute(args.repo.as_ref().unwrap_or(&PathBuf::from(".")));
    if !dir.is_dir() {
        return Err(Error::Usage(format!("{}: --repo is not a directory", dir.display())));
    }
    let options = Options {
        dir,
        base: args.base,
        head: args.head,
        ci: crate::git::in_ci(),
        config: args.project.config.as_ref().map(absolute),
        migrations: args.project.migrations.as_ref().map(absolute),
        queries: args.project.queries.iter().map(absolute).collect(),
        policies: args.project.policies.as_ref().map(absolute),
        deploy: Deploy { env: args.env, service: args.service, at: args.at },
    };
    let report = check::run(&options)?;
    let summary_options = RenderOptions { color: false, explain: args.output.explain, fail_on: args.output.fail_on };
    // The job summary is a courtesy; failing to write it must not change the verdict.
    if let Err(error) = markdown::append_step_summary(&report, &summary_options) {
        eprintln!("sluice: warning: could not append the report to GITHUB_STEP_SUMMARY: {error}");
    }
    args.output.emit(&report)
}
