//! Replaying one statement onto the schema. Pure: no I/O, and unknown objects are
//! tolerated (a migration may touch what the history never showed us).

use super::model::*;
use crate::sql::ddl::{AlterAction, Column, Constraint, ConstraintKind, CreateIndex, Ddl, IndexKey, Name, ObjectKind};
use crate::sql::parse::Statement;
use crate::sql::query::predicate_uses;

/// PostgreSQL truncates identifiers to 63 bytes.
fn pg_name(name: String) -> Name {
    if name.len() <= 63 {
        return name;
    }
    let mut end = 63;
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    name[..end].to_string()
}

/// The name PostgreSQL gives an index it builds without being told one.
fn default_index_name(table: &str, columns: &[Name], suffix: &str) -> Name {
    let table = table.rsplit('.').next().unwrap_or(table);
    let columns: Vec<String> =
        columns.iter().map(|c| c.chars().filter(|ch| ch.is_alphanumeric() || *ch == '_').collect()).collect();
    let base = if columns.is_empty() || suffix == "pkey" {
        table.to_string()
    } else {
        format!("{table}_{}", columns.join("_"))
    };
    pg_name(format!("{base}_{suffix}"))
}

impl Schema {
    /// Applies `statement`, defined at `origin`, to the schema.
    pub fn apply(&mut self, statement: &Statement, origin: &Origin) {
        match &statement.ddl {
            Ddl::CreateTable { name, if_not_exists, columns, constraints, .. } => {
                if *if_not_exists && self.tables.contains_key(name) {
                    return;
                }
                self.drop_table(name);
                self.tables.insert(
                    name.clone(),
                    Table { name: name.clone(), columns: Vec::new(), constraints: Vec::new(), origin: origin.clone() },
                );
                for column in columns {
                    self.add_column(name, column, origin);
                }
                for constraint in constraints {
                    self.add_constraint(name, constraint, origin);
                }
            }
            Ddl::AlterTable { table, actions, .. } => {
                let mut table = table.clone();
                for action in actions {
                    self.alter(&mut table, action, origin);
                }
            }
            Ddl::CreateIndex(index) => self.create_index(index, origin),
            Ddl::Drop { kind, names, .. } => {
                for name in names {
                    match kind {
                        ObjectKind::Table => self.drop_table(name),
                        ObjectKind::Index => {
                            self.indexes.remove(name);
                        }
                        ObjectKind::View | ObjectKind::MaterializedView => {
                            self.views.remove(name);
                        }
                        _ => {}
                    }
                }
            }
            Ddl::Rename { kind, from, to } => match kind {
                ObjectKind::Index => {
                    if let Some(mut index) = self.indexes.remove(from) {
                        index.name = to.clone();
                        self.indexes.insert(to.clone(), index);
                    }
                }
                ObjectKind::View => {
                    if let Some(mut view) = self.views.remove(from) {
                        view.name = to.clone();
                        self.views.insert(to.clone(), view);
                    }
                }
                _ => {}
            },
            Ddl::CreateView { name, .. } => {
                let uses = statement.ast.as_deref().map(|ast| predicate_uses(ast, self, 0)).unwrap_or_default();
                self.views.insert(name.clone(), View { name: name.clone(), uses, origin: origin.clone() });
            }
            Ddl::CreateFunction { name, .. } => {
                self.functions.insert(name.clone(), origin.clone());
            }
            _ => {}
        }
    }

    fn drop_table(&mut self, name: &str) {
        self.tables.remove(name);
        self.indexes.retain(|_, i| i.table != name);
    }

    fn add_column(&mut self, table: &str, column: &Column, origin: &Origin) {
        if let Some(t) = self.tables.get_mut(table) {
            t.columns.retain(|c| c.name != column.name);
            t.columns.push(ColumnInfo {
                name: column.name.clone(),
                data_type: column.data_type.clone(),
                not_null: column.not_null,
                has_default: column.default.is_some() || column.identity,
                generated: column.identity || column.default.as_ref().is_some_and(|d| d.volatile),
            });
        }
        for constraint in &column.constraints {
            self.add_constraint(table, constraint, origin);
        }
    }

