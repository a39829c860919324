//! Replaying one statement onto the schema, as PostgreSQL would: the names it generates, the
//! objects that go with a drop, what `IF [NOT] EXISTS` skips. Pure: no I/O, and unknown objects
//! are tolerated (a migration may touch what the history never showed us).

use super::derive::query_columns;
use super::model::*;
use super::naming::{Freed, IndexPurpose};
use crate::sql::ddl::{
    AlterAction, Column, Constraint, ConstraintKind, CreateIndex, Ddl, IndexKey, Name, ObjectKind, TableLineage,
    TriggerAction,
};
use crate::sql::names::{beside, split};
use crate::sql::parse::Statement;
use crate::sql::query::{predicate_uses, relations};

impl Schema {
    /// Why `ddl` does nothing at all on this schema (`IF [NOT] EXISTS` on an object that is, or
    /// is not, there), or `None` when it does something.
    pub fn no_op(&self, ddl: &Ddl) -> Option<String> {
        match ddl {
            Ddl::CreateTable { name, if_not_exists: true, .. } if self.relation_exists(name) => {
                Some(format!("{} {name} already exists", self.relation_kind(name).unwrap_or("relation")))
            }
            Ddl::CreateIndex(create) => match (&create.name, create.if_not_exists) {
                (Some(index), true) => {
                    let qualified = beside(&create.table, index);
                    self.relation_exists(&qualified).then(|| format!("index {qualified} already exists"))
                }
                _ => None,
            },
            Ddl::CreateView { name, if_not_exists: true, .. } | Ddl::CreateSequence { name, if_not_exists: true }
                if self.relation_exists(name) =>
            {
                Some(format!("{} {name} already exists", self.relation_kind(name).unwrap_or("relation")))
            }
            Ddl::CreateSchema { name, if_not_exists: true } if self.schemas.contains(name) => {
                Some(format!("schema {name} already exists"))
            }
            Ddl::AlterTable { table, if_exists: true, .. } if !self.tables.contains_key(table) => {
                Some(format!("table {table} does not exist"))
            }
            Ddl::AlterTable { table, actions, .. } if !actions.is_empty() => {
                let reasons: Vec<String> =
                    actions.iter().map(|a| self.action_no_op(table, a)).collect::<Option<_>>()?;
                Some(reasons.join("; "))
            }
            Ddl::Drop { kind, names, if_exists: true, .. } => {
                let missing: Vec<&Name> = names.iter().filter(|n| !self.object_exists(*kind, n)).collect();
                (missing.len() == names.len()).then(|| {
                    let list = missing.iter().map(|n| n.as_str()).collect::<Vec<_>>().join(", ");
                    format!("{} {list} does not exist", kind.as_str())
                })
            }
            Ddl::AlterSequence { name, if_exists: true, .. } if !self.sequences.contains_key(name) => {
                Some(format!("sequence {name} does not exist"))
            }
            Ddl::Rename { kind, from, if_exists: true, .. } if !self.object_exists(*kind, from) => {
                Some(format!("{} {from} does not exist", kind.as_str()))
            }
            // A table the history never created may have any trigger: only a known table's
            // missing trigger is known to be missing.
            Ddl::Trigger { table, name, action: TriggerAction::Drop { if_exists: true } }
                if self.relation_exists(table) && self.trigger(table, name).is_none() =>
            {
                Some(format!("trigger {name} on {table} does not exist"))
            }
            _ => None,
        }
    }

    /// Why one `ALTER TABLE` sub-command does nothing (`ADD COLUMN IF NOT EXISTS` of a column
    /// that is there, `DROP … IF EXISTS` of one that is not).
    pub fn action_no_op(&self, table: &str, action: &AlterAction) -> Option<String> {
        let t = self.tables.get(table)?;
        match action {
            AlterAction::AddColumn { column, if_not_exists: true } if t.column(&column.name).is_some() => {
                Some(format!("column {table}.{} already exists", column.name))
            }
            AlterAction::DropColumn { name, if_exists: true, .. } if t.column(name).is_none() => {
                Some(format!("column {table}.{name} does not exist"))
            }
            AlterAction::DropConstraint { name, if_exists: true, .. } if t.constraint(name).is_none() => {
                Some(format!("constraint {name} on {table} does not exist"))
            }
            _ => None,
        }
    }

    /// `ddl` without its `ALTER TABLE` sub-commands that do nothing (`ADD COLUMN IF NOT EXISTS`
    /// of a column that is there…), when it has some; `None` when every part does something.
    pub fn without_no_op_actions(&self, ddl: &Ddl) -> Option<Ddl> {
        let Ddl::AlterTable { table, if_exists, actions } = ddl else { return None };
        let kept: Vec<AlterAction> =
            actions.iter().filter(|a| self.action_no_op(table, a).is_none()).cloned().collect();
        (kept.len() < actions.len()).then(|| Ddl::AlterTable {
            table: table.clone(),
            if_exists: *if_exists,
            actions: kept,
        })
    }

    /// Whether an object of `kind` named `name` exists in the model.
    pub fn object_exists(&self, kind: ObjectKind, name: &str) -> bool {
        match kind {
            ObjectKind::Table => self.tables.get(name).is_some_and(|t| t.kind != RelationKind::MaterializedView),
            ObjectKind::Index => self.indexes.contains_key(name),
            ObjectKind::View => self.views.get(name).is_some_and(|v| !v.materialized),
            ObjectKind::MaterializedView => self.views.get(name).is_some_and(|v| v.materialized),
            ObjectKind::Sequence => self.sequences.contains_key(name),
            ObjectKind::Function => self.functions.contains_key(name),
            ObjectKind::Schema => self.schemas.contains(name),
            ObjectKind::Statistics => self.statistics.contains_key(name),
            ObjectKind::Extension => self.extensions.contains(name),
            ObjectKind::Type | ObjectKind::Other => true,
        }
    }

