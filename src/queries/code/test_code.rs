//! Test code: SQL a test runs against its own fixtures. It is not a query the application runs
//! (concourse's `fix_build_private_plan_test.go` selects builds by name, a lookup no application
//! query makes; boundary's `immutable_fields_test.go` wraps `lower(active_time_range)`: both
//! raised false findings in docs/queries-review.md), so like migration code it is counted, never
//! checked.
//!
//! A code file is test code when its name is a Go test file's (`*_test.go`, which `go build`
//! leaves out of the program), or a directory of its path below the directory scanned is named
//! `test`, `tests`, `testdata` or `__tests__` (Go's fixtures, Rust's integration tests, Maven's
//! `src/test`, Jest's). Test helpers outside such places (a Rust `#[cfg(test)]` module beside the
//! code it tests) are still read.

use std::path::{Component, Path};

/// The directory names that hold tests.
const TEST_DIRS: [&str; 4] = ["test", "tests", "testdata", "__tests__"];

/// Why `relative` (a code file's path below the directory scanned) is test code: "a Go test
/// file", "in a `tests` directory".
pub fn by_path(relative: &Path) -> Option<String> {
    let name = relative.file_name()?.to_str()?;
    if name.ends_with("_test.go") {
        return Some("a Go test file".to_string());
    }
    relative.parent()?.components().find_map(|c| match c {
        Component::Normal(name) => {
            let name = name.to_str()?;
            TEST_DIRS.contains(&name).then(|| format!("in a `{name}` directory"))
        }
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_test_files_and_test_directories() {
        assert_eq!(
            by_path(Path::new("atc/db/migration/fix_build_private_plan_test.go")).as_deref(),
            Some("a Go test file")
        );
        assert_eq!(by_path(Path::new("session/immutable_fields_test.go")).as_deref(), Some("a Go test file"));
        assert_eq!(by_path(Path::new("src/test/java/FooIT.java")).as_deref(), Some("in a `test` directory"));
        assert_eq!(by_path(Path::new("tests/common/mod.rs")).as_deref(), Some("in a `tests` directory"));
        assert_eq!(by_path(Path::new("pkg/testdata/q.go")).as_deref(), Some("in a `testdata` directory"));
        assert_eq!(by_path(Path::new("web/__tests__/a.ts")).as_deref(), Some("in a `__tests__` directory"));
        assert_eq!(by_path(Path::new("internal/testing/helpers.go")), None, "not a test directory's name");
        assert_eq!(by_path(Path::new("internal/tests.go")), None, "a file, not a directory");
        assert_eq!(by_path(Path::new("store/test.go")), None);
        assert_eq!(by_path(Path::new("store/latest_test.py")), None, "only Go's naming is a build rule");
    }
}
