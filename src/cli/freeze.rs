//! `sluice freeze status|list|next-open|lint|export`: the change-freeze calendar.

use crate::error::{Error, Result};
use crate::freeze::calendar::{Anchor, Calendar, Length, Schedule};
use crate::freeze::decide::{self, Decider, NextOpen, Query};
use crate::freeze::duration::IsoDuration;
use crate::freeze::overrides::Overrides;
use crate::freeze::time::{local_string, parse_instant, parse_zone, utc_string};
use crate::freeze::{audit, entry_json, ics, next_open_string, FreezeOptions};
use chrono::{DateTime, Duration, Utc};
use chrono_tz::Tz;
use comfy_table::{presets::UTF8_FULL_CONDENSED, ContentArrangement, Table};
use serde_json::json;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum FreezeFormat {
    #[default]
    Table,
    Json,
}

/// Options every `freeze` command takes.
#[derive(clap::Args, Debug, Clone)]
pub struct CommonArgs {
    /// The calendar [default: policies/freeze.toml, or `[freeze] calendar` in sluice.toml].
    #[arg(long, value_name = "FILE")]
    pub calendar: Option<PathBuf>,
    /// Emergency overrides [default: overrides.toml beside the calendar, when present].
    #[arg(long, value_name = "FILE")]
    pub overrides: Option<PathBuf>,
    /// Where decisions that use an override are logged [default: freeze-audit.jsonl beside the calendar].
    #[arg(long, value_name = "FILE")]
    pub audit_log: Option<PathBuf>,
    #[arg(long, value_enum, default_value_t = FreezeFormat::Table)]
    pub format: FreezeFormat,
    /// IANA zone for times given without an offset (`--at 2026-05-16T10:00 --tz Europe/London`).
    #[arg(long, value_name = "ZONE")]
    pub tz: Option<String>,
}

/// The deploy asked about; without them every window counts, whatever its scope.
#[derive(clap::Args, Debug, Clone)]
pub struct ScopeArgs {
    #[arg(long, value_name = "E")]
    pub env: Option<String>,
    #[arg(long, value_name = "S")]
    pub service: Option<String>,
}

#[derive(clap::Subcommand, Debug)]
pub enum FreezeCommand {
    /// Is a deploy frozen now (or at --at)? Exit 0 open, 1 frozen, 2 configuration error.
    Status {
        #[command(flatten)]
        common: CommonArgs,
        #[command(flatten)]
        scope: ScopeArgs,
        /// RFC 3339 time, or a local time with --tz [default: now].
        #[arg(long)]
        at: Option<String>,
    },
    /// The expanded window occurrences in a time range, in order.
    List {
        #[command(flatten)]
        common: CommonArgs,
        #[command(flatten)]
        scope: ScopeArgs,
        /// [default: now]
        #[arg(long)]
        from: Option<String>,
        /// [default: 30 days after --from]
        #[arg(long)]
        to: Option<String>,
    },
    /// The first instant from which deploys are open for at least --min-duration.
    NextOpen {
        #[command(flatten)]
        common: CommonArgs,
        #[command(flatten)]
        scope: ScopeArgs,
        /// [default: now]
        #[arg(long)]
        after: Option<String>,
        /// ISO 8601 duration (PT2H, PT30M, P1D = 24 h).
        #[arg(long, default_value = "PT0S")]
        min_duration: String,
    },
    /// Validate the calendar and overrides; warn about windows that never occur, have ended, or run overnight.
    Lint {
        #[command(flatten)]
        common: CommonArgs,
        /// Exit 1 when there are warnings.
        #[arg(long)]
        strict: bool,
    },
    /// Write the expanded windows as an iCalendar (.ics) file to subscribe to.
    Export {
        #[command(flatten)]
        common: CommonArgs,
        #[command(flatten)]
        scope: ScopeArgs,
        /// [default: 7 days ago]
        #[arg(long)]
        from: Option<String>,
        /// [default: one year after --from]
        #[arg(long)]
        to: Option<String>,
        /// Write here instead of stdout.
        #[arg(long, short, value_name = "FILE")]
        output: Option<PathBuf>,
    },
}

