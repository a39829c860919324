use super::{Context, Role, Rule, RuleMeta};
use crate::finding::{Finding, Severity};
use crate::rules::Category;
use crate::schema::immutability::index_refusal;
use crate::schema::index_search::{one_row_through, Constrained, IndexShape, Prefix};
use crate::schema::Index;
use crate::sql::ddl::{Ddl, IndexKey};
use crate::sql::parse::parse_file;
use crate::sql::query::{canonical_expression, predicate_uses, ColumnUse, Comparison, WrapKind};

pub struct FunctionOnIndexedColumn;

pub static META: RuleMeta = RuleMeta {
    id: "function-on-indexed-column",
    severity: Severity::Error,
    category: Category::Incident,
    summary: "A predicate wraps an indexed column in a function, cast or operator, so the index cannot serve it",
    what: "Finds predicates (WHERE, JOIN … ON; in SELECT, UPDATE, DELETE, CTEs and subqueries; in query files \
and in views and SQL function bodies defined by migrations) that wrap a column in a function call, a cast \
(`::date`, `CAST`), `AT TIME ZONE`, arithmetic or `COLLATE`, when that column is a key column of an index on \
its table and no expression index on the same expression exists. Placeholders in any style (`$1`, `?`, `@id`, \
`sqlc.arg(id)`, `%s`, `#{id}`, `:id`) are parameters, never an operator or a function on the column. A cast that \
leaves the column as it is — to its own type (`\"tenantId\"::uuid` on a uuid column) or between `varchar` and \
`text` — is not a wrapper, and expression indexes are matched after the same normalization, so \
`upper((name)::text)`, as pg_dump and Rails write an index on a varchar column, serves `upper(name)` (checked \
against PostgreSQL 15's plans). A column that is not its index's leading key is an error only when the query \
constrains the keys before it; otherwise the index could not be searched for the bare column either (PostgreSQL \
documentation, 11.3 Multicolumn Indexes), and an info finding says so. Nor is it reported when an index finds \
the rows without the wrapped column, so the wrapper only filters what it found (both checked against PostgreSQL \
15's plans): the same column of the same table alias is also compared bare against a known value outside any OR \
(`fs_location = ANY($2) AND length(fs_location) <= $3`), or every key of a unique index on it is compared for \
equality with one (`WHERE token = $1`: one row, which a join then follows through the other side's index). The \
statement inside `PREPARE … AS` and `EXPLAIN` is the one checked. A comparison within one row (`edge_count + 1 <= \
max_count`) bounds no index search, wrapped or bare, and is not reported (nakama's `groups`). A comparison in an optional filter (`$1 IS NULL OR lower(email) = $1`, sqlc's \
`sqlc.narg(x) IS NULL OR …`) is still an error, and says so: planned for the parameter's value (a custom plan, \
which PostgreSQL makes for every unnamed statement and for a prepared one while custom plans cost less), the test \
folds away and the wrapper is what keeps the index out; a generic plan searches no index for such a filter, \
wrapped or bare, which no rewrite of the wrapper changes, so that alone is not reported. The help suggests an \
expression index only when PostgreSQL would accept it: index expressions must be IMMUTABLE (documentation, \
CREATE INDEX), and a cast of a timestamptz to date, `date_trunc` on a timestamptz, timestamptz ± interval, an \
enum's cast to text, `now()` or a parameter are not; then it gives the real fix, the bare column against \
converted bounds.",
    why: "PostgreSQL can only use a B-tree index for a predicate on the indexed value itself. Wrap the column \
and the planner falls back to scanning: in the transit incident, `convert_timezone(service_timezone, \
departure_time) BETWEEN $1 AND $2` made the index on `stop_times (route_id, service_date, departure_time)` \
useless for the time range. Tests ran on 12% of production data; at the morning peak a 42 ms query took 11 s, \
pools of 40 connections emptied and 81% of requests failed.",
    fix: "Compare the bare column and move the computation to the other side (compute the UTC bounds of the \
window first and compare `departure_time` to them), or, when the expression is what you must compare and it is IMMUTABLE, add an \
expression index on exactly that expression (`CREATE INDEX CONCURRENTLY … ON t ((lower(email)))`). A cast of a \
timestamptz to date cannot be indexed: compare `created_at >= $1 AND created_at < $2` with the day's bounds.",
    bad: "\
-- migration: 001_stop_times.sql
CREATE TABLE stop_times (route_id bigint, service_date date, departure_time timestamp, service_timezone text);
CREATE INDEX stop_times_route_date_departure ON stop_times (route_id, service_date, departure_time);
-- query: departures.sql
SELECT route_id, departure_time FROM stop_times
WHERE route_id = $1 AND service_date = $2
  AND convert_timezone(service_timezone, departure_time) BETWEEN $3 AND $4;",
    good: "\
-- migration: 001_stop_times.sql
CREATE TABLE stop_times (route_id bigint, service_date date, departure_time timestamp, service_timezone text);
CREATE INDEX stop_times_route_date_departure ON stop_times (route_id, service_date, departure_time);
-- query: departures.sql
-- $3 and $4 are the window's bounds, converted to the stop's local time by the caller.
SELECT route_id, departure_time FROM stop_times
WHERE route_id = $1 AND service_date = $2
  AND departure_time BETWEEN $3 AND $4;",
    equivalents: "None of squawk, strong_migrations or eugene look at queries; Atlas lint does not either.",
};

