//! Emergency overrides (`policies/overrides.toml`): lift named windows, for named services and
//! environments, for a few approved hours.
//!
//! A malformed file (TOML syntax, unknown keys) is a configuration error. An override that breaks
//! a rule (no reason or ticket, self-approved, too long, unknown window) is *invalid*: it is
//! loaded so it can be reported, but it never lifts anything.

use super::calendar::{Calendar, Scope};
use super::input::read_regular_text;
use crate::error::{line_of_offset, parse_toml, Error, Result};
use chrono::{DateTime, Duration, Utc};
use serde::Deserialize;
use std::path::{Path, PathBuf};
use toml::Spanned;

pub const DEFAULT_MAX_OVERRIDE_HOURS: u32 = 4;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    #[serde(default, rename = "override")]
    overrides: Vec<Spanned<RawOverride>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawOverride {
    id: String,
    #[serde(default)]
    windows: Vec<String>,
    services: Option<Vec<String>>,
    environments: Option<Vec<String>>,
    requested_by: Option<String>,
    approved_by: Option<String>,
    reason: Option<String>,
    ticket: Option<String>,
    not_before: Option<String>,
    expires_at: Option<String>,
}

#[derive(Clone, Debug)]
pub struct Override {
    pub id: String,
    pub windows: Vec<String>,
    pub services: Scope,
    pub environments: Scope,
    pub requested_by: String,
    pub approved_by: String,
    pub reason: String,
    pub ticket: String,
    pub not_before: Option<DateTime<Utc>>,
    pub expires_at: Option<DateTime<Utc>>,
    pub line: usize,
    /// Why it is invalid; empty when valid.
    pub problems: Vec<String>,
}

impl Override {
    pub fn is_valid(&self) -> bool {
        self.problems.is_empty()
    }

    pub fn in_force(&self, t: DateTime<Utc>) -> bool {
        matches!((self.not_before, self.expires_at), (Some(a), Some(b)) if a <= t && t < b)
    }

    /// Whether it concerns this deploy and window (validity and time aside). Overrides need a
    /// concrete service and environment: they never lift a query about "everything".
    pub fn concerns(&self, window: &str, env: Option<&str>, service: Option<&str>) -> bool {
        env.is_some()
            && service.is_some()
            && self.windows.iter().any(|w| w == window)
            && self.services.matches(service)
            && self.environments.matches(env)
    }

    /// `[not_before, expires_at)` when valid.
    pub fn interval(&self) -> Option<(DateTime<Utc>, DateTime<Utc>)> {
        if !self.is_valid() {
            return None;
        }
        Some((self.not_before?, self.expires_at?))
    }

    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "id": self.id,
            "windows": self.windows,
            "services": self.services.patterns,
            "environments": self.environments.patterns,
            "requested_by": self.requested_by,
            "approved_by": self.approved_by,
            "reason": self.reason,
            "ticket": self.ticket,
            "not_before": self.not_before.map(super::time::utc_string),
            "expires_at": self.expires_at.map(super::time::utc_string),
            "valid": self.is_valid(),
            "problems": self.problems,
        })
    }
}

#[derive(Clone, Debug, Default)]
pub struct Overrides {
    pub path: Option<PathBuf>,
    pub list: Vec<Override>,
    /// The commit the file was read from (`sluice check` reads it from the base revision), for the audit log.
    pub commit: Option<String>,
}

/// Characters that print nothing: zero-width spaces and joiners, bidirectional marks, the BOM,
/// soft hyphens. A ticket or a name made only of these is empty.
fn invisible(c: char) -> bool {
    matches!(c, '\u{00AD}' | '\u{034F}' | '\u{061C}' | '\u{115F}' | '\u{1160}' | '\u{17B4}' | '\u{17B5}'
        | '\u{180B}'..='\u{180F}' | '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2060}'..='\u{206F}'
        | '\u{3164}' | '\u{FE00}'..='\u{FE0F}' | '\u{FEFF}' | '\u{FFA0}' | '\u{E0000}'..='\u{E0FFF}')
}

fn visible(c: char) -> bool {
    !c.is_whitespace() && !c.is_control() && !invisible(c)
}

/// Whether two names are the same person's: compared after dropping invisible characters, with
/// Unicode compatibility caseless matching (case folding and NFKD, Unicode §3.13 D146), so
/// "Åsa" and "åsa", or "ｂｏｂ" and "Bob", are one approver.
fn same_person(a: &str, b: &str) -> bool {
    let clean = |s: &str| s.chars().filter(|c| !invisible(*c)).collect::<String>().trim().to_string();
    caseless::compatibility_caseless_match_str(&clean(a), &clean(b))
}

/// Loads an overrides file, validating each override against `calendar` and `max_hours`.
pub fn load(path: &Path, calendar: &Calendar, max_hours: u32) -> Result<Overrides> {
    let text = read_regular_text(path)?;
    parse(path, &text, calendar, max_hours)
}

