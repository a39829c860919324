//! Test code: SQL a test runs against its own fixtures. It is not a query the application runs
//! (concourse's `fix_build_private_plan_test.go` selects builds by name, a lookup no application
//! query makes; boundary's `immutable_fields_test.go` wraps `lower(active_time_range)`: both
//! raised false findings in docs/queries-review.md), so like migration code it is counted, never
//! checked.
//!
//! A code file is test code when its name is one a test runner collects by default — a Go test
//! file (`*_test.go`, which `go build` leaves out of the program), a pytest module (`test_*.py`,
//! `*_test.py`, pytest's default `python_files`, and its `conftest.py` fixtures), a Jest or
//! Vitest test (`*.test.ts`, `*.spec.js`, … their default `testMatch` / `include`) — or a
//! directory of its path below the directory scanned is named `test`, `tests`, `testdata` or
//! `__tests__` (Go's fixtures, Rust's integration tests, Maven's `src/test`, Jest's). A Rust
//! `#[cfg(test)]` module is set aside where it is read (see the Rust reader); other test helpers
//! outside such places are still read.

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
    if let Some(module) = name.strip_suffix(".py") {
        if module.starts_with("test_") || module.ends_with("_test") || module == "conftest" {
            return Some("a pytest module".to_string());
        }
    }
    let script = ["ts", "tsx", "js", "jsx", "mts", "cts", "mjs", "cjs"]
        .iter()
        .find_map(|extension| name.strip_suffix(extension)?.strip_suffix('.'));
    if script.is_some_and(|stem| stem.ends_with(".test") || stem.ends_with(".spec")) {
        return Some("a Jest or Vitest test file".to_string());
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
        assert_eq!(by_path(Path::new("store/test_users.py")).as_deref(), Some("a pytest module"));
        assert_eq!(by_path(Path::new("store/users_test.py")).as_deref(), Some("a pytest module"));
        assert_eq!(by_path(Path::new("conftest.py")).as_deref(), Some("a pytest module"));
        assert_eq!(by_path(Path::new("src/users.test.ts")).as_deref(), Some("a Jest or Vitest test file"));
        assert_eq!(by_path(Path::new("src/users.spec.mjs")).as_deref(), Some("a Jest or Vitest test file"));
        assert_eq!(by_path(Path::new("store/testing.py")), None, "not pytest's naming");
        assert_eq!(by_path(Path::new("store/contest.py")), None);
        assert_eq!(by_path(Path::new("src/latest.ts")), None);
        assert_eq!(by_path(Path::new("src/test.ts")), None, "a module named test, not a test file");
        assert_eq!(by_path(Path::new("src/spec.d.ts")), None);
    }
}
