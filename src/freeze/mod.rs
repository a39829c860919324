//! The change-freeze calendar: may service S be deployed to environment E now, or at T?
//!
//! - [`calendar`]: the `freeze.toml` model, loading and validation (configuration errors fail closed);
//! - [`expand`]: occurrences as UTC intervals, DST-correct per occurrence;
//! - [`decide`]: status, blocked intervals, next open window;
//! - [`overrides`]: emergency overrides and their rules; [`audit`]: the override audit log;
//! - [`ics`]: iCalendar import and export;
//! - [`answer`]: what `sluice freeze status | list | next-open | lint` report, as plain values.
//!
//! [`deploy_findings`] is the entry point for `sluice check`.

pub mod answer;
pub mod audit;
pub mod cache;
pub mod calendar;
pub mod compact;
pub mod decide;
pub mod duration;
pub mod event;
pub mod expand;
pub mod export;
pub mod ics;
pub mod ics_lines;
pub mod input;
pub mod overrides;
pub mod recur;
pub mod rrule_parts;
pub mod time;
pub mod tzif;
pub mod vtimezone;
pub mod within;
pub mod zone;

pub use answer::{lint, list, next_open, status, LintAnswer, ListAnswer, NextOpenAnswer, StatusAnswer};

use crate::config;
use crate::error::Result;
use crate::finding::{Finding, Severity};
use cache::CalendarCache;
use calendar::{Anchor, Calendar};
use chrono::{DateTime, Utc};
use decide::{Decider, NextOpen, Query, State, Status};
use overrides::Overrides;
use std::path::{Path, PathBuf};
use time::{local_string, utc_string};

pub const DEFAULT_CALENDAR: &str = "policies/freeze.toml";
pub const OVERRIDES_FILE: &str = "overrides.toml";
pub const AUDIT_FILE: &str = "freeze-audit.jsonl";

/// Where the freeze files are, resolved from flags, `sluice.toml` `[freeze]` and the defaults.
#[derive(Clone, Debug)]
pub struct FreezeOptions {
    pub calendar: PathBuf,
    /// `None`: no overrides file.
    pub overrides: Option<PathBuf>,
    pub audit_log: PathBuf,
    pub max_override_hours: u32,
    /// Validated calendars from earlier runs (disabled unless the command line enables it).
    pub cache: CalendarCache,
}

impl FreezeOptions {
    /// Flags win over `sluice.toml`, which wins over the defaults: the calendar
    /// `policies/freeze.toml`; overrides `overrides.toml` beside the calendar when that file exists;
    /// the audit log `freeze-audit.jsonl` in Sluice's cache directory (`cache_dir`, else
    /// `$SLUICE_CACHE_DIR`, `$XDG_CACHE_HOME/sluice`, `~/.cache/sluice`) — never beside the
    /// calendar, where `sluice check` reads the gate's configuration and would report every
    /// logged decision as a change to it. Config paths are relative to the directory holding
    /// `sluice.toml`.
    pub fn resolve(
        loaded: &config::Loaded,
        calendar: Option<&Path>,
        overrides: Option<&Path>,
        audit_log: Option<&Path>,
        cache_dir: Option<&Path>,
    ) -> FreezeOptions {
        let cfg = &loaded.config.freeze;
        let calendar = match (calendar, &cfg.calendar) {
            (Some(p), _) => p.to_path_buf(),
            (None, Some(p)) => loaded.resolve(p),
            (None, None) => loaded.resolve(Path::new(DEFAULT_CALENDAR)),
        };
        let beside = |name: &str| calendar.parent().unwrap_or(Path::new(".")).join(name);
        let overrides = match (overrides, &cfg.overrides) {
            (Some(p), _) => Some(p.to_path_buf()),
            (None, Some(p)) => Some(loaded.resolve(p)),
            // A directory in its place is an error when it is read, not a reason to skip it.
            (None, None) => Some(beside(OVERRIDES_FILE)).filter(|p| p.exists()),
        };
        let audit_log = match (audit_log, &cfg.audit_log) {
            (Some(p), _) => p.to_path_buf(),
            (None, Some(p)) => loaded.resolve(p),
            (None, None) => crate::cache::dir_under(cache_dir, AUDIT_FILE),
        };
        let max_override_hours = cfg.max_override_hours.unwrap_or(overrides::DEFAULT_MAX_OVERRIDE_HOURS);
        FreezeOptions { calendar, overrides, audit_log, max_override_hours, cache: CalendarCache::disabled() }
    }

