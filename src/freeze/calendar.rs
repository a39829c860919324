//! The freeze calendar (`policies/freeze.toml`): model, loading and validation.
//!
//! Everything that can be wrong with the file is found here, at load time, and reported as an
//! [`Error::Invalid`] naming the file, the line and the entry: the gate fails closed.

use super::duration::IsoDuration;
pub use super::event::{Event, ImportNote, Length, Schedule};
use super::ics::FloatingZone;
use super::input::read_regular_text;
use super::recur::{Recurrence, DEFAULT_FROM};
use super::time::{parse_local, parse_time_of_day, parse_zone, resolve_local};
use crate::error::{parse_toml, Error, Result};
use crate::freeze::zone::Zone;
use chrono::{DateTime, Duration, NaiveDateTime, NaiveTime, Utc};
use globset::{Glob, GlobSet, GlobSetBuilder};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use toml::Spanned;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCalendar {
    timezone: Option<Spanned<String>>,
    #[serde(default)]
    event: Vec<Spanned<RawEvent>>,
    #[serde(default)]
    window: Vec<Spanned<RawWindow>>,
    #[serde(default)]
    calendar: Vec<Spanned<RawImport>>,
}

/// The keys that say when something happens, shared by events and self-scheduled windows.
/// Borrowed from the raw entry: a 10,000-event calendar would otherwise copy every string.
#[derive(Debug, Clone, Copy)]
struct RawWhen<'a> {
    timezone: Option<&'a str>,
    start: Option<&'a str>,
    end: Option<&'a str>,
    rrule: Option<&'a OneOrMany>,
    rdate: Option<&'a Vec<String>>,
    exdate: Option<&'a Vec<String>>,
    instances: Option<&'a Vec<RawInstance>>,
    from: Option<&'a str>,
    start_time: Option<&'a str>,
    end_time: Option<&'a str>,
    duration: Option<&'a str>,
}

/// An entry as written: its own keys, then the timing keys of [`RawWhen`], declared once here.
/// `#[serde(flatten)]` would share them too, but serde cannot combine it with
/// `deny_unknown_fields`, and a typo in a freeze entry must be an error.
macro_rules! raw_entry {
    ($name:ident { $($field:ident: $ty:ty,)* }) => {
        #[derive(Debug, Deserialize)]
        #[serde(deny_unknown_fields)]
        struct $name {
            $($field: $ty,)*
            timezone: Option<String>,
            start: Option<String>,
            end: Option<String>,
            rrule: Option<OneOrMany>,
            rdate: Option<Vec<String>>,
            exdate: Option<Vec<String>>,
            instances: Option<Vec<RawInstance>>,
            from: Option<String>,
            start_time: Option<String>,
            end_time: Option<String>,
            duration: Option<String>,
        }

        impl $name {
            fn when(&self) -> RawWhen<'_> {
                RawWhen {
                    timezone: self.timezone.as_deref(),
                    start: self.start.as_deref(),
                    end: self.end.as_deref(),
                    rrule: self.rrule.as_ref(),
                    rdate: self.rdate.as_ref(),
                    exdate: self.exdate.as_ref(),
                    instances: self.instances.as_ref(),
                    from: self.from.as_deref(),
                    start_time: self.start_time.as_deref(),
                    end_time: self.end_time.as_deref(),
                    duration: self.duration.as_deref(),
                }
            }
        }
    };
}

raw_entry!(RawEvent { id: String, name: Option<String>, });

raw_entry!(RawWindow {
    id: String,
    kind: String,
    event: Option<String>,
    lead: Option<String>,
    lag: Option<String>,
    environments: Option<Vec<String>>,
    services: Option<Vec<String>>,
    reason: Option<String>,
});

/// One RRULE, or several (an imported event may have more than one).
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
enum OneOrMany {
    One(String),
    Many(Vec<String>),
}

impl OneOrMany {
    fn rules(&self) -> Vec<&str> {
        match self {
            OneOrMany::One(r) => vec![r.as_str()],
            OneOrMany::Many(rs) => rs.iter().map(String::as_str).collect(),
        }
    }
}