impl Rule for FunctionOnIndexedColumn {
    fn meta(&self) -> &'static RuleMeta {
        &META
    }

    fn check(&self, cx: &Context, out: &mut Vec<Finding>) {
        let Some(ast) = &cx.statement.ast else { return };
        let uses = match (&cx.role, &cx.statement.ddl) {
            (Role::Query, _) | (Role::Migration(_), Ddl::CreateView { .. }) => predicate_uses(ast, cx.schema, 0),
            (Role::Migration(_), Ddl::CreateFunction { sql_body: Some(body), .. }) => function_body_uses(cx, body),
            _ => return,
        };
        let constrained = Constrained::of(&uses, cx.statement_text(), cx.schema);
        let mut seen = Vec::new();
        for u in &uses {
            let Some(wrapping) = u.wrapped.as_ref() else {
                continue;
            };
            // A comparison within one row (`edge_count + 1 <= max_count`) bounds no index
            // search, wrapped or bare (nakama's `groups`, checked on PostgreSQL 15).
            if u.against_own_row || seen.contains(&(u.position, &u.column)) {
                continue;
            }
            let Some(defeated) = defeated_index(cx, u, &constrained) else { continue };
            if matches!(defeated, Defeated::Index(_)) && found_otherwise(cx, u, &uses, &constrained) {
                continue;
            }
            seen.push((u.position, &u.column));
            let column = format!("{}.{}", u.table, u.column);
            let refusal = index_refusal(&wrapping.expression, &u.table, cx.schema);
            let finding = match defeated {
                Defeated::Index(index) => {
                    let message = format!(
                        "`{column}` is wrapped in {} (`{}`), so index {} cannot serve this predicate{}",
                        wrapping.kind.describe(),
                        wrapping.written,
                        index.describe(),
                        optional_note(u)
                    );
                    let help = match &refusal {
                        Some(why) if wrapping.kind == WrapKind::Cast && cast_of_the_column(&wrapping.expression) => {
                            let column_type = crate::sql::query::Catalog::column_type(cx.schema, &u.table, &u.column)
                                .unwrap_or("its type")
                                .to_string();
                            format!(
                                "Compare the bare column `{}` with the other side cast to the column's type (`{} = \
                                 <value>::{column_type}`): PostgreSQL then searches the index. No expression index can \
                                 serve `{}`: PostgreSQL accepts only IMMUTABLE index expressions, and {why}.",
                                u.column, u.column, wrapping.expression
                            )
                        }
                        Some(why) if holds_modulo(&wrapping.expression) => format!(
                            "No comparison of the bare column `{}` selects the same rows: a modulo picks values spread \
                             over the whole index, which no range of `{}` holds. No expression index can serve `{}` \
                             either: PostgreSQL accepts only IMMUTABLE index expressions, and {why}. To search it, index \
                             the expression with the constants the deployment uses in place of the parameters, or store \
                             the value in a column of its own and index that.",
                            u.column, u.column, wrapping.expression
                        ),
                        None => format!(
                            "Compare the bare column `{}` and compute the other side first (for time zones: convert \
                             the bounds, not the column), or add an expression index: CREATE INDEX CONCURRENTLY ON {} \
                             (({}));",
                            u.column, u.table, wrapping.expression
                        ),
                        Some(why) => format!(
                            "Compare the bare column `{}` against bounds computed first (for a cast to date or a time \
                             zone: `{} >= <start> AND {} < <end>`, the bounds converted, not the column). No expression \
                             index can serve `{}`: PostgreSQL accepts only IMMUTABLE index expressions, and {why}.",
                            u.column, u.column, u.column, wrapping.expression
                        ),
                    };
                    cx.finding_at(&META, u.position, message).help(help).fact("index", index.describe())
                }
                Defeated::NotLed { index, unconstrained } => {
                    let leading = unconstrained.join(", ");
                    let message = format!(
                        "`{column}` is wrapped in {} (`{}`), but that is not what keeps index {} from serving this \
                         query: the query does not constrain its leading column(s) {leading}, so even the bare column \
                         could only be looked up by reading the whole index",
                        wrapping.kind.describe(),
                        wrapping.written,
                        index.describe()
                    );
                    let help = match &refusal {
                        None => format!(
                            "An index is searched from its leading columns. Constrain {leading} in the query as well, \
                             or give the predicate an index of its own: led by `{}` (compared bare), or on the \
                             expression (CREATE INDEX CONCURRENTLY ON {} (({})));",
                            u.column, u.table, wrapping.expression
                        ),
                        Some(why) => format!(
                            "An index is searched from its leading columns. Constrain {leading} in the query as well, \
                             or compare the bare column `{}` against bounds computed first and give it an index led \
                             by it. No expression index can serve `{}`: PostgreSQL accepts only IMMUTABLE index \
                             expressions, and {why}.",
                            u.column, wrapping.expression
                        ),
                    };
                    let mut finding =
                        cx.finding_at(&META, u.position, message).help(help).fact("index", index.describe());
                    finding.severity = Severity::Info;
                    finding.fact("unconstrained leading columns", leading)
                }
            };
            let mut finding = finding.fact("column", column).fact("expression", wrapping.expression.clone());
            if let Some(why) = refusal {
                finding = finding.fact("no expression index", why);
            }
            if let Some(test) = &u.optional {
                finding = finding.fact("optional filter", test.clone());
            }
            out.push(finding);
        }
    }
}

