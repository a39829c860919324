use super::{Context, MigrationState, Rule, RuleMeta};
use crate::finding::{Finding, Severity};
use crate::rules::Category;
use crate::sql::ddl::{AlterAction, ConstraintKind, Ddl, Name, ObjectKind};
use crate::sql::parse::ParsedFile;
use std::collections::BTreeSet;

pub struct ConstraintWithoutRollback;

pub static META: RuleMeta = RuleMeta {
    id: "constraint-without-rollback",
    severity: Severity::Warning,
    category: Category::MigrationSafety,
    summary: "A new constraint or index on an existing table whose down migration does not drop it",
    what: "Where the layout has down migrations (diesel/golang-migrate `down.sql`, Flyway `U…__` undo files, \
dbmate's `-- migrate:down` section), flags a constraint (`ADD CONSTRAINT`) or index (`CREATE INDEX`) added to an \
existing table when this migration's rollback does not drop it — by name, by dropping its table, view, \
materialized view or schema, or by dropping a column it uses — or when the migration has no rollback at all. An \
index or constraint the same migration dropped and re-creates existed before it and is not flagged, nor one on a \
view or materialized view the migration created.",
    why: "A new constraint is the change most likely to start rejecting production writes. In the bird-survey \
incident the rollback needed a new migration, written and reviewed under pressure while submissions failed.",
    fix: "Write the rollback with the migration: `ALTER TABLE … DROP CONSTRAINT …` or \
`DROP INDEX CONCURRENTLY …` in the down migration, and name constraints explicitly so the rollback can name them.",
    bad: "\
-- migration: 001_orders.sql
CREATE TABLE orders (id bigint PRIMARY KEY, quantity int NOT NULL);
-- migrate:down
DROP TABLE orders;
-- migration: 002_quantity_positive.sql
-- migrate:up transaction:false
SET lock_timeout = '5s';
ALTER TABLE orders ADD CONSTRAINT orders_quantity_positive CHECK (quantity > 0) NOT VALID;
-- migrate:down
",
    good: "\
-- migration: 001_orders.sql
CREATE TABLE orders (id bigint PRIMARY KEY, quantity int NOT NULL);
-- migrate:down
DROP TABLE orders;
-- migration: 002_quantity_positive.sql
-- migrate:up transaction:false
SET lock_timeout = '5s';
ALTER TABLE orders ADD CONSTRAINT orders_quantity_positive CHECK (quantity > 0) NOT VALID;
-- migrate:down
SET lock_timeout = '5s';
ALTER TABLE orders DROP CONSTRAINT orders_quantity_positive;",
    equivalents: "squawk: none; strong_migrations: none; eugene: none",
};

/// What a migration adds that its rollback must remove.
struct Addition<'a> {
    table: Name,
    /// None for an unnamed constraint or index.
    name: Option<Name>,
    index: bool,
    columns: Vec<Name>,
    /// Expression keys of an index: dropping a column they mention drops the index too.
    expressions: Vec<String>,
    what: What<'a>,
}

/// What a finding calls the addition: an index by its name, a constraint by the name PostgreSQL
/// gives it, worked out only for a finding (after the statement's own drops it can take a copy
/// of the schema).
enum What<'a> {
    Index(String),
    Constraint(&'a crate::sql::ddl::Constraint),
}

impl Addition<'_> {
    fn describe(&self, cx: &Context) -> String {
        match self.what {
            What::Index(ref index) => format!("index {index}"),
            What::Constraint(constraint) => format!("constraint {}", cx.added_constraint_name(&self.table, constraint)),
        }
    }

    fn uses_column(&self, column: &str) -> bool {
        self.columns.iter().any(|c| c == column)
            || self.expressions.iter().any(|e| {
                e.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '"'))
                    .any(|word| word.trim_matches('"').eq_ignore_ascii_case(column))
            })
    }
}

