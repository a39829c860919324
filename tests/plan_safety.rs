//! `sluice plan` never signals a process it cannot prove is its own server, and leaves nothing
//! running when it is stopped: SIGTERM/SIGHUP clean up at once, and what a SIGKILL leaves behind
//! is stopped and removed by the next run. Real servers, real signals.

mod plan_support;

use plan_support::*;
use sluice::plan::server::{Server, ServerOptions};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A small project: the reporting schema at a tiny scale, and one query that sleeps for a minute
/// under --analyze, so a run can be caught in the middle.
struct Project {
    _dir: tempfile::TempDir,
    root: PathBuf,
    /// Where throwaway clusters go (the runs' TMPDIR), and where the cached one lives.
    tmp: PathBuf,
    cache: PathBuf,
}

impl Project {
    fn new() -> Project {
        let dir = cache_dir();
        let root = dir.path().join("project");
        let reporting = fixture("reporting");
        for name in ["0001_orders.sql", "0002_reporting_index.sql"] {
            let sql = std::fs::read_to_string(reporting.join("base").join(name)).expect("fixture");
            write(&root.join("base").join(name), &sql);
        }
        write(&root.join("queries/orders.sql"), "SELECT count(*) FROM orders WHERE customer_id = $1;\n");
        write(&root.join("slow/sleep.sql"), "SELECT pg_sleep(60);\n");
        write(&root.join("scale.toml"), "[tables.customers]\nrows = 100\n[tables.orders]\nrows = 2_000\n");
        let tmp = dir.path().join("tmp");
        let cache = dir.path().join("cache");
        for d in [&tmp, &cache] {
            std::fs::create_dir_all(d).expect("mkdir");
            chmod_755(d);
        }
        Project { root, tmp, cache, _dir: dir }
    }

    fn command(&self, queries: &str, no_cache: bool) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_sluice"));
        cmd.current_dir(&self.root)
            .env_remove("DATABASE_URL")
            .env_remove("SLUICE_DATABASE_URL")
            .env("TMPDIR", &self.tmp)
            .args(["plan", "--base-dir", "base", "--head-dir", "base", "--scale", "scale.toml", "--format", "json"])
            .args(["--queries", queries, "--cache-dir"])
            .arg(&self.cache);
        if no_cache {
            cmd.arg("--no-cache");
        }
        cmd
    }

    /// A run that finishes: exit 0 (no finding), its JSON report.
    fn run(&self, no_cache: bool) -> serde_json::Value {
        let out = self.command("queries", no_cache).output().expect("run sluice");
        let doc = json(&out);
        assert_eq!(out.status.code(), Some(0), "{doc:#}\n{}", String::from_utf8_lossy(&out.stderr));
        doc
    }

    /// A run caught in the middle: its server is up and planning the sleeping query.
    fn start_slow(&self, no_cache: bool) -> (Child, PathBuf) {
        let mut cmd = self.command("slow", no_cache);
        cmd.args(["--analyze", "--repeat", "1", "--statement-timeout", "300"])
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let mut child = cmd.spawn().expect("spawn sluice");
        let deadline = Instant::now() + Duration::from_secs(180);
        loop {
            if let Some(cluster) = self.clusters(no_cache).into_iter().find(|c| sleeping(c)) {
                return (child, cluster);
            }
            if let Ok(Some(status)) = child.try_wait() {
                panic!("sluice ended before it could be interrupted: {status}");
            }
            assert!(Instant::now() < deadline, "the slow query never started");
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    fn clusters(&self, no_cache: bool) -> Vec<PathBuf> {
        if !no_cache {
            return vec![self.cache.join("pg15")];
        }
        throwaway_clusters(&self.tmp)
    }
}

fn chmod_755(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

fn throwaway_clusters(tmp: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(tmp)
        .expect("tmp")
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("sluice-pg-"))
        .map(|e| e.path())
        .collect()
}

fn postmaster_pid(cluster: &Path) -> Option<i32> {
    let text = std::fs::read_to_string(cluster.join("data/postmaster.pid")).ok()?;
    text.lines().next()?.trim().parse().ok()
}

/// The process exists and is not a zombie.
fn alive(pid: i32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { return false };
    !stat.rsplit_once(')').is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'))
}

/// The cluster's server is up and running `pg_sleep`.
fn sleeping(cluster: &Path) -> bool {
    let socket = cluster.join("socket");
    if !socket.join(".s.PGSQL.5432").exists() {
        return false;
    }
    let out = Command::new(psql())
        .args(["-X", "-A", "-t", "-U", "sluice", "-d", "postgres", "-h"])
        .arg(&socket)
        .args(["-c", "SELECT count(*) FROM pg_stat_activity WHERE wait_event = 'PgSleep'"])
        .output();
    out.is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "1")
}