/// Whether `expression` is a cast of the bare column to a text type (an enum's `object_type::text`,
/// langfuse's comments): the fix is the other side cast to the column's type, not bounds.
fn cast_of_the_column(expression: &str) -> bool {
    let Some(sqlparser::ast::Expr::Cast { expr, data_type, .. }) = crate::sql::depth::parse_expression(expression)
    else {
        return false;
    };
    let target = data_type.to_string().to_lowercase();
    matches!(*expr, sqlparser::ast::Expr::Identifier(_) | sqlparser::ast::Expr::CompoundIdentifier(_))
        && (target == "text" || target.starts_with("varchar") || target.starts_with("character varying"))
}

/// Whether `expression` takes a modulo (`(id / $1) % $2`, dolphinscheduler's command slots): no
/// bound on the bare column expresses it, so the help's "compare the bare column" has no form.
fn holds_modulo(expression: &str) -> bool {
    let Some(expr) = crate::sql::depth::parse_expression(expression) else { return false };
    let mut modulo = false;
    let _ = sqlparser::ast::visit_expressions(&expr, |e| {
        modulo |= matches!(e, sqlparser::ast::Expr::BinaryOp { op: sqlparser::ast::BinaryOperator::Modulo, .. });
        std::ops::ControlFlow::<()>::Continue(())
    });
    modulo
}

/// For a comparison in an optional filter (`$1 IS NULL OR …`), what is true of it: PostgreSQL
/// folds the parameter test away in a plan made for the parameter's value — a custom plan, which
/// it makes for every unnamed statement and for a prepared one while custom plans cost less than
/// the generic one — and there the wrapper is what keeps the index out; a generic plan can use no
/// index for the filter, wrapped or bare (both checked on PostgreSQL 15).
fn optional_note(u: &ColumnUse) -> String {
    match &u.optional {
        None => String::new(),
        Some(test) => format!(
            " when the parameter is given (the filter is optional, `{test} OR …`: PostgreSQL folds the test away \
             in a plan made for the parameter's value, and there the wrapper is what keeps the index out; a generic \
             plan uses no index for an optional filter, wrapped or not)"
        ),
    }
}