    fn add_constraint(&mut self, table: &str, constraint: &Constraint, origin: &Origin) {
        let Some(t) = self.tables.get(table) else { return };
        let (name, index) = match &constraint.kind {
            ConstraintKind::PrimaryKey { columns } => {
                let name = constraint.name.clone().unwrap_or_else(|| default_index_name(&t.name, columns, "pkey"));
                (name.clone(), Some((name, columns.clone())))
            }
            ConstraintKind::Unique { columns, .. } => {
                let name = constraint.name.clone().unwrap_or_else(|| default_index_name(&t.name, columns, "key"));
                (name.clone(), Some((name, columns.clone())))
            }
            ConstraintKind::UsingIndex { index, .. } => {
                // PostgreSQL renames the index to the constraint's name.
                let name = constraint.name.clone().unwrap_or_else(|| index.clone());
                if let Some(mut existing) = self.indexes.remove(index) {
                    existing.name = name.clone();
                    existing.constraint = Some(name.clone());
                    self.indexes.insert(name.clone(), existing);
                }
                (name.clone(), None)
            }
            ConstraintKind::ForeignKey { columns, .. } => {
                (constraint.name.clone().unwrap_or_else(|| default_index_name(&t.name, columns, "fkey")), None)
            }
            ConstraintKind::Check { .. } | ConstraintKind::Other => {
                (constraint.name.clone().unwrap_or_else(|| format!("{}_check", t.name)), None)
            }
        };
        if matches!(constraint.kind, ConstraintKind::PrimaryKey { .. }) {
            if let Some(ConstraintKind::PrimaryKey { columns }) = Some(&constraint.kind) {
                let t = self.tables.get_mut(table).expect("checked above");
                for column in columns {
                    if let Some(c) = t.column_mut(column) {
                        c.not_null = true;
                    }
                }
            }
        }
        let backing = index.map(|(index_name, columns)| {
            self.indexes.insert(
                index_name.clone(),
                Index {
                    name: index_name.clone(),
                    table: table.to_string(),
                    unique: true,
                    keys: columns.into_iter().map(IndexKey::Column).collect(),
                    predicate: None,
                    constraint: Some(name.clone()),
                    origin: origin.clone(),
                },
            );
            index_name
        });
        let backing = backing.or_else(|| match &constraint.kind {
            ConstraintKind::UsingIndex { .. } => Some(name.clone()),
            _ => None,
        });
        let t = self.tables.get_mut(table).expect("checked above");
        t.constraints.retain(|c| c.name != name);
        t.constraints.push(ConstraintInfo {
            name,
            kind: constraint.kind.clone(),
            not_valid: constraint.not_valid,
            index: backing,
        });
    }

    fn create_index(&mut self, index: &CreateIndex, origin: &Origin) {
        let columns: Vec<Name> = index
            .keys
            .iter()
            .map(|k| match k {
                IndexKey::Column(c) => c.clone(),
                IndexKey::Expression(_) => "expr".to_string(),
            })
            .collect();
        let name = index.name.clone().unwrap_or_else(|| default_index_name(&index.table, &columns, "idx"));
        if index.if_not_exists && self.indexes.contains_key(&name) {
            return;
        }
        self.indexes.insert(
            name.clone(),
            Index {
                name,
                table: index.table.clone(),
                unique: index.unique,
                keys: index.keys.clone(),
                predicate: index.predicate.clone(),
                constraint: None,
                origin: origin.clone(),
            },
        );
    }

    fn alter(&mut self, table: &mut Name, action: &AlterAction, origin: &Origin) {
        match action {
            AlterAction::AddColumn { column, .. } => self.add_column(table, column, origin),
            AlterAction::DropColumn { name, .. } => {
                if let Some(t) = self.tables.get_mut(table.as_str()) {
                    t.columns.retain(|c| &c.name != name);
                }
                // PostgreSQL drops every index that uses the column.
                self.indexes.retain(|_, i| !(i.table == *table && i.keys.iter().any(|k| k.column() == Some(name))));
            }
            AlterAction::RenameColumn { from, to } => {
                if let Some(t) = self.tables.get_mut(table.as_str()) {
                    if let Some(c) = t.column_mut(from) {
                        c.name = to.clone();
                    }
                }
                for index in self.indexes.values_mut().filter(|i| i.table == *table) {
                    for key in &mut index.keys {
                        if key.column() == Some(from) {
                            *key = IndexKey::Column(to.clone());
                        }
                    }
                }
            }
            AlterAction::RenameTable { to } => {
                let to = match table.rsplit_once('.') {
                    Some((schema, _)) if !to.contains('.') => format!("{schema}.{to}"),
                    _ => to.clone(),
                };
                if let Some(mut t) = self.tables.remove(table.as_str()) {
                    t.name = to.clone();
                    self.tables.insert(to.clone(), t);
                }
                for index in self.indexes.values_mut().filter(|i| i.table == *table) {
                    index.table = to.clone();
                }
                *table = to;
            }
            AlterAction::SetType { column, data_type, .. } => {
                if let Some(c) = self.tables.get_mut(table.as_str()).and_then(|t| t.column_mut(column)) {
                    c.data_type = data_type.clone();
                }
            }
            AlterAction::SetNotNull { column } | AlterAction::DropNotNull { column } => {
                let not_null = matches!(action, AlterAction::SetNotNull { .. });
                if let Some(c) = self.tables.get_mut(table.as_str()).and_then(|t| t.column_mut(column)) {
                    c.not_null = not_null;
                }
            }
            AlterAction::SetDefault { column, .. } | AlterAction::DropDefault { column } => {
                let has_default = matches!(action, AlterAction::SetDefault { .. });
                if let Some(c) = self.tables.get_mut(table.as_str()).and_then(|t| t.column_mut(column)) {
                    c.has_default = has_default;
                }
            }
            AlterAction::AddConstraint(constraint) => self.add_constraint(table, constraint, origin),
            AlterAction::DropConstraint { name, .. } => {
                let mut backing = None;
                if let Some(t) = self.tables.get_mut(table.as_str()) {
                    backing = t.constraints.iter().find(|c| &c.name == name).and_then(|c| c.index.clone());
                    t.constraints.retain(|c| &c.name != name);
                }
                if let Some(index) = backing {
                    self.indexes.remove(&index);
                }
            }
            AlterAction::ValidateConstraint { name } => {
                if let Some(c) =
                    self.tables.get_mut(table.as_str()).and_then(|t| t.constraints.iter_mut().find(|c| &c.name == name))
                {
                    c.not_valid = false;
                }
            }
            AlterAction::RenameConstraint { from, to } => {
                if let Some(c) =
                    self.tables.get_mut(table.as_str()).and_then(|t| t.constraints.iter_mut().find(|c| &c.name == from))
                {
                    c.name = to.clone();
                }
            }
            AlterAction::Other(_) => {}
        }
    }