    /// Refuses an audit log inside a policies directory (or that is the calendar or the
    /// overrides): `sluice check` reads the gate's configuration there, and each decision logged
    /// would be reported as a change to it (`gate-config-changed`).
    pub fn check_audit_log(&self, policies_dirs: &[PathBuf]) -> Result<()> {
        let full = |p: &Path| std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
        let log = full(&self.audit_log);
        let inside = policies_dirs.iter().map(|d| full(d)).find(|d| log.starts_with(d));
        let gate_file = [Some(&self.calendar), self.overrides.as_ref()].into_iter().flatten().any(|f| full(f) == log);
        if inside.is_none() && !gate_file {
            return Ok(());
        }
        let place = match inside {
            Some(dir) => format!("is inside the policies directory {}", dir.display()),
            None => "is a freeze file the gate reads".to_string(),
        };
        Err(crate::error::Error::Usage(format!(
            "{}: the freeze audit log {place}, where `sluice check` reads the gate's own configuration (every \
             decision logged would show as gate-config-changed); leave `[freeze] audit_log` and --audit-log unset \
             (it then lives in Sluice's cache directory) or point them outside it",
            self.audit_log.display()
        )))
    }

    /// The same paths, relative to `dir` where they are below it.
    pub fn relative_to(mut self, dir: &Path) -> FreezeOptions {
        for p in [Some(&mut self.calendar), Some(&mut self.audit_log), self.overrides.as_mut()].into_iter().flatten() {
            if let Ok(r) = p.strip_prefix(dir) {
                *p = r.to_path_buf();
            }
        }
        self
    }

    /// Loads and validates the calendar and the overrides.
    pub fn load(&self) -> Result<(Calendar, Overrides)> {
        let calendar = self.cache.load(&self.calendar)?;
        let overrides = match &self.overrides {
            Some(p) => overrides::load(p, &calendar, self.max_override_hours)?,
            None => Overrides::default(),
        };
        Ok((calendar, overrides))
    }
}

/// The `change-freeze` findings for deploying `service` to `env` at `at`, for `sluice check`.
///
/// - `calendar`: the freeze calendar (e.g. `policies/freeze.toml`); findings name it as given,
///   at the line of the window's `[[window]]` table.
/// - `overrides`: the overrides file; `None` uses `overrides.toml` beside the calendar if present.
/// - `audit_log`: where a decision that uses an override is logged; `None` uses
///   `freeze-audit.jsonl` in Sluice's cache directory.
///
/// `max_override_hours` comes from the `sluice.toml` found walking up from the calendar's
/// directory (default 4). Returns one error finding per active deny window (or one for being
/// outside every allow window), a warning per invalid/expired override that concerns the deploy,
/// and an info finding per override that opened it. A bad calendar or overrides file is an
/// `Err` (exit 2): the gate fails closed.
pub fn deploy_findings(
    calendar: &Path,
    overrides: Option<&Path>,
    env: &str,
    service: &str,
    at: DateTime<Utc>,
    audit_log: Option<&Path>,
) -> Result<Vec<Finding>> {
    let dir = calendar.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let loaded = config::load(None, dir, &crate::lint::rule_level_problem)?;
    let options = FreezeOptions::resolve(&loaded, Some(calendar), overrides, audit_log, None);
    deploy_findings_with(&options, env, service, at)
}

/// [`deploy_findings`] with every path and limit given explicitly.
pub fn deploy_findings_with(
    options: &FreezeOptions,
    env: &str,
    service: &str,
    at: DateTime<Utc>,
) -> Result<Vec<Finding>> {
    let (calendar, overrides) = options.load()?;
    decide_deploy(&calendar, &overrides, &options.audit_log, env, service, at)
}

/// [`deploy_findings`] for a calendar and overrides already loaded (`sluice check` reads them
/// from the base revision); a decision that uses an override is appended to `audit_log`.
pub fn decide_deploy(
    calendar: &Calendar,
    overrides: &Overrides,
    audit_log: &Path,
    env: &str,
    service: &str,
    at: DateTime<Utc>,
) -> Result<Vec<Finding>> {
    let query = Query { env: Some(env), service: Some(service) };
    let status = Decider::new(calendar, overrides, query).status(at)?;
    audit::log_if_overridden(audit_log, calendar, overrides, query, &status, "check")?;
    Ok(findings(calendar, overrides, query, &status))
}

fn path_string(p: &Path) -> String {
    p.to_string_lossy().replace('\\', "/")
}

