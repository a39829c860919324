//! The freeze calendar (`policies/freeze.toml`): model, loading and validation.
//!
//! Everything that can be wrong with the file is found here, at load time, and reported as an
//! [`Error::Invalid`] naming the file, the line and the entry: the gate fails closed.

use super::duration::IsoDuration;
use super::recur::{Recurrence, DEFAULT_FROM};
use super::time::{parse_local, parse_time_of_day, parse_zone, resolve_local};
use crate::error::{parse_toml, read_text, Error, Result};
use chrono::{DateTime, Duration, NaiveDateTime, NaiveTime, Utc};
use chrono_tz::Tz;
use globset::{Glob, GlobSet, GlobSetBuilder};
use rayon::prelude::*;
use serde::Deserialize;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use toml::Spanned;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCalendar {
    #[serde(default)]
    timezone: Option<Spanned<String>>,
    #[serde(default)]
    event: Vec<Spanned<RawEvent>>,
    #[serde(default)]
    window: Vec<Spanned<RawWindow>>,
    #[serde(default)]
    calendar: Vec<Spanned<RawImport>>,
}

/// The keys that say when something happens, shared by events and self-scheduled windows.
/// (Repeated in each raw struct rather than `#[serde(flatten)]`ed: flatten disables
/// `deny_unknown_fields`.)
#[derive(Debug, Default, Clone)]
struct RawWhen {
    timezone: Option<String>,
    start: Option<String>,
    end: Option<String>,
    rrule: Option<String>,
    from: Option<String>,
    start_time: Option<String>,
    end_time: Option<String>,
    duration: Option<String>,
}

macro_rules! when_of {
    ($raw:expr) => {
        RawWhen {
            timezone: $raw.timezone.clone(),
            start: $raw.start.clone(),
            end: $raw.end.clone(),
            rrule: $raw.rrule.clone(),
            from: $raw.from.clone(),
            start_time: $raw.start_time.clone(),
            end_time: $raw.end_time.clone(),
            duration: $raw.duration.clone(),
        }
    };
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawEvent {
    id: String,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    timezone: Option<String>,
    #[serde(default)]
    start: Option<String>,
    #[serde(default)]
    end: Option<String>,
    #[serde(default)]
    rrule: Option<String>,
    #[serde(default)]
    from: Option<String>,
    #[serde(default)]
    start_time: Option<String>,
    #[serde(default)]
    end_time: Option<String>,
    #[serde(default)]
    duration: Option<String>,
}

// The timing keys repeat RawEvent's on purpose: `#[serde(flatten)]` would share them, but serde
// cannot combine it with `deny_unknown_fields`, and a typo in a freeze window must be an error.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawWindow {
    id: String,
    kind: String,
    #[serde(default)]
    event: Option<String>,
    #[serde(default)]
    lead: Option<String>,
    #[serde(default)]
    lag: Option<String>,
    #[serde(default)]
    environments: Option<Vec<String>>,
    #[serde(default)]
    services: Option<Vec<String>>,
    #[serde(default)]
    reason: Option<String>,
    #[serde(default)]
    timezone: Option<String>,
    #[serde(default)]
    start: Option<String>,
    #[serde(default)]
    end: Option<String>,
    #[serde(default)]
    rrule: Option<String>,
    #[serde(default)]
    from: Option<String>,
    #[serde(default)]
    start_time: Option<String>,
    #[serde(default)]
    end_time: Option<String>,
    #[serde(default)]
    duration: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawImport {
    file: String,
    #[serde(default)]
    id_prefix: Option<String>,
    /// Zone for floating (zone-less) times in the file; default the calendar's.
    #[serde(default)]
    timezone: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    Deny,
    Allow,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Deny => "deny",
            Kind::Allow => "allow",
        }
    }
}

/// How long each occurrence of a recurring entry lasts.
#[derive(Clone, Debug)]
pub enum Length {
    /// Ends at this wall-clock time: the same day, or the next when it is not after the start time.
    EndTime(NaiveTime),
    Duration(IsoDuration),
}

#[derive(Clone, Debug)]
pub enum Schedule {
    /// One interval, in local wall-clock time.
    Once {
        start: NaiveDateTime,
        end: NaiveDateTime,
    },
    Recurring {
        rule: Box<Recurrence>,
        start_time: NaiveTime,
        length: Length,
    },
}

