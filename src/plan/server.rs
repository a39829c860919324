//! Getting a PostgreSQL: an ephemeral server started from the local binaries, or a server the
//! user runs (`--database-url`, over TLS as its `sslmode` says). Whatever happens (success,
//! error, SIGINT/SIGTERM/SIGHUP), the server Sluice started is stopped and every database it
//! created for the run is dropped.
//!
//! The ephemeral cluster lives in a cache directory so the filled fixture (a template database)
//! survives between runs: a second run on the same base starts the existing cluster and skips
//! generation. A lock file keeps two Sluice processes from sharing one cluster at once, and
//! tells a later run which clusters a killed run left behind ([`super::postmaster`]).

use super::cleanup;
use super::postmaster;
pub(crate) use super::postmaster::SUPERUSER;
pub use super::target::{pg_message, quote_ident, Target};
pub use crate::cache::default_dir as default_cache_dir;
use crate::error::{Error, IoAction, Result};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use tokio_postgres::config::Host;
use tokio_postgres::Client;

/// Every database Sluice creates starts with this; it never touches any other.
pub const DB_PREFIX: &str = "sluice_";

pub const INSTALL_HINT: &str =
    "install PostgreSQL (Debian/Ubuntu: `apt-get install -y postgresql`; macOS: `brew install postgresql`) \
     or pass --database-url";

#[derive(Debug, Clone)]
pub struct ServerOptions {
    /// A server the user runs; Sluice then works only in `sluice_*` databases it creates.
    pub database_url: Option<String>,
    /// Where the ephemeral cluster is kept between runs; `None`: [`default_cache_dir`].
    pub cache_dir: Option<PathBuf>,
    /// Use a throwaway cluster in a temporary directory, removed at exit.
    pub no_cache: bool,
    pub connect_timeout: Duration,
    /// Further `name=value` settings for the ephemeral server, after Sluice's own (a test
    /// loads `pg_stat_statements` with `shared_preload_libraries=pg_stat_statements`).
    pub extra_settings: Vec<String>,
}

impl Default for ServerOptions {
    fn default() -> Self {
        ServerOptions {
            database_url: None,
            cache_dir: None,
            no_cache: false,
            connect_timeout: Duration::from_secs(30),
            extra_settings: Vec::new(),
        }
    }
}

/// Names the directory holding `initdb` and `postgres`, instead of searching for it.
pub const BINDIR_ENV: &str = "SLUICE_PG_BINDIR";

/// The directory holding `initdb`, `postgres`: `$SLUICE_PG_BINDIR` when set (and only it), else
/// `pg_config --bindir`, else the newest `/usr/lib/postgresql/*/bin`, else wherever `initdb` is
/// on PATH.
pub fn find_bindir() -> Result<PathBuf> {
    let has_tools = |dir: &Path| dir.join("initdb").is_file() && dir.join("postgres").is_file();
    // An explicit choice is never silently replaced by another installation.
    if let Some(dir) = std::env::var_os(BINDIR_ENV).filter(|d| !d.is_empty()) {
        let dir = PathBuf::from(dir);
        return if has_tools(&dir) {
            Ok(dir)
        } else {
            Err(Error::Other(format!(
                "{BINDIR_ENV}={}: no initdb and postgres there; point it at PostgreSQL's bin directory or unset it; \
                 {INSTALL_HINT}",
                dir.display()
            )))
        };
    }
    if let Ok(out) = Command::new("pg_config").arg("--bindir").output() {
        if out.status.success() {
            let dir = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
            if has_tools(&dir) {
                return Ok(dir);
            }
        }
    }
    let mut debian: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| Some((e.file_name().to_str()?.parse::<u32>().ok()?, e.path().join("bin"))))
        .filter(|(_, dir)| has_tools(dir))
        .collect();
    debian.sort();
    if let Some((_, dir)) = debian.pop() {
        return Ok(dir);
    }
    if let Some(path) = std::env::var_os("PATH") {
        if let Some(dir) = std::env::split_paths(&path).find(|d| has_tools(d)) {
            return Ok(dir);
        }
    }
    Err(Error::Other(format!(
        "no PostgreSQL server binaries found (looked at `pg_config --bindir`, /usr/lib/postgresql/*/bin and PATH for initdb and postgres); {INSTALL_HINT}"
    )))
}

/// The unprivileged account the server runs as when Sluice runs as root (initdb refuses root).
#[derive(Debug, Clone, Copy)]
struct RunAs {
    uid: nix::unistd::Uid,
    gid: nix::unistd::Gid,
}

