use super::context::{Context, Facts};
use super::meta::Category;
use super::meta::RuleMeta;
use super::rule::Rule;
use crate::finding::{Finding, Severity};
use crate::policy::index_usage::{IndexScans, IndexUsage};
use crate::queries::Source;
use crate::schema::index_search::{one_row_through, same_key, Constrained, IndexShape};
use crate::schema::{Index, Schema};
use crate::sql::ddl::{AlterAction, ConstraintKind, Ddl, IndexKey, ObjectKind};
use crate::sql::query::{canonical_expression, predicate_uses, ColumnUse, Comparison};
use std::collections::BTreeSet;
use std::sync::Arc;

pub struct DropIndexInUse;

pub static META: RuleMeta = RuleMeta {
    id: "drop-index-in-use",
    severity: Severity::Error,
    category: Category::Incident,
    summary: "An index is dropped while a query or view filters on its leading column and no other index serves that query",
    what: "Flags `DROP INDEX`, and dropping a UNIQUE or PRIMARY KEY constraint (which drops its index), when a \
query file or a view filters or joins on the dropped index's leading column (or expression) and no remaining \
index can be searched for it. Another index serves the query when it has the column among its keys and the query \
compares every key before it by equality (`=`, `IN`, `= ANY`, `IS NULL`, a join's `=`): PostgreSQL's B-tree search \
narrows through equalities on a prefix of the keys, then the column by equality or a range; a range (or `<>`, or a \
comparison under NOT) on a key before it leaves the column unsearched (PostgreSQL documentation, 11.3 \
Multicolumn Indexes); a partial index counts only when the query implies its predicate (11.8) — the same \
reasoning as `function-on-indexed-column` (crates.io's `unique_num (crate_id, num)` serves `versions.num = … AND \
versions.crate_id = crates.id`). A unique index whose every key the query compares by equality with a value \
finds the one row itself, whatever else the query checks on it (lakekeeper's `tabular … WHERE tabular_id = $2 AND \
typ = $4` under the primary key, once `(typ, tabular_id)` is dropped). A comparison no B-tree search can serve on \
its own (one alternative of an OR, `<>`, `LIKE`, `IS NOT NULL`) does not need the index. A join equality `t.col = other.key` is also served when `other.key` has an index \
and the query reaches `t` through an index on a key it compares with a value (`crate_owners.crate_id = $1`): \
the planner finds those rows first and probes the other side's index with each (a nested loop). The other side's \
index alone is not enough: with nothing else narrowing `t`, driving the join from it reads `t` whole. A statement \
that narrows no table by a value through an index (a view of plain joins) is narrowed by what its consumers filter \
on: a table it joins by a whole unique key, not on the nullable side of an outer join, is reached through that key \
(boundary's `whx_host_dimension_source` reaches `host_set` through its primary key). An index \
(or a PRIMARY KEY or UNIQUE constraint) that serves the query and that the same file creates later, before the \
drop's transaction commits, replaces it: the drop's ACCESS EXCLUSIVE lock keeps every query waiting until then \
(crates.io's and ente's migrations), including one on a column the transaction adds after the drop (lakekeeper's \
`view_representation.warehouse_id`); created outside that transaction, the finding stays and says so. The queries \
run against the schema the history ends with: in `sluice lint` (the whole history), a query that an index created \
by a later migration serves at the end of the history does not need the dropped one (crates.io dropped `UNIQUE \
(name)` in 2014 and indexed `name` again in 2018) — an index whose statement PostgreSQL or the tool refuses \
(`concurrently-in-transaction`, `runner-rejects-migration`) restores nothing — unless production's index usage shows the dropped index still \
scanned (the drop has not run there yet); in `sluice check` (the change's migrations), such a restore leaves a \
window, from the drop until the later migration has built the index, in which the queries run without one: the \
finding stays and names the restoring index. When Sluice cannot tell (a query it cannot read again), the finding \
stays. Names the query's file and line. In `sluice check` this is the one finding \
for the problem: what the unchanged query shows because of the drop (a `function-on-indexed-column` finding, a \
plan regression) is folded into it rather than reported a second time on the query. With production's \
workload (`[queries] workload`) its entries are users too, named busiest first with their rate; with its \
index usage (`[policies] index_usage`) the finding says how often production scanned the index, fires when \
production used it though no query shows it, and calls an index never scanned since a reset at least 30 days \
before the snapshot unused (info) (docs/workload.md).",
    why: "The planner silently falls back to scanning the table. In the reporting incident a migration dropped an \
index a reporting query needed; with no timeouts, the queries piled up and a 20-connection pool was gone in \
45 seconds.",
    fix: "Keep the index, or first create its replacement (`CREATE INDEX CONCURRENTLY` led by the same column, or by \
columns the query compares by equality and then it) in an earlier migration, deployed before the drop, or change the \
query in the same pull request so it no longer needs it.",
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

/// An index a later statement of the dropping file creates on the dropped index's table.
struct Later {
    line: usize,
    /// Created before the drop's transaction commits: PostgreSQL's lock on the dropped index
    /// keeps every query waiting until then, so none runs without an index (crates.io's BRIN
    /// recreation, ente's `DROP CONSTRAINT … ADD CONSTRAINT UNIQUE` in one transaction).
    same_transaction: bool,
    keys: Vec<IndexKey>,
    predicate: Option<String>,
    unique: bool,
    nulls_not_distinct: bool,
}

impl Later {
    fn shape<'a>(&'a self, table: &'a str) -> IndexShape<'a> {
        IndexShape {
            table,
            keys: &self.keys,
            predicate: self.predicate.as_deref(),
            unique: self.unique,
            nulls_not_distinct: self.nulls_not_distinct,
        }
    }
}

/// The indexes (and PRIMARY KEY and UNIQUE constraints) the dropping file creates after the
/// drop on its table.
fn created_later(cx: &Context, dropped: &Index) -> Vec<Later> {
    let super::context::Role::Migration(state) = cx.role else { return Vec::new() };
    let mut same_transaction = state.in_transaction();
    let mut out = Vec::new();
    // A constraint the dropping `ALTER TABLE` itself adds (langfuse's `DROP CONSTRAINT
    // "datasets_pkey", ADD CONSTRAINT "datasets_pkey" PRIMARY KEY ("id", "project_id")`): one
    // statement is atomic, and its lock holds every query until the new index is built, in or
    // out of a transaction.
    if let Ddl::AlterTable { table, actions, .. } = &cx.statement.ddl {
        if table == &dropped.table {
            added_constraints(actions, cx.statement.span.line, true, &mut out);
        }
    }
    let after = cx.file.parsed.statements.iter().filter(|s| s.span.start >= cx.statement.span.end);
    for statement in after {
        let line = statement.span.line;
        match &statement.ddl {
            Ddl::Commit | Ddl::Rollback => same_transaction = false,
            Ddl::CreateIndex(create) if create.table == dropped.table => out.push(Later {
                line,
                same_transaction,
                keys: create.keys.clone(),
                predicate: create.predicate.clone(),
                unique: create.unique,
                nulls_not_distinct: create.nulls_not_distinct,
            }),
            Ddl::AlterTable { table, actions, .. } if table == &dropped.table => {
                added_constraints(actions, line, same_transaction, &mut out);
            }
            _ => {}
        }
    }
    out
}

/// The PRIMARY KEY and UNIQUE constraints an `ALTER TABLE`'s `actions` add, as indexes.
fn added_constraints(actions: &[AlterAction], line: usize, same_transaction: bool, out: &mut Vec<Later>) {
    for action in actions {
        if let AlterAction::AddConstraint(c) = action {
            let (columns, nulls_not_distinct) = match &c.kind {
                ConstraintKind::PrimaryKey { columns } => (columns, false),
                ConstraintKind::Unique { columns, nulls_not_distinct } => (columns, *nulls_not_distinct),
                _ => continue,
            };
            let keys = columns.iter().cloned().map(IndexKey::Column).collect();
            out.push(Later { line, same_transaction, keys, predicate: None, unique: true, nulls_not_distinct });
        }
    }
}

/// Where a user of the dropped index is, to be asked again against the schema at the end of
/// the history.
#[derive(Debug, Clone)]
enum UserAt {
    /// Statement `statement` of `Facts::queries[query]`.
    Query {
        query: usize,
        statement: usize,
    },
    View(String),
}

/// Where a query or view compares the index's leading key in a way the index can serve, and
/// no remaining index does.
#[derive(Debug, Clone)]
struct User {
    place: String,
    what: String,
    /// A production workload entry's calls per second (or calls): the busiest is named first.
    traffic: Option<f64>,
    /// A workload entry's SQL, shown as production runs it.
    sql: Option<String>,
    at: UserAt,
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

/// The indexes a statement's use of the dropped key could go through instead: those of the
/// dropped index's table, and those of the tables its join partners are in.
struct Alternatives<'a> {
    /// The dropped index's table.
    table: &'a str,
    on_table: Vec<IndexShape<'a>>,
    /// Every index of the schema asked: a join partner's table may be any.
    partners: &'a Schema,
    /// Indexes of `partners` not to count (dropped by the same statement).
    gone: &'a [&'a str],
}

