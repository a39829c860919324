//! `sluice init`: set Sluice up in an existing repository. Finds the migration directory and
//! its layout and the query directories, replays the history to list the tables whose identity
//! should be declared, and writes `sluice.toml`, `policies/identity.toml` and
//! `policies/tables.toml`, all commented. Never overwrites a file unless asked to; writes
//! nothing when any of them exists. What it writes lints as it stands.

pub mod discover;
pub mod keys;
pub mod templates;

use crate::config::{Config, Layout};
use crate::error::{Error, Result};
use crate::lint::{self, load};
use crate::schema::migrations;
use crate::schema::tools::{DiskTree, Options as ToolOptions};
use discover::MigrationDir;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone)]
pub struct Options {
    /// The directory `sluice.toml` goes in; paths in it are relative to this.
    pub root: PathBuf,
    pub migrations: Option<PathBuf>,
    /// The migration tool, when detection should not decide (`auto`: detect).
    pub layout: Layout,
    pub queries: Vec<PathBuf>,
    pub policies: PathBuf,
    pub postgres_version: Option<u32>,
    pub force: bool,
}

/// What was found and written.
#[derive(Debug)]
pub struct Outcome {
    pub migrations: MigrationDir,
    pub queries: Vec<PathBuf>,
    /// sqlc configurations and application code directories found.
    pub sqlc: Vec<discover::FoundSource>,
    pub code: Vec<discover::FoundSource>,
    pub policies: PathBuf,
    /// Tables listed in the identity skeleton.
    pub keyed_tables: usize,
    /// Files written, relative to the root.
    pub written: Vec<PathBuf>,
    pub warnings: Vec<String>,
}

pub fn init(options: &Options) -> Result<Outcome> {
    let root = &options.root;
    let targets = templates::file_names(&options.policies);
    refuse_to_overwrite(root, &targets, options.force)?;
    let migrations = discover::migration_dir(root, options.migrations.as_deref(), options.layout)?;
    let (queries, mut warnings) = discover::query_dirs(root, &options.queries, &migrations.path)?;
    if migrations.migrations == 0 {
        warnings.push(format!(
            "{}: no migration recognised ({}); pass --layout TOOL or set [migrations] layout in sluice.toml",
            discover::display(&migrations.path),
            migrations.summary()
        ));
    }
    let sqlc = discover::sqlc_configs(root)?;
    let code = discover::code_dirs(root, &migrations.path)?;
    let postgres_version = options.postgres_version.unwrap_or(Config::default().postgres_version);
    let keyed = keys::keyed_tables(&replay(root, &migrations, postgres_version)?);
    let config = templates::ConfigInputs {
        postgres_version,
        migrations: &migrations,
        queries: &queries,
        sqlc: &sqlc,
        code: &code,
        policies: &options.policies,
    };
    let contents = [
        templates::sluice_toml(&config),
        templates::identity_toml(&keyed, migrations.migrations),
        templates::tables_toml(&options.policies),
    ];
    let files: Vec<(PathBuf, String)> = targets.into_iter().zip(contents).collect();
    write_all(root, &files)?;
    Ok(Outcome {
        migrations,
        queries,
        sqlc,
        code,
        policies: options.policies.clone(),
        keyed_tables: keyed.len(),
        written: files.into_iter().map(|(path, _)| path).collect(),
        warnings,
    })
}

/// The schema the detected history builds, read and replayed the way `sluice lint` does.
fn replay(root: &Path, migrations: &MigrationDir, postgres_version: u32) -> Result<crate::schema::Schema> {
    let tree = DiskTree::open(&root.join(&migrations.path), root, &load::display_root(root))?;
    let options = ToolOptions { transaction_per_file: None, postgres_version };
    let history = migrations::load(&tree, migrations.layout, &options, None)?;
    let (sources, _) = load::sources_of(history);
    Ok(lint::replay(None, &sources, postgres_version))
}

/// Checked before any work: a file that exists stops everything unless `force`.
fn refuse_to_overwrite(root: &Path, files: &[PathBuf], force: bool) -> Result<()> {
    let existing: Vec<String> =
        files.iter().filter(|path| root.join(path).exists()).map(|path| discover::display(path)).collect();
    if existing.is_empty() || force {
        return Ok(());
    }
    Err(Error::Usage(format!(
        "{} already exist(s); nothing was written. `sluice init --force` overwrites {}.",
        existing.join(", "),
        if existing.len() == 1 { "it" } else { "them" }
    )))
}

fn write_all(root: &Path, files: &[(PathBuf, String)]) -> Result<()> {
    for (path, text) in files {
        let path = root.join(path);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| cannot_write(dir, e))?;
        }
        std::fs::write(&path, text).map_err(|e| cannot_write(&path, e))?;
    }
    Ok(())
}

