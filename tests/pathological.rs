//! Issue 16's pathological inputs, end to end through the binary: each case that once crashed,
//! hung, took quadratic time or turned a failing verdict into a pass, minimized. Exit codes are
//! the contract: 1 when the gate fails (including for what Sluice could not read), 2 when it
//! cannot give a verdict, with a message naming the file, the line and the cause.

mod support;

use assert_cmd::Command;
use serde_json::Value;
use std::path::Path;
use std::time::{Duration, Instant};
use support::pathological;

/// A project: `sluice.toml`, a first migration creating `t`, and `files` (path, contents).
fn project(files: &[(&str, &[u8])]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "sluice.toml", b"[migrations]\ndir = \"migrations\"\n");
    write(dir.path(), "migrations/001_t.sql", b"CREATE TABLE t (a int, b int);\nCREATE INDEX i ON t (a);\n");
    for (path, contents) in files {
        write(dir.path(), path, contents);
    }
    dir
}

fn write(root: &Path, path: &str, contents: &[u8]) {
    let path = root.join(path);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, contents).unwrap();
}

struct Run {
    code: i32,
    findings: Vec<Value>,
    stderr: String,
    took: Duration,
}

fn sluice(dir: &Path, args: &[&str]) -> Run {
    let started = Instant::now();
    let out = Command::cargo_bin("sluice")
        .unwrap()
        .current_dir(dir)
        .args(args)
        .timeout(Duration::from_secs(120))
        .output()
        .unwrap();
    let took = started.elapsed();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let findings = serde_json::from_slice::<Value>(&out.stdout)
        .ok()
        .and_then(|doc| doc["findings"].as_array().cloned())
        .unwrap_or_default();
    Run { code: out.status.code().unwrap_or(-1), findings, stderr, took }
}

fn lint(dir: &Path) -> Run {
    sluice(dir, &["lint", "--format", "json"])
}

fn rule<'r>(run: &'r Run, id: &str) -> Vec<&'r Value> {
    run.findings.iter().filter(|f| f["rule"] == id).collect()
}

fn lines(findings: &[&Value]) -> Vec<u64> {
    findings.iter().map(|f| f["line"].as_u64().unwrap()).collect()
}

#[test]
fn a_byte_order_mark_is_not_part_of_the_first_statement() {
    // Item 3: 15 of 356 real files flipped from exit 1 to exit 0.
    let dir = project(&[
        ("migrations/002_index.sql", b"\xEF\xBB\xBFDROP INDEX i;\n"),
        ("sluice.toml", b"\xEF\xBB\xBF[migrations]\ndir = \"migrations\"\n"),
        ("policies/identity.toml", b"\xEF\xBB\xBF[[table]]\nname = \"t\"\nidentity = [[\"a\"]]\n"),
    ]);
    let run = lint(dir.path());
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(rule(&run, "unparsed-statement").is_empty(), "{:#?}", run.findings);
    assert_eq!(lines(&rule(&run, "drop-index-non-concurrently")), [1]);
    assert_eq!(rule(&run, "drop-index-non-concurrently")[0]["column"], 1);
}

#[test]
fn a_statement_the_tokenizer_rejects_hides_nothing_after_it() {
    // Item 4: 1,030 lines unchecked behind one warning, exit 0; an ignore-file directive hid it all.
    for bad in pathological::TOKENIZER_REJECTS {
        let sql = format!("-- sluice:ignore-file unparsed-statement -- vendored\n{bad}\nDROP INDEX i;\n");
        let dir = project(&[("migrations/002_x.sql", sql.as_bytes())]);
        let run = lint(dir.path());
        assert_eq!(run.code, 1, "{bad}: {}", run.stderr);
        let unread = rule(&run, "unread-text");
        assert_eq!(lines(&unread), [2], "{bad}: {:#?}", run.findings);
        assert_eq!(unread[0]["severity"], "error");
        assert_eq!(lines(&rule(&run, "drop-index-non-concurrently")), [3], "{bad}");
    }
}

