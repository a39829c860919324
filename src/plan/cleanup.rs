//! What a signal must undo. While Sluice runs a server or holds databases on one, SIGINT, SIGTERM
//! and SIGHUP (Ctrl-C, `kill`, a closed terminal or a cancelled CI job) drop the databases this
//! run created, stop the server it started and remove its throwaway directories, then exit with
//! 128 + the signal number. SIGKILL cannot be caught: the next run reaps what it leaves
//! ([`super::postmaster`]).

use super::postmaster;
use super::target::Target;
use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

/// A signal arrived: the handler is undoing the run and will exit the process.
static INTERRUPTED: AtomicBool = AtomicBool::new(false);

#[derive(Default)]
struct Pending {
    /// Servers this process started.
    pids: Vec<i32>,
    dirs: Vec<PathBuf>,
    /// (where, name) of the databases this run created.
    databases: Vec<(Target, String)>,
}

fn pending() -> &'static Mutex<Pending> {
    static PENDING: OnceLock<Mutex<Pending>> = OnceLock::new();
    PENDING.get_or_init(|| {
        install();
        Mutex::new(Pending::default())
    })
}

/// A thread that waits for the signals and undoes the pending work.
fn install() {
    let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP]) else {
        return;
    };
    let _ = std::thread::Builder::new().name("sluice-signals".into()).spawn(move || {
        if let Some(signal) = signals.forever().next() {
            INTERRUPTED.store(true, Ordering::SeqCst);
            let name = match signal {
                SIGINT => "SIGINT",
                SIGTERM => "SIGTERM",
                _ => "SIGHUP",
            };
            eprintln!("sluice: {name}: stopping the PostgreSQL server and dropping the databases this run created");
            undo();
            std::process::exit(128 + signal);
        }
    });
}

fn undo() {
    let work = match pending().lock() {
        Ok(mut p) => std::mem::take(&mut *p),
        Err(_) => return,
    };
    if !work.databases.is_empty() {
        if let Ok(rt) = tokio::runtime::Builder::new_current_thread().enable_all().build() {
            rt.block_on(async {
                for (target, name) in &work.databases {
                    let _ = tokio::time::timeout(Duration::from_secs(10), target.drop_database(name)).await;
                }
            });
        }
    }
    for pid in &work.pids {
        postmaster::stop(*pid, Duration::from_secs(10));
    }
    for dir in &work.dirs {
        let _ = std::fs::remove_dir_all(dir);
    }
}

/// Called by the main thread when it is done with the server: after a signal, the run's outcome
/// is the handler's to report (its exit status), not an error about a server that went away.
pub fn yield_to_signal_handler() {
    while INTERRUPTED.load(Ordering::SeqCst) {
        std::thread::park();
    }
}

fn with_pending(f: impl FnOnce(&mut Pending)) {
    if let Ok(mut p) = pending().lock() {
        f(&mut p);
    }
}

/// A server this process started, and the directories to remove with it.
pub fn server_started(pid: i32, dirs: impl IntoIterator<Item = PathBuf>) {
    with_pending(|p| {
        p.pids.push(pid);
        p.dirs.extend(dirs);
    });
}

/// The server is stopped and its directories removed (or about to be, by their owner).
pub fn server_stopped(pid: i32, dirs: &[PathBuf]) {
    with_pending(|p| {
        p.pids.retain(|&x| x != pid);
        p.dirs.retain(|d| !dirs.contains(d));
    });
}

pub fn database_created(target: &Target, name: &str) {
    with_pending(|p| p.databases.push((target.clone(), name.to_string())));
}

/// Dropped, or no longer this run's to drop (kept, or become the cached fixture).
pub fn database_settled(name: &str) {
    with_pending(|p| p.databases.retain(|(_, n)| n != name));
}