#[derive(Clone, Debug)]
pub struct Event {
    pub id: String,
    pub name: String,
    pub tz: Tz,
    pub schedule: Schedule,
    /// The file it was declared in (the calendar, or an imported `.ics`) and its line there.
    pub file: PathBuf,
    pub line: usize,
}

/// Service or environment globs; `None` matches everything.
#[derive(Clone, Debug)]
pub struct Scope {
    pub patterns: Option<Vec<String>>,
    set: Option<GlobSet>,
}

impl Scope {
    pub fn all() -> Scope {
        Scope { patterns: None, set: None }
    }

    pub fn new(patterns: Option<Vec<String>>) -> std::result::Result<Scope, String> {
        let Some(patterns) = patterns else {
            return Ok(Scope::all());
        };
        let mut builder = GlobSetBuilder::new();
        for p in &patterns {
            builder.add(Glob::new(p).map_err(|e| format!("bad glob `{p}`: {e}"))?);
        }
        let set = builder.build().map_err(|e| e.to_string())?;
        Ok(Scope { patterns: Some(patterns), set: Some(set) })
    }

    /// Whether `value` is in scope; `None` (no value given) is in every scope.
    pub fn matches(&self, value: Option<&str>) -> bool {
        match (&self.set, value) {
            (None, _) | (_, None) => true,
            (Some(set), Some(v)) => set.is_match(v),
        }
    }

    pub fn describe(&self) -> String {
        match &self.patterns {
            None => "*".into(),
            Some(p) => p.join(","),
        }
    }
}

/// An anchored window's events, indexed by time for range queries.
#[derive(Clone, Debug)]
pub struct AnchoredEvents {
    /// The `event` value as written (an id or a glob over ids).
    pub pattern: String,
    /// One-off events in UTC, sorted by start: `(start, end, event index)`.
    pub once: Vec<(DateTime<Utc>, DateTime<Utc>, usize)>,
    /// The longest one-off event, to bound the backwards search.
    pub once_max_len: Duration,
    pub recurring: Vec<usize>,
    pub lead: IsoDuration,
    pub lag: IsoDuration,
}

#[derive(Clone, Debug)]
pub enum Anchor {
    Events(AnchoredEvents),
    Own { tz: Tz, schedule: Schedule },
}

#[derive(Clone, Debug)]
pub struct Window {
    pub id: String,
    pub kind: Kind,
    pub reason: String,
    pub environments: Scope,
    pub services: Scope,
    pub anchor: Anchor,
    pub line: usize,
}

impl Window {
    pub fn applies_to(&self, env: Option<&str>, service: Option<&str>) -> bool {
        self.environments.matches(env) && self.services.matches(service)
    }

    /// The zone its times are shown in.
    pub fn display_tz(&self, calendar: &Calendar) -> Tz {
        match &self.anchor {
            Anchor::Own { tz, .. } => *tz,
            Anchor::Events(a) => a
                .once
                .first()
                .map(|o| o.2)
                .or(a.recurring.first().copied())
                .map_or(calendar.default_tz, |e| calendar.events[e].tz),
        }
    }
}

#[derive(Clone, Debug)]
pub struct Calendar {
    /// As given (for messages and findings).
    pub path: PathBuf,
    /// SHA-256 of the file's bytes, for the audit log.
    pub digest: String,
    pub default_tz: Tz,
    pub events: Vec<Event>,
    pub windows: Vec<Window>,
}

impl Calendar {
    pub fn window(&self, id: &str) -> Option<&Window> {
        self.windows.iter().find(|w| w.id == id)
    }
}

/// Loads and validates a calendar file.
pub fn load(path: &Path) -> Result<Calendar> {
    let text = read_text(path)?;
    parse(path, &text)
}

/// Parses and validates calendar text; `path` names the file in errors and resolves `[[calendar]]` files.
pub fn parse(path: &Path, text: &str) -> Result<Calendar> {
    parse_with(path, text, &|file| if file.is_file() { read_text(file).map(Some) } else { Ok(None) })
}