impl Alternatives<'_> {
    /// Which of `on_table` still lets PostgreSQL reach the rows the statement's uses of `key`
    /// (`uses`, all of them on `table`) compare, with no search of the dropped index:
    /// - an index with `key` among its keys, every key before it compared by equality (an index
    ///   led by it is one): the search goes on to `key` (documentation, 11.3);
    /// - for a join equality `table.key = other.column`: an index of the other table searchable
    ///   for its column, and one of `table` led by a key the statement compares by equality with a
    ///   value. The planner finds this table's rows through the second and probes the first with
    ///   each (a nested loop; crates.io's `crate_owners.crate_id = $1` then `teams_pkey` by
    ///   `owner_id`). The other side's index alone is not enough: with nothing narrowing this
    ///   table, driving the join from it reads it whole.
    ///
    /// - a unique index that finds at most one row of the use's relation ([`one_row_through`]):
    ///   the planner reads that row through it and checks `key` as a filter (lakekeeper's
    ///   `tabular_typ_tabular_id_idx (typ, tabular_id)`, whose queries name the primary key).
    ///
    /// Every use must be served; `None` when one is not.
    fn serving(
        &self,
        uses: &[&ColumnUse],
        all: &[ColumnUse],
        key: &IndexKey,
        constrained: &Constrained,
        catalog: &Schema,
    ) -> Option<usize> {
        let mut serving = None;
        for u in uses {
            let one_row = || one_row_through(self.on_table.iter().copied(), all, &u.table, u.relation, constrained);
            let direct = self.on_table.iter().position(|i| constrained.searchable_at(*i, key, catalog).is_some());
            let through_partner = || {
                let (other, column) = u.joined_to.as_ref()?;
                let column = IndexKey::Column(column.clone());
                let partner_searchable = self
                    .partners
                    .indexes_on(other)
                    .filter(|i| !self.gone.contains(&i.name.as_str()))
                    .any(|i| constrained.searchable_at(IndexShape::from(i), &column, catalog).is_some());
                if !partner_searchable {
                    return None;
                }
                self.on_table.iter().position(|i| {
                    constrained.usable(*i)
                        && i.keys.first().is_some_and(|k| constrained.equal_to_value(i.table, k, catalog))
                })
            };
            let through_joined_key = || self.through_joined_unique_key(u, all, constrained, catalog);
            serving = Some(direct.or_else(one_row).or_else(through_partner).or_else(through_joined_key)?);
        }
        serving
    }

    /// For a join use `u` (`host_set.catalog_id = host.catalog_id`) in a statement that narrows
    /// no relation by a value through an index (a view's plain joins, boundary's
    /// `whx_host_dimension_source`): a unique index of `on_table` whose every key the statement
    /// compares by equality on `u`'s relation, one of them joined (`host_set.public_id =
    /// target_host_set.host_set_id`). Such a statement reads every table it joins when run on
    /// its own, and is narrowed only by what a consumer filters on: what the view shows of its
    /// relations' keys reaches this relation through the joined unique key, one row per row of
    /// the other side, the dropped key being a filter on it. A statement with a value that
    /// narrows a relation through an index (`customers.email = $1`) is driven from there, and
    /// the join into this relation may need the dropped index: this does not apply.
    fn through_joined_unique_key(
        &self,
        u: &ColumnUse,
        all: &[ColumnUse],
        constrained: &Constrained,
        catalog: &Schema,
    ) -> Option<usize> {
        if !u.against_columns || u.outer || self.narrowed_by_value(all, constrained, catalog) {
            return None;
        }
        // The key is joined to a table read before this relation only when no outer join orders
        // that table after it (crates.io's `temp_downloads LEFT JOIN crates … LEFT JOIN versions
        // ON versions.crate_id = crates.id`: `crates` is joined before `versions`).
        let preserved_partner = |v: &ColumnUse| {
            all.iter().any(|w| {
                !w.outer
                    && w.relation != v.relation
                    && w.joined_to.as_ref().is_some_and(|(t, c)| t == &v.table && c == &v.column)
            })
        };
        let equal = |column: &str, joined: bool| {
            all.iter().any(|v| {
                v.relation == u.relation
                    && v.table == u.table
                    && v.column == column
                    && v.wrapped.is_none()
                    && !v.alternative
                    && v.comparison == Comparison::Equality
                    && (!joined || (v.against_columns && preserved_partner(v)))
            })
        };
        self.on_table.iter().position(|i| {
            i.unique
                && i.table == u.table
                && !i.keys.is_empty()
                && constrained.usable(*i)
                && i.keys.iter().all(|k| k.column().is_some_and(|c| equal(c, false)))
                && i.keys.iter().any(|k| k.column().is_some_and(|c| equal(c, true)))
        })
    }

    /// Whether a comparison with a value (outside any OR, not an optional filter) is searched
    /// through an index the statement can still use: a relation the planner can start from
    /// without reading its table whole.
    fn narrowed_by_value(&self, uses: &[ColumnUse], constrained: &Constrained, catalog: &Schema) -> bool {
        uses.iter()
            .filter(|v| {
                v.optional.is_none() && !v.alternative && !v.against_columns && v.comparison != Comparison::Other
            })
            .any(|v| {
                let key = match &v.wrapped {
                    None => IndexKey::Column(v.column.clone()),
                    Some(w) => IndexKey::Expression(w.expression.clone()),
                };
                let searchable = |i: IndexShape| constrained.searchable_at(i, &key, catalog).is_some();
                match v.table == self.table {
                    true => self.on_table.iter().any(|i| searchable(*i)),
                    false => self
                        .partners
                        .indexes_on(&v.table)
                        .filter(|i| !self.gone.contains(&i.name.as_str()))
                        .any(|i| searchable(IndexShape::from(i))),
                }
            })
    }
}

