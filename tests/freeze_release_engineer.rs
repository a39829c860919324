//! `sluice freeze …` as a release engineer reads it, and the regression cases of issues 12 and 16:
//! the built binary on calendars written to temp dirs.

mod support;

use serde_json::Value;
use std::path::Path;
use std::time::{Duration, Instant};
use support::freeze::{calendar_project, json, sluice_env};

const CALENDAR: &str = r#"
timezone = "UTC"

[[event]]
id = "spring-bird-count-2026"
name = "Spring Bird Count"
timezone = "Europe/London"
start = "2026-05-17T00:00"
end = "2026-05-19T00:00"

[[window]]
id = "bird-count-freeze"
kind = "deny"
event = "spring-bird-count-2026"
lead = "P7D"
environments = ["production"]
reason = "No production changes from seven days before the count until it ends."

[[window]]
id = "commuter-peak"
kind = "deny"
timezone = "America/New_York"
rrule = "FREQ=WEEKLY;BYDAY=MO,TU,WE,TH,FR"
start_time = "07:00"
end_time = "09:30"
services = ["planner-*"]
environments = ["production"]
reason = "Weekday commuter peak."
"#;

/// At 200 columns, so that a line's content is not wrapped (widths are tested on their own).
fn sluice(dir: &Path, args: &[&str]) -> (i32, String, String) {
    sluice_env(dir, args, &[("COLUMNS", "200")])
}

const PEAK: &[&str] = &["freeze", "status", "--env", "production", "--service", "planner-web"];

#[test]
fn frozen_status_says_until_when_by_what_and_why_first() {
    let dir = calendar_project(CALENDAR, None);
    let args = [PEAK, &["--at", "2026-03-02T08:00", "--tz", "America/New_York"]].concat();
    let (code, out, _) = sluice(dir.path(), &args);
    assert_eq!(code, 1, "{out}");
    assert_eq!(out.lines().next().unwrap(), "FROZEN until 09:30 EST (14:30Z) by commuter-peak — Weekday commuter peak");
    let (_, out, _) = sluice(dir.path(), &[&args[..], &["--format", "json"]].concat());
    let v = json(&out);
    assert_eq!(v["frozen_until"], "2026-03-02T14:30:00Z");
    assert_eq!(v["open_until"], Value::Null);
    assert_eq!(v["blocking"][0]["id"], "commuter-peak");
    assert_eq!(v["blocking"][0]["end"], "2026-03-02T14:30:00Z");
}

#[test]
fn open_status_says_until_when_and_what_freezes_it_next() {
    let dir = calendar_project(CALENDAR, None);
    let args = [PEAK, &["--at", "2026-03-02T10:00", "--tz", "America/New_York"]].concat();
    let (code, out, _) = sluice(dir.path(), &args);
    assert_eq!(code, 0, "{out}");
    assert_eq!(
        out.lines().next().unwrap(),
        "OPEN until 2026-03-03 07:00 EST (2026-03-03 12:00Z), when commuter-peak freezes it — Weekday commuter peak"
    );
    let (_, out, _) = sluice(dir.path(), &[&args[..], &["--format", "json"]].concat());
    let v = json(&out);
    assert_eq!(v["open_until"], "2026-03-03T12:00:00Z");
    assert_eq!(v["frozen_until"], Value::Null);
    assert_eq!(v["blocking"][0]["id"], "commuter-peak");
    assert_eq!(v["blocking"][0]["start"], "2026-03-03T12:00:00Z");
}