    /// Applies `statement`, defined at `origin`, to the schema.
    pub fn apply(&mut self, statement: &Statement, origin: &Origin) {
        let ddl = &statement.ddl;
        if self.no_op(ddl).is_some() {
            return;
        }
        match ddl {
            Ddl::CreateTable { name, columns, constraints, from_query, lineage, .. } => {
                let derived = if *from_query {
                    statement.ast.as_deref().map(|ast| query_columns(ast, self, &[])).unwrap_or_default()
                } else {
                    Vec::new()
                };
                self.create_table(name, lineage, origin);
                if let Some(t) = self.tables.get_mut(name) {
                    t.columns.extend(derived);
                }
                let all: Vec<&Constraint> =
                    columns.iter().flat_map(|c| c.constraints.iter()).chain(constraints.iter()).collect();
                for column in columns {
                    self.add_column(name, column, origin);
                }
                self.add_constraints(name, &all, origin, true);
            }
            Ddl::AlterTable { table, actions, .. } => {
                let mut table = table.clone();
                for action in in_postgres_order(actions) {
                    if self.action_no_op(&table, action).is_none() {
                        self.alter(&mut table, action, origin);
                    }
                }
            }
            Ddl::CreateIndex(index) => self.create_index(index, origin),
            Ddl::Drop { kind, names, cascade, .. } => {
                for name in names {
                    self.drop(*kind, name, *cascade, origin);
                }
            }
            Ddl::Rename { kind, from, to, .. } => {
                let to = beside(from, split(to).1);
                match kind {
                    ObjectKind::Index
                    | ObjectKind::View
                    | ObjectKind::MaterializedView
                    | ObjectKind::Sequence
                    | ObjectKind::Table => self.rename_relation(from, &to),
                    ObjectKind::Type => self.rename_type(from, &to),
                    _ => {}
                }
            }
            Ddl::CreateView { name, materialized, columns, .. } => {
                let ast = statement.ast.as_deref();
                let uses = ast.map(|ast| predicate_uses(ast, self, 0)).unwrap_or_default();
                let depends_on =
                    ast.map(|ast| relations(ast).into_iter().filter(|r| r != name).collect()).unwrap_or_default();
                if *materialized {
                    let derived = ast.map(|ast| query_columns(ast, self, columns)).unwrap_or_default();
                    if self.relation_exists(name) {
                        self.drop_relation(name, false, origin);
                    }
                    let mut table = Table::new(name.clone(), RelationKind::MaterializedView, origin.clone());
                    table.columns = derived;
                    self.tables.insert(name.clone(), table);
                } else {
                    self.tables.remove(name);
                }
                self.views.insert(
                    name.clone(),
                    View { name: name.clone(), materialized: *materialized, uses, depends_on, origin: origin.clone() },
                );
            }
            Ddl::CreateFunction { name, volatility, locks, .. } => {
                self.functions.insert(
                    name.clone(),
                    Function {
                        name: name.clone(),
                        volatility: *volatility,
                        locks: locks.clone(),
                        origin: origin.clone(),
                    },
                );
            }
            Ddl::CreateSequence { name, .. } => {
                self.sequences
                    .insert(name.clone(), Sequence { name: name.clone(), owned_by: None, origin: origin.clone() });
            }
            Ddl::AlterSequence { name, owned_by: Some(owner), .. } => {
                if let Some(sequence) = self.sequences.get_mut(name) {
                    sequence.owned_by = owner.as_deref().cloned();
                }
            }
            Ddl::CreateSchema { name, .. } => {
                self.schemas.insert(name.clone());
            }
            Ddl::CreateExtension { name, .. } => {
                self.extensions.insert(name.clone());
            }
            Ddl::CreateStatistics { name: Some(name), table, .. } => {
                self.statistics.insert(beside(table, split(name).1), table.clone());
            }
            Ddl::Trigger { table, name, action } => {
                let at = self.triggers.iter().position(|t| t.table == *table && t.name == *name);
                match (action, at) {
                    (TriggerAction::Create { function, events, per_row }, at) => {
                        let trigger = Trigger {
                            table: table.clone(),
                            name: name.clone(),
                            function: function.clone(),
                            events: events.clone(),
                            per_row: *per_row,
                            origin: origin.clone(),
                        };
                        match at {
                            Some(at) => self.triggers[at] = trigger,
                            None => self.triggers.push(trigger),
                        }
                    }
                    (TriggerAction::Drop { .. }, Some(at)) => {
                        self.triggers.remove(at);
                    }
                    (TriggerAction::Rename { to }, Some(at)) => self.triggers[at].name = to.clone(),
                    _ => {}
                }
            }
            _ => {}
        }
    }

    fn create_table(&mut self, name: &str, lineage: &TableLineage, origin: &Origin) {
        if self.relation_exists(name) {
            self.drop_relation(name, false, origin);
        }
        self.parents.extend(lineage.partition_of.iter().chain(&lineage.inherits).cloned());
        let kind = if lineage.partitioned { RelationKind::PartitionedTable } else { RelationKind::Table };
        let mut table = Table::new(name.to_string(), kind, origin.clone());
        table.partition_of = lineage.partition_of.clone();
        table.inherits = lineage.inherits.clone();
        let sources = lineage.partition_of.iter().chain(&lineage.inherits).chain(&lineage.like);
        for source in sources {
            for column in self.tables.get(source).map(|t| t.columns.clone()).unwrap_or_default() {
                if table.column(&column.name).is_none() {
                    table.columns.push(column);
                }
            }
        }
        // CHECK constraints are inherited under their own names, and partitions get their
        // parent's foreign keys too.
        for parent in lineage.partition_of.iter().chain(&lineage.inherits) {
            let partition = lineage.partition_of.as_ref() == Some(parent);
            let inherited = self.tables.get(parent).map(|t| t.constraints.clone()).unwrap_or_default();
            table.constraints.extend(inherited.into_iter().filter(|c| match c.kind {
                ConstraintKind::Check { .. } => true,
                ConstraintKind::ForeignKey { .. } => partition,
                _ => false,
            }));
        }
        if let Some(source) = lineage.like.as_ref().filter(|_| lineage.like_constraints) {
            let checks = self.tables.get(source).map(|t| t.constraints.clone()).unwrap_or_default();
            table.constraints.extend(checks.into_iter().filter(|c| matches!(c.kind, ConstraintKind::Check { .. })));
        }
        for constraint in &table.constraints {
            self.saw_constraint_name(&constraint.name);
        }
        self.tables.insert(name.to_string(), table);
        if let Some(parent) = &lineage.partition_of {
            self.clone_indexes(parent, name, origin, false);
        }
        if let Some(source) = lineage.like.as_ref().filter(|_| lineage.like_indexes) {
            self.clone_indexes(source, name, origin, false);
        }
    }

    /// A partition gets a copy of each of its parent's indexes (and of the constraints they
    /// back), named by PostgreSQL's rules for the partition, unless it already has an
    /// equivalent one (`ATTACH PARTITION` adopts it). `LIKE … INCLUDING INDEXES` copies them
    /// the same way.
    fn clone_indexes(&mut self, parent: &str, partition: &str, origin: &Origin, adopt_equivalent: bool) {
        let parent_indexes: Vec<Index> = self.indexes_on(parent).cloned().collect();
        for index in parent_indexes {
            self.clone_index(parent, index, partition, origin, adopt_equivalent);
        }
    }

    /// Whether `table` has an index a new one with these keys would adopt instead of being built
    /// (a partition's, when the partitioned table gets the index).
    pub fn has_equivalent_index(&self, table: &str, keys: &[IndexKey], predicate: Option<&str>, unique: bool) -> bool {
        self.indexes_on(table).any(|i| i.keys == keys && i.predicate.as_deref() == predicate && i.unique == unique)
    }