/// [`parse`], reading the `[[calendar]]` files through `read` (`None`: no such file), so that
/// `sluice check` can read them from a git revision.
pub fn parse_with(path: &Path, text: &str, read: &dyn Fn(&Path) -> Result<Option<String>>) -> Result<Calendar> {
    let raw = parse_raw(path, text)?;
    // Line starts, so that 10,000 entries do not each rescan the file for their line number.
    let starts: Vec<usize> = std::iter::once(0).chain(text.match_indices('\n').map(|(i, _)| i + 1)).collect();
    let line = |span: std::ops::Range<usize>| starts.partition_point(|&s| s <= span.start);
    let default_tz = match &raw.timezone {
        Some(tz) => parse_zone(tz.get_ref()).map_err(|m| Error::invalid(path, Some(line(tz.span())), m))?,
        None => Tz::UTC,
    };

    let mut events = Vec::new();
    let mut seen: HashMap<String, (PathBuf, usize)> = HashMap::new();
    let mut note_id = |id: &str, file: &Path, at: usize, what: &str| -> Result<()> {
        if id.trim().is_empty() {
            return Err(Error::invalid(file, Some(at), format!("{what} with an empty `id`")));
        }
        if let Some((f, l)) = seen.insert(id.to_string(), (file.to_path_buf(), at)) {
            return Err(Error::invalid(
                file,
                Some(at),
                format!("{what} `{id}`: duplicate id (also at {}:{l}); ids must be unique", f.display()),
            ));
        }
        Ok(())
    };

    for spanned in &raw.event {
        let at = line(spanned.span());
        let e = spanned.get_ref();
        let when = when_of!(e);
        note_id(&e.id, path, at, "[[event]]")?;
        let entry = |m: String| Error::invalid(path, Some(at), format!("[[event]] `{}`: {m}", e.id));
        let tz = match &when.timezone {
            Some(name) => parse_zone(name).map_err(entry)?,
            None => default_tz,
        };
        let schedule = schedule(&when).map_err(entry)?;
        events.push(Event {
            id: e.id.clone(),
            name: e.name.clone().unwrap_or_else(|| e.id.clone()),
            tz,
            schedule,
            file: path.to_path_buf(),
            line: at,
        });
    }

    for spanned in &raw.calendar {
        let at = line(spanned.span());
        let c = spanned.get_ref();
        let entry = |m: String| Error::invalid(path, Some(at), format!("[[calendar]] `{}`: {m}", c.file));
        let tz = match &c.timezone {
            Some(name) => parse_zone(name).map_err(entry)?,
            None => default_tz,
        };
        let file = path.parent().unwrap_or(Path::new(".")).join(&c.file);
        let Some(ics) = read(&file)? else {
            return Err(entry(format!("no such file {}", file.display())));
        };
        for event in super::ics::import_text(&file, &ics, c.id_prefix.as_deref().unwrap_or(""), tz)? {
            note_id(&event.id, &event.file, event.line, "imported event")?;
            events.push(event);
        }
    }

    let mut windows = Vec::new();
    let mut window_ids: HashMap<String, usize> = HashMap::new();
    for spanned in &raw.window {
        let at = line(spanned.span());
        let w = spanned.get_ref();
        let when = when_of!(w);
        let entry = |m: String| Error::invalid(path, Some(at), format!("[[window]] `{}`: {m}", w.id));
        if w.id.trim().is_empty() {
            return Err(Error::invalid(path, Some(at), "[[window]] with an empty `id`"));
        }
        if let Some(first) = window_ids.insert(w.id.clone(), at) {
            return Err(entry(format!("duplicate window id (also at line {first}); ids must be unique")));
        }
        let kind = match w.kind.as_str() {
            "deny" => Kind::Deny,
            "allow" => Kind::Allow,
            other => return Err(entry(format!("kind = `{other}`: use `deny` or `allow`"))),
        };
        let anchor = match &w.event {
            Some(pattern) => {
                let own_keys = [
                    ("timezone", when.timezone.is_some()),
                    ("start", when.start.is_some()),
                    ("end", when.end.is_some()),
                    ("rrule", when.rrule.is_some()),
                    ("from", when.from.is_some()),
                    ("start_time", when.start_time.is_some()),
                    ("end_time", when.end_time.is_some()),
                    ("duration", when.duration.is_some()),
                ];
                if let Some((key, _)) = own_keys.iter().find(|(_, set)| *set) {
                    return Err(entry(format!(
                        "`{key}` cannot be combined with `event`: an anchored window takes its times from the event (use `lead`/`lag`)"
                    )));
                }
                let lead = duration_key("lead", w.lead.as_deref()).map_err(entry)?;
                let lag = duration_key("lag", w.lag.as_deref()).map_err(entry)?;
                Anchor::Events(anchor_events(pattern, &events, lead, lag).map_err(entry)?)
            }
            None => {
                if w.lead.is_some() || w.lag.is_some() {
                    return Err(entry("`lead` and `lag` need `event`".into()));
                }
                let tz = match &when.timezone {
                    Some(name) => parse_zone(name).map_err(entry)?,
                    None => default_tz,
                };
                Anchor::Own { tz, schedule: schedule(&when).map_err(entry)? }
            }
        };
        let environments = Scope::new(w.environments.clone()).map_err(|m| entry(format!("environments: {m}")))?;
        let services = Scope::new(w.services.clone()).map_err(|m| entry(format!("services: {m}")))?;
        windows.push(Window {
            id: w.id.clone(),
            kind,
            reason: w.reason.clone().unwrap_or_default(),
            environments,
            services,
            anchor,
            line: at,
        });
    }

    Ok(Calendar {
        path: path.to_path_buf(),
        digest: hex::encode(Sha256::digest(text.as_bytes())),
        default_tz,
        events,
        windows,
    })
}