fn cannot_write(path: &Path, error: std::io::Error) -> Error {
    Error::Other(format!("{}: cannot write: {error}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::keys::UniqueKey;
    use super::*;
    use crate::config::Layout;
    use crate::policy::identity::IdentityPolicy;
    use crate::policy::tables::TablesPolicy;
    use std::collections::BTreeMap;

    fn odd_dir() -> MigrationDir {
        MigrationDir {
            path: PathBuf::from("db/\"odd\" migrations"),
            layout: Layout::GolangMigrate,
            reason: "1_a.up.sql\nis golang-migrate's naming".into(),
            migrations: 2,
        }
    }

    #[test]
    fn the_written_config_loads_with_the_detected_values() {
        let queries = [PathBuf::from("queries"), PathBuf::from("db/queries")];
        let inputs = templates::ConfigInputs {
            postgres_version: 16,
            migrations: &odd_dir(),
            queries: &queries,
            sqlc: &[discover::FoundSource {
                path: PathBuf::from("sqlc.yaml"),
                files: 2,
                queries: 9,
                detail: "db/query".into(),
            }],
            code: &[discover::FoundSource {
                path: PathBuf::from("internal"),
                files: 3,
                queries: 12,
                detail: "Go 12".into(),
            }],
            policies: Path::new("policies"),
        };
        let config: Config = toml::from_str(&templates::sluice_toml(&inputs)).unwrap();
        assert_eq!(config.postgres_version, 16);
        assert_eq!(config.migrations.dir, PathBuf::from("db/\"odd\" migrations"));
        assert_eq!(config.migrations.layout, Layout::GolangMigrate);
        assert_eq!(config.queries.dirs, queries);
        assert_eq!(config.queries.sqlc, Some(vec![PathBuf::from("sqlc.yaml")]));
        assert_eq!(config.queries.code, [PathBuf::from("internal")]);
        let text = templates::sluice_toml(&inputs);
        assert!(
            text.contains(
                "# Found by `sluice init`: sqlc.yaml names 2 query file(s) (db/query) holding 9 quer(ies).\n"
            ),
            "{text}"
        );
        assert!(text.contains("#   internal/: 12 quer(ies) in 3 file(s) (Go 12)\n"), "{text}");
        assert!(config.rules.is_empty());

        let nothing = MigrationDir { migrations: 0, ..odd_dir() };
        let inputs = templates::ConfigInputs { migrations: &nothing, queries: &[], sqlc: &[], code: &[], ..inputs };
        let config: Config = toml::from_str(&templates::sluice_toml(&inputs)).unwrap();
        assert_eq!(config.migrations.layout, Layout::Auto, "an unrecognised history is left to detection");
        assert!(config.queries.dirs.is_empty() && config.queries.sqlc.is_none() && config.queries.code.is_empty());
    }

    #[test]
    fn the_identity_skeleton_parses_with_every_table_pending() {
        let key = |kind: &str, keys: &[&str]| UniqueKey {
            kind: kind.into(),
            keys: keys.iter().map(|k| k.to_string()).collect(),
            predicate: Some("deleted_at IS NULL".into()),
            generated: vec![],
        };
        let tables = BTreeMap::from([
            ("audit.events".to_string(), vec![key("primary key", &["id"])]),
            ("we\"ird".to_string(), vec![key("unique index x", &["(lower(email))"])]),
            ("Account".to_string(), vec![key("primary key", &["id"])]),
        ]);
        let text = templates::identity_toml(&tables, 7);
        let policy = IdentityPolicy::parse(Path::new("identity.toml"), &text).unwrap();
        assert!(policy.tables.is_empty());
        // Issue 37: each name resolves back to its table, mixed case included.
        assert_eq!(policy.pending, ["Account", "audit.events", "we\"ird"]);
        assert!(text.contains("name = '\"Account\"'\n"), "{text}");
        assert!(text.contains("# unique index x: ((lower(email))) WHERE deleted_at IS NULL\n"), "{text}");
        assert!(text.contains("the\n# 7 replayed migration(s)"), "{text}");

        let empty = templates::identity_toml(&BTreeMap::new(), 0);
        assert!(IdentityPolicy::parse(Path::new("identity.toml"), &empty).unwrap().pending.is_empty());
    }

    #[test]
    fn the_tables_policy_parses_and_carries_the_statistics_query() {
        let text = templates::tables_toml(Path::new("db/policies"));
        let policy =
            TablesPolicy::parse(Path::new("tables.toml"), &text, &|p| panic!("reads {}", p.display())).unwrap();
        assert_eq!(policy.large_table_rows, crate::policy::tables::DEFAULT_LARGE_TABLE_ROWS);
        assert_eq!(policy.small_table_rows, crate::policy::tables::DEFAULT_SMALL_TABLE_ROWS);
        assert!(policy.rows.is_empty());
        assert!(text.contains("--csv > db/policies/table-stats.csv"), "{text}");
        for line in crate::policy::tables::STATS_QUERY.lines() {
            assert!(text.contains(&format!("#   {line}\n")), "missing query line {line:?}");
        }
    }
}
