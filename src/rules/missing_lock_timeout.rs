use super::claims;
use super::grouping::{fold, lines, Head};
use super::lock_timeout_scopes::{block_of, scope, transaction_blocks};
use super::{Context, HeldLock, MigrationState, Rule, RuleMeta, SourceFile, TableSize};
use crate::finding::{Finding, Severity};
use crate::rules::locks::is_unknown_index_table;
use crate::rules::Category;
use crate::sql::names::shown;
use std::collections::HashSet;

pub struct MissingLockTimeout;

pub static META: RuleMeta = RuleMeta {
    id: "missing-lock-timeout",
    severity: Severity::Warning,
    category: Category::MigrationSafety,
    summary: "A migration takes write-blocking locks on existing tables with no lock_timeout set",
    what: "Flags the first statement of a migration file that takes ACCESS EXCLUSIVE, SHARE ROW EXCLUSIVE or \
SHARE on a table that existed before this migration (ALTER TABLE, CREATE INDEX, DROP INDEX/TABLE, TRUNCATE, \
foreign keys) when no `SET lock_timeout` (or `SET LOCAL lock_timeout` in the current transaction) precedes it. \
One finding per file — per explicit transaction when the file has several — listing the later statements the \
same `SET` would cover. Warning; error when any of those tables is at or above `large_table_rows`, or when a \
statement waits for its lock while the transaction already holds a blocking lock on another existing table \
(that table then stays blocked for the whole wait: the unbounded kind of `lock-held-across-statements`, same \
cause and fix, reported once here, naming the lock held); silent on tiny tables.",
    why: "The lock waits behind any long-running query on the table, and every query that arrives afterwards \
queues behind the waiting lock: a one-millisecond ALTER becomes a full outage for as long as the slowest \
transaction runs.",
    fix: "Start the migration with `SET lock_timeout = '5s';` (or `SET LOCAL` inside the transaction) and retry \
on timeout: failing fast beats blocking production.",
    bad: "\
-- migration: 001_orders.sql
CREATE TABLE orders (id bigint PRIMARY KEY, note text);
-- migration: 002_drop_default.sql
ALTER TABLE orders ALTER COLUMN note SET DEFAULT '';",
    good: "\
-- migration: 001_orders.sql
CREATE TABLE orders (id bigint PRIMARY KEY, note text);
-- migration: 002_drop_default.sql
SET lock_timeout = '5s';
ALTER TABLE orders ALTER COLUMN note SET DEFAULT '';",
    equivalents: "squawk: require-lock-timeout; strong_migrations: lock_timeout (config); eugene: E9",
};

/// The fix for the statement at `line`: the one line to add, and where.
fn fix_text(line: usize, explicit_transaction: bool) -> String {
    let (set, place) = if explicit_transaction {
        ("SET LOCAL lock_timeout = '5s';", "right after this transaction's BEGIN")
    } else {
        ("SET lock_timeout = '5s';", "at the top of the file")
    };
    format!(
        "Add this line {place}, before line {line}:\n    {set}\nIt bounds every lock wait after it; retry the \
         migration when it times out: failing fast beats blocking production."
    )
}

const HELD_FACT: &str = "lock held while waiting";

fn held_fact(held: &HeldLock) -> String {
    format!("{} on {} (taken at line {})", held.mode.as_str(), held.table, held.line)
}

/// The lock this transaction already holds on another existing table while the statement waits
/// for one of `waiting_on`, with the severity of keeping that table blocked for an unbounded wait: the
/// missing timeout then blocks two tables, not one (what `lock-held-across-statements` calls an
/// unbounded wait; one root cause, reported here once).
fn held_while_waiting(cx: &Context, state: &MigrationState, waiting_on: &[String]) -> Option<(HeldLock, Severity)> {
    let held = state.held_lock.as_ref()?;
    let unknown = |t: &str| is_unknown_index_table(t) || cx.schema.views.contains_key(t);
    if unknown(&held.table) || !waiting_on.iter().any(|t| *t != held.table && !unknown(t)) {
        return None;
    }
    Some((held.clone(), cx.lock_severity(&held.table)?))
}