fn psql() -> PathBuf {
    sluice::plan::server::find_bindir().unwrap_or_else(|e| panic!("{e}")).join("psql")
}

fn wait_exit(child: &mut Child, within: Duration) -> std::process::ExitStatus {
    let deadline = Instant::now() + within;
    loop {
        if let Some(status) = child.try_wait().expect("wait") {
            return status;
        }
        assert!(Instant::now() < deadline, "sluice did not exit within {within:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn signal(child: &Child, signal: nix::sys::signal::Signal) {
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), signal).expect("signal");
}

fn notes(doc: &serde_json::Value) -> String {
    doc["notes"].as_array().expect("notes").iter().filter_map(|n| n.as_str()).collect::<Vec<_>>().join("\n")
}

/// Issue 16: after a SIGKILL or a reboot, `postmaster.pid` may name a PID that now belongs to
/// another process, even one that calls itself postgres. Sluice must leave it alone.
#[test]
fn a_stale_pid_file_naming_an_unrelated_postgres_lookalike_leaves_that_process_alone() {
    require_postgres();
    let project = Project::new();
    project.run(false);
    let data = project.cache.join("pg15/data");
    assert!(data.join("PG_VERSION").is_file(), "the first run made the cached cluster");
    assert!(!data.join("postmaster.pid").exists(), "and stopped its server");

    // A process whose command line says "postgres", running in the data directory itself.
    let mut impostor = Command::new("bash")
        .args(["-c", "exec -a postgres sleep 300"])
        .current_dir(&data)
        .spawn()
        .expect("spawn the impostor");
    let pid = impostor.id() as i32;
    std::thread::sleep(Duration::from_millis(200));
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).expect("cmdline");
    assert!(String::from_utf8_lossy(&cmdline).starts_with("postgres"), "the impostor looks like postgres");
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).expect("clock").as_secs();
    write(
        &data.join("postmaster.pid"),
        &format!(
            "{pid}\n{}\n{now}\n5432\n{}\n\n  5432001         0\nready   \n",
            data.display(),
            project.cache.join("pg15/socket").display()
        ),
    );

    let doc = project.run(false);
    assert!(alive(pid), "the process named by the stale pid file was signalled");
    assert!(notes(&doc).contains(&format!("named PID {pid}, which is not this cluster's server")), "{}", notes(&doc));
    impostor.kill().expect("kill the impostor");
    impostor.wait().expect("reap the impostor");
}

fn interrupted_run_cleans_up(no_cache: bool, sig: nix::sys::signal::Signal) {
    require_postgres();
    let project = Project::new();
    let (mut sluice, cluster) = project.start_slow(no_cache);
    let server = postmaster_pid(&cluster).expect("the server's pid file");
    assert!(alive(server));
    signal(&sluice, sig);
    let status = wait_exit(&mut sluice, Duration::from_secs(60));
    assert_eq!(status.code(), Some(128 + sig as i32), "exit status after {sig}");
    assert!(!alive(server), "the server is stopped after {sig}");
    if no_cache {
        assert!(!cluster.exists(), "the throwaway cluster is removed after {sig}");
    } else {
        // The databases the run created are dropped; only a cached fixture may stay.
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
        let options = ServerOptions { cache_dir: Some(project.cache.clone()), ..ServerOptions::default() };
        let server = rt.block_on(Server::start(&options)).expect("restart the cached cluster");
        assert!(server.notes.is_empty(), "nothing was left running: {:?}", server.notes);
        let left = rt.block_on(server.databases_like("sluice\\_%")).expect("databases");
        assert!(left.iter().all(|(name, _)| name.starts_with("sluice_tpl_")), "{left:?}");
        rt.block_on(server.shutdown(false)).expect("shutdown");
    }
}

#[test]
fn sigterm_stops_the_server_and_removes_the_throwaway_cluster() {
    interrupted_run_cleans_up(true, nix::sys::signal::Signal::SIGTERM);
}

#[test]
fn sighup_stops_the_cached_cluster_server() {
    interrupted_run_cleans_up(false, nix::sys::signal::Signal::SIGHUP);
}

/// SIGKILL cannot be caught: the server outlives Sluice. The next run proves it is its own
/// cluster's server, stops it, and removes a throwaway cluster.
fn killed_run_is_reaped_by_the_next(no_cache: bool) {
    require_postgres();
    let project = Project::new();
    let (mut sluice, cluster) = project.start_slow(no_cache);
    let server = postmaster_pid(&cluster).expect("the server's pid file");
    signal(&sluice, nix::sys::signal::Signal::SIGKILL);
    wait_exit(&mut sluice, Duration::from_secs(10));
    std::thread::sleep(Duration::from_millis(300));
    assert!(alive(server), "SIGKILL leaves the server running (what this test is about)");

    let doc = project.run(no_cache);
    assert!(!alive(server), "the next run stopped the server the killed one left");
    let notes = notes(&doc);
    assert!(notes.contains(&format!("stopped the PostgreSQL server (PID {server})")), "{notes}");
    if no_cache {
        assert!(!cluster.exists(), "the killed run's throwaway cluster is removed");
        assert!(notes.contains("removed the throwaway cluster"), "{notes}");
        assert!(throwaway_clusters(&project.tmp).is_empty(), "and the next run's own is gone too");
    }
}

