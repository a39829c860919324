//! iCalendar import (`[[calendar]]` and `sluice freeze import`: each VEVENT series becomes an
//! event). The export (`sluice freeze export`) is [`super::export`].
//!
//! The file is read with the `icalendar` crate's parser, which keeps every property and
//! parameter (several RRULEs, RDATE, EXDATE, RECURRENCE-ID, nested VTIMEZONEs); the meaning is
//! given here, by RFC 5545:
//! - every RRULE of a VEVENT counts, plus RDATEs (dates, date-times, periods), minus EXDATEs;
//!   DTSTART is always an occurrence (§3.8.5.3);
//! - a VEVENT with a RECURRENCE-ID (how Google and Outlook export one moved occurrence) replaces
//!   the occurrence of its series that started then; a cancelled one removes it;
//! - DATE values are all-day (calendar days in the `[[calendar]]` zone), floating times are
//!   read in that zone, TZIDs are IANA names, Windows names or the file's own VTIMEZONEs
//!   ([`super::vtimezone`]);
//! - with DTEND every occurrence lasts the same exact time; with DURATION the same nominal time.
//!
//! Whatever cannot be honoured either fails the import (it could hide a freeze) or is resolved
//! toward more freeze and reported as a note that `sluice freeze lint` prints.

use super::duration::IsoDuration;
use super::event::{Event, ImportNote, Length, Schedule};
use super::input::read_regular_text;
use super::recur::Recurrence;
use super::vtimezone::{self, Observance};
use super::zone::Zone;
use crate::error::{Error, Result};
use chrono::{DateTime, NaiveDate, NaiveDateTime, NaiveTime, Utc};
use icalendar::parser::{read_components, unfold, Component, Property};
use std::collections::HashMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;

pub struct Imported {
    pub events: Vec<Event>,
    pub notes: Vec<ImportNote>,
}

fn name_is(name: &str, wanted: &str) -> bool {
    name.eq_ignore_ascii_case(wanted)
}

