//! The command line reads as one tool: every flag of every command has help text, one spelling
//! per idea (`--tz`, never `--timezone`, and a flag takes the same kind of value wherever it
//! appears), value names that say what they take, no default printed twice, no flag offered
//! where it does nothing (`TERM=dumb` turning colour off is `cli::tests`). Walks the argument definitions
//! themselves (`Cli::command()`), so a new flag is held to the same rules.

use assert_cmd::Command;
use clap::CommandFactory;
use sluice::cli::command::Cli;
use std::collections::BTreeMap;

/// Every command and subcommand, with its path (`freeze next-open`).
fn commands() -> Vec<(String, clap::Command)> {
    fn walk(prefix: &str, command: &clap::Command, out: &mut Vec<(String, clap::Command)>) {
        for sub in command.get_subcommands() {
            let path = format!("{prefix}{}", sub.get_name());
            out.push((path.clone(), sub.clone()));
            walk(&format!("{path} "), sub, out);
        }
    }
    let mut out = Vec::new();
    walk("", &Cli::command(), &mut out);
    out
}

/// The names a value may be shown as: each says what it takes.
const VALUE_NAMES: &[&str] = &[
    "FILE",
    "DIR",
    "REV",
    "TIME",
    "DURATION",
    "ZONE",
    "ENV",
    "SERVICE",
    "N",
    "SECONDS",
    "ROWS",
    "URL",
    "LOGIN",
    "ORG/TEAM",
    "FORMAT",
    "FORMAT=FILE",
    "SEVERITY",
    "VERSION",
    "TOOL",
    "PREFIX",
    "HOURS",
    "ID",
    "SHELL",
    "PATHS",
    "KIND",
    "FUNCTION",
];

#[test]
fn every_flag_has_help_and_a_value_name_that_says_what_it_takes() {
    let mut problems = Vec::new();
    for (path, command) in commands() {
        for arg in command.get_arguments().filter(|a| !a.is_hide_set()) {
            let id = arg.get_id().as_str();
            if id == "help" || id == "version" {
                continue;
            }
            if arg.get_help().is_none() {
                problems.push(format!("`sluice {path}` --{id}: no help text"));
            }
            let takes_value = arg.get_action().takes_values();
            for name in arg.get_value_names().into_iter().flatten().filter(|_| takes_value) {
                if !VALUE_NAMES.contains(&name.as_str()) {
                    problems.push(format!("`sluice {path}` --{id} <{name}>: say what it takes ({VALUE_NAMES:?})"));
                }
            }
            if takes_value && arg.get_value_names().is_none() && arg.get_possible_values().is_empty() {
                problems.push(format!("`sluice {path}` --{id}: no value name (it would show <{}>)", id.to_uppercase()));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn one_spelling_per_idea_and_one_value_name_per_flag() {
    let mut seen: BTreeMap<String, (String, String)> = BTreeMap::new();
    let mut problems = Vec::new();
    for (path, command) in commands() {
        for arg in command.get_arguments().filter(|a| !a.is_hide_set()) {
            let Some(long) = arg.get_long() else { continue };
            for spelling in ["timezone", "time-zone", "zone"] {
                if long == spelling || arg.get_visible_aliases().into_iter().flatten().any(|a| a == spelling) {
                    problems.push(format!("`sluice {path}` --{long}: the zone flag is --tz everywhere"));
                }
            }
            let names = arg.get_value_names().map(|n| n.iter().map(|s| s.to_string()).collect::<Vec<_>>().join(" "));
            let Some(names) = names else { continue };
            // Two ideas, one spelling, kept for the scripts that use both: `lint`/`check`/`plan`
            // `--output FORMAT=FILE` writes the report once more, `freeze … -o/--output FILE`
            // writes the answer there instead of stdout (docs/freeze.md, "Command line").
            if long == "output" && path.starts_with("freeze") {
                continue;
            }
            match seen.get(long) {
                Some((other, first)) if *first != names => problems
                    .push(format!("--{long} takes <{names}> on `sluice {path}` but <{first}> on `sluice {other}`")),
                Some(_) => {}
                None => {
                    seen.insert(long.to_string(), (path.clone(), names));
                }
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

fn help(args: &[&str]) -> String {
    let out = Command::cargo_bin("sluice").unwrap().args(args).arg("--help").env("COLUMNS", "300").output().unwrap();
    assert!(out.status.success(), "{args:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn no_default_is_printed_twice_and_flags_appear_only_where_they_do_something() {
    for (path, _) in commands() {
        let args: Vec<&str> = path.split(' ').collect();
        for line in help(&args).lines() {
            assert!(line.matches("[default:").count() <= 1, "`sluice {path} --help`: {line}");
        }
    }
    // Only `freeze status` (and `sluice check`) decide with overrides and audit it.
    assert!(help(&["freeze", "status"]).contains("--audit-log <FILE>"));
    assert!(help(&["check"]).contains("--audit-log <FILE>"));
    for command in ["list", "next-open", "lint", "export", "calendar", "import"] {
        assert!(!help(&["freeze", command]).contains("--audit-log"), "freeze {command}");
    }
    for command in ["list", "export", "calendar", "import"] {
        assert!(!help(&["freeze", command]).contains("--overrides"), "freeze {command}");
    }
    assert!(!help(&["freeze", "lint"]).contains("--tz"));
    let import = help(&["freeze", "import"]);
    assert!(import.contains("--tz <ZONE>") && !import.contains("--timezone <"), "{import}");
}

#[test]
fn old_spellings_still_work_and_say_when_they_do_nothing() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("policies")).unwrap();
    let calendar = "[[window]]\nid = \"w\"\nkind = \"deny\"\nstart = \"2026-06-01T06:00\"\nend = \"2026-06-01T18:00\"\nreason = \"r\"\n";
    std::fs::write(dir.path().join("policies/freeze.toml"), calendar).unwrap();
    let run = |args: &[&str]| {
        let out = Command::cargo_bin("sluice")
            .unwrap()
            .current_dir(dir.path())
            .env("SLUICE_CACHE_DIR", dir.path().join(".cache"))
            .args(args)
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, out, err) = run(&["freeze", "list", "--from", "2026-06-01T00:00:00Z", "--audit-log", "x.jsonl"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("1 occurrence(s)"), "{out}");
    assert!(err.contains("warning: --audit-log does nothing for `freeze list`"), "{err}");
    let (code, _, err) = run(&["freeze", "lint", "--tz", "Europe/London"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(err.contains("warning: --tz does nothing for `freeze lint` (it takes no times)"), "{err}");
    // `freeze export` writes iCalendar: JSON is refused, not answered in .ics.
    let (code, out, err) = run(&["freeze", "export", "--format", "json"]);
    assert_eq!(code, Some(2), "{out}");
    assert!(err.contains("invalid value 'json' for '--format <FORMAT>'") && err.contains("ics"), "{err}");
    assert!(out.is_empty());
    // `freeze import --timezone` is the old spelling of --tz.
    std::fs::write(
        dir.path().join("e.ics"),
        "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:t\r\nBEGIN:VEVENT\r\nUID:a\r\nDTSTART:20260601T090000\r\nDURATION:PT1H\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n",
    )
    .unwrap();
    let (old, new) = (
        run(&["freeze", "import", "e.ics", "--timezone", "Europe/Berlin"]),
        run(&["freeze", "import", "e.ics", "--tz", "Europe/Berlin"]),
    );
    assert_eq!(old, new);
    assert!(new.1.contains("timezone = \"Europe/Berlin\""), "{}", new.1);
}