#[test]
fn unread_text_cannot_be_turned_off() {
    let dir = project(&[
        ("migrations/002_x.sql", b"-- sluice:ignore-file unread-text -- vendored\nSELECT 'never closed;\n"),
        ("sluice.toml", b"[rules]\n\"unread-text\" = \"off\"\n"),
    ]);
    let run = lint(dir.path());
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("sluice.toml:2: `unread-text` is always an error"), "{}", run.stderr);
    write(dir.path(), "sluice.toml", b"");
    let run = lint(dir.path());
    assert_eq!(run.code, 1);
    assert_eq!(lines(&rule(&run, "unread-text")), [2]);
    assert_eq!(lines(&rule(&run, "invalid-suppression")), [1]);
}

#[test]
fn a_statement_too_deep_to_parse_fails_closed() {
    // Item 5: an UPDATE nested 25 levels was a warning, and the gate passed.
    let dir = project(&[("migrations/002_nested.sql", pathological::nested_update().as_bytes())]);
    let run = lint(dir.path());
    assert_eq!(run.code, 1, "{}", run.stderr);
    let unparsed = rule(&run, "unparsed-statement");
    assert_eq!(unparsed[0]["severity"], "error");
    assert!(unparsed[0]["message"].as_str().unwrap().contains("nested deeper than the SQL parser follows"));
}

#[test]
fn deep_chains_are_findings_not_stack_overflows() {
    // Item 10: exit 134 on ~8,700 `[]` on a column type and on a UNION ALL of ~43,900 branches.
    let cases = [
        ("migrations/002_array.sql", pathological::array_brackets()),
        ("migrations/002_view.sql", pathological::union_chain("CREATE VIEW v AS ")),
        ("queries/report.sql", pathological::union_chain("")),
    ];
    for (path, sql) in cases {
        let dir = project(&[(path, sql.as_bytes())]);
        let run = lint(dir.path());
        assert_eq!(run.code, 1, "{path}: {}", run.stderr);
        let unparsed = rule(&run, "unparsed-statement");
        assert_eq!(unparsed.len(), 1, "{path}: {:#?}", run.findings);
        assert_eq!(unparsed[0]["severity"], "error");
        assert!(unparsed[0]["message"].as_str().unwrap().contains("more than Sluice's limit of 1000"), "{path}");
    }
}

#[test]
fn an_unterminated_quote_or_comment_is_an_error_in_linear_time() {
    // Item 12: 32,000 statements then an unterminated `$$` took 52 s and exited 0.
    for (opener, what) in [("$$", "dollar-quoted string"), ("/*", "/* comment"), ("'", "quoted string")] {
        let dir = project(&[("migrations/002_big.sql", pathological::unterminated_after(opener).as_bytes())]);
        let run = lint(dir.path());
        assert_eq!(run.code, 1, "{opener}: {}", run.stderr);
        let unread = rule(&run, "unread-text");
        assert_eq!(lines(&unread), [32_001], "{opener}");
        let message = unread[0]["message"].as_str().unwrap();
        assert!(message.contains(&format!("unterminated {what} starting at line 32001, column 8")), "{message}");
        assert!(message.contains("was checked (lines 32001-32002)"), "{message}");
        assert!(run.took < Duration::from_secs(30), "{opener}: {:?}", run.took);
    }
}

#[test]
fn a_configured_directory_that_does_not_exist_is_an_error() {
    // Item 8: a typo in [policies] dir or [queries] dirs turned exit 1 into exit 0.
    for (config, key) in [
        (&b"[policies]\ndir = \"policis\"\n"[..], "[policies] dir policis"),
        (&b"[queries]\ndirs = [\"querys\"]\n"[..], "[queries] dirs querys"),
    ] {
        let dir = project(&[("sluice.toml", config)]);
        let run = lint(dir.path());
        assert_eq!(run.code, 2);
        assert!(run.stderr.contains(&format!("sluice.toml:2: {key}: no such directory")), "{}", run.stderr);
    }
    let dir = project(&[]);
    let flagged = sluice(dir.path(), &["lint", "--policies", "nowhere"]);
    assert_eq!(flagged.code, 2);
    let expected = format!("--policies {}: no such directory\n", dir.path().join("nowhere").display());
    assert!(flagged.stderr.ends_with(&expected), "{}", flagged.stderr);
}

