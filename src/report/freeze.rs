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
use crate::freeze::calendar::{Calendar, Kind};
use crate::freeze::decide::{self, Entry, NextOpen, State};
use crate::freeze::time::{local_string, utc_string};
use crate::freeze::zone::Zone;
use crate::freeze::{entry_json, next_open_string};
use chrono::{DateTime, Utc};
use comfy_table::{presets::UTF8_FULL_CONDENSED, ContentArrangement, Table};
use serde_json::json;
use std::path::Path;

/// Below this many columns, tables drop to a compact layout.
pub const COMPACT_BELOW: u16 = 100;

/// The width tables must fit: `COLUMNS` when set, else the terminal's, else 100 (for logs and
/// pipes, where no width is known).
pub fn terminal_width() -> u16 {
    if let Some(w) = std::env::var("COLUMNS").ok().and_then(|c| c.trim().parse::<u16>().ok()).filter(|w| *w >= 20) {
        return w;
    }
    Table::new().width().filter(|w| *w >= 20).unwrap_or(COMPACT_BELOW)
}

/// Appends `text` as lines of at most `width` columns, broken between words (a word longer
/// than the line stays whole); continuation lines are indented four columns past the first,
/// so they never read as the two-column sub-lines (`  blocked until then by: …`). The one-line
/// answers wrap like the tables do.
fn push_wrapped(out: &mut String, text: &str, width: u16) {
    let width = usize::from(width);
    let own = text.len() - text.trim_start().len();
    let indent = own + 4;
    let mut column = 0;
    for (i, word) in text.trim_start().split(' ').enumerate() {
        let len = word.chars().count();
        if i == 0 {
            out.push_str(&text[..own]);
            column = own;
        } else if column + 1 + len > width && column > indent {
            out.push('\n');
            out.push_str(&" ".repeat(indent));
            column = indent;
        } else {
            out.push(' ');
            column += 1;
        }
        out.push_str(word);
        column += len;
    }
    out.push('\n');
}

