//! Differential test of the freeze engine against an independent oracle.
//!
//! A seeded generator writes random calendars — seven zones, five with DST (a 30-minute one on
//! Lord Howe Island, two in the southern hemisphere), one-off, recurring and event-anchored
//! windows, deny and allow, around DST changes and in 2040 and 2100 — and asks Sluice `list`,
//! `status` and `next-open` questions about each. `tests/oracle/freeze_oracle.py` answers the
//! same questions with python-dateutil and zoneinfo, following the README's semantics, and
//! reports every disagreement with the seed that reproduces it.
//!
//! Needs `python3` with `dateutil` (`.ci/run` installs it). Without it the test fails, never passes.
//! `SLUICE_DIFF_CALENDARS=N` changes the number of calendars (default 2,400);
//! `SLUICE_DIFF_SEED=S` runs the single calendar with seed S.

use rayon::prelude::*;
use serde_json::{json, Value};
use sluice::freeze::answer::OpenQuestion;
use sluice::freeze::calendar;
use sluice::freeze::decide::{NextOpen, Query};
use sluice::freeze::duration::IsoDuration;
use sluice::freeze::overrides::Overrides;
use sluice::freeze::{list, next_open, status};
use std::path::Path;
use std::process::Command;

/// SplitMix64: a small, well-known generator, so a seed reproduces a calendar on any machine.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn range(&mut self, lo: i64, hi: i64) -> i64 {
        lo + self.below((hi - lo + 1) as u64) as i64
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }
}

const ZONES: &[&str] = &[
    "UTC",
    "America/New_York",
    "Europe/London",
    "Australia/Sydney",
    "Australia/Lord_Howe",
    "Pacific/Auckland",
    "Asia/Kolkata",
];

/// Dates near DST changes in the zones above, plus ordinary days, 2040 and 2100.
const FOCUS: &[&str] = &[
    "2026-03-08",
    "2026-03-29",
    "2026-04-05",
    "2026-09-27",
    "2026-10-04",
    "2026-10-25",
    "2026-11-01",
    "2026-06-15",
    "2027-01-10",
    "2040-03-11",
    "2040-10-07",
    "2100-03-14",
    "2100-10-31",
    "2100-07-01",
];

type Date = chrono::NaiveDate;

struct Gen {
    rng: Rng,
    focus: Date,
}

