//! Freeze calendars for the tests: a project directory holding a calendar (and overrides), the
//! built binary run in it, and the calendar and override the `sluice check` tests deploy
//! against.

use assert_cmd::Command;
use serde_json::Value;
use std::path::Path;
use std::time::Duration;

/// A project directory with `calendar` as `policies/freeze.toml` and, when given, `overrides` as
/// `policies/overrides.toml`.
pub fn calendar_project(calendar: &str, overrides: Option<&str>) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("policies")).unwrap();
    std::fs::write(dir.path().join("policies/freeze.toml"), calendar).unwrap();
    if let Some(o) = overrides {
        std::fs::write(dir.path().join("policies/overrides.toml"), o).unwrap();
    }
    dir
}

/// Exit code, stdout and stderr of `sluice ARGS` in `dir` with `env` set: the calendar cache
/// in the test's directory (not the machine's shared one), no `COLUMNS` from the terminal the
/// tests run in, at most a minute.
pub fn sluice_env(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> (i32, String, String) {
    let mut cmd = Command::cargo_bin("sluice").unwrap();
    cmd.current_dir(dir).args(args).env_remove("COLUMNS").env("SLUICE_CACHE_DIR", dir.join(".cache"));
    cmd.timeout(Duration::from_secs(60));
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// [`sluice_env`] with nothing more set.
pub fn sluice(dir: &Path, args: &[&str]) -> (i32, String, String) {
    sluice_env(dir, args, &[])
}

pub fn json(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

/// A deny window from seven days before the Spring Bird Count (17–19 May 2026, London) until it ends.
pub const FREEZE: &str = "[[event]]
id = \"spring-count\"
name = \"Spring Bird Count\"
timezone = \"Europe/London\"
start = \"2026-05-17T00:00\"
end = \"2026-05-19T00:00\"

[[window]]
id = \"bird-count-freeze\"
kind = \"deny\"
event = \"spring-count\"
lead = \"P7D\"
environments = [\"production\"]
reason = \"No production changes before the count.\"
";

/// An override of that window for the `api` service, 11:00–14:00 UTC on 12 May 2026.
pub const OVERRIDE: &str = "[[override]]
id = \"ovr-1\"
windows = [\"bird-count-freeze\"]
services = [\"api\"]
environments = [\"production\"]
requested_by = \"alice\"
approved_by = \"bob\"
reason = \"SEV-1 fix\"
ticket = \"INC-7\"
not_before = \"2026-05-12T11:00:00Z\"
expires_at = \"2026-05-12T14:00:00Z\"
";

/// The `sluice check` arguments that ask whether `api` may deploy to production at `at`.
pub fn deploy(at: &str) -> [&str; 6] {
    ["--env", "production", "--service", "api", "--at", at]
}