    /// One index of `parent` copied onto `target`, named for it (see [`Self::clone_indexes`]).
    fn clone_index(&mut self, parent: &str, index: Index, target: &str, origin: &Origin, adopt_equivalent: bool) {
        let equivalent = self.has_equivalent_index(target, &index.keys, index.predicate.as_deref(), index.unique);
        if adopt_equivalent && equivalent {
            return;
        }
        let backs =
            index.constraint.as_ref().and_then(|c| self.tables.get(parent)?.constraint(c)).map(|c| c.kind.clone());
        let purpose = match &backs {
            Some(ConstraintKind::PrimaryKey { .. }) => IndexPurpose::PrimaryKey,
            Some(ConstraintKind::Unique { .. } | ConstraintKind::UsingIndex { .. }) => IndexPurpose::Unique,
            Some(ConstraintKind::Exclusion) => IndexPurpose::Exclusion,
            _ => IndexPurpose::Plain,
        };
        let name = self.choose_index_name(target, &index.key_names, purpose, &[]);
        let constraint = backs.map(|kind| {
            let constraint = split(&name).1.to_string();
            if let Some(t) = self.tables.get_mut(target) {
                t.constraints.push(ConstraintInfo {
                    name: constraint.clone(),
                    kind,
                    not_valid: false,
                    index: Some(name.clone()),
                });
            }
            self.saw_constraint_name(&constraint);
            constraint
        });
        self.indexes.insert(
            name.clone(),
            Index { name, table: target.to_string(), constraint, origin: origin.clone(), ..index },
        );
    }

    /// Removes an index, remembering what took it along (`with`) and where.
    fn index_dropped(&mut self, index: &str, with: Option<String>, origin: &Origin) {
        if self.indexes.remove(index).is_some() {
            self.dropped_indexes.insert(index.to_string(), IndexDrop { with, at: origin.clone() });
        }
    }

    /// Drops an object of `kind`, with what PostgreSQL drops along with it.
    fn drop(&mut self, kind: ObjectKind, name: &str, cascade: bool, origin: &Origin) {
        match kind {
            ObjectKind::Table | ObjectKind::View | ObjectKind::MaterializedView => {
                self.drop_relation(name, cascade, origin)
            }
            ObjectKind::Index => self.index_dropped(name, None, origin),
            ObjectKind::Sequence => {
                self.sequences.remove(name);
            }
            ObjectKind::Function => {
                self.functions.remove(name);
                if cascade {
                    self.triggers.retain(|t| t.function != name);
                }
            }
            ObjectKind::Statistics => {
                self.statistics.remove(name);
            }
            ObjectKind::Schema => {
                self.schemas.remove(name);
                if cascade {
                    let in_schema = |n: &Name| split(n).0 == Some(name);
                    let relations: Vec<Name> =
                        self.tables.keys().chain(self.views.keys()).filter(|n| in_schema(n)).cloned().collect();
                    for relation in relations {
                        self.drop_relation(&relation, true, origin);
                    }
                    self.sequences.retain(|n, _| !in_schema(n));
                    self.functions.retain(|n, _| !in_schema(n));
                    self.triggers.retain(|t| !in_schema(&t.function));
                    self.indexes.retain(|n, _| !in_schema(n));
                }
            }
            ObjectKind::Extension => {
                self.extensions.remove(name);
            }
            ObjectKind::Type | ObjectKind::Other => {}
        }
    }

    /// Drops a table, view or materialized view: its indexes, constraints, partitions, owned
    /// sequences and statistics always go with it; with CASCADE also the views that read it,
    /// its inheritance children and the foreign keys that reference it.
    fn drop_relation(&mut self, name: &str, cascade: bool, origin: &Origin) {
        let partitions: Vec<Name> = self.partitions_of(name).map(|t| t.name.clone()).collect();
        let kind = self.relation_kind(name).unwrap_or("relation");
        let with = format!("{kind} {name}");
        self.tables.remove(name);
        self.views.remove(name);
        let taken_along: Vec<Name> =
            self.indexes.iter().filter(|(_, i)| i.table == name).map(|(n, _)| n.clone()).collect();
        for index in taken_along {
            self.index_dropped(&index, Some(with.clone()), origin);
        }
        self.sequences.retain(|_, s| s.owned_by.as_ref().is_none_or(|(t, _)| t != name));
        self.statistics.retain(|_, t| t != name);
        self.triggers.retain(|t| t.table != name);
        for partition in partitions {
            self.drop_relation(&partition, cascade, origin);
        }
        if cascade {
            let dependents: Vec<Name> = self
                .views
                .values()
                .filter(|v| v.depends_on.iter().any(|d| d == name))
                .map(|v| v.name.clone())
                .chain(self.tables.values().filter(|t| t.inherits.iter().any(|p| p == name)).map(|t| t.name.clone()))
                .collect();
            for dependent in dependents {
                self.drop_relation(&dependent, true, origin);
            }
            for table in self.tables.values_mut() {
                table.constraints.retain(
                    |c| !matches!(&c.kind, ConstraintKind::ForeignKey { references, .. } if references == name),
                );
            }
        }
    }

    /// Renames a type: the columns of that type (or arrays of it) now have the new name, so a
    /// later `ALTER COLUMN … TYPE` to a new type of the old name is a change of type.
    fn rename_type(&mut self, from: &str, to: &str) {
        let renamed = |data_type: &str| -> Option<String> {
            let (base, array) = match data_type.find('[') {
                Some(at) => data_type.split_at(at),
                None => (data_type, ""),
            };
            let base = base.trim();
            (base == from || base.strip_prefix("public.") == Some(from)).then(|| format!("{to}{array}"))
        };
        for column in self.tables.values_mut().flat_map(|t| t.columns.iter_mut()) {
            if let Some(new) = renamed(&column.data_type) {
                column.data_type = new;
            }
        }
    }

    /// Renames a relation of any kind, keeping everything that refers to it in step.
    fn rename_relation(&mut self, from: &str, to: &str) {
        if let Some(mut table) = self.tables.remove(from) {
            table.name = to.to_string();
            self.tables.insert(to.to_string(), table);
            for index in self.indexes.values_mut().filter(|i| i.table == from) {
                index.table = to.to_string();
            }
            for trigger in self.triggers.iter_mut().filter(|t| t.table == from) {
                trigger.table = to.to_string();
            }
            for sequence in self.sequences.values_mut() {
                if let Some((table, _)) = sequence.owned_by.as_mut().filter(|(t, _)| t == from) {
                    *table = to.to_string();
                }
            }
            if self.parents.contains(from) {
                self.parents.insert(to.to_string());
            }
            for table in self.tables.values_mut() {
                if table.partition_of.as_deref() == Some(from) {
                    table.partition_of = Some(to.to_string());
                }
                // Children keep inheriting from the parent under its new name.
                for parent in table.inherits.iter_mut().filter(|p| *p == from) {
                    *parent = to.to_string();
                }
                for c in &mut table.constraints {
                    if let ConstraintKind::ForeignKey { references, .. } = &mut c.kind {
                        if references == from {
                            *references = to.to_string();
                        }
                    }
                }
            }
        }
        if let Some(mut view) = self.views.remove(from) {
            view.name = to.to_string();
            self.views.insert(to.to_string(), view);
        }
        if let Some(mut index) = self.indexes.remove(from) {
            index.name = to.to_string();
            // Renaming the index of a PRIMARY KEY or UNIQUE constraint renames the constraint.
            if let Some(constraint) = index.constraint.clone() {
                let new = split(to).1.to_string();
                if let Some(c) = self
                    .tables
                    .get_mut(&index.table)
                    .and_then(|t| t.constraints.iter_mut().find(|c| c.name == constraint))
                {
                    c.name = new.clone();
                    c.index = Some(to.to_string());
                }
                self.saw_constraint_name(&new);
                index.constraint = Some(new);
            }
            self.indexes.insert(to.to_string(), index);
        }
        if let Some(mut sequence) = self.sequences.remove(from) {
            sequence.name = to.to_string();
            self.sequences.insert(to.to_string(), sequence);
        }
    }