impl Gen {
    fn date(&mut self, spread: i64) -> Date {
        self.focus + chrono::Duration::days(self.rng.range(-spread, spread))
    }
    fn time(&mut self) -> String {
        let hour = *self.rng.pick(&[0, 1, 2, 2, 3, 1, 20, 22, 23, 12, 7]);
        let minute = *self.rng.pick(&[0, 0, 15, 30, 45]);
        format!("{hour:02}:{minute:02}")
    }
    fn local(&mut self, spread: i64) -> String {
        let (d, t) = (self.date(spread), self.time());
        format!("{d}T{t}")
    }
    fn length(&mut self, event: bool) -> (&'static str, String) {
        if self.rng.chance(40) {
            let t = self.time();
            return ("end_time", t);
        }
        let choices: &[&str] = if event {
            &["PT30M", "PT1H", "PT12H", "PT24H", "P1D", "P1DT2H", "PT90M", "PT0S"]
        } else {
            &["PT30M", "PT1H", "PT12H", "PT24H", "P1D", "P1DT2H", "PT90M", "PT6H"]
        };
        ("duration", self.rng.pick(choices).to_string())
    }
    fn days(&mut self, n: usize) -> String {
        let all = ["MO", "TU", "WE", "TH", "FR", "SA", "SU"];
        let mut chosen: Vec<&str> = Vec::new();
        for _ in 0..n {
            let d = *self.rng.pick(&all);
            if !chosen.contains(&d) {
                chosen.push(d);
            }
        }
        chosen.join(",")
    }
    fn rule(&mut self, from_given: bool) -> String {
        let mut parts = Vec::new();
        match self.rng.below(10) {
            0..=2 => {
                parts.push("FREQ=DAILY".to_string());
                if self.rng.chance(30) {
                    let n = self.rng.range(1, 4) as usize;
                    parts.push(format!("BYDAY={}", self.days(n)));
                }
            }
            3..=5 => {
                parts.push("FREQ=WEEKLY".to_string());
                if self.rng.chance(70) {
                    let n = self.rng.range(1, 5) as usize;
                    parts.push(format!("BYDAY={}", self.days(n)));
                }
            }
            6..=7 => {
                parts.push("FREQ=MONTHLY".to_string());
                match self.rng.below(3) {
                    0 => {
                        let (n, d) = (*self.rng.pick(&[1, 2, 3, 4, -1, 5, -5]), self.days(1));
                        parts.push(format!("BYDAY={n}{d}"));
                    }
                    1 => parts.push(format!("BYMONTHDAY={}", self.rng.pick(&[1, 8, 15, 28, -1]))),
                    _ => {
                        parts.push("BYDAY=MO,TU,WE,TH,FR".into());
                        parts.push(format!("BYSETPOS={}", self.rng.pick(&[1, -1, 2])));
                    }
                }
            }
            _ => {
                parts.push("FREQ=YEARLY".to_string());
                let month = self.focus.format("%m").to_string().parse::<i32>().unwrap_or(3);
                match self.rng.below(5) {
                    0 => parts.push(format!(
                        "BYMONTH={month};BYDAY={}{}",
                        self.rng.pick(&[1, 2, -1, 5, -5]),
                        self.days(1)
                    )),
                    4 => parts.push(format!("BYDAY={}{}", self.rng.pick(&[53, -53, 1, -1]), self.days(1))),
                    1 => parts.push(format!("BYMONTH={month};BYMONTHDAY={}", self.rng.range(1, 28))),
                    2 => parts.push(format!("BYWEEKNO={};BYDAY={}", self.rng.range(1, 52), self.days(2))),
                    _ => parts.push(format!("BYYEARDAY={}", self.rng.range(1, 365))),
                }
            }
        }
        if self.rng.chance(25) {
            parts.push(format!("INTERVAL={}", self.rng.range(2, 3)));
        }
        if from_given && self.rng.chance(10) {
            parts.push(format!("COUNT={}", self.rng.range(1, 40)));
        } else if self.rng.chance(10) {
            let d = self.date(15).format("%Y%m%d");
            let z = if self.rng.chance(50) { "Z" } else { "" };
            parts.push(format!("UNTIL={d}T{}00{z}", self.time().replace(':', "")));
        }
        parts.join(";")
    }

