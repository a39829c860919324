use super::{Context, Rule, RuleMeta};
use crate::finding::{Finding, Severity};
use crate::rules::Category;
use crate::schema::Index;
use crate::sql::ddl::{AlterAction, Ddl, IndexKey, ObjectKind};
use crate::sql::query::{canonical_expression, predicate_uses};

pub struct DropIndexInUse;

pub static META: RuleMeta = RuleMeta {
    id: "drop-index-in-use",
    severity: Severity::Error,
    category: Category::Incident,
    summary: "An index is dropped while a query or view filters on its leading column and no other index leads with it",
    what: "Flags `DROP INDEX`, and dropping a UNIQUE or PRIMARY KEY constraint (which drops its index), when a \
query file or a view filters or joins on the dropped index's leading column (or expression) and no remaining \
index on the table leads with it. Names the query's file and line. In `sluice check` this is the one finding \
for the problem: what the unchanged query shows because of the drop (a `function-on-indexed-column` finding, a \
plan regression) is folded into it rather than reported a second time on the query.",
    why: "The planner silently falls back to scanning the table. In the reporting incident a migration dropped an \
index a reporting query needed; with no timeouts, the queries piled up and a 20-connection pool was gone in \
45 seconds.",
    fix: "Keep the index, or first create its replacement (`CREATE INDEX CONCURRENTLY` on the same leading \
column) in an earlier migration, or change the query in the same pull request so it no longer needs it.",
    bad: "\
-- migration: 001_reports.sql
CREATE TABLE daily_reports (id bigint PRIMARY KEY, day date NOT NULL, region text NOT NULL, total numeric);
CREATE INDEX daily_reports_day ON daily_reports (day);
-- query: revenue_by_day.sql
SELECT region, sum(total) FROM daily_reports WHERE day BETWEEN $1 AND $2 GROUP BY region;
-- migration: 002_drop_unused_index.sql
DROP INDEX daily_reports_day;",
    good: "\
-- migration: 001_reports.sql
CREATE TABLE daily_reports (id bigint PRIMARY KEY, day date NOT NULL, region text NOT NULL, total numeric);
CREATE INDEX daily_reports_day ON daily_reports (day);
-- query: revenue_by_day.sql
SELECT region, sum(total) FROM daily_reports WHERE day BETWEEN $1 AND $2 GROUP BY region;
-- migration: 002_replace_index.sql
SET lock_timeout = '5s';
CREATE INDEX CONCURRENTLY daily_reports_day_region ON daily_reports (day, region);
-- migration: 003_drop_old_index.sql
SET lock_timeout = '5s';
DROP INDEX CONCURRENTLY daily_reports_day;",
    equivalents: "No equivalent in squawk, strong_migrations or eugene: they do not read the application's queries.",
};

