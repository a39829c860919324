//! The validated-calendar cache through the binary: a cached run prints exactly what an uncached
//! one prints, and editing the calendar or a file it imports is seen on the next run.

mod support;

use assert_cmd::Command;
use std::path::{Path, PathBuf};
use support::freeze::{deploy, FREEZE};
use support::git::TestRepo;

/// Every kind of entry the cache must carry: one-off and recurring events (RRULE with UNTIL,
/// RDATE, EXDATE, moved instances, COUNT without `from`), windows anchored by id and by glob
/// with lead and lag, self-scheduled deny and allow windows with scopes, and an imported `.ics`
/// with a Windows zone name, a zone defined by a VTIMEZONE, and something `freeze lint` notes.
const CALENDAR: &str = r#"
timezone = "Europe/London"

[[event]]
id = "count-2026"
name = "Spring count"
timezone = "America/New_York"
start = "2026-05-17T00:00"
end = "2026-05-19T00:00"

[[event]]
id = "weekly-survey"
timezone = "Australia/Sydney"
rrule = ["FREQ=WEEKLY;BYDAY=TU;UNTIL=20261231", "FREQ=MONTHLY;BYDAY=-1FR;COUNT=40"]
start_time = "06:00"
duration = "PT12H"
rdate = ["2026-05-23T06:00"]
exdate = ["2026-05-26T06:00"]
instances = [{ replaces = "2026-06-02T06:00", start = "2026-06-03T08:00", end = "2026-06-03T09:00" }]

[[window]]
id = "count-freeze"
kind = "deny"
event = "count-2026"
lead = "P7D"
lag = "PT6H"
environments = ["production"]
reason = "No production changes around the count."

[[window]]
id = "survey-freeze"
kind = "deny"
event = "*survey*"
lead = "PT2H"
services = ["survey-*", "field-app"]
reason = "Surveys in progress."

[[window]]
id = "peak"
kind = "deny"
timezone = "America/New_York"
rrule = "FREQ=WEEKLY;BYDAY=MO,TU,WE,TH,FR"
from = "2026-01-01"
start_time = "07:00"
end_time = "09:30"
services = ["planner-*"]
reason = "Commuter peak."

[[window]]
id = "warehouse-slots"
kind = "allow"
rrule = "FREQ=WEEKLY;BYDAY=TU,TH"
start_time = "13:00"
end_time = "16:00"
services = ["warehouse-?tl"]
reason = "Staffed slots."

[[calendar]]
file = "team.ics"
id_prefix = "team-"

[[window]]
id = "team-freeze"
kind = "deny"
event = "team-*"
lag = "PT1H"
reason = "Team events."
"#;

const TEAM_ICS: &str = "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:test\r\n\
BEGIN:VTIMEZONE\r\nTZID:Customized Time Zone\r\nBEGIN:STANDARD\r\nDTSTART:16010101T020000\r\nTZOFFSETFROM:-0400\r\nTZOFFSETTO:-0500\r\nRRULE:FREQ=YEARLY;BYDAY=1SU;BYMONTH=11\r\nEND:STANDARD\r\n\
BEGIN:DAYLIGHT\r\nDTSTART:16010101T020000\r\nTZOFFSETFROM:-0500\r\nTZOFFSETTO:-0400\r\nRRULE:FREQ=YEARLY;BYDAY=2SU;BYMONTH=3\r\nEND:DAYLIGHT\r\nEND:VTIMEZONE\r\n\
BEGIN:VEVENT\r\nUID:offsite\r\nSUMMARY:Offsite\r\nDTSTART;TZID=Customized Time Zone:20260604T120000\r\nDURATION:PT3H\r\nEND:VEVENT\r\n\
BEGIN:VEVENT\r\nUID:standup\r\nSUMMARY:Stand-up\r\nDTSTART;TZID=Eastern Standard Time:20260601T090000\r\nDTEND;TZID=Eastern Standard Time:20260601T093000\r\nRRULE:FREQ=DAILY;COUNT=10\r\nEXRULE:FREQ=WEEKLY;BYDAY=SA\r\nEND:VEVENT\r\n\
END:VCALENDAR\r\n";

