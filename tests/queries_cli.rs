//! `sluice queries` end to end: the built binary listing the SQL of application code laid out in
//! a throwaway directory (files of several languages, an ignored directory, a broken mapper).

use assert_cmd::Command;
use serde_json::Value;
use std::path::Path;

fn write(root: &Path, path: &str, text: &str) {
    let full = root.join(path);
    std::fs::create_dir_all(full.parent().unwrap()).unwrap();
    std::fs::write(full, text).unwrap();
}

fn app() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(
        root,
        "internal/store/users.go",
        "package store\n\nconst byID = `SELECT id\n  FROM users\n WHERE id = $1`\n\nfunc (s *Store) User(ctx context.Context, id int64) error {\n\treturn s.pool.QueryRow(ctx, byID, id).Scan(&s.u)\n}\n\nfunc (s *Store) Purge(ctx context.Context, t string) {\n\ts.pool.Exec(ctx, fmt.Sprintf(\"DELETE FROM %s\", t))\n}\n",
    );
    write(
        root,
        "src/repo.py",
        "def count(cur):\n    cur.execute(\"SELECT count(*) FROM orders WHERE total > %s\", (100,))\n",
    );
    write(
        root,
        ".sqlx/query-abc.json",
        "{\"db_name\": \"PostgreSQL\", \"query\": \"SELECT 1 AS one\", \"describe\": {}}",
    );
    // Other people's code and ignored files are not the application's queries.
    write(root, "node_modules/pg/lib/x.js", "pool.query('SELECT 1 FROM vendored')\n");
    write(root, ".gitignore", "build/\n");
    write(root, "build/gen.go", "package gen\nfunc f() { db.Exec(\"DELETE FROM generated\") }\n");
    dir
}

fn sluice(dir: &Path, args: &[&str]) -> (i32, String, String) {
    let output =
        Command::cargo_bin("sluice").unwrap().current_dir(dir).env("NO_COLOR", "1").args(args).output().unwrap();
    let text = |b: Vec<u8>| String::from_utf8(b).unwrap();
    (output.status.code().unwrap_or(-1), text(output.stdout), text(output.stderr))
}

#[test]
fn json_lists_each_query_with_its_position_source_and_parse() {
    let dir = app();
    let (code, stdout, stderr) = sluice(dir.path(), &["queries", "--format", "json"]);
    assert_eq!(code, 0, "{stderr}");
    let json: Value = serde_json::from_str(&stdout).unwrap();
    let files = json["files"].as_array().unwrap();
    let paths: Vec<&str> = files.iter().map(|f| f["path"].as_str().unwrap()).collect();
    assert_eq!(paths, ["./.sqlx/query-abc.json", "./internal/store/users.go", "./src/repo.py"]);
    let go = &files[1];
    assert_eq!(go["language"], "Go");
    let query = &go["queries"][0];
    assert_eq!(query["sql"], "SELECT id\n  FROM users\n WHERE id = $1");
    assert_eq!((query["line"].as_u64(), query["column"].as_u64()), (Some(3), Some(15)));
    assert_eq!(query["source"], "pgx QueryRow");
    assert_eq!(query["parsed"], true);
    let unreadable = &go["unreadable"][0];
    assert_eq!(unreadable["at"]["line"], 12);
    assert_eq!(unreadable["reason"], "built at run time with fmt.Sprintf");
    // psycopg's %s is a parameter, as lint reads it.
    assert_eq!(files[2]["queries"][0]["parsed"], true);
    assert_eq!(json["totals"]["queries"], 3);
    assert_eq!(json["totals"]["unreadable"], 1);
}

#[test]
fn the_table_shows_file_line_column_source_and_first_line() {
    let dir = app();
    let (code, stdout, _) = sluice(dir.path(), &["queries", "internal"]);
    assert_eq!(code, 0);
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(lines[0].starts_with("internal/store/users.go:3:15  pgx QueryRow  SELECT id…"), "{stdout}");
    assert_eq!(lines[1], "internal/store/users.go: 1 unreadable (line 12)");
    assert_eq!(
        lines.last().unwrap(),
        &"1 queries in 1 files (1 parsed by Sluice), 1 unreadable, 0 skipped, 0 for another database, 0 in migration code, 0 in test code; 1 files scanned"
    );
}