    /// A schedule: its TOML lines and the oracle's JSON, for a window or an event.
    fn schedule(&mut self, event: bool) -> (Vec<String>, Value) {
        let zone = ZONES[self.rng.below(ZONES.len() as u64) as usize];
        let mut toml = vec![format!("timezone = \"{zone}\"")];
        let mut spec = json!({ "tz": zone });
        if self.rng.chance(35) {
            let start = self.local(12);
            let minutes = *self.rng.pick(&[0, 30, 60, 90, 180, 720, 1440, 2880]);
            let minutes = if !event && minutes == 0 { 30 } else { minutes };
            let s = chrono::NaiveDateTime::parse_from_str(&start, "%Y-%m-%dT%H:%M").unwrap();
            let end = (s + chrono::Duration::minutes(minutes)).format("%Y-%m-%dT%H:%M").to_string();
            toml.push(format!("start = \"{start}\"\nend = \"{end}\""));
            spec["once"] = json!({ "start": start, "end": end });
            return (toml, spec);
        }
        let from_given = self.rng.chance(90);
        let rule = self.rule(from_given);
        let start_time = self.time();
        toml.push(format!("rrule = \"{rule}\"\nstart_time = \"{start_time}\""));
        spec["rules"] = json!([rule]);
        spec["start_time"] = json!(start_time);
        if from_given {
            let from = self.focus - chrono::Duration::days(self.rng.range(0, 400));
            toml.push(format!("from = \"{from}\""));
            spec["from"] = json!(from.to_string());
        }
        let (key, value) = self.length(event);
        let value = if key == "end_time" && value == start_time && !event { "23:59".into() } else { value };
        toml.push(format!("{key} = \"{value}\""));
        spec[key] = json!(value);
        if self.rng.chance(15) {
            // Some on the focus day inside a spring-forward gap (New York, Sydney, Auckland
            // 02:00–03:00, London 01:00–02:00, Lord Howe 02:00–02:30), where they may meet a
            // rule start that the gap moves to the same instant.
            let rdate = if self.rng.chance(40) {
                format!("{}T{}", self.focus, self.rng.pick(&["02:15", "02:10", "02:45", "01:15", "01:45"]))
            } else {
                self.local(10)
            };
            toml.push(format!("rdate = [\"{rdate}\"]"));
            spec["rdate"] = json!([rdate]);
        }
        if self.rng.chance(15) {
            let exdate = format!("{}T{start_time}", self.date(10));
            toml.push(format!("exdate = [\"{exdate}\"]"));
            spec["exdate"] = json!([exdate]);
        }
        (toml, spec)
    }
}

struct Case {
    toml: String,
    /// The iCalendar file the calendar imports (`gen.ics`), if any.
    ics: Option<String>,
    calendar: Value,
    focus: Date,
}

/// Offsets a generated VTIMEZONE changes between, in minutes east of UTC.
const OFFSETS: &[i64] = &[600, 720, 690, 660, -300, -240, 330, 0, 60];

fn ics_offset(minutes: i64) -> String {
    let sign = if minutes < 0 { '-' } else { '+' };
    format!("{sign}{:02}{:02}", minutes.abs() / 60, minutes.abs() % 60)
}

