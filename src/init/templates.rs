//! The files `sluice init` writes, as commented TOML a person reads before committing.
//! Each parses with the loader the linter uses (tested in `super::tests`).

use super::discover::{display, FoundSource, MigrationDir};
use super::keys::UniqueKey;
use crate::policy::{identity, tables};
use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::{Path, PathBuf};

/// Where the documentation of each file lives.
const DOCS: &str = concat!(env!("CARGO_PKG_REPOSITORY"), "#readme");

/// A TOML string literal (quoted and escaped).
fn quoted(text: &str) -> String {
    toml::Value::String(text.to_string()).to_string()
}

fn quoted_path(path: &Path) -> String {
    quoted(&display(path))
}

pub struct ConfigInputs<'a> {
    pub postgres_version: u32,
    pub migrations: &'a MigrationDir,
    pub queries: &'a [PathBuf],
    pub sqlc: &'a [FoundSource],
    pub code: &'a [FoundSource],
    pub policies: &'a Path,
}

/// The `sqlc` and `code` keys of `[queries]`, each with a comment saying what was found.
fn query_sources(inputs: &ConfigInputs) -> String {
    let list = |found: &[FoundSource]| found.iter().map(|f| quoted_path(&f.path)).collect::<Vec<_>>().join(", ");
    let mut out = String::new();
    if inputs.sqlc.is_empty() {
        out.push_str(
            "# sqlc configurations whose query paths are checked (none found; a sqlc.yaml at the root is\n\
             # read when this is unset):\n# sqlc = [\"sqlc.yaml\"]\n",
        );
    } else {
        for found in inputs.sqlc {
            let _ = writeln!(
                out,
                "# Found by `sluice init`: {} names {} query file(s) ({}) holding {} quer(ies).",
                display(&found.path),
                found.files,
                found.detail,
                found.queries
            );
        }
        let _ = writeln!(out, "sqlc = [{}]", list(inputs.sqlc));
    }
    if inputs.code.is_empty() {
        out.push_str(
            "# Application code scanned for SQL at database calls (Go, Rust, Java, Kotlin, TypeScript,\n\
             # JavaScript, Python; MyBatis mappers, sqlx offline data). None found:\n# code = [\"src\"]\n",
        );
    } else {
        out.push_str(
            "# Application code scanned for SQL at database calls. Found by `sluice init`:
",
        );
        for found in inputs.code {
            let _ = writeln!(
                out,
                "#   {}/: {} quer(ies) in {} file(s) ({})",
                display(&found.path),
                found.queries,
                found.files,
                found.detail
            );
        }
        let _ = writeln!(out, "code = [{}]", list(inputs.code));
    }
    out
}

pub fn sluice_toml(inputs: &ConfigInputs) -> String {
    let migrations = inputs.migrations;
    // A layout that recognises no migration is left to detection, which may know better later.
    let (layout, layout_note) = if migrations.migrations > 0 {
        (migrations.layout_name(), format!("{}: {}", migrations.summary(), migrations.reason.replace('\n', " ")))
    } else {
        ("auto", "no migration recognised: check the layout (\"Migration tools\" in the README)".to_string())
    };
    let queries = inputs.queries.iter().map(|d| quoted_path(d)).collect::<Vec<_>>().join(", ");
    let queries_note = if inputs.queries.is_empty() {
        "# None found (looked for queries/, sql/, db/queries/): list the directories holding the SQL\n\
         # your application runs, so its queries are checked against the schema the history builds.\n"
    } else {
        "# The SQL your application runs, checked against the schema at the end of the history.\n"
    };
    format!(
        "\
# Sluice configuration, written by `sluice init`. Paths are relative to this file.
# Unknown keys are errors, so a typo never silently disables a check.
# Reference: {DOCS}

# The PostgreSQL major version production runs: verdicts depend on it (before 11 a constant
# default rewrites the table; from 12 SET NOT NULL can reuse a validated CHECK constraint).
postgres_version = {postgres_version}

[migrations]
dir = {dir}
# The migration tool that runs the history: its order, statement splitting and transactions.
# Found by `sluice init`: {layout_note}.
# \"auto\" detects it on every run instead.
layout = {layout}
# Whether your migration runner wraps each file in a transaction (default: decided by the layout).
# transaction_per_file = true
# A `pg_dump --schema-only` file the history starts from, if it does not start from an empty database.
# schema_dump = \"db/structure.sql\"

[queries]
{queries_note}dirs = [{queries}]
{sources}
[policies]
# identity.toml (what identifies a row) and tables.toml (production table sizes).
dir = {policies}

[rules]
# Change a rule's severity: \"error\" | \"warning\" | \"info\" | \"off\". `sluice rules` lists the rules.
# \"missing-lock-timeout\" = \"error\"
",
        postgres_version = inputs.postgres_version,
        dir = quoted_path(&migrations.path),
        layout = quoted(layout),
        policies = quoted_path(inputs.policies),
        sources = query_sources(inputs),
    )
}