/// A statement's uses of `key` of `table`, compared the way an index on it can serve: by
/// equality or a range (with a value, or a join's or a subquery's column), outside any OR. An
/// OR's alternative, `<>`, `LIKE`, `IS NOT NULL` or a comparison under NOT is not searched
/// through a B-tree on its own (documentation, 11.2; a `BitmapOr` needs an index for every
/// alternative, which is not reasoned about), so dropping the index takes nothing from it
/// (lakekeeper's `metadata_location IS NOT NULL OR typ = 'generic-table'`).
fn uses_of<'u>(uses: &'u [ColumnUse], table: &str, key: &IndexKey, catalog: &Schema) -> Vec<&'u ColumnUse> {
    uses.iter()
        .filter(|u| {
            u.table == table
                && !u.alternative
                && !u.against_own_row
                && u.comparison != Comparison::Other
                && match key {
                    IndexKey::Column(c) => u.wrapped.is_none() && &u.column == c,
                    IndexKey::Expression(e) => u.wrapped.as_ref().is_some_and(|w| {
                        canonical_expression(&w.expression, table, catalog) == canonical_expression(e, table, catalog)
                    }),
                }
        })
        .collect()
}

/// A statement whose predicates `uses` use `key` of `table`, asked what serves them.
fn served_by(
    uses: &[ColumnUse],
    text: &str,
    table: &str,
    key: &IndexKey,
    alternatives: &Alternatives,
    catalog: &Schema,
) -> Served {
    let of_key = uses_of(uses, table, key, catalog);
    if of_key.is_empty() {
        return Served::NotUsed;
    }
    let constrained = Constrained::of(uses, text, catalog);
    match alternatives.serving(&of_key, uses, key, &constrained, catalog) {
        Some(at) => Served::By(at),
        None => Served::Not,
    }
}

enum Served {
    /// The statement does not compare the key.
    NotUsed,
    /// It does, and the alternative at this position serves it.
    By(usize),
    Not,
}