/// An occurrence with its own times: `{ start, end }`, optionally `replaces` the start of the
/// occurrence it moves (iCalendar's RECURRENCE-ID).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawInstance {
    replaces: Option<String>,
    start: String,
    end: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawImport {
    file: String,
    id_prefix: Option<String>,
    /// Zone for floating (zone-less) times in the file; default the calendar's.
    timezone: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
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

/// Service or environment globs; `None` matches everything.
///
/// The patterns are checked when the calendar is loaded, but compiled into a matcher only when
/// first asked: one query consults the scopes of a few windows, and compiling all fifty (a regex
/// each) was a visible share of a `freeze status` run. A cached calendar stores the patterns only.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Scope {
    pub patterns: Option<Vec<String>>,
    #[serde(skip)]
    set: OnceLock<Option<GlobSet>>,
}

impl Scope {
    pub fn all() -> Scope {
        Scope { patterns: None, set: OnceLock::new() }
    }

    pub fn new(patterns: Option<Vec<String>>) -> std::result::Result<Scope, String> {
        let Some(patterns) = patterns else {
            return Ok(Scope::all());
        };
        for p in &patterns {
            Glob::new(p).map_err(|e| format!("bad glob `{p}`: {e}"))?;
        }
        Ok(Scope { patterns: Some(patterns), set: OnceLock::new() })
    }

    /// Whether `value` is in scope; `None` (no value given) is in every scope.
    pub fn matches(&self, value: Option<&str>) -> bool {
        let (Some(patterns), Some(value)) = (&self.patterns, value) else { return true };
        match self.set.get_or_init(|| compile(patterns)) {
            Some(set) => set.is_match(value),
            // The set could not be built as a whole (a regex size limit): match pattern by
            // pattern, so that a window never silently stops applying.
            None => patterns.iter().filter_map(|p| Glob::new(p).ok()).any(|g| g.compile_matcher().is_match(value)),
        }
    }

    pub fn describe(&self) -> String {
        match &self.patterns {
            None => "*".into(),
            Some(p) => p.join(","),
        }
    }
}

/// The patterns (each already checked by [`Scope::new`]) as one set.
fn compile(patterns: &[String]) -> Option<GlobSet> {
    let mut builder = GlobSetBuilder::new();
    for p in patterns {
        builder.add(Glob::new(p).ok()?);
    }
    builder.build().ok()
}

/// An anchored window's events, indexed by time for range queries.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct AnchoredEvents {
    /// The `event` value as written (an id or a glob over ids).
    pub pattern: String,
    /// One-off events in UTC, sorted by start: `(start, end, event index)`.
    #[serde(with = "super::compact")]
    pub once: Vec<(DateTime<Utc>, DateTime<Utc>, usize)>,
    /// The longest one-off event, to bound the backwards search.
    #[serde(with = "super::compact")]
    pub once_max_len: Duration,
    pub recurring: Vec<usize>,
    pub lead: IsoDuration,
    pub lag: IsoDuration,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum Anchor {
    Events(AnchoredEvents),
    Own { tz: Zone, schedule: Schedule },
}

