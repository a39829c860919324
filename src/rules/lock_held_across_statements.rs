use super::claims;
use super::grouping::{fold, lines, Head};
use super::{Context, HeldLock, Rule, RuleMeta, SourceFile, TableSize};
use crate::finding::{Fact, Finding, Severity};
use crate::rules::locks::Lock;
use crate::rules::Category;
use crate::sql::ddl::{AlterAction, ConstraintKind, Ddl, Name, ReindexKind};
use crate::sql::types::Cost;

pub struct LockHeldAcrossStatements;

pub static META: RuleMeta = RuleMeta {
    id: "lock-held-across-statements",
    severity: Severity::Error,
    category: Category::MigrationSafety,
    summary: "Slow work while the transaction holds a blocking lock on an existing table",
    what: "Once a statement takes ACCESS EXCLUSIVE (or SHARE, SHARE ROW EXCLUSIVE) on an existing table inside a \
transaction — an explicit `BEGIN … COMMIT` or the runner's per-file transaction — that lock is held until COMMIT. \
Flags the slow work that keeps it held: an index build, a table rewrite or scan, a constraint validation, an \
UPDATE or DELETE, copying rows with INSERT … SELECT or CREATE TABLE … AS, REFRESH MATERIALIZED VIEW. Instant \
catalog changes (ADD COLUMN without a volatile default, SET/DROP DEFAULT, DROP NOT NULL, renames, DROP INDEX, \
comments, grants, functions, views) are not flagged. Waiting for another table's lock with no `lock_timeout` in \
force is the other way to hold the lock for long; it has the same cause and fix as `missing-lock-timeout`, which \
reports it as an error naming the lock held. Slow work on the locked table itself that its own rule already \
reports (an index build, a rewrite, a validating constraint, a whole-table backfill) is left to that rule. One \
finding per held lock, naming the lock, the slow statement and how long it extends the lock; severity follows the \
size of the table the slow work runs on (an UPDATE with a WHERE on a table of unknown size is a warning).",
    why: "Locks are held until COMMIT: the table stays blocked for the duration of everything that follows, not \
just the quick ALTER. A backfill or an index build after an instant ALTER turns a one-millisecond lock into \
minutes of failed requests.",
    fix: "Commit right after the statement that takes the lock: put the slow work (backfills, index builds, \
validations) in its own transaction or migration.",
    bad: "\
-- migration: 001_orders.sql
CREATE TABLE orders (id bigint PRIMARY KEY, status text);
CREATE TABLE customers (id bigint PRIMARY KEY, tier text);
-- migration: 002_tiers.sql
SET lock_timeout = '5s';
BEGIN;
ALTER TABLE orders ADD COLUMN tier text;
CREATE INDEX customers_tier ON customers (tier);
COMMIT;",
    good: "\
-- migration: 001_orders.sql
CREATE TABLE orders (id bigint PRIMARY KEY, status text);
CREATE TABLE customers (id bigint PRIMARY KEY, tier text);
-- migration: 002_tiers.sql
SET lock_timeout = '5s';
BEGIN;
ALTER TABLE orders ADD COLUMN tier text;
ALTER TABLE customers ALTER COLUMN tier SET DEFAULT 'basic';
COMMIT;
CREATE INDEX CONCURRENTLY customers_tier ON customers (tier);",
    equivalents: "squawk: none; strong_migrations: none; eugene: E4",
};

/// Slow work that keeps the held lock: its duration grows with `table` (empty: unknown).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Work {
    table: Name,
    /// What it does ("builds index b_y on b").
    what: String,
    /// The time it adds ("an index build").
    how_long: &'static str,
    /// Only the rows a WHERE selects: how many is unknown without the table's size.
    selective: bool,
    /// What it claims PostgreSQL does to `table` (see `claims`), with the index it names.
    claims: Vec<(claims::Work, Option<Name>)>,
}