/// What the wrapping costs: the index it defeats, or, when no index on the column could be
/// searched for this query anyway, the index and the leading columns the query leaves free.
enum Defeated<'s> {
    Index(&'s Index),
    NotLed { index: &'s Index, unconstrained: Vec<String> },
}

/// The index the wrapping defeats: one with the column as a key whose keys before it the
/// query constrains (an index led by the column first), and no expression index on the same
/// expression (after PostgreSQL's normalization of casts) beside it.
fn defeated_index<'s>(cx: &Context<'s>, u: &ColumnUse, constrained: &Constrained) -> Option<Defeated<'s>> {
    let wrapping = u.wrapped.as_ref()?;
    let schema: &'s crate::schema::Schema = cx.schema;
    let on_table: Vec<&'s Index> =
        schema.indexes.values().filter(|i| i.table == u.table && constrained.usable(IndexShape::from(*i))).collect();
    let wanted = canonical_expression(&wrapping.expression, &u.table, cx.schema);
    let served = on_table.iter().any(|i| {
        i.keys
            .iter()
            .any(|k| matches!(k, IndexKey::Expression(e) if canonical_expression(e, &u.table, cx.schema) == wanted))
    });
    if served {
        return None;
    }
    // Only a B-tree is searched from its leading keys as this reasons; a GiST index (an EXCLUDE
    // constraint's) is searched by any key, and never for a range's bounds (boundary's
    // `upper(active_time_range) IS NULL` beside `EXCLUDE USING gist (session_id WITH =,
    // active_time_range WITH &&)`).
    let candidates: Vec<(&'s Index, usize)> = on_table
        .into_iter()
        .filter(|i| i.btree)
        .filter_map(|i| Some((i, i.keys.iter().position(|k| k.column() == Some(u.column.as_str()))?)))
        .collect();
    // Any comparison of the keys before the column counts here: with them compared, the bare
    // column would have been part of the index condition, so the wrapper is what keeps it out.
    let searchable =
        |(index, at): &(&'s Index, usize)| constrained.reaches(IndexShape::from(*index), *at, schema, Prefix::Compared);
    if let Some((index, _)) =
        candidates.iter().find(|(_, at)| *at == 0).or_else(|| candidates.iter().find(|c| searchable(c)))
    {
        return Some(Defeated::Index(index));
    }
    let (index, at) = candidates.first()?;
    let unconstrained = index.keys[..*at]
        .iter()
        .filter(|k| !constrained.key(&u.table, k, schema, Prefix::Compared))
        .map(IndexKey::display)
        .collect();
    Some(Defeated::NotLed { index, unconstrained })
}

/// Whether PostgreSQL finds the rows of `u`'s relation without searching an index for the
/// wrapped column, so the wrapper only filters what an index already found:
/// - the same column of the same relation is also compared bare, for equality or a range
///   against a value known before the scan, outside any OR (lakekeeper's `fs_location = ANY($2)
///   AND LENGTH(fs_location) <= $3`): the index is searched through that comparison;
/// - a unique index finds at most one row of the relation ([`one_row_through`]; synapse's
///   `access_tokens … WHERE token = ?` joined `ON users.name = COALESCE(puppets_user_id,
///   access_tokens.user_id)`).
///
/// Checked on PostgreSQL 15: in both, the plan reads the index named here with the wrapped
/// predicate a `Filter` on what it found (tests/query_precision.rs).
fn found_otherwise(cx: &Context, u: &ColumnUse, uses: &[ColumnUse], constrained: &Constrained) -> bool {
    let compared_bare = uses.iter().any(|v| {
        v.relation == u.relation
            && v.table == u.table
            && v.column == u.column
            && v.optional.is_none()
            && v.search() != Comparison::Other
    });
    compared_bare
        || one_row_through(
            cx.schema.indexes_on(&u.table).map(IndexShape::from),
            uses,
            &u.table,
            u.relation,
            constrained,
        )
        .is_some()
}

/// Predicates inside a `LANGUAGE sql` function body, with lines mapped back into the file.
fn function_body_uses(cx: &Context, body: &str) -> Vec<ColumnUse> {
    let text = cx.statement_text();
    let line_offset = text
        .find(body)
        .map(|at| cx.statement.span.line - 1 + text[..at].matches('\n').count())
        .unwrap_or(cx.statement.span.line - 1);
    let parsed = parse_file(body.to_string());
    parsed
        .statements
        .iter()
        .filter_map(|s| s.ast.as_deref())
        .flat_map(|ast| predicate_uses(ast, cx.schema, line_offset))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::testing::{check_examples, lint_files};

    const TRANSIT: &str =
        "CREATE TABLE stop_times (route_id bigint, service_date date, departure_time timestamp, service_timezone text);
CREATE INDEX stop_times_rsd ON stop_times (route_id, service_date, departure_time);
CREATE TABLE users (id bigint PRIMARY KEY, email text, created_at timestamptz);
CREATE INDEX users_email ON users (email);
CREATE INDEX users_created_at ON users (created_at);";

    fn flagged(query: &str, extra_migration: &str) -> Vec<Finding> {
        lint_files(&[("001.sql", TRANSIT), ("002.sql", extra_migration), ("queries/q.sql", query)], "")
            .into_iter()
            .filter(|f| f.rule == META.id)
            .collect()
    }

    #[test]
    fn examples_lint_as_documented() {
        check_examples(&META, "");
    }

    #[test]
    fn the_transit_incident_and_its_fix() {
        let found = flagged(
            "SELECT * FROM stop_times WHERE route_id = $1 AND convert_timezone(service_timezone, departure_time) BETWEEN $2 AND $3;",
            "",
        );
        assert_eq!(found.len(), 1);
        assert!(found[0].message.contains("stop_times.departure_time"), "{}", found[0].message);
        assert!(found[0].message.contains("stop_times_rsd"), "{}", found[0].message);
        assert!(flagged("SELECT * FROM stop_times WHERE departure_time BETWEEN $1 AND $2;", "").is_empty());
    }

    #[test]
    fn an_expression_index_on_the_same_expression_serves_it() {
        assert_eq!(flagged("SELECT id FROM users WHERE lower(email) = $1;", "").len(), 1);
        assert!(flagged(
            "SELECT id FROM users WHERE lower(email) = $1;",
            "CREATE INDEX users_lower_email ON users ((lower(email)));"
        )
        .is_empty());
        assert!(flagged(
            "SELECT id FROM users u WHERE LOWER(u.email) = $1;",
            "CREATE INDEX users_lower_email ON users (lower(email));"
        )
        .is_empty());
    }

    #[test]
    fn a_partial_index_the_query_does_not_imply_is_not_blamed() {
        // PostgreSQL 15: with or without the cast, `WHERE event_key IS NOT NULL` keeps this
        // index from serving a query that says nothing of event_key (hatchet's ListMatchingTaskEvents).
        let partial = "CREATE TABLE events (task_id bigint, event_type text, event_key text);
CREATE UNIQUE INDEX events_key ON events (event_type, event_key) WHERE event_key IS NOT NULL;";
        let query = |sql: &str| {
            lint_files(&[("001.sql", partial), ("queries/q.sql", sql)], "")
                .into_iter()
                .filter(|f| f.rule == META.id)
                .collect::<Vec<_>>()
        };
        assert!(query("SELECT * FROM events WHERE lower(event_type) = $1;").is_empty());
        // The query implies the predicate: the index could serve the bare column, so the wrapper is blamed.
        let found = query("SELECT * FROM events e WHERE lower(e.event_type) = $1 AND e.event_key IS NOT NULL;");
        assert_eq!(found.len(), 1, "{found:#?}");
        assert!(found[0].message.contains("events_key"), "{}", found[0].message);
    }

    #[test]
    fn an_index_that_is_no_b_tree_is_not_blamed() {
        let schema = "CREATE EXTENSION btree_gist;
CREATE TABLE session_state (session_id text, state text, active_time_range tstzrange,
    EXCLUDE USING gist (session_id WITH =, active_time_range WITH &&));
CREATE TABLE events (payload jsonb, created_at timestamptz);
CREATE INDEX events_created ON events USING brin (created_at);";
        for query in [
            "SELECT 1 FROM session_state WHERE session_id = $1 AND upper(active_time_range) IS NULL",
            "SELECT 1 FROM events WHERE date_trunc('day', created_at) = $1",
        ] {
            let found = lint_files(&[("001.sql", schema), ("queries/q.sql", query)], "");
            let found: Vec<_> = found.into_iter().filter(|f| f.rule == "function-on-indexed-column").collect();
            assert!(found.is_empty(), "{query}: {found:#?}");
        }
        // The same keys in a B-tree: blamed.
        let btree = schema.replace("USING brin (created_at)", "(created_at)");
        let query = "SELECT 1 FROM events WHERE date_trunc('day', created_at) = $1";
        let found = lint_files(&[("001.sql", btree.as_str()), ("queries/q.sql", query)], "");
        assert!(found.iter().any(|f| f.rule == "function-on-indexed-column"), "{found:#?}");
    }

    #[test]
    fn computing_on_the_other_side_is_fine() {
        assert!(flagged("SELECT id FROM users WHERE created_at > now() - interval '1 day';", "").is_empty());
        let cast = flagged("SELECT id FROM users WHERE created_at::date = $1;", "");
        assert_eq!(cast.len(), 1);
        // created_at is a timestamptz: PostgreSQL refuses `((created_at::date))` as not IMMUTABLE.
        assert!(!cast[0].help.contains("CREATE INDEX"), "{}", cast[0].help);
        assert!(cast[0].help.contains("from timestamptz to date is STABLE"), "{}", cast[0].help);
        let lower = flagged("SELECT id FROM users WHERE lower(email) = $1;", "");
        assert!(lower[0].help.contains("CREATE INDEX CONCURRENTLY ON users ((lower(email)));"), "{}", lower[0].help);
        assert_eq!(flagged("SELECT id FROM users WHERE created_at + interval '1 day' > now();", "").len(), 1);
    }

    #[test]
    fn join_conditions_count_too() {
        let query = "SELECT u.id FROM users u JOIN stop_times st ON st.trip_id = u.id WHERE st.departure_time::date = u.created_at::date;";
        let found = flagged(query, "");
        // users.created_at is indexed and wrapped; stop_times.departure_time is indexed and wrapped.
        assert_eq!(found.len(), 2, "{found:#?}");
        assert!(flagged("SELECT 1 FROM users u JOIN users v ON lower(v.email) = u.email;", "").len() == 1);
    }

    #[test]
    fn a_row_found_by_its_unique_key_needs_no_index_on_the_wrapped_column() {
        // synapse's access-token lookup. PostgreSQL 15: `Index Scan using tokens_token_key`
        // (`Index Cond: (token = …)`), then accounts through `accounts_name_key` with `Index Cond:
        // (name = COALESCE(t.puppet_id, t.user_id))`: tokens_device is not what the plan needs.
        let tokens = "CREATE TABLE accounts (name text UNIQUE);
CREATE TABLE tokens (id bigint PRIMARY KEY, token text UNIQUE, user_id text, puppet_id text, device_id text);
CREATE INDEX tokens_device ON tokens (user_id, device_id);";
        let query = |sql: &str| {
            lint_files(&[("001.sql", tokens), ("queries/q.sql", sql)], "")
                .into_iter()
                .filter(|f| f.rule == META.id)
                .collect::<Vec<_>>()
        };
        let join = "SELECT a.name FROM accounts a JOIN tokens t ON a.name = COALESCE(t.puppet_id, t.user_id)";
        assert!(query(&format!("{join} WHERE t.token = $1;")).is_empty());
        assert!(query(&format!("{join} WHERE t.id = 7 AND t.device_id = $1;")).is_empty());
        // No unique key compared for equality with a known value: the wrapper keeps tokens_device
        // from serving the join, which then has to run from accounts.
        for filter in
            ["a.name = $1", "t.token = $1 OR t.id = $2", "t.token > $1", "t.token = a.name", "NOT t.token = $1"]
        {
            let found = query(&format!("{join} WHERE {filter};"));
            assert_eq!(found.len(), 1, "{filter}: {found:#?}");
            assert!(found[0].message.contains("tokens_device"), "{}", found[0].message);
            // coalesce() is an expression of the grammar, as immutable as its arguments.
            assert!(
                found[0].help.contains("CREATE INDEX CONCURRENTLY ON tokens ((coalesce(puppet_id, user_id)))"),
                "{}",
                found[0].help
            );
        }
        // Another alias of the table, found by its key, does not find this one.
        let found = query("SELECT 1 FROM tokens t JOIN tokens u ON u.device_id = t.device_id WHERE t.token = $1 AND lower(u.user_id) = $2;");
        assert_eq!(found.len(), 1, "{found:#?}");
    }

    #[test]
    fn the_column_compared_bare_as_well_is_searched_through_that() {
        // lakekeeper's load by location. PostgreSQL 15: `Index Cond: ((warehouse_id = $1) AND
        // (fs_location = ANY ($2)))`, `Filter: (length(fs_location) <= $3)`.
        let tabular = "CREATE TABLE tabular (id bigint, warehouse_id uuid, fs_location text);
CREATE INDEX tabular_location ON tabular (warehouse_id, fs_location);";
        let query = |sql: &str| {
            lint_files(&[("001.sql", tabular), ("queries/q.sql", sql)], "")
                .into_iter()
                .filter(|f| f.rule == META.id)
                .collect::<Vec<_>>()
        };
        for searched in
            ["fs_location = ANY($2)", "fs_location IN ('a', 'b')", "fs_location >= $2", "fs_location BETWEEN $2 AND $4"]
        {
            let sql =
                format!("SELECT id FROM tabular WHERE warehouse_id = $1 AND {searched} AND LENGTH(fs_location) <= $3;");
            assert!(query(&sql).is_empty(), "{searched}: {:#?}", query(&sql));
        }
        // A comparison an index cannot search, one alternative of an OR, or one behind an
        // optional filter does not.
        for other in [
            "fs_location <> $2",
            "fs_location IS NOT NULL",
            "(fs_location = $2 OR id = 1)",
            "fs_location LIKE $2",
            "($2::text IS NULL OR fs_location = $2)",
        ] {
            let sql =
                format!("SELECT id FROM tabular WHERE warehouse_id = $1 AND {other} AND LENGTH(fs_location) <= $3;");
            assert_eq!(query(&sql).len(), 1, "{other}: {:#?}", query(&sql));
        }
    }

    #[test]
    fn an_enum_cast_to_text_is_fixed_on_the_other_side() {
        // langfuse's comments. PostgreSQL 15, 200,000 rows: `c.object_type::text = 'TRACE'` leaves
        // the enum out of the Index Cond (cost 338); `c.object_type = 'TRACE'` puts it in (cost 8).
        let comments = "CREATE TYPE kind AS ENUM ('TRACE', 'SESSION');
CREATE TABLE comments (id text PRIMARY KEY, project_id text, object_type kind, object_id text);
CREATE INDEX comments_object ON comments (project_id, object_type, object_id);";
        let found: Vec<Finding> = lint_files(
            &[
                ("001.sql", comments),
                ("queries/q.sql", "SELECT id FROM comments c WHERE c.project_id = $1 AND c.object_id = $2 AND c.object_type::text = $3;"),
            ],
            "",
        )
        .into_iter()
        .filter(|f| f.rule == META.id)
        .collect();
        assert_eq!(found.len(), 1, "{found:#?}");
        assert!(
            found[0].help.contains("other side cast to the column's type (`object_type = <value>::kind`)"),
            "{}",
            found[0].help
        );
        assert!(!found[0].help.contains("bounds"), "{}", found[0].help);
        // A cast to date keeps the help about bounds.
        let found = flagged("SELECT id FROM users WHERE created_at::date = $1;", "");
        assert!(found[0].help.contains("bounds computed first"), "{}", found[0].help);
    }

    #[test]
    fn a_modulo_slot_is_told_apart_from_a_range() {
        // dolphinscheduler's command queue, polled by slot. PostgreSQL 15: the primary key is not
        // searched, `Filter: (((id / $1) % $2) = $3)`; no bound on `id` selects a slot.
        let found = flagged("SELECT * FROM users WHERE (id / $1) % $2 = $3 ORDER BY created_at LIMIT 10;", "");
        assert_eq!(found.len(), 1, "{found:#?}");
        assert!(found[0].help.contains("a modulo picks values spread over the whole index"), "{}", found[0].help);
        assert!(!found[0].help.contains("bounds computed first"), "{}", found[0].help);
        // Division alone is monotonic: a range of the bare column expresses it.
        let found = flagged("SELECT * FROM users WHERE id / $1 = $2;", "");
        assert!(found[0].help.contains("bounds computed first"), "{}", found[0].help);
    }

    #[test]
    fn a_placeholder_is_a_parameter_in_every_style() {
        // sqlc's `@id` is not PostgreSQL's prefix `@` (absolute value) on `id`, nor is
        // `sqlc.arg(id)` a function wrapping it: 62 of 68 false errors on one real project.
        for query in [
            "-- name: GetUser :one\nSELECT * FROM users WHERE id = @id;",
            "SELECT * FROM users WHERE id = sqlc.arg(id) OR email = sqlc.narg('email');",
            "SELECT * FROM users WHERE id IN (sqlc.slice(ids));",
            "SELECT * FROM users WHERE id = ? AND email = ?;",
            "SELECT * FROM users WHERE id = %s AND email = %(email)s;",
            "SELECT * FROM users WHERE id = #{id} AND email = #{email,jdbcType=VARCHAR};",
            "SELECT * FROM users WHERE id = :id AND email = :'email';",
        ] {
            let found = lint_files(&[("001.sql", TRANSIT), ("queries/q.sql", query)], "");
            let on_query: Vec<&Finding> = found.iter().filter(|f| f.file == "queries/q.sql").collect();
            assert!(on_query.is_empty(), "{query}: {on_query:#?}");
        }
        // And what the query does wrap is still seen, where it is written. (Not beside `id = …`:
        // a row found by its primary key needs no index on email.)
        for query in [
            "SELECT * FROM users WHERE lower(email) = ? AND created_at > ?;",
            "SELECT * FROM users WHERE created_at > @since AND lower(email) = @email;",
            "SELECT * FROM users WHERE created_at > sqlc.arg(since) AND lower(email) = sqlc.arg(email);",
            "SELECT * FROM users WHERE created_at > #{since} AND lower(email) = #{email};",
            "SELECT * FROM users WHERE created_at > %(since)s AND lower(email) = %(email)s;",
        ] {
            let found = flagged(query, "");
            assert_eq!(found.len(), 1, "{query}: {found:#?}");
            let column = query.find("lower").unwrap() + 1;
            assert_eq!((found[0].line, found[0].column), (1, column), "{query}");
            assert!(found[0].snippet.as_ref().unwrap().text().contains(&query[..query.len() - 1]), "{query}");
        }
    }

    #[test]
    fn a_sqlc_query_is_named_in_its_finding() {
        let query = "-- name: GetUser :one\nSELECT * FROM users WHERE id = @id;\n\n-- name: FindByEmail :many\nSELECT * FROM users WHERE lower(email) = lower(@email);";
        let found = flagged(query, "");
        assert_eq!(found.len(), 1, "{found:#?}");
        assert_eq!(found[0].line, 5);
        assert!(found[0].message.ends_with("(in query FindByEmail)"), "{}", found[0].message);
        assert!(!found[0].help.contains('@'), "{}", found[0].help);
    }

    /// mall's MyBatis mapper (`UmsRoleDao.xml` `getMenuList` at 74eebe06), with one wrapped
    /// predicate added: sqlparser reserved `sort` as an alias (Hive's `SORT BY`), so the whole
    /// query went unchecked; PostgreSQL takes `m.sort sort`.
    #[test]
    fn a_select_list_of_bare_aliases_is_checked() {
        let schema =
            "CREATE TABLE ums_menu (id bigint PRIMARY KEY, parent_id bigint, create_time timestamp, title text,
    level int, sort int, name text, icon text, hidden int);
CREATE INDEX ums_menu_name ON ums_menu (name);
CREATE TABLE ums_role (id bigint PRIMARY KEY);
CREATE TABLE ums_admin_role_relation (id bigint PRIMARY KEY, admin_id bigint, role_id bigint);
CREATE TABLE ums_role_menu_relation (id bigint PRIMARY KEY, role_id bigint, menu_id bigint);";
        let query = "SELECT
            m.id id,
            m.parent_id parentId,
            m.create_time createTime,
            m.title title,
            m.level level,
            m.sort sort,
            m.name name,
            m.icon icon,
            m.hidden hidden
        FROM
            ums_admin_role_relation arr
                LEFT JOIN ums_role r ON arr.role_id = r.id
                LEFT JOIN ums_role_menu_relation rmr ON r.id = rmr.role_id
                LEFT JOIN ums_menu m ON rmr.menu_id = m.id
        WHERE
            arr.admin_id = #{adminId}
          AND m.id IS NOT NULL
          AND lower(m.name) = #{name}
        GROUP BY
            m.id;";
        let found = lint_files(&[("001.sql", schema), ("queries/q.sql", query)], "");
        assert!(found.iter().all(|f| f.rule != "unparsed-statement"), "{found:#?}");
        let hits: Vec<&Finding> = found.iter().filter(|f| f.rule == META.id).collect();
        assert_eq!(hits.len(), 1, "{found:#?}");
        assert!(hits[0].message.contains("ums_menu.name"), "{}", hits[0].message);
        assert_eq!(hits[0].line, 19);
    }

    #[test]
    fn unindexed_columns_are_not_flagged() {
        assert!(flagged("SELECT * FROM stop_times WHERE lower(service_timezone) = 'utc';", "").is_empty());
    }

    #[test]
    fn checks_views_and_sql_function_bodies_in_migrations() {
        let view = "CREATE VIEW recent AS SELECT * FROM users WHERE date_trunc('day', created_at) = current_date;";
        let found = lint_files(&[("001.sql", TRANSIT), ("002.sql", view)], "");
        assert!(found.iter().any(|f| f.rule == META.id && f.file == "002.sql"), "{found:?}");

        let function = "CREATE FUNCTION by_email(e text) RETURNS SETOF users LANGUAGE sql AS $$\n  SELECT * FROM users\n  WHERE lower(email) = lower(e)\n$$;";
        let found = lint_files(&[("001.sql", TRANSIT), ("002.sql", function)], "");
        let hit = found.iter().find(|f| f.rule == META.id).expect("function body checked");
        assert_eq!(hit.line, 3);
    }
}
