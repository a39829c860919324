//! `sluice freeze …` end to end: the built binary on calendars written to temp dirs.

mod support;

use serde_json::Value;
use support::freeze::{calendar_project, json, sluice};

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
lag = "PT0S"
environments = ["production"]
services = ["*"]
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

[[window]]
id = "survey-day-freeze"
kind = "deny"
start = "2026-06-01T06:00"
end = "2026-06-01T18:00"
reason = "Survey day."
"#;

const OVERRIDES: &str = r#"
[[override]]
id = "ovr-2026-05-16-01"
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

#[test]
fn status_exit_codes_and_json_shape() {
    let dir = calendar_project(CALENDAR, None);
    let status = |service: &str, at: &str| {
        sluice(
            dir.path(),
            &["freeze", "status", "--env", "production", "--service", service, "--at", at, "--format", "json"],
        )
    };
    let (code, out, _) = status("survey-api", "2026-05-12T12:00:00Z");
    assert_eq!(code, 1);
    let v = json(&out);
    assert_eq!(v["frozen"], true);
    assert_eq!(v["at"], "2026-05-12T12:00:00Z");
    assert_eq!(v["next_open"], "2026-05-18T23:00:00Z");
    assert_eq!(v["override"], Value::Null);
    let w = &v["windows"][0];
    assert_eq!(w["id"], "bird-count-freeze");
    assert_eq!(w["kind"], "deny");
    assert_eq!(w["event"], "spring-bird-count-2026");
    assert_eq!(w["start"], "2026-05-09T23:00:00Z");
    assert_eq!(w["end"], "2026-05-18T23:00:00Z");
    assert!(w["reason"].as_str().unwrap().starts_with("No production changes"));

    // Exactly at the window's end: open.
    let (code, out, _) = status("survey-api", "2026-05-18T23:00:00Z");
    assert_eq!(code, 0, "{out}");
    assert_eq!(json(&out)["frozen"], false);
    // Exactly at its start: frozen.
    assert_eq!(status("survey-api", "2026-05-09T23:00:00Z").0, 1);

    // Local time with --tz: 08:00 New York on a Monday is inside the commuter peak.
    let (code, _, _) = sluice(
        dir.path(),
        &[
            "freeze",
            "status",
            "--env",
            "production",
            "--service",
            "planner-web",
            "--at",
            "2026-03-02T08:00",
            "--tz",
            "America/New_York",
        ],
    );
    assert_eq!(code, 1);
    let (code, out, _) = sluice(
        dir.path(),
        &["freeze", "status", "--env", "staging", "--service", "planner-web", "--at", "2026-03-02T13:00:00Z"],
    );
    assert_eq!(code, 0);
    assert!(out.starts_with("OPEN until 2026-06-01 06:00Z, when survey-day-freeze freezes it — Survey day\ndeploy of planner-web to staging"), "{out}");
}

#[test]
fn configuration_errors_exit_2_naming_the_entry() {
    for (broken, expected) in [
        (
            CALENDAR.replace("America/New_York", "America/New_Yrok"),
            "policies/freeze.toml:21: [[window]] `commuter-peak`: unknown time zone `America/New_Yrok`",
        ),
        (CALENDAR.replace("BYDAY=MO,TU,WE,TH,FR", "BYDAY=XX"), "[[window]] `commuter-peak`: rrule"),
        (
            CALENDAR.replace("end = \"2026-06-01T18:00\"", "end = \"2026-06-01T05:00\""),
            "[[window]] `survey-day-freeze`: end",
        ),
        (
            CALENDAR.replace("event = \"spring-bird-count-2026\"", "event = \"spring-count\""),
            "`bird-count-freeze`: unknown event `spring-count`",
        ),
        (CALENDAR.replace("id = \"survey-day-freeze\"", "id = \"commuter-peak\""), "duplicate window id"),
        (
            CALENDAR.replace("lead = \"P7D\"", "lead = \"7 days\""),
            "`bird-count-freeze`: lead: `7 days` is not an ISO 8601 duration",
        ),
    ] {
        let dir = calendar_project(&broken, None);
        let (code, out, err) = sluice(
            dir.path(),
            &["freeze", "status", "--env", "production", "--service", "x", "--at", "2026-05-12T12:00:00Z"],
        );
        assert_eq!(code, 2, "{expected}: {out}{err}");
        assert!(err.contains(expected), "expected `{expected}` in: {err}");
        assert!(out.is_empty());
        let (code, _, err) = sluice(dir.path(), &["freeze", "lint"]);
        assert_eq!(code, 2);
        assert!(err.contains(expected));
    }
    let dir = tempfile::tempdir().unwrap();
    let (code, _, err) = sluice(dir.path(), &["freeze", "status"]);
    assert_eq!(code, 2);
    assert!(err.contains("no such calendar"), "{err}");
}

