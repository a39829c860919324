//! The query cache end to end (`src/lint/query_cache`): the built binary on a copy of
//! `fixtures/queries/code`, each cached run compared with a `--no-cache` one.

use assert_cmd::Command;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// A copy of the SQL-in-code fixture in a directory of its own, beside its cache directory.
struct Copy {
    _work: tempfile::TempDir,
    app: PathBuf,
    cache: PathBuf,
}

impl Copy {
    fn new() -> Copy {
        let work = tempfile::tempdir().unwrap();
        let app = work.path().join("app");
        let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/queries/code");
        assert!(std::process::Command::new("cp").arg("-r").arg(fixture).arg(&app).status().unwrap().success());
        let cache = work.path().join("cache");
        Copy { _work: work, app, cache }
    }

    /// The arguments that point `sluice lint` at the cache.
    fn cached(&self) -> [&str; 2] {
        ["--cache-dir", self.cache.to_str().unwrap()]
    }
}

/// Waits until files written so far are older than the caches' racy window (2 s): only then is
/// their metadata trusted for their text.
fn past_the_racy_window() {
    std::thread::sleep(std::time::Duration::from_millis(2_100));
}

/// What `sluice lint` reports in `dir` with `args`: the exit code, every finding as JSON (all
/// fields) and the text report (with its excerpts).
fn lint(dir: &Path, args: &[&str]) -> (i32, Vec<Value>, String) {
    let run = |format: &str| {
        Command::cargo_bin("sluice").unwrap().current_dir(dir).args(["lint", "--format", format]).args(args).output()
    };
    let json = run("json").unwrap();
    let doc: Value = serde_json::from_slice(&json.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&json.stderr)));
    let text = run("text").unwrap();
    (json.status.code().unwrap(), doc["findings"].as_array().unwrap().clone(), String::from_utf8(text.stdout).unwrap())
}

/// The one file of the query cache under `cache`, and its bytes.
fn cache_file(cache: &Path) -> (PathBuf, Vec<u8>) {
    let files: Vec<PathBuf> =
        std::fs::read_dir(cache.join("query-findings")).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(files.len(), 1, "{files:?}");
    let bytes = std::fs::read(&files[0]).unwrap();
    (files[0].clone(), bytes)
}

/// Whether `function-on-indexed-column` is among `findings` on `file`.
fn wrapped_on(findings: &[Value], file: &str) -> bool {
    findings.iter().any(|f| f["file"].as_str().unwrap().ends_with(file) && f["rule"] == "function-on-indexed-column")
}

#[test]
fn a_warm_run_reports_what_an_uncached_one_does_and_writes_nothing() {
    let copy = Copy::new();
    let (app, cache, cached) = (&copy.app, &copy.cache, copy.cached());
    past_the_racy_window();
    let cold = lint(app, &["--no-cache"]);
    assert_eq!(cold.0, 1);
    assert!(wrapped_on(&cold.1, "riders.py"), "{:?}", cold.1);
    assert!(wrapped_on(&cold.1, "departures.go"), "{:?}", cold.1);
    assert!(!cache.exists(), "--no-cache writes no cache");
    assert_eq!(lint(app, &cached), cold, "filling the cache");
    let (file, filled) = cache_file(cache);
    let modified = std::fs::metadata(&file).unwrap().modified().unwrap();
    assert_eq!(lint(app, &cached), cold, "served from the cache");
    assert_eq!(cache_file(cache).1, filled, "a warm run rewrites no entry");
    assert_eq!(std::fs::metadata(&file).unwrap().modified().unwrap(), modified, "nor the file");

    // The warm run's findings are the cache's: a rule id changed in the file (same length, so
    // the entry still decodes) shows in the report.
    let rule = b"function-on-indexed-column";
    let at = filled.windows(rule.len()).position(|w| w == rule).expect("a kept finding");
    let mut tampered = filled.clone();
    tampered[at..at + rule.len()].copy_from_slice(b"FUNCTION-ON-INDEXED-COLUMN");
    std::fs::write(&file, &tampered).unwrap();
    let served = lint(app, &cached);
    assert!(served.1.iter().any(|f| f["rule"] == "FUNCTION-ON-INDEXED-COLUMN"), "{:?}", served.1);
    std::fs::write(&file, &filled).unwrap();
    assert_eq!(lint(app, &cached), cold);

    // Lines added above the query move its findings and their excerpts.
    let riders = app.join("app/riders.py");
    let text = std::fs::read_to_string(&riders).unwrap();
    std::fs::write(&riders, format!("# Riders.\n# By e-mail.\n{text}")).unwrap();
    let moved = lint(app, &cached);
    assert_eq!(moved, lint(app, &["--no-cache"]));
    assert_ne!(moved, cold);
    // The host's code beside the query, on its own lines, is in the excerpt.
    std::fs::write(&riders, text.replace("(email,),", "(email.lower(),),")).unwrap();
    assert_eq!(lint(app, &cached), lint(app, &["--no-cache"]));

    // A cache that does not decode is none.
    let (file, _) = cache_file(cache);
    std::fs::write(&file, b"not a cache").unwrap();
    assert_eq!(lint(app, &cached), lint(app, &["--no-cache"]));
}