struct Context {
    options: FreezeOptions,
    calendar: Calendar,
    overrides: Overrides,
    tz: Option<Tz>,
    format: FreezeFormat,
}

impl Context {
    fn new(common: &CommonArgs) -> Result<Context> {
        let cwd =
            std::env::current_dir().map_err(|e| Error::Other(format!("cannot read the working directory: {e}")))?;
        let loaded = crate::config::load(None, &cwd)?;
        let mut options = FreezeOptions::resolve(
            &loaded,
            common.calendar.as_deref(),
            common.overrides.as_deref(),
            common.audit_log.as_deref(),
        );
        // Name files relative to the working directory in output, as a user would type them.
        let relative = |p: &mut PathBuf| {
            if let Ok(r) = p.strip_prefix(&cwd) {
                *p = r.to_path_buf();
            }
        };
        relative(&mut options.calendar);
        relative(&mut options.audit_log);
        if let Some(o) = options.overrides.as_mut() {
            relative(o);
        }
        if !options.calendar.is_file() {
            return Err(Error::Usage(format!(
                "{}: no such calendar; pass --calendar FILE or set [freeze] calendar in sluice.toml",
                options.calendar.display()
            )));
        }
        let (calendar, overrides) = options.load()?;
        let tz =
            common.tz.as_deref().map(|z| parse_zone(z).map_err(|m| Error::Usage(format!("--tz: {m}")))).transpose()?;
        Ok(Context { options, calendar, overrides, tz, format: common.format })
    }

    fn instant(&self, flag: &str, value: Option<&str>, default: DateTime<Utc>) -> Result<DateTime<Utc>> {
        match value {
            None => Ok(default),
            Some(v) => parse_instant(v, self.tz).map_err(|m| Error::Usage(format!("{flag}: {m}"))),
        }
    }
}

fn query(scope: &ScopeArgs) -> Query<'_> {
    Query { env: scope.env.as_deref(), service: scope.service.as_deref() }
}

fn new_table(header: &[&str]) -> Table {
    let mut table = Table::new();
    table.load_style(UTF8_FULL_CONDENSED);
    table.set_content_arrangement(ContentArrangement::Disabled);
    table.set_header(header.iter().copied());
    table
}

fn print_json(value: &serde_json::Value) -> Result<()> {
    let mut text = serde_json::to_string_pretty(value).map_err(|e| Error::Other(e.to_string()))?;
    text.push('\n');
    super::print_stdout(&text)
}

pub fn run(command: FreezeCommand) -> Result<ExitCode> {
    match command {
        FreezeCommand::Status { common, scope, at } => status(&Context::new(&common)?, &scope, at.as_deref()),
        FreezeCommand::List { common, scope, from, to } => {
            list(&Context::new(&common)?, &scope, from.as_deref(), to.as_deref())
        }
        FreezeCommand::NextOpen { common, scope, after, min_duration } => {
            next_open(&Context::new(&common)?, &scope, after.as_deref(), &min_duration)
        }
        FreezeCommand::Lint { common, strict } => lint(&Context::new(&common)?, strict),
        FreezeCommand::Export { common, scope, from, to, output } => {
            export(&Context::new(&common)?, &scope, from.as_deref(), to.as_deref(), output)
        }
    }
}