/// The queries and views that need the dropped index: they compare its leading key and neither
/// a remaining index nor one the drop's transaction creates serves them. With the later
/// indexes created outside that transaction (`outside`), the line of the first that serves one.
fn users(
    cx: &Context,
    dropped: &[&Index],
    table: &str,
    leading: &IndexKey,
    later: &[Later],
) -> (Vec<User>, Option<usize>) {
    let gone: Vec<&str> = dropped.iter().map(|d| d.name.as_str()).collect();
    let remaining = cx.schema.indexes_on(table).filter(|i| !gone.contains(&i.name.as_str())).map(IndexShape::from);
    let in_transaction = later.iter().filter(|l| l.same_transaction).map(|l| l.shape(table));
    let now =
        Alternatives { table, on_table: remaining.chain(in_transaction).collect(), partners: cx.schema, gone: &gone };
    let outside: Vec<&Later> = later.iter().filter(|l| !l.same_transaction).collect();
    let afterwards = Alternatives {
        table,
        on_table: outside.iter().map(|l| l.shape(table)).collect(),
        partners: cx.schema,
        gone: &gone,
    };
    let mut replaced_at = None;
    let mut needs = |uses: &[ColumnUse], text: &str| match served_by(uses, text, table, leading, &now, cx.schema) {
        Served::Not => {
            if let Served::By(at) = served_by(uses, text, table, leading, &afterwards, cx.schema) {
                let line = outside[at].line;
                replaced_at = Some(replaced_at.map_or(line, |l: usize| l.min(line)));
            }
            true
        }
        Served::NotUsed | Served::By(_) => false,
    };
    let mut out = Vec::new();
    for (q, query) in cx.facts.queries.parsed().iter().enumerate() {
        for (s, statement) in query.file().parsed.statements.iter().enumerate() {
            let Some(ast) = &statement.ast else { continue };
            let uses = predicate_uses(ast, cx.schema, 0);
            if !needs(&uses, query.file().parsed.statement_text(statement)) {
                continue;
            }
            let Some(u) = uses_of(&uses, table, leading, cx.schema).into_iter().next() else { continue };
            let line = query.host_line(u.position.line, u.position.column);
            let what = query.describe(statement).unwrap_or_else(|| "query".into());
            let (traffic, sql) = match &query.query.source {
                Source::Workload(origin) => {
                    (Some(origin.weight()), Some(query.file().parsed.statement_text(statement).to_string()))
                }
                _ => (None, None),
            };
            let at = UserAt::Query { query: q, statement: s };
            out.push(User { place: format!("{}:{line}", query.query.file), what, traffic, sql, at });
        }
    }
    for view in cx.schema.views.values() {
        // A view's text is not kept: no partial index is taken to serve it.
        if !needs(&view.uses, "") {
            continue;
        }
        let Some(u) = uses_of(&view.uses, table, leading, cx.schema).into_iter().next() else { continue };
        out.push(User {
            place: format!("{}:{}", view.origin.file, u.position.line),
            what: format!("view {}", view.name),
            traffic: None,
            sql: None,
            at: UserAt::View(view.name.clone()),
        });
    }
    // What production runs first, busiest first; then what the repository shows, in order.
    out.sort_by(|a, b| match (a.traffic, b.traffic) {
        (Some(x), Some(y)) => y.total_cmp(&x),
        (Some(_), None) => std::cmp::Ordering::Less,
        (None, Some(_)) => std::cmp::Ordering::Greater,
        (None, None) => std::cmp::Ordering::Equal,
    });
    (out, replaced_at)
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

/// A drop's finding, before the end of the history is known: what settles it then
/// ([`settle`]).
#[derive(Debug, Clone)]
struct Unsettled {
    /// The dropping migration's position in replay order.
    migration: usize,
    index: Index,
    leading: IndexKey,
    users: Vec<User>,
    /// The line of a later index of the same file, outside the drop's transaction, that serves them.
    replaced_at: Option<usize>,
    /// The lines of the indexes the same file creates later in the drop's transaction: at the
    /// end of the history, one that serves a user replaced the dropped index before any query
    /// ran without it (a query may compare a column the transaction adds only after the drop,
    /// unknown to the schema at the drop: lakekeeper's `view_representation.warehouse_id`).
    replaced_in_transaction: Vec<usize>,
    /// The message as the rule composed it (a DO block's branch may follow it).
    composed: String,
}

/// What a drop's finding says: its message, severity and facts; `None` when there is nothing to
/// report.
struct Composed {
    message: String,
    severity: Severity,
    facts: Vec<(&'static str, String)>,
}

/// The finding for dropping `index` that `users` need, with production's `usage`; `restored`:
/// what the end of the history (or the change) says restores an index serving them.
fn compose(
    index: &Index,
    leading: &IndexKey,
    users: &[User],
    replaced_at: Option<usize>,
    restored: Option<&str>,
    usage: Option<&IndexUsage>,
) -> Option<Composed> {
    let scans = usage.and_then(|u| Some((u, u.get(&index.name)?)));
    let index_fact = ("index", index.describe());
    match (users.first(), scans) {
        (Some(first), _) => {
            let more = match users.len() {
                1 => String::new(),
                n => format!(" (and {} more)", n - 1),
            };
            let mut message = format!(
                "dropping index {} leaves no index serving {}.{}, which {} filters on{more}",
                index.describe(),
                index.table,
                leading.display(),
                first.said(),
            );
            if let Some(line) = replaced_at {
                message.push_str(&format!(
                    "; the index at line {line} replaces it, but outside the drop's transaction: until it \
                     is built, those queries run without one"
                ));
            }
            if let Some(restored) = restored {
                message.push_str(&format!("; {restored}"));
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
            let mut facts =
                vec![index_fact, ("used by", users.iter().map(|u| u.place.clone()).collect::<Vec<_>>().join(", "))];
            if let Some(sql) = users.iter().find_map(|u| u.sql.as_deref()) {
                facts.push(("production query", excerpt(sql)));
            }
            Some(Composed { message, severity, facts })
        }
        (None, Some((usage, scans))) if scans.idx_scan > 0 => Some(Composed {
            message: format!(
                "dropping index {}: {}, though no query Sluice reads filters on {}.{}",
                index.describe(),
                production_scans(usage, scans),
                index.table,
                leading.display()
            ),
            severity: META.severity,
            facts: vec![index_fact],
        }),
        (None, Some((usage, scans))) if usage.covers_long() => Some(Composed {
            message: format!(
                "index {} is unused: {}; dropping it is safe",
                index.describe(),
                production_scans(usage, scans).replace("scanned it 0 times", "has not scanned it")
            ),
            severity: Severity::Info,
            facts: vec![index_fact],
        }),
        (None, _) => None,
    }
}

impl Rule for DropIndexInUse {
    fn meta(&self) -> &'static RuleMeta {
        &META
    }

    fn check(&self, cx: &Context, out: &mut Vec<Finding>) {
        let (Some(_), super::context::Role::Migration(state)) = (cx.migration(), cx.role) else { return };
        let dropped = dropped(cx);
        let usage = cx.facts.policies.index_usage.as_ref();
        for index in &dropped {
            let Some(leading) = index.keys.first() else { continue };
            let leads = |shape: IndexShape| {
                shape.predicate.is_none()
                    && shape.keys.first().is_some_and(|k| same_key(k, leading, &index.table, cx.schema))
            };
            // Another index led by the same key serves whatever this one did.
            let replaced = cx
                .schema
                .indexes_on(&index.table)
                .any(|i| !dropped.iter().any(|d| d.name == i.name) && leads(IndexShape::from(i)));
            let later = created_later(cx, index);
            if replaced || later.iter().any(|l| l.same_transaction && leads(l.shape(&index.table))) {
                continue;
            }
            let (users, replaced_at) = users(cx, &dropped, &index.table, leading, &later);
            let Some(composed) = compose(index, leading, &users, replaced_at, None, usage) else { continue };
            let mut finding = cx.finding(&META, composed.message.clone());
            for (name, value) in composed.facts {
                finding = finding.fact(name, value);
            }
            finding.severity = composed.severity;
            if !users.is_empty() {
                finding.settle = Some(Arc::new(Unsettled {
                    migration: state.index,
                    index: (*index).clone(),
                    leading: leading.clone(),
                    users,
                    replaced_at,
                    replaced_in_transaction: later.iter().filter(|l| l.same_transaction).map(|l| l.line).collect(),
                    composed: composed.message,
                }));
            }
            out.push(finding);
        }
    }

    fn finish_history(&self, end: &Schema, facts: &Facts, findings: &mut Vec<Finding>) {
        // Statements PostgreSQL or the migration tool refuses create nothing: an index they
        // build at the end of the history restores nothing (the fixtures' `CREATE INDEX
        // CONCURRENTLY` inside a transaction).
        let refusing = [super::concurrently_in_transaction::META.id, super::runner_rejects_migration::META.id];
        let refused: BTreeSet<(String, usize)> = findings
            .iter()
            .filter(|f| f.severity == Severity::Error && refusing.contains(&f.rule.as_str()))
            .map(|f| (f.file.clone(), f.line))
            .collect();
        let history = History { end, facts, refused: &refused };
        let mut settled = Vec::with_capacity(findings.len());
        for mut finding in std::mem::take(findings) {
            let unsettled = finding.settle.take().and_then(|s| s.downcast::<Unsettled>().ok());
            match unsettled {
                Some(unsettled) if finding.rule == META.id => {
                    if let Some(finding) = settle(finding, &unsettled, &history) {
                        settled.push(finding);
                    }
                }
                _ => settled.push(finding),
            }
        }
        *findings = settled;
    }
}

/// What the end of the history says: its schema, the project's facts, and the statements
/// (file, line) Sluice reports PostgreSQL or the tool refuses.
#[derive(Clone, Copy)]
struct History<'a> {
    end: &'a Schema,
    facts: &'a Facts<'a>,
    refused: &'a BTreeSet<(String, usize)>,
}

/// Asks a drop's finding again against the schema the whole history (or the change) ends with,
/// which is what the queries run against once every migration has run:
/// - `sluice lint` (the whole history): a user an index created by a later migration serves
///   needs the dropped index no more — unless production's index usage shows the index still
///   scanned, which means the drop has not run there yet and the window between the two
///   migrations is to come;
/// - `sluice check` (the change's migrations): such a restore leaves a window, from the drop to
///   the migration that builds the new index, in which the queries run without one: the
///   finding stays and says so.
///
/// An index the dropping file creates later in the drop's transaction that serves a user at the
/// end clears it in both: no query ran without an index (the query may compare a column the
/// transaction adds after the drop, unknown to the schema at the drop).
///
/// In `lint`, a view the end of the history no longer has clears its user too (nothing runs
/// it). An index that serves a user at the end without coming from a later migration (created
/// later in the dropping file, outside its transaction, which the finding already says) leaves
/// the user as it was, and so does a user that cannot be asked again (a query statement without
/// its syntax tree).
fn settle(mut finding: Finding, unsettled: &Unsettled, history: &History) -> Option<Finding> {
    let History { end, facts, refused } = *history;
    let table = &unsettled.index.table;
    let leading = &unsettled.leading;
    let usage = facts.policies.index_usage.as_ref();
    let still_scanned = usage.and_then(|u| u.get(&unsettled.index.name)).is_some_and(|s| s.idx_scan > 0);
    let window = facts.under_review || still_scanned;
    let on_table: Vec<&Index> =
        end.indexes_on(table).filter(|i| !refused.contains(&(i.origin.file.clone(), i.origin.line))).collect();
    let alternatives = Alternatives {
        table,
        on_table: on_table.iter().map(|i| IndexShape::from(*i)).collect(),
        partners: end,
        gone: &[],
    };
    let restore_of = |at: usize| {
        let index = on_table[at];
        index.origin.migration.is_some_and(|m| m > unsettled.migration).then_some(index)
    };
    let replaces = |at: usize| {
        let origin = &on_table[at].origin;
        origin.migration == Some(unsettled.migration) && unsettled.replaced_in_transaction.contains(&origin.line)
    };
    let mut users = Vec::new();
    let mut restore: Option<&Index> = None;
    for user in &unsettled.users {
        let served = match &user.at {
            UserAt::Query { query, statement } => {
                let query = facts.queries.get(*query);
                let statement = query.and_then(|q| q.file().parsed.statements.get(*statement));
                match (query, statement.and_then(|s| s.ast.as_deref().map(|ast| (s, ast)))) {
                    (Some(query), Some((statement, ast))) => {
                        let uses = predicate_uses(ast, end, 0);
                        served_by(
                            &uses,
                            query.file().parsed.statement_text(statement),
                            table,
                            leading,
                            &alternatives,
                            end,
                        )
                    }
                    _ => Served::Not,
                }
            }
            UserAt::View(name) => match end.views.get(name.as_str()) {
                Some(view) => served_by(&view.uses, "", table, leading, &alternatives, end),
                // The view is gone: nothing runs its query at the end of the history.
                None if !window => continue,
                None => Served::Not,
            },
        };
        match served {
            Served::NotUsed if !window => continue,
            Served::By(at) if replaces(at) => continue,
            Served::By(at) => match restore_of(at) {
                Some(_) if !window => continue,
                Some(index) => {
                    restore.get_or_insert(index);
                    users.push(user.clone());
                }
                None => users.push(user.clone()),
            },
            _ => users.push(user.clone()),
        }
    }
    if users.len() == unsettled.users.len() && restore.is_none() {
        return Some(finding);
    }
    let restored = restore.map(|index| {
        let end_of = if facts.under_review { "the change" } else { "the history" };
        format!(
            "index {} ({}:{}) serves them at the end of {end_of}, but only once that migration has run: from \
             the drop until then, those queries run without one",
            index.describe(),
            index.origin.file,
            index.origin.line
        )
    });
    let composed = compose(&unsettled.index, leading, &users, unsettled.replaced_at, restored.as_deref(), usage)?;
    let branch = finding.message.strip_prefix(unsettled.composed.as_str()).unwrap_or("").to_string();
    finding.message = composed.message + &branch;
    finding.severity = composed.severity;
    finding.facts.retain(|f| !matches!(f.name.as_str(), "index" | "used by" | "production query"));
    let facts: Vec<crate::finding::Fact> = composed
        .facts
        .into_iter()
        .map(|(name, value)| crate::finding::Fact { name: name.to_string(), value })
        .collect();
    finding.facts.splice(0..0, facts);
    Some(finding)
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
        let query = ("queries/q.sql", "SELECT region FROM reports WHERE day > $1;");
        for (migration, query) in [
            ("BEGIN;\nDROP INDEX reports_day;\nCREATE INDEX reports_day_brin ON reports USING brin (day);\nCOMMIT;", query),
            (
                "BEGIN;\nALTER TABLE reports DROP CONSTRAINT reports_code_key;\nALTER TABLE reports ADD CONSTRAINT reports_code_region UNIQUE (code, region);\nCOMMIT;",
                ("queries/q.sql", "SELECT region FROM reports WHERE code = $1;"),
            ),
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
    fn rows_a_unique_key_finds_need_no_index_on_the_other_columns() {
        // lakekeeper's 20250904142650_reusable_table_id drops `tabular_typ_tabular_id_idx (typ,
        // tabular_id)` while its queries look a tabular up by its primary key and check `typ`:
        // the primary key finds the one row, `typ` filters it.
        let base = "CREATE TABLE tabular (tabular_id uuid PRIMARY KEY, warehouse_id uuid, typ text, name text, metadata_location text);\n\
                    CREATE INDEX tabular_typ_tabular_id_idx ON tabular (typ, tabular_id);";
        let drop = ("002.sql", "DROP INDEX tabular_typ_tabular_id_idx;");
        for query in [
            "SELECT name FROM tabular WHERE warehouse_id = $1 AND tabular_id = $2 AND typ = $3;",
            // An OR's alternative is no search of the index on its own.
            "SELECT name FROM tabular WHERE warehouse_id = $1 AND (metadata_location IS NOT NULL OR typ = 'generic-table');",
        ] {
            let found = flagged(&[("001.sql", base), ("queries/q.sql", query), drop]);
            assert!(found.is_empty(), "{query}: {found:#?}");
        }
        // `IS NULL` on a key pins one row only where NULLs are not distinct (lakekeeper's
        // `unique NULLS not distinct (namespace_id, name, deleted_at)`).
        let query =
            ("queries/q.sql", "SELECT tabular_id FROM tabular WHERE name = $1 AND deleted_at IS NULL AND typ = $2;");
        for (unique, reported) in [("UNIQUE NULLS NOT DISTINCT", false), ("UNIQUE", true)] {
            let base = format!(
                "{base}\nALTER TABLE tabular ADD COLUMN deleted_at timestamptz;\n\
                 ALTER TABLE tabular ADD CONSTRAINT unique_name {unique} (name, deleted_at);"
            );
            let found = flagged(&[("001.sql", &base), query, drop]);
            assert_eq!(!found.is_empty(), reported, "{unique}: {found:#?}");
        }
        // Part of the key, or the key compared by a range, leaves `typ` the search.
        for query in [
            "SELECT name FROM tabular WHERE warehouse_id = $1 AND typ = $2;",
            "SELECT name FROM tabular WHERE tabular_id > $1 AND typ = $2;",
        ] {
            let found = flagged(&[("001.sql", base), ("queries/q.sql", query), drop]);
            assert_eq!(found.len(), 1, "{query}: {found:#?}");
        }
    }

    #[test]
    fn a_replacement_on_a_column_the_transaction_adds_later_is_no_drop() {
        // lakekeeper's `view_representation`: the drop comes first, `warehouse_id` is added
        // after it, then the index is created again led by it, all in the migration's
        // transaction; the query compares `warehouse_id`, unknown at the drop.
        let base = "CREATE TABLE view_representation (id bigint PRIMARY KEY, view_id uuid, view_version_id bigint, sql text);\n\
                    CREATE INDEX vr_view_id_version_id_idx ON view_representation (view_id, view_version_id);";
        let query = ("queries/q.sql", "SELECT sql FROM view_representation WHERE warehouse_id = $1 AND view_id = $2;");
        let migration = "BEGIN;\nDROP INDEX vr_view_id_version_id_idx;\n\
                         ALTER TABLE view_representation ADD COLUMN warehouse_id uuid;\n\
                         CREATE INDEX vr_view_id_version_id_idx ON view_representation (warehouse_id, view_id, view_version_id);\nCOMMIT;";
        let found = flagged(&[("001.sql", base), query, ("002.sql", migration)]);
        assert!(found.is_empty(), "{found:#?}");
        // Committed between the two, the queries run without an index for a while.
        let split = migration.replacen("ALTER TABLE", "COMMIT;\nALTER TABLE", 1).replacen("COMMIT;", "", 0);
        let found = flagged(&[("001.sql", base), query, ("002.sql", &split)]);
        assert_eq!(found.len(), 1, "{split}: {found:#?}");
    }

    #[test]
    fn a_view_of_plain_joins_reaches_a_relation_through_its_joined_unique_key() {
        // boundary's whx_host_dimension_source: `host_set` is joined by its primary key to
        // `target_host_set` and by `catalog_id` to `host`; dropping the `(catalog_id, public_id)`
        // key leaves the primary key to reach it. `target_host_set` has no other way in than its
        // dropped primary key: that drop is still reported (boundary's 00047_03).
        let base = "CREATE TABLE host (public_id text PRIMARY KEY, catalog_id text NOT NULL, name text);\n\
                    CREATE TABLE host_set (public_id text PRIMARY KEY, catalog_id text NOT NULL, name text);\n\
                    ALTER TABLE host_set ADD CONSTRAINT host_set_catalog_id_public_id_key UNIQUE (catalog_id, public_id);\n\
                    CREATE TABLE target (public_id text PRIMARY KEY, name text);\n\
                    CREATE TABLE target_host_set (target_id text, host_set_id text, PRIMARY KEY (target_id, host_set_id));\n\
                    CREATE VIEW host_dimension AS SELECT h.public_id AS host_id, hs.public_id AS host_set_id, t.public_id AS target_id\n\
                    FROM host h JOIN host_set hs ON h.catalog_id = hs.catalog_id\n\
                    JOIN target_host_set ts ON hs.public_id = ts.host_set_id JOIN target t ON ts.target_id = t.public_id;";
        let found = flagged(&[
            ("001.sql", base),
            ("002.sql", "ALTER TABLE host_set DROP CONSTRAINT host_set_catalog_id_public_id_key;"),
        ]);
        assert!(found.is_empty(), "{found:#?}");
        // Tables LEFT JOINed to the key after it do not change how it is reached (boundary's
        // `left join static_host_set as shs on shs.public_id = hs.public_id`).
        let trailing = base.replace(
            "JOIN target t ON ts.target_id = t.public_id;",
            "JOIN target t ON ts.target_id = t.public_id LEFT JOIN host_set hs2 ON hs2.public_id = hs.public_id;",
        );
        let found = flagged(&[
            ("001.sql", &trailing),
            ("002.sql", "ALTER TABLE host_set DROP CONSTRAINT host_set_catalog_id_public_id_key;"),
        ]);
        assert!(found.is_empty(), "{found:#?}");
        // Joined by a LEFT JOIN, `target_host_set` is read after `host_set`, never before it.
        let outer = base.replace("JOIN target_host_set ts", "LEFT JOIN target_host_set ts");
        let found = flagged(&[
            ("001.sql", &outer),
            ("002.sql", "ALTER TABLE host_set DROP CONSTRAINT host_set_catalog_id_public_id_key;"),
        ]);
        assert_eq!(found.len(), 1, "{found:#?}");
        let found = flagged(&[
            ("001.sql", base),
            ("002.sql", "ALTER TABLE target_host_set DROP CONSTRAINT target_host_set_pkey;"),
        ]);
        assert_eq!(found.len(), 1, "{found:#?}");
        assert!(found[0].message.contains("view host_dimension"), "{}", found[0].message);
    }

    #[test]
    fn a_join_driven_from_a_value_still_needs_the_index_into_the_next_table() {
        // The customer is found by its email; its orders are then found through
        // `orders_customer_id`, not through the primary key the shipments join: dropping it
        // leaves a scan of every order.
        let base = "CREATE TABLE customers (id bigint PRIMARY KEY, email text UNIQUE);\n\
                    CREATE TABLE orders (id bigint PRIMARY KEY, customer_id bigint, total numeric);\n\
                    CREATE INDEX orders_customer_id ON orders (customer_id);\n\
                    CREATE TABLE shipments (id bigint PRIMARY KEY, order_id bigint);";
        let query = "SELECT s.id FROM customers c JOIN orders o ON o.customer_id = c.id\n\
                     JOIN shipments s ON s.order_id = o.id WHERE c.email = $1;";
        let found =
            flagged(&[("001.sql", base), ("queries/q.sql", query), ("002.sql", "DROP INDEX orders_customer_id;")]);
        assert_eq!(found.len(), 1, "{found:#?}");
    }

    #[test]
    fn a_replacement_added_by_the_dropping_alter_table_is_no_drop() {
        // langfuse's 20240718004923_datasets_tables_add_projectid_composite_key: the new primary
        // key, led by the same column, is built by the statement that drops the old one, so no
        // query runs without it (PostgreSQL reads it: `Index Only Scan using datasets_pkey`,
        // `Index Cond: ((id = $1) AND (project_id = $2))`), with or without BEGIN around it.
        let base = "CREATE TABLE datasets (id text NOT NULL, project_id text NOT NULL, name text);\n\
                    ALTER TABLE datasets ADD CONSTRAINT datasets_pkey PRIMARY KEY (id);";
        let query = ("queries/q.sql", "SELECT name FROM datasets WHERE id = $1;");
        for migration in [
            "ALTER TABLE \"datasets\" DROP CONSTRAINT \"datasets_pkey\",\nADD CONSTRAINT \"datasets_pkey\" PRIMARY KEY (\"id\", \"project_id\");",
            "BEGIN;\nALTER TABLE datasets DROP CONSTRAINT datasets_pkey, ADD CONSTRAINT datasets_new_pkey PRIMARY KEY (id, project_id);\nCOMMIT;",
        ] {
            let found = flagged(&[("001.sql", base), query, ("002.sql", migration)]);
            assert!(found.is_empty(), "{migration}: {found:#?}");
        }
        // A replacement led by another column serves nothing the query asks.
        let found = flagged(&[
            ("001.sql", base),
            query,
            ("002.sql", "ALTER TABLE datasets DROP CONSTRAINT datasets_pkey, ADD CONSTRAINT datasets_pkey PRIMARY KEY (project_id, id);"),
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

    /// crates.io's tables as its history had them (`migrations/`), cut to the columns its
    /// queries compare.
    const CRATES: &str = "CREATE TABLE crates (id serial PRIMARY KEY, name varchar NOT NULL);
ALTER TABLE crates ADD CONSTRAINT packages_name_key UNIQUE (name);
CREATE TABLE versions (id serial PRIMARY KEY, crate_id integer NOT NULL, num varchar NOT NULL);
CREATE INDEX index_version_num ON versions (num);
CREATE UNIQUE INDEX unique_num ON versions (crate_id, num);
CREATE TABLE temp_downloads (name text, version text, downloads integer);
CREATE TABLE teams (id serial PRIMARY KEY, login varchar);
CREATE TABLE users (id serial PRIMARY KEY, gh_login varchar);
CREATE TABLE crate_owners (id serial PRIMARY KEY, crate_id integer NOT NULL, owner_id integer NOT NULL,
    owner_kind integer NOT NULL, deleted boolean NOT NULL DEFAULT false);
CREATE INDEX index_crate_owners_crate_id ON crate_owners (crate_id);
ALTER TABLE crate_owners ADD CONSTRAINT crate_owners_unique_owner_per_crate UNIQUE (owner_id, crate_id, owner_kind);";

    /// `process_log.rs:316` (`save_to_version_downloads`), as diesel sends it.
    const SAVE_DOWNLOADS: &str = "SELECT versions.id, temp_downloads.*
FROM temp_downloads
LEFT JOIN crates ON crates.name = temp_downloads.name
LEFT JOIN versions ON versions.num = temp_downloads.version AND versions.crate_id = crates.id;";

    /// `krate.rs:232` (`owner_remove`), its CTE.
    const OWNER_REMOVE: &str =
        "SELECT crate_owners.*, CASE WHEN crate_owners.owner_kind = 1 THEN teams.login ELSE users.gh_login END AS login
FROM crate_owners
LEFT JOIN teams ON crate_owners.owner_id = teams.id AND crate_owners.owner_kind = 1
LEFT JOIN users ON crate_owners.owner_id = users.id AND crate_owners.owner_kind = 0
WHERE crate_owners.crate_id = $1 AND crate_owners.deleted = false;";

    /// crates.io's `20141121191309…/up.sql`: the unique constraint on `name` for one on `lower(name)`.
    const DROP_NAME_KEY: &str = "ALTER TABLE crates DROP CONSTRAINT packages_name_key;
CREATE UNIQUE INDEX index_crates_name ON crates (lower(name));";
    /// crates.io's `2018-10-17-203221…/up.sql`, four years later.
    const NAME_ORDERING: &str = "CREATE INDEX index_crates_name_ordering ON crates (name);";

    fn reviewed(files: &[(&str, &str)]) -> Vec<Finding> {
        let setup = Setup { under_review: true, ..Setup::default() };
        lint_with(files, &setup).into_iter().filter(|f| f.rule == META.id).collect()
    }

    #[test]
    fn a_past_drop_whose_index_a_later_migration_restores_is_judged_by_the_end_of_the_history() {
        // crates.io 1: `lint` over the whole history blamed the 2014 drop for a query that today
        // runs on the 2018 index.
        let query = ("queries/save.sql", SAVE_DOWNLOADS);
        let history = [("001.sql", CRATES), query, ("002.sql", DROP_NAME_KEY), ("003.sql", NAME_ORDERING)];
        assert!(flagged(&history).is_empty(), "{:#?}", flagged(&history));
        // Nothing restores it: the queries run without one today.
        let found = flagged(&history[..3]);
        assert_eq!(found.len(), 1, "{found:#?}");
        assert!(
            found[0].message.starts_with(
                "dropping index packages_name_key (name) leaves no index serving crates.name, which the query at \
                 queries/save.sql:3 filters on"
            ),
            "{}",
            found[0].message
        );
        // A restore that serves another column, or a partial one the query does not imply, restores nothing.
        for restore in [
            "CREATE INDEX crates_lower_name ON crates (lower(name));",
            "CREATE INDEX crates_name_live ON crates (name) WHERE id > 0;",
        ] {
            let found = flagged(&[("001.sql", CRATES), query, ("002.sql", DROP_NAME_KEY), ("003.sql", restore)]);
            assert_eq!(found.len(), 1, "{restore}: {found:#?}");
        }
        // A restore PostgreSQL refuses (CONCURRENTLY inside a transaction) builds nothing.
        let refused = "BEGIN;\nCREATE INDEX CONCURRENTLY index_crates_name_ordering ON crates (name);\nCOMMIT;";
        let found = flagged(&[("001.sql", CRATES), query, ("002.sql", DROP_NAME_KEY), ("003.sql", refused)]);
        assert_eq!(found.len(), 1, "{found:#?}");
        // A change under review that drops in one migration and restores in a later one leaves
        // the queries without an index in between: reported, and said.
        let found = reviewed(&history);
        assert_eq!(found.len(), 1, "{found:#?}");
        assert!(
            found[0].message.contains(
                "index index_crates_name_ordering (name) (003.sql:1) serves them at the end of the change, but only \
                 once that migration has run: from the drop until then, those queries run without one"
            ),
            "{}",
            found[0].message
        );
        // A restore later in the same file but outside the drop's transaction stays reported in
        // `lint` too: the file itself leaves the window, whenever it runs.
        let same_file = format!("{DROP_NAME_KEY}\n{NAME_ORDERING}");
        let found = flagged(&[("001.sql", CRATES), query, ("002.sql", &same_file)]);
        assert_eq!(found.len(), 1, "{found:#?}");
        assert!(found[0].message.contains("the index at line 3 replaces it, but outside"), "{}", found[0].message);
        // A view dropped since runs nothing at the end of the history.
        let view = "CREATE VIEW by_name AS SELECT * FROM crates WHERE name = 'serde';";
        let found = flagged(&[
            ("001.sql", CRATES),
            ("002.sql", view),
            ("003.sql", DROP_NAME_KEY),
            ("004.sql", "DROP VIEW by_name;"),
        ]);
        assert!(found.is_empty(), "{found:#?}");
        assert_eq!(flagged(&[("001.sql", CRATES), ("002.sql", view), ("003.sql", DROP_NAME_KEY)]).len(), 1);
    }

    #[test]
    fn another_index_serves_through_leading_keys_the_query_compares_by_equality() {
        // crates.io 5: `index_version_num (num)` dropped; the join compares `versions.crate_id =
        // crates.id` as well, which `unique_num (crate_id, num)` is searched by first.
        let drop_num = ("002.sql", "DROP INDEX path_categories_idx;\nDROP INDEX index_version_num;");
        let categories = "CREATE TABLE categories (id serial PRIMARY KEY, path text);
CREATE INDEX path_categories_idx ON categories (path);";
        let found =
            flagged(&[("001.sql", CRATES), ("001b.sql", categories), ("queries/save.sql", SAVE_DOWNLOADS), drop_num]);
        assert!(found.iter().all(|f| !f.message.contains("index_version_num")), "{found:#?}");
        // Without the equality on crate_id, the index cannot be searched for num: reported. And
        // a range on the leading key bounds the search by it alone.
        for query in [
            "SELECT id FROM versions WHERE num = $1;",
            "SELECT id FROM versions WHERE crate_id > $1 AND num = $2;",
            "SELECT id FROM versions WHERE NOT (crate_id = $1) AND num = $2;",
            "SELECT id FROM versions WHERE crate_id <> $1 AND num = $2;",
        ] {
            let found =
                flagged(&[("001.sql", CRATES), ("queries/q.sql", query), ("002.sql", "DROP INDEX index_version_num;")]);
            assert_eq!(found.len(), 1, "{query}: {found:#?}");
        }
        // An equality on the prefix, then the column compared by a range or IN: served.
        for query in [
            "SELECT id FROM versions WHERE crate_id = $1 AND num > $2;",
            "SELECT id FROM versions WHERE crate_id IN (1, 2) AND num = $1;",
            "SELECT id FROM versions WHERE crate_id = ANY($1) AND num BETWEEN $2 AND $3;",
        ] {
            let found =
                flagged(&[("001.sql", CRATES), ("queries/q.sql", query), ("002.sql", "DROP INDEX index_version_num;")]);
            assert!(found.is_empty(), "{query}: {found:#?}");
        }
    }

    #[test]
    fn a_join_equality_is_served_from_the_other_side_only_when_this_table_is_reached_by_an_index() {
        // crates.io 4, `20170308191449…/up.sql`: the unique constraint led by owner_id goes, and the
        // primary key added in the same (diesel's) transaction is led by crate_id, which the
        // query compares with `$1`.
        let migration = "ALTER TABLE crate_owners DROP COLUMN id;
ALTER TABLE crate_owners DROP CONSTRAINT crate_owners_unique_owner_per_crate;
ALTER TABLE crate_owners ADD PRIMARY KEY (crate_id, owner_id, owner_kind);
DROP INDEX index_crate_owners_crate_id;
CREATE UNIQUE INDEX crate_owners_not_deleted ON crate_owners (crate_id, owner_id, owner_kind) WHERE NOT deleted;";
        let query = ("queries/owners.sql", OWNER_REMOVE);
        let setup = Setup { in_transaction: true, ..Setup::default() };
        let found: Vec<Finding> = lint_with(&[("001.sql", CRATES), query, ("002.sql", migration)], &setup)
            .into_iter()
            .filter(|f| f.rule == META.id)
            .collect();
        assert!(found.is_empty(), "{found:#?}");
        // Without any new index: crate_owners is found by `crate_id = $1` through
        // index_crate_owners_crate_id, and each row probes teams_pkey and users_pkey by owner_id.
        let drop = ("002.sql", "ALTER TABLE crate_owners DROP CONSTRAINT crate_owners_unique_owner_per_crate;");
        assert!(
            flagged(&[("001.sql", CRATES), query, drop]).is_empty(),
            "{:#?}",
            flagged(&[("001.sql", CRATES), query, drop])
        );
        // Nothing narrows crate_owners: driving the join from it reads it whole. Reported.
        let unnarrowed = "SELECT teams.login FROM crate_owners JOIN teams ON crate_owners.owner_id = teams.id WHERE crate_owners.deleted = false;";
        assert_eq!(flagged(&[("001.sql", CRATES), ("queries/q.sql", unnarrowed), drop]).len(), 1);
        // Narrowed by a join to another table's rows, not a value: still reported.
        let chained = "SELECT teams.login FROM crate_owners JOIN teams ON crate_owners.owner_id = teams.id JOIN crates ON crate_owners.crate_id = crates.id;";
        assert_eq!(flagged(&[("001.sql", CRATES), ("queries/q.sql", chained), drop]).len(), 1);
        // The other side has no index on its column: reported.
        let unindexed = "SELECT 1 FROM crate_owners JOIN temp_downloads t ON crate_owners.owner_id = t.downloads WHERE crate_owners.crate_id = $1;";
        assert_eq!(flagged(&[("001.sql", CRATES), ("queries/q.sql", unindexed), drop]).len(), 1);
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