fn run_as() -> Result<Option<RunAs>> {
    if !nix::unistd::Uid::effective().is_root() {
        return Ok(None);
    }
    for name in ["postgres", "nobody"] {
        if let Ok(Some(user)) = nix::unistd::User::from_name(name) {
            return Ok(Some(RunAs { uid: user.uid, gid: user.gid }));
        }
    }
    Err(Error::Other(
        "running as root, and PostgreSQL refuses to run as root, but there is no `postgres` or `nobody` user to run it as; \
         create one (`useradd --system postgres`) or run Sluice as another user"
            .into(),
    ))
}

fn chown(path: &Path, who: Option<RunAs>) -> Result<()> {
    if let Some(who) = who {
        nix::unistd::chown(path, Some(who.uid), Some(who.gid)).map_err(|e| {
            Error::Other(format!("{}: cannot hand the directory to the server user: {e}", path.display()))
        })?;
    }
    Ok(())
}

fn command(program: PathBuf, who: Option<RunAs>, cwd: &Path) -> Command {
    use std::os::unix::process::CommandExt;
    let mut cmd = Command::new(program);
    cmd.current_dir(cwd).stdin(Stdio::null());
    if let Some(who) = who {
        cmd.uid(who.uid.as_raw()).gid(who.gid.as_raw());
    }
    cmd
}

// ---------------------------------------------------------------------------------------------

struct Ephemeral {
    child: Child,
    /// Held for the life of the server: one Sluice per cluster.
    _lock: File,
    /// The throwaway cluster (`--no-cache`) and a socket directory outside the cluster, removed on drop.
    dirs: Vec<tempfile::TempDir>,
}

/// A PostgreSQL server Sluice may create databases on.
pub struct Server {
    target: Target,
    ephemeral: Option<Ephemeral>,
    /// `server_version_num`, e.g. 150008.
    pub version_num: u32,
    pub superuser: bool,
    /// Databases this run created and must drop.
    created: Vec<String>,
    /// Where the server is (for messages): the cluster directory, or the --database-url host.
    pub location: String,
    /// What Sluice cleaned up before starting (servers and clusters killed runs left behind).
    pub notes: Vec<String>,
}

/// The longest Unix socket path the platforms allow, less room for the socket's file name.
const SOCKET_PATH_MAX: usize = 100;

