use super::context::Context;
use super::meta::Category;
use super::meta::RuleMeta;
use super::rule::Rule;
use crate::finding::{Finding, Severity};
use crate::sql::ddl::{other_action_lock, AlterAction, Ddl};

pub struct UnparsedStatement;

pub static META: RuleMeta = RuleMeta {
    id: "unparsed-statement",
    severity: Severity::Warning,
    category: Category::Meta,
    summary: "A statement the SQL parser could not read, so only the token-level recognizer checked it",
    what: "Reports every statement sqlparser (PostgreSQL dialect) rejects and Sluice's own recognizer does not \
fully understand, saying what kind of statement it is and what was and was not checked. The recognizer reads \
what sqlparser 0.64 cannot: `DROP INDEX CONCURRENTLY`, `UNIQUE NULLS NOT DISTINCT`, every `ALTER TABLE` \
sub-command (`ALTER CONSTRAINT … DEFERRABLE`, `ADD GENERATED … AS IDENTITY`, `SET STATISTICS`…), `ALTER \
SEQUENCE`, `ALTER INDEX`, `CREATE STATISTICS`, `COMMENT ON FUNCTION f(args)` / `CONSTRAINT c ON t`, `REINDEX`, \
`CREATE MATERIALIZED VIEW … WITH NO DATA`, `LIKE … INCLUDING ALL`; when it understood every token the finding \
is only `info`. A `DO` block's statements are checked one by one (see the other rules' findings, marked as \
inside a DO block); what it runs dynamically (`EXECUTE`, `CALL`) is listed in a warning. A statement refused for its depth \
(nested deeper than the parser's recursion limit, or chaining more than 1,000 operators, set operations or array \
brackets: a tree that deep could overflow the stack) is an `error` unless the recognizer understood all of it: \
the gate fails closed on what it could not fully check.",
    why: "A gate that silently skips what it cannot read passes exactly the unusual migration that needed \
review. Saying so keeps the verdict honest: the rest of the file is still checked, and a reviewer knows which \
statement to read by hand.",
    fix: "Read the statement by hand. If it is valid PostgreSQL, keep it and silence this finding with \
`-- sluice:ignore unparsed-statement -- <why it is safe>` on the line before it.",
    bad: "\
-- migration: 001_events.sql
CREATE TABLE events (id bigint PRIMARY KEY, kind text);
-- migration: 002_index_kind.sql
DO $$ BEGIN
  EXECUTE format('CREATE INDEX IF NOT EXISTS %I ON events (kind)', 'events_kind_idx');
END $$;",
    good: "\
-- migration: 001_events.sql
CREATE TABLE events (id bigint PRIMARY KEY, kind text);
CREATE INDEX IF NOT EXISTS events_kind_idx ON events (kind);",
    equivalents: "squawk reports a parse error and stops; Sluice keeps checking the rest of the file.",
};

/// What kind of statement the recognizer read, in SQL words.
fn kind(ddl: &Ddl) -> String {
    match ddl {
        Ddl::CreateIndex(_) => "CREATE INDEX".into(),
        Ddl::Drop { kind, .. } => format!("DROP {}", kind.as_str().to_uppercase()),
        Ddl::AlterTable { .. } => "ALTER TABLE".into(),
        Ddl::Rename { kind, .. } => format!("ALTER {} … RENAME", kind.as_str().to_uppercase()),
        Ddl::AlterIndex { .. } => "ALTER INDEX".into(),
        Ddl::AlterSequence { .. } => "ALTER SEQUENCE".into(),
        Ddl::CreateStatistics { .. } => "CREATE STATISTICS".into(),
        Ddl::Comment(_) => "COMMENT ON".into(),
        Ddl::Reindex { kind, .. } => format!("REINDEX {}", kind.as_str()),
        Ddl::CreateView { materialized: true, .. } => "CREATE MATERIALIZED VIEW".into(),
        Ddl::CreateTable { .. } => "CREATE TABLE".into(),
        Ddl::Do => "DO".into(),
        Ddl::Other(keywords) => keywords.clone(),
        _ => "this".into(),
    }
}

/// What of a statement the recognizer did not understand, for the message.
fn not_understood(ddl: &Ddl) -> String {
    match ddl {
        Ddl::AlterTable { actions, .. } => {
            let unknown: Vec<&str> = actions
                .iter()
                .filter_map(|a| match a {
                    AlterAction::Other(text) if other_action_lock(text).is_none() => Some(text.as_str()),
                    _ => None,
                })
                .collect();
            if unknown.is_empty() {
                "a clause it does not know".into()
            } else {
                format!("`{}`", unknown.join("`, `"))
            }
        }
        _ => "a clause it does not know".into(),
    }
}