fn new_table(header: &[&str], width: u16) -> Table {
    let mut table = Table::new();
    table.load_style(UTF8_FULL_CONDENSED);
    // Wrap cell text to fit the width (comfy-table's dynamic arrangement).
    table.set_content_arrangement(ContentArrangement::Dynamic);
    table.set_width(width);
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

/// The zone an entry's times are shown in: its event's for an anchored window, else the window's.
fn entry_tz(calendar: &Calendar, entry: &Entry) -> Zone {
    entry
        .occurrence
        .as_ref()
        .and_then(|o| o.event)
        .map_or_else(|| calendar.windows[entry.window].display_tz(calendar), |e| calendar.events[e].tz)
}

/// `09:30 EST (14:30Z)` when `t` falls on the same local day as `reference`, else with dates:
/// `2026-05-18 23:00 BST (2026-05-18 22:00Z)`.
fn when(t: DateTime<Utc>, tz: Zone, reference: DateTime<Utc>) -> String {
    let local = tz.local(t);
    let same_day = local.date() == tz.local(reference).date();
    if tz.offset_seconds(t) == 0 && tz.abbreviation(t) == "UTC" {
        return t.format(if same_day { "%H:%MZ" } else { "%Y-%m-%d %H:%MZ" }).to_string();
    }
    if same_day {
        format!("{} {} ({}Z)", local.format("%H:%M"), tz.abbreviation(t), t.format("%H:%M"))
    } else {
        format!("{} {} ({}Z)", local.format("%Y-%m-%d %H:%M"), tz.abbreviation(t), t.format("%Y-%m-%d %H:%M"))
    }
}

/// The ids of the windows, and the first reason any of them gives.
fn names_and_reason(calendar: &Calendar, entries: &[Entry]) -> (String, String) {
    let mut ids: Vec<String> = Vec::new();
    for e in entries {
        let w = &calendar.windows[e.window];
        let id = match (w.kind, &e.state) {
            (Kind::Allow, State::Outside) => format!("{} (deploys only inside it)", w.id),
            _ => w.id.clone(),
        };
        if !ids.contains(&id) {
            ids.push(id);
        }
    }
    let reason = entries.iter().map(|e| calendar.windows[e.window].reason.trim()).find(|r| !r.is_empty()).unwrap_or("");
    (ids.join(", "), reason.to_string())
}

fn with_reason(reason: &str) -> String {
    if reason.is_empty() {
        String::new()
    } else {
        format!(" — {}", reason.trim_end_matches('.'))
    }
}

pub fn status_json(answer: &StatusAnswer) -> Result<String> {
    let (status, cal, q) = (&answer.status, answer.calendar, answer.query);
    let used = answer.used();
    let (next_open, note) = next_open_parts(&status.next_open);
    let blocking: Vec<_> = if status.frozen {
        status.entries.iter().filter(|e| matches!(e.state, State::Active | State::Outside)).collect()
    } else {
        answer.open_until.iter().flat_map(|(_, entries)| entries).collect()
    };
    pretty(&json!({
        "frozen": status.frozen,
        "at": utc_string(status.at),
        "environment": q.env,
        "service": q.service,
        "frozen_until": if status.frozen { next_open.clone() } else { None },
        "open_until": answer.open_until.as_ref().map(|(t, _)| utc_string(*t)),
        "blocking": blocking.iter().map(|e| entry_json(cal, answer.overrides, e)).collect::<Vec<_>>(),
        "windows": status.entries.iter().map(|e| entry_json(cal, answer.overrides, e)).collect::<Vec<_>>(),
        "next_open": next_open,
        "next_open_note": note,
        "override": used.first().map(|o| o.to_json()),
        "overrides_used": used.iter().map(|o| o.id.clone()).collect::<Vec<_>>(),
        "override_problems": status.override_problems.iter().map(|(_, m)| m.clone()).collect::<Vec<_>>(),
        "notes": answer.notes,
        "calendar": cal.path.to_string_lossy(),
        "calendar_sha256": cal.digest,
    }))
}

/// The first line of `freeze status`: the verdict, until when, by what, and why.
fn status_headline(answer: &StatusAnswer, tz: Option<Zone>) -> String {
    let (status, cal) = (&answer.status, answer.calendar);
    if status.frozen {
        let blocking: Vec<Entry> =
            status.entries.iter().filter(|e| matches!(e.state, State::Active | State::Outside)).cloned().collect();
        let (ids, reason) = names_and_reason(cal, &blocking);
        let zone = tz.or(blocking.first().map(|e| entry_tz(cal, e))).unwrap_or(cal.default_tz);
        let until = match status.next_open {
            NextOpen::At(t) => format!("until {}", when(t, zone, status.at)),
            NextOpen::NoneWithin(t) => {
                format!(
                    "with no opening before {} (searched {} days ahead)",
                    when(t, zone, status.at),
                    decide::HORIZON_DAYS
                )
            }
        };
        return format!("FROZEN {until} by {ids}{}", with_reason(&reason));
    }
    let used = answer.used();
    match &answer.open_until {
        Some((t, entries)) if !used.is_empty() => {
            let (ids, _) = names_and_reason(cal, entries);
            let zone = tz.or(entries.first().map(|e| entry_tz(cal, e))).unwrap_or(cal.default_tz);
            let by: Vec<&str> = used.iter().map(|o| o.id.as_str()).collect();
            format!("OPEN by override {} until {}, when {ids} applies again", by.join(", "), when(*t, zone, status.at))
        }
        Some((t, entries)) => {
            let (ids, reason) = names_and_reason(cal, entries);
            let zone = tz.or(entries.first().map(|e| entry_tz(cal, e))).unwrap_or(cal.default_tz);
            format!("OPEN until {}, when {ids} freezes it{}", when(*t, zone, status.at), with_reason(&reason))
        }
        None => format!("OPEN: no freeze applies within the next {} days", decide::HORIZON_DAYS),
    }
}

/// `audit_log`: where a decision that used an override was logged, for the override line.
/// `tz`: the zone of `--tz`, preferred for local times in the first line.
pub fn status_table(answer: &StatusAnswer, audit_log: &Path, tz: Option<Zone>) -> String {
    let (status, q, cal) = (&answer.status, answer.query, answer.calendar);
    let width = terminal_width();
    let mut out = String::new();
    for note in &answer.notes {
        push_wrapped(&mut out, &format!("note: {note}"), width);
    }
    push_wrapped(&mut out, &status_headline(answer, tz), width);
    let target = format!("{} to {}", q.service.unwrap_or("any service"), q.env.unwrap_or("any environment"));
    let at_local = tz.map(|z| format!(" ({})", local_string(status.at, z))).unwrap_or_default();
    push_wrapped(&mut out, &format!("deploy of {target} at {}{at_local}", utc_string(status.at)), width);
    let shown: Vec<&Entry> = if status.entries.is_empty() {
        answer.open_until.iter().flat_map(|(_, e)| e).collect()
    } else {
        status.entries.iter().collect()
    };
    if !shown.is_empty() {
        let compact = width < COMPACT_BELOW;
        let header: &[&str] = if compact {
            &["window", "state", "when", "reason"]
        } else {
            &["window", "kind", "state", "event", "when (local)", "UTC", "reason"]
        };
        let mut table = new_table(header, width);
        for e in shown {
            let j = entry_json(cal, answer.overrides, e);
            let s = |k: &str| j[k].as_str().unwrap_or("").to_string();
            let state = match (&j["lifted_by"], status.entries.is_empty()) {
                (serde_json::Value::String(by), _) => format!("lifted by {by}"),
                (_, true) => "next".to_string(),
                _ => s("state"),
            };
            let event =
                e.occurrence.as_ref().and_then(|o| o.event).map(|i| cal.events[i].name.clone()).unwrap_or_default();
            let (local, utc) = match &e.occurrence {
                Some(o) => (span_text(o.start, o.end, entry_tz(cal, e)), span_text(o.start, o.end, Zone::utc())),
                None => (String::new(), String::new()),
            };
            if compact {
                table.add_row([s("id"), state, format!("{local}\n{utc}"), s("reason")]);
            } else {
                table.add_row([s("id"), s("kind"), state, event, local, utc, s("reason")]);
            }
        }
        out.push_str(&format!("{table}\n"));
    }
    for o in answer.used() {
        let line = format!(
            "override: {} ({}, requested by {}, approved by {}) until {}; logged to {}",
            o.id,
            o.ticket,
            o.requested_by,
            o.approved_by,
            o.expires_at.map(utc_string).unwrap_or_default(),
            audit_log.display()
        );
        push_wrapped(&mut out, &line, width);
    }
    for (_, problem) in &status.override_problems {
        push_wrapped(&mut out, &format!("warning: {problem}"), width);
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
        notes: &'a [String],
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
    pretty(&Listing { from: utc_string(answer.from), to: utc_string(answer.to), occurrences, notes: &answer.notes })
}

/// `2026-05-01 07:00–09:30 EDT` within one day, else `2026-05-09 00:00 BST → 2026-05-19 00:00 BST`.
pub fn span_text(start: DateTime<Utc>, end: DateTime<Utc>, tz: Zone) -> String {
    let (a, b) = (tz.local(start), tz.local(end));
    let (za, zb) = (tz.abbreviation(start), tz.abbreviation(end));
    let utc = za == "UTC" && zb == "UTC";
    let (za, zb) = if utc { ("Z".to_string(), "Z".to_string()) } else { (format!(" {za}"), format!(" {zb}")) };
    match (a.date() == b.date(), za == zb) {
        (true, true) => format!("{}–{}{za}", a.format("%Y-%m-%d %H:%M"), b.format("%H:%M")),
        (true, false) => format!("{}{za}–{}{zb}", a.format("%Y-%m-%d %H:%M"), b.format("%H:%M")),
        _ => format!("{}{za} → {}{zb}", a.format("%Y-%m-%d %H:%M"), b.format("%Y-%m-%d %H:%M")),
    }
}

/// Whom a window applies to: `production / planner-*`, `any / any`.
pub fn scope_text(window: &crate::freeze::calendar::Window) -> String {
    let side = |s: &crate::freeze::calendar::Scope| s.patterns.as_ref().map_or("any".to_string(), |p| p.join(", "));
    format!("{} / {}", side(&window.environments), side(&window.services))
}

/// The table of `freeze list`: imported events by their SUMMARY; compact below 100 columns;
/// when the environment or the service is left open, each window's scope.
pub fn list_table(answer: &ListAnswer) -> String {
    let width = terminal_width();
    let compact = width < COMPACT_BELOW;
    let mut header: Vec<&str> = if compact {
        vec!["window", "when (local, then UTC)", "reason"]
    } else {
        vec!["window", "kind", "event", "when (local)", "UTC", "reason"]
    };
    if answer.unscoped && !compact {
        header.insert(1, "scope (env / service)");
    }
    let mut table = new_table(&header, width);
    for r in answer.rows() {
        let (o, w) = (r.occurrence, r.window);
        let utc = span_text(o.start, o.end, Zone::utc());
        let local = span_text(o.start, o.end, r.tz);
        let event = r.event.map(|e| e.name.clone()).unwrap_or_default();
        if compact {
            let mut name = match (w.kind, r.event) {
                (Kind::Allow, _) => format!("{} (allow)", w.id),
                (_, Some(e)) => format!("{}\n{}", w.id, e.name),
                _ => w.id.clone(),
            };
            if answer.unscoped {
                name.push_str(&format!("\nfor {}", scope_text(w)));
            }
            table.add_row([name, format!("{local}\n{utc}"), w.reason.clone()]);
        } else {
            let mut row = vec![w.id.clone(), w.kind.as_str().to_string(), event, local, utc, w.reason.clone()];
            if answer.unscoped {
                row.insert(1, scope_text(w));
            }
            table.add_row(row);
        }
    }
    let mut out = String::new();
    for note in &answer.notes {
        push_wrapped(&mut out, &format!("note: {note}"), width);
    }
    let count = format!("{} occurrence(s)", answer.occurrences.len());
    let range = format!("from {} to {}", utc_string(answer.from), utc_string(answer.to));
    let sep = if count.len() + range.len() < width as usize { " " } else { "\n" };
    out.push_str(&format!("{table}\n{count}{sep}{range}\n"));
    out
}

pub fn next_open_json(answer: &NextOpenAnswer) -> Result<String> {
    let (next_open, note) = next_open_parts(&answer.next);
    let none = crate::freeze::overrides::Overrides::default();
    let entries = |list: &[Entry]| list.iter().map(|e| entry_json(answer.calendar, &none, e)).collect::<Vec<_>>();
    pretty(&json!({
        "after": utc_string(answer.after),
        "environment": answer.query.env,
        "service": answer.query.service,
        "min_duration": answer.min_duration.to_string(),
        "next_open": next_open,
        "open_until": answer.open_until.map(utc_string),
        "blocked_by": entries(&answer.blocked_by),
        "closed_by": entries(&answer.closed_by),
        "within": answer.within.map(|w| json!({"hours": w.text, "timezone": w.zone.name()})),
        "open_windows": std::iter::once((answer.next.clone(), answer.open_until, &answer.closed_by))
            .filter_map(|(n, u, c)| match n { NextOpen::At(t) => Some((t, u, c)), _ => None })
            .chain(answer.later.iter().map(|w| (w.start, w.until, &w.closed_by)))
            .map(|(start, end, closed_by)| json!({
                "start": utc_string(start),
                "end": end.map(utc_string),
                "closed_by": closed_by.iter().map(|e| answer.calendar.windows[e.window].id.clone()).collect::<Vec<_>>(),
            }))
            .collect::<Vec<_>>(),
        "overrides_ignored": answer.overrides_ignored,
        "note": note,
        "notes": answer.notes,
    }))
}

/// One window for next-open: id, event, its occurrence in its own zone (and `tz`) and UTC, reason.
fn describe(calendar: &Calendar, e: &Entry, tz: Option<Zone>) -> String {
    let w = &calendar.windows[e.window];
    let zone = entry_tz(calendar, e);
    let event = e
        .occurrence
        .as_ref()
        .and_then(|o| o.event)
        .map(|i| format!(" ({})", calendar.events[i].name))
        .unwrap_or_default();
    let times = e.occurrence.as_ref().map(|o| {
        let also = tz
            .filter(|z| *z != zone)
            .map(|z| format!("; {} → {}", local_string(o.start, z), local_string(o.end, z)))
            .unwrap_or_default();
        format!(
            " {} → {} in {}{also} ({} → {})",
            local_string(o.start, zone),
            local_string(o.end, zone),
            zone.name(),
            utc_string(o.start),
            utc_string(o.end)
        )
    });
    let role = if e.state == State::Outside { " [allow window: deploys only inside it]" } else { "" };
    format!("{}{event}{role}{}{}", w.id, times.unwrap_or_default(), with_reason(&w.reason))
}

/// `tz`: the zone local times are shown in besides each window's own.
pub fn next_open_text(answer: &NextOpenAnswer, tz: Zone) -> String {
    let width = terminal_width();
    let mut out = String::new();
    let mut line = |text: String| push_wrapped(&mut out, &text, width);
    for note in &answer.notes {
        line(format!("note: {note}"));
    }
    if let Some(within) = answer.within {
        line(format!("only within {} ({})", within.text, within.zone));
    }
    let cal = answer.calendar;
    let extra = Some(tz);
    let closers = |closed_by: &[Entry]| -> Vec<String> {
        match closed_by {
            [] if answer.within.is_some() => vec!["  closed by: the end of the --within hours".to_string()],
            entries => entries.iter().map(|e| format!("  closed by: {}", describe(cal, e, extra))).collect(),
        }
    };
    match answer.next {
        NextOpen::At(t) => {
            line(format!("next open: {} ({})", utc_string(t), local_string(t, tz)));
            for e in &answer.blocked_by {
                line(format!("  blocked until then by: {}", describe(cal, e, extra)));
            }
            match answer.open_until {
                Some(u) => {
                    line(format!("open until: {} ({})", utc_string(u), local_string(u, tz)));
                    closers(&answer.closed_by).into_iter().for_each(&mut line);
                }
                None => line("open until: beyond the search horizon".to_string()),
            }
        }
        ref n => {
            line(format!("no open window of {}: {}", answer.min_duration, next_open_string(n)));
            for e in &answer.blocked_by {
                line(format!("  blocked by: {}", describe(cal, e, extra)));
            }
        }
    }
    for w in &answer.later {
        let until = w.until.map_or("beyond the search horizon".to_string(), |u| {
            format!("{} ({})", utc_string(u), local_string(u, tz))
        });
        line(format!("then open: {} ({}) until {until}", utc_string(w.start), local_string(w.start, tz)));
        closers(&w.closed_by).into_iter().for_each(&mut line);
    }
    if answer.overrides_ignored > 0 {
        line(format!(
            "note: {} override(s) not used: next-open ignores overrides (only `freeze status` and `sluice check` use them, and audit them)",
            answer.overrides_ignored
        ));
    }
    out
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

/// A TOML string (quoted and escaped).
fn toml_string(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

fn toml_list(items: impl Iterator<Item = String>) -> String {
    format!("[{}]", items.collect::<Vec<_>>().join(", "))
}

/// `sluice freeze import`: the events of an iCalendar file as `[[event]]` entries for freeze.toml.
pub fn import_toml(imported: &crate::freeze::ics::Imported, source: &Path) -> String {
    use crate::freeze::calendar::{Length, Schedule};
    let local = |t: &chrono::NaiveDateTime| toml_string(&t.format("%Y-%m-%dT%H:%M:%S").to_string());
    let mut out = format!(
        "# Imported from {} by sluice {} (`sluice freeze import`): {} event(s).\n",
        source.display(),
        env!("CARGO_PKG_VERSION"),
        imported.events.len()
    );
    for note in &imported.notes {
        out.push_str(&format!("# note: {}:{}: {}\n", note.file.display(), note.line, note.message));
    }
    for e in &imported.events {
        out.push_str(&format!(
            "\n# {}:{}\n[[event]]\nid = {}\nname = {}\ntimezone = {}\n",
            e.file.display(),
            e.line,
            toml_string(&e.id),
            toml_string(&e.name),
            toml_string(e.tz.name())
        ));
        match &e.schedule {
            Schedule::Once { start, end } => out.push_str(&format!("start = {}\nend = {}\n", local(start), local(end))),
            Schedule::Recurring { rule, start_time, length, instances } => {
                match rule.rules.as_slice() {
                    [] => {}
                    [one] => out.push_str(&format!("rrule = {}\n", toml_string(&one.text))),
                    many => {
                        out.push_str(&format!("rrule = {}\n", toml_list(many.iter().map(|r| toml_string(&r.text)))))
                    }
                }
                if !rule.rules.is_empty() {
                    out.push_str(&format!("from = {}\n", toml_string(&rule.dtstart.date().to_string())));
                    out.push_str(&format!(
                        "start_time = {}\n",
                        toml_string(&start_time.format("%H:%M:%S").to_string())
                    ));
                }
                match length {
                    Length::Duration(d) => out.push_str(&format!("duration = {}\n", toml_string(&d.to_string()))),
                    Length::EndTime(t) => {
                        out.push_str(&format!("end_time = {}\n", toml_string(&t.format("%H:%M:%S").to_string())))
                    }
                }
                if !rule.rdates.is_empty() {
                    out.push_str(&format!("rdate = {}\n", toml_list(rule.rdates.iter().map(local))));
                }
                if !rule.exdates.is_empty() {
                    out.push_str(&format!("exdate = {}\n", toml_list(rule.exdates.iter().map(local))));
                }
                if !instances.is_empty() {
                    let items =
                        instances.iter().map(|(s, e)| format!("{{ start = {}, end = {} }}", local(s), local(e)));
                    out.push_str(&format!("instances = {}\n", toml_list(items)));
                }
            }
        }
    }
    out
}