    fn add_column(&mut self, table: &str, column: &Column, origin: &Origin) {
        if column.identity && self.tables.contains_key(table) {
            let sequence = self.choose_sequence_name(table, &column.name, &[]);
            self.sequences.insert(
                sequence.clone(),
                Sequence {
                    name: sequence,
                    owned_by: Some((table.to_string(), column.name.clone())),
                    origin: origin.clone(),
                },
            );
        }
        if let Some(t) = self.tables.get_mut(table) {
            let info = ColumnInfo {
                name: column.name.clone(),
                data_type: column.data_type.clone(),
                not_null: column.not_null,
                has_default: column.default.is_some() || column.identity,
                generated: column.identity || column.default.as_ref().is_some_and(|d| d.volatile),
                collation: column.collation.clone(),
            };
            match t.columns.iter().position(|c| c.name == column.name) {
                Some(at) => {
                    t.columns.remove(at);
                    t.columns.push(info);
                }
                // PostgreSQL refuses the column ("tables can have at most 1600 columns"): no
                // statement looks through more, however many a file adds (100,000 ADD COLUMNs
                // on one table took 212 s; issue 38, item 8).
                None if t.columns.len() >= MAX_COLUMNS => {}
                None => t.columns.push(info),
            }
        }
    }

    /// Adds constraints in the order PostgreSQL names them: in `CREATE TABLE` the CHECKs with
    /// the table, then the indexes (PRIMARY KEY first), then foreign keys; in `ALTER TABLE` the
    /// indexes first.
    fn add_constraints(&mut self, table: &str, constraints: &[&Constraint], origin: &Origin, creating: bool) {
        let is_check = |c: &&&Constraint| matches!(c.kind, ConstraintKind::Check { .. } | ConstraintKind::Other);
        let is_pk = |c: &&&Constraint| matches!(c.kind, ConstraintKind::PrimaryKey { .. });
        let is_index = |c: &&&Constraint| {
            matches!(
                c.kind,
                ConstraintKind::Unique { .. } | ConstraintKind::UsingIndex { .. } | ConstraintKind::Exclusion
            )
        };
        let is_fk = |c: &&&Constraint| matches!(c.kind, ConstraintKind::ForeignKey { .. });
        let checks: Vec<&&Constraint> = constraints.iter().filter(is_check).collect();
        let indexes: Vec<&&Constraint> =
            constraints.iter().filter(is_pk).chain(constraints.iter().filter(is_index)).collect();
        let ordered: Vec<&&Constraint> = if creating {
            checks.into_iter().chain(indexes).chain(constraints.iter().filter(is_fk)).collect()
        } else {
            indexes.into_iter().chain(checks).chain(constraints.iter().filter(is_fk)).collect()
        };
        let mut chosen: Vec<Name> = Vec::new();
        for constraint in ordered {
            if let Some(name) = self.add_constraint(table, constraint, origin, &chosen) {
                chosen.push(name);
            }
        }
    }

    /// Adds one constraint (and the index it needs); returns its name.
    fn add_constraint(
        &mut self,
        table: &str,
        constraint: &Constraint,
        origin: &Origin,
        chosen: &[Name],
    ) -> Option<Name> {
        if !self.tables.contains_key(table) {
            return None;
        }
        let index_purpose = match &constraint.kind {
            ConstraintKind::PrimaryKey { .. } => Some(IndexPurpose::PrimaryKey),
            ConstraintKind::Unique { .. } => Some(IndexPurpose::Unique),
            ConstraintKind::Exclusion => Some(IndexPurpose::Exclusion),
            _ => None,
        };
        let name = self.constraint_name(table, constraint, chosen);
        let backing = match (&constraint.kind, index_purpose) {
            (_, Some(purpose)) => {
                let index = beside(table, &name);
                let keys = match &constraint.kind {
                    ConstraintKind::PrimaryKey { columns } | ConstraintKind::Unique { columns, .. } => {
                        columns.iter().cloned().map(IndexKey::Column).collect()
                    }
                    _ => constraint.naming.iter().cloned().map(IndexKey::Column).collect(),
                };
                self.indexes.insert(
                    index.clone(),
                    Index {
                        name: index.clone(),
                        table: table.to_string(),
                        unique: purpose != IndexPurpose::Exclusion,
                        keys,
                        key_names: constraint.naming.clone(),
                        predicate: None,
                        constraint: Some(name.clone()),
                        origin: origin.clone(),
                        btree: purpose != IndexPurpose::Exclusion,
                        nulls_not_distinct: matches!(
                            constraint.kind,
                            ConstraintKind::Unique { nulls_not_distinct: true, .. }
                        ),
                    },
                );
                Some(index)
            }
            (ConstraintKind::UsingIndex { index, .. }, None) => {
                // PostgreSQL renames the index to the constraint's name.
                let existing = beside(table, index);
                let renamed = beside(table, &name);
                if let Some(mut found) = self.indexes.remove(&existing) {
                    found.name = renamed.clone();
                    found.constraint = Some(name.clone());
                    found.unique = true;
                    self.indexes.insert(renamed.clone(), found);
                }
                Some(renamed)
            }
            _ => None,
        };
        let t = self.tables.get_mut(table)?;
        if let ConstraintKind::PrimaryKey { columns } = &constraint.kind {
            for column in columns {
                if let Some(c) = t.column_mut(column) {
                    c.not_null = true;
                }
            }
        }
        t.constraints.retain(|c| c.name != name);
        t.constraints.push(ConstraintInfo {
            name: name.clone(),
            kind: constraint.kind.clone(),
            not_valid: constraint.not_valid,
            index: backing,
        });
        self.saw_constraint_name(&name);
        Some(name)
    }

    fn create_index(&mut self, index: &CreateIndex, origin: &Origin) {
        let name = self.index_name(index);
        let created = Index {
            name: name.clone(),
            table: index.table.clone(),
            unique: index.unique,
            keys: index.keys.clone(),
            key_names: index.key_names.clone(),
            predicate: index.predicate.clone(),
            constraint: None,
            origin: origin.clone(),
            btree: index.btree,
            nulls_not_distinct: index.nulls_not_distinct,
        };
        self.indexes.insert(name, created.clone());
        // An index on a partitioned table is built on each partition too (or adopts an
        // equivalent one the partition has), unless it is `ON ONLY` the parent.
        let partitions: Vec<Name> =
            if index.only { Vec::new() } else { self.partitions_of(&index.table).map(|t| t.name.clone()).collect() };
        for partition in partitions {
            self.clone_index(&index.table, created.clone(), &partition, origin, true);
        }
    }