impl Gen {
    /// A VTIMEZONE whose offset changes at given instants near the focus day, with observances
    /// that have no RRULE (RFC 5545 §3.6.5: each begins once at its DTSTART, and again at each
    /// RDATE), and one recurring event in it. Returns the .ics text and the oracle's event spec.
    fn ics_event(&mut self) -> (String, Value) {
        let initial = *self.rng.pick(OFFSETS);
        let alternate = self.rng.chance(40);
        let other = loop {
            let o = *self.rng.pick(OFFSETS);
            if o != initial {
                break o;
            }
        };
        let count = self.rng.range(1, 4) as usize;
        let midnight = self.focus.and_hms_opt(0, 0, 0).unwrap().and_utc();
        let mut at = midnight + chrono::Duration::hours(self.rng.range(-96, 24));
        let (mut offsets, mut changes) = (vec![initial], Vec::new());
        for i in 0..count {
            let to = if alternate {
                if i % 2 == 0 {
                    other
                } else {
                    initial
                }
            } else {
                loop {
                    let o = *self.rng.pick(OFFSETS);
                    if o != *offsets.last().unwrap() {
                        break o;
                    }
                }
            };
            changes.push((at, *offsets.last().unwrap(), to));
            offsets.push(to);
            at +=
                chrono::Duration::hours(self.rng.range(20, 72)) + chrono::Duration::minutes(30 * self.rng.range(0, 1));
        }
        // Changes with the same offsets become one observance with RDATEs.
        let mut observances: Vec<(i64, i64, Vec<String>)> = Vec::new();
        for (t, from, to) in &changes {
            let local = (*t + chrono::Duration::minutes(*from)).format("%Y%m%dT%H%M%S").to_string();
            match observances.iter_mut().find(|(f, o, _)| f == from && o == to) {
                Some((_, _, onsets)) if alternate => onsets.push(local),
                _ => observances.push((*from, *to, vec![local])),
            }
        }
        let mut vtimezone = String::from("BEGIN:VTIMEZONE\r\nTZID:Generated Shift\r\n");
        for (from, to, onsets) in &observances {
            let kind = if self.rng.chance(50) { "STANDARD" } else { "DAYLIGHT" };
            vtimezone.push_str(&format!(
                "BEGIN:{kind}\r\nDTSTART:{}\r\nTZOFFSETFROM:{}\r\nTZOFFSETTO:{}\r\n",
                onsets[0],
                ics_offset(*from),
                ics_offset(*to)
            ));
            if onsets.len() > 1 {
                vtimezone.push_str(&format!("RDATE:{}\r\n", onsets[1..].join(",")));
            }
            vtimezone.push_str(&format!("END:{kind}\r\n"));
        }
        vtimezone.push_str("END:VTIMEZONE\r\n");
        let from = self.focus - chrono::Duration::days(self.rng.range(0, 6));
        let start_time = self.time();
        let rule = format!("FREQ={};COUNT={}", self.rng.pick(&["DAILY", "WEEKLY"]), self.rng.range(1, 12));
        let length = *self.rng.pick(&["PT1H", "PT6H", "PT30M", "P1D", "PT25H"]);
        let dtstart = format!("{}T{}00", from.format("%Y%m%d"), start_time.replace(':', ""));
        let ics = format!(
            "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//Sluice//differential//EN\r\n{vtimezone}BEGIN:VEVENT\r\nUID:shift\r\n\
DTSTART;TZID=Generated Shift:{dtstart}\r\nDURATION:{length}\r\nRRULE:{rule}\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n"
        );
        let transitions: Vec<Value> = changes.iter().map(|(t, _, to)| json!([utc(*t), to * 60])).collect();
        let spec = json!({
            "id": "ics-shift",
            "tz": { "initial": initial * 60, "transitions": transitions },
            "rules": [rule],
            "from": from.to_string(),
            "start_time": start_time,
            "duration": length,
        });
        (ics, spec)
    }
}

fn generate(seed: u64) -> Case {
    let mut rng = Rng(seed);
    let focus = Date::parse_from_str(FOCUS[rng.below(FOCUS.len() as u64) as usize], "%Y-%m-%d").unwrap();
    let mut g = Gen { rng, focus };
    let mut toml = String::new();
    let mut events = Vec::new();
    for i in 0..g.rng.below(4) {
        let (lines, mut spec) = g.schedule(true);
        let id = format!("ev-{i}");
        toml.push_str(&format!("[[event]]\nid = \"{id}\"\n{}\n\n", lines.join("\n")));
        spec["id"] = json!(id);
        events.push(spec);
    }
    let mut ics = None;
    if g.rng.chance(20) {
        let (text, spec) = g.ics_event();
        toml.push_str("[[calendar]]\nfile = \"gen.ics\"\nid_prefix = \"ics-\"\n\n");
        ics = Some(text);
        events.push(spec);
    }
    let mut windows = Vec::new();
    for i in 0..g.rng.range(1, 4) {
        let id = format!("w-{i}");
        let kind = if g.rng.chance(20) { "allow" } else { "deny" };
        let mut spec;
        if !events.is_empty() && g.rng.chance(45) {
            let lead = *g.rng.pick(&["PT0S", "PT12H", "P1D", "PT90M", "P2DT3H", "PT30M", "P7D", "PT24H"]);
            let lag = *g.rng.pick(&["PT0S", "PT12H", "P1D", "PT90M", "PT30M"]);
            let toml_events = events.iter().any(|e| e["id"].as_str().unwrap().starts_with("ev-"));
            let (pattern, ids) = if g.rng.chance(30) && toml_events {
                let matched = events.iter().filter(|e| e["id"].as_str().unwrap().starts_with("ev-"));
                ("ev-*".to_string(), matched.map(|e| e["id"].clone()).collect::<Vec<_>>())
            } else {
                let e = &events[g.rng.below(events.len() as u64) as usize];
                (e["id"].as_str().unwrap().to_string(), vec![e["id"].clone()])
            };
            toml.push_str(&format!(
                "[[window]]\nid = \"{id}\"\nkind = \"{kind}\"\nevent = \"{pattern}\"\nlead = \"{lead}\"\nlag = \"{lag}\"\n\n"
            ));
            spec = json!({ "event_ids": ids, "lead": lead, "lag": lag });
        } else {
            let (lines, s) = g.schedule(false);
            toml.push_str(&format!("[[window]]\nid = \"{id}\"\nkind = \"{kind}\"\n{}\n\n", lines.join("\n")));
            spec = s;
        }
        spec["id"] = json!(id);
        spec["kind"] = json!(kind);
        windows.push(spec);
    }
    Case { toml, ics, calendar: json!({ "events": events, "windows": windows }), focus }
}