#[test]
fn a_configuration_that_is_a_directory_is_an_error() {
    let dir = project(&[]);
    std::fs::remove_file(dir.path().join("sluice.toml")).unwrap();
    std::fs::create_dir(dir.path().join("sluice.toml")).unwrap();
    let run = lint(dir.path());
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("sluice.toml: cannot read: a directory, not a regular file"), "{}", run.stderr);

    let dir = project(&[("policies/freeze.toml", b"timezone = \"UTC\"\n[[window]]\nid = \"w\"\nkind = \"deny\"\nstart = \"2026-01-01T00:00\"\nend = \"2026-01-02T00:00\"\nreason = \"r\"\n")]);
    std::fs::create_dir(dir.path().join("policies/overrides.toml")).unwrap();
    let freeze = sluice(dir.path(), &["freeze", "status", "--env", "production", "--service", "api"]);
    assert_eq!(freeze.code, 2, "{}", freeze.stderr);
    assert!(
        freeze.stderr.contains("policies/overrides.toml: this input is a directory; give a regular file"),
        "{}",
        freeze.stderr
    );
}

#[test]
fn a_recurrence_outside_ascii_is_a_configuration_error_not_a_panic() {
    // Found by fuzz/freeze_toml: the rrule crate panicked inside a multi-byte character.
    let calendar = "timezone = \"UTC\"\n[[window]]\nid = \"peak\"\nkind = \"deny\"\n\
                    rrule = \"FREQ=WEEKLY;BYDAY=MO,TU\u{51e}E\"\nstart_time = \"08:00\"\nend_time = \"09:30\"\n\
                    reason = \"r\"\n";
    let dir = project(&[("policies/freeze.toml", calendar.as_bytes())]);
    let run = sluice(dir.path(), &["freeze", "status", "--env", "production", "--service", "api"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("freeze.toml:2: [[window]] `peak`: rrule `FREQ=WEEKLY;BYDAY=MO,TU\u{51e}E`"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("cannot appear in an RRULE"), "{}", run.stderr);
    assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
}

#[test]
fn a_row_count_that_is_not_a_number_is_rejected() {
    // Item 9: reltuples = NaN silenced the lock findings.
    let dir = project(&[
        ("migrations/002_index.sql", b"CREATE INDEX j ON t (b);\n"),
        ("policies/tables.toml", b"stats = \"table-stats.csv\"\n"),
        ("policies/table-stats.csv", b"schema,table,reltuples,relpages\npublic,t,NaN,1\n"),
    ]);
    let run = lint(dir.path());
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("table-stats.csv:2: reltuples `NaN` is not a number of rows"), "{}", run.stderr);
}

#[cfg(unix)]
#[test]
fn an_input_that_is_not_a_regular_file_is_refused_not_waited_for() {
    for path in ["migrations/002_fifo.sql", "queries/fifo.sql", "policies/identity.toml"] {
        let dir = project(&[]);
        let fifo = dir.path().join(path);
        std::fs::create_dir_all(fifo.parent().unwrap()).unwrap();
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
        let run = lint(dir.path());
        let listed = path.starts_with("policies");
        // The directory walk lists regular files only; a FIFO named as a policy is read, and refused.
        if listed {
            assert_eq!(run.code, 2, "{path}");
            assert!(
                run.stderr.contains("identity.toml: cannot read: a FIFO (named pipe), not a regular file"),
                "{}",
                run.stderr
            );
        }
        assert!(run.took < Duration::from_secs(30), "{path}: {:?}", run.took);
        // Named on the command line, it is read, and refused.
        let named = sluice(dir.path(), &["lint", "--format", "json", path]);
        if !listed {
            assert_eq!(named.code, 2, "{path}: {}", named.stderr);
            assert!(named.stderr.contains("cannot read: a FIFO (named pipe), not a regular file"), "{}", named.stderr);
        }
    }
}

#[test]
fn oversized_input_is_refused_with_a_reason() {
    // Item 13: a bound check instead of an out-of-memory abort. A sparse file costs no disk.
    let dir = project(&[]);
    let file = std::fs::File::create(dir.path().join("migrations/002_dump.sql")).unwrap();
    file.set_len(sluice::error::MAX_INPUT_BYTES + 1).unwrap();
    let run = lint(dir.path());
    assert_eq!(run.code, 2);
    assert!(
        run.stderr.contains("002_dump.sql: cannot read: the file is 257 MiB, more than Sluice reads (256 MiB)"),
        "{}",
        run.stderr
    );
}

#[cfg(unix)]
#[test]
fn running_out_of_memory_is_exit_2_with_a_message_not_an_abort() {
    // Item 13: under a memory limit the process aborted with exit 134. The limit leaves room to
    // start (the debug executable, 32 MB stacks for the parsing threads) but not for this file,
    // which needs about 400 MB of address space in a debug build.
    let dir = project(&[("migrations/002_big.sql", "SELECT a, b FROM t WHERE a = 1;\n".repeat(400_000).as_bytes())]);
    // `sluice lint` under `ulimit -v LIMIT` (KiB): its exit code and standard error.
    let lint_within = |limit: u32| {
        let binary = assert_cmd::cargo::cargo_bin("sluice");
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!("ulimit -v {limit} && exec '{}' lint --format json", binary.display()))
            .current_dir(dir.path())
            .output()
            .unwrap();
        (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
    };
    let (code, stderr) = lint_within(300_000);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("sluice: out of memory: could not allocate"), "{stderr}");
    // Tighter limits run out elsewhere (starting the worker threads, reserving their stacks):
    // still exit 2 with a message, never a panic.
    for limit in [150_000, 200_000, 250_000] {
        let (code, stderr) = lint_within(limit);
        assert_eq!(code, Some(2), "ulimit -v {limit}: {stderr}");
        assert!(stderr.starts_with("sluice: ") && !stderr.contains("panicked"), "ulimit -v {limit}: {stderr}");
    }
}