/// One piece of slow work an `ALTER TABLE` sub-command does: completing "while this statement …",
/// the time it adds, and its claims.
type Slow = (String, &'static str, Vec<(claims::Work, Option<Name>)>);

/// What `action` on `table` does that is slow (rewrite, scan, index build), if anything.
fn slow_action(cx: &Context, action: &AlterAction, table: &str) -> Option<Slow> {
    let version = cx.facts.postgres_version;
    let validated = |c: &crate::sql::ddl::Constraint, column| super::work::validates_existing_rows(c, column);
    let builds_index = |c: &crate::sql::ddl::Constraint| {
        matches!(c.kind, ConstraintKind::PrimaryKey { .. } | ConstraintKind::Unique { .. })
    };
    let rewrite = || vec![(claims::Work::Rewrite, None)];
    let scan = || vec![(claims::Work::Scan, None)];
    match action {
        AlterAction::AddColumn { column, .. } => {
            if let Some(reason) = super::add_column_volatile_default::rewrite_reason_in(column, cx.schema, version) {
                Some((
                    format!("rewrites {table} to add column {} ({reason})", column.name),
                    "a full rewrite",
                    rewrite(),
                ))
            } else if column.constraints.iter().any(builds_index) {
                let what = format!("builds a unique index on {table} for new column {}", column.name);
                Some((what, "an index build", vec![(claims::Work::Build, None)]))
            } else {
                column.constraints.iter().any(|c| validated(c, Some(column))).then(|| {
                    let what = format!("checks every row of {table} against new column {}'s constraint", column.name);
                    (what, "a full scan", scan())
                })
            }
        }
        AlterAction::AddConstraint(c) if builds_index(c) => Some((
            format!("builds the index of a new unique or primary key constraint on {table}"),
            "an index build",
            vec![(claims::Work::Build, None)],
        )),
        AlterAction::AddConstraint(c) if validated(c, None) => {
            Some((format!("checks every row of {table} against a new constraint"), "a full scan", scan()))
        }
        AlterAction::ValidateConstraint { name } => {
            Some((format!("validates constraint {name} against every row of {table}"), "a full scan", scan()))
        }
        AlterAction::SetNotNull { column } => {
            let proven = super::work::set_not_null_proven(cx.schema, table, column, version);
            proven
                .is_none_or(|p| !p.skips_scan())
                .then(|| (format!("scans every row of {table} to set {column} NOT NULL"), "a full scan", scan()))
        }
        AlterAction::SetType { column, data_type, using, through, collation } => {
            let utc = cx.migration().and_then(|s| s.timezone()).is_some_and(super::context::is_utc);
            let change = super::work::type_change(
                cx.schema,
                table,
                column,
                data_type,
                using.as_deref(),
                through,
                collation.as_deref(),
                version,
                utc,
            );
            match change.cost {
                Cost::Nothing => None,
                Cost::Rewrite => {
                    Some((format!("rewrites {table} to change {column} to {data_type}"), "a full rewrite", rewrite()))
                }
                Cost::IndexRebuild => Some((
                    format!("rebuilds {} to change {table}.{column} to {data_type}", change.rebuilt.join(", ")),
                    "an index build",
                    change.rebuilt.iter().map(|i| (claims::Work::Rebuild, Some(i.clone()))).collect(),
                )),
            }
        }
        AlterAction::Other(text) => {
            let text = text.to_lowercase();
            ["set logged", "set unlogged", "set tablespace", "set access method"]
                .iter()
                .any(|k| text.contains(k))
                .then(|| (format!("rewrites {table} ({text})"), "a full rewrite", rewrite()))
        }
        _ => None,
    }
}

/// Whether an INSERT copies rows from a query rather than inserting listed VALUES.
fn copies_rows(cx: &Context) -> bool {
    match cx.statement.ast.as_deref() {
        Some(sqlparser::ast::Statement::Insert(insert)) => {
            insert.source.as_ref().is_some_and(|q| !matches!(*q.body, sqlparser::ast::SetExpr::Values(_)))
        }
        _ => false,
    }
}

/// The existing tables a query statement reads (its FROM clauses), for INSERT … SELECT and CREATE TABLE … AS.
fn read_tables(cx: &Context, except: &str) -> Vec<Name> {
    cx.statement
        .ast
        .as_deref()
        .map(crate::sql::query::relations)
        .unwrap_or_default()
        .into_iter()
        .filter(|t| t != except && cx.schema.table(t).is_some() && cx.is_existing_table(t))
        .collect()
}

/// The slow work the statement does under `held`, if any.
fn slow_work(cx: &Context, held: &HeldLock) -> Option<Work> {
    let existing = |t: &str| cx.is_existing_table(t);
    let work = |table: &Name, what: String, how_long: &'static str, claims: Vec<(claims::Work, Option<Name>)>| {
        existing(table).then(|| Work { table: table.clone(), what, how_long, selective: false, claims })
    };
    match &cx.statement.ddl {
        // Its own rule (create-index-non-concurrently) reports a build on the locked table.
        Ddl::CreateIndex(index) if !index.concurrently && index.table != held.table => work(
            &index.table,
            format!("builds index {} on {}", cx.schema.index_name(index), index.table),
            "an index build",
            vec![(claims::Work::Build, Some(cx.schema.index_name(index)))],
        ),
        Ddl::AlterTable { table, actions, .. } => {
            actions
                .iter()
                // On the locked table, only VALIDATE has no rule of its own that reports it.
                .filter(|a| *table != held.table || matches!(a, AlterAction::ValidateConstraint { .. }))
                .find_map(|a| slow_action(cx, a, table))
                .and_then(|(what, how_long, claims)| work(table, what, how_long, claims))
        }
        Ddl::Update { table, has_where } | Ddl::Delete { table, has_where } if !table.is_empty() => {
            let verb = if matches!(cx.statement.ddl, Ddl::Update { .. }) { "updates" } else { "deletes" };
            let whole = !has_where || super::unbatched_backfill::whole_table_reason(cx, table).is_some();
            // A whole-table backfill of the locked table is unbatched-backfill's finding.
            if whole && *table == held.table {
                None
            } else if whole {
                work(table, format!("{verb} every row of {table}"), "a statement over every row", Vec::new())
            } else {
                existing(table).then(|| Work {
                    table: table.clone(),
                    what: format!("{verb} the rows of {table} its WHERE selects"),
                    how_long: "the whole statement",
                    selective: true,
                    claims: Vec::new(),
                })
            }
        }
        Ddl::Insert { table } if copies_rows(cx) => read_tables(cx, table).first().and_then(|source| {
            let what = format!("copies rows of {source} into {table} (INSERT … SELECT)");
            work(source, what, "a full scan", vec![(claims::Work::Scan, None)])
        }),
        Ddl::CreateTable { name, from_query: true, .. } => read_tables(cx, name).first().and_then(|source| {
            let what = format!("creates {name} from the rows of {source}");
            work(source, what, "a full scan", vec![(claims::Work::Scan, None)])
        }),
        Ddl::Reindex { concurrently: false, kind, name } => Some(Work {
            table: String::new(),
            what: match kind {
                ReindexKind::Index => format!("rebuilds index {name} (REINDEX)"),
                ReindexKind::Table => format!("rebuilds the indexes of {name} (REINDEX)"),
                ReindexKind::Schema => format!("rebuilds the indexes of schema {name} (REINDEX)"),
                ReindexKind::Database | ReindexKind::System => "rebuilds the indexes of the database (REINDEX)".into(),
            },
            how_long: "an index build",
            selective: false,
            claims: Vec::new(),
        }),
        Ddl::RefreshMaterializedView { .. } => Some(Work {
            table: String::new(),
            what: "recomputes a materialized view (REFRESH MATERIALIZED VIEW)".into(),
            how_long: "the whole query",
            selective: false,
            claims: Vec::new(),
        }),
        _ => None,
    }
}