impl Server {
    /// A connection URL for `database` on the ephemeral server (Unix socket), e.g. for `psql`.
    pub fn url(&self, database: &str) -> Option<String> {
        let host = self.target.config.get_hosts().iter().find_map(|h| match h {
            Host::Unix(path) => Some(path.display().to_string()),
            _ => None,
        })?;
        let encoded: String = host
            .bytes()
            .map(|b| {
                if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                    (b as char).to_string()
                } else {
                    format!("%{b:02X}")
                }
            })
            .collect();
        Some(format!("postgresql://{SUPERUSER}@{encoded}:5432/{database}"))
    }

    /// The data directory of the server Sluice started (`None` for `--database-url`).
    pub fn data_dir(&self) -> Option<PathBuf> {
        self.ephemeral.as_ref().map(|_| PathBuf::from(&self.location).join("data"))
    }

    pub fn is_ephemeral(&self) -> bool {
        self.ephemeral.is_some()
    }

    /// The postmaster's PID, for an ephemeral server.
    pub fn pid(&self) -> Option<u32> {
        self.ephemeral.as_ref().map(|e| e.child.id())
    }

    pub async fn start(options: &ServerOptions) -> Result<Server> {
        match &options.database_url {
            Some(url) => Server::external(url, options).await,
            None => Server::ephemeral(options).await,
        }
    }

    async fn external(url: &str, options: &ServerOptions) -> Result<Server> {
        let target = Target::from_url(url, options.connect_timeout)?;
        let location = format!("the server at --database-url ({})", target.describe());
        let mut server = Server {
            target,
            ephemeral: None,
            version_num: 0,
            superuser: false,
            created: Vec::new(),
            location,
            notes: Vec::new(),
        };
        server.inspect().await?;
        Ok(server)
    }

    async fn ephemeral(options: &ServerOptions) -> Result<Server> {
        let bindir = find_bindir()?;
        let who = run_as()?;
        let major = server_major(&bindir)?;
        // Throwaway clusters of runs that were killed: nobody else will remove them.
        let mut notes = postmaster::reap_dead_runs().await;
        let mut dirs = Vec::new();
        let cluster_dir = if options.no_cache {
            let dir = tempfile::Builder::new()
                .prefix(postmaster::THROWAWAY_PREFIX)
                .tempdir()
                .map_err(|e| Error::Other(format!("cannot create a temporary directory: {e}")))?;
            let path = dir.path().to_path_buf();
            dirs.push(dir);
            path
        } else {
            options.cache_dir.clone().unwrap_or_else(default_cache_dir).join(format!("pg{major}"))
        };
        std::fs::create_dir_all(&cluster_dir).map_err(|e| Error::io_while(IoAction::Create, &cluster_dir, e))?;
        let lock = postmaster::lock_cluster(&cluster_dir)?;
        if let Some(who) = who {
            check_reachable(&cluster_dir, who)?;
        }
        chown(&cluster_dir, who)?;

        let data = cluster_dir.join("data");
        if data.join("PG_VERSION").is_file() {
            notes.extend(postmaster::clear_leftover(&data).await);
        } else {
            let _ = std::fs::remove_dir_all(&data);
            let out = command(bindir.join("initdb"), who, &cluster_dir)
                .args(["-D", "data", "-U", SUPERUSER, "-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync"])
                .output()
                .map_err(|e| Error::Other(format!("cannot run initdb: {e}")))?;
            if !out.status.success() {
                return Err(Error::Other(format!(
                    "initdb failed in {}: {}",
                    cluster_dir.display(),
                    String::from_utf8_lossy(&out.stderr).trim()
                )));
            }
        }

        let socket_path = socket_dir(&cluster_dir, who, &mut dirs)?;
        let log_path = cluster_dir.join("server.log");
        let log = File::create(&log_path).map_err(|e| Error::io_while(IoAction::Create, &log_path, e))?;
        chown(&log_path, who)?;
        let log2 = log.try_clone().map_err(|e| Error::write(&log_path, e))?;
        let mut cmd = command(bindir.join("postgres"), who, &cluster_dir);
        cmd.arg("-D").arg("data");
        for setting in settings(&socket_path).into_iter().chain(options.extra_settings.iter().cloned()) {
            cmd.arg("-c").arg(setting);
        }
        {
            use std::os::unix::process::CommandExt;
            // Its own process group: a terminal's Ctrl-C reaches Sluice, which drops databases
            // and then stops the server.
            cmd.process_group(0);
        }
        let child = cmd
            .stdout(Stdio::from(log))
            .stderr(Stdio::from(log2))
            .spawn()
            .map_err(|e| Error::Other(format!("cannot start postgres: {e}")))?;
        cleanup::server_started(child.id() as i32, dirs.iter().map(|d| d.path().to_path_buf()));

        let mut server = Server {
            target: Target::unix_socket(&socket_path, options.connect_timeout),
            ephemeral: Some(Ephemeral { child, _lock: lock, dirs }),
            version_num: 0,
            superuser: true,
            created: Vec::new(),
            location: cluster_dir.display().to_string(),
            notes,
        };
        server.wait_ready(&log_path, options.connect_timeout).await?;
        server.inspect().await?;
        server.drop_stale().await?;
        Ok(server)
    }

    async fn wait_ready(&mut self, log: &Path, timeout: Duration) -> Result<()> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(e) = self.ephemeral.as_mut() {
                if let Ok(Some(status)) = e.child.try_wait() {
                    let tail = std::fs::read_to_string(log).unwrap_or_default();
                    let tail: Vec<&str> = tail.lines().rev().take(8).collect();
                    let tail: Vec<&str> = tail.into_iter().rev().collect();
                    return Err(Error::Other(format!(
                        "the PostgreSQL server exited at start ({status}); its log ({}) ends:\n{}",
                        log.display(),
                        tail.join("\n")
                    )));
                }
            }
            if self.target.connect(self.target.maintenance_db()).await.is_ok() {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(Error::Other(format!(
                    "the PostgreSQL server did not accept connections within {}s; see {}",
                    timeout.as_secs(),
                    log.display()
                )));
            }
            tokio::time::sleep(Duration::from_millis(30)).await;
        }
    }

    async fn maintenance(&self) -> Result<Client> {
        self.target.connect_or_explain(self.target.maintenance_db()).await
    }

    async fn inspect(&mut self) -> Result<()> {
        let client = self.maintenance().await?;
        let row = client
            .query_one(
                "SELECT current_setting('server_version_num')::int, r.rolsuper, r.rolsuper OR r.rolcreatedb \
                 FROM pg_roles r WHERE r.rolname = current_user",
                &[],
            )
            .await
            .map_err(|e| Error::Other(format!("cannot inspect the server: {}", pg_message(&e))))?;
        self.version_num = row.get::<_, i32>(0) as u32;
        self.superuser = row.get(1);
        let can_create: bool = row.get(2);
        if !can_create {
            return Err(Error::Other(
                "the --database-url role may not create databases; Sluice works only in databases it creates (sluice_*). \
                 Grant CREATEDB to the role"
                    .into(),
            ));
        }
        Ok(())
    }

    /// In our own cluster (locked, so nobody else is using it): leftovers of an interrupted run.
    async fn drop_stale(&mut self) -> Result<()> {
        let client = self.maintenance().await?;
        let rows = client
            .query(
                "SELECT datname FROM pg_database WHERE datname LIKE 'sluice\\_head\\_%' OR datname LIKE 'sluice\\_build\\_%'",
                &[],
            )
            .await
            .map_err(|e| Error::Other(pg_message(&e)))?;
        for row in rows {
            let name: String = row.get(0);
            self.drop_database(&name).await?;
        }
        Ok(())
    }

    pub async fn connect(&self, dbname: &str) -> Result<Client> {
        self.target.connect(dbname).await.map_err(|e| {
            Error::Other(format!("cannot connect to database {dbname} on {}: {}", self.location, pg_message(&e)))
        })
    }

    /// Creates `name` (which must carry the `sluice_` prefix), optionally as a copy of `template`.
    pub async fn create_database(&mut self, name: &str, template: Option<&str>) -> Result<()> {
        assert!(name.starts_with(DB_PREFIX), "Sluice only creates sluice_* databases");
        let client = self.maintenance().await?;
        let mut sql = format!("CREATE DATABASE {}", quote_ident(name));
        if let Some(t) = template {
            sql.push_str(&format!(" TEMPLATE {}", quote_ident(t)));
            // A file copy beats WAL-logging every block of a multi-gigabyte fixture.
            if self.version_num >= 150000 {
                sql.push_str(" STRATEGY FILE_COPY");
            }
        }
        self.created.push(name.to_string());
        cleanup::database_created(&self.target, name);
        client
            .batch_execute(&sql)
            .await
            .map_err(|e| Error::Other(format!("cannot create database {name}: {}", pg_message(&e))))
    }

    /// Drops a database this run created (or a stale one in Sluice's own cluster).
    pub async fn drop_database(&mut self, name: &str) -> Result<()> {
        assert!(name.starts_with(DB_PREFIX), "Sluice only drops sluice_* databases");
        self.target.drop_database(name).await?;
        self.forget(name);
        Ok(())
    }

    /// The database is no longer this run's to drop (it became the cached template, or `--keep`).
    pub fn forget(&mut self, name: &str) {
        self.created.retain(|n| n != name);
        cleanup::database_settled(name);
    }

    pub async fn rename_database(&mut self, from: &str, to: &str) -> Result<()> {
        assert!(from.starts_with(DB_PREFIX) && to.starts_with(DB_PREFIX));
        let client = self.maintenance().await?;
        client
            .batch_execute(&format!("ALTER DATABASE {} RENAME TO {}", quote_ident(from), quote_ident(to)))
            .await
            .map_err(|e| Error::Other(format!("cannot rename database {from}: {}", pg_message(&e))))?;
        if self.created.iter().any(|n| n == from) {
            self.forget(from);
            self.created.push(to.to_string());
            cleanup::database_created(&self.target, to);
        }
        Ok(())
    }

    pub async fn database_exists(&self, name: &str) -> Result<bool> {
        let client = self.maintenance().await?;
        let row = client
            .query_one("SELECT count(*) FROM pg_database WHERE datname = $1", &[&name])
            .await
            .map_err(|e| Error::Other(pg_message(&e)))?;
        Ok(row.get::<_, i64>(0) > 0)
    }

    /// `sluice_*` databases on the server, for cache eviction.
    pub async fn databases_like(&self, pattern: &str) -> Result<Vec<(String, Option<String>)>> {
        let client = self.maintenance().await?;
        let rows = client
            .query(
                "SELECT datname, shobj_description(oid, 'pg_database') FROM pg_database WHERE datname LIKE $1",
                &[&pattern],
            )
            .await
            .map_err(|e| Error::Other(pg_message(&e)))?;
        Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
    }

    pub async fn comment_database(&self, name: &str, comment: &str) -> Result<()> {
        assert!(name.starts_with(DB_PREFIX));
        let client = self.maintenance().await?;
        client
            .batch_execute(&format!(
                "COMMENT ON DATABASE {} IS {}",
                quote_ident(name),
                crate::plan::scale::quote_literal(comment)
            ))
            .await
            .map_err(|e| Error::Other(pg_message(&e)))
    }

    /// Drops what this run created (unless `keep`) and stops the server Sluice started.
    pub async fn shutdown(mut self, keep: bool) -> Result<Vec<String>> {
        let mut first_error = None;
        let created = std::mem::take(&mut self.created);
        if keep {
            for name in &created {
                self.forget(name);
            }
        } else {
            for name in &created {
                if let Err(e) = self.drop_database(name).await {
                    first_error.get_or_insert(e);
                }
            }
        }
        drop(self);
        match first_error {
            Some(e) => Err(e),
            None => Ok(if keep { created } else { Vec::new() }),
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(e) = self.ephemeral.take() {
            let pid = e.child.id() as i32;
            postmaster::stop(pid, Duration::from_secs(15));
            let dirs: Vec<PathBuf> = e.dirs.iter().map(|d| d.path().to_path_buf()).collect();
            cleanup::server_stopped(pid, &dirs);
            // Dropping `e` removes the temporary directories and releases the lock.
        }
    }
}

