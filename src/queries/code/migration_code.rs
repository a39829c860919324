//! Migration code: SQL a past migration ran, written in application code. It is not a query the
//! application runs today (listmonk's `internal/migrations/v3.0.0.go` creates a materialized
//! view a later release replaced; read as a query it raised two false
//! `function-on-indexed-column` errors), so it is counted, never checked.
//!
//! A code file is migration code when
//! - a directory of its path below the directory scanned (the `[queries] code` directory, the
//!   path given to `sluice queries`, the repository for `sluice check`) is named `migrations`,
//!   `migration` or `migrate` (the names Go, Rails-like and Node tools give them); or
//! - it lies under the configured `[migrations] dir`; or
//! - it is a Go file that registers a goose Go migration (`goose.AddMigration`,
//!   `goose.AddMigrationContext`, `goose.AddNamedMigration…`, `goose.AddMigrationNoTx…`), read
//!   from its calls with the Go grammar.

use super::syntax::{parse, walk, Host};
use std::path::{Component, Path};

/// The directory names that hold migrations.
const MIGRATION_DIRS: [&str; 3] = ["migrations", "migration", "migrate"];

/// Why `relative` (a code file's path below the directory scanned) is migration code by where it
/// is: "in a `migrations` directory".
pub fn by_path(relative: &Path) -> Option<String> {
    let parent = relative.parent()?;
    parent.components().find_map(|c| match c {
        Component::Normal(name) => {
            let name = name.to_str()?;
            MIGRATION_DIRS.contains(&name).then(|| format!("in a `{name}` directory"))
        }
        _ => None,
    })
}

/// Why the Go file `text` is migration code by what it does: it registers a goose migration.
pub fn goose(text: &str) -> Option<String> {
    if !text.contains("goose") || !text.contains("AddMigration") && !text.contains("AddNamedMigration") {
        return None;
    }
    let tree = parse(&tree_sitter_go::LANGUAGE.into(), text);
    let host = Host::new(text);
    let mut found = None;
    walk(tree.root_node(), |node| {
        if found.is_some() || node.kind() != "call_expression" {
            return;
        }
        let Some(function) = node.child_by_field_name("function").filter(|f| f.kind() == "selector_expression") else {
            return;
        };
        let package = function.child_by_field_name("operand").map(|o| host.text_of(o));
        let name = function.child_by_field_name("field").map_or("", |f| host.text_of(f));
        if package == Some("goose") && (name.starts_with("AddMigration") || name.starts_with("AddNamedMigration")) {
            found = Some(format!("it registers a goose migration with goose.{name}"));
        }
    });
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_directory_named_for_migrations_below_the_scanned_one() {
        assert_eq!(by_path(Path::new("internal/migrations/v3.0.0.go")).as_deref(), Some("in a `migrations` directory"));
        assert_eq!(by_path(Path::new("db/migrate/20240101_add.py")).as_deref(), Some("in a `migrate` directory"));
        assert_eq!(by_path(Path::new("internal/migrations.go")), None, "a file, not a directory");
        assert_eq!(by_path(Path::new("internal/migrator/run.go")), None);
        assert_eq!(by_path(Path::new("migrations.go")), None);
    }

    #[test]
    fn a_goose_go_migration_is_read_from_its_calls() {
        let migration = "package migrations\n\nimport \"github.com/pressly/goose/v3\"\n\nfunc init() {\n\tgoose.AddMigrationContext(upAddUsers, downAddUsers)\n}\n";
        assert_eq!(goose(migration).as_deref(), Some("it registers a goose migration with goose.AddMigrationContext"));
        let comment =
            "package store\n\n// Unlike goose.AddMigration, this runs at start.\nfunc f() { db.Exec(\"SELECT 1\") }\n";
        assert_eq!(goose(comment), None, "a comment is not a call");
    }
}