fn props<'c, 'a>(c: &'c Component<'a>, name: &'c str) -> impl Iterator<Item = &'c Property<'a>> + 'c {
    c.properties.iter().filter(move |p| name_is(p.name.as_str(), name))
}

fn prop<'c, 'a>(c: &'c Component<'a>, name: &'c str) -> Option<&'c Property<'a>> {
    props(c, name).next()
}

fn param<'p>(p: &'p Property<'_>, key: &str) -> Option<&'p str> {
    p.params
        .iter()
        .find(|x| name_is(x.key.as_str(), key))
        .and_then(|x| x.val.as_ref())
        .map(|v| v.as_str().trim_matches('"'))
}

/// A DATE or DATE-TIME value as written.
#[derive(Clone, Copy, Debug)]
enum When {
    Date(NaiveDate),
    Floating(NaiveDateTime),
    Utc(NaiveDateTime),
    Zoned(NaiveDateTime, Zone),
}

/// The zones a file refers to: IANA, Windows, or its own VTIMEZONEs.
struct Zones {
    definitions: HashMap<String, Vec<Observance>>,
    resolved: HashMap<String, Zone>,
    /// TZIDs read as the IANA name they end in (`/mozilla.org/20050126_1/America/New_York`).
    read_as_iana: Vec<(String, &'static str)>,
}

impl Zones {
    fn resolve(&mut self, tzid: &str) -> std::result::Result<Zone, String> {
        if let Some(z) = self.resolved.get(tzid) {
            return Ok(*z);
        }
        // A globally unique TZID (RFC 5545 §3.2.19: it starts with `/`) that ends in an IANA
        // name, as Mozilla's and Lotus's exports write them: the database's zone, not the file's
        // snapshot of it.
        let iana_suffix = || {
            let parts: Vec<&str> = tzid.split('/').collect();
            (1..parts.len()).find_map(|i| Zone::named(&parts[i..].join("/")).ok().map(|z| (z, z.name())))
        };
        let zone = match Zone::named(tzid) {
            Ok(z) => z,
            Err(_) if tzid.starts_with('/') && iana_suffix().is_some() => {
                let (zone, name) = iana_suffix().unwrap_or((Zone::utc(), "UTC"));
                self.read_as_iana.push((tzid.to_string(), name));
                zone
            }
            Err(iana_error) => match vtimezone::windows_to_iana(tzid) {
                Some(iana) => Zone::named(iana)?,
                None => match self.definitions.get(tzid) {
                    Some(observances) => vtimezone::zone_of(tzid, observances)?,
                    None if iana_error.contains("did you mean") => return Err(format!("TZID: {iana_error}")),
                    None => {
                        return Err(format!(
                            "TZID `{tzid}` is neither an IANA nor a Windows zone name, and the file defines no VTIMEZONE with that TZID"
                        ))
                    }
                },
            },
        };
        self.resolved.insert(tzid.to_string(), zone);
        Ok(zone)
    }

    fn value(&mut self, p: &Property<'_>) -> std::result::Result<Vec<When>, String> {
        let name = p.name.as_str().to_ascii_uppercase();
        let value_type = param(p, "VALUE").map(str::to_ascii_uppercase);
        let zone = param(p, "TZID").map(|t| self.resolve(t)).transpose()?;
        p.val
            .as_str()
            .split(',')
            .map(|v| {
                let v = v.trim();
                if value_type.as_deref() == Some("DATE") || (v.len() == 8 && !v.contains('T')) {
                    return NaiveDate::parse_from_str(v, "%Y%m%d")
                        .map(When::Date)
                        .map_err(|_| format!("{name}: `{v}` is not a date (20260517)"));
                }
                let (text, utc) = match v.strip_suffix('Z') {
                    Some(t) => (t, true),
                    None => (v, false),
                };
                let t = NaiveDateTime::parse_from_str(text, "%Y%m%dT%H%M%S")
                    .map_err(|_| format!("{name}: `{v}` is not a date-time (20260517T090000[Z])"))?;
                Ok(match (utc, zone) {
                    (true, _) => When::Utc(t),
                    (false, Some(z)) => When::Zoned(t, z),
                    (false, None) => When::Floating(t),
                })
            })
            .collect()
    }

    fn one(&mut self, p: &Property<'_>) -> std::result::Result<When, String> {
        let mut values = self.value(p)?;
        match values.len() {
            1 => Ok(values.remove(0)),
            _ => Err(format!("{} has {} values; it takes one", p.name.as_str(), values.len())),
        }
    }
}

/// A value as wall-clock time in `zone` (the event's).
fn local_in(when: When, zone: Zone, time_of_day: NaiveTime) -> NaiveDateTime {
    match when {
        When::Date(d) => d.and_time(time_of_day),
        When::Floating(t) => t,
        When::Utc(t) => zone.local(t.and_utc()),
        When::Zoned(t, z) if z == zone => t,
        When::Zoned(t, z) => zone.local(z.instant(t)),
    }
}

/// The day a value names: its own wall-clock date, or a UTC time's date in `zone`.
fn day_of(when: When, zone: Zone) -> When {
    match when {
        When::Date(d) => When::Date(d),
        When::Floating(t) | When::Zoned(t, _) => When::Date(t.date()),
        When::Utc(t) => When::Date(zone.local(t.and_utc()).date()),
    }
}

fn instant_of(when: When, default: Zone) -> DateTime<Utc> {
    match when {
        When::Date(d) => default.instant(d.and_time(NaiveTime::MIN)),
        When::Floating(t) => default.instant(t),
        When::Utc(t) => t.and_utc(),
        When::Zoned(t, z) => z.instant(t),
    }
}

fn parse_duration(text: &str) -> std::result::Result<IsoDuration, String> {
    let t = text.trim();
    if t.starts_with('-') {
        return Err(format!("DURATION `{t}` is negative"));
    }
    IsoDuration::parse(t.strip_prefix('+').unwrap_or(t)).map_err(|m| format!("DURATION: {m}"))
}

/// Every VEVENT and VTIMEZONE, depth first in document order.
fn collect<'c, 'a>(
    components: &'c [Component<'a>],
    events: &mut Vec<&'c Component<'a>>,
    zones: &mut Vec<&'c Component<'a>>,
    other: &mut Vec<String>,
) {
    for c in components {
        match c.name.as_str().to_ascii_uppercase().as_str() {
            "VEVENT" => events.push(c),
            "VTIMEZONE" => zones.push(c),
            "VCALENDAR" => collect(&c.components, events, zones, other),
            "VTODO" | "VJOURNAL" | "VFREEBUSY" | "VAVAILABILITY" => other.push(c.name.as_str().to_string()),
            _ => {}
        }
    }
}

fn observances(vtz: &Component<'_>) -> std::result::Result<(String, Vec<Observance>), String> {
    let tzid = prop(vtz, "TZID").map(|p| p.val.as_str().trim().to_string()).ok_or("VTIMEZONE without TZID")?;
    let mut out = Vec::new();
    for o in &vtz.components {
        let daylight = match o.name.as_str().to_ascii_uppercase().as_str() {
            "STANDARD" => false,
            "DAYLIGHT" => true,
            _ => continue,
        };
        let get = |k: &str| prop(o, k).map(|p| p.val.as_str().trim().to_string());
        let bad = |k: &str| format!("VTIMEZONE `{tzid}`: {} has no valid {k}", o.name.as_str());
        let start = get("DTSTART")
            .and_then(|v| NaiveDateTime::parse_from_str(&v, "%Y%m%dT%H%M%S").ok())
            .ok_or_else(|| bad("DTSTART"))?;
        let offset_from =
            get("TZOFFSETFROM").and_then(|v| vtimezone::parse_offset(&v)).ok_or_else(|| bad("TZOFFSETFROM"))?;
        let offset_to = get("TZOFFSETTO").and_then(|v| vtimezone::parse_offset(&v)).ok_or_else(|| bad("TZOFFSETTO"))?;
        let mut rdates = Vec::new();
        for p in props(o, "RDATE") {
            for v in p.val.as_str().split(',').map(str::trim) {
                // Local time in the offset before the onset, as DTSTART; a UTC one is converted.
                let local = match v.strip_suffix('Z') {
                    Some(utc) => NaiveDateTime::parse_from_str(utc, "%Y%m%dT%H%M%S")
                        .map(|t| t + chrono::Duration::seconds(offset_from as i64)),
                    None => NaiveDateTime::parse_from_str(v, "%Y%m%dT%H%M%S"),
                };
                rdates.push(local.map_err(|_| {
                    format!("VTIMEZONE `{tzid}`: {} RDATE `{v}` is not a date-time (19671029T020000)", o.name.as_str())
                })?);
            }
        }
        out.push(Observance {
            daylight,
            start,
            offset_from,
            offset_to,
            name: get("TZNAME"),
            rrule: get("RRULE"),
            rdates,
        });
    }
    Ok((tzid, out))
}

/// What the `icalendar` crate could not read, at the file's own line, without the names of its
/// parser's internals. (Content lines and nesting were checked before: this is rare.)
fn parser_error(path: &Path, text: &str, error: &str) -> Error {
    // The crate counts lines after unfolding: "at line N".
    let unfolded_line = error
        .split("at line ")
        .nth(1)
        .and_then(|rest| rest.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|n| n.parse::<usize>().ok());
    let lines = super::ics_lines::logical_lines(text);
    let line = unfolded_line.and_then(|n| lines.get(n.checked_sub(1)?)).map(|(physical, _)| *physical);
    let shown = line.and_then(|l| text.lines().nth(l - 1)).map(|l| format!(": `{}`", l.trim_end())).unwrap_or_default();
    Error::invalid(
        path,
        line,
        format!("not a valid iCalendar file: this line cannot be read as RFC 5545 content{shown}"),
    )
}

/// The zone of the file's floating times ([`FloatingZone`]), and the zone a series that starts
/// in UTC recurs in: the `X-WR-TIMEZONE` when it is used (as the `x-wr-timezone` package reads
/// Google's exports: the instants stay, the rule follows that zone's wall clock), else UTC. An
/// `X-WR-TIMEZONE` that is not used is noted.
fn floating_zone(
    path: &Path,
    text: &str,
    roots: &[Component<'_>],
    floating: FloatingZone,
    notes: &mut Vec<ImportNote>,
) -> (Zone, Zone) {
    let declared = roots
        .iter()
        .filter(|c| name_is(c.name.as_str(), "VCALENDAR"))
        .find_map(|c| prop(c, "X-WR-TIMEZONE"))
        .map(|p| p.val.as_str().trim().to_string());
    let Some(declared) = declared else { return (floating.given.unwrap_or(floating.fallback), Zone::utc()) };
    let line = text.lines().position(|l| l.to_ascii_uppercase().starts_with("X-WR-TIMEZONE")).map_or(1, |i| i + 1);
    let mut note = |message: String| notes.push(ImportNote { file: path.to_path_buf(), line, message });
    match (floating.given, Zone::named(&declared)) {
        (Some(given), Ok(zone)) if given == zone => (given, zone),
        (Some(given), _) => {
            note(format!(
                "X-WR-TIMEZONE:{declared} is ignored: floating times and all-day dates are read in {given}, the zone given for this file"
            ));
            (given, Zone::utc())
        }
        (None, Ok(zone)) => (zone, zone),
        (None, Err(why)) => {
            note(format!(
                "X-WR-TIMEZONE:{declared} is ignored ({why}): floating times and all-day dates are read in {}",
                floating.fallback
            ));
            (floating.fallback, Zone::utc())
        }
    }
}

/// The 1-based lines of each `BEGIN:NAME` in document order (the parser keeps no positions).
fn begin_lines(text: &str, name: &str) -> Vec<usize> {
    let begin = format!("BEGIN:{name}");
    text.lines().enumerate().filter(|(_, l)| l.trim_end().eq_ignore_ascii_case(&begin)).map(|(i, _)| i + 1).collect()
}

/// The zone of an imported file's floating times and all-day dates: the one given for the file
/// (`[[calendar]] timezone`, `freeze import --tz`), else the file's own `X-WR-TIMEZONE` (how
/// Google Calendar names its calendar's zone), else `fallback` (the calendar's default zone; UTC
/// for `freeze import`).
#[derive(Clone, Copy, Debug)]
pub struct FloatingZone {
    pub given: Option<Zone>,
    pub fallback: Zone,
}

impl FloatingZone {
    /// The zone given for the file: it wins over `X-WR-TIMEZONE`.
    pub fn given(zone: Zone) -> FloatingZone {
        FloatingZone { given: Some(zone), fallback: zone }
    }

    /// No zone given: the file's `X-WR-TIMEZONE`, else `zone`.
    pub fn fallback(zone: Zone) -> FloatingZone {
        FloatingZone { given: None, fallback: zone }
    }
}

/// Reads the VEVENTs of an `.ics` file as events with ids `{prefix}{UID}`.
pub fn import(path: &Path, prefix: &str, floating: FloatingZone) -> Result<Imported> {
    import_text(path, &read_regular_text(path)?, prefix, floating)
}

/// [`import`] of text already read (`sluice check` reads it from a git revision); `path` names
/// the file in errors and events.
pub fn import_text(path: &Path, text: &str, prefix: &str, floating: FloatingZone) -> Result<Imported> {
    // Malformed content lines and nesting, in iCalendar terms at the file's own line.
    let skipped = super::ics_lines::check(text).map_err(|e| Error::invalid(path, Some(e.line), e.message))?;
    let unfolded = unfold(text);
    let roots = catch_unwind(AssertUnwindSafe(|| read_components(&unfolded)))
        .map_err(|_| {
            Error::invalid(path, None, "the iCalendar parser crashed on this file; check that it is valid RFC 5545")
        })?
        .map_err(|e| parser_error(path, text, &e))?;
    let mut notes: Vec<ImportNote> = skipped
        .into_iter()
        .map(|e| ImportNote { file: path.to_path_buf(), line: e.line, message: e.message })
        .collect();
    let (tz, utc_frame) = floating_zone(path, text, &roots, floating, &mut notes);
    let (mut vevents, mut vtimezones, mut ignored) = (Vec::new(), Vec::new(), Vec::new());
    collect(&roots, &mut vevents, &mut vtimezones, &mut ignored);
    let event_lines = begin_lines(text, "VEVENT");
    for kind in ["VTODO", "VJOURNAL", "VFREEBUSY", "VAVAILABILITY"] {
        let lines = begin_lines(text, kind);
        if let Some(first) = lines.first() {
            notes.push(ImportNote {
                file: path.to_path_buf(),
                line: *first,
                message: format!("{} {kind} component(s) ignored: only VEVENTs are freeze events", lines.len()),
            });
        }
    }
    let mut zones = Zones { definitions: HashMap::new(), resolved: HashMap::new(), read_as_iana: Vec::new() };
    for vtz in &vtimezones {
        let (tzid, obs) = observances(vtz).map_err(|m| Error::invalid(path, None, m))?;
        zones.definitions.insert(tzid, obs);
    }
    // Series by UID: the master (no RECURRENCE-ID) and the occurrences it moves.
    let mut order: Vec<String> = Vec::new();
    let mut series: HashMap<String, SeriesParts> = HashMap::new();
    for (n, vevent) in vevents.iter().enumerate() {
        let line = event_lines.get(n).copied().unwrap_or(1);
        let uid = prop(vevent, "UID").map(|p| p.val.as_str().trim().to_string()).unwrap_or_default();
        if uid.is_empty() {
            return Err(Error::invalid(
                path,
                Some(line),
                format!("VEVENT #{}: has no UID; every imported event needs one (it becomes the event id)", n + 1),
            ));
        }
        let entry = series.entry(uid.clone()).or_insert_with(|| {
            order.push(uid.clone());
            (None, Vec::new())
        });
        if prop(vevent, "RECURRENCE-ID").is_some() {
            entry.1.push((line, vevent));
        } else if let Some((first, _)) = entry.0 {
            return Err(Error::invalid(path, Some(line), format!("VEVENT `{uid}`: a second VEVENT with this UID and no RECURRENCE-ID (the first is at line {first}); UIDs must be unique")));
        } else {
            entry.0 = Some((line, vevent));
        }
    }
    let mut events = Vec::new();
    for uid in order {
        let (master, moved) = &series[&uid];
        let line = master.map(|m| m.0).or(moved.first().map(|m| m.0)).unwrap_or(1);
        let at = |m: String| Error::invalid(path, Some(line), format!("VEVENT `{uid}`: {m}"));
        let mut reader =
            SeriesReader { path, uid: &uid, zones: &mut zones, default_tz: tz, utc_frame, notes: &mut notes };
        let event = match master {
            Some((line, vevent)) => reader.series(*line, vevent, moved).map_err(at)?,
            None => reader.orphans(moved).map_err(at)?,
        };
        if let Some((schedule, zone, name)) = event {
            events.push(Event {
                id: format!("{prefix}{uid}"),
                name,
                tz: zone,
                schedule,
                file: path.to_path_buf(),
                line,
            });
        }
    }
    for (tzid, iana) in &zones.read_as_iana {
        let line = text.lines().position(|l| l.contains(tzid.as_str())).map_or(1, |i| i + 1);
        let message = format!("TZID `{tzid}` is read as the IANA zone {iana}, the name it ends in");
        notes.push(ImportNote { file: path.to_path_buf(), line, message });
    }
    Ok(Imported { events, notes })
}

/// A series' master VEVENT and the VEVENTs that move its occurrences, each with its line.
type SeriesParts<'c, 'a> = (Option<(usize, &'c Component<'a>)>, Vec<(usize, &'c Component<'a>)>);

struct SeriesReader<'r> {
    path: &'r Path,
    uid: &'r str,
    zones: &'r mut Zones,
    default_tz: Zone,
    /// The zone a series that starts in UTC recurs in (see [`floating_zone`]).
    utc_frame: Zone,
    notes: &'r mut Vec<ImportNote>,
}

type Series = Option<(Schedule, Zone, String)>;

impl SeriesReader<'_> {
    fn note(&mut self, line: usize, message: String) {
        self.notes.push(ImportNote {
            file: self.path.to_path_buf(),
            line,
            message: format!("VEVENT `{}`: {message}", self.uid),
        });
    }

    fn summary(vevent: &Component<'_>, uid: &str) -> String {
        prop(vevent, "SUMMARY")
            .map(|p| p.val.clone().unescape_text().as_str().trim().to_string())
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| uid.to_string())
    }

    fn cancelled(vevent: &Component<'_>) -> bool {
        prop(vevent, "STATUS").is_some_and(|p| p.val.as_str().trim().eq_ignore_ascii_case("CANCELLED"))
    }

    /// The start, end and length of a VEVENT, in `zone` (the start's unless given).
    fn times(
        &mut self,
        vevent: &Component<'_>,
        zone: Option<Zone>,
    ) -> std::result::Result<(Zone, NaiveDateTime, NaiveDateTime, Length, bool), String> {
        let start = prop(vevent, "DTSTART").ok_or("has no DTSTART")?;
        let start = self.zones.one(start)?;
        let all_day = matches!(start, When::Date(_));
        let zone = zone.unwrap_or(match start {
            When::Utc(_) => self.utc_frame,
            When::Zoned(_, z) => z,
            When::Date(_) | When::Floating(_) => self.default_tz,
        });
        let start_local = local_in(start, zone, NaiveTime::MIN);
        let (end_local, length) = match (prop(vevent, "DTEND"), prop(vevent, "DURATION")) {
            (Some(_), Some(_)) => return Err("has both DTEND and DURATION; RFC 5545 allows one".into()),
            (Some(end), None) => {
                let end = self.zones.one(end)?;
                // Instants, not wall-clock readings: a 30-minute event from 01:45 on the night the
                // clocks go back ends at 01:15, after it starts.
                if !all_day && instant_of(end, self.default_tz) < zone.instant(start_local) {
                    return Err("ends before it starts".into());
                }
                let end_local = local_in(end, zone, NaiveTime::MIN);
                // With DTEND every occurrence lasts the same exact time (calendar days when all-day).
                let length = if all_day {
                    IsoDuration::from_parts(u32::try_from((end_local - start_local).num_days()).unwrap_or(0), 0)
                } else {
                    let exact = (instant_of(end, self.default_tz) - zone.instant(start_local)).num_seconds();
                    IsoDuration::from_parts(0, u64::try_from(exact).unwrap_or(0))
                };
                (end_local, length)
            }
            (None, Some(d)) => {
                let d = parse_duration(d.val.as_str())?;
                let end =
                    d.add_nominal(start_local).map(|w| zone.instant(w) + d.exact()).ok_or("DURATION out of range")?;
                (zone.local(end), d)
            }
            (None, None) if all_day => (start_local + chrono::Duration::days(1), IsoDuration::from_parts(1, 0)),
            (None, None) => (start_local, IsoDuration::zero()),
        };
        if all_day && end_local < start_local {
            return Err("ends before it starts".into());
        }
        Ok((zone, start_local, end_local.max(start_local), Length::Duration(length), all_day))
    }

    fn series(
        &mut self,
        line: usize,
        vevent: &Component<'_>,
        moved: &[(usize, &Component<'_>)],
    ) -> std::result::Result<Series, String> {
        let name = Self::summary(vevent, self.uid);
        if Self::cancelled(vevent) {
            self.note(line, "STATUS:CANCELLED: the whole series is cancelled and imported as nothing".into());
            return Ok(None);
        }
        let (zone, start, end, length, all_day) = self.times(vevent, None)?;
        // In an all-day series a date-time EXDATE or RECURRENCE-ID names its day: Exchange
        // writes `RECURRENCE-ID;TZID=W. Europe Standard Time:20260310T000000` for the instance
        // of 2026-03-10, which read as an instant is the evening before in most zones.
        let on_its_day = |w: When| if all_day { day_of(w, zone) } else { w };
        let rules: Vec<String> = props(vevent, "RRULE").map(|p| p.val.as_str().trim().to_string()).collect();
        if props(vevent, "EXRULE").next().is_some() {
            self.note(
                line,
                "EXRULE (removed from iCalendar by RFC 5545) is ignored: the occurrences it would remove stay frozen"
                    .into(),
            );
        }
        let mut rdates = Vec::new();
        let mut instances = Vec::new();
        for p in props(vevent, "RDATE") {
            if param(p, "VALUE").is_some_and(|v| v.eq_ignore_ascii_case("PERIOD")) {
                for period in p.val.as_str().split(',') {
                    instances.push(self.period(p, period.trim(), zone)?);
                }
            } else {
                rdates.extend(self.zones.value(p)?.into_iter().map(|w| local_in(w, zone, start.time())));
            }
        }
        let mut exdates = Vec::new();
        for p in props(vevent, "EXDATE") {
            exdates.extend(self.zones.value(p)?.into_iter().map(|w| local_in(on_its_day(w), zone, start.time())));
        }
        let plain = rules.is_empty() && rdates.is_empty() && instances.is_empty() && moved.is_empty();
        // A one-off is kept as wall-clock start and end only when they read back as the same
        // instants (not across a change that turns the clocks back); else as its exact length.
        let exact_on_the_wall = zone.instant(end) == length.end_of(zone, start.time(), start);
        if plain && prop(vevent, "DURATION").is_none() && exact_on_the_wall {
            return Ok(Some((Schedule::Once { start, end }, zone, name)));
        }
        // DTSTART is always the first occurrence (RFC 5545 §3.8.5.3).
        let rule_refs: Vec<&str> = rules.iter().map(String::as_str).collect();
        let by_rules = Recurrence::new(&rule_refs, start, Vec::new(), Vec::new()).map_err(|m| format!("RRULE {m}"))?;
        let synchronised = !rules.is_empty() && by_rules.starts_between(zone, start, start)?.contains(&start);
        if !rules.is_empty() && !synchronised {
            self.note(
                line,
                format!("DTSTART {start} is not an occurrence of its RRULE; RFC 5545 counts it as one, so it is kept"),
            );
        }
        if !synchronised {
            rdates.push(start);
        }
        let mut recurrence = Recurrence::new(&rule_refs, start, rdates, exdates).map_err(|m| format!("RRULE {m}"))?;
        for (moved_line, m) in moved {
            let rid = prop(m, "RECURRENCE-ID").ok_or("RECURRENCE-ID")?;
            if param(rid, "RANGE").is_some_and(|r| !r.eq_ignore_ascii_case("THISINSTANCE")) {
                return Err(format!(
                    "line {moved_line}: RECURRENCE-ID;RANGE={} (this and every later occurrence moved) cannot be honoured; export the series with each occurrence expanded",
                    param(rid, "RANGE").unwrap_or("")
                ));
            }
            let original = local_in(on_its_day(self.zones.one(rid)?), zone, start.time());
            if !recurrence.starts_between(zone, original, original)?.contains(&original) {
                self.note(*moved_line, format!("RECURRENCE-ID {original} matches no occurrence of the series; the moved occurrence is added as given"));
            }
            recurrence.exdates.push(original);
            recurrence.exdates.sort_unstable();
            if Self::cancelled(m) {
                continue;
            }
            let (s, e) = match self.times(m, Some(zone)) {
                Ok((_, s, e, _, _)) if prop(m, "DTEND").is_some() || prop(m, "DURATION").is_some() => (s, e),
                Ok((_, s, _, _, _)) => (s, self.end_after(s, &length, zone)),
                Err(why) if prop(m, "DTSTART").is_none() => {
                    let _ = why;
                    (original, self.end_after(original, &length, zone))
                }
                Err(why) => return Err(format!("line {moved_line}: {why}")),
            };
            instances.push((s, e));
        }
        let schedule = Schedule::Recurring { rule: Box::new(recurrence), start_time: start.time(), length, instances };
        Ok(Some((schedule, zone, name)))
    }

    /// Moved occurrences of a series that is not in the file: each is an occurrence as given.
    fn orphans(&mut self, moved: &[(usize, &Component<'_>)]) -> std::result::Result<Series, String> {
        let mut instances = Vec::new();
        let mut zone = None;
        let mut name = self.uid.to_string();
        for (line, m) in moved {
            if Self::cancelled(m) {
                continue;
            }
            let (z, s, e, _, _) = self.times(m, zone).map_err(|w| format!("line {line}: {w}"))?;
            zone = Some(z);
            name = Self::summary(m, self.uid);
            instances.push((s, e));
        }
        let (Some(zone), Some(first)) = (zone, moved.first()) else { return Ok(None) };
        self.note(first.0, "moved occurrence(s) of a series that is not in the file: imported as given".into());
        let start = instances.iter().map(|i| i.0).min().unwrap_or(NaiveDateTime::MIN);
        let recurrence = Recurrence::new(&[], start, Vec::new(), Vec::new())?;
        let length = Length::Duration(IsoDuration::zero());
        Ok(Some((
            Schedule::Recurring { rule: Box::new(recurrence), start_time: start.time(), length, instances },
            zone,
            name,
        )))
    }

    fn end_after(&self, start: NaiveDateTime, length: &Length, zone: Zone) -> NaiveDateTime {
        match length {
            Length::Duration(d) => {
                d.add_nominal(start).map(|w| zone.local(zone.instant(w) + d.exact())).unwrap_or(start)
            }
            Length::EndTime(t) => start.date().and_time(*t),
        }
    }

    /// An RDATE period, `start/end` or `start/duration`, in `zone`.
    fn period(
        &mut self,
        p: &Property<'_>,
        text: &str,
        zone: Zone,
    ) -> std::result::Result<(NaiveDateTime, NaiveDateTime), String> {
        let (a, b) = text.split_once('/').ok_or_else(|| format!("RDATE period `{text}` has no `/`"))?;
        let tzid = param(p, "TZID");
        let read = |zones: &mut Zones, v: &str| -> std::result::Result<When, String> {
            let (t, utc) = match v.strip_suffix('Z') {
                Some(t) => (t, true),
                None => (v, false),
            };
            let t = NaiveDateTime::parse_from_str(t, "%Y%m%dT%H%M%S")
                .map_err(|_| format!("RDATE period: `{v}` is not a date-time"))?;
            Ok(match (utc, tzid) {
                (true, _) => When::Utc(t),
                (false, Some(z)) => When::Zoned(t, zones.resolve(z)?),
                (false, None) => When::Floating(t),
            })
        };
        let start = read(self.zones, a)?;
        let s = local_in(start, zone, NaiveTime::MIN);
        let end = if b.starts_with('P') || b.starts_with('+') {
            let d = parse_duration(b)?;
            d.add_nominal(s).map(|w| zone.instant(w) + d.exact()).ok_or("RDATE period out of range")?
        } else {
            instant_of(read(self.zones, b)?, self.default_tz)
        };
        if end < instant_of(start, self.default_tz) {
            return Err(format!("RDATE period `{text}` ends before it starts"));
        }
        Ok((s, zone.local(end).max(s)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::freeze::calendar::parse;
    use crate::freeze::time::{parse_instant, utc_string};

    fn t(s: &str) -> DateTime<Utc> {
        parse_instant(s, None).unwrap()
    }

    /// The occurrences of window `w` (anchored to every imported event) in `[from, to)`.
    fn occurrences(ics: &str, from: &str, to: &str) -> Vec<String> {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("events.ics"), ics).unwrap();
        let cal_path = dir.path().join("freeze.toml");
        let text = "timezone = \"America/New_York\"\n[[calendar]]\nfile = \"events.ics\"\n\n[[window]]\nid = \"w\"\nkind = \"deny\"\nevent = \"*\"\n";
        let cal = parse(&cal_path, text).unwrap();
        cal.occurrences(t(from), t(to), |_| true)
            .unwrap()
            .iter()
            .map(|o| format!("{} {}..{}", cal.events[o.event.unwrap()].id, utc_string(o.start), utc_string(o.end)))
            .collect()
    }

    fn vcal(body: &str) -> String {
        format!("BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:test\r\n{body}END:VCALENDAR\r\n")
    }

    #[test]
    fn every_rrule_rdate_and_exdate_counts() {
        // Issue 12, case 5: two RRULEs (18 + 18 occurrences), an RDATE and an EXDATE.
        let ics = vcal(
            "BEGIN:VEVENT\r\nUID:ops\r\nSUMMARY:Ops review\r\nDTSTART;TZID=America/New_York:20260105T090000\r\nDTEND;TZID=America/New_York:20260105T100000\r\n\
RRULE:FREQ=WEEKLY;BYDAY=MO;COUNT=18\r\nRRULE:FREQ=WEEKLY;BYDAY=TH;COUNT=18\r\nRDATE;TZID=America/New_York:20260110T120000\r\nEXDATE;TZID=America/New_York:20260112T090000\r\nEND:VEVENT\r\n",
        );
        let got = occurrences(&ics, "2026-01-01T00:00:00Z", "2027-01-01T00:00:00Z");
        // 36 rule occurrences, one removed, one added.
        assert_eq!(got.len(), 36, "{got:#?}");
        assert!(got.contains(&"ops 2026-01-10T17:00:00Z..2026-01-10T18:00:00Z".to_string()));
        assert!(!got.iter().any(|o| o.contains("2026-01-12T14:00:00Z")));
        assert!(got.contains(&"ops 2026-01-08T14:00:00Z..2026-01-08T15:00:00Z".to_string()));
    }

    #[test]
    fn a_moved_occurrence_replaces_the_original_and_a_cancelled_one_removes_it() {
        let ics = vcal(
            "BEGIN:VEVENT\r\nUID:standup@google.com\r\nDTSTART;TZID=America/New_York:20260302T090000\r\nDTEND;TZID=America/New_York:20260302T093000\r\nRRULE:FREQ=DAILY;COUNT=5\r\nEND:VEVENT\r\n\
BEGIN:VEVENT\r\nUID:standup@google.com\r\nRECURRENCE-ID;TZID=America/New_York:20260303T090000\r\nDTSTART;TZID=America/New_York:20260303T150000\r\nDTEND;TZID=America/New_York:20260303T160000\r\nEND:VEVENT\r\n\
BEGIN:VEVENT\r\nUID:standup@google.com\r\nRECURRENCE-ID:20260304T140000Z\r\nSTATUS:CANCELLED\r\nDTSTART;TZID=America/New_York:20260304T090000\r\nEND:VEVENT\r\n",
        );
        let got = occurrences(&ics, "2026-03-01T00:00:00Z", "2026-04-01T00:00:00Z");
        assert_eq!(
            got,
            [
                "standup@google.com 2026-03-02T14:00:00Z..2026-03-02T14:30:00Z",
                "standup@google.com 2026-03-03T20:00:00Z..2026-03-03T21:00:00Z",
                "standup@google.com 2026-03-05T14:00:00Z..2026-03-05T14:30:00Z",
                "standup@google.com 2026-03-06T14:00:00Z..2026-03-06T14:30:00Z",
            ]
        );
    }

    #[test]
    fn zero_length_recurring_events_stay_zero_length_and_all_day_dates_are_days() {
        let ics = vcal(
            "BEGIN:VEVENT\r\nUID:deadline\r\nDTSTART:20260601T120000Z\r\nDTEND:20260601T120000Z\r\nRRULE:FREQ=DAILY;COUNT=2\r\nEND:VEVENT\r\n\
BEGIN:VEVENT\r\nUID:holiday\r\nDTSTART;VALUE=DATE:20260704\r\nDTEND;VALUE=DATE:20260705\r\nRRULE:FREQ=YEARLY\r\nEND:VEVENT\r\n",
        );
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("e.ics"), &ics).unwrap();
        let imported =
            import(&dir.path().join("e.ics"), "", FloatingZone::given(Zone::named("America/New_York").unwrap()))
                .unwrap();
        match &imported.events[0].schedule {
            Schedule::Recurring { length: Length::Duration(d), .. } => assert!(d.is_zero(), "{d}"),
            other => panic!("{other:?}"),
        }
        // The all-day holiday is midnight to midnight in the calendar's zone, every year.
        let got = occurrences(&ics, "2027-07-01T00:00:00Z", "2027-07-10T00:00:00Z");
        assert_eq!(got, ["holiday 2027-07-04T04:00:00Z..2027-07-05T04:00:00Z"]);
    }

    #[test]
    fn windows_zone_names_and_vtimezone_definitions_are_honoured() {
        let outlook = vcal(
            "BEGIN:VEVENT\r\nUID:a\r\nDTSTART;TZID=Eastern Standard Time:20260708T090000\r\nDTEND;TZID=Eastern Standard Time:20260708T100000\r\nEND:VEVENT\r\n",
        );
        assert_eq!(
            occurrences(&outlook, "2026-07-01T00:00:00Z", "2026-08-01T00:00:00Z"),
            ["a 2026-07-08T13:00:00Z..2026-07-08T14:00:00Z"]
        );
        let custom = vcal(
            "BEGIN:VTIMEZONE\r\nTZID:Customized Time Zone\r\nBEGIN:STANDARD\r\nDTSTART:16010101T020000\r\nTZOFFSETFROM:-0400\r\nTZOFFSETTO:-0500\r\nRRULE:FREQ=YEARLY;BYDAY=1SU;BYMONTH=11\r\nEND:STANDARD\r\n\
BEGIN:DAYLIGHT\r\nDTSTART:16010101T020000\r\nTZOFFSETFROM:-0500\r\nTZOFFSETTO:-0400\r\nRRULE:FREQ=YEARLY;BYDAY=2SU;BYMONTH=3\r\nEND:DAYLIGHT\r\nEND:VTIMEZONE\r\n\
BEGIN:VEVENT\r\nUID:b\r\nDTSTART;TZID=Customized Time Zone:21000701T120000\r\nDURATION:PT1H\r\nEND:VEVENT\r\n",
        );
        assert_eq!(
            occurrences(&custom, "2100-07-01T00:00:00Z", "2100-07-02T00:00:00Z"),
            ["b 2100-07-01T16:00:00Z..2100-07-01T17:00:00Z"]
        );
        let unknown =
            vcal("BEGIN:VEVENT\r\nUID:c\r\nDTSTART;TZID=Mars Standard Time:20260708T090000\r\nEND:VEVENT\r\n");
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("u.ics"), unknown).unwrap();
        let e = import(&dir.path().join("u.ics"), "", FloatingZone::fallback(Zone::utc())).err().unwrap().to_string();
        assert!(
            e.contains(":4: VEVENT `c`: TZID `Mars Standard Time` is neither an IANA nor a Windows zone name"),
            "{e}"
        );
    }

    #[test]
    fn a_vtimezone_whose_offset_changed_once_keeps_both_offsets() {
        // "+12 from 2024-01-01, +10 from 2024-05-05": observances without RRULE (RFC 5545 §3.6.5).
        let ics = vcal(
            "BEGIN:VTIMEZONE\r\nTZID:Island Time\r\nBEGIN:STANDARD\r\nDTSTART:20240101T000000\r\nTZOFFSETFROM:+1100\r\nTZOFFSETTO:+1200\r\nEND:STANDARD\r\n\
BEGIN:STANDARD\r\nDTSTART:20240505T030000\r\nTZOFFSETFROM:+1200\r\nTZOFFSETTO:+1000\r\nEND:STANDARD\r\nEND:VTIMEZONE\r\n\
BEGIN:VEVENT\r\nUID:tide\r\nDTSTART;TZID=Island Time:20240401T090000\r\nDURATION:PT2H\r\nRRULE:FREQ=MONTHLY;COUNT=3\r\nEND:VEVENT\r\n",
        );
        assert_eq!(
            occurrences(&ics, "2024-01-01T00:00:00Z", "2025-01-01T00:00:00Z"),
            [
                "tide 2024-03-31T21:00:00Z..2024-03-31T23:00:00Z",
                "tide 2024-04-30T21:00:00Z..2024-04-30T23:00:00Z",
                // After the second onset the offset is +10: 23:00Z, not two hours early.
                "tide 2024-05-31T23:00:00Z..2024-06-01T01:00:00Z",
            ]
        );
    }

    #[test]
    fn an_event_across_the_night_the_clocks_go_back_keeps_its_real_length() {
        // 01:45 EDT to 01:15 EST is thirty minutes: it ends after it starts, although its end
        // reads earlier on the wall clock.
        let ics = vcal(
            "BEGIN:VEVENT\r\nUID:a\r\nDTSTART;TZID=America/New_York:20261101T014500\r\nDTEND:20261101T061500Z\r\nEND:VEVENT\r\n\
BEGIN:VEVENT\r\nUID:b\r\nDTSTART;TZID=America/New_York:20261101T014500\r\nDURATION:PT30M\r\nEND:VEVENT\r\n",
        );
        assert_eq!(
            occurrences(&ics, "2026-11-01T00:00:00Z", "2026-11-02T00:00:00Z"),
            ["a 2026-11-01T05:45:00Z..2026-11-01T06:15:00Z", "b 2026-11-01T05:45:00Z..2026-11-01T06:15:00Z"]
        );
    }

    /// The notes of importing `ics` with `floating`.
    fn notes(ics: &str, floating: FloatingZone) -> Vec<String> {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("n.ics"), ics).unwrap();
        let imported = import(&dir.path().join("n.ics"), "", floating).unwrap();
        imported.notes.iter().map(|n| format!("{}: {}", n.line, n.message)).collect()
    }

    #[test]
    fn exchanges_all_day_instance_moved_by_a_date_time_replaces_that_day() {
        let ics = vcal(
            "BEGIN:VEVENT\r\nUID:offsite\r\nDTSTART;VALUE=DATE:20260309\r\nDTEND;VALUE=DATE:20260310\r\nRRULE:FREQ=DAILY;COUNT=3\r\nEND:VEVENT\r\n\
BEGIN:VEVENT\r\nUID:offsite\r\nRECURRENCE-ID;TZID=W. Europe Standard Time:20260310T000000\r\nDTSTART;VALUE=DATE:20260313\r\nDTEND;VALUE=DATE:20260314\r\nEND:VEVENT\r\n",
        );
        // Days in New York (the calendar's zone): the 10th moved to the 13th, nothing left on the 10th.
        assert_eq!(
            occurrences(&ics, "2026-03-01T00:00:00Z", "2026-04-01T00:00:00Z"),
            [
                "offsite 2026-03-09T04:00:00Z..2026-03-10T04:00:00Z",
                "offsite 2026-03-11T04:00:00Z..2026-03-12T04:00:00Z",
                "offsite 2026-03-13T04:00:00Z..2026-03-14T04:00:00Z",
            ]
        );
        assert_eq!(notes(&ics, FloatingZone::fallback(Zone::utc())), Vec::<String>::new());
    }

    #[test]
    fn x_wr_timezone_reads_floating_times_unless_a_zone_is_given_and_mozilla_tzids_are_iana() {
        let ics = "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:google\r\nX-WR-TIMEZONE:Europe/Berlin\r\nBEGIN:VEVENT\r\nUID:f\r\nDTSTART:20260601T090000\r\nDURATION:PT1H\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n";
        // Without a [[calendar]] timezone: 09:00 in Berlin (CEST), not in New York.
        assert_eq!(
            occurrences(ics, "2026-06-01T00:00:00Z", "2026-06-02T00:00:00Z"),
            ["f 2026-06-01T07:00:00Z..2026-06-01T08:00:00Z"]
        );
        // A weekly series starting in UTC follows Berlin's wall clock: 07:00Z in October is 09:00
        // in Berlin, and stays 09:00 (08:00Z) after the clocks go back.
        let utc =
            ics.replace("DTSTART:20260601T090000\r\n", "DTSTART:20261015T070000Z\r\nRRULE:FREQ=WEEKLY;COUNT=3\r\n");
        assert_eq!(
            occurrences(&utc, "2026-10-01T00:00:00Z", "2026-11-01T00:00:00Z"),
            [
                "f 2026-10-15T07:00:00Z..2026-10-15T08:00:00Z",
                "f 2026-10-22T07:00:00Z..2026-10-22T08:00:00Z",
                "f 2026-10-29T08:00:00Z..2026-10-29T09:00:00Z"
            ]
        );
        assert_eq!(notes(ics, FloatingZone::fallback(Zone::utc())), Vec::<String>::new());
        let given = FloatingZone::given(Zone::named("America/New_York").unwrap());
        assert_eq!(
            notes(ics, given),
            ["4: X-WR-TIMEZONE:Europe/Berlin is ignored: floating times and all-day dates are read in America/New_York, the zone given for this file"]
        );
        let unknown = ics.replace("Europe/Berlin", "Berlin Time");
        assert!(notes(&unknown, FloatingZone::fallback(Zone::utc()))[0]
            .starts_with("4: X-WR-TIMEZONE:Berlin Time is ignored (unknown time zone"));

        let mozilla = vcal("BEGIN:VEVENT\r\nUID:m\r\nDTSTART;TZID=/mozilla.org/20050126_1/America/New_York:20260601T090000\r\nDURATION:PT1H\r\nEND:VEVENT\r\n");
        assert_eq!(
            occurrences(&mozilla, "2026-06-01T00:00:00Z", "2026-06-02T00:00:00Z"),
            ["m 2026-06-01T13:00:00Z..2026-06-01T14:00:00Z"]
        );
        assert_eq!(
            notes(&mozilla, FloatingZone::fallback(Zone::utc())),
            ["6: TZID `/mozilla.org/20050126_1/America/New_York` is read as the IANA zone America/New_York, the name it ends in"]
        );
    }

    #[test]
    fn what_cannot_be_honoured_fails_or_is_noted() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("x.ics");
        let range = vcal(
            "BEGIN:VEVENT\r\nUID:s\r\nDTSTART:20260302T090000Z\r\nRRULE:FREQ=DAILY\r\nEND:VEVENT\r\n\
BEGIN:VEVENT\r\nUID:s\r\nRECURRENCE-ID;RANGE=THISANDFUTURE:20260305T090000Z\r\nDTSTART:20260305T100000Z\r\nEND:VEVENT\r\n",
        );
        std::fs::write(&file, range).unwrap();
        let e = import(&file, "", FloatingZone::fallback(Zone::utc())).err().unwrap().to_string();
        assert!(e.contains("RANGE=THISANDFUTURE") && e.contains("cannot be honoured"), "{e}");
        let noted = vcal(
            "BEGIN:VEVENT\r\nUID:n\r\nDTSTART:20260303T090000Z\r\nRRULE:FREQ=WEEKLY;BYDAY=MO\r\nEXRULE:FREQ=MONTHLY\r\nEND:VEVENT\r\nBEGIN:VTODO\r\nUID:t\r\nEND:VTODO\r\n",
        );
        std::fs::write(&file, noted).unwrap();
        let imported = import(&file, "", FloatingZone::fallback(Zone::utc())).unwrap();
        let notes: Vec<_> = imported.notes.iter().map(|n| (n.line, n.message.as_str())).collect();
        assert_eq!(notes.len(), 3, "{notes:?}");
        assert!(notes.iter().any(|(l, m)| *l == 10 && m.contains("VTODO")));
        assert!(notes.iter().any(|(l, m)| *l == 4 && m.contains("EXRULE")));
        assert!(notes.iter().any(|(_, m)| m.contains("DTSTART 2026-03-03 09:00:00 is not an occurrence of its RRULE")));
        std::fs::write(
            &file,
            vcal("BEGIN:VEVENT\r\nUID:x\r\nDTSTART:20260303T090000Z\r\nRRULE:FREQ=WEEKLY;BYDAY=1MO\r\nEND:VEVENT\r\n"),
        )
        .unwrap();
        let e = import(&file, "", FloatingZone::fallback(Zone::utc())).err().unwrap().to_string();
        assert!(e.contains(":4: VEVENT `x`: RRULE") && e.contains("BYDAY=1MO has an ordinal"), "{e}");
        std::fs::write(&file, "this is not a calendar").unwrap();
        let e = import(&file, "", FloatingZone::fallback(Zone::utc())).err().unwrap().to_string();
        assert!(
            e.ends_with(
                "x.ics:1: not an iCalendar file: it must start with BEGIN:VCALENDAR, not `this is not a calendar`"
            ),
            "{e}"
        );
    }
}