/// The server's settings: a private socket, no TCP, and tuned for loading a fixture fast
/// (nothing here needs to survive a crash: the fixture can always be rebuilt).
fn settings(socket_dir: &Path) -> Vec<String> {
    vec![
        "listen_addresses=".into(),
        format!("unix_socket_directories={}", socket_dir.display()),
        "port=5432".into(),
        "fsync=off".into(),
        "synchronous_commit=off".into(),
        "full_page_writes=off".into(),
        // With wal_level=minimal, a table truncated and filled in one transaction skips the WAL.
        "wal_level=minimal".into(),
        "max_wal_senders=0".into(),
        "max_wal_size=8GB".into(),
        "checkpoint_timeout=1h".into(),
        "shared_buffers=256MB".into(),
        "maintenance_work_mem=512MB".into(),
        "work_mem=32MB".into(),
        "max_parallel_maintenance_workers=2".into(),
        // Statistics come only from Sluice's own ANALYZE, so plans are reproducible.
        "autovacuum=off".into(),
        "jit=off".into(),
        "max_connections=30".into(),
    ]
}

/// The server's socket directory: `socket/` in the cluster directory, emptied of what a dead
/// server left (its lock file names a PID that may since belong to anyone), or a fresh
/// temporary directory when the cluster's path is too long for a socket.
fn socket_dir(cluster_dir: &Path, who: Option<RunAs>, dirs: &mut Vec<tempfile::TempDir>) -> Result<PathBuf> {
    let inside = cluster_dir.canonicalize().map_err(|e| Error::io(cluster_dir, e))?.join("socket");
    let path = if inside.as_os_str().len() + ".s.PGSQL.5432".len() < SOCKET_PATH_MAX {
        let _ = std::fs::remove_dir_all(&inside);
        std::fs::create_dir(&inside).map_err(|e| Error::io_while(IoAction::Create, &inside, e))?;
        inside
    } else {
        let dir = tempfile::Builder::new()
            .prefix(postmaster::SOCKET_PREFIX)
            .tempdir()
            .map_err(|e| Error::Other(format!("cannot create a socket directory: {e}")))?;
        let path = dir.path().to_path_buf();
        dirs.push(dir);
        path
    };
    chown(&path, who)?;
    Ok(path)
}