fn utc(t: chrono::DateTime<chrono::Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// Sluice's answers for one generated calendar, with the questions asked.
fn ask(seed: u64, case: &Case) -> Value {
    let read = |_: &Path| Ok(case.ics.clone());
    let cal = calendar::parse_with(Path::new("generated.toml"), &case.toml, &read).unwrap_or_else(|e| {
        panic!(
            "seed {seed}: the generated calendar does not load: {e}\n{}\n{}",
            case.toml,
            case.ics.as_deref().unwrap_or("")
        )
    });
    let none = Overrides::default();
    let q = Query::default();
    let mut rng = Rng(seed ^ 0xA5A5_A5A5);
    let from = case.focus.and_hms_opt(0, 0, 0).unwrap().and_utc() - chrono::Duration::days(10);
    let to = from + chrono::Duration::days(rng.range(6, 40));
    let listed = list(&cal, q, from, to).unwrap_or_else(|e| panic!("seed {seed}: list: {e}"));
    let rows: Vec<Value> = listed
        .occurrences
        .iter()
        .map(|o| json!([cal.windows[o.window].id, o.event.map(|e| cal.events[e].id.clone()), utc(o.start), utc(o.end)]))
        .collect();
    let mut instants = Vec::new();
    for _ in 0..4 {
        instants.push(from + chrono::Duration::seconds(rng.range(0, (to - from).num_seconds() - 1)));
    }
    for o in listed.occurrences.iter().take(2) {
        for t in [o.start, o.end, o.start - chrono::Duration::seconds(1), o.end - chrono::Duration::seconds(1)] {
            instants.push(t);
        }
    }
    let statuses: Vec<Value> = instants
        .iter()
        .map(|&at| {
            let s = status(&cal, &none, q, at).unwrap_or_else(|e| panic!("seed {seed}: status: {e}")).status;
            let next = match s.next_open {
                NextOpen::At(t) => Some(utc(t)),
                NextOpen::NoneWithin(_) => None,
            };
            json!([s.frozen, next])
        })
        .collect();
    let mut next_queries = Vec::new();
    let mut next_answers = Vec::new();
    for _ in 0..2 {
        let after = from + chrono::Duration::seconds(rng.range(0, (to - from).num_seconds()));
        let minimum = *rng.pick(&[0i64, 3600, 6 * 3600, 86_400]);
        let d = IsoDuration::parse(&format!("PT{minimum}S")).unwrap();
        let a = next_open(&cal, &none, q, OpenQuestion::new(after, d))
            .unwrap_or_else(|e| panic!("seed {seed}: next-open: {e}"));
        let next = match a.next {
            NextOpen::At(t) => Some(utc(t)),
            NextOpen::NoneWithin(_) => None,
        };
        next_queries.push(json!([utc(after), minimum]));
        next_answers.push(json!([next, a.open_until.map(utc)]));
    }
    json!({
        "seed": seed,
        "toml": case.toml,
        "ics": case.ics,
        "calendar": case.calendar,
        "queries": {
            "list": [utc(from), utc(to)],
            "status": instants.iter().map(|t| utc(*t)).collect::<Vec<_>>(),
            "next_open": next_queries,
        },
        "sluice": { "list": rows, "status": statuses, "next_open": next_answers },
    })
}

fn oracle_available() -> bool {
    Command::new("python3")
        .args(["-c", "import dateutil.rrule, zoneinfo; zoneinfo.ZoneInfo('America/New_York')"])
        .output()
        .is_ok_and(|o| o.status.success())
}

#[test]
fn freeze_engine_agrees_with_an_independent_rfc5545_oracle() {
    // Never skipped: a missing oracle fails the test (`.ci/run` installs it).
    assert!(
        oracle_available(),
        "python3 with dateutil and zoneinfo is not available: `apt-get install python3 python3-dateutil tzdata` \
         (as .ci/run does)"
    );
    let seeds: Vec<u64> = match std::env::var("SLUICE_DIFF_SEED") {
        Ok(s) => vec![s.parse().expect("SLUICE_DIFF_SEED is a number")],
        Err(_) => {
            let n = std::env::var("SLUICE_DIFF_CALENDARS").ok().and_then(|n| n.parse().ok()).unwrap_or(2400u64);
            (1..=n).collect()
        }
    };
    let started = std::time::Instant::now();
    let cases: Vec<Value> = seeds.par_iter().map(|&seed| ask(seed, &generate(seed))).collect();
    eprintln!("sluice answered {} calendars in {:.1?}", cases.len(), started.elapsed());
    let started = std::time::Instant::now();
    // One oracle process per core, each on its share of the calendars.
    let dir = tempfile::tempdir().unwrap();
    if let Some(keep) = std::env::var_os("SLUICE_DIFF_KEEP") {
        std::fs::write(keep, serde_json::to_string(&cases).unwrap()).unwrap();
    }
    let oracle = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/oracle/freeze_oracle.py");
    let shares = std::thread::available_parallelism().map_or(2, |n| n.get()).clamp(1, 4);
    let chunk = cases.len().div_ceil(shares).max(1);
    let children: Vec<_> = cases
        .chunks(chunk)
        .enumerate()
        .map(|(i, share)| {
            let file = dir.path().join(format!("cases-{i}.json"));
            std::fs::write(&file, serde_json::to_string(share).unwrap()).unwrap();
            Command::new("python3")
                .arg(&oracle)
                .arg(&file)
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let (mut stdout, mut stderr, mut success, mut checked) = (String::new(), String::new(), true, 0u64);
    for child in children {
        let out = child.wait_with_output().unwrap();
        success &= out.status.success();
        stdout.push_str(&String::from_utf8_lossy(&out.stdout));
        let err = String::from_utf8_lossy(&out.stderr).to_string();
        checked += err
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter_map(|v| v["calendars"].as_u64())
            .sum::<u64>();
        stderr.push_str(&err);
    }
    eprintln!("oracle: {} in {:.1?}", stderr.trim().replace('\n', "; "), started.elapsed());
    if !success {
        let first: Vec<&str> = stdout.lines().take(8).collect();
        let seed = first.first().and_then(|l| serde_json::from_str::<Value>(l).ok()).map(|v| v["seed"].clone());
        let calendar = seed
            .and_then(|s| s.as_u64())
            .and_then(|s| cases.iter().find(|c| c["seed"] == s))
            .map(|c| c["toml"].as_str().unwrap_or("").to_string())
            .unwrap_or_default();
        panic!(
            "Sluice and the oracle disagree ({} line(s)); first ones:\n{}\n\ncalendar of the first (rerun with SLUICE_DIFF_SEED):\n{calendar}\n{stderr}",
            stdout.lines().count(),
            first.join("\n")
        );
    }
    assert_eq!(checked, cases.len() as u64, "the oracle did not check every calendar: {stderr}");
}