#[test]
fn write_errors_say_cannot_write() {
    // Item 15: they said "cannot read".
    let dir = project(&[]);
    let out = sluice(dir.path(), &["lint", "--output", "sarif=no/such/dir/report.sarif"]);
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("no/such/dir/report.sarif: cannot write: No such file or directory"), "{}", out.stderr);
}

#[test]
fn connection_errors_give_the_cause_the_host_and_the_port() {
    // Item 15: "cannot connect: error connecting to server" said neither where nor why.
    let dir = project(&[("scale.toml", b"[tables.t]\nrows = 10\n"), ("queries/q.sql", b"SELECT a FROM t;\n")]);
    let base = ["plan", "--base-dir", "migrations", "--head-dir", "migrations", "--scale", "scale.toml"];
    for (url, place, cause) in [
        ("postgresql://sluice@127.0.0.1:1/postgres", "127.0.0.1:1, sslmode=prefer", "Connection refused"),
        (
            "postgresql://sluice@%2Fnonexistent%2Fsluice:5433/postgres",
            "/nonexistent/sluice (Unix socket, port 5433), sslmode=prefer",
            "No such file or directory",
        ),
    ] {
        let mut args = base.to_vec();
        args.extend(["--database-url", url]);
        let out = sluice(dir.path(), &args);
        assert_eq!(out.code, 2, "{}", out.stderr);
        assert!(
            out.stderr.contains(&format!("database postgres at {place}: error connecting to server: {cause}")),
            "{}",
            out.stderr
        );
    }
}