struct Project {
    dir: tempfile::TempDir,
}

impl Project {
    fn new() -> Project {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("policies")).unwrap();
        std::fs::write(dir.path().join("policies/freeze.toml"), CALENDAR).unwrap();
        std::fs::write(dir.path().join("policies/team.ics"), TEAM_ICS).unwrap();
        Project { dir }
    }

    fn path(&self, file: &str) -> PathBuf {
        self.dir.path().join(file)
    }

    fn cache(&self) -> PathBuf {
        self.path("cache")
    }

    fn cached_entries(&self) -> usize {
        std::fs::read_dir(self.cache().join("freeze")).map_or(0, |d| d.count())
    }

    /// Exit code, stdout and stderr of `sluice ARGS` with the cache in the project (or none).
    fn run(&self, args: &[&str], cached: bool) -> (i32, String, String) {
        let cache = self.cache();
        let mut command = Command::cargo_bin("sluice").unwrap();
        command.current_dir(self.dir.path()).args(args).env_remove("SLUICE_CACHE_DIR");
        match cached {
            true => command.arg("--cache-dir").arg(&cache),
            false => command.arg("--no-cache"),
        };
        let out = command.output().unwrap();
        let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        (out.status.code().unwrap_or(-1), text(&out.stdout), text(&out.stderr))
    }

    fn edit(&self, file: &str, from: &str, to: &str) {
        let text = std::fs::read_to_string(self.path(file)).unwrap();
        assert!(text.contains(from), "{file} has no `{from}`");
        std::fs::write(self.path(file), text.replacen(from, to, 1)).unwrap();
    }
}

/// Every freeze command that reads the calendar, with questions that touch every window.
const COMMANDS: &[&[&str]] = &[
    &["freeze", "status", "--at", "2026-06-02T12:00:00Z"],
    &[
        "freeze",
        "status",
        "--at",
        "2026-05-12T12:00:00Z",
        "--env",
        "production",
        "--service",
        "survey-api",
        "--format",
        "json",
    ],
    &["freeze", "status", "--at", "2026-06-04T11:00:00Z", "--service", "warehouse-etl", "--format", "json"],
    &["freeze", "list", "--from", "2026-05-01T00:00:00Z", "--to", "2026-07-01T00:00:00Z"],
    &["freeze", "list", "--from", "2026-05-01T00:00:00Z", "--to", "2026-07-01T00:00:00Z", "--format", "json"],
    &["freeze", "list", "--from", "2026-06-01T00:00:00Z", "--to", "2026-06-10T00:00:00Z", "--service", "planner-web"],
    &["freeze", "next-open", "--after", "2026-05-12T00:00:00Z", "--min-duration", "PT12H", "--env", "production"],
    &[
        "freeze",
        "next-open",
        "--after",
        "2026-06-01T00:00:00Z",
        "--min-duration",
        "PT2H",
        "--service",
        "warehouse-etl",
        "--format",
        "json",
    ],
    &["freeze", "lint", "--format", "json"],
    &["freeze", "lint"],
    &["freeze", "calendar", "--from", "2026-05-01", "--months", "2"],
    &["freeze", "calendar", "--from", "2026-05-01", "--months", "2", "--format", "svg"],
    &["freeze", "export", "--from", "2026-05-01T00:00:00Z", "--to", "2026-07-01T00:00:00Z"],
];

/// `DTSTAMP` is when the export was made: the one line that may differ between two runs.
fn without_stamps(text: &str) -> String {
    text.lines().filter(|l| !l.starts_with("DTSTAMP:")).collect::<Vec<_>>().join("\n")
}