impl Rule for UnparsedStatement {
    fn meta(&self) -> &'static RuleMeta {
        &META
    }

    fn check(&self, cx: &Context, out: &mut Vec<Finding>) {
        let Some(error) = &cx.statement.parse_error else { return };
        let ddl = &cx.statement.ddl;
        if let Some(block) = cx.statement.block.as_deref() {
            // Its statements are checked one by one; say what was not.
            if block.unchecked.is_empty() {
                return;
            }
            let parts: Vec<String> = block.unchecked.iter().map(|u| format!("line {}: {}", u.line, u.what)).collect();
            let (checked, parts) = (block.statements.len(), parts.join("; "));
            let finding = if block.too_deep {
                let message =
                    format!("DO block: Sluice checked {checked} SQL statement(s) of it and stopped reading — {parts}");
                let mut finding = cx.finding(&META, message);
                // Fails closed, as a statement too deep to parse does.
                finding.severity = Severity::Error;
                finding
            } else {
                let message = format!(
                    "DO block: its {checked} SQL statement(s) were checked one by one, but not what it runs dynamically — {parts}"
                );
                cx.finding(&META, message)
            };
            out.push(finding);
            return;
        }
        let kind = kind(ddl);
        let message = match ddl {
            _ if cx.statement.fully_recognized => {
                format!("the SQL parser cannot read this {kind} statement; Sluice's own recognizer understood all of it and checked it")
            }
            Ddl::Other(keywords) if keywords.is_empty() => {
                "Sluice could not read this statement: its locks and its effect on the schema were not checked (the rest of the file was)".to_string()
            }
            Ddl::Do => "the body of this DO block is not a dollar-quoted string ($$ … $$), so Sluice did not read its statements: their locks and effects were not checked (the rest of the file was)".to_string(),
            Ddl::Other(_) => format!(
                "Sluice does not know what {kind} does: its locks and its effect on the schema were not checked (the rest of the file was)"
            ),
            _ => format!(
                "this {kind} statement was read by Sluice's recognizer and checked as {kind}, except {}, whose locks and effects were not checked",
                not_understood(ddl)
            ),
        };
        let message = match &cx.statement.too_deep {
            Some(_) => format!("Sluice did not parse this statement because {error}; {message}"),
            None => message,
        };
        let mut finding = cx.finding(&META, message).fact("parser", short(error));
        if cx.statement.too_deep.is_some() {
            finding.severity = Severity::Error;
            finding.help = "Split the statement (a long chain of UNION or OR into several statements or an IN list, \
                deep nesting into CTEs), or read it by hand and silence this finding with \
                `-- sluice:ignore unparsed-statement -- <why it is safe>`."
                .into();
        }
        if cx.statement.fully_recognized {
            finding.severity = Severity::Info;
            finding.help = "Nothing to do: Sluice's recognizer understood every part of it and checked it.".into();
        }
        out.push(finding);
    }
}

