//! `sluice check`: the pull-request gate over the change between two revisions.

use super::{OutputArgs, ProjectArgs};
use crate::check::{self, Approvals, Deploy, Options, PlanRun};
use crate::error::{Error, Result};
use crate::freeze::cache::CalendarCache;
use crate::queries::blob_scan_cache::BlobScanCache;
use crate::report::{markdown, RenderOptions};
use crate::schema::cache::SchemaCache;
use chrono::{DateTime, FixedOffset};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
#[command(long_about = "The pull-request gate: reviews the migrations, query files and policies changed between \
two revisions, read through git (no checkout). Lints the added migrations against the schema the base side's \
history builds, the added or modified query files, and the unchanged query files an added migration affects; \
reports edited, deleted, renamed, out-of-order and conflicting migrations. The gate's configuration (sluice.toml \
nearest to the working directory or --config, the policies, the scale spec, the freeze calendar and overrides) is \
read from the base revision, so a change cannot loosen the gate that reviews it; each edit to it is reported \
(gate-config-changed) and takes effect once merged (--trust-head-config reads the head's, for experiments). Changes \
to a declared table's identity need an approval from its domain reviewers (--approved-by). With --env and --service, the deploy \
is checked against the change-freeze calendar (policies/freeze.toml, or [freeze] calendar). When [plan] scale is \
set, the queries' PostgreSQL plans on base and head are compared on a fixture of that scale (--no-plan skips it; \
[plan] required = true makes a missing PostgreSQL an error). When GITHUB_STEP_SUMMARY is set, the markdown report \
is appended to it whatever --format prints.")]
pub struct CheckArgs {
    #[command(flatten)]
    pub revisions: RevisionArgs,
    /// Deployment environment, checked against the change-freeze calendar (with --service; a missing calendar is
    /// an error).
    #[arg(long, value_name = "ENV", requires = "service")]
    pub env: Option<String>,
    /// Service being deployed, for the change-freeze calendar (with --env).
    #[arg(long, value_name = "SERVICE", requires = "env")]
    pub service: Option<String>,
    /// Deployment time for the change-freeze calendar, RFC 3339 (e.g. 2025-12-13T09:00:00-05:00; default: now).
    #[arg(long, value_name = "TIME", value_parser = parse_time, requires = "env")]
    pub at: Option<DateTime<FixedOffset>>,
    /// The change-freeze calendar [default: [freeze] calendar in sluice.toml, else policies/freeze.toml].
    #[arg(long, value_name = "FILE")]
    pub calendar: Option<PathBuf>,
    /// Emergency overrides [default: [freeze] overrides, else overrides.toml beside the calendar when present].
    #[arg(long, value_name = "FILE")]
    pub overrides: Option<PathBuf>,
    /// Where a decision that uses an override is logged [default: [freeze] audit_log, else freeze-audit.jsonl in
    /// the cache directory; never inside the policies directory].
    #[arg(long, value_name = "FILE")]
    pub audit_log: Option<PathBuf>,
    /// Do not compare plans even though [plan] scale is set (the report says so).
    #[arg(long)]
    pub no_plan: bool,
    /// A PostgreSQL server for the plan comparison instead of an ephemeral one; Sluice works only in sluice_*
    /// databases it creates. A generic DATABASE_URL is never used (the report says it was ignored).
    #[arg(long, env = "SLUICE_DATABASE_URL", value_name = "URL", hide_env_values = true)]
    pub database_url: Option<String>,
    /// Who approved the change (repeatable, comma-separated): GitHub logins, `org/team` (a member approved) or
    /// `org/team:login`. An approval from one of a table's domain reviewers turns domain-review-required into info.
    #[arg(long, env = "SLUICE_APPROVED_BY", value_name = "LOGIN", value_delimiter = ',')]
    pub approved_by: Vec<String>,
    /// Reviewer teams whose membership could not be read (set by the GitHub action); the report says their
    /// approvals could not be counted.
    #[arg(long, env = "SLUICE_UNRESOLVED_TEAMS", value_name = "ORG/TEAM", value_delimiter = ',')]
    pub unresolved_team: Vec<String>,
    /// Read sluice.toml, the policies, the scale spec, the freeze calendar and the overrides from the head instead
    /// of the base revision, for local experiments with a configuration (the report says so).
    #[arg(long)]
    pub trust_head_config: bool,
    /// Where the plan comparison's ephemeral cluster and cached fixtures, the cached schemas of the base
    /// history, what each code file's git blob holds and the validated freeze calendars live (default: $SLUICE_CACHE_DIR, else ~/.cache/sluice;
    /// /var/tmp/sluice as root). Safe to delete.
    #[arg(long, value_name = "DIR")]
    pub cache_dir: Option<PathBuf>,
    /// Replay the base side's whole history and parse the freeze calendar afresh; neither read nor write
    /// the schema, code or calendar cache.
    #[arg(long)]
    pub no_cache: bool,
    /// The time between the two workload snapshots ([queries] workload), when they have no
    /// captured_at column: 90s, 5m, 1h.
    #[arg(long, value_name = "DURATION", value_parser = crate::queries::workload::parse_interval)]
    pub workload_interval: Option<std::time::Duration>,
    #[command(flatten)]
    pub project: ProjectArgs,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// Which repository and which two revisions a review compares (`check`, `reviewers`).
#[derive(clap::Args, Debug)]
pub struct RevisionArgs {
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
}

impl RevisionArgs {
    /// `--repo` as an absolute directory, which must exist.
    pub fn repo_dir(&self, cwd: &std::path::Path) -> Result<PathBuf> {
        let dir = cwd.join(self.repo.as_deref().unwrap_or(std::path::Path::new(".")));
        let dir = std::path::absolute(&dir).unwrap_or(dir);
        if !dir.is_dir() {
            return Err(Error::Usage(format!("{}: --repo is not a directory", dir.display())));
        }
        Ok(dir)
    }
}

fn parse_time(text: &str) -> Result<DateTime<FixedOffset>, String> {
    DateTime::parse_from_rfc3339(text)
        .map_err(|e| format!("`{text}` is not an RFC 3339 time ({e}); write e.g. 2025-12-13T09:00:00Z"))
}

pub fn run(args: CheckArgs) -> Result<ExitCode> {
    let cwd = super::current_dir()?;
    let absolute = |p: &PathBuf| std::path::absolute(cwd.join(p)).unwrap_or_else(|_| cwd.join(p));
    let options = Options {
        dir: args.revisions.repo_dir(&cwd)?,
        base: args.revisions.base,
        head: args.revisions.head,
        ci: crate::git::in_ci(),
        config: args.project.config.as_ref().map(absolute),
        migrations: args.project.migrations.as_ref().map(absolute),
        queries: args.project.queries.iter().map(absolute).collect(),
        policies: args.project.policies.as_ref().map(absolute),
        workload_interval: args.workload_interval,
        deploy: Deploy {
            env: args.env,
            service: args.service,
            at: args.at,
            calendar: args.calendar.as_ref().map(absolute),
            overrides: args.overrides.as_ref().map(absolute),
            audit_log: args.audit_log.as_ref().map(absolute),
            cache_dir: args.cache_dir.as_ref().map(absolute),
        },
        plan: PlanRun {
            skip: args.no_plan,
            ignored_database_url: args.database_url.is_none() && super::generic_database_url_set(),
            database_url: args.database_url,
            cache_dir: args.cache_dir.as_ref().map(absolute),
        },
        cache: if args.no_cache {
            SchemaCache::disabled()
        } else {
            // `check` replays the base history for several purposes: it reads the snapshot once.
            SchemaCache::in_cache_dir(args.cache_dir.as_ref().map(absolute).as_deref()).remembering_last()
        },
        code_cache: if args.no_cache {
            BlobScanCache::disabled()
        } else {
            BlobScanCache::in_cache_dir(args.cache_dir.as_ref().map(absolute).as_deref())
        },
        calendar_cache: if args.no_cache {
            CalendarCache::disabled()
        } else {
            CalendarCache::in_cache_dir(args.cache_dir.as_ref().map(absolute).as_deref())
        },
        trust_head_config: args.trust_head_config,
        approvals: Approvals { approved_by: args.approved_by, unresolved_teams: args.unresolved_team },
    };
    let report = check::run(&options)?;
    let summary_options = RenderOptions { color: false, explain: args.output.explain, fail_on: args.output.fail_on };
    // The job summary is a courtesy; failing to write it must not change the verdict.
    if let Err(error) = markdown::append_step_summary(&report, &summary_options) {
        eprintln!("sluice: warning: could not append the report to GITHUB_STEP_SUMMARY: {error}");
    }
    args.output.emit(&report)
}