/// The indexes a statement drops, with their table.
fn dropped<'s>(cx: &Context<'s>) -> Vec<&'s Index> {
    match &cx.statement.ddl {
        Ddl::Drop { kind: ObjectKind::Index, names, .. } => {
            names.iter().filter_map(|n| cx.schema.indexes.get(n)).collect()
        }
        Ddl::AlterTable { table, actions, .. } => actions
            .iter()
            .filter_map(|a| match a {
                AlterAction::DropConstraint { name, .. } => cx
                    .schema
                    .table(table)
                    .and_then(|t| t.constraints.iter().find(|c| &c.name == name))
                    .and_then(|c| c.index.as_ref())
                    .and_then(|i| cx.schema.indexes.get(i)),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// Where a query or view compares the index's leading key in a way the index can serve.
struct User {
    place: String,
    what: String,
}

fn users(cx: &Context, table: &str, leading: &IndexKey) -> Vec<User> {
    let serves = |u: &crate::sql::query::ColumnUse| {
        u.table == table
            && match leading {
                IndexKey::Column(c) => u.wrapped.is_none() && &u.column == c,
                IndexKey::Expression(e) => u.wrapped.as_ref().is_some_and(|w| {
                    canonical_expression(&w.expression, table, cx.schema) == canonical_expression(e, table, cx.schema)
                }),
            }
    };
    let mut out = Vec::new();
    for query in cx.facts.queries {
        for statement in &query.file.parsed.statements {
            let Some(ast) = &statement.ast else { continue };
            if let Some(u) = predicate_uses(ast, cx.schema, 0).into_iter().find(|u| serves(u)) {
                let line = query.host_line(u.position.line, u.position.column);
                let what = query.describe(statement).unwrap_or_else(|| "query".into());
                out.push(User { place: format!("{}:{line}", query.query.file), what });
            }
        }
    }
    for view in cx.schema.views.values() {
        if let Some(u) = view.uses.iter().find(|u| serves(u)) {
            out.push(User {
                place: format!("{}:{}", view.origin.file, u.position.line),
                what: format!("view {}", view.name),
            });
        }
    }
    out
}

impl Rule for DropIndexInUse {
    fn meta(&self) -> &'static RuleMeta {
        &META
    }

    fn check(&self, cx: &Context, out: &mut Vec<Finding>) {
        if cx.migration().is_none() {
            return;
        }
        let dropped = dropped(cx);
        for index in &dropped {
            let Some(leading) = index.keys.first() else { continue };
            let replaced = cx.schema.indexes_on(&index.table).any(|i| {
                !dropped.iter().any(|d| d.name == i.name) && i.keys.first() == Some(leading) && i.predicate.is_none()
            });
            if replaced {
                continue;
            }
            let users = users(cx, &index.table, leading);
            let Some(first) = users.first() else { continue };
            let more = match users.len() {
                1 => String::new(),
                n => format!(" (and {} more)", n - 1),
            };
            out.push(
                cx.finding(
                    &META,
                    format!(
                        "dropping index {} leaves no index leading with {}.{}, which the {} at {} filters on{more}",
                        index.describe(),
                        index.table,
                        leading.display(),
                        first.what,
                        first.place
                    ),
                )
                .fact("index", index.describe())
                .fact("used by", users.iter().map(|u| u.place.clone()).collect::<Vec<_>>().join(", ")),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::testing::{check_examples, lint_files};

    const BASE: &str = "CREATE TABLE reports (id bigint PRIMARY KEY, day date, region text, code text);
CREATE INDEX reports_day ON reports (day);
ALTER TABLE reports ADD CONSTRAINT reports_code_key UNIQUE (code);";

    fn flagged(files: &[(&str, &str)]) -> Vec<Finding> {
        lint_files(files, "").into_iter().filter(|f| f.rule == META.id).collect()
    }

    #[test]
    fn examples_lint_as_documented() {
        check_examples(&META, "");
    }

    #[test]
    fn names_the_query_file_and_line() {
        let found = flagged(&[
            ("001.sql", BASE),
            ("queries/daily.sql", "SELECT region\nFROM reports r\nWHERE r.day = $1;"),
            ("002.sql", "DROP INDEX reports_day;"),
        ]);
        assert_eq!(found.len(), 1);
        assert!(found[0].message.contains("queries/daily.sql:3"), "{}", found[0].message);
    }

    #[test]
    fn dropping_a_unique_constraint_drops_its_index() {
        let found = flagged(&[
            ("001.sql", BASE),
            ("queries/by_code.sql", "SELECT * FROM reports WHERE code = $1;"),
            ("002.sql", "ALTER TABLE reports DROP CONSTRAINT reports_code_key;"),
        ]);
        assert_eq!(found.len(), 1);
    }

    #[test]
    fn views_count_as_users() {
        let found = flagged(&[
            ("001.sql", BASE),
            ("002.sql", "CREATE VIEW today AS SELECT * FROM reports WHERE day = current_date;"),
            ("003.sql", "DROP INDEX CONCURRENTLY IF EXISTS reports_day;"),
        ]);
        assert_eq!(found.len(), 1);
        assert!(found[0].message.contains("view today"));
    }

    #[test]
    fn no_user_or_a_replacement_means_no_finding() {
        assert!(flagged(&[("001.sql", BASE), ("002.sql", "DROP INDEX reports_day;")]).is_empty());
        assert!(flagged(&[
            ("001.sql", BASE),
            ("queries/daily.sql", "SELECT * FROM reports WHERE day = $1;"),
            ("002.sql", "CREATE INDEX reports_day_region ON reports (day, region);"),
            ("003.sql", "DROP INDEX reports_day;"),
        ])
        .is_empty());
        // A query that wraps the column never used the index.
        assert!(flagged(&[
            ("001.sql", BASE),
            ("queries/daily.sql", "SELECT * FROM reports WHERE day::text = $1;"),
            ("002.sql", "DROP INDEX reports_day;"),
        ])
        .is_empty());
    }
}