#[test]
fn the_deepest_statements_sluice_accepts_lint_within_its_stack() {
    // What the depth limits let through must parse, walk and drop on the threads Sluice runs
    // its work on (`sql::depth::STACK_BYTES`), unoptimized: `check_lint` runs there.
    let chain = |piece: &str, n: usize| piece.repeat(n);
    let nested = format!(
        "{}SELECT a FROM t WHERE a{} = 1{}",
        "SELECT a FROM t WHERE a IN (".repeat(12),
        chain(" + 1", 60),
        ")".repeat(12)
    );
    let cases = [
        format!("CREATE VIEW v AS SELECT a FROM t WHERE a = 1{};", chain(" OR a = 1", 499)),
        format!("SELECT a FROM t WHERE a{} = 1;", chain(" + 1", 998)),
        format!("CREATE TABLE u (c int{});", chain("[]", 1_000)),
        format!("CREATE INDEX CONCURRENTLY j ON t ((a{}));", chain(" + 1", 999)),
        format!("CREATE VIEW w AS SELECT a FROM t{};", chain(" UNION ALL SELECT a FROM t", 1_000)),
        format!(
            "CREATE FUNCTION f() RETURNS int LANGUAGE sql AS $$ SELECT a FROM t WHERE a{} = 1 $$;",
            chain(" + 1", 998)
        ),
        format!("SELECT {}1{};", "(".repeat(20), ")".repeat(20)),
        nested,
    ];
    for sql in cases {
        // Accepted, not refused: these are the deepest trees Sluice builds.
        let accepted = sluice::sql::depth::with_stack(|| {
            let file = sluice::rules::SourceFile::parse("q.sql", sql.clone());
            file.parsed.statements.iter().all(|s| s.too_deep.is_none())
        });
        assert!(accepted, "{}", &sql[..60]);
        support::invariants::check_lint(&sql).unwrap();
    }
}

/// A repository with `base` committed on `main` and `head` committed on a branch checked out.
fn git_repo(base: &[(&str, &[u8])], head: &[(&str, &[u8])]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let mut options = git2::RepositoryInitOptions::new();
    options.initial_head("main");
    let repo = git2::Repository::init_opts(dir.path(), &options).unwrap();
    let commit = |files: &[(&str, &[u8])], message: &str| {
        for (path, contents) in files {
            write(dir.path(), path, contents);
        }
        let mut index = repo.index().unwrap();
        index.add_all(["*"], git2::IndexAddOption::DEFAULT, None).unwrap();
        index.write().unwrap();
        let tree = repo.find_tree(index.write_tree().unwrap()).unwrap();
        let signature = git2::Signature::now("Test", "test@example.com").unwrap();
        let parent = repo.head().ok().and_then(|h| h.peel_to_commit().ok());
        let parents: Vec<&git2::Commit> = parent.iter().collect();
        repo.commit(Some("HEAD"), &signature, &signature, message, &tree, &parents).unwrap()
    };
    let base_commit = commit(base, "base");
    repo.branch("feature", &repo.find_commit(base_commit).unwrap(), true).unwrap();
    repo.set_head("refs/heads/feature").unwrap();
    commit(head, "head");
    dir
}

#[test]
fn check_reads_git_blobs_without_their_byte_order_mark() {
    let base: &[(&str, &[u8])] = &[
        ("sluice.toml", b"[migrations]\ndir = \"migrations\"\n"),
        ("migrations/001_t.sql", b"CREATE TABLE t (a int);\nCREATE INDEX i ON t (a);\n"),
    ];
    let dir = git_repo(base, &[("migrations/002_drop.sql", b"\xEF\xBB\xBFDROP INDEX i;\n")]);
    let run = sluice(dir.path(), &["check", "--head", "HEAD", "--no-plan", "--format", "json"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(rule(&run, "unparsed-statement").is_empty(), "{:#?}", run.findings);
    assert_eq!(lines(&rule(&run, "drop-index-non-concurrently")), [1], "{:#?}", run.findings);
}

#[test]
fn check_refuses_a_policies_directory_missing_on_the_head_revision() {
    let base: &[(&str, &[u8])] = &[
        ("sluice.toml", b"[migrations]\ndir = \"migrations\"\n[policies]\ndir = \"policis\"\n"),
        ("migrations/001_t.sql", b"CREATE TABLE t (a int);\n"),
        ("policies/identity.toml", b"[[table]]\nname = \"t\"\nidentity = [[\"a\"]]\n"),
    ];
    let dir = git_repo(base, &[("migrations/002_u.sql", b"CREATE UNIQUE INDEX CONCURRENTLY u ON t (a);\n")]);
    let run = sluice(dir.path(), &["check", "--head", "HEAD", "--no-plan", "--format", "json"]);
    assert_eq!(run.code, 2, "{:#?}", run.findings);
    assert!(
        run.stderr.contains("sluice.toml:4: [policies] dir policis: no such directory on the head revision"),
        "{}",
        run.stderr
    );
}
