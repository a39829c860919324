//! The README tells a new user the truth (issue 42): the outputs it quotes are what the binary
//! prints, its exit-code table is what each command returns, and it stays short enough to read.
//!
//! Transcripts: every `$ cargo run -- …` or `$ sluice …` line in a fenced block of README.md
//! (but `sluice freeze`, which tests/freeze_transcript.rs runs on its worked calendar) is run from
//! the repository root, and the lines under it must be its standard output, line for line; a
//! following `$ echo $?` line and the number under it are its exit code. With
//! SLUICE_UPDATE_DOCS=1 the outputs and codes are written into the README instead.

mod plan_support;
mod support;

use assert_cmd::Command;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use support::git::TestRepo;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn readme() -> String {
    std::fs::read_to_string(root().join("README.md")).expect("README.md")
}

/// The words of a transcript's command after the binary, if this test runs it.
fn sluice_words(command: &str) -> Option<Vec<String>> {
    let rest = command.strip_prefix("cargo run -- ").or_else(|| command.strip_prefix("sluice "))?;
    if rest.starts_with("freeze ") {
        return None;
    }
    Some(rest.split_whitespace().map(str::to_string).collect())
}

struct Transcript {
    command: String,
    expected: Vec<String>,
    code: Option<i32>,
}

fn transcripts(text: &str) -> Vec<Transcript> {
    let mut out: Vec<Transcript> = Vec::new();
    let (mut fenced, mut current, mut code_next) = (false, false, false);
    for line in text.lines() {
        if line.starts_with("```") {
            fenced = !fenced;
            current = false;
            continue;
        }
        if !fenced {
            continue;
        }
        if let Some(command) = line.strip_prefix("$ ") {
            code_next = command == "echo $?" && current;
            current = !code_next && sluice_words(command).is_some();
            if current {
                out.push(Transcript { command: command.to_string(), expected: Vec::new(), code: None });
            }
        } else if code_next {
            out.last_mut().expect("a command before `echo $?`").code =
                Some(line.trim().parse().unwrap_or_else(|_| panic!("`echo $?` prints a number, not {line:?}")));
            code_next = false;
        } else if current {
            out.last_mut().expect("a command").expected.push(line.to_string());
        }
    }
    out
}

/// Runs a transcript's command as a reader would in a fresh clone: from the repository root, no
/// colour, 100 columns, a cache of its own.
fn run(words: &[String], cache: &Path) -> (Vec<String>, i32) {
    let out = Command::cargo_bin("sluice")
        .unwrap()
        .current_dir(root())
        .args(words)
        .env("NO_COLOR", "1")
        .env("COLUMNS", "100")
        .env("SLUICE_CACHE_DIR", cache)
        .env_remove("CI")
        .env_remove("GITHUB_STEP_SUMMARY")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    (stdout.lines().map(str::to_string).collect(), out.status.code().unwrap_or(-1))
}

/// The README with each transcript's output and exit code replaced by what the binary prints.
fn rewritten(text: &str, cache: &Path) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut lines = text.lines().peekable();
    let mut fenced = false;
    while let Some(line) = lines.next() {
        out.push(line.to_string());
        if line.starts_with("```") {
            fenced = !fenced;
            continue;
        }
        let Some(words) = line.strip_prefix("$ ").filter(|_| fenced).and_then(sluice_words) else { continue };
        let (stdout, code) = run(&words, cache);
        out.extend(stdout);
        while lines.peek().is_some_and(|l| !l.starts_with("$ ") && !l.starts_with("```")) {
            lines.next();
        }
        if lines.peek() == Some(&"$ echo $?") {
            out.push(lines.next().unwrap().to_string());
            lines.next();
            out.push(code.to_string());
        }
    }
    out.join("\n") + "\n"
}

#[test]
fn the_readme_transcripts_are_what_the_binary_prints() {
    let cache = tempfile::tempdir().unwrap();
    let text = readme();
    if std::env::var_os("SLUICE_UPDATE_DOCS").is_some() {
        std::fs::write(root().join("README.md"), rewritten(&text, cache.path())).unwrap();
        return;
    }
    let all = transcripts(&text);
    let try_it = "cargo run -- lint --config fixtures/transit-planner/sluice.toml";
    assert!(all.iter().any(|t| t.command == try_it), "the README shows `{try_it}` and its output");
    for transcript in &all {
        let words = sluice_words(&transcript.command).unwrap();
        let (stdout, code) = run(&words, cache.path());
        assert_eq!(
            stdout,
            transcript.expected,
            "README: `{}` prints something else (SLUICE_UPDATE_DOCS=1 cargo test --test readme rewrites it):\n{}",
            transcript.command,
            stdout.join("\n")
        );
        if let Some(expected) = transcript.code {
            assert_eq!(code, expected, "README: `{}` exits {code}", transcript.command);
        }
    }
    let incident = all.iter().find(|t| t.command == try_it).unwrap();
    assert_eq!(incident.code, Some(1), "the README says what the try-it command exits with");
    for rule in ["error[function-on-indexed-column]", "info[prefer-timestamptz]"] {
        assert!(incident.expected.iter().any(|l| l.contains(rule)), "the try-it output shows {rule}");
    }
}