fn status(cx: &Context, scope: &ScopeArgs, at: Option<&str>) -> Result<ExitCode> {
    let at = cx.instant("--at", at, Utc::now())?;
    let q = query(scope);
    let status = Decider::new(&cx.calendar, &cx.overrides, q).status(at)?;
    if !status.overrides_used.is_empty() {
        audit::append(&cx.options.audit_log, &audit::record(&cx.calendar, &cx.overrides, q, &status, "freeze status"))?;
    }
    let used: Vec<_> = status.overrides_used.iter().map(|&i| &cx.overrides.list[i]).collect();
    match cx.format {
        FreezeFormat::Json => print_json(&json!({
            "frozen": status.frozen,
            "at": utc_string(at),
            "environment": q.env,
            "service": q.service,
            "windows": status.entries.iter().map(|e| entry_json(&cx.calendar, &cx.overrides, e)).collect::<Vec<_>>(),
            "next_open": match status.next_open { NextOpen::At(t) => Some(utc_string(t)), NextOpen::NoneWithin(_) => None },
            "next_open_note": match status.next_open { NextOpen::At(_) => None, ref n => Some(next_open_string(n)) },
            "override": used.first().map(|o| o.to_json()),
            "overrides_used": used.iter().map(|o| o.id.clone()).collect::<Vec<_>>(),
            "override_problems": status.override_problems.iter().map(|(_, m)| m.clone()).collect::<Vec<_>>(),
            "calendar": cx.calendar.path.to_string_lossy(),
            "calendar_sha256": cx.calendar.digest,
        }))?,
        FreezeFormat::Table => {
            let target = format!("{} to {}", q.service.unwrap_or("any service"), q.env.unwrap_or("any environment"));
            let mut out = format!(
                "{}: deploy of {target} at {}\n",
                if status.frozen { "FROZEN" } else { "OPEN" },
                utc_string(at)
            );
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
                    let j = entry_json(&cx.calendar, &cx.overrides, e);
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
            for o in &used {
                out.push_str(&format!(
                    "override: {} ({}, requested by {}, approved by {}) until {}; logged to {}\n",
                    o.id,
                    o.ticket,
                    o.requested_by,
                    o.approved_by,
                    o.expires_at.map(utc_string).unwrap_or_default(),
                    cx.options.audit_log.display()
                ));
            }
            for (_, problem) in &status.override_problems {
                out.push_str(&format!("warning: {problem}\n"));
            }
            super::print_stdout(&out)?;
        }
    }
    Ok(if status.frozen { ExitCode::from(1) } else { ExitCode::SUCCESS })
}