/// Large calendars are parsed in pieces cut at `[[…]]` headers: the `toml` crate tokenises a
/// whole document into memory first, and for a 10,000-event file that allocation, not the
/// parsing, dominated the run time. A cut inside a multi-line string or array leaves the piece
/// before it unterminated, which fails to parse; any failure falls back to parsing the whole
/// document, so errors (and their lines) are exactly those of a whole-document parse.
fn parse_raw(path: &Path, text: &str) -> Result<RawCalendar> {
    const PIECE: usize = 32 * 1024;
    if text.len() <= 2 * PIECE {
        return parse_toml(path, text);
    }
    let mut cuts = vec![0];
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        if line.starts_with("[[") && offset - cuts[cuts.len() - 1] >= PIECE {
            cuts.push(offset);
        }
        offset += line.len();
    }
    cuts.push(text.len());
    // The pieces are independent documents: parse them on every core.
    let pieces: Vec<Option<RawCalendar>> =
        cuts.par_windows(2).map(|pair| toml::from_str::<RawCalendar>(&text[pair[0]..pair[1]]).ok()).collect();
    let mut raw = RawCalendar::default();
    for (piece, base) in pieces.into_iter().zip(cuts.iter().copied()) {
        let Some(piece) = piece else {
            return parse_toml(path, text);
        };
        if base > 0 && piece.timezone.is_some() {
            return parse_toml(path, text);
        }
        let shift = |span: std::ops::Range<usize>| span.start + base..span.end + base;
        if let Some(tz) = piece.timezone {
            raw.timezone = Some(Spanned::new(shift(tz.span()), tz.into_inner()));
        }
        raw.event.extend(piece.event.into_iter().map(|e| Spanned::new(shift(e.span()), e.into_inner())));
        raw.window.extend(piece.window.into_iter().map(|w| Spanned::new(shift(w.span()), w.into_inner())));
        raw.calendar.extend(piece.calendar.into_iter().map(|c| Spanned::new(shift(c.span()), c.into_inner())));
    }
    Ok(raw)
}

fn duration_key(key: &str, value: Option<&str>) -> std::result::Result<IsoDuration, String> {
    match value {
        None => Ok(IsoDuration::zero()),
        Some(v) => IsoDuration::parse(v).map_err(|m| format!("{key}: {m}")),
    }
}

fn anchor_events(
    pattern: &str,
    events: &[Event],
    lead: IsoDuration,
    lag: IsoDuration,
) -> std::result::Result<AnchoredEvents, String> {
    let glob = Glob::new(pattern).map_err(|e| format!("event = `{pattern}`: bad glob: {e}"))?.compile_matcher();
    let mut once = Vec::new();
    let mut recurring = Vec::new();
    for (i, e) in events.iter().enumerate() {
        if e.id != pattern && !glob.is_match(&e.id) {
            continue;
        }
        match &e.schedule {
            Schedule::Once { start, end } => once.push((resolve_local(e.tz, *start), resolve_local(e.tz, *end), i)),
            Schedule::Recurring { .. } => recurring.push(i),
        }
    }
    if once.is_empty() && recurring.is_empty() {
        return Err(format!("unknown event `{pattern}`: no [[event]] (or imported event) has that id"));
    }
    once.sort();
    let once_max_len = once.iter().map(|(s, e, _)| *e - *s).max().unwrap_or_else(Duration::zero);
    Ok(AnchoredEvents { pattern: pattern.to_string(), once, once_max_len, recurring, lead, lag })
}

