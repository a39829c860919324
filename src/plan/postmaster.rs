//! The servers Sluice starts, and the proof it demands before it signals one.
//!
//! A `postmaster.pid` outlives its server (SIGKILL, a reboot, a container restart), and the PID
//! in it may since belong to any process. Sluice signals a process only when it can prove that
//! the process is the postmaster serving that very data directory:
//! - on Linux, from `/proc`: a postmaster changes into its data directory at start, so its
//!   working directory must be that directory and its executable must be `postgres`;
//! - elsewhere, by connecting to the socket the pid file names and asking the server for its
//!   data directory and start time, which must match the pid file.
//!
//! Anything else is left alone. Each cluster directory also holds `sluice.lock`, locked by the
//! Sluice that uses the cluster for as long as it runs (the kernel releases it when that process
//! dies, however it dies), with that process's PID in it: a cluster whose lock is free belongs to
//! no running Sluice, which is how a later run finds what a killed run left behind.

use crate::error::{Error, IoAction, Result};
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

/// The superuser the ephemeral cluster is initialised with.
pub(crate) const SUPERUSER: &str = "sluice";

/// The lock file in every cluster directory.
pub const LOCK_FILE: &str = "sluice.lock";
/// Throwaway clusters (`--no-cache`) are temporary directories named so.
pub const THROWAWAY_PREFIX: &str = "sluice-pg-";
/// Socket directories outside a cluster (when its path is too long for a socket) are named so.
pub const SOCKET_PREFIX: &str = "sluice-sock-";

/// What a data directory's `postmaster.pid` says (PostgreSQL's `miscadmin.h` lists the lines).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PidFile {
    pub pid: i32,
    /// Seconds since the epoch when the postmaster started.
    pub start_time: Option<i64>,
    pub port: Option<u16>,
    pub socket_dir: Option<PathBuf>,
}

impl PidFile {
    pub fn parse(text: &str) -> Option<PidFile> {
        let lines: Vec<&str> = text.lines().map(str::trim).collect();
        let pid = lines.first()?.parse::<i32>().ok().filter(|&p| p > 0)?;
        let socket_dir = lines.get(4).filter(|l| !l.is_empty()).map(PathBuf::from);
        Some(PidFile {
            pid,
            start_time: lines.get(2).and_then(|l| l.parse().ok()),
            port: lines.get(3).and_then(|l| l.parse().ok()),
            socket_dir,
        })
    }
}

/// Whose process a pid file names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Owner {
    /// No such process (or only a zombie): the pid file is stale.
    Gone,
    /// Proven to be the postmaster serving the data directory.
    Ours,
    /// A live process Sluice cannot prove is that postmaster: never signalled.
    Someone,
}

/// The process exists (a zombie does not count; one we may not signal does).
pub fn alive(pid: i32) -> bool {
    use nix::errno::Errno;
    let exists = match nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None) {
        Ok(()) | Err(Errno::EPERM) => true,
        Err(_) => false,
    };
    exists && !is_zombie(pid)
}

fn is_zombie(pid: i32) -> bool {
    // `/proc/PID/stat`: "pid (comm) state …"; comm may contain spaces and parentheses.
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| stat.rsplit_once(')').map(|(_, rest)| rest.trim_start().starts_with('Z')))
        .unwrap_or(false)
}

/// Linux: is `pid` a `postgres` executable whose working directory is `data`? `None` without `/proc`.
fn proc_proof(pid: i32, data: &Path) -> Option<bool> {
    if !Path::new("/proc/self/cwd").exists() {
        return None;
    }
    let proc = PathBuf::from(format!("/proc/{pid}"));
    let Ok(data) = data.canonicalize() else { return Some(false) };
    let cwd = std::fs::read_link(proc.join("cwd")).ok();
    let exe = std::fs::read_link(proc.join("exe")).ok();
    let is_postgres = exe
        .as_deref()
        .and_then(Path::file_name)
        .and_then(|n| n.to_str())
        // A binary replaced by a package upgrade shows as "postgres (deleted)".
        .is_some_and(|n| n.trim_end_matches(" (deleted)") == "postgres");
    Some(is_postgres && cwd.as_deref() == Some(data.as_path()))
}