    /// The tables an `ALTER TABLE` on `table` reaches: itself, and its partitions and
    /// inheritance children (PostgreSQL recurses unless `ONLY`).
    pub fn with_descendants(&self, table: &str) -> Vec<Name> {
        let mut out = vec![table.to_string()];
        let mut i = 0;
        while i < out.len() {
            let current = out[i].clone();
            i += 1;
            if !self.parents.contains(&current) {
                continue;
            }
            for t in self.tables.values() {
                let child = t.partition_of.as_deref() == Some(current.as_str()) || t.inherits.contains(&current);
                if child && !out.contains(&t.name) {
                    out.push(t.name.clone());
                }
            }
        }
        out
    }

    fn drop_column(&mut self, table: &str, column: &str, origin: &Origin) {
        if let Some(t) = self.tables.get_mut(table) {
            t.columns.retain(|c| c.name != column);
            // Constraints that involve the column go with it.
            t.constraints.retain(|c| !constraint_reads(&c.kind, column));
        }
        // So do the indexes that read it, and the sequence it owns.
        let reading: Vec<Name> = self
            .indexes
            .values()
            .filter(|i| i.table == table && i.reads_column(column))
            .map(|i| i.name.clone())
            .collect();
        for index in reading {
            self.index_dropped(&index, Some(format!("column {table}.{column}")), origin);
        }
        self.sequences.retain(|_, s| s.owned_by.as_ref().is_none_or(|(t, c)| !(t == table && c == column)));
    }

    fn rename_column(&mut self, table: &str, from: &str, to: &str) {
        if let Some(t) = self.tables.get_mut(table) {
            if let Some(c) = t.column_mut(from) {
                c.name = to.to_string();
            }
            for c in &mut t.constraints {
                match &mut c.kind {
                    ConstraintKind::PrimaryKey { columns }
                    | ConstraintKind::Unique { columns, .. }
                    | ConstraintKind::ForeignKey { columns, .. } => {
                        columns.iter_mut().filter(|c| *c == from).for_each(|c| *c = to.to_string())
                    }
                    _ => {}
                }
            }
        }
        for index in self.indexes.values_mut().filter(|i| i.table == table) {
            for key in &mut index.keys {
                if key.column() == Some(from) {
                    *key = IndexKey::Column(to.to_string());
                }
            }
        }
        for sequence in self.sequences.values_mut() {
            if let Some((_, column)) = sequence.owned_by.as_mut().filter(|(t, c)| t == table && c == from) {
                *column = to.to_string();
            }
        }
    }

    /// The schema as an `ALTER TABLE` of `table` with `actions` sees it when it adds
    /// constraints: PostgreSQL runs the command's drops first, so a name they free (`DROP
    /// COLUMN id, ADD PRIMARY KEY (uuid)` frees `<table>_pkey`) is taken again. `None` when the
    /// command drops nothing (the schema is `self`).
    pub fn before_additions(&self, table: &str, actions: &[AlterAction]) -> Option<Schema> {
        let mut drops = actions.iter().filter(|a| is_drop(a)).peekable();
        drops.peek()?;
        let mut after = self.clone();
        let mut target = table.to_string();
        for drop in drops {
            if after.action_no_op(&target, drop).is_none() {
                after.alter(&mut target, drop, &Origin::default());
            }
        }
        Some(after)
    }

    /// What [`before_additions`](Self::before_additions) removes from its copy, worked out
    /// without the copy (a copy of the whole schema per finding was 5% of a lint of Lemmy):
    /// the names the drops of an `ALTER TABLE` of `table` free for its additions. `None` when
    /// only the copy can say: a table with partitions or children (the drops reach them too)
    /// or one the model does not have.
    pub fn freed_by_drops(&self, table: &str, actions: &[AlterAction]) -> Option<Freed> {
        if self.parents.contains(table) {
            return None;
        }
        let t = self.tables.get(table)?;
        let mut freed = Freed { table: table.to_string(), ..Freed::default() };
        let mut dropped_columns: Vec<&str> = Vec::new();
        let remaining = |freed: &Freed| {
            t.constraints.iter().enumerate().filter(|(at, _)| !freed.constraints.contains(at)).collect::<Vec<_>>()
        };
        // In order, each on what the ones before it left, as `alter` applies them to the copy.
        for drop in actions.iter().filter(|a| is_drop(a)) {
            match drop {
                AlterAction::DropColumn { name, if_exists, .. } => {
                    let exists = t.column(name).is_some() && !dropped_columns.contains(&name.as_str());
                    if *if_exists && !exists {
                        continue;
                    }
                    dropped_columns.push(name);
                    for (at, _) in remaining(&freed).into_iter().filter(|(_, c)| constraint_reads(&c.kind, name)) {
                        freed.constraints.insert(at);
                    }
                    let reads = |(_, i): &(&Name, &Index)| i.table == table && i.reads_column(name);
                    freed.indexes.extend(self.indexes.iter().filter(reads).map(|(key, _)| key.clone()));
                    let owned = |(_, s): &(&Name, &Sequence)| {
                        s.owned_by.as_ref().is_some_and(|(owner, column)| owner == table && column == name)
                    };
                    freed.sequences.extend(self.sequences.iter().filter(owned).map(|(key, _)| key.clone()));
                }
                AlterAction::DropConstraint { name, if_exists, .. } => {
                    let named: Vec<(usize, &ConstraintInfo)> =
                        remaining(&freed).into_iter().filter(|(_, c)| &c.name == name).collect();
                    if *if_exists && named.is_empty() {
                        continue;
                    }
                    freed.indexes.extend(named.first().and_then(|(_, c)| c.index.clone()));
                    freed.constraints.extend(named.iter().map(|(at, _)| *at));
                }
                _ => {}
            }
        }
        Some(freed)
    }

