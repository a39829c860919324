use super::context::Context;
use super::meta::Category;
use super::meta::RuleMeta;
use super::rule::Rule;
use crate::finding::{Finding, Severity};
use crate::policy::index_usage::{IndexScans, IndexUsage};
use crate::queries::Source;
use crate::schema::Index;
use crate::sql::ddl::{AlterAction, ConstraintKind, Ddl, IndexKey, ObjectKind};
use crate::sql::query::{canonical_expression, predicate_uses};

pub struct DropIndexInUse;

pub static META: RuleMeta = RuleMeta {
    id: "drop-index-in-use",
    severity: Severity::Error,
    category: Category::Incident,
    summary: "An index is dropped while a query or view filters on its leading column and no other index leads with it",
    what: "Flags `DROP INDEX`, and dropping a UNIQUE or PRIMARY KEY constraint (which drops its index), when a \
query file or a view filters or joins on the dropped index's leading column (or expression) and no remaining \
index on the table leads with it. An index (or a PRIMARY KEY or UNIQUE constraint) led by the same key that the \
same file creates later, before the drop's transaction commits, replaces it: the drop's ACCESS EXCLUSIVE lock keeps \
every query waiting until then (crates.io's and ente's migrations); created outside that transaction, the finding \
stays and says so. Names the query's file and line. In `sluice check` this is the one finding \
for the problem: what the unchanged query shows because of the drop (a `function-on-indexed-column` finding, a \
plan regression) is folded into it rather than reported a second time on the query. With production's \
workload (`[queries] workload`) its entries are users too, named busiest first with their rate; with its \
index usage (`[policies] index_usage`) the finding says how often production scanned the index, fires when \
production used it though no query shows it, and calls an index never scanned since a reset at least 30 days \
before the snapshot unused (info) (docs/workload.md).",
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

/// An index created later in the dropping file, on the same table and led by the same key.
struct Replacement {
    line: usize,
    /// Created before the drop's transaction commits: PostgreSQL's lock on the dropped index
    /// keeps every query waiting until then, so none runs without an index (crates.io's BRIN
    /// recreation, ente's `DROP CONSTRAINT … ADD CONSTRAINT UNIQUE` in one transaction).
    same_transaction: bool,
}

fn replacement_later(cx: &Context, dropped: &Index, leading: &IndexKey) -> Option<Replacement> {
    let super::context::Role::Migration(state) = cx.role else { return None };
    let mut same_transaction = state.in_transaction();
    let after = cx.file.parsed.statements.iter().filter(|s| s.span.start >= cx.statement.span.end);
    for statement in after {
        let leads = match &statement.ddl {
            Ddl::Commit | Ddl::Rollback => {
                same_transaction = false;
                false
            }
            Ddl::CreateIndex(create) => {
                create.table == dropped.table && create.predicate.is_none() && create.keys.first() == Some(leading)
            }
            Ddl::AlterTable { table, actions, .. } => {
                table == &dropped.table
                    && actions.iter().any(|a| match a {
                        AlterAction::AddConstraint(c) => match &c.kind {
                            ConstraintKind::PrimaryKey { columns } | ConstraintKind::Unique { columns, .. } => {
                                matches!(leading, IndexKey::Column(l) if columns.first() == Some(l))
                            }
                            _ => false,
                        },
                        _ => false,
                    })
            }
            _ => false,
        };
        if leads {
            return Some(Replacement { line: statement.span.line, same_transaction });
        }
    }
    None
}

/// Where a query or view compares the index's leading key in a way the index can serve.
struct User {
    place: String,
    what: String,
    /// A production workload entry's calls per second (or calls): the busiest is named first.
    traffic: Option<f64>,
    /// A workload entry's SQL, shown as production runs it.
    sql: Option<String>,
}

impl User {
    /// `the query at queries/a.sql:3`, `workload entry at policies/w.csv:2 (queryid 7, 120 calls/s, 0.4 ms)`.
    fn said(&self) -> String {
        match self.traffic {
            Some(_) => format!("production's {}", self.what),
            None => format!("the {} at {}", self.what, self.place),
        }
    }
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
                let (traffic, sql) = match &query.query.source {
                    Source::Workload(origin) => {
                        (Some(origin.weight()), Some(query.file.parsed.statement_text(statement).to_string()))
                    }
                    _ => (None, None),
                };
                out.push(User { place: format!("{}:{line}", query.query.file), what, traffic, sql });
            }
        }
    }
    for view in cx.schema.views.values() {
        if let Some(u) = view.uses.iter().find(|u| serves(u)) {
            out.push(User {
                place: format!("{}:{}", view.origin.file, u.position.line),
                what: format!("view {}", view.name),
                traffic: None,
                sql: None,
            });
        }
    }
    // What production runs first, busiest first; then what the repository shows, in order.
    out.sort_by(|a, b| match (a.traffic, b.traffic) {
        (Some(x), Some(y)) => y.total_cmp(&x),
        (Some(_), None) => std::cmp::Ordering::Less,
        (None, Some(_)) => std::cmp::Ordering::Greater,
        (None, None) => std::cmp::Ordering::Equal,
    });
    out
}