pub fn parse(path: &Path, text: &str, calendar: &Calendar, max_hours: u32) -> Result<Overrides> {
    let raw: RawFile = parse_toml(path, text)?;
    let mut list: Vec<Override> = Vec::new();
    for spanned in raw.overrides {
        let line = line_of_offset(text, spanned.span().start);
        let r = spanned.into_inner();
        let mut problems = Vec::new();
        let text_of = |v: Option<String>| v.map(|s| s.trim().to_string()).unwrap_or_default();
        let (reason, ticket) = (text_of(r.reason), text_of(r.ticket));
        let (requested_by, approved_by) = (text_of(r.requested_by), text_of(r.approved_by));
        if reason.is_empty() {
            problems.push("no `reason`".to_string());
        }
        if !ticket.chars().any(visible) {
            problems.push(if ticket.is_empty() {
                "no `ticket`".to_string()
            } else {
                "`ticket` has no visible characters".to_string()
            });
        }
        if requested_by.is_empty() {
            problems.push("no `requested_by`".to_string());
        }
        if approved_by.is_empty() {
            problems.push("no `approved_by`".to_string());
        } else if same_person(&approved_by, &requested_by) {
            problems.push(format!("approved by its own requester `{requested_by}`; a second person must approve"));
        }
        if let Some(first) = list.iter().find(|o| o.id == r.id) {
            // Rejected outright: the first of two overrides with one id would otherwise still lift.
            return Err(Error::invalid(
                path,
                Some(line),
                format!(
                    "[[override]] `{}`: duplicate override id (also at line {}); ids must be unique",
                    r.id, first.line
                ),
            ));
        }
        if r.windows.is_empty() {
            problems.push("names no `windows`".to_string());
        }
        for w in &r.windows {
            if calendar.window(w).is_none() {
                problems.push(format!("names unknown window `{w}`"));
            }
        }
        let instant = |key: &str, v: &Option<String>, problems: &mut Vec<String>| match v {
            None => {
                problems.push(format!("no `{key}`"));
                None
            }
            Some(s) => match DateTime::parse_from_rfc3339(s) {
                Ok(t) => Some(t.with_timezone(&Utc)),
                Err(_) => {
                    problems.push(format!("`{key}` = `{s}` is not an RFC 3339 time (2026-05-16T09:00:00Z)"));
                    None
                }
            },
        };
        let not_before = instant("not_before", &r.not_before, &mut problems);
        let expires_at = instant("expires_at", &r.expires_at, &mut problems);
        if let (Some(a), Some(b)) = (not_before, expires_at) {
            if b <= a {
                problems.push("`expires_at` is not after `not_before`".to_string());
            } else if b - a > Duration::hours(max_hours as i64) {
                problems.push(format!(
                    "lasts {} h, more than max_override_hours = {max_hours}",
                    ((b - a).num_minutes() as f64 / 60.0 * 10.0).round() / 10.0
                ));
            }
        }
        let services = match r.services {
            None => {
                problems.push("names no `services` (an override lifts a freeze only for the services it lists; `services = [\"*\"]` for every one)".to_string());
                Scope::all()
            }
            Some(s) => Scope::new(Some(s)).unwrap_or_else(|m| {
                problems.push(format!("services: {m}"));
                Scope::all()
            }),
        };
        let environments = match r.environments {
            None => {
                problems.push("names no `environments` (an override lifts a freeze only in the environments it lists; `environments = [\"*\"]` for every one)".to_string());
                Scope::all()
            }
            Some(s) => Scope::new(Some(s)).unwrap_or_else(|m| {
                problems.push(format!("environments: {m}"));
                Scope::all()
            }),
        };
        list.push(Override {
            id: r.id,
            windows: r.windows,
            services,
            environments,
            requested_by,
            approved_by,
            reason,
            ticket,
            not_before,
            expires_at,
            line,
            problems,
        });
    }
    Ok(Overrides { path: Some(path.to_path_buf()), list, commit: None })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::freeze::calendar;

    fn cal() -> Calendar {
        calendar::parse(
            Path::new("freeze.toml"),
            "[[window]]\nid = \"bird-count-freeze\"\nkind = \"deny\"\nstart = \"2026-05-10T00:00\"\nend = \"2026-05-19T00:00\"\n",
        )
        .unwrap()
    }

    const VALID: &str = r#"
[[override]]
id = "ovr-1"
windows = ["bird-count-freeze"]
services = ["survey-api"]
environments = ["production"]
requested_by = "alice"
approved_by = "bob"
reason = "SEV-1 fix for submission failures"
ticket = "INC-4521"
not_before = "2026-05-16T09:00:00Z"
expires_at = "2026-05-16T13:00:00Z"
"#;

    fn problems(text: &str) -> Vec<String> {
        parse(Path::new("overrides.toml"), text, &cal(), DEFAULT_MAX_OVERRIDE_HOURS).unwrap().list[0].problems.clone()
    }

    #[test]
    fn a_complete_override_is_valid_and_scoped() {
        let o = &parse(Path::new("o.toml"), VALID, &cal(), 4).unwrap().list[0];
        assert!(o.is_valid(), "{:?}", o.problems);
        assert_eq!(o.line, 2);
        let t = |s: &str| DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc);
        assert!(o.in_force(t("2026-05-16T09:00:00Z")));
        assert!(!o.in_force(t("2026-05-16T13:00:00Z")));
        assert!(!o.in_force(t("2026-05-16T08:59:59Z")));
        assert!(o.concerns("bird-count-freeze", Some("production"), Some("survey-api")));
        assert!(!o.concerns("bird-count-freeze", Some("staging"), Some("survey-api")));
        assert!(!o.concerns("bird-count-freeze", Some("production"), Some("planner-web")));
        assert!(!o.concerns("other", Some("production"), Some("survey-api")));
        assert!(!o.concerns("bird-count-freeze", None, None));
    }

    #[test]
    fn each_rule_makes_an_override_invalid() {
        assert_eq!(problems(&VALID.replace("reason = \"SEV-1 fix for submission failures\"\n", "")), ["no `reason`"]);
        assert_eq!(problems(&VALID.replace("ticket = \"INC-4521\"\n", "ticket = \" \"\n")), ["no `ticket`"]);
        assert_eq!(
            problems(&VALID.replace("approved_by = \"bob\"", "approved_by = \"Alice\"")),
            ["approved by its own requester `alice`; a second person must approve"]
        );
        assert_eq!(
            problems(&VALID.replace("13:00:00Z", "13:30:00Z")),
            ["lasts 4.5 h, more than max_override_hours = 4"]
        );
        assert_eq!(problems(&VALID.replace("13:00:00Z", "08:00:00Z")), ["`expires_at` is not after `not_before`"]);
        assert_eq!(
            problems(&VALID.replace("[\"bird-count-freeze\"]", "[\"bird-count\"]")),
            ["names unknown window `bird-count`"]
        );
        assert_eq!(problems(&VALID.replace("expires_at = \"2026-05-16T13:00:00Z\"\n", "")), ["no `expires_at`"]);
        // Scopes are never assumed: an override without them lifts nothing, and says how to write "all".
        let unscoped = problems(&VALID.replace("services = [\"survey-api\"]\n", ""));
        assert_eq!(unscoped.len(), 1);
        assert!(
            unscoped[0].starts_with("names no `services`") && unscoped[0].contains("`services = [\"*\"]`"),
            "{unscoped:?}"
        );
        let unscoped = problems(&VALID.replace("environments = [\"production\"]\n", ""));
        assert!(unscoped[0].starts_with("names no `environments`") && unscoped[0].contains("[\"*\"]"), "{unscoped:?}");
        // max_override_hours from sluice.toml
        let o = &parse(Path::new("o.toml"), &VALID.replace("13:00:00Z", "16:00:00Z"), &cal(), 8).unwrap().list[0];
        assert!(o.is_valid());
    }

    #[test]
    fn self_approval_is_caught_beyond_ascii_and_invisible_tickets_are_empty() {
        let selfie = |requested: &str, approved: &str| {
            problems(
                &VALID.replace("\"alice\"", &format!("\"{requested}\"")).replace("\"bob\"", &format!("\"{approved}\"")),
            )
        };
        for (a, b) in
            [("Åsa", "åsa"), ("ÅSA", "åsa"), ("bob", "ｂｏｂ"), ("Straße", "STRASSE"), ("al\u{200B}ice", "Alice")]
        {
            let p = selfie(a, b);
            assert!(p.iter().any(|m| m.contains("approved by its own requester")), "{a} / {b}: {p:?}");
        }
        assert!(selfie("Åsa", "Åke").is_empty());
        for ticket in ["\u{200B}", "\u{200B}\u{FEFF} \u{2060}", "\t"] {
            let p = problems(&VALID.replace("\"INC-4521\"", &format!("\"{ticket}\"")));
            assert!(p.iter().any(|m| m.contains("ticket")), "{ticket:?}: {p:?}");
        }
    }

    #[test]
    fn duplicate_override_ids_are_rejected() {
        let e = parse(Path::new("o.toml"), &format!("{VALID}\n{VALID}"), &cal(), 4).unwrap_err().to_string();
        assert!(e.starts_with("o.toml:15: [[override]] `ovr-1`: duplicate override id (also at line 2)"), "{e}");
    }

    #[test]
    fn unknown_keys_are_configuration_errors() {
        let e = parse(Path::new("o.toml"), &VALID.replace("ticket =", "tiket ="), &cal(), 4).unwrap_err().to_string();
        assert!(e.starts_with("o.toml:") && e.contains("tiket"), "{e}");
    }
}
