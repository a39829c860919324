//! The GitHub Action's install step (`.github/actions/sluice/install.sh`), run for real against a
//! release laid out in a local directory and reached through a `file://` URL: it installs a
//! verified archive, refuses a bad checksum or a missing checksum file, and builds from source
//! only when no archive matches. The archive that is installed holds the `sluice` binary this
//! test run built; the archives that must be refused hold a small stand-in (packing the
//! 250 MB debug binary for each case would only slow the tests down).

use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::process::Command;

const VERSION: &str = env!("CARGO_PKG_VERSION");
const TARGET: &str = "x86_64-unknown-linux-musl";

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(".github/actions/sluice/install.sh")
}

struct Release {
    dir: tempfile::TempDir,
}

impl Release {
    /// A release whose archive holds the `sluice` binary built for this test run.
    fn new() -> Release {
        Release::holding(|path| {
            std::fs::copy(env!("CARGO_BIN_EXE_sluice"), path).unwrap();
        })
    }

    /// A release whose archive holds a stand-in that answers `--version` like sluice.
    fn with_stand_in() -> Release {
        Release::with_stand_in_of(VERSION)
    }

    fn with_stand_in_of(version: &str) -> Release {
        Release::holding(|path| {
            std::fs::write(path, format!("#!/bin/sh\necho 'sluice {version}'\n")).unwrap();
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
        })
    }

    /// `releases/vVERSION/` with the archive for TARGET (the binary under a top-level folder,
    /// as the release workflow packs it) and a SHA256SUMS listing it.
    fn holding(write_binary: impl FnOnce(&Path)) -> Release {
        let dir = tempfile::tempdir().unwrap();
        let release = Release { dir };
        let stem = format!("sluice-v{VERSION}-{TARGET}");
        let staging = release.path().join("staging").join(&stem);
        std::fs::create_dir_all(&staging).unwrap();
        write_binary(&staging.join("sluice"));
        std::fs::write(staging.join("README.md"), "# Sluice\n").unwrap();
        std::fs::create_dir_all(release.tag_dir()).unwrap();
        // gzip -1: the debug binary is large, and the compression level is not under test.
        let status = Command::new("tar")
            .args(["-I", "gzip -1", "-cf"])
            .arg(release.archive())
            .arg("-C")
            .arg(release.path().join("staging"))
            .arg(&stem)
            .status()
            .unwrap();
        assert!(status.success());
        release.write_sums(&hex::encode(Sha256::digest(std::fs::read(release.archive()).unwrap())));
        release
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn tag_dir(&self) -> PathBuf {
        self.path().join("releases").join(format!("v{VERSION}"))
    }

    fn archive(&self) -> PathBuf {
        self.tag_dir().join(format!("sluice-v{VERSION}-{TARGET}.tar.gz"))
    }

    fn write_sums(&self, sha256: &str) {
        let other = "0".repeat(64);
        let sums = format!(
            "{other}  sluice-v{VERSION}-aarch64-apple-darwin.tar.gz\n{sha256}  sluice-v{VERSION}-{TARGET}.tar.gz\n"
        );
        std::fs::write(self.tag_dir().join("SHA256SUMS"), sums).unwrap();
    }

    fn dest(&self) -> PathBuf {
        self.path().join("installed")
    }

    /// A `cargo` that records how it was called, standing in for the (slow) build fallback.
    fn fake_cargo(&self) -> PathBuf {
        let bin = self.path().join("fake-bin");
        std::fs::create_dir_all(&bin).unwrap();
        let cargo = bin.join("cargo");
        let log = self.path().join("cargo.log");
        std::fs::write(&cargo, format!("#!/bin/sh\necho \"$@\" >> '{}'\n", log.display())).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&cargo, std::fs::Permissions::from_mode(0o755)).unwrap();
        bin
    }

    fn cargo_calls(&self) -> String {
        std::fs::read_to_string(self.path().join("cargo.log")).unwrap_or_default()
    }

    /// Runs the script with the local release as its base URL; returns (exit code, stderr).
    fn install(&self, extra: &[&str]) -> (i32, String) {
        // Never skipped: the script downloads with curl, as on GitHub's runners.
        assert!(
            Command::new("curl").arg("--version").output().is_ok_and(|o| o.status.success()),
            "this test needs curl: `apt-get install -y curl` (`bash .ci/run` installs it)"
        );
        let path = format!("{}:{}", self.fake_cargo().display(), std::env::var("PATH").unwrap_or_default());
        let output = Command::new("bash")
            .arg(script())
            .arg("--dest")
            .arg(self.dest())
            .arg("--base-url")
            .arg(format!("file://{}", self.path().join("releases").display()))
            .args(extra)
            .env("PATH", path)
            .output()
            .unwrap();
        (output.status.code().unwrap(), String::from_utf8_lossy(&output.stderr).into_owned())
    }