fn list(cx: &Context, scope: &ScopeArgs, from: Option<&str>, to: Option<&str>) -> Result<ExitCode> {
    let from = cx.instant("--from", from, Utc::now())?;
    let to = cx.instant("--to", to, from + Duration::days(30))?;
    if to <= from {
        return Err(Error::Usage(format!("--to {} is not after --from {}", utc_string(to), utc_string(from))));
    }
    let q = query(scope);
    let occurrences = cx.calendar.occurrences(from, to, |w| cx.calendar.windows[w].applies_to(q.env, q.service))?;
    let rows = occurrences.iter().map(|o| {
        let w = &cx.calendar.windows[o.window];
        let event = o.event.map(|e| &cx.calendar.events[e]);
        let tz = event.map_or_else(|| w.display_tz(&cx.calendar), |e| e.tz);
        (o, w, event, tz)
    });
    match cx.format {
        FreezeFormat::Json => {
            // A typed row rather than `json!`: a year of a 10,000-event calendar is thousands of rows.
            #[derive(serde::Serialize)]
            struct Row<'a> {
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
            let items: Vec<Row> = rows
                .map(|(o, w, event, tz)| Row {
                    id: &w.id,
                    kind: w.kind.as_str(),
                    event: event.map(|e| e.id.as_str()),
                    event_name: event.map(|e| e.name.as_str()),
                    start: utc_string(o.start),
                    end: utc_string(o.end),
                    timezone: tz.name(),
                    start_local: local_string(o.start, tz),
                    end_local: local_string(o.end, tz),
                    environments: &w.environments.patterns,
                    services: &w.services.patterns,
                    reason: &w.reason,
                })
                .collect();
            #[derive(serde::Serialize)]
            struct Listing<'a> {
                from: String,
                to: String,
                occurrences: Vec<Row<'a>>,
            }
            let listing = Listing { from: utc_string(from), to: utc_string(to), occurrences: items };
            let mut text = serde_json::to_string_pretty(&listing).map_err(|e| Error::Other(e.to_string()))?;
            text.push('\n');
            super::print_stdout(&text)?;
        }
        FreezeFormat::Table => {
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
            for (o, w, event, tz) in rows {
                table.add_row([
                    w.id.clone(),
                    w.kind.as_str().to_string(),
                    event.map(|e| e.id.clone()).unwrap_or_default(),
                    local_string(o.start, tz),
                    local_string(o.end, tz),
                    utc_string(o.start),
                    utc_string(o.end),
                    w.environments.describe(),
                    w.services.describe(),
                ]);
            }
            super::print_stdout(&format!(
                "{table}\n{} occurrence(s) from {} to {}\n",
                occurrences.len(),
                utc_string(from),
                utc_string(to)
            ))?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn next_open(cx: &Context, scope: &ScopeArgs, after: Option<&str>, min: &str) -> Result<ExitCode> {
    let after = cx.instant("--after", after, Utc::now())?;
    let min_duration = IsoDuration::parse(min).map_err(|m| Error::Usage(format!("--min-duration: {m}")))?;
    if min_duration.months > 0 {
        return Err(Error::Usage("--min-duration: months and years have no fixed length; use days (P30D)".into()));
    }
    let min = Duration::days(min_duration.days as i64) + min_duration.exact();
    let q = query(scope);
    let decider = Decider::new(&cx.calendar, &cx.overrides, q);
    let next = decider.next_open(after, min)?;
    let open_until = match next {
        NextOpen::At(t) => decider.blocked(t, t + decide::horizon())?.first().map(|b| b.0),
        NextOpen::NoneWithin(_) => None,
    };
    let tz = cx.tz.unwrap_or(cx.calendar.default_tz);
    match cx.format {
        FreezeFormat::Json => print_json(&json!({
            "after": utc_string(after),
            "environment": q.env,
            "service": q.service,
            "min_duration": min_duration.to_string(),
            "next_open": match next { NextOpen::At(t) => Some(utc_string(t)), NextOpen::NoneWithin(_) => None },
            "open_until": open_until.map(utc_string),
            "note": match next { NextOpen::At(_) => None, ref n => Some(next_open_string(n)) },
        }))?,
        FreezeFormat::Table => {
            let text = match next {
                NextOpen::At(t) => format!(
                    "next open: {} ({}), open until {}\n",
                    utc_string(t),
                    local_string(t, tz),
                    open_until.map_or_else(
                        || "beyond the search horizon".to_string(),
                        |u| format!("{} ({})", utc_string(u), local_string(u, tz))
                    )
                ),
                ref n => format!("no open window of {min_duration}: {}\n", next_open_string(n)),
            };
            super::print_stdout(&text)?;
        }
    }
    Ok(if matches!(next, NextOpen::At(_)) { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

fn lint(cx: &Context, strict: bool) -> Result<ExitCode> {
    let now = Utc::now();
    let cal = &cx.calendar;
    let mut warnings: Vec<(String, usize, String)> = Vec::new();
    let file = cal.path.to_string_lossy().to_string();
    let start = DateTime::parse_from_rfc3339("2000-01-01T00:00:00Z").map(|t| t.with_timezone(&Utc)).unwrap_or(now);
    let end = now + decide::horizon();
    let occurrences = cal.occurrences(start, end, |_| true)?;
    let mut used_events = vec![false; cal.events.len()];
    for (wi, w) in cal.windows.iter().enumerate() {
        let mine: Vec<_> = occurrences.iter().filter(|o| o.window == wi).collect();
        let at = format!("{file}:{}", w.line);
        match mine.last() {
            None => warnings.push((
                w.id.clone(),
                w.line,
                format!("{at}: window `{}` never occurs (before {})", w.id, utc_string(end)),
            )),
            Some(last) if last.end <= now => warnings.push((
                w.id.clone(),
                w.line,
                format!(
                    "{at}: window `{}` has ended (last occurrence ended {}); remove it",
                    w.id,
                    utc_string(last.end)
                ),
            )),
            _ => {}
        }
        match &w.anchor {
            Anchor::Own { schedule: Schedule::Recurring { start_time, length: Length::EndTime(end_time), .. }, .. }
                if end_time < start_time =>
            {
                warnings.push((
                    w.id.clone(),
                    w.line,
                    format!(
                        "{at}: window `{}` ends ({end_time}) before it starts ({start_time}): each occurrence runs overnight into the next day",
                        w.id
                    ),
                ))
            }
            Anchor::Events(a) => {
                for &(_, _, e) in &a.once {
                    used_events[e] = true;
                }
                for &e in &a.recurring {
                    used_events[e] = true;
                }
            }
            _ => {}
        }
        if w.reason.is_empty() {
            warnings.push((
                w.id.clone(),
                w.line,
                format!("{at}: window `{}` has no `reason`; findings will not say why", w.id),
            ));
        }
    }
    for (e, used) in cal.events.iter().zip(&used_events) {
        if !used {
            warnings.push((
                e.id.clone(),
                e.line,
                format!(
                    "{}:{}: event `{}` is used by no window, so it freezes nothing",
                    e.file.display(),
                    e.line,
                    e.id
                ),
            ));
        }
    }
    let ofile = cx.overrides.path.as_ref().map(|p| p.to_string_lossy().to_string()).unwrap_or_default();
    for o in &cx.overrides.list {
        if !o.is_valid() {
            warnings.push((
                o.id.clone(),
                o.line,
                format!("{ofile}:{}: override `{}` is invalid: {}", o.line, o.id, o.problems.join("; ")),
            ));
        } else if o.expires_at.is_some_and(|t| t <= now) {
            warnings.push((
                o.id.clone(),
                o.line,
                format!("{ofile}:{}: override `{}` has expired; remove it", o.line, o.id),
            ));
        }
    }
    match cx.format {
        FreezeFormat::Json => print_json(&json!({
            "calendar": file,
            "valid": true,
            "events": cal.events.len(),
            "windows": cal.windows.len(),
            "overrides": cx.overrides.list.len(),
            "warnings": warnings.iter().map(|(id, line, m)| json!({"entry": id, "line": line, "message": m})).collect::<Vec<_>>(),
        }))?,
        FreezeFormat::Table => {
            let mut out = String::new();
            for (_, _, m) in &warnings {
                out.push_str(&format!("warning: {m}\n"));
            }
            out.push_str(&format!(
                "{file}: valid: {} event(s), {} window(s), {} override(s); {} warning(s)\n",
                cal.events.len(),
                cal.windows.len(),
                cx.overrides.list.len(),
                warnings.len()
            ));
            super::print_stdout(&out)?;
        }
    }
    Ok(if strict && !warnings.is_empty() { ExitCode::from(1) } else { ExitCode::SUCCESS })
}

fn export(
    cx: &Context,
    scope: &ScopeArgs,
    from: Option<&str>,
    to: Option<&str>,
    output: Option<PathBuf>,
) -> Result<ExitCode> {
    let from = cx.instant("--from", from, Utc::now() - Duration::days(7))?;
    let to = cx.instant("--to", to, from + Duration::days(365))?;
    if to <= from {
        return Err(Error::Usage(format!("--to {} is not after --from {}", utc_string(to), utc_string(from))));
    }
    let q = query(scope);
    let occurrences = cx.calendar.occurrences(from, to, |w| cx.calendar.windows[w].applies_to(q.env, q.service))?;
    let text = ics::export(&cx.calendar, &occurrences, Utc::now());
    match output {
        Some(path) => {
            std::fs::write(&path, text).map_err(|e| Error::io(&path, e))?;
            eprintln!("wrote {} occurrence(s) to {}", occurrences.len(), path.display());
        }
        None => super::print_stdout(&text)?,
    }
    Ok(ExitCode::SUCCESS)
}
