use super::{Context, Rule, RuleMeta};
use crate::finding::{Finding, Severity};
use crate::rules::Category;
use crate::schema::Schema;
use crate::sql::ddl::{AlterAction, ConstraintKind, Ddl, Name, ObjectKind};

pub struct ConstraintWithoutRollback;

pub static META: RuleMeta = RuleMeta {
    id: "constraint-without-rollback",
    severity: Severity::Warning,
    category: Category::MigrationSafety,
    summary: "A new constraint or index on an existing table whose down migration does not drop it",
    what: "Where the layout has down migrations (diesel/golang-migrate `down.sql`, Flyway `U…__` undo files, \
dbmate's `-- migrate:down` section), flags a constraint (`ADD CONSTRAINT`) or index (`CREATE INDEX`) added to an \
existing table when this migration's rollback does not drop it — by name, through `DROP TABLE`, or by dropping one \
of its columns — or when the migration has no rollback at all.",
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
struct Addition {
    table: Name,
    /// None for an unnamed constraint or index.
    name: Option<Name>,
    index: bool,
    columns: Vec<Name>,
    what: String,
}

fn additions(ddl: &Ddl, schema: &Schema) -> Vec<Addition> {
    match ddl {
        Ddl::CreateIndex(i) => vec![Addition {
            table: i.table.clone(),
            name: i.name.clone(),
            index: true,
            columns: i.keys.iter().filter_map(|k| k.column().map(str::to_string)).collect(),
            what: format!("index {}", schema.index_name(i)),
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
                    what: format!("constraint {}", schema.constraint_name(table, c, &[])),
                }),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    }
}

fn undone_by(addition: &Addition, down: &Ddl) -> bool {
    let named = |n: &Name| addition.name.as_ref().is_none_or(|a| a == n);
    match down {
        Ddl::Drop { kind: ObjectKind::Table, names, .. } => names.contains(&addition.table),
        Ddl::Drop { kind: ObjectKind::Index, names, .. } => addition.index && names.iter().any(named),
        Ddl::AlterTable { table, actions, .. } if *table == addition.table => actions.iter().any(|a| match a {
            AlterAction::DropConstraint { name, .. } => !addition.index && named(name),
            AlterAction::DropColumn { name, .. } => addition.columns.contains(name),
            _ => false,
        }),
        _ => false,
    }
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
        for addition in additions(&cx.statement.ddl, cx.schema) {
            if !cx.is_existing_table(&addition.table) {
                continue;
            }
            let message = match &state.down {
                None => format!(
                    "{} on {} has no rollback: this migration has no down migration",
                    addition.what, addition.table
                ),
                Some(down) if down.iter().any(|d| undone_by(&addition, d)) => continue,
                Some(_) => {
                    format!("{} on {} is not dropped by this migration's down migration", addition.what, addition.table)
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
        let fk = "ALTER TABLE t ADD CONSTRAINT t_a_fk FOREIGN KEY (a) REFERENCES t (id) NOT VALID;";
        assert_eq!(count(fk, Some("ALTER TABLE t DROP CONSTRAINT t_a_other;")), 1);
        assert_eq!(count(fk, Some("ALTER TABLE t DROP CONSTRAINT IF EXISTS t_a_fk;")), 0);
        assert_eq!(count(fk, Some("DROP TABLE t;")), 0);
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
