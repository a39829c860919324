//! What `sluice check` is asked to do: the revisions, the deployment and the plan run, as the
//! CLI resolved them.

use chrono::{DateTime, FixedOffset};
use std::path::PathBuf;

/// What to compare and how. Paths are absolute (the CLI resolves them against its working
/// directory).
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// A directory inside the repository; `sluice.toml` is looked for from here up to the root.
    pub dir: PathBuf,
    pub base: Option<String>,
    pub head: Option<String>,
    /// Running in CI: the default head is HEAD, not the working tree.
    pub ci: bool,
    /// `--config`: the `sluice.toml` to use (read from the base revision when it is inside the
    /// repository, from disk outside it).
    pub config: Option<PathBuf>,
    pub migrations: Option<PathBuf>,
    pub queries: Vec<PathBuf>,
    pub policies: Option<PathBuf>,
    /// `--workload-interval`: the time between the workload snapshots when they carry none.
    pub workload_interval: Option<std::time::Duration>,
    pub deploy: Deploy,
    pub plan: PlanRun,
    /// Snapshots of the base side's replayed schema (disabled by default).
    pub cache: crate::schema::cache::SchemaCache,
    /// What each unchanged code file holds, by git blob (disabled by default).
    pub code_cache: crate::queries::blob_scan_cache::BlobScanCache,
    /// Validated freeze calendars, by their text and imports (disabled by default).
    pub calendar_cache: crate::freeze::cache::CalendarCache,
    /// `--trust-head-config`: read the gate's configuration from the head (local experiments).
    pub trust_head_config: bool,
    pub approvals: Approvals,
}

/// Where and when the change would be deployed, for the change-freeze calendar.
#[derive(Debug, Clone, Default)]
pub struct Deploy {
    pub env: Option<String>,
    pub service: Option<String>,
    /// Default: now.
    pub at: Option<DateTime<FixedOffset>>,
    /// Flags that win over `[freeze]` in sluice.toml (see [`crate::freeze::FreezeOptions::resolve`]).
    pub calendar: Option<PathBuf>,
    pub overrides: Option<PathBuf>,
    pub audit_log: Option<PathBuf>,
    /// Sluice's cache directory (`--cache-dir`), where the audit log lives by default.
    pub cache_dir: Option<PathBuf>,
}

/// How to run the plan comparison `[plan] scale` asks for.
#[derive(Debug, Clone, Default)]
pub struct PlanRun {
    /// `--no-plan`: skip it, with a note.
    pub skip: bool,
    /// A server to use instead of an ephemeral one (`--database-url`, `SLUICE_DATABASE_URL`).
    pub database_url: Option<String>,
    /// `DATABASE_URL` is set and was not used: the report says so.
    pub ignored_database_url: bool,
    /// Where the ephemeral cluster lives; `None`: the plan module's default.
    pub cache_dir: Option<PathBuf>,
}

/// Who approved the change, as the caller says (`--approved-by`, `SLUICE_APPROVED_BY`).
#[derive(Debug, Clone, Default)]
pub struct Approvals {
    /// Logins (`alice`), teams a member of which approved (`org/team`), or both (`org/team:alice`).
    pub approved_by: Vec<String>,
    /// Teams whose membership the caller could not read (the token may not see it).
    pub unresolved_teams: Vec<String>,
}

impl Approvals {
    /// The approvals as given, trimmed, without `@`, lowercased.
    pub(super) fn normalized(&self) -> Vec<String> {
        self.approved_by
            .iter()
            .map(|a| a.trim().trim_start_matches('@').to_lowercase())
            .filter(|a| !a.is_empty())
            .collect()
    }

    /// The approval that satisfies `reviewers`, as the report names it: "alice", "alice (member
    /// of org/team)" or "a member of org/team".
    pub fn approver(&self, reviewers: &[String]) -> Option<String> {
        self.normalized().into_iter().find_map(|approval| {
            let (entry, member) = match approval.split_once(':') {
                Some((team, login)) => (team.to_string(), Some(login.to_string())),
                None => (approval.clone(), None),
            };
            if !reviewers.contains(&entry) {
                return None;
            }
            Some(match member {
                Some(login) => format!("{login} (member of {entry})"),
                None if entry.contains('/') => format!("a member of {entry}"),
                None => entry,
            })
        })
    }
}