#[test]
fn a_schema_change_is_never_answered_from_the_cache() {
    let copy = Copy::new();
    let (app, cached) = (&copy.app, copy.cached());
    past_the_racy_window();
    let before = lint(app, &cached);
    assert_eq!(lint(app, &cached), before);
    assert!(wrapped_on(&before.1, "riders.py"), "{:?}", before.1);

    // The index the Python query's lower(email) defeats is dropped: with no index on email,
    // wrapping it defeats nothing, and the cached finding must not come back.
    std::fs::write(app.join("migrations/002_drop_riders_email.sql"), "DROP INDEX riders_email;\n").unwrap();
    let after = lint(app, &cached);
    assert_eq!(after, lint(app, &["--no-cache"]));
    assert!(!wrapped_on(&after.1, "riders.py"), "{:?}", after.1);
    assert!(wrapped_on(&after.1, "departures.go"), "{:?}", after.1);
    // The migration is gone again: the earlier entries hold again, and agree.
    std::fs::remove_file(app.join("migrations/002_drop_riders_email.sql")).unwrap();
    assert_eq!(lint(app, &cached), before);

    // A policy the query rules read (the table's size) changes their verdict too.
    let policies = app.join("policies");
    std::fs::create_dir_all(&policies).unwrap();
    std::fs::write(policies.join("tables.toml"), "[rows]\nriders = 10\n").unwrap();
    assert_eq!(lint(app, &cached), lint(app, &["--no-cache"]));
}

#[test]
fn a_migration_rule_that_reads_the_queries_sees_those_the_cache_served() {
    let copy = Copy::new();
    let (app, cached) = (&copy.app, copy.cached());
    past_the_racy_window();
    let before = lint(app, &cached);
    assert_eq!(lint(app, &cached), before);
    // drop-index-in-use reads every query (parsed) to name those that need the index; on this
    // run the queries' own findings come from the cache, so nothing else parsed them.
    std::fs::write(app.join("migrations/002_drop_riders_tenant.sql"), "DROP INDEX riders_tenant;\n").unwrap();
    let after = lint(app, &cached);
    assert_eq!(after, lint(app, &["--no-cache"]));
    let drop = after.1.iter().find(|f| f["rule"] == "drop-index-in-use").unwrap_or_else(|| panic!("{:?}", after.1));
    assert!(drop.to_string().contains("internal/store/departures.go"), "{drop}");
    assert_eq!(lint(app, &cached), after);
}

/// Every kind of change to the code on disk shows in a warm run, whose caches (the code scan's
/// and the query findings') trust an unchanged file's metadata, old enough, for its text: an
/// edit, a `touch` (no change), a file renamed over another, a new file.
#[test]
fn a_changed_file_tree_always_shows_in_a_warm_run() {
    let copy = Copy::new();
    let (app, cached) = (&copy.app, copy.cached());
    let riders = app.join("app/riders.py");
    let wrapped = std::fs::read_to_string(&riders).unwrap();
    let bare = wrapped.replace("\"WHERE lower(email) = lower(%s)\"", "\"WHERE email = lower(%s)\"");
    assert_ne!(bare, wrapped);
    // Each warm run past the racy window trusts the metadata of what did not change.
    let warm = |expected_on_riders: bool| {
        past_the_racy_window();
        let run = lint(app, &cached);
        assert_eq!(run, lint(app, &["--no-cache"]));
        assert_eq!(wrapped_on(&run.1, "riders.py"), expected_on_riders, "{:?}", run.1);
        run
    };
    warm(true);
    warm(true);

    std::fs::write(&riders, &bare).unwrap();
    let edited = warm(false);
    let now = std::time::SystemTime::now();
    std::fs::File::options().append(true).open(&riders).unwrap().set_modified(now).unwrap();
    assert_eq!(warm(false), edited, "touched, unchanged");

    let replacement = app.join("app/riders.py.new");
    std::fs::write(&replacement, &wrapped).unwrap();
    std::fs::rename(&replacement, &riders).unwrap();
    warm(true);

    std::fs::write(app.join("app/more.py"), wrapped.replace("def by_email", "def more_by_email")).unwrap();
    let added = warm(true);
    assert!(wrapped_on(&added.1, "more.py"), "{:?}", added.1);
}