#[derive(Clone, Debug, Serialize, Deserialize)]
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
    pub fn display_tz(&self, calendar: &Calendar) -> Zone {
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

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Calendar {
    /// As given (for messages and findings).
    pub path: PathBuf,
    /// SHA-256 of the file's bytes, for the audit log.
    pub digest: String,
    pub default_tz: Zone,
    pub events: Vec<Event>,
    pub windows: Vec<Window>,
    /// What imported `.ics` files said that Sluice read toward more freeze (for `freeze lint`).
    pub import_notes: Vec<ImportNote>,
}

impl Calendar {
    pub fn window(&self, id: &str) -> Option<&Window> {
        self.windows.iter().find(|w| w.id == id)
    }
}

/// Loads and validates a calendar file.
pub fn load(path: &Path) -> Result<Calendar> {
    let text = read_regular_text(path)?;
    parse(path, &text)
}

/// Parses and validates calendar text; `path` names the file in errors and resolves `[[calendar]]` files.
pub fn parse(path: &Path, text: &str) -> Result<Calendar> {
    parse_with(path, text, &read_import)
}

/// Reads a `[[calendar]]` file from disk (`None`: no such file). An existing path that is not a
/// regular file (a FIFO) is refused, never read as missing.
pub fn read_import(file: &Path) -> Result<Option<String>> {
    if file.exists() {
        read_regular_text(file).map(Some)
    } else {
        Ok(None)
    }
}

/// [`parse`], reading the `[[calendar]]` files through `read` (`None`: no such file), so that
/// `sluice check` can read them from a git revision.
pub fn parse_with(path: &Path, text: &str, read: &dyn Fn(&Path) -> Result<Option<String>>) -> Result<Calendar> {
    parse_with_digest(path, text, hex::encode(Sha256::digest(text.as_bytes())), read)
}

/// [`parse_with`] given the SHA-256 of `text` (hex), which the calendar cache has computed already.
pub(super) fn parse_with_digest(
    path: &Path,
    text: &str,
    digest: String,
    read: &dyn Fn(&Path) -> Result<Option<String>>,
) -> Result<Calendar> {
    let raw = parse_raw(path, text)?;
    // Line starts, so that 10,000 entries do not each rescan the file for their line number.
    let starts: Vec<usize> = std::iter::once(0).chain(text.match_indices('\n').map(|(i, _)| i + 1)).collect();
    let line = |span: std::ops::Range<usize>| starts.partition_point(|&s| s <= span.start);
    let default_tz = match &raw.timezone {
        Some(tz) => parse_zone(tz.get_ref()).map_err(|m| Error::invalid(path, Some(line(tz.span())), m))?,
        None => Zone::utc(),
    };

    let mut events = Vec::with_capacity(raw.event.len());
    let mut seen: HashMap<String, (PathBuf, usize)> = HashMap::with_capacity(raw.event.len());
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

    // The few distinct zones of a large calendar, looked up once each.
    let mut zones: Vec<(&str, Zone)> = Vec::new();
    for spanned in &raw.event {
        let at = line(spanned.span());
        let e = spanned.get_ref();
        let when = e.when();
        note_id(&e.id, path, at, "[[event]]")?;
        let entry = |m: String| Error::invalid(path, Some(at), format!("[[event]] `{}`: {m}", e.id));
        let tz = match when.timezone {
            Some(name) => match zones.iter().find(|(n, _)| *n == name) {
                Some((_, z)) => *z,
                None => {
                    let z = parse_zone(name).map_err(entry)?;
                    zones.push((name, z));
                    z
                }
            },
            None => default_tz,
        };
        let schedule = schedule(&when, Owner::Event).map_err(entry)?;
        events.push(Event {
            id: e.id.clone(),
            name: e.name.clone().unwrap_or_else(|| e.id.clone()),
            tz,
            schedule,
            file: path.to_path_buf(),
            line: at,
        });
    }

    let mut import_notes = Vec::new();
    for spanned in &raw.calendar {
        let at = line(spanned.span());
        let c = spanned.get_ref();
        let entry = |m: String| Error::invalid(path, Some(at), format!("[[calendar]] `{}`: {m}", c.file));
        let floating = match &c.timezone {
            Some(name) => FloatingZone::given(parse_zone(name).map_err(entry)?),
            None => FloatingZone::fallback(default_tz),
        };
        let file = path.parent().unwrap_or(Path::new(".")).join(&c.file);
        let Some(ics) = read(&file)? else {
            return Err(entry(format!("no such file {}", file.display())));
        };
        let imported = super::ics::import_text(&file, &ics, c.id_prefix.as_deref().unwrap_or(""), floating)?;
        for event in imported.events {
            note_id(&event.id, &event.file, event.line, "imported event")?;
            events.push(event);
        }
        import_notes.extend(imported.notes);
    }

    let mut instants = InstantCache::new();
    let mut windows = Vec::new();
    let mut window_ids: HashMap<String, usize> = HashMap::new();
    for spanned in &raw.window {
        let at = line(spanned.span());
        let w = spanned.get_ref();
        let when = w.when();
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
                    ("rdate", when.rdate.is_some()),
                    ("exdate", when.exdate.is_some()),
                    ("instances", when.instances.is_some()),
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
                Anchor::Events(anchor_events(pattern, &events, &mut instants, lead, lag).map_err(entry)?)
            }
            None => {
                if w.lead.is_some() || w.lag.is_some() {
                    return Err(entry("`lead` and `lag` need `event`".into()));
                }
                let tz = match &when.timezone {
                    Some(name) => parse_zone(name).map_err(entry)?,
                    None => default_tz,
                };
                Anchor::Own { tz, schedule: schedule(&when, Owner::Window).map_err(entry)? }
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

    Ok(Calendar { path: path.to_path_buf(), digest, default_tz, events, windows, import_notes })
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
    // Reserved once: the merged entries are large structs, and growing by doubling copied them.
    let total = |count: fn(&RawCalendar) -> usize| pieces.iter().flatten().map(count).sum::<usize>();
    let mut raw = RawCalendar {
        timezone: None,
        event: Vec::with_capacity(total(|p| p.event.len())),
        window: Vec::with_capacity(total(|p| p.window.len())),
        calendar: Vec::with_capacity(total(|p| p.calendar.len())),
    };
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

/// The UTC instants of one-off events, computed once however many windows anchor to them.
type InstantCache = Vec<Option<(DateTime<Utc>, DateTime<Utc>)>>;

fn anchor_events(
    pattern: &str,
    events: &[Event],
    instants: &mut InstantCache,
    lead: IsoDuration,
    lag: IsoDuration,
) -> std::result::Result<AnchoredEvents, String> {
    instants.resize(events.len(), None);
    let glob = Glob::new(pattern).map_err(|e| format!("event = `{pattern}`: bad glob: {e}"))?.compile_matcher();
    let mut once = Vec::new();
    let mut recurring = Vec::new();
    for (i, e) in events.iter().enumerate() {
        if e.id != pattern && !glob.is_match(&e.id) {
            continue;
        }
        match &e.schedule {
            Schedule::Once { start, end } => {
                let (s, e) =
                    *instants[i].get_or_insert_with(|| (resolve_local(e.tz, *start), resolve_local(e.tz, *end)));
                once.push((s, e, i))
            }
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

/// What a schedule belongs to: an event may last no time at all (it still anchors lead and lag),
/// a window may not.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Owner {
    Event,
    Window,
}

/// Builds a schedule from the when-keys: either `start` + `end`, or a recurrence — `rrule` (one
/// or a list) with `start_time` and an optional `from` date, and/or `rdate` dates — with one of
/// `end_time` / `duration`, optional `exdate` and `instances`.
fn schedule(when: &RawWhen<'_>, owner: Owner) -> std::result::Result<Schedule, String> {
    let recurring = when.rrule.is_some() || when.rdate.is_some() || when.instances.is_some();
    match (recurring, when.start, when.end) {
        (false, Some(start), Some(end)) => {
            for (key, set) in [
                ("start_time", when.start_time.is_some()),
                ("end_time", when.end_time.is_some()),
                ("duration", when.duration.is_some()),
                ("from", when.from.is_some()),
                ("exdate", when.exdate.is_some()),
                ("instances", when.instances.is_some()),
            ] {
                if set {
                    return Err(format!("`{key}` belongs to recurring entries (with `rrule`), not to `start`/`end`"));
                }
            }
            let s = parse_local(start).map_err(|m| format!("start: {m}"))?;
            let e = parse_local(end).map_err(|m| format!("end: {m}"))?;
            if e < s || (e == s && owner == Owner::Window) {
                return Err(format!("end `{end}` is not after start `{start}` (intervals are [start, end))"));
            }
            Ok(Schedule::Once { start: s, end: e })
        }
        (false, Some(_), None) => Err("`start` without `end`".into()),
        (false, None, Some(_)) => Err("`end` without `start`".into()),
        (false, None, None) => {
            Err("no times: give `start` and `end`, or `rrule` with `start_time` and `end_time`/`duration`, or `event`"
                .into())
        }
        (true, Some(_), _) | (true, _, Some(_)) => {
            let key = if when.rrule.is_some() {
                "rrule"
            } else if when.rdate.is_some() {
                "rdate"
            } else {
                "instances"
            };
            Err(match key {
                "instances" => {
                    "`instances` cannot be combined with `start`/`end`: write the one-off as one more instance".into()
                }
                _ => format!(
                    "`{key}` cannot be combined with `start`/`end`; use `from` for the first date and `start_time`"
                ),
            })
        }
        (true, None, None) => recurring_schedule(when, owner),
    }
}

fn recurring_schedule(when: &RawWhen<'_>, owner: Owner) -> std::result::Result<Schedule, String> {
    let rules = when.rrule.map(OneOrMany::rules).unwrap_or_default();
    let dates = |key: &str, values: Option<&Vec<String>>| -> std::result::Result<Vec<NaiveDateTime>, String> {
        values.into_iter().flatten().map(|v| parse_local(v).map_err(|m| format!("{key}: {m}"))).collect()
    };
    let rdates = dates("rdate", when.rdate)?;
    let exdates = dates("exdate", when.exdate)?;
    let start_time = match (when.start_time, rules.is_empty()) {
        (Some(t), _) => parse_time_of_day(t).map_err(|m| format!("start_time: {m}"))?,
        (None, false) => return Err("`rrule` needs `start_time`".into()),
        (None, true) => rdates.iter().min().map(|t| t.time()).unwrap_or(NaiveTime::MIN),
    };
    if rules.is_empty() && rdates.is_empty() && when.instances.is_none() {
        return Err("`rrule` is an empty list and there is no `rdate`: the entry would never occur".into());
    }
    let empty = "the window would be empty";
    // Occurrences given only as `instances` have their own start and end: nothing to last.
    if rules.is_empty() && rdates.is_empty() {
        if let Some(key) = [("end_time", when.end_time), ("duration", when.duration), ("start_time", when.start_time)]
            .iter()
            .find_map(|(key, v)| v.map(|_| *key))
        {
            return Err(format!(
                "`{key}` applies to the occurrences of `rrule` or `rdate`; each of `instances` has its own start and end"
            ));
        }
    }
    let length = match (when.end_time, when.duration) {
        _ if rules.is_empty() && rdates.is_empty() => Length::Duration(IsoDuration::zero()),
        (Some(t), None) => {
            let end = parse_time_of_day(t).map_err(|m| format!("end_time: {m}"))?;
            if end == start_time && owner == Owner::Window {
                return Err(format!("end_time `{t}` equals start_time: {empty}"));
            }
            Length::EndTime(end)
        }
        (None, Some(d)) => {
            let d = IsoDuration::parse(d).map_err(|m| format!("duration: {m}"))?;
            if d.is_zero() && owner == Owner::Window {
                return Err(format!("duration is zero: {empty}"));
            }
            Length::Duration(d)
        }
        (Some(_), Some(_)) => return Err("give `end_time` or `duration`, not both".into()),
        (None, None) => return Err("a recurring entry needs `end_time` or `duration`".into()),
    };
    let from = parse_local(when.from.unwrap_or(DEFAULT_FROM)).map_err(|m| format!("from: {m}"))?;
    let dtstart = from.date().and_time(start_time);
    let mut instances = Vec::new();
    let mut exdates = exdates;
    for (n, i) in when.instances.into_iter().flatten().enumerate() {
        let at = |key: &str, m: String| format!("instances[{n}].{key}: {m}");
        let s = parse_local(&i.start).map_err(|m| at("start", m))?;
        let e = parse_local(&i.end).map_err(|m| at("end", m))?;
        if e < s || (e == s && owner == Owner::Window) {
            return Err(at("end", format!("`{}` is not after start `{}`", i.end, i.start)));
        }
        if let Some(r) = &i.replaces {
            exdates.push(parse_local(r).map_err(|m| at("replaces", m))?);
        }
        instances.push((s, e));
    }
    let mut rule = Recurrence::new(&rules, dtstart, rdates, exdates).map_err(|m| format!("rrule {m}"))?;
    rule.counts_from_default = when.from.is_none() && rule.has_count();
    Ok(Schedule::Recurring { rule: Box::new(rule), start_time, length, instances })
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

    #[test]
    fn an_entry_of_instances_alone_needs_no_rule_or_length() {
        let text = "[[event]]\nid = \"launches\"\ninstances = [{ start = \"2026-06-01T09:00\", end = \"2026-06-01T17:00\" }, { start = \"2026-09-01T09:00\", end = \"2026-09-02T09:00\" }]\n\n[[window]]\nid = \"w\"\nkind = \"deny\"\nevent = \"launches\"\nlead = \"PT1H\"\n";
        let cal = parse(Path::new("freeze.toml"), text).unwrap();
        let from = DateTime::parse_from_rfc3339("2026-01-01T00:00:00Z").unwrap().with_timezone(&Utc);
        let occurrences = cal.occurrences(from, from + Duration::days(365), |_| true).unwrap();
        let got: Vec<_> = occurrences.iter().map(|o| (o.start.to_rfc3339(), o.end.to_rfc3339())).collect();
        assert_eq!(
            got,
            [
                ("2026-06-01T08:00:00+00:00".to_string(), "2026-06-01T17:00:00+00:00".to_string()),
                ("2026-09-01T08:00:00+00:00".to_string(), "2026-09-02T09:00:00+00:00".to_string())
            ]
        );
        let e = err(&text.replace("instances = [", "duration = \"PT1H\"\ninstances = ["));
        assert!(e.contains("`duration` applies to the occurrences of `rrule` or `rdate`; each of `instances` has its own start and end"), "{e}");
        let e =
            err(&text
                .replace("instances = [", "start = \"2026-01-01T00:00\"\nend = \"2026-01-02T00:00\"\ninstances = ["));
        assert!(e.contains("`instances` cannot be combined with `start`/`end`"), "{e}");
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
