//! Shared by the plan tests: they run against a real ephemeral PostgreSQL started by Sluice.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// Fails (never skips) when the PostgreSQL server binaries are missing.
pub fn require_postgres() {
    if let Err(e) = sluice::plan::server::find_bindir() {
        panic!("these tests need the PostgreSQL server binaries (initdb, postgres): {e}. On Debian/Ubuntu: apt-get install -y postgresql");
    }
}

pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

pub fn fixture(name: &str) -> PathBuf {
    repo().join("fixtures").join(name).join("plan")
}

/// Writes a file, creating its directory.
pub fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(path, text).expect("write");
}

/// A cache directory the unprivileged server user can enter when the tests run as root.
pub fn cache_dir() -> tempfile::TempDir {
    let dir = tempfile::Builder::new().prefix("sluice-test-cache-").tempdir_in("/var/tmp").expect("tempdir");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).expect("chmod");
    dir
}

pub fn json(output: &std::process::Output) -> serde_json::Value {
    serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}):\n{}\nstderr:\n{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )
    })
}

pub fn findings<'a>(doc: &'a serde_json::Value, rule: &str) -> Vec<&'a serde_json::Value> {
    doc["findings"].as_array().expect("findings").iter().filter(|f| f["rule"] == rule).collect()
}

/// The cluster a run left in `cache`, started again, and the name of its one cached fixture.
pub async fn cached_template(cache: &Path) -> (sluice::plan::server::Server, String) {
    let options = sluice::plan::ServerOptions { cache_dir: Some(cache.to_path_buf()), ..Default::default() };
    let server = sluice::plan::server::Server::start(&options).await.expect("the cached cluster");
    let admin = server.connect("postgres").await.expect("connect");
    let template: String = admin
        .query_one("SELECT datname::text FROM pg_database WHERE datname LIKE 'sluice\\_tpl\\_%'", &[])
        .await
        .expect("one cached fixture")
        .get(0);
    (server, template)
}