impl Rule for MissingLockTimeout {
    fn meta(&self) -> &'static RuleMeta {
        &META
    }

    fn checks_no_ops(&self) -> bool {
        true
    }

    fn check(&self, cx: &Context, out: &mut Vec<Finding>) {
        let Some(state) = cx.migration() else { return };
        if state.has_lock_timeout() {
            return;
        }
        let mut worst: Option<(Severity, String, &'static str)> = None;
        let mut tables = Vec::new();
        let mut locked = Vec::new();
        let mut claimed = Vec::new();
        for (table, lock) in cx.table_locks().iter().cloned() {
            if !lock.blocks_writes() || !cx.is_existing_table(&table) {
                continue;
            }
            let severity = match cx.table_size(&table) {
                TableSize::Tiny(_) => continue,
                TableSize::Large(_) => Severity::Error,
                TableSize::Medium(_) | TableSize::Unknown => Severity::Warning,
            };
            tables.push(format!("{table}: {}", cx.size_fact(&table)));
            locked.push(table.clone());
            if !is_unknown_index_table(&table) {
                claimed.push(cx.claim_lock(&table, lock));
            }
            if worst.as_ref().is_none_or(|(s, _, _)| severity > *s) {
                worst = Some((severity, table, lock.as_str()));
            }
        }
        let Some((mut severity, table, lock)) = worst else { return };
        let holding = held_while_waiting(cx, state, &locked);
        if let Some((_, held_severity)) = &holding {
            severity = severity.max(*held_severity);
        }
        let transaction = cx.transaction_fact();
        let first = state.lock_timeout_scopes.borrow_mut().first(cx.file, cx.statement.span.line, &transaction);
        let mut finding = if first {
            let table = shown(&table);
            let mut message = format!(
                "takes {lock} on {table} with no lock_timeout set: if it waits behind a long query, every query on {table} queues behind it"
            );
            if let Some((held, _)) = &holding {
                message.push_str(&format!(
                    ", and the {} this transaction holds on {} since line {} keeps {} blocked for as long as the wait lasts",
                    held.mode.as_str(),
                    shown(&held.table),
                    held.line,
                    shown(&held.table)
                ));
            }
            cx.finding(&META, message).help(fix_text(cx.statement.span.line, state.explicit_transaction))
        } else {
            // Folded into its scope's first finding: only its position and facts are read.
            let span = &cx.statement.span;
            Finding::new(META.id, severity, cx.file.display.as_str(), "").at(
                span.line,
                span.column,
                span.end_line,
                span.end_column,
            )
        };
        finding = finding.fact("table rows", tables.join("; ")).fact("transaction", transaction);
        if let Some((held, _)) = holding {
            finding = finding.fact(HELD_FACT, held_fact(&held));
        }
        finding.severity = severity;
        out.push(claims::add(finding, claimed));
    }

    fn finish_file(&self, file: &SourceFile, findings: &mut Vec<Finding>) {
        let blocks = transaction_blocks(file);
        let in_transaction = |finding: &Finding| block_of(&blocks, finding.line);
        // One finding per explicit BEGIN … COMMIT, and per transaction the tool opens (a Liquibase
        // changeset, a dbmate section), which the `transaction` fact names.
        let scope_of = |f: &Finding| {
            let tool = f.facts.iter().find(|x| x.name == "transaction").map_or("", |x| x.value.as_str());
            scope(&blocks, f.line, tool)
        };
        fold(findings, META.id, Head::First, scope_of, |head, later| {
            let place = if in_transaction(head).is_some() { "transaction" } else { "file" };
            head.message = format!(
                "{}; {} later statement(s) in this {place} ({}) lock existing tables too, and the one SET lock_timeout \
                 before line {} covers them all",
                head.message,
                later.len(),
                lines(later),
                head.line
            );
            let rows: Vec<&str> = later
                .iter()
                .flat_map(|f| f.facts.iter())
                .filter(|f| f.name == "table rows")
                .map(|f| f.value.as_str())
                .collect();
            if let Some(fact) = head.facts.iter_mut().find(|f| f.name == "table rows") {
                // The entries listed so far, kept aside: looking each new one up in the growing
                // text made a file of many locking statements quadratic.
                let mut known: HashSet<String, foldhash::fast::FixedState> =
                    fact.value.split("; ").map(str::to_string).collect();
                for more in rows {
                    if !known.contains(more) {
                        fact.value.push_str("; ");
                        fact.value.push_str(more);
                        known.extend(more.split("; ").map(str::to_string));
                    }
                }
            }
            claims::gather(head, later);
            head.facts.push(crate::finding::Fact {
                name: "later statements covered".into(),
                value: format!("{}: {}", later.len(), lines(later)),
            });
            let waits: Vec<Finding> =
                later.iter().filter(|f| f.facts.iter().any(|x| x.name == HELD_FACT)).cloned().collect();
            if let Some(first) = waits.first() {
                let held =
                    first.facts.iter().find(|x| x.name == HELD_FACT).map(|x| x.value.clone()).unwrap_or_default();
                let verb = if waits.len() == 1 { "waits" } else { "wait" };
                head.message.push_str(&format!(
                    "; {} {verb} for a lock while the transaction holds {held}, which stays blocked for as long as \
                     the wait lasts",
                    lines(&waits)
                ));
                if !head.facts.iter().any(|x| x.name == HELD_FACT) {
                    head.facts.push(crate::finding::Fact { name: HELD_FACT.into(), value: held });
                }
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::testing::{check_examples, lint_with, of, Setup};

    fn found(sql: &str, tables: &str, runner: bool) -> Vec<Severity> {
        let all = lint_with(
            &[
                ("001.sql", "CREATE TABLE t (id bigint, a int); CREATE TABLE p (id bigint PRIMARY KEY);"),
                ("002.sql", sql),
            ],
            &Setup { tables, in_transaction: runner, ..Setup::default() },
        );
        of(&all, META.id).iter().map(|f| f.severity).collect()
    }

    #[test]
    fn examples_lint_as_documented() {
        check_examples(&META, "");
    }

    #[test]
    fn severity_by_size() {
        assert_eq!(found("ALTER TABLE t ADD COLUMN b int, ADD COLUMN c int;", "", false), [Severity::Warning]);
        assert_eq!(found("ALTER TABLE t ADD COLUMN b int;", "[rows]\nt = 1000000\n", false), [Severity::Error]);
        assert_eq!(found("ALTER TABLE t ADD COLUMN b int;", "[rows]\nt = 10\n", false), Vec::<Severity>::new());
        assert_eq!(
            found(
                "ALTER TABLE t ADD CONSTRAINT f FOREIGN KEY (a) REFERENCES p (id) NOT VALID;",
                "[rows]\nt = 10\np = 5000000\n",
                false
            ),
            [Severity::Error],
            "the referenced table is locked too"
        );
        assert_eq!(
            found("CREATE INDEX CONCURRENTLY t_a ON t (a);", "", false),
            Vec::<Severity>::new(),
            "concurrent builds do not block writes"
        );
        assert_eq!(found("UPDATE t SET a = 1 WHERE id = 1;", "", false), Vec::<Severity>::new());
        assert_eq!(
            found("CREATE TRIGGER t_audit AFTER UPDATE ON t FOR EACH ROW EXECUTE FUNCTION audit();", "", false),
            [Severity::Warning],
            "a trigger locks its table"
        );
        assert_eq!(
            found("DROP TRIGGER IF EXISTS t_audit ON t;", "", false),
            Vec::<Severity>::new(),
            "the history never created that trigger on t: nothing to drop, and PostgreSQL takes no lock"
        );
    }

    /// Each lock was read from `pg_locks` on PostgreSQL 15.
    #[test]
    fn triggers_lock_their_table_and_go_with_their_function() {
        let history = "CREATE TABLE t (id bigint); CREATE TABLE u (id bigint); CREATE TABLE v (id bigint);
            CREATE FUNCTION audit() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NEW; END $$;
            CREATE TRIGGER t_audit AFTER INSERT ON t FOR EACH ROW EXECUTE FUNCTION audit();
            CREATE TRIGGER u_audit AFTER INSERT ON u FOR EACH ROW EXECUTE PROCEDURE audit();";
        let locks = |sql: &str| -> Vec<String> {
            let all = lint_with(&[("001.sql", history), ("002.sql", sql)], &Setup::default());
            of(&all, META.id).iter().map(|f| f.message.split(" with no").next().unwrap_or("").to_string()).collect()
        };
        assert_eq!(locks("ALTER TRIGGER t_audit ON t RENAME TO t_audit_log;"), ["takes ACCESS EXCLUSIVE on t"]);
        assert_eq!(locks("DROP TRIGGER IF EXISTS t_audit ON t;"), ["takes ACCESS EXCLUSIVE on t"]);
        assert_eq!(locks("DROP TRIGGER IF EXISTS v_audit ON v;"), Vec::<String>::new(), "no such trigger: no lock");
        assert_eq!(
            locks("ALTER TRIGGER t_audit ON t RENAME TO t2;\nDROP TRIGGER IF EXISTS t2 ON t;"),
            ["takes ACCESS EXCLUSIVE on t"]
        );
        let cascade =
            lint_with(&[("001.sql", history), ("002.sql", "DROP FUNCTION audit CASCADE;")], &Setup::default());
        let claims: Vec<String> = of(&cascade, META.id)
            .iter()
            .flat_map(|f| claims::of(f))
            .map(|c| format!("{} {}", c["lock"].as_str().unwrap_or(""), c["table"].as_str().unwrap_or("")))
            .collect();
        assert_eq!(claims, ["ACCESS EXCLUSIVE t", "ACCESS EXCLUSIVE u"], "the triggers calling audit() go with it");
        assert!(locks("DROP FUNCTION audit;").is_empty(), "without CASCADE PostgreSQL refuses, locking nothing");
        // Dropped with their function, the triggers are gone.
        assert!(locks("DROP FUNCTION audit CASCADE;\nDROP TRIGGER IF EXISTS t_audit ON t;")[0]
            .contains("ACCESS EXCLUSIVE on t"));
        let after = lint_with(
            &[
                ("001.sql", history),
                ("002.sql", "DROP FUNCTION audit CASCADE;"),
                ("003.sql", "DROP TRIGGER IF EXISTS t_audit ON t;"),
            ],
            &Setup::default(),
        );
        assert!(of(&after, META.id).iter().all(|f| f.file != "003.sql"), "{after:#?}");
    }

    /// A trigger that refreshes a materialized view takes the view's lock in every statement that
    /// fires it (Lemmy's `refresh_user`; read from `pg_locks` on PostgreSQL 15).
    #[test]
    fn statements_that_fire_a_trigger_take_the_locks_of_its_function() {
        let history = "CREATE TABLE users (id bigint, name text);
            CREATE MATERIALIZED VIEW user_mview AS SELECT id FROM users;
            CREATE UNIQUE INDEX ON user_mview (id);
            CREATE FUNCTION refresh_user() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                REFRESH MATERIALIZED VIEW CONCURRENTLY user_mview;
                RETURN NULL;
            END $$;
            CREATE TRIGGER refresh_user AFTER INSERT OR UPDATE OR DELETE ON users FOR EACH STATEMENT EXECUTE PROCEDURE refresh_user();";
        let locks = |sql: &str| -> Vec<String> {
            let all = lint_with(&[("001.sql", history), ("002.sql", sql)], &Setup::default());
            of(&all, META.id).iter().map(|f| f.message.split(" with no").next().unwrap_or("").to_string()).collect()
        };
        assert_eq!(locks("UPDATE users SET name = lower(name) WHERE id = 1;"), ["takes EXCLUSIVE on user_mview"]);
        assert_eq!(locks("DELETE FROM users WHERE id = 1;"), ["takes EXCLUSIVE on user_mview"]);
        assert!(locks("TRUNCATE users;")[0].starts_with("takes ACCESS EXCLUSIVE on users"), "no TRUNCATE trigger");
    }

    fn folded(sql: &str, tables: &str) -> Vec<Finding> {
        let all = lint_with(
            &[
                ("001.sql", "CREATE TABLE t (id bigint, a int); CREATE TABLE p (id bigint PRIMARY KEY);"),
                ("002.sql", sql),
            ],
            &Setup { tables, ..Setup::default() },
        );
        of(&all, META.id).into_iter().cloned().collect()
    }

    fn folded_in(sql: &str, runner: bool) -> Vec<Finding> {
        let all = lint_with(
            &[
                ("001.sql", "CREATE TABLE t (id bigint, a int); CREATE TABLE p (id bigint PRIMARY KEY);"),
                ("002.sql", sql),
            ],
            &Setup { in_transaction: runner, ..Setup::default() },
        );
        of(&all, META.id).into_iter().cloned().collect()
    }

    fn fact<'f>(finding: &'f Finding, name: &str) -> &'f str {
        finding.facts.iter().find(|f| f.name == name).map(|f| f.value.as_str()).unwrap_or("")
    }

    #[test]
    fn once_per_file_at_the_first_statement_listing_the_rest() {
        let found = folded(
            "CREATE TABLE n (id int);\nALTER TABLE t ADD COLUMN b int;\nCREATE INDEX t_a ON t (a);\n\
             CREATE INDEX n_id ON n (id);\nALTER TABLE p ADD COLUMN c int;\n",
            "[rows]\np = 5000000\n",
        );
        assert_eq!(found.len(), 1, "{found:#?}");
        let f = &found[0];
        assert_eq!(f.line, 2, "the first statement that needs the timeout");
        assert_eq!(f.severity, Severity::Error, "the large table p raises the file's finding");
        assert_eq!(fact(f, "later statements covered"), "2: lines 3 and 5", "the new table n needs no timeout");
        assert!(fact(f, "table rows").contains("p: 5000000"), "{:?}", f.facts);
        assert!(f.message.contains("2 later statement(s) in this file (lines 3 and 5)"), "{}", f.message);
        assert!(f.help.contains("before line 2:\n    SET lock_timeout = '5s';\n"), "{}", f.help);
    }

    #[test]
    fn once_per_explicit_transaction() {
        let found = folded(
            "BEGIN;\nALTER TABLE t ADD COLUMN b int;\nALTER TABLE t ADD COLUMN c int;\nCOMMIT;\n\
             BEGIN;\nALTER TABLE p ADD COLUMN c int;\nCOMMIT;\nALTER TABLE t DROP COLUMN c;\n",
            "",
        );
        let lines: Vec<usize> = found.iter().map(|f| f.line).collect();
        assert_eq!(lines, [2, 6, 8]);
        assert_eq!(fact(&found[0], "later statements covered"), "1: line 3");
        assert!(found[0].help.contains("SET LOCAL lock_timeout = '5s';"), "{}", found[0].help);
        assert!(found[2].help.contains("at the top of the file"), "{}", found[2].help);
        // Set once at the top, the timeout covers every transaction.
        assert!(folded("SET lock_timeout = '3s';\nBEGIN;\nALTER TABLE t ADD COLUMN b int;\nCOMMIT;\n", "").is_empty());
    }

    #[test]
    fn once_per_transaction_of_the_migration_tool() {
        // The runner's transaction ends at the file's own COMMIT: what follows runs statement by
        // statement, a scope of its own with its own SET to add.
        let found = folded_in(
            "ALTER TABLE t ADD COLUMN b int;\nALTER TABLE t ADD COLUMN c int;\nCOMMIT;\n\
             ALTER TABLE p ADD COLUMN d int;\nALTER TABLE p ADD COLUMN e int;\n",
            true,
        );
        let lines: Vec<usize> = found.iter().map(|f| f.line).collect();
        assert_eq!(lines, [1, 4], "{found:#?}");
        assert_eq!(fact(&found[0], "later statements covered"), "1: line 2");
        assert_eq!(fact(&found[1], "later statements covered"), "1: line 5");
        assert_ne!(fact(&found[0], "transaction"), fact(&found[1], "transaction"));
        assert!(found.iter().all(|f| f.message.starts_with("takes ACCESS EXCLUSIVE on ")), "{found:#?}");
    }

    #[test]
    fn a_wait_while_the_transaction_holds_another_lock_is_an_error_naming_that_lock() {
        let sql = "ALTER TABLE t ADD COLUMN b int;\nALTER TABLE p ADD COLUMN c int;\n";
        let f = &folded_in(sql, true)[0];
        assert_eq!((f.line, f.severity), (1, Severity::Error), "{f:#?}");
        assert!(
            f.message.ends_with(
                "; line 2 waits for a lock while the transaction holds ACCESS EXCLUSIVE on t (taken at line 1), which \
                 stays blocked for as long as the wait lasts"
            ),
            "{}",
            f.message
        );
        assert_eq!(fact(f, "lock held while waiting"), "ACCESS EXCLUSIVE on t (taken at line 1)");
        // Each statement on its own: no lock is held across them.
        assert_eq!(folded_in(sql, false)[0].severity, Severity::Warning);
        // The same table twice, or an index the history never showed (maybe on t itself): one lock.
        assert_eq!(
            folded_in("ALTER TABLE t ADD COLUMN b int;\nALTER TABLE t ADD COLUMN c int;\n", true)[0].severity,
            Severity::Warning
        );
        assert_eq!(
            folded_in("ALTER TABLE t ADD COLUMN b int;\nDROP INDEX never_seen;\n", true)[0].severity,
            Severity::Warning
        );
        // A foreign key from the locked table waits for the table it references.
        let fk = "ALTER TABLE t ADD COLUMN b int;\nALTER TABLE t ADD CONSTRAINT t_b_fk FOREIGN KEY (b) REFERENCES p (id) NOT VALID;\n";
        assert_eq!(folded_in(fk, true)[0].severity, Severity::Error);
        // A tiny table held is not blocked for long.
        let tiny = lint_with(
            &[("001.sql", "CREATE TABLE t (id bigint); CREATE TABLE p (id bigint);"), ("002.sql", sql)],
            &Setup { tables: "[rows]\nt = 5\n", in_transaction: true, ..Setup::default() },
        );
        assert_eq!(of(&tiny, META.id)[0].severity, Severity::Warning);
    }

    #[test]
    fn dropping_or_replacing_an_existing_view_waits_for_its_readers() {
        let with_view = |sql: &str| {
            let all = lint_with(
                &[("001.sql", "CREATE TABLE t (id bigint); CREATE VIEW v AS SELECT id FROM t;"), ("002.sql", sql)],
                &Setup::default(),
            );
            of(&all, META.id).len()
        };
        assert_eq!(with_view("DROP VIEW v;"), 1);
        assert_eq!(with_view("CREATE OR REPLACE VIEW v AS SELECT id FROM t WHERE id > 0;"), 1);
        assert_eq!(with_view("CREATE VIEW w AS SELECT id FROM t;"), 0, "a new view locks nothing");
        assert_eq!(with_view("SET lock_timeout = '2s'; DROP VIEW v;"), 0);
    }

    #[test]
    fn set_local_lasts_until_the_transaction_ends() {
        let w = [Severity::Warning];
        assert_eq!(
            found("BEGIN; SET LOCAL lock_timeout = '2s'; ALTER TABLE t ADD COLUMN b int; COMMIT;", "", false),
            Vec::<Severity>::new()
        );
        assert_eq!(
            found("BEGIN; SET LOCAL lock_timeout = '2s'; COMMIT; ALTER TABLE t ADD COLUMN b int;", "", false),
            w
        );
        assert_eq!(
            found("SET LOCAL lock_timeout = '2s'; ALTER TABLE t ADD COLUMN b int;", "", false),
            w,
            "no transaction: no effect"
        );
        assert_eq!(
            found("SET LOCAL lock_timeout = '2s'; ALTER TABLE t ADD COLUMN b int;", "", true),
            Vec::<Severity>::new(),
            "the runner's transaction"
        );
        assert_eq!(found("SET lock_timeout = '2s'; BEGIN; ALTER TABLE t ADD COLUMN b int; COMMIT; ALTER TABLE t ADD COLUMN c int;", "", false), Vec::<Severity>::new());
        assert_eq!(found("SET lock_timeout = 0; ALTER TABLE t ADD COLUMN b int;", "", false), w, "0 disables it");
        assert_eq!(found("SET lock_timeout = '2s'; RESET lock_timeout; ALTER TABLE t ADD COLUMN b int;", "", false), w);
    }
}