/// Elsewhere: does the server answering on the pid file's socket serve `data`, started when the
/// pid file says? Then the pid file is that live server's own.
pub async fn socket_proof(file: &PidFile, data: &Path) -> bool {
    let (Some(socket_dir), Some(port), Some(started)) = (&file.socket_dir, file.port, file.start_time) else {
        return false;
    };
    let mut config = tokio_postgres::Config::new();
    config.host_path(socket_dir).port(port).user(SUPERUSER).dbname("postgres").connect_timeout(Duration::from_secs(5));
    let Ok(Ok((client, connection))) =
        tokio::time::timeout(Duration::from_secs(5), config.connect(tokio_postgres::NoTls)).await
    else {
        return false;
    };
    tokio::spawn(connection);
    let row = client
        .query_one(
            "SELECT current_setting('data_directory'), extract(epoch FROM pg_postmaster_start_time())::int8",
            &[],
        )
        .await;
    let Ok(row) = row else { return false };
    let (served, server_started): (String, i64) = (row.get(0), row.get(1));
    let same_dir = match (Path::new(&served).canonicalize(), data.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    };
    // The pid file's time and the server's are taken a moment apart during start.
    same_dir && (server_started - started).abs() <= 2
}

/// Whose process `file` names, for the cluster whose data directory is `data`.
pub async fn identify(file: &PidFile, data: &Path) -> Owner {
    if !alive(file.pid) {
        return Owner::Gone;
    }
    let proven = match proc_proof(file.pid, data) {
        Some(proven) => proven,
        None => socket_proof(file, data).await,
    };
    if proven {
        Owner::Ours
    } else {
        Owner::Someone
    }
}

/// Fast shutdown (SIGINT), escalating to SIGQUIT and SIGKILL if the server does not go. Only
/// for a server this process started or one [`identify`] proved ours.
pub fn stop(pid: i32, patience: Duration) {
    use nix::sys::signal::{kill, Signal};
    use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
    let target = nix::unistd::Pid::from_raw(pid);
    let gone = |deadline: Instant| loop {
        match waitpid(target, Some(WaitPidFlag::WNOHANG)) {
            Ok(WaitStatus::StillAlive) => {}
            Ok(_) => return true,
            // Not our child (left by an earlier run): watch it instead.
            Err(_) if alive(pid) => {}
            Err(_) => return true,
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    for signal in [Signal::SIGINT, Signal::SIGQUIT, Signal::SIGKILL] {
        if kill(target, signal).is_err() || gone(Instant::now() + patience) {
            return;
        }
    }
}

/// A socket directory Sluice made outside a cluster: removed with the cluster's leftovers.
fn is_own_socket_dir(dir: &Path) -> bool {
    dir.parent() == Some(std::env::temp_dir().as_path())
        && dir.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with(SOCKET_PREFIX))
}

/// Before a server starts on `data` (whose cluster lock this process holds): stops the server a
/// dead Sluice left running there, once proven ours, and removes a stale `postmaster.pid`, which
/// would otherwise keep PostgreSQL from starting. A process the file names that is not proven
/// ours is left alone. Returns what was done, for a note.
pub async fn clear_leftover(data: &Path) -> Option<String> {
    let path = data.join("postmaster.pid");
    let text = std::fs::read_to_string(&path).ok()?;
    let Some(file) = PidFile::parse(&text) else {
        let _ = std::fs::remove_file(&path);
        return Some(format!("removed {}, which names no process", path.display()));
    };
    let note = match identify(&file, data).await {
        Owner::Gone => None,
        Owner::Ours => {
            stop(file.pid, Duration::from_secs(15));
            Some(format!(
                "stopped the PostgreSQL server (PID {}) that an unfinished Sluice run left running on {}",
                file.pid,
                data.display()
            ))
        }
        Owner::Someone => Some(format!(
            "{} named PID {}, which is not this cluster's server (the file is stale); that process was left alone",
            path.display(),
            file.pid
        )),
    };
    // A clean shutdown removes it; after SIGKILL or a stale file it stays.
    let _ = std::fs::remove_file(&path);
    if let Some(dir) = file.socket_dir.filter(|d| is_own_socket_dir(d)) {
        let _ = std::fs::remove_dir_all(dir);
    }
    note
}

/// Locks the cluster directory for this process, waiting (up to 30 minutes) while another
/// Sluice holds it, and records this process's PID in the lock file.
pub fn lock_cluster(dir: &Path) -> Result<File> {
    let path = dir.join(LOCK_FILE);
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .map_err(|e| Error::io_while(IoAction::Create, &path, e))?;
    let deadline = Instant::now() + Duration::from_secs(30 * 60);
    let mut said = false;
    loop {
        match file.try_lock() {
            Ok(()) => break,
            Err(std::fs::TryLockError::WouldBlock) if Instant::now() < deadline => {
                if !said {
                    eprintln!("sluice: waiting for another `sluice plan` using {}", dir.display());
                    said = true;
                }
                std::thread::sleep(Duration::from_millis(200));
            }
            Err(std::fs::TryLockError::WouldBlock) => {
                return Err(Error::Other(format!(
                    "another Sluice has held {} for 30 minutes; giving up (use --cache-dir or --no-cache)",
                    path.display()
                )))
            }
            Err(std::fs::TryLockError::Error(e)) => return Err(Error::io_while(IoAction::Lock, &path, e)),
        }
    }
    file.set_len(0).and_then(|()| write!(file, "{}", std::process::id())).map_err(|e| Error::write(&path, e))?;
    Ok(file)
}

fn age(path: &Path) -> Duration {
    std::fs::metadata(path)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| SystemTime::now().duration_since(t).ok())
        .unwrap_or_default()
}

