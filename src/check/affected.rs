//! Which unchanged query files a change's added migrations can affect: those reading a table
//! (or view) that an added migration alters, drops, renames, or adds or drops an index on.
//! Their verdict may change with no edit to them (the index they need is gone, one they
//! cannot use appears), so `check` re-checks them and says which migration is why — unless
//! the migration's own finding already names the query ([`fold_into_migrations`]): one
//! problem is reported at one place.

use crate::finding::{Fact, Finding};
use crate::lint::{self, MigrationSource, Settings, Sources};
use crate::schema::{Origin, Schema};
use crate::sql::ddl::{AlterAction, Ddl, Name, ObjectKind};
use crate::sql::query::relations;
use std::collections::{BTreeMap, BTreeSet};

/// Unchanged query file → the added migrations that affect it. `sources` holds the base
/// history and the head side's queries; `added` the migrations the change adds, in order.
pub fn queries(
    sources: &Sources,
    touched: &BTreeMap<Name, BTreeSet<String>>,
    changed: &BTreeSet<String>,
) -> BTreeMap<String, BTreeSet<String>> {
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    if touched.is_empty() {
        return out;
    }
    for query in sources.queries.iter().filter(|q| !changed.contains(&q.query.file)) {
        let read: BTreeSet<String> =
            query.file().parsed.statements.iter().filter_map(|s| s.ast.as_deref()).flat_map(relations).collect();
        for table in &read {
            if let Some(by) = touched.get(table) {
                out.entry(query.query.file.clone()).or_default().extend(by.iter().cloned());
            }
        }
    }
    out
}

/// The places a migration finding says it hurts, as (query file, line): `drop-index-in-use`
/// names every query that needs the dropped index in its `used by` fact.
fn places_named(finding: &Finding) -> Vec<(String, usize)> {
    if finding.rule != crate::rules::DROP_INDEX_IN_USE.id {
        return Vec::new();
    }
    finding
        .facts
        .iter()
        .filter(|f| f.name == "used by")
        .flat_map(|f| f.value.split(", "))
        .filter_map(|place| {
            let (file, line) = place.rsplit_once(':')?;
            Some((file.to_string(), line.parse().ok()?))
        })
        .collect()
}

/// Folds findings on affected (unchanged) query files into the added migration's finding that
/// already reports the same problem there: the query finding is dropped, and the migration's
/// finding notes it (`also seen at`) and takes its severity if higher — a plan regression
/// confirming a dropped index is the same problem as the drop. Findings on affected queries that
/// no migration finding names stay, "(affected by …)": they are problems only the query has.
pub fn fold_into_migrations(findings: Vec<Finding>, affected: &BTreeMap<String, BTreeSet<String>>) -> Vec<Finding> {
    let named: Vec<(usize, Vec<(String, usize)>)> =
        findings.iter().enumerate().map(|(i, f)| (i, places_named(f))).filter(|(_, p)| !p.is_empty()).collect();
    if named.is_empty() || affected.is_empty() {
        return findings;
    }
    let mut folded_into: Vec<Option<usize>> = vec![None; findings.len()];
    for (at, finding) in findings.iter().enumerate() {
        let Some(by) = affected.get(&finding.file) else { continue };
        folded_into[at] = named
            .iter()
            .find(|(owner, places)| {
                by.contains(&findings[*owner].file)
                    && places
                        .iter()
                        .any(|(file, line)| *file == finding.file && (finding.line..=finding.end_line).contains(line))
            })
            .map(|(owner, _)| *owner);
    }
    let mut out = findings.clone();
    for (at, owner) in folded_into.iter().enumerate() {
        let Some(owner) = owner else { continue };
        let duplicate = &findings[at];
        let kept = &mut out[*owner];
        kept.severity = kept.severity.max(duplicate.severity);
        kept.facts.push(Fact {
            name: "also seen at".into(),
            value: format!(
                "{}:{} ({}: {})",
                duplicate.file,
                duplicate.line,
                duplicate.rule,
                duplicate.message.split(" (affected by ").next().unwrap_or_default()
            ),
        });
        if kept.evidence.is_none() {
            kept.evidence = duplicate.evidence.clone();
        }
    }
    out.into_iter().zip(folded_into).filter(|(_, owner)| owner.is_none()).map(|(f, _)| f).collect()
}

/// Table → the added migrations that change it. Index names are resolved to their table with
/// the schema as it stands just before the statement: the base history's (from the schema
/// cache when it has it), then each added migration's.
pub fn touched_tables(
    sources: &Sources,
    settings: &Settings,
    added: &[MigrationSource],
) -> BTreeMap<Name, BTreeSet<String>> {
    let mut out: BTreeMap<Name, BTreeSet<String>> = BTreeMap::new();
    if added.is_empty() {
        return out;
    }
    let base = sources.migrations.len();
    let mut schema = lint::schema_after(sources, settings, base);
    for (offset, source) in added.iter().enumerate() {
        let file = source.parse().up;
        for statement in &file.parsed.statements {
            for table in touched(&statement.ddl, &schema) {
                out.entry(table).or_default().insert(file.display.clone());
            }
            let origin =
                Origin { file: file.display.clone(), line: statement.span.line, migration: Some(base + offset) };
            schema.apply(statement, &origin);
        }
    }
    out
}