/// How big the slow work is: the severity and the words for the time it adds.
fn weigh(cx: &Context, work: &Work) -> Option<(Severity, String)> {
    let size = if work.table.is_empty() { TableSize::Unknown } else { cx.table_size(&work.table) };
    let severity = match size {
        TableSize::Tiny(_) => return None,
        TableSize::Medium(_) => Severity::Warning,
        TableSize::Unknown if work.selective => Severity::Warning,
        TableSize::Large(_) | TableSize::Unknown => Severity::Error,
    };
    let on = match size {
        _ if work.table.is_empty() => String::new(),
        TableSize::Unknown => format!(" on {}, whose size is unknown", work.table),
        TableSize::Tiny(r) | TableSize::Medium(r) | TableSize::Large(r) => {
            format!(" on {} ({} rows)", work.table, r.rows)
        }
    };
    Some((severity, format!("for {}{on}", work.how_long)))
}

impl Rule for LockHeldAcrossStatements {
    fn meta(&self) -> &'static RuleMeta {
        &META
    }

    fn check(&self, cx: &Context, out: &mut Vec<Finding>) {
        let Some(state) = cx.migration() else { return };
        let Some(held) = &state.held_lock else { return };
        let Some(work) = slow_work(cx, held) else { return };
        let Some((severity, how_long)) = weigh(cx, &work) else { return };
        let blocked = if held.mode == Lock::AccessExclusive { "unreadable and unwritable" } else { "unwritable" };
        let message = format!(
            "the transaction holds {} on {} (taken at line {}) while this statement {}: {} stays {blocked} {how_long}",
            held.mode.as_str(),
            held.table,
            held.line,
            work.what,
            held.table,
        );
        let mut finding = cx
            .finding(&META, message)
            .fact("lock held", format!("{} on {}", held.mode.as_str(), held.table))
            .fact("lock taken at line", held.line.to_string())
            .fact("extended by", how_long)
            .fact("transaction", cx.transaction_fact());
        finding.severity = severity;
        let held_claim = claims::Claim::lock(held.line, held.column, held.table.as_str(), held.mode);
        let work_claims = work.claims.iter().map(|(kind, index)| {
            let claim = cx.claim_work(&work.table, *kind);
            match index {
                Some(index) => claim.on_index(index.as_str()),
                None => claim,
            }
        });
        out.push(claims::add(finding, std::iter::once(held_claim).chain(work_claims)));
    }

    fn finish_file(&self, _file: &SourceFile, findings: &mut Vec<Finding>) {
        let lock_line = |f: &Finding| f.facts.iter().find(|x| x.name == "lock taken at line").map(|x| x.value.clone());
        fold(findings, META.id, Head::MostSevere, lock_line, |head, others| {
            head.message = format!(
                "{}; {} other statement(s) extend the same lock ({})",
                head.message,
                others.len(),
                lines(others)
            );
            head.facts.push(Fact { name: "also extended by".into(), value: lines(others) });
            claims::gather(head, others);
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::testing::{check_examples, lint_with, of, Setup};

    const TABLES: &str =
        "CREATE TABLE a (id int PRIMARY KEY, x int); CREATE INDEX a_x ON a (x); CREATE TABLE b (id int, y int); CREATE TABLE c (id int);";

    fn found(sql: &str, runner: bool, tables: &str) -> Vec<Finding> {
        let all = lint_with(
            &[("001.sql", TABLES), ("002.sql", sql)],
            &Setup { in_transaction: runner, tables, ..Setup::default() },
        );
        of(&all, META.id).into_iter().cloned().collect()
    }

    fn lines(sql: &str, runner: bool) -> Vec<(usize, Severity)> {
        found(sql, runner, "").iter().map(|f| (f.line, f.severity)).collect()
    }

    const E: Severity = Severity::Error;
    const W: Severity = Severity::Warning;

    #[test]
    fn examples_lint_as_documented() {
        check_examples(&META, "");
    }

    #[test]
    fn slow_work_under_the_lock_is_an_error_naming_lock_statement_and_time() {
        let f = found(
            "SET lock_timeout = '5s';\nBEGIN;\nALTER TABLE a ADD COLUMN z int;\nCREATE INDEX b_y ON b (y);\nCOMMIT;",
            false,
            "[rows]\nb = 2000000\n",
        );
        assert_eq!(f.len(), 1);
        assert_eq!((f[0].line, f[0].severity), (4, E));
        assert_eq!(
            f[0].message,
            "the transaction holds ACCESS EXCLUSIVE on a (taken at line 3) while this statement builds index b_y on b: \
             a stays unreadable and unwritable for an index build on b (2000000 rows)"
        );
        // The runner's transaction counts; autocommit releases the lock at once.
        assert_eq!(lines("ALTER TABLE a ADD COLUMN z int;\nUPDATE b SET y = 1;", true), [(2, E)]);
        assert_eq!(lines("ALTER TABLE a ADD COLUMN z int;\nUPDATE b SET y = 1;", false), []);
        // SHARE (a plain CREATE INDEX) blocks writes until COMMIT too.
        let f = found("BEGIN;\nCREATE INDEX a_x2 ON a (x);\nDELETE FROM b;\nCOMMIT;", false, "");
        assert!(
            f[0].message.contains("holds SHARE on a") && f[0].message.contains("a stays unwritable"),
            "{}",
            f[0].message
        );
        // Validating in the same transaction defeats NOT VALID.
        assert_eq!(
            lines("SET lock_timeout = '1s';\nBEGIN;\nALTER TABLE a ADD CONSTRAINT x_pos CHECK (x > 0) NOT VALID;\nALTER TABLE a VALIDATE CONSTRAINT x_pos;\nCOMMIT;", false),
            [(4, E)]
        );
        assert_eq!(
            lines("SET lock_timeout = '1s';\nBEGIN;\nALTER TABLE a ADD COLUMN z int;\nINSERT INTO c SELECT id FROM b;\nCOMMIT;", false),
            [(4, E)],
            "copying rows scans b"
        );
    }

    #[test]
    fn instant_changes_with_a_lock_timeout_are_not_findings() {
        let quick = "SET lock_timeout = '5s';\nBEGIN;\nALTER TABLE a ADD COLUMN z int DEFAULT 0;\nALTER TABLE b ALTER COLUMN y DROP NOT NULL;\n\
                     ALTER TABLE b ALTER COLUMN y SET DEFAULT 1;\nALTER TABLE c RENAME COLUMN id TO c_id;\nCOMMENT ON TABLE a IS 'a';\n\
                     CREATE TABLE d (id int);\nCREATE INDEX d_id ON d (id);\nCREATE VIEW v AS SELECT id FROM a;\nINSERT INTO b VALUES (1, 2);\nCOMMIT;";
        assert_eq!(lines(quick, false), []);
        // Without the timeout, waiting for b's lock keeps a blocked too: missing-lock-timeout's
        // finding (an error then), not a second one here.
        let unbounded = quick.replacen("SET lock_timeout = '5s';\n", "", 1);
        assert_eq!(lines(&unbounded, false), []);
        let all = lint_with(&[("001.sql", TABLES), ("002.sql", &unbounded)], &Setup::default());
        let timeout = of(&all, "missing-lock-timeout");
        assert_eq!(timeout.len(), 1);
        assert_eq!(timeout[0].severity, E);
    }

    #[test]
    fn severity_follows_the_size_of_the_slow_work() {
        let update = "SET lock_timeout = '5s';\nBEGIN;\nALTER TABLE a ALTER COLUMN x SET DEFAULT 3;\nUPDATE a SET x = 3 WHERE x = 1;\nCOMMIT;";
        assert_eq!(lines(update, false), [(4, W)], "a selective UPDATE of a table of unknown size");
        assert!(found(update, false, "[rows]\na = 1\n").is_empty(), "a one-row settings table");
        assert_eq!(found(update, false, "[rows]\na = 50000000\n")[0].severity, E);
        let index =
            "SET lock_timeout = '5s';\nBEGIN;\nALTER TABLE a ADD COLUMN z int;\nCREATE INDEX b_y ON b (y);\nCOMMIT;";
        assert_eq!(found(index, false, "[rows]\nb = 50000\n")[0].severity, W);
        assert!(found(index, false, "[rows]\nb = 50\n").is_empty());
    }

    #[test]
    fn slow_work_on_the_locked_table_is_left_to_its_own_rule() {
        for sql in [
            "DROP INDEX a_x;\nCREATE INDEX a_x ON a (x);",
            "ALTER TABLE a ADD COLUMN z int;\nALTER TABLE a ALTER COLUMN x SET NOT NULL;",
            "ALTER TABLE a ADD COLUMN z int;\nUPDATE a SET z = x;",
        ] {
            let sql = format!("SET lock_timeout = '5s';\n{sql}");
            assert_eq!(lines(&sql, true), [], "{sql}");
        }
    }

    #[test]
    fn the_most_severe_statement_carries_the_finding() {
        let f = found(
            "SET lock_timeout = '5s';\nBEGIN;\nALTER TABLE a ADD COLUMN z int;\nUPDATE b SET y = 1 WHERE id = 3;\nCREATE INDEX c_id ON c (id);\nCOMMIT;",
            false,
            "",
        );
        assert_eq!(f.len(), 1);
        assert_eq!((f[0].line, f[0].severity), (5, E));
        assert_eq!(f[0].facts.iter().find(|x| x.name == "also extended by").unwrap().value, "line 4");
    }
}
