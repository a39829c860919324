//! The allocator's settings, made before `main` (src/main.rs), read back from mimalloc's own
//! report of its options: the option is set by its number in mimalloc.h, which a new mimalloc
//! could move.

use assert_cmd::Command;

#[test]
fn arenas_are_committed_on_demand() {
    let out = Command::cargo_bin("sluice").unwrap().arg("--version").env("MIMALLOC_VERBOSE", "1").output().unwrap();
    assert!(out.status.success());
    let report = String::from_utf8_lossy(&out.stderr);
    assert!(report.contains("option 'arena_eager_commit': 0"), "mimalloc reported:\n{report}");
}
