//! `sluice stats query` against a real PostgreSQL: the exported snapshot sets the severity of
//! lock findings per table (error on large, warning on medium, nothing on tiny).
//! Needs the PostgreSQL server binaries (initdb, pg_ctl, postgres) and psql.

use assert_cmd::Command;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command as Process;

fn find_binary(name: &str) -> PathBuf {
    let mut candidates: Vec<PathBuf> =
        std::env::var_os("PATH").map(|p| std::env::split_paths(&p).map(|d| d.join(name)).collect()).unwrap_or_default();
    if let Ok(versions) = std::fs::read_dir("/usr/lib/postgresql") {
        candidates.extend(versions.flatten().map(|v| v.path().join("bin").join(name)));
    }
    candidates.into_iter().find(|p| p.is_file()).unwrap_or_else(|| {
        panic!("`{name}` not found: install the PostgreSQL server and client (e.g. `apt-get install postgresql`) to run this test")
    })
}

/// Runs a PostgreSQL binary; as root, as `nobody` (initdb refuses to run as root).
fn pg(binary: &str, args: &[&str]) -> std::process::Output {
    let path = find_binary(binary);
    let output = if nix::unistd::Uid::effective().is_root() {
        Process::new("runuser").arg("-u").arg("nobody").arg("--").arg(&path).args(args).output()
    } else {
        Process::new(&path).args(args).output()
    }
    .unwrap_or_else(|e| panic!("cannot run {}: {e}", path.display()));
    assert!(output.status.success(), "{binary} {args:?} failed: {}", String::from_utf8_lossy(&output.stderr));
    output
}

struct Server {
    data: PathBuf,
    socket: PathBuf,
    port: String,
}

impl Server {
    fn start(root: &Path) -> Server {
        let data = root.join("data");
        let socket = root.to_path_buf();
        if nix::unistd::Uid::effective().is_root() {
            let nobody = nix::unistd::User::from_name("nobody").unwrap().expect("user nobody");
            nix::unistd::chown(root, Some(nobody.uid), Some(nobody.gid)).unwrap();
        }
        let port = (20000 + std::process::id() % 20000).to_string();
        pg("initdb", &["-D", data.to_str().unwrap(), "-A", "trust", "-U", "postgres", "--no-sync"]);
        let options = format!("-k {} -c listen_addresses='' -p {port} -c fsync=off", socket.display());
        let log = root.join("log");
        pg("pg_ctl", &["-D", data.to_str().unwrap(), "-o", &options, "-l", log.to_str().unwrap(), "-w", "start"]);
        Server { data, socket, port }
    }

    fn psql(&self, args: &[&str], stdin: Option<&str>) -> String {
        let mut command = Process::new(find_binary("psql"));
        command
            .args([
                "-h",
                self.socket.to_str().unwrap(),
                "-p",
                &self.port,
                "-U",
                "postgres",
                "-X",
                "-v",
                "ON_ERROR_STOP=1",
            ])
            .args(args);
        let output = match stdin {
            Some(input) => {
                use std::io::Write;
                let mut child = command
                    .stdin(std::process::Stdio::piped())
                    .stdout(std::process::Stdio::piped())
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .unwrap();
                child.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
                child.wait_with_output().unwrap()
            }
            None => command.output().unwrap(),
        };
        assert!(output.status.success(), "psql failed: {}", String::from_utf8_lossy(&output.stderr));
        String::from_utf8(output.stdout).unwrap()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let path = find_binary("pg_ctl");
        let args = ["-D", self.data.to_str().unwrap(), "-m", "immediate", "stop"];
        let _ = if nix::unistd::Uid::effective().is_root() {
            Process::new("runuser").arg("-u").arg("nobody").arg("--").arg(&path).args(args).output()
        } else {
            Process::new(&path).args(args).output()
        };
    }
}

#[test]
fn exported_statistics_set_lock_severity_per_table() {
    let pg_root = tempfile::tempdir().unwrap();
    let server = Server::start(pg_root.path());
    server.psql(
        &[
            "-c",
            "CREATE TABLE big (a int); INSERT INTO big SELECT generate_series(1, 150000);
                 CREATE TABLE mid (a int); INSERT INTO mid SELECT generate_series(1, 5000);
                 CREATE TABLE tiny (a int); INSERT INTO tiny VALUES (1), (2);
                 CREATE TABLE never_analyzed (a int);
                 ANALYZE big; ANALYZE mid; ANALYZE tiny;",
        ],
        None,
    );
    let query = Command::cargo_bin("sluice").unwrap().args(["stats", "query"]).output().unwrap();
    assert!(query.status.success());
    let csv = server.psql(&["--csv"], Some(&String::from_utf8(query.stdout).unwrap()));
    assert!(csv.starts_with("schema,table,reltuples,relpages\n"), "{csv}");

    let project = tempfile::tempdir().unwrap();
    let p = project.path();
    std::fs::create_dir_all(p.join("migrations")).unwrap();
    std::fs::create_dir_all(p.join("policies")).unwrap();
    std::fs::write(p.join("sluice.toml"), "").unwrap();
    std::fs::write(p.join("policies/table-stats.csv"), &csv).unwrap();
    std::fs::write(p.join("policies/tables.toml"), "stats = \"table-stats.csv\"\n").unwrap();
    std::fs::write(
        p.join("migrations/001_tables.sql"),
        "CREATE TABLE big (a int); CREATE TABLE mid (a int); CREATE TABLE tiny (a int); CREATE TABLE never_analyzed (a int);",
    )
    .unwrap();
    std::fs::write(
        p.join("migrations/002_indexes.sql"),
        "SET lock_timeout = '5s';\nCREATE INDEX big_a ON big (a);\nCREATE INDEX mid_a ON mid (a);\nCREATE INDEX tiny_a ON tiny (a);\nCREATE INDEX never_analyzed_a ON never_analyzed (a);\n",
    )
    .unwrap();
    let output =
        Command::cargo_bin("sluice").unwrap().current_dir(p).args(["lint", "--format", "json"]).output().unwrap();
    let report: Value = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|_| panic!("{}", String::from_utf8_lossy(&output.stderr)));
    let severities: Vec<(String, String)> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["rule"] == "create-index-non-concurrently")
        .map(|f| (f["line"].to_string(), f["severity"].as_str().unwrap().to_string()))
        .collect();
    assert_eq!(
        severities,
        [("2".into(), "error".into()), ("3".into(), "warning".into()), ("5".into(), "error".into())],
        "big is large, mid medium, tiny silent, never_analyzed unknown"
    );
    let big = report["findings"].as_array().unwrap().iter().find(|f| f["line"] == 2).unwrap();
    let rows = big["facts"].as_array().unwrap().iter().find(|f| f["name"] == "table rows").unwrap();
    assert!(rows["value"].as_str().unwrap().starts_with("150000 ("), "{rows}");
}