    /// Replays every statement of a file.
    pub fn apply_all<'a>(
        &mut self,
        statements: impl IntoIterator<Item = &'a Statement>,
        file: &str,
        migration: Option<usize>,
    ) {
        for statement in statements {
            let origin = Origin { file: file.to_string(), line: statement.span.line, migration };
            self.apply(statement, &origin);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sql::parse::parse_file;

    fn replay(sql: &str) -> Schema {
        let file = parse_file(sql.to_string());
        let mut schema = Schema::default();
        schema.apply_all(&file.statements, "m.sql", Some(0));
        schema
    }

    #[test]
    fn builds_tables_indexes_and_constraint_indexes() {
        let schema = replay(
            "CREATE TABLE public.users (id bigint PRIMARY KEY, email text NOT NULL UNIQUE, org_id int REFERENCES orgs(id));
             CREATE INDEX users_lower_email ON users (lower(email)) WHERE org_id IS NOT NULL;",
        );
        let users = schema.table("users").unwrap();
        assert_eq!(users.columns.len(), 3);
        assert!(schema.indexes.contains_key("users_pkey"));
        assert!(schema.indexes.contains_key("users_email_key"));
        let lower = &schema.indexes["users_lower_email"];
        assert_eq!(lower.keys, vec![IndexKey::Expression("lower(email)".into())]);
        assert_eq!(lower.predicate.as_deref(), Some("org_id is not null"));
    }

    #[test]
    fn follows_renames_and_drops() {
        let schema = replay(
            "CREATE TABLE t (a int, b int);
             CREATE INDEX t_a ON t (a);
             CREATE INDEX t_b ON t (b);
             ALTER TABLE t RENAME COLUMN a TO c;
             ALTER TABLE t RENAME TO u;
             ALTER INDEX t_a RENAME TO u_c;
             ALTER TABLE u DROP COLUMN b;
             ALTER TABLE u ADD CONSTRAINT u_c_key UNIQUE (c);
             ALTER TABLE u DROP CONSTRAINT u_c_key;",
        );
        assert!(schema.table("t").is_none());
        assert_eq!(schema.table("u").unwrap().columns.iter().map(|c| c.name.as_str()).collect::<Vec<_>>(), ["c"]);
        assert_eq!(schema.indexes.keys().collect::<Vec<_>>(), ["u_c"]);
        assert_eq!(schema.indexes["u_c"].table, "u");
        assert_eq!(schema.indexes["u_c"].keys, vec![IndexKey::Column("c".into())]);
    }

    #[test]
    fn using_index_renames_the_index_to_the_constraint() {
        let schema = replay(
            "CREATE TABLE t (a int);
             CREATE UNIQUE INDEX CONCURRENTLY t_a_tmp ON t (a);
             ALTER TABLE t ADD CONSTRAINT t_a_key UNIQUE USING INDEX t_a_tmp;",
        );
        assert!(schema.indexes.contains_key("t_a_key"));
        assert!(!schema.indexes.contains_key("t_a_tmp"));
    }

    #[test]
    fn not_valid_then_validate() {
        let schema = replay(
            "CREATE TABLE t (a int);
             ALTER TABLE t ADD CONSTRAINT a_positive CHECK (a > 0) NOT VALID;",
        );
        assert!(schema.table("t").unwrap().constraints[0].not_valid);
        let file = parse_file("ALTER TABLE t VALIDATE CONSTRAINT a_positive;".into());
        let mut schema = schema;
        schema.apply_all(&file.statements, "m2.sql", Some(1));
        assert!(!schema.table("t").unwrap().constraints[0].not_valid);
    }
}