/// Builds a schedule from the when-keys: either `start` + `end`, or `rrule` + `start_time` + one of
/// `end_time` / `duration` (with an optional `from` date).
fn schedule(when: &RawWhen) -> std::result::Result<Schedule, String> {
    match (&when.rrule, &when.start, &when.end) {
        (None, Some(start), Some(end)) => {
            for (key, set) in [
                ("start_time", when.start_time.is_some()),
                ("end_time", when.end_time.is_some()),
                ("duration", when.duration.is_some()),
                ("from", when.from.is_some()),
            ] {
                if set {
                    return Err(format!("`{key}` belongs to recurring entries (with `rrule`), not to `start`/`end`"));
                }
            }
            let s = parse_local(start).map_err(|m| format!("start: {m}"))?;
            let e = parse_local(end).map_err(|m| format!("end: {m}"))?;
            if e <= s {
                return Err(format!("end `{end}` is not after start `{start}` (intervals are [start, end))"));
            }
            Ok(Schedule::Once { start: s, end: e })
        }
        (None, Some(_), None) => Err("`start` without `end`".into()),
        (None, None, Some(_)) => Err("`end` without `start`".into()),
        (None, None, None) => {
            Err("no times: give `start` and `end`, or `rrule` with `start_time` and `end_time`/`duration`, or `event`"
                .into())
        }
        (Some(_), Some(_), _) | (Some(_), _, Some(_)) => {
            Err("`rrule` cannot be combined with `start`/`end`; use `from` for the first date and `start_time`".into())
        }
        (Some(rule), None, None) => {
            let start_time = match &when.start_time {
                Some(t) => parse_time_of_day(t).map_err(|m| format!("start_time: {m}"))?,
                None => return Err("`rrule` needs `start_time`".into()),
            };
            let length = match (&when.end_time, &when.duration) {
                (Some(t), None) => {
                    let end = parse_time_of_day(t).map_err(|m| format!("end_time: {m}"))?;
                    if end == start_time {
                        return Err(format!("end_time `{t}` equals start_time: the window would be empty"));
                    }
                    Length::EndTime(end)
                }
                (None, Some(d)) => {
                    let d = IsoDuration::parse(d).map_err(|m| format!("duration: {m}"))?;
                    if d.is_zero() {
                        return Err("duration is zero: the window would be empty".into());
                    }
                    Length::Duration(d)
                }
                (Some(_), Some(_)) => return Err("give `end_time` or `duration`, not both".into()),
                (None, None) => return Err("`rrule` needs `end_time` or `duration`".into()),
            };
            let from = parse_local(when.from.as_deref().unwrap_or(DEFAULT_FROM)).map_err(|m| format!("from: {m}"))?;
            let dtstart = from.date().and_time(start_time);
            let rule = Recurrence::parse(rule, dtstart).map_err(|m| format!("rrule {m}"))?;
            Ok(Schedule::Recurring { rule: Box::new(rule), start_time, length })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(text: &str) -> String {
        parse(Path::new("freeze.toml"), text).unwrap_err().to_string()
    }

    #[test]
    fn loads_the_three_kinds_of_window() {
        let cal = parse(
            Path::new("freeze.toml"),
            r#"
timezone = "UTC"

[[event]]
id = "count"
timezone = "Europe/London"
start = "2026-05-17T00:00"
end = "2026-05-19T00:00"

[[window]]
id = "before-count"
kind = "deny"
event = "count"
lead = "P7D"

[[window]]
id = "peak"
kind = "deny"
timezone = "America/New_York"
rrule = "FREQ=WEEKLY;BYDAY=MO,TU,WE,TH,FR"
start_time = "07:00"
end_time = "09:30"
services = ["planner-*"]

[[window]]
id = "survey-day"
kind = "deny"
start = "2026-06-01T06:00"
end = "2026-06-01T18:00"
"#,
        )
        .unwrap();
        assert_eq!(cal.windows.len(), 3);
        // The line of each `[[window]]` header.
        assert_eq!(cal.windows[0].line, 10);
        assert_eq!(cal.windows[1].line, 16);
        assert!(cal.windows[1].services.matches(Some("planner-web")));
        assert!(!cal.windows[1].services.matches(Some("survey-api")));
        assert_eq!(cal.digest.len(), 64);
    }

    #[test]
    fn configuration_errors_name_the_entry_and_line() {
        let e = err("[[window]]\nid = \"w\"\nkind = \"deny\"\ntimezone = \"Europe/Lundon\"\nstart = \"2026-01-01T00:00\"\nend = \"2026-01-02T00:00\"\n");
        assert!(e.starts_with("freeze.toml:1: [[window]] `w`: unknown time zone `Europe/Lundon`"), "{e}");
        let e =
            err("[[window]]\nid = \"w\"\nkind = \"deny\"\nstart = \"2026-01-02T00:00\"\nend = \"2026-01-01T00:00\"\n");
        assert!(e.contains("`w`: end `2026-01-01T00:00` is not after start"), "{e}");
        let e = err("[[window]]\nid = \"w\"\nkind = \"deny\"\nevent = \"nope\"\n");
        assert!(e.contains("`w`: unknown event `nope`"), "{e}");
        let e = err("[[window]]\nid = \"w\"\nkind = \"deny\"\nrrule = \"FREQ=SOMETIMES\"\nstart_time = \"07:00\"\nend_time = \"08:00\"\n");
        assert!(e.contains("`w`: rrule `FREQ=SOMETIMES`"), "{e}");
        let dup = "[[window]]\nid = \"w\"\nkind = \"deny\"\nstart = \"2026-01-01T00:00\"\nend = \"2026-01-02T00:00\"\n";
        let e = err(&format!("{dup}\n{dup}"));
        assert!(e.starts_with("freeze.toml:7: [[window]] `w`: duplicate window id (also at line 1)"), "{e}");
        let e =
            err("[[window]]\nid = \"w\"\nkind = \"block\"\nstart = \"2026-01-01T00:00\"\nend = \"2026-01-02T00:00\"\n");
        assert!(e.contains("kind = `block`"), "{e}");
        let e = err("[[window]]\nid = \"w\"\nkind = \"deny\"\nstart = \"2026-01-01T00:00\"\nend = \"2026-01-02T00:00\"\ncolour = \"red\"\n");
        assert!(e.contains("colour"), "{e}");
        let e = err("timezone = \"Nowhere\"\n");
        assert!(e.starts_with("freeze.toml:1: unknown time zone `Nowhere`"), "{e}");
        let e = err("[[window]]\nid = \"w\"\nkind = \"deny\"\nevent = \"x\"\nstart = \"2026-01-01T00:00\"\n");
        assert!(e.contains("`start` cannot be combined with `event`") || e.contains("unknown event"), "{e}");
    }

    fn big(n: usize) -> String {
        let mut text = String::from("timezone = \"Europe/London\"\n\n");
        for i in 0..n {
            text.push_str(&format!(
                "[[event]]\nid = \"e{i}\"\nname = \"\"\"multi\n[[event]]\nline\"\"\"\nstart = \"2026-01-01T00:00\"\nend = \"2026-01-02T00:00\"\n\n"
            ));
        }
        text.push_str("[[window]]\nid = \"w\"\nkind = \"deny\"\nevent = \"e*\"\n");
        text
    }

    #[test]
    fn large_calendars_parse_in_pieces_with_the_same_result_and_lines() {
        // Every event's name is a multi-line string holding a `[[event]]` line: a cut there must
        // not change the result.
        let text = big(3000);
        assert!(text.len() > 200_000);
        let cal = parse(Path::new("big.toml"), &text).unwrap();
        assert_eq!(cal.events.len(), 3000);
        assert_eq!(cal.default_tz.name(), "Europe/London");
        assert_eq!(cal.events[2999].name, "multi\n[[event]]\nline");
        assert_eq!(cal.events[2999].line, 3 + 2999 * 8);
        assert_eq!(cal.windows[0].line, 3 + 3000 * 8);
        // Plain large files take the piecewise path; lines still count from the top of the file.
        let plain = text.replace("\"\"\"multi\n[[event]]\nline\"\"\"", "\"n\"\n\n");
        let cal = parse(Path::new("big.toml"), &plain).unwrap();
        assert_eq!(cal.events[2999].line, 3 + 2999 * 8);
        // An error deep in a large file names the right line.
        let bad = plain.replace("id = \"e2500\"", "id = \"e2500\"\ncolour = 1");
        let e = parse(Path::new("big.toml"), &bad).unwrap_err().to_string();
        assert!(e.starts_with(&format!("big.toml:{}:", 3 + 2500 * 8 + 2)), "{e}");
    }
}