/// Issue 40, item 3: the README is for users, short enough to read, every line readable.
#[test]
fn the_readme_is_short_and_its_lines_are_too() {
    let text = readme();
    let count = text.lines().count();
    assert!(count <= 620, "the README has {count} lines; move reference material to docs/");
    for (number, line) in text.lines().enumerate() {
        let width = line.chars().count();
        assert!(width < 600, "README.md:{}: {width} characters", number + 1);
    }
}

/// The README's exit-code table: `(command names, codes it documents)` per row. A row names its
/// commands in backticks; `freeze list`, `export` names `freeze list` and `freeze export`.
fn exit_code_table(text: &str) -> Vec<(Vec<String>, BTreeSet<i32>)> {
    let start = text.find("### Exit codes").expect("the README has an Exit codes section");
    let mut rows = text[start..].lines().skip_while(|l| !l.starts_with('|'));
    let header: Vec<String> = rows.next().unwrap().split('|').map(|c| c.trim().to_string()).collect();
    let codes: Vec<Option<i32>> = header.iter().map(|c| c.parse().ok()).collect();
    rows.next(); // |---|
    let mut out = Vec::new();
    for row in rows.take_while(|l| l.starts_with('|')) {
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        let mut names = Vec::new();
        let mut family = String::new();
        for name in cells[1].split('`').skip(1).step_by(2) {
            if let Some((first, _)) = name.split_once(' ').filter(|_| !name.ends_with('*')) {
                family = format!("{first} ");
                names.push(name.to_string());
            } else if !family.is_empty() {
                names.push(format!("{family}{name}"));
            } else {
                names.push(name.to_string());
            }
        }
        let documented = cells.iter().zip(&codes).filter_map(|(cell, code)| code.filter(|_| *cell != "—")).collect();
        out.push((names, documented));
    }
    out
}

/// Exit code of `sluice ARGS` in `dir` with `cache` as its cache (no CI, no colour).
fn code_in(cache: &Path, dir: &Path, args: &[&str]) -> i32 {
    let out = Command::cargo_bin("sluice")
        .unwrap()
        .current_dir(dir)
        .args(args)
        .env("NO_COLOR", "1")
        .env("SLUICE_CACHE_DIR", cache)
        .env_remove("CI")
        .env_remove("GITHUB_STEP_SUMMARY")
        .env_remove("DATABASE_URL")
        .env_remove("SLUICE_DATABASE_URL")
        .timeout(std::time::Duration::from_secs(600))
        .output()
        .unwrap();
    out.status.code().unwrap_or(-1)
}

/// A repository whose base (`main`) has a table and whose branch adds a migration.
fn repo_adding(migration: &str) -> TestRepo {
    let repo = TestRepo::new();
    repo.write("sluice.toml", "[migrations]\ndir = \"migrations\"\n");
    repo.write("migrations/001_birds.sql", "CREATE TABLE birds (id bigint PRIMARY KEY, name text NOT NULL);\n");
    repo.commit("base");
    repo.checkout_new_branch("change");
    repo.write("migrations/002_change.sql", migration);
    repo.commit("change");
    repo
}

const ALWAYS_FROZEN: &str = "[[window]]\nid = \"forever\"\nkind = \"deny\"\nstart = \"2000-01-01T00:00\"\n\
                             end = \"2200-01-01T00:00\"\nreason = \"Frozen for good.\"\n";
const ENDED: &str = "[[window]]\nid = \"past\"\nkind = \"deny\"\nstart = \"2001-01-01T00:00\"\n\
                     end = \"2001-01-02T00:00\"\nreason = \"Long over.\"\n";