fn additions<'a>(cx: &Context<'a>) -> Vec<Addition<'a>> {
    let schema = cx.schema;
    match &cx.statement.ddl {
        // `IF NOT EXISTS` on an index that exists adds nothing.
        Ddl::CreateIndex(i) if i.if_not_exists && i.name.as_ref().is_some_and(|n| schema.indexes.contains_key(n)) => {
            Vec::new()
        }
        Ddl::CreateIndex(i) => vec![Addition {
            table: i.table.clone(),
            name: i.name.clone(),
            index: true,
            columns: i.keys.iter().filter_map(|k| k.column().map(str::to_string)).collect(),
            expressions: i
                .keys
                .iter()
                .filter_map(|k| match k {
                    crate::sql::ddl::IndexKey::Expression(e) => Some(e.clone()),
                    crate::sql::ddl::IndexKey::Column(_) => None,
                })
                .chain(i.predicate.clone())
                .collect(),
            what: What::Index(schema.index_name(i)),
        }],
        Ddl::AlterTable { table, actions, .. } => actions
            .iter()
            .filter_map(|a| match a {
                AlterAction::AddConstraint(c) => Some(Addition {
                    table: table.clone(),
                    name: c.name.clone(),
                    index: false,
                    columns: match &c.kind {
                        ConstraintKind::PrimaryKey { columns }
                        | ConstraintKind::Unique { columns, .. }
                        | ConstraintKind::ForeignKey { columns, .. } => columns.clone(),
                        _ => Vec::new(),
                    },
                    expressions: match &c.kind {
                        ConstraintKind::Check { expression } => vec![expression.clone()],
                        _ => Vec::new(),
                    },
                    what: What::Constraint(c),
                }),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// Whether checking `file` may ask what its rollback drops: it adds an index or a constraint to
/// a table it does not create (or it holds statements not kept whole, which might). The engine
/// then reads the rollback ahead, on a parsing thread, not on the thread that replays in order.
pub fn may_read_rollback(file: &ParsedFile) -> bool {
    let mut created: BTreeSet<&Name> = BTreeSet::new();
    file.statements.iter().any(|statement| match &statement.ddl {
        Ddl::CreateTable { name, .. } => {
            created.insert(name);
            false
        }
        Ddl::CreateIndex(index) => !created.contains(&index.table),
        Ddl::AlterTable { table, actions, .. } => {
            !created.contains(table) && actions.iter().any(|a| matches!(a, AlterAction::AddConstraint(_)))
        }
        Ddl::NotKept => true,
        _ => false,
    })
}

fn undone_by(addition: &Addition, down: &Ddl) -> bool {
    let named = |n: &Name| addition.name.as_ref().is_none_or(|a| a == n);
    match down {
        // Dropping the table, view or materialized view drops its indexes and constraints.
        Ddl::Drop { kind: ObjectKind::Table | ObjectKind::View | ObjectKind::MaterializedView, names, .. } => {
            names.contains(&addition.table)
        }
        Ddl::Drop { kind: ObjectKind::Schema, names, .. } => {
            names.iter().any(|schema| addition.table.starts_with(&format!("{schema}.")))
        }
        Ddl::Drop { kind: ObjectKind::Index, names, .. } => addition.index && names.iter().any(named),
        Ddl::AlterTable { table, actions, .. } if *table == addition.table => actions.iter().any(|a| match a {
            AlterAction::DropConstraint { name, .. } => !addition.index && named(name),
            AlterAction::DropColumn { name, .. } => addition.uses_column(name),
            _ => false,
        }),
        _ => false,
    }
}

/// Whether an earlier statement of this migration dropped an object of the same name: the
/// migration re-creates what existed before it, which a rollback must not drop.
fn recreated(state: &MigrationState, addition: &Addition) -> bool {
    let Some(name) = &addition.name else { return false };
    (addition.index && state.dropped_index_names.contains(name))
        || state.dropped_constraints.contains(&(addition.table.clone(), name.clone()))
}

impl Rule for ConstraintWithoutRollback {
    fn meta(&self) -> &'static RuleMeta {
        &META
    }

    fn check(&self, cx: &Context, out: &mut Vec<Finding>) {
        let Some(state) = cx.migration() else { return };
        if !state.layout_has_down {
            return;
        }
        for addition in additions(cx) {
            if !cx.is_existing_table(&addition.table) || recreated(state, &addition) {
                continue;
            }
            let message = match state.down.drops() {
                None => format!(
                    "{} on {} has no rollback: this migration has no down migration",
                    addition.describe(cx),
                    addition.table
                ),
                Some(down) if down.iter().any(|d| undone_by(&addition, d)) => continue,
                Some(_) => {
                    format!(
                        "{} on {} is not dropped by this migration's down migration",
                        addition.describe(cx),
                        addition.table
                    )
                }
            };
            out.push(cx.finding(&META, message).fact("table", addition.table.as_str()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::testing::{check_examples, lint_with, of, Setup};

    #[test]
    fn examples_lint_as_documented() {
        check_examples(&META, "");
    }

    fn count(up: &str, down: Option<&str>) -> usize {
        let downs: Vec<(&str, &str)> =
            down.map(|d| ("002.sql", d)).into_iter().chain([("001.sql", "DROP TABLE t;")]).collect();
        let found = lint_with(
            &[("001.sql", "CREATE TABLE t (id int, a int);"), ("002.sql", up)],
            &Setup { downs: &downs, ..Setup::default() },
        );
        of(&found, META.id).len()
    }

    #[test]
    fn down_files_must_drop_what_the_up_adds() {
        let index = "CREATE INDEX CONCURRENTLY t_a ON t (a);";
        assert_eq!(count(index, None), 1);
        assert_eq!(count(index, Some("SELECT 1;")), 1);
        assert_eq!(count(index, Some("DROP INDEX CONCURRENTLY IF EXISTS t_a;")), 0);
        assert_eq!(count(index, Some("ALTER TABLE t DROP COLUMN a;")), 0);
        let if_not_exists = |up: &str| {
            let found = lint_with(
                &[("001.sql", "CREATE TABLE t (id int, a int); CREATE INDEX t_a ON t (a);"), ("002.sql", up)],
                &Setup { downs: &[("002.sql", "SELECT 1;"), ("001.sql", "DROP TABLE t;")], ..Setup::default() },
            );
            of(&found, META.id).len()
        };
        assert_eq!(if_not_exists("CREATE INDEX CONCURRENTLY IF NOT EXISTS t_a ON t (a);"), 0, "t_a exists: a no-op");
        assert_eq!(if_not_exists("CREATE INDEX CONCURRENTLY IF NOT EXISTS t_b ON t (a);"), 1);
        let fk = "ALTER TABLE t ADD CONSTRAINT t_a_fk FOREIGN KEY (a) REFERENCES t (id) NOT VALID;";
        assert_eq!(count(fk, Some("ALTER TABLE t DROP CONSTRAINT t_a_other;")), 1);
        assert_eq!(count(fk, Some("ALTER TABLE t DROP CONSTRAINT IF EXISTS t_a_fk;")), 0);
        assert_eq!(count(fk, Some("DROP TABLE t;")), 0);
    }

    #[test]
    fn only_the_drops_of_a_long_rollback_matter() {
        let index = "CREATE INDEX CONCURRENTLY t_a ON t (a);";
        let recreating = "CREATE OR REPLACE VIEW v AS SELECT a FROM t;\n\
                          CREATE FUNCTION f() RETURNS int AS $$ BEGIN DROP INDEX t_a; RETURN 1; END $$ LANGUAGE plpgsql;";
        assert_eq!(count(index, Some(recreating)), 1, "a DROP inside a function body undoes nothing");
        let dropping = format!("{recreating}\n-- undo\ndrop index concurrently t_a;");
        assert_eq!(count(index, Some(&dropping)), 0);
        let altering = format!("{recreating}\nAlter Table t Drop Column a;");
        assert_eq!(count(index, Some(&altering)), 0);
        let restoring = format!("{recreating}\nALTER TABLE t ADD COLUMN b int, ALTER COLUMN a SET DEFAULT 0;");
        assert_eq!(count(index, Some(&restoring)), 1, "an ALTER that drops nothing undoes nothing");
        let late_drop = "ALTER TABLE t ALTER COLUMN a SET DEFAULT 0,\n  dRoP cOnStRaInT IF EXISTS x, DROP COLUMN a;";
        assert_eq!(count(index, Some(late_drop)), 0);
    }

    #[test]
    fn dropping_the_parent_or_a_column_an_expression_uses_undoes_it() {
        let expression = "CREATE INDEX CONCURRENTLY t_lower_a ON t (lower(a::text));";
        assert_eq!(count(expression, Some("ALTER TABLE t DROP COLUMN a;")), 0);
        assert_eq!(count(expression, Some("ALTER TABLE t DROP COLUMN id;")), 1);
        let partial = "CREATE INDEX CONCURRENTLY t_id_a ON t (id) WHERE a > 0;";
        assert_eq!(count(partial, Some("ALTER TABLE t DROP COLUMN a;")), 0, "the predicate uses a");
        let check = "ALTER TABLE t ADD CONSTRAINT a_positive CHECK (a > 0) NOT VALID;";
        assert_eq!(count(check, Some("ALTER TABLE t DROP COLUMN a;")), 0);
        let in_schema = |down: &str| {
            let downs = [("002.sql", down), ("001.sql", "DROP SCHEMA app;")];
            let found = lint_with(
                &[
                    ("001.sql", "CREATE SCHEMA app; CREATE TABLE app.t (id int);"),
                    ("002.sql", "CREATE INDEX CONCURRENTLY t_id ON app.t (id);"),
                ],
                &Setup { downs: &downs, ..Setup::default() },
            );
            of(&found, META.id).len()
        };
        assert_eq!(in_schema("DROP SCHEMA app CASCADE;"), 0);
        assert_eq!(in_schema("DROP SCHEMA other CASCADE;"), 1);
    }

    #[test]
    fn views_created_and_objects_recreated_by_the_migration_need_no_rollback() {
        let up = "CREATE MATERIALIZED VIEW t_totals AS SELECT a, count(*) FROM t GROUP BY a;\n\
                  CREATE UNIQUE INDEX t_totals_a ON t_totals (a);";
        assert_eq!(count(up, Some("SELECT 1;")), 0, "the materialized view is new");
        let on_view = |down: &str| {
            let found = lint_with(
                &[
                    (
                        "001.sql",
                        "CREATE TABLE t (id int, a int); CREATE MATERIALIZED VIEW t_totals AS SELECT a FROM t;",
                    ),
                    ("002.sql", "CREATE UNIQUE INDEX t_totals_a ON t_totals (a);"),
                ],
                &Setup { downs: &[("002.sql", down), ("001.sql", "DROP TABLE t;")], ..Setup::default() },
            );
            of(&found, META.id).len()
        };
        assert_eq!(on_view("DROP MATERIALIZED VIEW t_totals;"), 0, "dropping the view drops its index");
        assert_eq!(on_view("SELECT 1;"), 1);
        let recreate = "DROP INDEX CONCURRENTLY IF EXISTS t_a;\nCREATE INDEX CONCURRENTLY t_a ON t (a, id);";
        assert_eq!(count(&format!("CREATE INDEX CONCURRENTLY t_a ON t (a); {recreate}"), Some("SELECT 1;")), 1);
        assert_eq!(count(recreate, Some("SELECT 1;")), 0, "t_a existed before this migration");
        let readd = "ALTER TABLE t DROP CONSTRAINT t_a_fk;\n\
                     ALTER TABLE t ADD CONSTRAINT t_a_fk FOREIGN KEY (a) REFERENCES t (id) NOT VALID;";
        assert_eq!(count(readd, Some("SELECT 1;")), 0);
    }

    #[test]
    fn silent_when_the_layout_has_no_down_migrations() {
        let found = lint_with(
            &[("001.sql", "CREATE TABLE t (a int);"), ("002.sql", "CREATE INDEX CONCURRENTLY t_a ON t (a);")],
            &Setup::default(),
        );
        assert!(of(&found, META.id).is_empty());
    }
}