fn server_major(bindir: &Path) -> Result<u32> {
    let out = Command::new(bindir.join("postgres"))
        .arg("--version")
        .output()
        .map_err(|e| Error::Other(format!("cannot run {}/postgres: {e}", bindir.display())))?;
    let text = String::from_utf8_lossy(&out.stdout);
    // "postgres (PostgreSQL) 15.8 (Debian 15.8-0+deb12u1)"
    text.split_whitespace()
        .find_map(|w| w.split('.').next()?.parse::<u32>().ok())
        .ok_or_else(|| Error::Other(format!("cannot read the PostgreSQL version from `{}`", text.trim())))
}

/// The server user must be able to walk into the cluster directory.
fn check_reachable(dir: &Path, who: RunAs) -> Result<()> {
    use std::os::unix::fs::MetadataExt;
    for ancestor in dir.ancestors().skip(1) {
        let Ok(meta) = std::fs::metadata(ancestor) else {
            continue;
        };
        let mode = meta.mode();
        let ok = mode & 0o001 != 0
            || (meta.uid() == who.uid.as_raw() && mode & 0o100 != 0)
            || (meta.gid() == who.gid.as_raw() && mode & 0o010 != 0);
        if !ok {
            return Err(Error::Other(format!(
                "the PostgreSQL server runs as an unprivileged user when Sluice runs as root, and that user cannot enter {}; \
                 choose a cache directory it can reach (--cache-dir or SLUICE_CACHE_DIR, e.g. /var/tmp/sluice)",
                ancestor.display()
            )));
        }
    }
    Ok(())
}