/// The identity skeleton: one `[[table]]` per keyed table with `identity = []` to fill in.
pub fn identity_toml(tables: &BTreeMap<String, Vec<UniqueKey>>, replayed: usize) -> String {
    let mut out = format!(
        "\
# What identifies a row in your domain: read by the rule domain-identity-unique.
#
# Why it matters: a UNIQUE constraint is a claim about the world (\"no two rows ever share these
# values\"). When it is narrower than what really identifies a row, valid writes start failing:
# a UNIQUE (site, window, species) on bird-survey observations rejected every second volunteer's
# valid report. Sluice checks each uniqueness a migration adds against the keys declared here,
# and warns about a new unique constraint on an existing table that declares none.
#
# For each table, fill in `identity`: one or more keys, each a list of columns that identifies
# a row in the domain (a natural or client-supplied key), e.g.
#   identity = [[\"checklist_id\", \"client_observation_id\"]]
# Optional: shared = [...] (values many rows legitimately share), reason = \"...\" (shown in
# findings), surrogate = [...] (key columns the application generates, e.g. an app-side UUID).
# `identity = []` means \"not declared yet\": the table is checked as if it were not listed, and
# `sluice lint` names it in a note. Delete the tables you do not want to declare.
#
# Listed: every table with a primary key, unique constraint or unique index in the schema the
# {replayed} replayed migration(s) build, with those keys. A key the database generates (an identity
# or serial `id`) is unique by construction and says nothing about the domain.
# Reference: {DOCS}
"
    );
    if tables.is_empty() {
        out.push_str(
            "#\n# No table has a primary key or unique constraint yet. Declare tables as you add them:\n\
             # [[table]]\n# name = \"orders\"\n# identity = [[\"order_number\"]]\n",
        );
    }
    for (table, keys) in tables {
        // The name as SQL writes it, so it resolves back to this table: `'"Account"'`.
        let _ = write!(out, "\n[[table]]\nname = {}\n", quoted(&crate::sql::names::shown(table)));
        for key in keys {
            let _ = write!(out, "# {}: ({})", key.kind, key.keys.join(", "));
            if let Some(predicate) = &key.predicate {
                let _ = write!(out, " WHERE {predicate}");
            }
            if !key.generated.is_empty() {
                let _ = write!(out, "  [generated by the database: {}]", key.generated.join(", "));
            }
            out.push('\n');
        }
        out.push_str("identity = []\n");
    }
    out
}

/// The table-size policy with the statistics query to run against production.
pub fn tables_toml(policies: &Path) -> String {
    let snapshot = display(&policies.join("table-stats.csv"));
    let query: String = tables::STATS_QUERY.lines().map(|line| format!("#   {line}\n")).collect();
    format!(
        "\
# Production table sizes: lock and rewrite findings are errors on tables at or above
# large_table_rows (and on tables of unknown size), warnings below it, silent below small_table_rows.
large_table_rows = {large}
small_table_rows = {small}

# Export a snapshot of the sizes from production (read-only, catalog only):
#
#   sluice stats query | psql \"$DATABASE_URL\" --csv > {snapshot}
#
# then uncomment the next line. Until then every existing table is of unknown size, so lock and
# rewrite findings are errors: the gate fails closed.
# stats = \"table-stats.csv\"
#
# The query `sluice stats query` prints:
#
{query}
# Explicit counts win over the snapshot (`schema.table` outside public; names as SQL writes
# them, so a mixed-case table keeps its quotes):
[rows]
# orders = 25_000_000
# \"audit.events\" = 5_000
# '\"Account\"' = 10
",
        large = with_underscores(tables::DEFAULT_LARGE_TABLE_ROWS),
        small = with_underscores(tables::DEFAULT_SMALL_TABLE_ROWS),
    )
}

/// `100000` → `100_000`, as a person writes it in TOML.
fn with_underscores(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push('_');
        }
        out.push(c);
    }
    out
}

/// The files written, by path relative to the project root.
pub fn file_names(policies: &Path) -> [PathBuf; 3] {
    [PathBuf::from(crate::config::CONFIG_FILE), policies.join(identity::FILE), policies.join(tables::FILE)]
}