#[test]
fn override_opens_the_deploy_and_writes_an_audit_line() {
    let dir = calendar_project(CALENDAR, Some(OVERRIDES));
    let audit = dir.path().join("audit/freeze.jsonl");
    let args = |at: &'static str, service: &'static str| {
        vec![
            "freeze",
            "status",
            "--env",
            "production",
            "--service",
            service,
            "--at",
            at,
            "--format",
            "json",
            "--audit-log",
            "audit/freeze.jsonl",
        ]
    };
    let (code, out, _) = sluice(dir.path(), &args("2026-05-16T10:00:00Z", "survey-api"));
    assert_eq!(code, 0, "{out}");
    let v = json(&out);
    assert_eq!(v["frozen"], false);
    assert_eq!(v["override"]["id"], "ovr-2026-05-16-01");
    assert_eq!(v["windows"][0]["state"], "lifted");
    let log = std::fs::read_to_string(&audit).unwrap();
    let lines: Vec<_> = log.lines().collect();
    assert_eq!(lines.len(), 1);
    let line = json(lines[0]);
    assert_eq!(line["decision"], "open");
    assert_eq!(line["override"], "ovr-2026-05-16-01");
    assert_eq!(line["windows"][0]["id"], "bird-count-freeze");
    assert_eq!(line["tool_version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(line["at"], "2026-05-16T10:00:00Z");
    assert_eq!(line["calendar_sha256"].as_str().unwrap().len(), 64);

    // Another service: still frozen, nothing logged.
    assert_eq!(sluice(dir.path(), &args("2026-05-16T10:00:00Z", "planner-web")).0, 1);
    // After expiry: frozen, and the expired override is reported.
    let (code, out, _) = sluice(dir.path(), &args("2026-05-16T13:00:00Z", "survey-api"));
    assert_eq!(code, 1);
    assert!(json(&out)["override_problems"][0].as_str().unwrap().contains("has expired"));
    assert_eq!(std::fs::read_to_string(&audit).unwrap().lines().count(), 1);
}

#[test]
fn invalid_override_is_reported_and_lifts_nothing() {
    let dir = calendar_project(CALENDAR, Some(&OVERRIDES.replace("approved_by = \"bob\"", "approved_by = \"alice\"")));
    let (code, out, _) = sluice(
        dir.path(),
        &["freeze", "status", "--env", "production", "--service", "survey-api", "--at", "2026-05-16T10:00:00Z"],
    );
    assert_eq!(code, 1);
    assert!(
        out.contains(
            "warning: override `ovr-2026-05-16-01` is invalid and lifts nothing: approved by its own requester"
        ),
        "{out}"
    );
    assert!(!dir.path().join("policies/freeze-audit.jsonl").exists());
}

#[test]
fn list_next_open_and_export() {
    let dir = calendar_project(CALENDAR, None);
    let (code, out, _) = sluice(
        dir.path(),
        &[
            "freeze",
            "list",
            "--from",
            "2026-05-29T00:00:00Z",
            "--to",
            "2026-06-02T00:00:00Z",
            "--env",
            "production",
            "--service",
            "planner-web",
            "--format",
            "json",
        ],
    );
    assert_eq!(code, 0);
    let v = json(&out);
    let ids: Vec<_> = v["occurrences"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| (o["id"].as_str().unwrap().to_string(), o["start"].as_str().unwrap().to_string()))
        .collect();
    let expected = [
        ("commuter-peak", "2026-05-29T11:00:00Z"),
        ("survey-day-freeze", "2026-06-01T06:00:00Z"),
        ("commuter-peak", "2026-06-01T11:00:00Z"),
    ];
    assert_eq!(ids, expected.map(|(a, b)| (a.to_string(), b.to_string())));
    assert_eq!(v["occurrences"][0]["start_local"], "2026-05-29 07:00 EDT");

    // From Monday 2026-06-01 05:00Z: frozen 06:00–18:00 (survey day, containing the peak);
    // an hour free 05:00–06:00, so a 2-hour slot starts at 18:00.
    let (code, out, _) = sluice(
        dir.path(),
        &[
            "freeze",
            "next-open",
            "--after",
            "2026-06-01T05:00:00Z",
            "--env",
            "production",
            "--service",
            "planner-web",
            "--min-duration",
            "PT2H",
            "--format",
            "json",
        ],
    );
    assert_eq!(code, 0);
    let v = json(&out);
    assert_eq!(v["next_open"], "2026-06-01T18:00:00Z");
    assert_eq!(v["open_until"], "2026-06-02T11:00:00Z");

    let (code, out, _) = sluice(
        dir.path(),
        &[
            "freeze",
            "export",
            "--from",
            "2026-05-01T00:00:00Z",
            "--to",
            "2026-06-30T00:00:00Z",
            "--env",
            "production",
            "--service",
            "survey-api",
        ],
    );
    assert_eq!(code, 0);
    assert!(out.starts_with("BEGIN:VCALENDAR"));
    assert_eq!(out.matches("BEGIN:VEVENT").count(), 2, "{out}");
    assert!(out.contains("DTSTART:20260509T230000Z"));
    // What we export, we can import.
    std::fs::write(dir.path().join("policies/exported.ics"), &out).unwrap();
    let reimport = format!(
        "{CALENDAR}\n[[calendar]]\nfile = \"exported.ics\"\nid_prefix = \"x-\"\n\n[[window]]\nid = \"re\"\nkind = \"deny\"\nevent = \"x-*\"\nreason = \"reimported\"\n"
    );
    std::fs::write(dir.path().join("policies/freeze.toml"), reimport).unwrap();
    let (code, out, err) = sluice(
        dir.path(),
        &["freeze", "list", "--from", "2026-05-01T00:00:00Z", "--to", "2026-06-30T00:00:00Z", "--format", "json"],
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(json(&out)["occurrences"].as_array().unwrap().iter().filter(|o| o["id"] == "re").count(), 2);
}

#[test]
fn lint_warns_on_windows_that_never_occur_or_run_overnight() {
    let cal = format!(
        "{CALENDAR}\n[[window]]\nid = \"never\"\nkind = \"deny\"\nrrule = \"FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=30\"\nstart_time = \"00:00\"\nend_time = \"01:00\"\nreason = \"x\"\n\n[[window]]\nid = \"overnight\"\nkind = \"deny\"\nrrule = \"FREQ=DAILY\"\nstart_time = \"22:00\"\nend_time = \"02:00\"\nreason = \"batch\"\n"
    );
    let dir = calendar_project(&cal, None);
    let (code, out, _) = sluice(dir.path(), &["freeze", "lint", "--format", "json"]);
    assert_eq!(code, 0);
    let v = json(&out);
    let messages: Vec<_> =
        v["warnings"].as_array().unwrap().iter().map(|w| w["message"].as_str().unwrap().to_string()).collect();
    assert!(messages.iter().any(|m| m.contains("window `never` never occurs")), "{messages:?}");
    assert!(
        messages.iter().any(|m| m.contains("window `overnight` ends (02:00:00) before it starts (22:00:00)")),
        "{messages:?}"
    );
    assert_eq!(sluice(dir.path(), &["freeze", "lint", "--strict"]).0, 1);
}

#[test]
fn sluice_toml_points_at_the_calendar() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("ops")).unwrap();
    std::fs::create_dir_all(dir.path().join("sub")).unwrap();
    std::fs::write(dir.path().join("ops/cal.toml"), CALENDAR).unwrap();
    std::fs::write(dir.path().join("sluice.toml"), "[freeze]\ncalendar = \"ops/cal.toml\"\n").unwrap();
    let (code, _, err) = sluice(
        &dir.path().join("sub"),
        &["freeze", "status", "--env", "production", "--service", "x", "--at", "2026-06-01T07:00:00Z"],
    );
    assert_eq!(code, 1, "{err}");
}