/// The parser's complaint, without its list of every token it would have accepted.
fn short(error: &str) -> String {
    let first = error.split(" at Line").next().unwrap_or(error);
    match first.split_once("Expected: ") {
        Some((_, rest)) if rest.contains(" or ") => match rest.rsplit_once(", found: ") {
            Some((_, found)) => format!("unexpected {found}"),
            None => "unexpected token".into(),
        },
        _ => first.chars().take(120).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::testing::{check_examples, lint_files};

    #[test]
    fn examples_lint_as_documented() {
        check_examples(&META, "");
    }

    #[test]
    fn ordinary_migrations_sqlparser_rejects_neither_crash_nor_vanish() {
        let sql = "CREATE TABLE t (a int, b int);
ALTER TABLE t ADD CONSTRAINT t_ab UNIQUE NULLS NOT DISTINCT (a, b);
DROP INDEX CONCURRENTLY IF EXISTS t_ab;
ALTER TABLE t ALTER CONSTRAINT t_fk DEFERRABLE;
REINDEX INDEX CONCURRENTLY t_ab;
CREATE STATISTICS t_stats ON a, b FROM t;
ALTER SEQUENCE t_id_seq RENAME TO t_id_seq2;
DO $$ BEGIN PERFORM 1; END $$;
CREATE PROCEDURE p() LANGUAGE sql AS $$ SELECT 1 $$;
CREATE INDEX t_b ON t (b);";
        let found = lint_files(&[("001.sql", sql)], "");
        let unparsed: Vec<(usize, Severity)> =
            found.iter().filter(|f| f.rule == META.id).map(|f| (f.line, f.severity)).collect();
        // Everything but the procedure is understood: only info, and the DO block was checked inside.
        assert_eq!(
            unparsed,
            [
                (3, Severity::Info),
                (4, Severity::Info),
                (5, Severity::Info),
                (6, Severity::Info),
                (7, Severity::Info),
                (9, Severity::Warning)
            ]
        );
        let drop = found.iter().find(|f| f.rule == META.id && f.line == 3).unwrap();
        assert!(drop.message.contains("this DROP INDEX statement"), "{}", drop.message);
        let procedure = found.iter().find(|f| f.rule == META.id && f.line == 9).unwrap();
        assert!(procedure.message.contains("Sluice does not know what CREATE PROCEDURE does"), "{}", procedure.message);
        for f in found.iter().filter(|f| f.rule == META.id) {
            assert!(!f.message.contains("Expected") && !f.message.contains(" or "), "parser internals: {}", f.message);
        }
    }

    /// hatchet's sqlc queries (`pkg/repository/sqlcv1/workers.sql` at 89d130f303): sqlparser read
    /// `ON` as the alias of the last select item, then stopped at `CONFLICT`. PostgreSQL takes no
    /// bare `ON` label, and neither does Sluice now; the statements what sqlparser still cannot
    /// read stay reported.
    #[test]
    fn an_insert_select_without_from_keeps_its_on_conflict() {
        let schema =
            "CREATE TABLE v1_worker_slot_config (tenant_id uuid, worker_id uuid, slot_type text, max_units int,
    created_at timestamp, updated_at timestamp, PRIMARY KEY (tenant_id, worker_id, slot_type));";
        let query = "-- name: CreateWorkerSlotConfigs :exec
INSERT INTO v1_worker_slot_config (
    tenant_id,
    worker_id,
    slot_type,
    max_units,
    created_at,
    updated_at
)
SELECT
    @tenantId::uuid,
    @workerId::uuid,
    unnest(@slotTypes::text[]),
    unnest(@maxUnits::integer[]),
    CURRENT_TIMESTAMP,
    CURRENT_TIMESTAMP
-- NOTE: ON CONFLICT can be removed after the 0_76_d migration is run to remove insert triggers added in 0_76
ON CONFLICT (tenant_id, worker_id, slot_type) DO UPDATE SET
    max_units = EXCLUDED.max_units,
    updated_at = CURRENT_TIMESTAMP;

-- name: LinkActionsToWorker :exec
INSERT INTO \"_ActionToWorker\" (
    \"A\",
    \"B\"
) SELECT
    unnest(@actionIds::uuid[]),
    @workerId::uuid
ON CONFLICT DO NOTHING;

-- name: NotPostgreSQL :one
SELECT created_at day FROM v1_worker_slot_config;
";
        let parsed = crate::queries::ParsedQuery::parse(crate::queries::Query::whole_file(
            "queries/workers.sql",
            query,
            crate::queries::Source::QueryFile,
        ));
        let statements = &parsed.file().parsed.statements;
        let Some(sqlparser::ast::Statement::Insert(upsert)) = statements[0].ast.as_deref() else {
            panic!("{:?}", statements[0].parse_error)
        };
        assert_eq!(
            upsert.on.as_ref().map(|on| on.to_string().trim_start().to_string()).as_deref(),
            Some(
                "ON CONFLICT(tenant_id, worker_id, slot_type) DO UPDATE SET max_units = EXCLUDED.max_units, updated_at = CURRENT_TIMESTAMP"
            )
        );
        assert!(upsert
            .source
            .as_ref()
            .unwrap()
            .to_string()
            .ends_with("unnest($4::INTEGER[]), CURRENT_TIMESTAMP, CURRENT_TIMESTAMP"));
        let Some(sqlparser::ast::Statement::Insert(link)) = statements[1].ast.as_deref() else {
            panic!("{:?}", statements[1].parse_error)
        };
        assert_eq!(
            link.on.as_ref().map(|on| on.to_string().trim_start().to_string()).as_deref(),
            Some("ON CONFLICT DO NOTHING")
        );
        // `day` needs AS in PostgreSQL (`syntax error at or near "day"`): still not parsed.
        assert!(statements[2].ast.is_none());

        let found = lint_files(&[("001.sql", schema), ("queries/workers.sql", query)], "");
        let unparsed: Vec<(&str, usize)> =
            found.iter().filter(|f| f.rule == META.id).map(|f| (f.file.as_str(), f.line)).collect();
        assert_eq!(unparsed, [("queries/workers.sql", 32)], "{found:#?}");
    }

    #[test]
    fn a_do_block_says_exactly_what_it_did_not_check() {
        let sql = "CREATE TABLE t (a int);
DO $$
BEGIN
  CREATE INDEX t_a ON t (a);
  EXECUTE 'DROP TABLE ' || quote_ident('t');
  CALL tidy_up();
END $$;";
        let found = lint_files(&[("001.sql", sql)], "");
        let f: Vec<&crate::finding::Finding> = found.iter().filter(|f| f.rule == META.id).collect();
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].severity, Severity::Warning);
        assert!(f[0].message.contains("its 1 SQL statement(s) were checked one by one"), "{}", f[0].message);
        assert!(
            f[0].message.contains("line 5: `EXECUTE 'DROP TABLE ' || quote_ident('t')` runs SQL built at run time"),
            "{}",
            f[0].message
        );
        assert!(f[0].message.contains("line 6: `CALL tidy_up()` runs a procedure"), "{}", f[0].message);
    }

    #[test]
    fn a_do_block_with_a_single_quoted_body_says_it_was_not_read() {
        let found = lint_files(&[("001.sql", "DO 'BEGIN PERFORM 1; END';")], "");
        let f = found.iter().find(|f| f.rule == META.id).expect("reported");
        assert_eq!(f.severity, Severity::Warning);
        assert!(f.message.contains("not a dollar-quoted string"), "{}", f.message);
    }

    #[test]
    fn a_statement_too_deep_to_parse_fails_closed() {
        // An UPDATE nested 25 levels passed with a warning (issue 16, item 5).
        let nested = format!(
            "UPDATE t SET a = 1 WHERE b IN {}(SELECT 1){};",
            "(SELECT b FROM t WHERE b IN ".repeat(25),
            ")".repeat(25)
        );
        let chained = format!("CREATE VIEW v AS SELECT a FROM t{};", " UNION ALL SELECT a FROM t".repeat(1_001));
        for sql in [nested, chained] {
            let found = lint_files(&[("001.sql", &format!("CREATE TABLE t (a int, b int);\n{sql}"))], "");
            let f = found.iter().find(|f| f.rule == META.id).expect("reported");
            assert_eq!((f.line, f.severity), (2, Severity::Error));
            assert!(f.message.contains("did not parse this statement because it"), "{}", f.message);
        }
    }

    #[test]
    fn a_default_nesting_too_many_cases_fails_closed() {
        // 50 nested CASEs: sqlparser stops early and says "Expected: end of statement", and a
        // warning hid the volatile default's rewrite (issue 38, item 6).
        let default = (0..50).fold("random()".to_string(), |e, _| format!("CASE WHEN true THEN {e} ELSE 0 END"));
        let sql = format!("ALTER TABLE t ADD COLUMN c float DEFAULT {default};");
        let found = lint_files(&[("001.sql", "CREATE TABLE t (a int);"), ("002.sql", &sql)], "");
        let f = found.iter().find(|f| f.rule == META.id).expect("reported");
        assert_eq!(f.severity, Severity::Error, "{}", f.message);
        assert!(f.message.contains("because it is nested deeper than the SQL parser follows"), "{}", f.message);
    }

    #[test]
    fn a_do_block_nested_too_deep_to_read_fails_closed() {
        let depth = crate::sql::plpgsql::NESTING_LIMIT + 1_000;
        let sql = format!(
            "DO $$ BEGIN {}CREATE INDEX i ON t (a); {}END $$;",
            "IF true THEN ".repeat(depth),
            "END IF; ".repeat(depth)
        );
        let found = lint_files(&[("001.sql", "CREATE TABLE t (a int);"), ("002.sql", &sql)], "");
        let f = found.iter().find(|f| f.rule == META.id).expect("reported");
        assert_eq!(f.severity, Severity::Error, "{}", f.message);
        assert!(f.message.contains("nest deeper than 200 levels"), "{}", f.message);
    }

    #[test]
    fn a_deep_statement_the_recognizer_understood_is_checked_as_such() {
        let predicate = format!("a = 1{}", " OR a = 1".repeat(600));
        let sql = format!("CREATE INDEX i ON t (a) WHERE {predicate};");
        let found = lint_files(&[("001.sql", "CREATE TABLE t (a int);"), ("002.sql", &sql)], "");
        assert!(found.iter().any(|f| f.rule == "create-index-non-concurrently"), "{found:#?}");
        let f = found.iter().find(|f| f.rule == META.id).expect("reported");
        assert!(
            f.message.contains("CREATE INDEX statement; Sluice's own recognizer understood all of it"),
            "{}",
            f.message
        );
        assert_eq!(f.severity, Severity::Info);
    }
}
