//! Renderers for the answers of `sluice freeze …` (see [`crate::freeze::answer`]): a table or text
//! for people, a JSON document for scripts.
//!
//! Here rather than in `src/freeze/` because this module (`report`) is where Sluice keeps every
//! output format: the freeze answers are not findings, but a reader looking for "what does sluice
//! print" finds all of it in one place, and `freeze` stays free of comfy-table and JSON shapes.
//! The JSON key order is part of the output contract: the `json!` objects below serialize their
//! keys sorted, and `ListRow` in declaration order.

use crate::error::{Error, Result};
use crate::freeze::answer::{LintAnswer, ListAnswer, NextOpenAnswer, StatusAnswer};
use crate::freeze::decide::NextOpen;
use crate::freeze::time::{local_string, utc_string};
use crate::freeze::zone::Zone;
use crate::freeze::{entry_json, next_open_string};
use comfy_table::{presets::UTF8_FULL_CONDENSED, ContentArrangement, Table};
use serde_json::json;
use std::path::Path;

fn new_table(header: &[&str]) -> Table {
    let mut table = Table::new();
    table.load_style(UTF8_FULL_CONDENSED);
    table.set_content_arrangement(ContentArrangement::Disabled);
    table.set_header(header.iter().copied());
    table
}

/// Pretty-printed, with a final newline.
fn pretty(value: &impl serde::Serialize) -> Result<String> {
    let mut text = serde_json::to_string_pretty(value).map_err(|e| Error::Other(e.to_string()))?;
    text.push('\n');
    Ok(text)
}

/// `Some(t)` for an open instant; `None` with the note saying why there is none.
fn next_open_parts(next: &NextOpen) -> (Option<String>, Option<String>) {
    match next {
        NextOpen::At(t) => (Some(utc_string(*t)), None),
        n => (None, Some(next_open_string(n))),
    }
}

pub fn status_json(answer: &StatusAnswer) -> Result<String> {
    let (status, cal, q) = (&answer.status, answer.calendar, answer.query);
    let used = answer.used();
    let (next_open, note) = next_open_parts(&status.next_open);
    pretty(&json!({
        "frozen": status.frozen,
        "at": utc_string(status.at),
        "environment": q.env,
        "service": q.service,
        "windows": status.entries.iter().map(|e| entry_json(cal, answer.overrides, e)).collect::<Vec<_>>(),
        "next_open": next_open,
        "next_open_note": note,
        "override": used.first().map(|o| o.to_json()),
        "overrides_used": used.iter().map(|o| o.id.clone()).collect::<Vec<_>>(),
        "override_problems": status.override_problems.iter().map(|(_, m)| m.clone()).collect::<Vec<_>>(),
        "calendar": cal.path.to_string_lossy(),
        "calendar_sha256": cal.digest,
    }))
}

/// `audit_log`: where a decision that used an override was logged, for the override line.
pub fn status_table(answer: &StatusAnswer, audit_log: &Path) -> String {
    let (status, q) = (&answer.status, answer.query);
    let target = format!("{} to {}", q.service.unwrap_or("any service"), q.env.unwrap_or("any environment"));
    let verdict = if status.frozen { "FROZEN" } else { "OPEN" };
    let mut out = format!("{verdict}: deploy of {target} at {}\n", utc_string(status.at));
    if !status.entries.is_empty() {
        let mut table = new_table(&[
            "window",
            "kind",
            "state",
            "event",
            "start (local)",
            "end (local)",
            "start UTC",
            "end UTC",
            "reason",
        ]);
        for e in &status.entries {
            let j = entry_json(answer.calendar, answer.overrides, e);
            let s = |k: &str| j[k].as_str().unwrap_or("").to_string();
            let state = match &j["lifted_by"] {
                serde_json::Value::String(by) => format!("lifted by {by}"),
                _ => s("state"),
            };
            table.add_row([
                s("id"),
                s("kind"),
                state,
                s("event"),
                s("start_local"),
                s("end_local"),
                s("start"),
                s("end"),
                s("reason"),
            ]);
        }
        out.push_str(&format!("{table}\n"));
    }
    if status.frozen {
        out.push_str(&format!("next open: {}\n", next_open_string(&status.next_open)));
    }
    for o in answer.used() {
        out.push_str(&format!(
            "override: {} ({}, requested by {}, approved by {}) until {}; logged to {}\n",
            o.id,
            o.ticket,
            o.requested_by,
            o.approved_by,
            o.expires_at.map(utc_string).unwrap_or_default(),
            audit_log.display()
        ));
    }
    for (_, problem) in &status.override_problems {
        out.push_str(&format!("warning: {problem}\n"));
    }
    out
}