#[test]
fn a_local_time_in_a_dst_gap_is_reported_as_adjusted() {
    let dir = calendar_project(CALENDAR, None);
    let args = [PEAK, &["--at", "2026-03-08T02:30", "--tz", "America/New_York"]].concat();
    let (code, out, _) = sluice(dir.path(), &args);
    assert_eq!(code, 0, "{out}");
    assert_eq!(
        out.lines().next().unwrap(),
        "note: --at 2026-03-08T02:30: 02:30 does not exist on 2026-03-08 in America/New_York (the clocks go forward); using 03:00 EDT"
    );
    assert!(out.contains("at 2026-03-08T07:00:00Z"), "{out}");
    let (_, out, _) = sluice(dir.path(), &[&args[..], &["--format", "json"]].concat());
    assert!(json(&out)["notes"][0].as_str().unwrap().contains("using 03:00 EDT"));
}

#[test]
fn next_open_names_the_blocking_and_closing_windows_in_their_zones_and_utc() {
    let dir = calendar_project(CALENDAR, None);
    let args = [
        "freeze",
        "next-open",
        "--env",
        "production",
        "--service",
        "planner-web",
        "--after",
        "2026-05-12T12:00:00Z",
        "--tz",
        "America/Los_Angeles",
    ];
    let (code, out, _) = sluice_env(dir.path(), &args, &[("COLUMNS", "1000")]);
    assert_eq!(code, 0, "{out}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], "next open: 2026-05-18T23:00:00Z (2026-05-18 16:00 PDT)");
    assert!(lines[1].starts_with("  blocked until then by: bird-count-freeze (Spring Bird Count) 2026-05-10 00:00 BST → 2026-05-19 00:00 BST in Europe/London; 2026-05-09 16:00 PDT → 2026-05-18 16:00 PDT (2026-05-09T23:00:00Z → 2026-05-18T23:00:00Z) — No production changes"), "{out}");
    assert_eq!(lines[2], "open until: 2026-05-19T11:00:00Z (2026-05-19 04:00 PDT)");
    assert!(
        lines[3]
            .starts_with("  closed by: commuter-peak 2026-05-19 07:00 EDT → 2026-05-19 09:30 EDT in America/New_York"),
        "{out}"
    );
    let (_, out, _) = sluice(dir.path(), &[&args[..], &["--format", "json"]].concat());
    let v = json(&out);
    assert_eq!(v["blocked_by"][0]["id"], "bird-count-freeze");
    assert_eq!(v["closed_by"][0]["id"], "commuter-peak");
    assert_eq!(v["open_until"], "2026-05-19T11:00:00Z");
}

#[test]
fn next_open_ignores_overrides_says_so_and_writes_no_audit_line() {
    let dir = calendar_project(CALENDAR, None);
    std::fs::write(
        dir.path().join("policies/overrides.toml"),
        "[[override]]\nid = \"ovr\"\nwindows = [\"bird-count-freeze\"]\nservices = [\"survey-api\"]\nenvironments = [\"production\"]\nrequested_by = \"alice\"\napproved_by = \"bob\"\nreason = \"SEV-1\"\nticket = \"INC-1\"\nnot_before = \"2026-05-16T09:00:00Z\"\nexpires_at = \"2026-05-16T13:00:00Z\"\n",
    )
    .unwrap();
    let args =
        ["freeze", "next-open", "--env", "production", "--service", "survey-api", "--after", "2026-05-16T08:00:00Z"];
    let (code, out, _) = sluice(dir.path(), &args);
    assert_eq!(code, 0, "{out}");
    assert!(out.starts_with("next open: 2026-05-18T23:00:00Z"), "{out}");
    assert!(out.contains("note: 1 override(s) not used: next-open ignores overrides"), "{out}");
    let audit = dir.path().join(".cache/freeze-audit.jsonl");
    assert!(!audit.exists());
    // status at the same time uses the override, and audits it: in the cache directory, not in
    // the policies, where `sluice check` would see it as a change to the gate's configuration.
    let (code, out, _) = sluice(
        dir.path(),
        &["freeze", "status", "--env", "production", "--service", "survey-api", "--at", "2026-05-16T10:00:00Z"],
    );
    assert_eq!(code, 0, "{out}");
    assert!(
        out.starts_with("OPEN by override ovr until 14:00 BST (13:00Z), when bird-count-freeze applies again"),
        "{out}"
    );
    assert!(out.contains("logged to .cache/freeze-audit.jsonl"), "{out}");
    assert!(std::fs::read_to_string(&audit).unwrap().contains("\"override\":\"ovr\""));
    assert_eq!(std::fs::read_dir(dir.path().join("policies")).unwrap().count(), 2, "only the calendar and overrides");
    // Asked to log inside the policies directory, status refuses (exit 2) and writes nothing.
    let (code, _, err) = sluice(
        dir.path(),
        &[
            "freeze",
            "status",
            "--env",
            "production",
            "--service",
            "survey-api",
            "--at",
            "2026-05-16T10:00:00Z",
            "--audit-log",
            "policies/log.jsonl",
        ],
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("policies/log.jsonl: the freeze audit log is inside the policies directory"), "{err}");
    assert!(!dir.path().join("policies/log.jsonl").exists());
}

#[test]
fn tables_fit_the_terminal_and_show_reasons_and_summaries() {
    let dir = calendar_project(&format!("{CALENDAR}\n[[calendar]]\nfile = \"survey.ics\"\n\n[[window]]\nid = \"survey-freeze\"\nkind = \"deny\"\nevent = \"survey-*\"\nreason = \"Survey in progress.\"\n"), None);
    std::fs::write(
        dir.path().join("policies/survey.ics"),
        "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:test\r\nBEGIN:VEVENT\r\nUID:survey-7f3a9c@google.com\r\nSUMMARY:Heron colony survey\r\nDTSTART;TZID=Europe/London:20260304T060000\r\nDTEND;TZID=Europe/London:20260304T120000\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("policies/freeze.toml"),
        std::fs::read_to_string(dir.path().join("policies/freeze.toml"))
            .unwrap()
            .replace("file = \"survey.ics\"", "file = \"survey.ics\"\nid_prefix = \"survey-\""),
    )
    .unwrap();
    let args = ["freeze", "list", "--from", "2026-03-01T00:00:00Z", "--to", "2026-03-08T00:00:00Z"];
    for columns in ["60", "80", "99", "120", "160"] {
        let (code, out, err) = sluice_env(dir.path(), &args, &[("COLUMNS", columns)]);
        assert_eq!(code, 0, "{err}");
        let width: usize = columns.parse().unwrap();
        for line in out.lines() {
            assert!(
                line.chars().count() <= width,
                "COLUMNS={columns}: {} columns: {line}\n{out}",
                line.chars().count()
            );
        }
        assert!(out.contains("Heron colony"), "COLUMNS={columns}: the SUMMARY, not the UID\n{out}");
        assert!(!out.contains("7f3a9c"), "{out}");
        assert!(out.contains("reason"), "{out}");
        assert!(out.contains("Weekday commuter"), "{out}");
    }
    // Without COLUMNS or a terminal: 100 columns.
    let (_, out, _) = sluice_env(dir.path(), &args, &[]);
    assert!(out.lines().all(|l| l.chars().count() <= 100), "{out}");
    assert!(out.lines().nth(1).unwrap().contains("event"), "{out}");
    let (_, out, _) = sluice_env(dir.path(), &args, &[("COLUMNS", "80")]);
    assert!(!out.lines().nth(1).unwrap().contains("kind"), "compact below 100 columns:\n{out}");
}

#[test]
fn next_open_lists_the_next_windows_within_staffed_hours() {
    let dir = calendar_project(CALENDAR, None);
    // Monday 2026-03-02, 07:00 in New York: the commuter peak until 09:30, then staffed until 17:00.
    let args = [
        "freeze",
        "next-open",
        "--env",
        "production",
        "--service",
        "planner-web",
        "--after",
        "2026-03-02T12:00:00Z",
        "--within",
        "Mon-Fri 09:00-17:00",
        "--tz",
        "America/New_York",
        "--count",
        "3",
    ];
    let (code, out, err) = sluice(dir.path(), &args);
    assert_eq!(code, 0, "{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], "only within Mon-Fri 09:00-17:00 (America/New_York)");
    assert_eq!(lines[1], "next open: 2026-03-02T14:30:00Z (2026-03-02 09:30 EST)");
    assert!(lines[2].starts_with("  blocked until then by: commuter-peak"), "{out}");
    assert_eq!(lines[3], "open until: 2026-03-02T22:00:00Z (2026-03-02 17:00 EST)");
    assert_eq!(lines[4], "  closed by: the end of the --within hours");
    assert_eq!(
        lines[5],
        "then open: 2026-03-03T14:30:00Z (2026-03-03 09:30 EST) until 2026-03-03T22:00:00Z (2026-03-03 17:00 EST)"
    );
    assert_eq!(
        lines[7],
        "then open: 2026-03-04T14:30:00Z (2026-03-04 09:30 EST) until 2026-03-04T22:00:00Z (2026-03-04 17:00 EST)"
    );
    let (_, out, _) = sluice(dir.path(), &[&args[..], &["--format", "json"]].concat());
    let v = json(&out);
    let windows = v["open_windows"].as_array().unwrap();
    assert_eq!(windows.len(), 3);
    assert_eq!(
        (windows[2]["start"].as_str(), windows[2]["end"].as_str()),
        (Some("2026-03-04T14:30:00Z"), Some("2026-03-04T22:00:00Z"))
    );
    assert_eq!(v["within"]["hours"], "Mon-Fri 09:00-17:00");
    // Friday 17:00 to Monday: the weekend is outside the hours, and so is Monday's peak.
    let friday = [
        "freeze",
        "next-open",
        "--env",
        "production",
        "--service",
        "planner-web",
        "--after",
        "2026-03-06T22:00:00Z",
        "--within",
        "Mon-Fri 09:00-17:00",
        "--tz",
        "America/New_York",
    ];
    let (_, out, _) = sluice(dir.path(), &friday);
    assert!(out.contains("next open: 2026-03-09T13:30:00Z (2026-03-09 09:30 EDT)"), "{out}");
    // Without staffed hours the first window runs to the next morning's peak.
    let (_, out, _) = sluice(dir.path(), &args[..8]);
    assert!(out.contains("open until: 2026-03-03T12:00:00Z (2026-03-03 12:00 UTC)"), "{out}");
    let (code, _, err) = sluice(dir.path(), &[&args[..8], &["--within", "weekdays 9-5"]].concat());
    assert_eq!(code, 2);
    assert!(err.contains("--within: `weekdays` is not a day or a range of days"), "{err}");
}

#[test]
fn an_unscoped_list_shows_each_windows_scope() {
    let dir = calendar_project(CALENDAR, None);
    let args = ["freeze", "list", "--from", "2026-05-11T00:00:00Z", "--to", "2026-05-12T00:00:00Z"];
    let (_, out, _) = sluice(dir.path(), &args);
    assert!(out.contains("scope (env / service)"), "{out}");
    assert!(out.contains("production / any") && out.contains("production / planner-*"), "{out}");
    // Compact: under the window's name.
    let (_, out, _) = sluice_env(dir.path(), &args, &[("COLUMNS", "80")]);
    assert!(out.contains("for production / any"), "{out}");
    // Scoped to one deploy: every window listed applies to it, no scope shown.
    let (_, out, _) = sluice(dir.path(), &[&args[..], &["--env", "production", "--service", "planner-web"]].concat());
    assert!(!out.contains("scope") && !out.contains("production / "), "{out}");
}

/// Joins the lines a width wrapped: a continuation is indented four columns past its line.
fn unwrapped(out: &str) -> Vec<String> {
    let mut lines: Vec<(usize, String)> = Vec::new();
    for line in out.lines() {
        let indent = line.len() - line.trim_start().len();
        match lines.last_mut() {
            Some((first, text)) if indent == *first + 4 => {
                text.push(' ');
                text.push_str(line.trim_start());
            }
            _ => lines.push((indent, line.to_string())),
        }
    }
    lines.into_iter().map(|(_, l)| l).collect()
}

#[test]
fn the_one_line_answers_fit_80_columns_and_say_the_same() {
    let dir = calendar_project(CALENDAR, None);
    let status =
        ["freeze", "status", "--env", "production", "--service", "planner-web", "--at", "2026-05-12T12:00:00Z"];
    let next = [
        "freeze",
        "next-open",
        "--env",
        "production",
        "--service",
        "planner-web",
        "--after",
        "2026-05-12T12:00:00Z",
        "--tz",
        "America/Los_Angeles",
    ];
    for args in [&status[..], &next[..]] {
        let (_, wide, _) = sluice_env(dir.path(), args, &[("COLUMNS", "1000")]);
        let (_, narrow, _) = sluice_env(dir.path(), args, &[("COLUMNS", "80")]);
        assert!(wide.lines().any(|l| l.chars().count() > 120), "a long line to wrap:\n{wide}");
        for line in narrow.lines() {
            assert!(line.chars().count() <= 80, "{} columns: {line}\n{narrow}", line.chars().count());
        }
        // The words are the same, only broken into lines (tables aside: they lay out anew).
        let text =
            |out: &str| unwrapped(out).into_iter().filter(|l| !l.starts_with(['┌', '│', '╞', '└'])).collect::<Vec<_>>();
        assert_eq!(text(&narrow), text(&wide), "{narrow}");
    }
}

#[test]
fn invalid_rrule_parts_exit_2_with_file_and_line() {
    for (rule, why) in [
        (
            "FREQ=WEEKLY;BYDAY=1MO",
            "BYDAY=1MO has an ordinal, which RFC 5545 allows only with FREQ=MONTHLY or FREQ=YEARLY",
        ),
        ("FREQ=DAILY;INTERVAL=0", "INTERVAL=0"),
        ("FREQ=DAILY;COUNT=2;UNTIL=20260101T000000", "COUNT and UNTIL"),
        ("FREQ=WEEKLY;BYMONTHDAY=3", "BYMONTHDAY cannot be used with FREQ=WEEKLY"),
    ] {
        let dir = calendar_project(&format!("[[window]]\nid = \"thursdays\"\nkind = \"allow\"\nrrule = \"{rule}\"\nstart_time = \"09:00\"\nend_time = \"17:00\"\n"), None);
        for command in
            [&["freeze", "status", "--at", "2026-03-05T12:00:00Z"][..], &["freeze", "lint"], &["freeze", "list"]]
        {
            let (code, _, err) = sluice(dir.path(), command);
            assert_eq!(code, 2, "{rule}: {err}");
            assert!(err.contains("policies/freeze.toml:1: [[window]] `thursdays`: rrule"), "{err}");
            assert!(err.contains(why), "{rule}: {err}");
        }
    }
}

#[test]
fn absurd_durations_are_configuration_errors_never_panics() {
    // Issue 16, case 11: P300000Y used to overflow date arithmetic (exit 101).
    for (key, value) in
        [("lead", "P300000Y"), ("lag", "P300000Y"), ("lead", "PT99999999999999999999H"), ("lag", "P101Y")]
    {
        let dir = calendar_project(&format!("[[event]]\nid = \"e\"\nstart = \"2026-05-01T00:00\"\nend = \"2026-05-02T00:00\"\n\n[[window]]\nid = \"w\"\nkind = \"deny\"\nevent = \"e\"\n{key} = \"{value}\"\n"), None);
        for command in [
            &["freeze", "status", "--at", "2026-05-01T12:00:00Z"][..],
            &["freeze", "list"],
            &["freeze", "next-open"],
            &["freeze", "lint"],
            &["freeze", "export"],
        ] {
            let (code, _, err) = sluice(dir.path(), command);
            assert_eq!(code, 2, "{command:?} {key}={value}: {err}");
            assert!(
                err.contains("policies/freeze.toml:6: [[window]] `w`:") && err.contains("longer than 100 years"),
                "{err}"
            );
        }
    }
    let dir = calendar_project("[[window]]\nid = \"w\"\nkind = \"deny\"\nrrule = \"FREQ=DAILY\"\nstart_time = \"09:00\"\nduration = \"P300000Y\"\n", None);
    let (code, _, err) = sluice(dir.path(), &["freeze", "status"]);
    assert_eq!(
        (code, err.contains("policies/freeze.toml:1:") && err.contains("longer than 100 years")),
        (2, true),
        "{err}"
    );
    let (code, _, err) =
        sluice(calendar_project(CALENDAR, None).path(), &["freeze", "next-open", "--min-duration", "P300000Y"]);
    assert_eq!((code, err.contains("longer than 100 years")), (2, true), "{err}");
}

#[test]
fn a_fifo_as_any_freeze_input_or_the_audit_log_is_refused_at_once() {
    let dir = calendar_project(CALENDAR, None);
    let fifo = dir.path().join("pipe");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
    let fifo_s = fifo.to_str().unwrap();
    let overrides = dir.path().join("policies/overrides.toml");
    std::fs::write(&overrides, "[[override]]\nid = \"ovr\"\nwindows = [\"commuter-peak\"]\nservices = [\"planner-web\"]\nenvironments = [\"production\"]\nrequested_by = \"alice\"\napproved_by = \"bob\"\nreason = \"SEV-1\"\nticket = \"INC-1\"\nnot_before = \"2026-03-02T12:00:00Z\"\nexpires_at = \"2026-03-02T15:00:00Z\"\n").unwrap();
    let at = ["--at", "2026-03-02T13:00:00Z"];
    for extra in [vec!["--calendar", fifo_s], vec!["--overrides", fifo_s], vec!["--audit-log", fifo_s]] {
        let started = Instant::now();
        let (code, _, err) = sluice(dir.path(), &[PEAK, &at, &extra].concat());
        assert!(started.elapsed() < Duration::from_secs(20), "{extra:?} hung");
        assert_eq!(code, 2, "{extra:?}: {err}");
        assert!(err.contains("pipe") && err.contains("FIFO"), "{extra:?}: {err}");
    }
    std::fs::write(dir.path().join("policies/freeze.toml"), format!("{CALENDAR}\n[[calendar]]\nfile = \"../pipe\"\n"))
        .unwrap();
    let (code, _, err) = sluice(dir.path(), &["freeze", "lint"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("FIFO"), "{err}");
}

#[test]
fn freeze_import_converts_ics_to_events_that_freeze_the_same_times() {
    let dir = calendar_project("", None);
    let ics = "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:test\r\nBEGIN:VEVENT\r\nUID:standup\r\nSUMMARY:Stand-up, \"daily\"\r\nDTSTART;TZID=Eastern Standard Time:20260302T090000\r\nDTEND;TZID=Eastern Standard Time:20260302T093000\r\nRRULE:FREQ=DAILY;COUNT=5\r\nRRULE:FREQ=WEEKLY;BYDAY=SA;COUNT=2\r\nEXDATE;TZID=Eastern Standard Time:20260304T090000\r\nRDATE:20260310T200000Z\r\nEND:VEVENT\r\n\
BEGIN:VEVENT\r\nUID:standup\r\nRECURRENCE-ID;TZID=Eastern Standard Time:20260305T090000\r\nDTSTART;TZID=Eastern Standard Time:20260305T140000\r\nDTEND;TZID=Eastern Standard Time:20260305T150000\r\nEND:VEVENT\r\n\
BEGIN:VEVENT\r\nUID:launch\r\nDTSTART:20260320T150000Z\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n";
    std::fs::write(dir.path().join("policies/team.ics"), ics).unwrap();
    let (code, toml, err) = sluice(dir.path(), &["freeze", "import", "policies/team.ics", "--id-prefix", "team-"]);
    assert_eq!(code, 0, "{err}");
    assert!(toml.contains("id = \"team-standup\"") && toml.contains("timezone = \"America/New_York\""), "{toml}");
    let window = "\n[[window]]\nid = \"w\"\nkind = \"deny\"\nevent = \"team-*\"\nlead = \"PT1H\"\n";
    // The converted entries and the live [[calendar]] import freeze exactly the same times.
    let list = |calendar: &str| {
        std::fs::write(dir.path().join("policies/freeze.toml"), calendar).unwrap();
        let (code, out, err) = sluice(
            dir.path(),
            &["freeze", "list", "--from", "2026-03-01T00:00:00Z", "--to", "2026-04-01T00:00:00Z", "--format", "json"],
        );
        assert_eq!(code, 0, "{err}\n{calendar}");
        json(&out)["occurrences"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| format!("{} {} {}", o["event"], o["start"], o["end"]))
            .collect::<Vec<_>>()
    };
    let converted = list(&format!("{toml}{window}"));
    let live = list(&format!("[[calendar]]\nfile = \"team.ics\"\nid_prefix = \"team-\"\n{window}"));
    assert_eq!(converted, live);
    assert_eq!(converted.len(), 8, "{converted:#?}");
    assert!(
        converted.contains(&"\"team-standup\" \"2026-03-05T18:00:00Z\" \"2026-03-05T20:00:00Z\"".to_string()),
        "{converted:#?}"
    );
    assert!(
        converted.contains(&"\"team-launch\" \"2026-03-20T14:00:00Z\" \"2026-03-20T15:00:00Z\"".to_string()),
        "{converted:#?}"
    );
}

#[test]
fn lint_catches_count_without_from_never_occurring_windows_and_unhonoured_properties() {
    let dir = calendar_project("[[window]]\nid = \"counted\"\nkind = \"deny\"\nrrule = \"FREQ=WEEKLY;COUNT=3\"\nstart_time = \"09:00\"\nend_time = \"10:00\"\nreason = \"r\"\n\n[[window]]\nid = \"never\"\nkind = \"deny\"\nrrule = \"FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=30\"\nfrom = \"2026-01-01\"\nstart_time = \"09:00\"\nend_time = \"10:00\"\nreason = \"r\"\n\n[[calendar]]\nfile = \"x.ics\"\n\n[[window]]\nid = \"x\"\nkind = \"deny\"\nevent = \"*\"\nreason = \"r\"\n", None);
    std::fs::write(dir.path().join("policies/x.ics"), "BEGIN:VCALENDAR\r\nBEGIN:VEVENT\r\nUID:n\r\nDTSTART:20990303T090000Z\r\nRRULE:FREQ=WEEKLY;BYDAY=MO\r\nEXRULE:FREQ=MONTHLY\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n").unwrap();
    let (code, out, err) = sluice(dir.path(), &["freeze", "lint"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("policies/freeze.toml:1: window `counted` has an RRULE with COUNT but no `from`"), "{out}");
    assert!(out.contains("policies/freeze.toml:9: window `never` never occurs"), "{out}");
    assert!(out.contains("policies/x.ics:2: VEVENT `n`: EXRULE"), "{out}");
    assert!(
        out.contains("policies/x.ics:2: VEVENT `n`: DTSTART 2099-03-03 09:00:00 is not an occurrence of its RRULE"),
        "{out}"
    );
    assert_eq!(sluice(dir.path(), &["freeze", "lint", "--strict"]).0, 1);
}