/// What production's index usage says about an index: `scanned 5.1 k times since …
/// (policies/index-usage.csv:4)`.
fn production_scans(usage: &IndexUsage, scans: &IndexScans) -> String {
    let times = if scans.idx_scan == 1 { "time".to_string() } else { "times".to_string() };
    format!(
        "production scanned it {} {times} {} ({})",
        crate::finding::group_digits(scans.idx_scan),
        usage.period(),
        usage.place(scans)
    )
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
        let usage = cx.facts.policies.index_usage.as_ref();
        for index in &dropped {
            let Some(leading) = index.keys.first() else { continue };
            let replaced = cx.schema.indexes_on(&index.table).any(|i| {
                !dropped.iter().any(|d| d.name == i.name) && i.keys.first() == Some(leading) && i.predicate.is_none()
            });
            if replaced {
                continue;
            }
            let later = replacement_later(cx, index, leading);
            if let Some(Replacement { same_transaction: true, .. }) = later {
                continue;
            }
            let users = users(cx, &index.table, leading);
            let scans = usage.and_then(|u| Some((u, u.get(&index.name)?)));
            let finding = match (users.first(), scans) {
                (Some(first), _) => {
                    let more = match users.len() {
                        1 => String::new(),
                        n => format!(" (and {} more)", n - 1),
                    };
                    let mut message = format!(
                        "dropping index {} leaves no index leading with {}.{}, which {} filters on{more}",
                        index.describe(),
                        index.table,
                        leading.display(),
                        first.said(),
                    );
                    if let Some(Replacement { line, .. }) = later {
                        message.push_str(&format!(
                            "; the index at line {line} replaces it, but outside the drop's transaction: until it \
                             is built, those queries run without one"
                        ));
                    }
                    let mut severity = META.severity;
                    match scans {
                        Some((usage, scans)) if scans.idx_scan > 0 => {
                            message.push_str(&format!("; {}", production_scans(usage, scans)));
                        }
                        Some((usage, scans)) if usage.covers_long() => {
                            // What the repository shows, production contradicts: the planner
                            // serves those queries another way.
                            message.push_str(&format!("; but {}", production_scans(usage, scans)));
                            severity = Severity::Warning;
                        }
                        _ => {}
                    }
                    let mut finding = cx
                        .finding(&META, message)
                        .fact("index", index.describe())
                        .fact("used by", users.iter().map(|u| u.place.clone()).collect::<Vec<_>>().join(", "));
                    if let Some(sql) = users.iter().find_map(|u| u.sql.as_deref()) {
                        finding = finding.fact("production query", excerpt(sql));
                    }
                    finding.severity = severity;
                    finding
                }
                (None, Some((usage, scans))) if scans.idx_scan > 0 => cx
                    .finding(
                        &META,
                        format!(
                            "dropping index {}: {}, though no query Sluice reads filters on {}.{}",
                            index.describe(),
                            production_scans(usage, scans),
                            index.table,
                            leading.display()
                        ),
                    )
                    .fact("index", index.describe()),
                (None, Some((usage, scans))) if usage.covers_long() => {
                    let mut finding = cx
                        .finding(
                            &META,
                            format!(
                                "index {} is unused: {}; dropping it is safe",
                                index.describe(),
                                production_scans(usage, scans).replace("scanned it 0 times", "has not scanned it")
                            ),
                        )
                        .fact("index", index.describe());
                    finding.severity = Severity::Info;
                    finding
                }
                (None, _) => continue,
            };
            out.push(finding);
        }
    }
}

