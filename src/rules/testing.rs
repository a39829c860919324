//! Test helpers: lint SQL given as strings, the way `sluice lint` would.

use crate::finding::{Finding, Severity};
use crate::lint::{lint, Settings, Sources};
use crate::policy::identity::IdentityPolicy;
use crate::policy::tables::TablesPolicy;
use crate::policy::Policies;
use crate::rules::RuleMeta;
use crate::schema::migrations::Migration;
use std::path::{Path, PathBuf};

/// Lints files given as (name, sql): names under `queries/` are query files, the others are
/// migrations in the order given. `identity` is the text of `policies/identity.toml`.
pub fn lint_files(files: &[(&str, &str)], identity: &str) -> Vec<Finding> {
    lint_with(files, &Setup { identity, ..Setup::default() })
}

/// What else a test may set up besides the files.
#[derive(Default)]
pub struct Setup<'a> {
    /// `policies/identity.toml`.
    pub identity: &'a str,
    /// `policies/tables.toml` (without a statistics snapshot).
    pub tables: &'a str,
    /// Default 15.
    pub postgres_version: Option<u32>,
    /// The runner wraps every migration file in a transaction.
    pub in_transaction: bool,
    /// Down migrations, as (name of the up migration, sql).
    pub downs: &'a [(&'a str, &'a str)],
    /// Lint the files as a change under review (`sluice check`), not a whole project.
    pub under_review: bool,
    /// Workload snapshots (`sluice stats workload` exports), named `policies/workload-N.csv`.
    pub workload: &'a [&'a str],
    /// The index-usage snapshot (`sluice stats indexes`), `policies/index-usage.csv`.
    pub index_usage: Option<&'a str>,
}

pub fn lint_with(files: &[(&str, &str)], setup: &Setup) -> Vec<Finding> {
    let mut sources = Sources::default();
    for (name, sql) in files {
        if name.starts_with("queries/") {
            let query = crate::queries::Query::whole_file(*name, *sql, crate::queries::Source::QueryFile);
            sources.queries.push(crate::queries::ParsedQuery::parse(query));
        } else {
            let version = format!("{:03}", sources.migrations.len() + 1);
            let down =
                setup.downs.iter().find(|(n, _)| n == name).map(|(n, sql)| (format!("{n}.down"), sql.to_string()));
            let migration = Migration {
                version,
                name: name.to_string(),
                up: PathBuf::from(name),
                down: down.as_ref().map(|(display, _)| PathBuf::from(display)),
                ..Migration::default()
            };
            let mut source = crate::schema::tools::example_migration(migration, name, sql, setup.in_transaction);
            if let Some((display, text)) = down {
                source.down = Some((display, text.into()));
            }
            sources.migrations.push(source);
        }
    }
    if !setup.workload.is_empty() {
        let snapshots = setup
            .workload
            .iter()
            .enumerate()
            .map(|(i, csv)| {
                let file = format!("policies/workload-{}.csv", i + 1);
                crate::queries::workload::Snapshot::parse(Path::new(&file), file.clone(), csv).expect("valid snapshot")
            })
            .collect();
        let workload =
            crate::queries::workload::Workload::from_snapshots(snapshots, &crate::queries::workload::Reading::now(30))
                .expect("a workload");
        sources.queries.extend(workload.queries().into_iter().map(crate::queries::ParsedQuery::parse));
        sources.workload = Some(workload);
    }
    let index_usage = setup.index_usage.map(|csv| {
        let file = "policies/index-usage.csv";
        crate::policy::index_usage::IndexUsage::parse(Path::new(file), file.into(), csv).expect("valid index usage")
    });
    let policies = Policies {
        index_usage,
        identity: IdentityPolicy::parse(Path::new("policies/identity.toml"), setup.identity).expect("valid policy"),
        tables: TablesPolicy::parse(Path::new("policies/tables.toml"), setup.tables, &|_| {
            panic!("no snapshot in tests")
        })
        .expect("valid tables policy"),
    };
    let settings = Settings {
        postgres_version: setup.postgres_version.unwrap_or(15),
        policies,
        under_review: setup.under_review,
        ..Settings::default()
    };
    lint(&sources, &settings, &|_| true).findings
}

/// The findings of one rule.
pub fn of<'f>(findings: &'f [Finding], id: &str) -> Vec<&'f Finding> {
    findings.iter().filter(|f| f.rule == id).collect()
}

/// Splits a doc example into files: `-- migration: NAME` and `-- query: NAME` lines start a
/// new file; text before any marker is one migration.
pub fn example_files(example: &str) -> Vec<(String, String)> {
    let mut files: Vec<(String, String)> = Vec::new();
    for line in example.lines() {
        let marker = line
            .trim()
            .strip_prefix("-- migration:")
            .map(|n| n.trim().to_string())
            .or_else(|| line.trim().strip_prefix("-- query:").map(|n| format!("queries/{}", n.trim())));
        match marker {
            Some(name) => files.push((name, String::new())),
            None => {
                if files.is_empty() {
                    files.push(("example.sql".into(), String::new()));
                }
                let last = files.last_mut().unwrap();
                last.1.push_str(line);
                last.1.push('\n');
            }
        }
    }
    files
}

pub fn ids(findings: &[Finding]) -> Vec<&str> {
    findings.iter().map(|f| f.rule.as_str()).collect()
}

/// The rule's doc examples are its first tests: the bad SQL is flagged by the rule,
/// the recommended fix lints clean (no error or warning from any rule). The examples are
/// linted as a change under review, as `sluice check` would see them.
pub fn check_examples(meta: &RuleMeta, identity: &str) {
    let lint_example = |sql: &str| {
        let files = example_files(sql);
        let borrowed: Vec<(&str, &str)> = files.iter().map(|(n, s)| (n.as_str(), s.as_str())).collect();
        lint_with(&borrowed, &Setup { identity, under_review: true, ..Setup::default() })
    };
    let bad = lint_example(meta.bad);
    assert!(
        bad.iter().any(|f| f.rule == meta.id),
        "{}: the bad example is not flagged; found {:?}",
        meta.id,
        ids(&bad)
    );
    let good = lint_example(meta.good);
    let loud: Vec<&Finding> = good.iter().filter(|f| f.severity >= Severity::Warning || f.rule == meta.id).collect();
    assert!(loud.is_empty(), "{}: the recommended fix does not lint clean: {:#?}", meta.id, loud);
}