/// One entry of a status as JSON: `{id, kind, reason, start, end, event, …}`.
pub fn entry_json(calendar: &Calendar, overrides: &Overrides, entry: &decide::Entry) -> serde_json::Value {
    let w = &calendar.windows[entry.window];
    let tz = w.display_tz(calendar);
    let occurrence = entry.occurrence.as_ref();
    let event = occurrence.and_then(|o| o.event).map(|e| &calendar.events[e]);
    serde_json::json!({
        "id": w.id,
        "kind": w.kind.as_str(),
        "reason": w.reason,
        "start": occurrence.map(|o| utc_string(o.start)),
        "end": occurrence.map(|o| utc_string(o.end)),
        "start_local": occurrence.map(|o| local_string(o.start, tz)),
        "end_local": occurrence.map(|o| local_string(o.end, tz)),
        "event": event.map(|e| e.id.clone()),
        "event_name": event.map(|e| e.name.clone()),
        "state": match entry.state { State::Active => "active", State::Lifted(_) => "lifted", State::Outside => "outside" },
        "lifted_by": match entry.state { State::Lifted(i) => Some(overrides.list[i].id.clone()), _ => None },
        "environments": w.environments.patterns,
        "services": w.services.patterns,
        "line": w.line,
    })
}

pub fn next_open_string(next: &NextOpen) -> String {
    match next {
        NextOpen::At(t) => utc_string(*t),
        NextOpen::NoneWithin(t) => {
            format!("none before {} (search horizon {} days)", utc_string(*t), decide::HORIZON_DAYS)
        }
    }
}