/// A query's text on one line, at most 300 characters.
fn excerpt(sql: &str) -> String {
    let collapsed = sql.split_whitespace().collect::<Vec<_>>().join(" ");
    match collapsed.char_indices().nth(300) {
        Some((cut, _)) => format!("{}…", &collapsed[..cut]),
        None => collapsed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::testing::{check_examples, lint_files, lint_with, Setup};

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
    fn a_replacement_later_in_the_same_transaction_is_no_drop() {
        // crates.io's BRIN recreation of a date index and ente's `DROP CONSTRAINT … ADD
        // CONSTRAINT UNIQUE` with the same leading column, each in one transaction: no query
        // runs between the drop and the commit without an index (the drop's lock holds them).
        let query = ("queries/q.sql", "SELECT region FROM reports WHERE day > $1 AND code = $2;");
        for migration in [
            "BEGIN;\nDROP INDEX reports_day;\nCREATE INDEX reports_day_brin ON reports USING brin (day);\nCOMMIT;",
            "BEGIN;\nALTER TABLE reports DROP CONSTRAINT reports_code_key;\nALTER TABLE reports ADD CONSTRAINT reports_code_region UNIQUE (code, region);\nCOMMIT;",
        ] {
            let found = flagged(&[("001.sql", BASE), query, ("002.sql", migration)]);
            assert!(found.is_empty(), "{migration}: {found:#?}");
        }
        // Outside a transaction the queries run without an index until the replacement is built.
        let found = flagged(&[
            ("001.sql", BASE),
            query,
            ("002.sql", "DROP INDEX reports_day;\nCREATE INDEX reports_day_brin ON reports USING brin (day);"),
        ]);
        assert_eq!(found.len(), 1, "{found:#?}");
        assert!(found[0].message.contains("the index at line 2 replaces it, but outside"), "{}", found[0].message);
        // A COMMIT before the replacement ends the drop's transaction.
        let found = flagged(&[
            ("001.sql", BASE),
            query,
            ("002.sql", "BEGIN;\nDROP INDEX reports_day;\nCOMMIT;\nCREATE INDEX reports_day_2 ON reports (day);"),
        ]);
        assert_eq!(found.len(), 1, "{found:#?}");
        // A partial index, or one led by another column, replaces nothing.
        let found = flagged(&[
            ("001.sql", BASE),
            query,
            ("002.sql", "BEGIN;\nDROP INDEX reports_day;\nCREATE INDEX r2 ON reports (region, day);\nCREATE INDEX r3 ON reports (day) WHERE code IS NULL;\nCOMMIT;"),
        ]);
        assert_eq!(found.len(), 1, "{found:#?}");
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

    const WORKLOAD_HEADER: &str =
        "queryid,calls,total_exec_time,mean_exec_time,rows,captured_at,stats_reset,dealloc,database,query\n";
    const USAGE_HEADER: &str =
        "schemaname,relname,indexrelname,idx_scan,idx_tup_read,captured_at,stats_reset,database\n";

    fn with_production(files: &[(&str, &str)], workload: &[&str], usage: Option<&str>) -> Vec<Finding> {
        let setup = Setup { workload, index_usage: usage, ..Setup::default() };
        lint_with(files, &setup).into_iter().filter(|f| f.rule == META.id).collect()
    }

    fn snapshot(at: &str, rows: &[(i64, u64, f64, &str)]) -> String {
        let mut text = WORKLOAD_HEADER.to_string();
        for (id, calls, total, query) in rows {
            let mean = total / *calls as f64;
            text.push_str(&format!(
                "{id},{calls},{total},{mean},{calls},{at},2026-11-01 00:00:00+00,0,app,\"{query}\"\n"
            ));
        }
        text
    }

    #[test]
    fn a_workload_entry_is_a_user_named_with_its_traffic_busiest_first() {
        let rare = "select * from reports where day = $1 and region = $2";
        let hot = "/* app:report */ select region from reports where day = $1 limit $2";
        let a = snapshot("2026-12-03 10:00:00+00", &[(11, 100, 50.0, rare), (12, 1_000, 400.0, hot)]);
        let b = snapshot("2026-12-03 10:00:20+00", &[(11, 120, 60.0, rare), (12, 53_000, 21_200.0, hot)]);
        let found = with_production(&[("001.sql", BASE), ("002.sql", "DROP INDEX reports_day;")], &[&a, &b], None);
        assert_eq!(found.len(), 1);
        let message = &found[0].message;
        assert!(
            message.contains(
                "which production's workload entry at policies/workload-2.csv:3 (queryid 12, 2.6 k calls/s, 0.4 ms) \
                 filters on (and 1 more)"
            ),
            "{message}"
        );
        let fact = |name: &str| found[0].facts.iter().find(|f| f.name == name).map(|f| f.value.clone());
        assert_eq!(fact("used by").unwrap(), "policies/workload-2.csv:3, policies/workload-2.csv:2");
        assert_eq!(fact("production query").unwrap(), "select region from reports where day = $1 limit $2");
    }

    #[test]
    fn production_scans_of_the_index_are_told_and_fire_without_a_query() {
        let usage = format!(
            "{USAGE_HEADER}public,reports,reports_day,5120,9000,2026-12-03 10:00:00+00,2026-09-01 00:00:00+00,app\n"
        );
        let found = with_production(&[("001.sql", BASE), ("002.sql", "DROP INDEX reports_day;")], &[], Some(&usage));
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].severity, Severity::Error);
        assert_eq!(
            found[0].message,
            "dropping index reports_day (day): production scanned it 5,120 times since the statistics reset on \
             2026-09-01 (93 days before the snapshot of 2026-12-03) (policies/index-usage.csv:2), though no query \
             Sluice reads filters on reports.day"
        );
        let with_query = with_production(
            &[
                ("001.sql", BASE),
                ("queries/d.sql", "SELECT 1 FROM reports WHERE day = $1;"),
                ("002.sql", "DROP INDEX reports_day;"),
            ],
            &[],
            Some(&usage),
        );
        assert!(with_query[0].message.ends_with("; production scanned it 5,120 times since the statistics reset on 2026-09-01 (93 days before the snapshot of 2026-12-03) (policies/index-usage.csv:2)"), "{}", with_query[0].message);
    }

    #[test]
    fn an_index_unused_since_a_long_ago_reset_is_said_to_be_unused() {
        let usage =
            |reset: &str| format!("{USAGE_HEADER}public,reports,reports_day,0,0,2026-12-03 10:00:00+00,{reset},app\n");
        let drop = [("001.sql", BASE), ("002.sql", "DROP INDEX reports_day;")];
        let found = with_production(&drop, &[], Some(&usage("2026-09-01 00:00:00+00")));
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].severity, Severity::Info);
        assert!(
            found[0].message.starts_with("index reports_day (day) is unused: production has not scanned it since"),
            "{}",
            found[0].message
        );
        // Reset two days before the snapshot: too short to call it unused.
        assert!(with_production(&drop, &[], Some(&usage("2026-12-01 00:00:00+00"))).is_empty());
        // A query file that filters on it, production never scanning it: a warning, not an error.
        let with_query = with_production(
            &[
                ("001.sql", BASE),
                ("queries/d.sql", "SELECT 1 FROM reports WHERE day = $1;"),
                ("002.sql", "DROP INDEX reports_day;"),
            ],
            &[],
            Some(&usage("2026-09-01 00:00:00+00")),
        );
        assert_eq!(with_query[0].severity, Severity::Warning);
        assert!(
            with_query[0].message.contains("; but production has not scanned it")
                || with_query[0].message.contains("; but production scanned it 0 times"),
            "{}",
            with_query[0].message
        );
    }
}