    fn alter(&mut self, table: &mut Name, action: &AlterAction, origin: &Origin) {
        match action {
            AlterAction::AddColumn { column, .. } => {
                for t in self.with_descendants(table) {
                    self.add_column(&t, column, origin);
                }
                let constraints: Vec<&Constraint> = column.constraints.iter().collect();
                self.add_constraints(table, &constraints, origin, false);
            }
            AlterAction::DropColumn { name, .. } => {
                for t in self.with_descendants(table) {
                    self.drop_column(&t, name, origin);
                }
            }
            AlterAction::RenameColumn { from, to } => {
                for t in self.with_descendants(table) {
                    self.rename_column(&t, from, to);
                }
            }
            AlterAction::RenameTable { to } => {
                let to = beside(table, split(to).1);
                self.rename_relation(table, &to);
                *table = to;
            }
            AlterAction::SetType { column, data_type, collation, .. } => {
                for t in self.with_descendants(table) {
                    if let Some(c) = self.tables.get_mut(&t).and_then(|t| t.column_mut(column)) {
                        c.data_type = data_type.clone();
                        c.collation = collation.clone();
                    }
                }
            }
            // Both recurse to partitions and inheritance children.
            AlterAction::SetNotNull { column } | AlterAction::DropNotNull { column } => {
                let not_null = matches!(action, AlterAction::SetNotNull { .. });
                for t in self.with_descendants(table) {
                    if let Some(c) = self.tables.get_mut(&t).and_then(|t| t.column_mut(column)) {
                        c.not_null = not_null;
                    }
                }
            }
            AlterAction::SetDefault { column, .. } | AlterAction::DropDefault { column } => {
                let has_default = matches!(action, AlterAction::SetDefault { .. });
                if let Some(c) = self.tables.get_mut(table.as_str()).and_then(|t| t.column_mut(column)) {
                    c.has_default = has_default;
                }
            }
            AlterAction::AddConstraint(constraint) => self.add_constraints(table, &[constraint], origin, false),
            AlterAction::DropConstraint { name, .. } => {
                let mut backing = None;
                if let Some(t) = self.tables.get_mut(table.as_str()) {
                    backing = t.constraint(name).and_then(|c| c.index.clone());
                    t.constraints.retain(|c| &c.name != name);
                }
                if let Some(index) = backing {
                    self.index_dropped(&index, Some(format!("constraint {name} on {table}")), origin);
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
                let mut backing = None;
                if let Some(c) =
                    self.tables.get_mut(table.as_str()).and_then(|t| t.constraints.iter_mut().find(|c| &c.name == from))
                {
                    c.name = to.clone();
                    backing = c.index.clone();
                }
                self.saw_constraint_name(to);
                // The index of a PRIMARY KEY or UNIQUE constraint is renamed with it.
                if let Some(index) = backing {
                    self.rename_relation(&index, &beside(table, to));
                }
            }
            AlterAction::AddIdentity { column } => {
                let sequence = self.choose_sequence_name(table, column, &[]);
                self.sequences.insert(
                    sequence.clone(),
                    Sequence {
                        name: sequence,
                        owned_by: Some((table.clone(), column.clone())),
                        origin: origin.clone(),
                    },
                );
                if let Some(c) = self.tables.get_mut(table.as_str()).and_then(|t| t.column_mut(column)) {
                    c.has_default = true;
                    c.generated = true;
                    c.not_null = true;
                }
            }
            AlterAction::DropIdentity { column } => {
                self.sequences.retain(|_, s| s.owned_by.as_ref().is_none_or(|(t, c)| !(t == table && c == column)));
                if let Some(c) = self.tables.get_mut(table.as_str()).and_then(|t| t.column_mut(column)) {
                    c.has_default = false;
                    c.generated = false;
                }
            }
            AlterAction::AttachPartition { partition } => {
                self.parents.insert(table.clone());
                if let Some(p) = self.tables.get_mut(partition) {
                    p.partition_of = Some(table.clone());
                }
                self.clone_indexes(table, partition, origin, true);
            }
            AlterAction::DetachPartition { partition, .. } => {
                if let Some(p) = self.tables.get_mut(partition) {
                    p.partition_of = None;
                }
            }
            AlterAction::Inherit { parent, inherit } => {
                if *inherit {
                    self.parents.insert(parent.clone());
                }
                if let Some(t) = self.tables.get_mut(table.as_str()) {
                    t.inherits.retain(|p| p != parent);
                    if *inherit {
                        t.inherits.push(parent.clone());
                    }
                }
            }
            AlterAction::AlterConstraint { .. } | AlterAction::Other(_) => {}
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

/// Whether a constraint involves `column` (dropping the column drops the constraint).
fn constraint_reads(kind: &ConstraintKind, column: &str) -> bool {
    match kind {
        ConstraintKind::PrimaryKey { columns }
        | ConstraintKind::Unique { columns, .. }
        | ConstraintKind::ForeignKey { columns, .. } => columns.iter().any(|c| c == column),
        ConstraintKind::Check { expression } => mentions(expression, column),
        _ => false,
    }
}

fn is_drop(action: &AlterAction) -> bool {
    matches!(action, AlterAction::DropColumn { .. } | AlterAction::DropConstraint { .. })
}

/// The sub-commands of an `ALTER TABLE` in the order PostgreSQL runs them: its drops first
/// (`AT_PASS_DROP`), then the rest as written.
fn in_postgres_order(actions: &[AlterAction]) -> impl Iterator<Item = &AlterAction> {
    actions.iter().filter(|a| is_drop(a)).chain(actions.iter().filter(|a| !is_drop(a)))
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

    fn index_names(schema: &Schema) -> Vec<&str> {
        schema.indexes.keys().map(String::as_str).collect()
    }

    #[test]
    fn a_table_holds_at_most_the_columns_postgresql_allows() {
        let adds: String = (0..MAX_COLUMNS + 5).map(|i| format!("ALTER TABLE t ADD COLUMN c{i} int; ")).collect();
        let schema = replay(&format!("CREATE TABLE t (id int); {adds} ALTER TABLE t ADD COLUMN c3 text;"));
        let columns = &schema.tables["t"].columns;
        assert_eq!(columns.len(), MAX_COLUMNS, "PostgreSQL refuses the 1,601st");
        assert_eq!(
            (columns[MAX_COLUMNS - 1].name.as_str(), columns[MAX_COLUMNS - 1].data_type.as_str()),
            ("c3", "text")
        );
    }

    /// `freed_by_drops` frees exactly what `before_additions` removes from its copy: every
    /// constraint an `ALTER TABLE` adds gets the copy's name, after any two of many drops (the
    /// same one twice, `IF EXISTS` of one already gone), with names the drops free and names
    /// that stay taken by another table's index or constraint.
    #[test]
    fn names_after_drops_are_the_ones_the_copy_gives() {
        let schema = replay(
            "CREATE TABLE u2 (id int PRIMARY KEY);
             CREATE TABLE t (id serial PRIMARY KEY, a int UNIQUE, b int, c int CHECK (c > 0), d int REFERENCES u2 (id));
             CREATE TABLE other (x int);
             CREATE INDEX t_pkey1 ON other (x);
             CREATE TABLE w (x int CONSTRAINT t_b_check CHECK (x > 0), y int CONSTRAINT t_a_key1 UNIQUE);
             CREATE SCHEMA app;
             CREATE TABLE app.t (id int PRIMARY KEY, a int UNIQUE);",
        );
        let drops = [
            "",
            "DROP COLUMN id",
            "DROP COLUMN a",
            "DROP COLUMN IF EXISTS a",
            "DROP COLUMN IF EXISTS nothing",
            "DROP CONSTRAINT t_pkey",
            "DROP CONSTRAINT IF EXISTS t_pkey",
            "DROP CONSTRAINT t_a_key",
            "DROP COLUMN c",
            "DROP CONSTRAINT IF EXISTS t_c_check",
            "DROP COLUMN d",
        ];
        let additions = [
            "ADD PRIMARY KEY (b)",
            "ADD UNIQUE (a)",
            "ADD UNIQUE (b)",
            "ADD CHECK (c > 1)",
            "ADD CHECK (b > 1)",
            "ADD FOREIGN KEY (d) REFERENCES u2 (id)",
            "ADD COLUMN e int UNIQUE",
            "ADD EXCLUDE USING gist (b WITH =)",
        ];
        let name_both_ways = |sql: &str| -> Vec<Name> {
            let file = parse_file(sql.to_string());
            let Ddl::AlterTable { table, actions, .. } = &file.statements[0].ddl else { panic!("{sql}") };
            let added = actions.iter().flat_map(|a| match a {
                AlterAction::AddConstraint(c) => vec![c],
                AlterAction::AddColumn { column, .. } => column.constraints.iter().collect(),
                _ => Vec::new(),
            });
            let freed = schema.freed_by_drops(table, actions).expect("a table without descendants");
            let copy = schema.before_additions(table, actions);
            added
                .map(|c| {
                    let named = schema.constraint_name_after(table, c, &[], &freed);
                    let expected = copy.as_ref().unwrap_or(&schema).constraint_name(table, c, &[]);
                    assert_eq!(named, expected, "{sql}");
                    named
                })
                .collect()
        };
        for table in ["t", "app.t"] {
            for first in drops {
                for second in drops {
                    for addition in additions {
                        let parts: Vec<&str> =
                            [first, second, addition].into_iter().filter(|p| !p.is_empty()).collect();
                        name_both_ways(&format!("ALTER TABLE {table} {};", parts.join(", ")));
                    }
                }
            }
        }
        // The cases above include these, whose names show both freed and kept collisions.
        assert_eq!(name_both_ways("ALTER TABLE t DROP COLUMN id, ADD PRIMARY KEY (b);"), ["t_pkey"]);
        assert_eq!(name_both_ways("ALTER TABLE t ADD PRIMARY KEY (b);"), ["t_pkey2"]);
        assert_eq!(name_both_ways("ALTER TABLE t DROP CONSTRAINT t_a_key, ADD UNIQUE (a);"), ["t_a_key"]);
        assert_eq!(name_both_ways("ALTER TABLE t ADD UNIQUE (a);"), ["t_a_key2"]);
        assert_eq!(name_both_ways("ALTER TABLE t DROP COLUMN c, ADD CHECK (b > 1);"), ["t_b_check1"]);
        assert_eq!(name_both_ways("ALTER TABLE t DROP COLUMN c, ADD CHECK (c > 1);"), ["t_c_check"]);
        assert_eq!(name_both_ways("ALTER TABLE app.t DROP COLUMN id, ADD PRIMARY KEY (a);"), ["t_pkey"]);
        // A partitioned table's drops reach its partitions: only the copy follows them.
        let partitioned = replay("CREATE TABLE p (id int PRIMARY KEY) PARTITION BY RANGE (id); CREATE TABLE p1 PARTITION OF p FOR VALUES FROM (0) TO (10);");
        let file = parse_file("ALTER TABLE p DROP COLUMN id, ADD PRIMARY KEY (id);".to_string());
        let Ddl::AlterTable { table, actions, .. } = &file.statements[0].ddl else { unreachable!() };
        assert_eq!(partitioned.freed_by_drops(table, actions), None);
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
        assert!(users.constraint("users_org_id_fkey").is_some());
        let lower = &schema.indexes["users_lower_email"];
        assert_eq!(lower.keys, vec![IndexKey::Expression("lower(email)".into())]);
        assert_eq!(lower.predicate.as_deref(), Some("org_id is not null"));
    }

    #[test]
    fn unnamed_indexes_get_postgres_names() {
        let schema = replay(
            "CREATE TABLE reserved_crate_names (name text, kind text);
             CREATE UNIQUE INDEX ON reserved_crate_names (canon_crate_name(name));
             CREATE INDEX ON reserved_crate_names (lower(name), lower(kind));
             CREATE INDEX ON reserved_crate_names (name);
             CREATE INDEX ON reserved_crate_names (name);
             CREATE INDEX ON reserved_crate_names ((name || kind));",
        );
        assert_eq!(
            index_names(&schema),
            [
                "reserved_crate_names_canon_crate_name_idx",
                "reserved_crate_names_expr_idx",
                "reserved_crate_names_lower_lower1_idx",
                "reserved_crate_names_name_idx",
                "reserved_crate_names_name_idx1",
            ]
        );
    }

    #[test]
    fn long_identifiers_are_truncated_to_63_bytes() {
        let schema = replay(
            "CREATE TABLE post_aggregates (featured_community boolean, newest_comment_time_necro timestamptz);
             CREATE INDEX idx_post_aggregates_featured_community_newest_comment_time_necro ON post_aggregates (featured_community, newest_comment_time_necro);",
        );
        assert_eq!(index_names(&schema), ["idx_post_aggregates_featured_community_newest_comment_time_necr"]);
    }

    #[test]
    fn an_alter_table_drops_before_it_adds_as_postgresql_does() {
        let schema = replay(
            "CREATE TABLE t (a int NOT NULL, b int, CONSTRAINT t_pkey UNIQUE (b));
             ALTER TABLE t ADD PRIMARY KEY (a), DROP CONSTRAINT t_pkey;",
        );
        let names: Vec<&str> = schema.table("t").unwrap().constraints.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["t_pkey"]);
        assert_eq!(index_names(&schema), ["t_pkey"]);
    }

    #[test]
    fn serial_and_identity_columns_own_a_sequence() {
        let schema = replay(
            "CREATE TABLE t (id serial PRIMARY KEY, n bigint GENERATED ALWAYS AS IDENTITY, m int);
             ALTER TABLE t ALTER COLUMN m ADD GENERATED BY DEFAULT AS IDENTITY;",
        );
        assert_eq!(schema.sequences.keys().collect::<Vec<_>>(), ["t_id_seq", "t_m_seq", "t_n_seq"]);
        assert_eq!(schema.table("t").unwrap().column("id").unwrap().data_type, "integer");
        let schema = replay("CREATE TABLE t (id serial); DROP TABLE t;");
        assert!(schema.sequences.is_empty());
    }

    #[test]
    fn check_and_foreign_key_names_follow_the_columns_they_read() {
        let schema = replay(
            "CREATE TABLE t (a int CHECK (a > 0), b int, c int, CHECK (b > c), CHECK (b < 10), FOREIGN KEY (b, c) REFERENCES u (x, y));",
        );
        let names: Vec<&str> = schema.table("t").unwrap().constraints.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["t_a_check", "t_check", "t_b_check", "t_b_c_fkey"]);
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
        assert_eq!(index_names(&schema), ["u_c"]);
        assert_eq!(schema.indexes["u_c"].table, "u");
        assert_eq!(schema.indexes["u_c"].keys, vec![IndexKey::Column("c".into())]);
    }

    #[test]
    fn dropping_a_column_drops_the_constraints_and_expression_indexes_that_read_it() {
        let schema = replay(
            "CREATE TABLE t (a int, b text, c int, UNIQUE (a, c), CHECK (length(b) > 1));
             CREATE INDEX t_lower_b ON t (lower(b));
             ALTER TABLE t DROP COLUMN b;
             ALTER TABLE t DROP COLUMN a;",
        );
        assert!(schema.indexes.is_empty(), "{:?}", schema.indexes.keys());
        assert!(schema.table("t").unwrap().constraints.is_empty());
    }

    #[test]
    fn using_index_renames_the_index_to_the_constraint() {
        let schema = replay(
            "CREATE TABLE t (a int);
             CREATE UNIQUE INDEX CONCURRENTLY t_a_tmp ON t (a);
             ALTER TABLE t ADD CONSTRAINT t_a_key UNIQUE USING INDEX t_a_tmp;
             ALTER TABLE t RENAME CONSTRAINT t_a_key TO t_a_unique;",
        );
        assert_eq!(index_names(&schema), ["t_a_unique"]);
    }

    #[test]
    fn materialized_views_are_relations_with_indexes() {
        let schema = replay(
            "CREATE TABLE t (a int, b text);
             CREATE MATERIALIZED VIEW mv AS SELECT a, b FROM t WITH NO DATA;
             CREATE UNIQUE INDEX ON mv (a);
             CREATE VIEW v AS SELECT * FROM mv;",
        );
        assert_eq!(schema.table("mv").unwrap().kind, RelationKind::MaterializedView);
        assert_eq!(schema.table("mv").unwrap().column("b").unwrap().data_type, "text");
        assert_eq!(index_names(&schema), ["mv_a_idx"]);
        let mut dropped = schema.clone();
        dropped.apply_all(&parse_file("DROP MATERIALIZED VIEW mv CASCADE;".into()).statements, "m2.sql", Some(1));
        assert!(dropped.indexes.is_empty() && dropped.views.is_empty() && dropped.table("mv").is_none());
        let mut kept = schema;
        kept.apply_all(&parse_file("DROP TABLE t;".into()).statements, "m2.sql", Some(1));
        assert!(kept.views.contains_key("v"), "without CASCADE nothing else goes");
    }

    #[test]
    fn create_table_as_and_select_into_create_tables() {
        let schema = replay(
            "CREATE TABLE t (id bigint, name text);
             CREATE TABLE t2 AS SELECT id, name FROM t;
             SELECT id INTO t3 FROM t;",
        );
        assert_eq!(schema.table("t2").unwrap().column("name").unwrap().data_type, "text");
        assert!(schema.table("t3").unwrap().column("id").is_some());
    }

    #[test]
    fn partitions_get_their_parents_columns_and_indexes() {
        let schema = replay(
            "CREATE TABLE events (id bigint, at timestamptz, PRIMARY KEY (id, at)) PARTITION BY RANGE (at);
             CREATE INDEX ON events (at);
             CREATE INDEX ON events (lower(id::text));
             CREATE TABLE events_2024 PARTITION OF events FOR VALUES FROM ('2024-01-01') TO ('2025-01-01');
             CREATE TABLE events_2025 (id bigint, at timestamptz);
             ALTER TABLE events ATTACH PARTITION events_2025 FOR VALUES FROM ('2025-01-01') TO ('2026-01-01');",
        );
        assert_eq!(schema.table("events").unwrap().kind, RelationKind::PartitionedTable);
        assert_eq!(schema.table("events_2024").unwrap().columns.len(), 2);
        assert_eq!(
            index_names(&schema),
            [
                "events_2024_at_idx",
                "events_2024_lower_idx",
                "events_2024_pkey",
                "events_2025_at_idx",
                "events_2025_lower_idx",
                "events_2025_pkey",
                "events_at_idx",
                "events_lower_idx",
                "events_pkey"
            ]
        );
        let mut dropped = schema;
        dropped.apply_all(&parse_file("DROP TABLE events;".into()).statements, "m2.sql", Some(1));
        assert!(dropped.tables.is_empty() && dropped.indexes.is_empty());
    }

    #[test]
    fn descendants_are_reached_through_renamed_parents_and_only_while_they_inherit() {
        let schema = replay(
            "CREATE TABLE base (id int);
             CREATE TABLE child (extra int) INHERITS (base);
             CREATE TABLE events (id int, at date) PARTITION BY RANGE (at);
             CREATE TABLE events_1 PARTITION OF events FOR VALUES FROM ('2024-01-01') TO ('2025-01-01');
             CREATE TABLE other (x int);
             CREATE TABLE other_child () INHERITS (other);
             ALTER TABLE other_child NO INHERIT other;
             ALTER TABLE base RENAME TO root;
             ALTER TABLE events RENAME TO happenings;
             ALTER TABLE root ADD COLUMN note text;
             ALTER TABLE happenings ADD COLUMN kind text;
             CREATE INDEX ON happenings (kind);
             ALTER TABLE other ADD COLUMN y int;",
        );
        assert!(schema.table("child").unwrap().column("note").is_some(), "child inherits from base, now root");
        assert_eq!(schema.table("child").unwrap().inherits, ["root"]);
        assert!(schema.table("events_1").unwrap().column("kind").is_some());
        assert!(schema.indexes.values().any(|i| i.table == "events_1" && i.keys == [IndexKey::Column("kind".into())]));
        assert!(schema.table("other_child").unwrap().column("y").is_none(), "NO INHERIT ended it");
        assert_eq!(schema.with_descendants("root"), ["root", "child"]);
        assert_eq!(schema.with_descendants("child"), ["child"]);
    }

    #[test]
    fn if_not_exists_and_if_exists_are_no_ops_when_they_should_be() {
        let schema = replay("CREATE TABLE t (a int); CREATE INDEX i ON t (a);");
        let no_op = |sql: &str| schema.no_op(&parse_file(sql.into()).statements[0].ddl);
        assert!(no_op("CREATE TABLE IF NOT EXISTS t (b int);").is_some());
        assert!(no_op("CREATE INDEX IF NOT EXISTS i ON t (a);").is_some());
        assert!(no_op("ALTER TABLE t ADD COLUMN IF NOT EXISTS a int;").is_some());
        assert!(no_op("ALTER TABLE t ADD COLUMN IF NOT EXISTS b int;").is_none());
        assert!(no_op("DROP INDEX IF EXISTS never_created;").is_some());
        assert!(no_op("DROP INDEX IF EXISTS i;").is_none());
        assert!(no_op("ALTER TABLE IF EXISTS gone ADD COLUMN b int;").is_some());
        assert!(no_op("ALTER TABLE t DROP COLUMN IF EXISTS b, ADD COLUMN IF NOT EXISTS a int;").is_some());
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