    fn installed(&self) -> PathBuf {
        self.dest().join("bin").join("sluice")
    }
}

#[test]
fn a_verified_archive_is_installed_and_runs() {
    let release = Release::new();
    let (code, stderr) = release.install(&["--target", TARGET, "--ref", &format!("v{VERSION}")]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains(&format!("installed sluice {VERSION} ({TARGET}, sha256 ")), "{stderr}");
    let output = Command::new(release.installed()).arg("--version").output().unwrap();
    assert_eq!(String::from_utf8_lossy(&output.stdout).trim(), format!("sluice {VERSION}"));
    assert_eq!(release.cargo_calls(), "", "nothing was built");
}

#[test]
fn a_bad_checksum_is_refused_and_never_falls_back_to_building() {
    let release = Release::with_stand_in();
    release.write_sums(&"ab".repeat(32));
    let (code, stderr) = release.install(&["--target", TARGET]);
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains(&format!(
            "checksum mismatch for sluice-v{VERSION}-{TARGET}.tar.gz: expected {}",
            "ab".repeat(32)
        )),
        "{stderr}"
    );
    assert!(stderr.contains("refusing to install it"), "{stderr}");
    assert!(!release.installed().exists());
    assert_eq!(release.cargo_calls(), "");

    // A tampered archive under the original checksum fails the same way.
    let release = Release::with_stand_in();
    let mut bytes = std::fs::read(release.archive()).unwrap();
    bytes.push(0);
    std::fs::write(release.archive(), bytes).unwrap();
    let (code, stderr) = release.install(&["--target", TARGET]);
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("checksum mismatch"), "{stderr}");
    assert!(!release.installed().exists());
}

#[test]
fn an_archive_holding_another_version_is_refused() {
    let release = Release::with_stand_in_of("9.9.9");
    let (code, stderr) = release.install(&["--target", TARGET]);
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains(&format!("holds sluice 9.9.9, not sluice {VERSION}")), "{stderr}");
    assert!(!release.installed().exists());
}

#[test]
fn an_archive_without_a_checksum_is_refused() {
    let release = Release::with_stand_in();
    std::fs::remove_file(release.tag_dir().join("SHA256SUMS")).unwrap();
    let (code, stderr) = release.install(&["--target", TARGET]);
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("no SHA256SUMS to verify it with"), "{stderr}");
    assert!(!release.installed().exists());

    let release = Release::with_stand_in();
    std::fs::write(release.tag_dir().join("SHA256SUMS"), format!("{}  other.tar.gz\n", "0".repeat(64))).unwrap();
    let (code, stderr) = release.install(&["--target", TARGET]);
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("lists no checksum for"), "{stderr}");
}

#[test]
fn no_matching_archive_or_a_branch_ref_builds_from_the_action_source() {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).canonicalize().unwrap();
    let release = Release::with_stand_in();
    let (code, stderr) = release.install(&["--target", "riscv64gc-unknown-linux-musl"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stderr.contains(&format!(
            "the release v{VERSION} has no sluice-v{VERSION}-riscv64gc-unknown-linux-musl.tar.gz; building"
        )),
        "{stderr}"
    );
    let expected = |release: &Release| {
        format!("install --locked --quiet --path {} --root {}\n", source.display(), release.dest().display())
    };
    assert_eq!(release.cargo_calls(), expected(&release));

    // Used at a branch, the action builds its own code rather than the last release's binary.
    let release = Release::with_stand_in();
    let (code, stderr) = release.install(&["--target", TARGET, "--ref", "main"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains(&format!("the action is used at main, not at the release tag v{VERSION}")), "{stderr}");
    assert_eq!(release.cargo_calls(), expected(&release));
    assert!(!release.installed().exists());
}

#[test]
fn usage_errors_exit_2() {
    let release = Release::with_stand_in();
    let output = Command::new("bash").arg(script()).output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("--dest DIR is required"));
    let (code, stderr) = release.install(&["--bogus"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("unknown argument: --bogus"), "{stderr}");
}