pub fn list_json(answer: &ListAnswer) -> Result<String> {
    // A typed row rather than `json!`: a year of a 10,000-event calendar is thousands of rows.
    #[derive(serde::Serialize)]
    struct ListRow<'a> {
        id: &'a str,
        kind: &'static str,
        event: Option<&'a str>,
        event_name: Option<&'a str>,
        start: String,
        end: String,
        timezone: &'static str,
        start_local: String,
        end_local: String,
        environments: &'a Option<Vec<String>>,
        services: &'a Option<Vec<String>>,
        reason: &'a str,
    }
    #[derive(serde::Serialize)]
    struct Listing<'a> {
        from: String,
        to: String,
        occurrences: Vec<ListRow<'a>>,
    }
    let occurrences = answer
        .rows()
        .map(|r| ListRow {
            id: &r.window.id,
            kind: r.window.kind.as_str(),
            event: r.event.map(|e| e.id.as_str()),
            event_name: r.event.map(|e| e.name.as_str()),
            start: utc_string(r.occurrence.start),
            end: utc_string(r.occurrence.end),
            timezone: r.tz.name(),
            start_local: local_string(r.occurrence.start, r.tz),
            end_local: local_string(r.occurrence.end, r.tz),
            environments: &r.window.environments.patterns,
            services: &r.window.services.patterns,
            reason: &r.window.reason,
        })
        .collect();
    pretty(&Listing { from: utc_string(answer.from), to: utc_string(answer.to), occurrences })
}

pub fn list_table(answer: &ListAnswer) -> String {
    let mut table = new_table(&[
        "window",
        "kind",
        "event",
        "start (local)",
        "end (local)",
        "start UTC",
        "end UTC",
        "environments",
        "services",
    ]);
    for r in answer.rows() {
        let (o, w) = (r.occurrence, r.window);
        table.add_row([
            w.id.clone(),
            w.kind.as_str().to_string(),
            r.event.map(|e| e.id.clone()).unwrap_or_default(),
            local_string(o.start, r.tz),
            local_string(o.end, r.tz),
            utc_string(o.start),
            utc_string(o.end),
            w.environments.describe(),
            w.services.describe(),
        ]);
    }
    format!(
        "{table}\n{} occurrence(s) from {} to {}\n",
        answer.occurrences.len(),
        utc_string(answer.from),
        utc_string(answer.to)
    )
}

pub fn next_open_json(answer: &NextOpenAnswer) -> Result<String> {
    let (next_open, note) = next_open_parts(&answer.next);
    pretty(&json!({
        "after": utc_string(answer.after),
        "environment": answer.query.env,
        "service": answer.query.service,
        "min_duration": answer.min_duration.to_string(),
        "next_open": next_open,
        "open_until": answer.open_until.map(utc_string),
        "note": note,
    }))
}

/// `tz`: the zone local times are shown in.
pub fn next_open_text(answer: &NextOpenAnswer, tz: Zone) -> String {
    match answer.next {
        NextOpen::At(t) => format!(
            "next open: {} ({}), open until {}\n",
            utc_string(t),
            local_string(t, tz),
            answer.open_until.map_or_else(
                || "beyond the search horizon".to_string(),
                |u| format!("{} ({})", utc_string(u), local_string(u, tz))
            )
        ),
        ref n => format!("no open window of {}: {}\n", answer.min_duration, next_open_string(n)),
    }
}

pub fn lint_json(answer: &LintAnswer) -> Result<String> {
    pretty(&json!({
        "calendar": answer.calendar,
        "valid": true,
        "events": answer.events,
        "windows": answer.windows,
        "overrides": answer.overrides,
        "warnings": answer.warnings,
    }))
}

pub fn lint_text(answer: &LintAnswer) -> String {
    let mut out: String = answer.warnings.iter().map(|w| format!("warning: {}\n", w.message)).collect();
    out.push_str(&format!(
        "{}: valid: {} event(s), {} window(s), {} override(s); {} warning(s)\n",
        answer.calendar,
        answer.events,
        answer.windows,
        answer.overrides,
        answer.warnings.len()
    ));
    out
}