#[test]
fn a_killed_cached_run_is_stopped_by_the_next_run() {
    killed_run_is_reaped_by_the_next(false);
}

#[test]
fn a_killed_throwaway_run_is_stopped_and_removed_by_the_next_run() {
    killed_run_is_reaped_by_the_next(true);
}

/// On a server named by --database-url, Sluice starts no server: a SIGTERM drops the databases
/// the run created there (its fixture and the head's copy) and leaves the server itself running.
#[test]
fn sigterm_on_a_named_server_drops_the_runs_databases_and_leaves_the_server_running() {
    require_postgres();
    let project = Project::new();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    let theirs = rt
        .block_on(Server::start(&ServerOptions { no_cache: true, ..ServerOptions::default() }))
        .expect("the user's server");
    let url = theirs.url("postgres").expect("url");
    let sleeping_there = || {
        rt.block_on(async {
            let client = theirs.connect("postgres").await.expect("connect");
            let row = client
                .query_one("SELECT count(*) FROM pg_stat_activity WHERE wait_event = 'PgSleep'", &[])
                .await
                .expect("pg_stat_activity");
            row.get::<_, i64>(0) == 1
        })
    };

    let mut cmd = project.command("slow", false);
    cmd.args(["--analyze", "--repeat", "1", "--statement-timeout", "300", "--database-url", &url])
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let mut sluice = cmd.spawn().expect("spawn sluice");
    let deadline = Instant::now() + Duration::from_secs(180);
    while !sleeping_there() {
        if let Ok(Some(status)) = sluice.try_wait() {
            panic!("sluice ended before it could be interrupted: {status}");
        }
        assert!(Instant::now() < deadline, "the slow query never started");
        std::thread::sleep(Duration::from_millis(200));
    }
    let created = rt.block_on(theirs.databases_like("sluice\\_%")).expect("databases");
    assert!(!created.is_empty(), "the run works in its own sluice_* databases");

    signal(&sluice, nix::sys::signal::Signal::SIGTERM);
    let status = wait_exit(&mut sluice, Duration::from_secs(60));
    assert_eq!(status.code(), Some(128 + nix::sys::signal::Signal::SIGTERM as i32));
    let left = rt.block_on(theirs.databases_like("sluice\\_%")).expect("the server still answers");
    assert!(left.is_empty(), "the run's databases were dropped: {left:?}");
    assert!(!project.cache.join("pg15").exists(), "no server of Sluice's own was started");
    rt.block_on(theirs.shutdown(false)).expect("shutdown");
}

/// Both proofs, on a real server's own pid file: `/proc` (Linux) and, where there is no `/proc`,
/// the server answering on the pid file's socket. Each accepts only the postmaster serving that
/// data directory, started when the pid file says.
#[test]
fn a_pid_file_is_proven_ours_only_for_the_server_serving_that_directory_since_that_start() {
    use sluice::plan::postmaster::{identify, socket_proof, Owner, PidFile};
    require_postgres();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    let server =
        rt.block_on(Server::start(&ServerOptions { no_cache: true, ..ServerOptions::default() })).expect("server");
    let data = PathBuf::from(&server.location).join("data");
    let text = std::fs::read_to_string(data.join("postmaster.pid")).expect("pid file");
    let file = PidFile::parse(&text).expect("a pid file PostgreSQL wrote");
    assert_eq!(Some(file.pid), server.pid().map(|p| p as i32));
    let elsewhere = tempfile::tempdir().expect("tempdir");
    rt.block_on(async {
        assert_eq!(identify(&file, &data).await, Owner::Ours);
        assert_eq!(identify(&file, elsewhere.path()).await, Owner::Someone, "another data directory");
        assert!(socket_proof(&file, &data).await, "the server on its socket serves it");
        assert!(!socket_proof(&file, elsewhere.path()).await, "another data directory");
        let earlier = PidFile { start_time: file.start_time.map(|t| t - 3600), ..file.clone() };
        assert!(!socket_proof(&earlier, &data).await, "a pid file from an earlier start");
        let no_server = PidFile { socket_dir: Some(elsewhere.path().to_path_buf()), ..file.clone() };
        assert!(!socket_proof(&no_server, &data).await, "no server on that socket");
    });
    rt.block_on(server.shutdown(false)).expect("shutdown");
    assert_eq!(rt.block_on(identify(&file, &data)), Owner::Gone, "stopped: the pid file names no process");
}