/// Turns a status into findings (see [`deploy_findings`]).
pub fn findings(calendar: &Calendar, overrides: &Overrides, query: Query, status: &Status) -> Vec<Finding> {
    let rule = crate::rules::change_freeze::META.id;
    let file = path_string(&calendar.path);
    let target = format!("{} to {}", query.service.unwrap_or("any service"), query.env.unwrap_or("any environment"));
    // "next open 2026-05-18T23:00:00Z", or that nothing opens within the horizon (never "next
    // open none before …").
    let (next, deploy_when) = match status.next_open {
        NextOpen::At(t) => {
            (format!("next open {}", utc_string(t)), format!("Deploy at or after {}, or get", utc_string(t)))
        }
        NextOpen::NoneWithin(t) => (
            format!("nothing opens before {} (searched {} days ahead)", utc_string(t), decide::HORIZON_DAYS),
            format!("Nothing opens within the {} days searched (to {}): get", decide::HORIZON_DAYS, utc_string(t)),
        ),
    };
    let mut out = Vec::new();
    for entry in &status.entries {
        let w = &calendar.windows[entry.window];
        let tz = w.display_tz(calendar);
        let evidence = entry_json(calendar, overrides, entry);
        let occurrence = entry.occurrence.as_ref();
        let event = occurrence.and_then(|o| o.event).map(|e| &calendar.events[e]);
        let reason = if w.reason.is_empty() { String::new() } else { format!(": {}", w.reason.trim_end_matches('.')) };
        let (severity, message) = match entry.state {
            State::Active => {
                let o = occurrence.expect("active entries carry their occurrence");
                let event_text = event.map(|e| format!(" for {} (`{}`)", e.name, e.id)).unwrap_or_default();
                (
                    Severity::Error,
                    format!(
                        "deploy of {target} at {} is frozen by window `{}`{event_text}{reason}; it ends {} ({}); {next}",
                        utc_string(status.at),
                        w.id,
                        utc_string(o.end),
                        local_string(o.end, tz),
                    ),
                )
            }
            State::Outside => {
                let when = occurrence
                    .map(|o| format!("its next occurrence is {} to {}", utc_string(o.start), utc_string(o.end)))
                    .unwrap_or_else(|| format!("it does not occur within {} days", decide::HORIZON_DAYS));
                (
                    Severity::Error,
                    format!(
                        "deploy of {target} at {} is outside allow window `{}`{reason} ({when}); {next}",
                        utc_string(status.at),
                        w.id
                    ),
                )
            }
            State::Lifted(i) => {
                let o = &overrides.list[i];
                (
                    Severity::Info,
                    format!(
                        "window `{}` is lifted for {target} by override `{}` ({}, approved by {}) until {}",
                        w.id,
                        o.id,
                        o.ticket,
                        o.approved_by,
                        o.expires_at.map(utc_string).unwrap_or_default()
                    ),
                )
            }
        };
        let mut finding = Finding::new(rule, severity, file.clone(), message)
            .at(w.line, 1, w.line, 1)
            .help(match entry.state {
                State::Lifted(_) => "The decision was appended to the freeze audit log.".to_string(),
                _ => format!(
                    "{deploy_when} an emergency override in overrides.toml (reason, ticket, a second approver, at most a few hours); `sluice freeze status --service {} --env {}` explains the freeze.",
                    query.service.unwrap_or("S"),
                    query.env.unwrap_or("E")
                ),
            })
            .fact("window", &w.id)
            .fact("kind", w.kind.as_str())
            .fact("calendar sha256", &calendar.digest)
            .evidence(evidence);
        if let Some(o) = occurrence {
            finding = finding.fact("interval", format!("[{}, {})", utc_string(o.start), utc_string(o.end)));
        }
        if let Some(e) = event {
            finding = finding.fact("event", format!("{} ({}:{})", e.id, path_string(&e.file), e.line));
        }
        if let Anchor::Events(a) = &w.anchor {
            finding = finding.fact("lead / lag", format!("{} / {}", a.lead, a.lag));
        }
        out.push(finding);
    }
    for (i, problem) in &status.override_problems {
        let o = &overrides.list[*i];
        let file = overrides.path.as_deref().map(path_string).unwrap_or_default();
        out.push(
            Finding::new(rule, Severity::Warning, file, problem.clone())
                .at(o.line, 1, o.line, 1)
                .help("An override needs a reason, a ticket, an approver other than the requester, and an expiry within max_override_hours of not_before; it only lifts the windows it names while in force.")
                .evidence(o.to_json()),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const CAL: &str = "[[event]]\nid = \"count\"\nname = \"Spring Bird Count\"\ntimezone = \"Europe/London\"\nstart = \"2026-05-17T00:00\"\nend = \"2026-05-19T00:00\"\n\n[[window]]\nid = \"bird-count-freeze\"\nkind = \"deny\"\nevent = \"count\"\nlead = \"P7D\"\nenvironments = [\"production\"]\nreason = \"No production changes before the count.\"\n";
    const OVR: &str = "[[override]]\nid = \"ovr-1\"\nwindows = [\"bird-count-freeze\"]\nservices = [\"survey-api\"]\nenvironments = [\"production\"]\nrequested_by = \"alice\"\napproved_by = \"bob\"\nreason = \"SEV-1\"\nticket = \"INC-1\"\nnot_before = \"2026-05-16T09:00:00Z\"\nexpires_at = \"2026-05-16T13:00:00Z\"\n";

    fn at(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    #[test]
    fn deploy_findings_names_window_event_reason_end_and_next_open() {
        let dir = tempfile::tempdir().unwrap();
        let cal = dir.path().join("freeze.toml");
        std::fs::write(&cal, CAL).unwrap();
        let found = deploy_findings(&cal, None, "production", "survey-api", at("2026-05-12T12:00:00Z"), None).unwrap();
        assert_eq!(found.len(), 1);
        let f = &found[0];
        assert_eq!((f.rule.as_str(), f.severity, f.line), ("change-freeze", Severity::Error, 8));
        assert_eq!(f.file, cal.to_string_lossy().replace('\\', "/"));
        for part in [
            "`bird-count-freeze`",
            "Spring Bird Count (`count`)",
            "No production changes before the count",
            "ends 2026-05-18T23:00:00Z",
            "next open 2026-05-18T23:00:00Z",
        ] {
            assert!(f.message.contains(part), "{part} missing from {}", f.message);
        }
        assert_eq!(f.evidence.as_ref().unwrap()["id"], "bird-count-freeze");
        assert!(deploy_findings(&cal, None, "staging", "survey-api", at("2026-05-12T12:00:00Z"), None)
            .unwrap()
            .is_empty());
    }

    #[test]
    fn a_freeze_with_no_opening_within_the_horizon_says_so_in_plain_words() {
        let dir = tempfile::tempdir().unwrap();
        let cal = dir.path().join("freeze.toml");
        let long = "[[window]]\nid = \"rebuild\"\nkind = \"deny\"\nstart = \"2026-01-01T00:00\"\nend = \"2030-01-01T00:00\"\nreason = \"Rebuild.\"\n";
        std::fs::write(&cal, long).unwrap();
        let found = deploy_findings(&cal, None, "production", "api", at("2026-05-12T12:00:00Z"), None).unwrap();
        let (message, help) = (&found[0].message, &*found[0].help);
        assert!(
            message.ends_with("; nothing opens before 2028-05-11T12:00:00Z (searched 730 days ahead)"),
            "{message}"
        );
        assert!(
            help.starts_with(
                "Nothing opens within the 730 days searched (to 2028-05-11T12:00:00Z): get an emergency override"
            ),
            "{help}"
        );
        assert!(!message.contains("next open none") && !help.contains("none before"));
    }

    #[test]
    fn deploy_findings_with_overrides_audits_and_reports() {
        let dir = tempfile::tempdir().unwrap();
        let cal = dir.path().join("freeze.toml");
        std::fs::write(&cal, CAL).unwrap();
        std::fs::write(dir.path().join("overrides.toml"), OVR).unwrap();
        let audit = dir.path().join("audit").join(AUDIT_FILE);
        let found =
            deploy_findings(&cal, None, "production", "survey-api", at("2026-05-16T10:00:00Z"), Some(&audit)).unwrap();
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].severity, Severity::Info);
        assert!(found[0].message.contains("lifted for survey-api to production by override `ovr-1`"));
        let log = std::fs::read_to_string(&audit).unwrap();
        assert!(log.contains("\"override\":\"ovr-1\"") && log.contains("\"command\":\"check\""), "{log}");
        // Expired: an error for the freeze and a warning for the override.
        let found =
            deploy_findings(&cal, None, "production", "survey-api", at("2026-05-16T14:00:00Z"), Some(&audit)).unwrap();
        let severities: Vec<_> = found.iter().map(|f| f.severity).collect();
        assert_eq!(severities, [Severity::Error, Severity::Warning]);
        assert!(found[1].message.contains("has expired"));
        assert_eq!(found[1].line, 1);
    }

    #[test]
    fn the_audit_log_defaults_to_the_cache_directory_and_is_refused_among_the_policies() {
        let dir = tempfile::tempdir().unwrap();
        let loaded = config::load(None, dir.path(), &crate::lint::rule_level_problem).unwrap();
        let cache = dir.path().join("cache");
        let options = FreezeOptions::resolve(&loaded, None, None, None, Some(&cache));
        assert_eq!(options.audit_log, cache.join(AUDIT_FILE));
        let policies = loaded.policies_dir();
        assert!(options.check_audit_log(std::slice::from_ref(&policies)).is_ok());
        let inside = FreezeOptions::resolve(&loaded, None, None, Some(&policies.join("log.jsonl")), Some(&cache));
        let e = inside.check_audit_log(std::slice::from_ref(&policies)).unwrap_err().to_string();
        assert!(e.contains("log.jsonl: the freeze audit log is inside the policies directory"), "{e}");
        let calendar = dir.path().join("elsewhere/freeze.toml");
        let onto = FreezeOptions::resolve(&loaded, Some(&calendar), None, Some(&calendar), Some(&cache));
        assert!(onto.check_audit_log(&[]).unwrap_err().to_string().contains("is a freeze file the gate reads"));
    }

    #[test]
    fn relative_to_shortens_only_the_paths_below_the_directory() {
        let options = FreezeOptions {
            calendar: PathBuf::from("/repo/policies/freeze.toml"),
            overrides: Some(PathBuf::from("/elsewhere/overrides.toml")),
            audit_log: PathBuf::from("/repo/freeze-audit.jsonl"),
            max_override_hours: 4,
            cache: CalendarCache::disabled(),
        }
        .relative_to(Path::new("/repo"));
        assert_eq!(options.calendar, Path::new("policies/freeze.toml"));
        assert_eq!(options.overrides.as_deref(), Some(Path::new("/elsewhere/overrides.toml")));
        assert_eq!(options.audit_log, Path::new("freeze-audit.jsonl"));
    }

    #[test]
    fn deploy_findings_fails_closed_on_a_bad_calendar() {
        let dir = tempfile::tempdir().unwrap();
        let cal = dir.path().join("freeze.toml");
        std::fs::write(&cal, CAL.replace("Europe/London", "Europe/Londres")).unwrap();
        let e = deploy_findings(&cal, None, "production", "x", at("2026-05-12T12:00:00Z"), None).unwrap_err();
        assert!(e.to_string().contains(":1: [[event]] `count`: unknown time zone `Europe/Londres`"), "{e}");
        // Issue 16: a 300,000-year lead is a configuration error for `sluice check --env` too.
        std::fs::write(&cal, CAL.replace("lead = \"P7D\"", "lead = \"P300000Y\"")).unwrap();
        let e = deploy_findings(&cal, None, "production", "x", at("2026-05-12T12:00:00Z"), None).unwrap_err();
        assert!(
            e.to_string().contains(":8: [[window]] `bird-count-freeze`: lead: `P300000Y` is longer than 100 years"),
            "{e}"
        );
    }
}