#[test]
fn a_broken_mapper_is_exit_2_naming_file_and_line() {
    let dir = app();
    write(
        dir.path(),
        "src/main/resources/OrderMapper.xml",
        "<mapper namespace=\"o\">\n  <select id=\"a\">SELECT 1</select>\n  <select>\n</mapper>\n",
    );
    let (code, _, stderr) = sluice(dir.path(), &["queries", "src"]);
    assert_eq!(code, 2);
    assert!(stderr.contains("src/main/resources/OrderMapper.xml:4: not a well-formed MyBatis mapper"), "{stderr}");
    let (code, _, stderr) = sluice(dir.path(), &["queries", "missing"]);
    assert_eq!((code, stderr.trim()), (2, "sluice: error: missing: no such file or directory"));
}

#[test]
fn tracked_files_are_read_whatever_gitignore_says_and_no_ignore_reads_the_rest() {
    let dir = app();
    let root = dir.path();
    write(root, ".gitignore", "build/\nconfig.py\n");
    write(
        root,
        "cogs/config.py",
        "async def f(conn):\n    return await conn.fetch(\"SELECT prefix FROM guild_config\")\n",
    );
    let repository = git2::Repository::init(root).unwrap();
    let mut index = repository.index().unwrap();
    index.add_path(Path::new("cogs/config.py")).unwrap();
    index.write().unwrap();
    let sources = |args: &[&str]| {
        let (code, stdout, stderr) = sluice(root, args);
        assert_eq!(code, 0, "{stderr}");
        let json: Value = serde_json::from_str(&stdout).unwrap();
        json["files"].as_array().unwrap().iter().map(|f| f["path"].as_str().unwrap().to_string()).collect::<Vec<_>>()
    };
    let listed = sources(&["queries", "--format", "json", "."]);
    assert!(listed.contains(&"./cogs/config.py".to_string()), "{listed:?}");
    assert!(!listed.iter().any(|p| p.contains("build/")), "{listed:?}");
    let everything = sources(&["queries", "--format", "json", "--no-ignore", "."]);
    assert!(everything.contains(&"./build/gen.go".to_string()), "{everything:?}");
    assert!(!everything.iter().any(|p| p.contains("node_modules")), "{everything:?}");
}

#[test]
fn placeholders_of_every_style_are_parsed_as_lint_reads_them() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(
        root,
        "src/main/resources/UserMapper.xml",
        "<mapper namespace=\"u\">\n  <select id=\"byId\">SELECT * FROM users WHERE id = #{id}</select>\n</mapper>\n",
    );
    write(root, "app/repo.py", "def f(cur):\n    cur.execute(\"SELECT * FROM users WHERE id = %(id)s\", {'id': 1})\n");
    write(root, "store/users.go", "package store\nfunc f() { db.QueryRow(\"SELECT * FROM users WHERE id = ?\", 1) }\n");
    // Not SQL whatever its placeholders: still "not parsed".
    write(root, "store/broken.go", "package store\nfunc g() { db.Exec(\"DELETE FROM users WHERE id = ? AND\", 1) }\n");
    let (code, stdout, stderr) = sluice(root, &["queries", "--format", "json"]);
    assert_eq!(code, 0, "{stderr}");
    let json: Value = serde_json::from_str(&stdout).unwrap();
    let parsed: Vec<(String, bool)> = json["files"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|f| {
            f["queries"]
                .as_array()
                .unwrap()
                .iter()
                .map(|q| (q["sql"].as_str().unwrap().to_string(), q["parsed"].as_bool().unwrap()))
        })
        .collect();
    assert_eq!(
        parsed,
        [
            ("SELECT * FROM users WHERE id = %(id)s".to_string(), true),
            ("SELECT * FROM users WHERE id = #{id}".to_string(), true),
            ("DELETE FROM users WHERE id = ? AND".to_string(), false),
            ("SELECT * FROM users WHERE id = ?".to_string(), true),
        ]
    );
    assert_eq!(json["totals"]["parsed"], 3);
}