#[test]
fn a_cached_run_prints_exactly_what_an_uncached_one_prints() {
    let project = Project::new();
    for args in COMMANDS {
        let uncached = project.run(args, false);
        assert!(uncached.0 == 0 || uncached.0 == 1, "{args:?}: {}", uncached.2);
        assert!(!uncached.1.is_empty(), "{args:?} printed nothing");
        // The first cached run fills the cache, the second reads it.
        for pass in ["filling", "reading"] {
            let cached = project.run(args, true);
            assert_eq!(cached.0, uncached.0, "{args:?} ({pass} the cache): exit code");
            assert_eq!(without_stamps(&cached.1), without_stamps(&uncached.1), "{args:?} ({pass} the cache): stdout");
            assert_eq!(cached.2, uncached.2, "{args:?} ({pass} the cache): stderr");
        }
    }
    // One calendar, one entry, whatever the commands.
    assert_eq!(project.cached_entries(), 1);
    // And runs read it: a hit marks the same file most recently used, where a miss would have
    // written a new file (a new inode) in its place.
    let entry = std::fs::read_dir(project.cache().join("freeze")).unwrap().next().unwrap().unwrap().path();
    let long_ago = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_000_000_000);
    std::fs::File::options().append(true).open(&entry).unwrap().set_modified(long_ago).unwrap();
    let inode = std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(&entry).unwrap());
    project.run(COMMANDS[0], true);
    let after = std::fs::metadata(&entry).unwrap();
    assert_eq!(std::os::unix::fs::MetadataExt::ino(&after), inode, "the entry was not rewritten");
    assert!(after.modified().unwrap() > long_ago, "the entry was read");
    // The lint notes from the imported file came through the cache.
    let lint = project.run(&["freeze", "lint"], true).1;
    assert!(lint.contains("team.ics") && lint.contains("EXRULE"), "{lint}");
}

#[test]
fn no_cache_neither_reads_nor_writes_it() {
    let project = Project::new();
    project.run(COMMANDS[0], false);
    assert_eq!(project.cached_entries(), 0);
    project.run(COMMANDS[0], true);
    assert_eq!(project.cached_entries(), 1);
}

#[test]
fn editing_the_calendar_is_seen_on_the_next_run() {
    let project = Project::new();
    let status = ["freeze", "status", "--at", "2026-06-02T12:00:00Z", "--service", "planner-web", "--format", "json"];
    let before = project.run(&status, true);
    assert_eq!(before.0, 1, "{}", before.1);
    assert!(before.1.contains("Commuter peak.") || before.1.contains("survey-freeze"), "{}", before.1);
    project.edit("policies/freeze.toml", "reason = \"Surveys in progress.\"", "reason = \"Surveys, edited.\"");
    let list = ["freeze", "list", "--from", "2026-05-01T00:00:00Z", "--to", "2026-07-01T00:00:00Z", "--format", "json"];
    let after = project.run(&list, true);
    assert!(after.1.contains("Surveys, edited.") && !after.1.contains("Surveys in progress."), "{}", after.1);
    assert_eq!(after, project.run(&list, false));
    // A calendar made invalid is an error, never the cached calendar.
    project.edit("policies/freeze.toml", "kind = \"allow\"", "kind = \"permit\"");
    let (code, out, err) = project.run(&list, true);
    assert_eq!(code, 2, "{out}");
    assert!(err.contains("freeze.toml") && err.contains("kind = `permit`"), "{err}");
}

#[test]
fn editing_or_removing_an_imported_file_is_seen_on_the_next_run() {
    let project = Project::new();
    let list = ["freeze", "list", "--from", "2026-06-01T00:00:00Z", "--to", "2026-06-08T00:00:00Z", "--format", "json"];
    let before = project.run(&list, true);
    assert!(before.1.contains("2026-06-04T16:00:00Z"), "the offsite at 12:00 EDT: {}", before.1);
    // Moved by two hours: the calendar's own bytes are unchanged.
    project.edit("policies/team.ics", "20260604T120000", "20260604T140000");
    let after = project.run(&list, true);
    assert!(after.1.contains("2026-06-04T18:00:00Z") && !after.1.contains("2026-06-04T16:00:00Z"), "{}", after.1);
    assert_eq!(after, project.run(&list, false));
    // And back: the entry written for the edited file is replaced again.
    project.edit("policies/team.ics", "20260604T140000", "20260604T120000");
    assert_eq!(project.run(&list, true), before);
    std::fs::remove_file(project.path("policies/team.ics")).unwrap();
    let (code, _, err) = project.run(&list, true);
    assert_eq!(code, 2);
    assert!(err.contains("[[calendar]] `team.ics`: no such file"), "{err}");
}