/// The tables and views a statement changes in a way a query reading them could feel.
fn touched(ddl: &Ddl, schema: &Schema) -> Vec<Name> {
    let index_table = |name: &Name| schema.indexes.get(name).map(|i| i.table.clone());
    match ddl {
        Ddl::AlterTable { table, actions, .. } => {
            let mut out = vec![table.clone()];
            for action in actions {
                if let AlterAction::RenameTable { to } = action {
                    out.push(to.clone());
                }
            }
            out
        }
        Ddl::CreateIndex(index) => vec![index.table.clone()],
        Ddl::Drop { kind, names, .. } => match kind {
            ObjectKind::Index => names.iter().filter_map(index_table).collect(),
            ObjectKind::Table | ObjectKind::View | ObjectKind::MaterializedView => names.clone(),
            _ => Vec::new(),
        },
        Ddl::Rename { kind, from, to, .. } => match kind {
            ObjectKind::Index => index_table(from).into_iter().collect(),
            ObjectKind::Table | ObjectKind::View | ObjectKind::MaterializedView => vec![from.clone(), to.clone()],
            _ => Vec::new(),
        },
        Ddl::CreateView { name, .. } => vec![name.clone()],
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queries::{ParsedQuery, Query, Source};
    use crate::schema::migrations::Migration;
    use std::path::PathBuf;

    fn migration(name: &str, sql: &str) -> MigrationSource {
        MigrationSource::whole_text(
            Migration { version: name.into(), name: name.into(), up: PathBuf::from(name), ..Migration::default() },
            name,
            sql,
            true,
        )
    }

    fn sources() -> Sources {
        Sources {
            schema_dump: None,
            migrations: vec![migration(
                "m/001.sql",
                "CREATE TABLE users (id bigint PRIMARY KEY, email text);
                 CREATE TABLE sites (id bigint PRIMARY KEY, name text);
                 CREATE INDEX users_email ON users (email);",
            )],
            queries: [
                ("q/users.sql", "SELECT id FROM users WHERE email = $1;"),
                ("q/join.sql", "SELECT s.name FROM sites s WHERE s.id IN (SELECT id FROM public.users);"),
                ("q/sites.sql", "SELECT name FROM sites;"),
            ]
            .into_iter()
            .map(|(file, sql)| ParsedQuery::parse(Query::whole_file(file, sql, Source::QueryFile)))
            .collect(),
            ..Sources::default()
        }
    }

    fn affected(added: &[(&str, &str)], changed: &[&str]) -> Vec<(String, Vec<String>)> {
        let added: Vec<MigrationSource> = added.iter().map(|(n, s)| migration(n, s)).collect();
        let changed = changed.iter().map(|s| s.to_string()).collect();
        let touched = touched_tables(&sources(), &Settings::default(), &added);
        queries(&sources(), &touched, &changed).into_iter().map(|(q, by)| (q, by.into_iter().collect())).collect()
    }

    #[test]
    fn a_dropped_index_affects_the_queries_reading_its_table() {
        assert_eq!(
            affected(&[("m/002.sql", "DROP INDEX users_email;")], &[]),
            [
                ("q/join.sql".to_string(), vec!["m/002.sql".to_string()]),
                ("q/users.sql".to_string(), vec!["m/002.sql".to_string()]),
            ]
        );
    }

    #[test]
    fn changed_queries_and_unrelated_tables_are_left_out() {
        assert_eq!(
            affected(&[("m/002.sql", "ALTER TABLE sites ALTER COLUMN name TYPE varchar(80);")], &["q/join.sql"]),
            [("q/sites.sql".to_string(), vec!["m/002.sql".to_string()])]
        );
        assert!(affected(&[("m/002.sql", "CREATE TABLE other (id int); INSERT INTO users VALUES (1, 'a');")], &[])
            .is_empty());
        assert!(affected(&[], &[]).is_empty());
    }

    fn finding(rule: &str, file: &str, line: usize, end_line: usize) -> Finding {
        let severity = crate::finding::Severity::Error;
        Finding::new(rule, severity, file, format!("{rule} at {line}")).at(line, 1, end_line, 1)
    }

    #[test]
    fn a_query_finding_the_migration_finding_names_is_folded_into_it() {
        let drop = finding("drop-index-in-use", "m/002.sql", 2, 2).fact("used by", "q/users.sql:3, m/001.sql:9");
        let mut plan = finding("plan-regression", "q/users.sql", 1, 3);
        plan.severity = crate::finding::Severity::Error;
        let affected: BTreeMap<String, BTreeSet<String>> = [
            ("q/users.sql".to_string(), ["m/002.sql".to_string()].into()),
            ("q/sites.sql".to_string(), ["m/002.sql".to_string()].into()),
        ]
        .into();
        let kept = fold_into_migrations(
            vec![
                drop,
                finding("function-on-indexed-column", "q/users.sql", 3, 3),
                plan,
                finding("function-on-indexed-column", "q/users.sql", 7, 7),
                finding("function-on-indexed-column", "q/sites.sql", 3, 3),
                finding("function-on-indexed-column", "q/changed.sql", 3, 3),
            ],
            &affected,
        );
        let places: Vec<(&str, usize)> = kept.iter().map(|f| (f.file.as_str(), f.line)).collect();
        assert_eq!(places, [("m/002.sql", 2), ("q/users.sql", 7), ("q/sites.sql", 3), ("q/changed.sql", 3)]);
        let also: Vec<&str> =
            kept[0].facts.iter().filter(|f| f.name == "also seen at").map(|f| f.value.as_str()).collect();
        assert_eq!(
            also,
            [
                "q/users.sql:3 (function-on-indexed-column: function-on-indexed-column at 3)",
                "q/users.sql:1 (plan-regression: plan-regression at 1)"
            ]
        );
    }

    #[test]
    fn an_index_created_in_the_change_is_resolved_when_dropped_later() {
        let found = affected(
            &[("m/002.sql", "CREATE INDEX sites_name ON sites (name);"), ("m/003.sql", "DROP INDEX sites_name;")],
            &["q/join.sql"],
        );
        assert_eq!(found, [("q/sites.sql".to_string(), vec!["m/002.sql".to_string(), "m/003.sql".to_string()])]);
    }
}