/// Every command run to every exit code the README's table gives it, and to no other.
#[test]
fn the_exit_code_table_is_what_each_command_returns() {
    plan_support::require_postgres();
    // One cache for every run, outside the repository (the plan fixtures' cluster included).
    let cache = tempfile::tempdir().unwrap();
    let code = |dir: &Path, args: &[&str]| code_in(cache.path(), dir, args);
    let repo = root();
    let transit = "fixtures/transit-planner/sluice.toml";
    let safe = "fixtures/transit-planner/safe/sluice.toml";
    let nowhere = tempfile::tempdir().unwrap(); // no repository, no configuration
    let empty = nowhere.path();
    let mut observed: BTreeMap<&str, BTreeSet<i32>> = BTreeMap::new();
    let mut saw = |name: &'static str, code: i32| {
        observed.entry(name).or_default().insert(code);
    };

    saw("lint", code(repo, &["lint", "--config", safe]));
    saw("lint", code(repo, &["lint", "--config", transit]));
    saw("lint", code(repo, &["lint", "--config", "no/such/sluice.toml"]));

    let fine = repo_adding("CREATE TABLE nests (id bigint PRIMARY KEY);\n");
    saw("check", code(fine.path(), &["check", "--base", "main"]));
    let blocking = repo_adding("CREATE INDEX birds_name ON birds (name);\n");
    saw("check", code(blocking.path(), &["check", "--base", "main"]));
    saw("check", code(fine.path(), &["check", "--base", "no-such-revision"]));

    let plan = root().join("fixtures/reporting/plan");
    let plan_args = |head: &'static str| {
        ["plan", "--base-dir", "base", "--head-dir", head, "--scale", "scale.toml", "--queries", "queries"]
    };
    saw("plan", code(&plan, &plan_args("head-safe")));
    saw("plan", code(&plan, &plan_args("head-regression")));
    saw("plan", code(&plan, &plan_args("no-such-directory")));

    let worked = ["--env", "production", "--service", "planner-web", "--tz", "America/New_York"];
    let status = |at: &'static str| [&["freeze", "status", "--at", at][..], &worked[..]].concat();
    saw("freeze status", code(repo, &status("2026-03-02T10:00")));
    saw("freeze status", code(repo, &status("2026-03-02T08:00")));
    saw("freeze status", code(repo, &["freeze", "status", "--calendar", "no/such/freeze.toml"]));

    let frozen = support::freeze::calendar_project(ALWAYS_FROZEN, None);
    let ended = support::freeze::calendar_project(ENDED, None);
    let broken = support::freeze::calendar_project("[[window]]\nkind = \"sometimes\"\n", None);
    saw("freeze next-open", code(repo, &["freeze", "next-open", "--env", "production", "--service", "planner-web"]));
    saw("freeze next-open", code(frozen.path(), &["freeze", "next-open"]));
    saw("freeze next-open", code(broken.path(), &["freeze", "next-open"]));

    saw("freeze lint", code(ended.path(), &["freeze", "lint"]));
    saw("freeze lint", code(ended.path(), &["freeze", "lint", "--strict"]));
    saw("freeze lint", code(broken.path(), &["freeze", "lint"]));

    let out = tempfile::tempdir().unwrap();
    let written = |name: &str| out.path().join(name).to_string_lossy().into_owned();
    let ics = written("freezes.ics");
    for (name, args) in [
        ("freeze list", vec!["freeze", "list"]),
        ("freeze export", vec!["freeze", "export", "-o", &ics]),
        ("freeze calendar", vec!["freeze", "calendar", "--from", "2026-05-01", "-o", &written("freeze.html")]),
        ("freeze import", vec!["freeze", "import", &ics]),
    ] {
        saw(name, code(repo, &args));
        let args: Vec<&str> = args.iter().map(|a| if *a == ics.as_str() { "no-such.ics" } else { a }).collect();
        let failing = if name == "freeze import" { code(repo, &args) } else { code(broken.path(), &args) };
        saw(name, failing);
    }

    let project = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(project.path().join("migrations")).unwrap();
    std::fs::write(project.path().join("migrations/001_birds.sql"), "CREATE TABLE birds (id bigint PRIMARY KEY);\n")
        .unwrap();
    saw("init", code(project.path(), &["init"]));
    saw("init", code(project.path(), &["init"])); // the files exist now
    saw("init", code(empty, &["init"]));

    for what in ["query", "workload", "indexes", "columns"] {
        saw("stats *", code(empty, &["stats", what]));
    }
    saw("stats *", code(empty, &["stats", "everything"]));
    saw("rules", code(empty, &["rules"]));
    saw("rules", code(empty, &["rules", "function-on-indexed-column"]));
    saw("rules", code(empty, &["rules", "no-such-rule"]));
    saw("queries", code(repo, &["queries", "fixtures/transit-planner"]));
    saw("queries", code(repo, &["queries", "no/such/directory"]));
    saw("reviewers", code(fine.path(), &["reviewers", "--base", "main"]));
    saw("reviewers", code(empty, &["reviewers"]));
    saw("completions", code(empty, &["completions", "bash"]));
    saw("completions", code(empty, &["completions", "tcsh"]));
    saw("man", code(empty, &["man"]));
    saw("man", code(empty, &["man", "--pages"]));

    let table = exit_code_table(&readme());
    let mut documented: BTreeMap<String, BTreeSet<i32>> = BTreeMap::new();
    for (names, codes) in table {
        for name in names {
            assert!(documented.insert(name.clone(), codes.clone()).is_none(), "{name} is in two rows");
        }
    }
    let ran: BTreeSet<String> = observed.keys().map(|k| k.to_string()).collect();
    assert_eq!(documented.keys().cloned().collect::<BTreeSet<_>>(), ran, "the table's commands and the ones run");
    for (name, codes) in observed {
        assert_eq!(
            documented[name], codes,
            "`{name}`: the README documents {:?}, the runs gave {codes:?}",
            documented[name]
        );
    }
}