#[test]
fn a_torn_or_foreign_cache_file_is_a_miss_and_is_replaced() {
    let project = Project::new();
    let list = ["freeze", "list", "--from", "2026-05-01T00:00:00Z", "--to", "2026-07-01T00:00:00Z", "--format", "json"];
    let expected = project.run(&list, false);
    project.run(&list, true);
    let entry = std::fs::read_dir(project.cache().join("freeze")).unwrap().next().unwrap().unwrap().path();
    let whole = std::fs::read(&entry).unwrap();
    for damaged in [whole[..whole.len() / 3].to_vec(), b"not a sluice cache file".to_vec(), Vec::new()] {
        std::fs::write(&entry, &damaged).unwrap();
        assert_eq!(project.run(&list, true), expected);
        assert_eq!(std::fs::read(&entry).unwrap(), whole, "the damaged entry is written afresh");
    }
}

#[test]
fn an_unwritable_cache_directory_only_makes_runs_slower() {
    let project = Project::new();
    let list = ["freeze", "list", "--from", "2026-05-01T00:00:00Z", "--to", "2026-07-01T00:00:00Z", "--format", "json"];
    let expected = project.run(&list, false);
    // A file where the cache directory would be: nothing can be created under it.
    std::fs::write(project.cache(), "not a directory").unwrap();
    assert_eq!(project.run(&list, true), expected);
    assert!(Path::new(&project.cache()).is_file());
}

/// `sluice check` reads the calendar and its imports from a revision (or the working tree); the
/// cache serves it too, and an edited import read that way is seen.
#[test]
fn check_answers_the_same_from_the_cache_and_sees_an_edited_import() {
    let repo = TestRepo::new();
    repo.write("sluice.toml", "[migrations]\ndir = \"db/migrations\"\n");
    repo.write("db/migrations/0010_users.sql", "CREATE TABLE users (id bigint PRIMARY KEY);\n");
    let calendar = format!(
        "{FREEZE}\n[[calendar]]\nfile = \"team.ics\"\nid_prefix = \"team-\"\n\n[[window]]\nid = \"team-freeze\"\nkind = \"deny\"\nevent = \"team-*\"\nreason = \"Team offsite.\"\n"
    );
    repo.write("policies/freeze.toml", &calendar);
    repo.write("policies/team.ics", TEAM_ICS);
    repo.commit("base");
    repo.checkout_new_branch("feature");
    repo.write("db/migrations/0020_sites.sql", "CREATE TABLE sites (id bigint PRIMARY KEY);\n");
    repo.commit("sites");
    let cache = repo.path().join("cache");
    let run = |cached: bool| {
        let mut command = repo.check();
        command.env_remove("SLUICE_CACHE_DIR").args(["--base", "main", "--trust-head-config", "--format", "json"]);
        command.args(deploy("2026-06-04T17:00:00Z"));
        match cached {
            true => command.arg("--cache-dir").arg(&cache),
            false => command.arg("--no-cache"),
        };
        let out = command.output().unwrap();
        (out.status.code(), String::from_utf8_lossy(&out.stdout).into_owned())
    };
    // 17:00Z is inside the offsite (12:00-15:00 in a zone four hours behind UTC in June).
    let uncached = run(false);
    assert_eq!(uncached.0, Some(1), "{}", uncached.1);
    assert!(uncached.1.contains("team-freeze"), "{}", uncached.1);
    assert_eq!(run(true), uncached);
    assert_eq!(run(true), uncached);
    assert_eq!(std::fs::read_dir(cache.join("freeze")).unwrap().count(), 1);
    // The head's working tree moves the offsite a day later: no longer frozen at 17:00Z.
    repo.write("policies/team.ics", &TEAM_ICS.replace("20260604T120000", "20260605T120000"));
    let moved = run(true);
    assert_eq!(moved.0, Some(0), "{}", moved.1);
    assert!(!moved.1.contains("team-freeze"), "{}", moved.1);
    assert_eq!(moved, run(false));
}