/// Throwaway clusters (`--no-cache`) in the temporary directory whose Sluice is gone (killed
/// before it could clean up): stops their servers (proven ours) and removes them. A cluster
/// whose lock is held belongs to a running Sluice and is left alone. Returns notes.
pub async fn reap_dead_runs() -> Vec<String> {
    let mut notes = Vec::new();
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else { return notes };
    for entry in entries.flatten() {
        let dir = entry.path();
        let is_throwaway = entry.file_name().to_str().is_some_and(|n| n.starts_with(THROWAWAY_PREFIX));
        if !is_throwaway || !entry.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        if let Some(note) = reap(&dir).await {
            notes.push(note);
        }
    }
    notes
}

async fn reap(dir: &Path) -> Option<String> {
    let lock_path = dir.join(LOCK_FILE);
    let Ok(lock) = std::fs::OpenOptions::new().read(true).write(true).open(&lock_path) else {
        // A run that died between creating the directory and its lock leaves it empty; a run
        // starting right now is in that moment too, so only old ones go.
        if age(dir) > Duration::from_secs(600) {
            let _ = std::fs::remove_dir_all(dir);
        }
        return None;
    };
    if lock.try_lock().is_err() {
        return None; // its Sluice is running
    }
    let owner = std::fs::read_to_string(&lock_path).unwrap_or_default();
    if owner.trim().is_empty() && age(&lock_path) < Duration::from_secs(60) {
        return None; // its Sluice has just locked it and is writing its PID
    }
    let stopped = clear_leftover(&dir.join("data")).await;
    std::fs::remove_dir_all(dir).ok()?;
    let owner = owner.trim();
    Some(match stopped {
        Some(what) => format!(
            "removed the throwaway cluster {} of a Sluice run (PID {owner}) that did not finish; {what}",
            dir.display()
        ),
        None => {
            format!("removed the throwaway cluster {} of a Sluice run (PID {owner}) that did not finish", dir.display())
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pid_file_lines_are_read_as_postgres_writes_them() {
        let text = "4242\n/var/tmp/sluice/pg15/data\n1764528000\n5432\n/var/tmp/sluice/pg15/socket\n\n  5432001     32768\nready   \n";
        let file = PidFile::parse(text).expect("parses");
        assert_eq!(file.pid, 4242);
        assert_eq!(file.start_time, Some(1764528000));
        assert_eq!(file.port, Some(5432));
        assert_eq!(file.socket_dir, Some(PathBuf::from("/var/tmp/sluice/pg15/socket")));
        assert_eq!(PidFile::parse("garbage\n"), None);
        assert_eq!(PidFile::parse("-1\n"), None);
        assert_eq!(PidFile::parse("17\n").map(|f| f.pid), Some(17), "a truncated file still names its PID");
    }

    #[test]
    fn a_process_serving_another_directory_is_not_proven_ours() {
        // This test process is not `postgres` and does not run in that directory.
        let dir = tempfile::tempdir().expect("tempdir");
        assert_eq!(proc_proof(std::process::id() as i32, dir.path()), Some(false));
        assert!(alive(std::process::id() as i32));
    }
}
