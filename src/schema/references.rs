//! The objects a statement needs to exist: when the model does not know one, the verdicts on
//! it rest on assumptions (an unknown table counts as large), and the report says so.

use super::model::{is_system_catalog, is_tool_table, Schema};
use crate::sql::ddl::{AlterAction, CommentTarget, Ddl, Name, ObjectKind, ReindexKind};

/// An object a statement refers to that the migration history never created.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unknown {
    pub kind: &'static str,
    pub name: Name,
}

impl Schema {
    /// The objects `ddl` needs that the model does not know (system catalogs excepted; a
    /// statement that does nothing, by `IF [NOT] EXISTS`, needs nothing).
    pub fn unknown_references(&self, ddl: &Ddl) -> Vec<Unknown> {
        if self.no_op(ddl).is_some() {
            return Vec::new();
        }
        let mut out: Vec<Unknown> = Vec::new();
        let mut need = |kind: &'static str, name: &Name, known: bool| {
            if !known && !is_system_catalog(name) && !is_tool_table(name) && !out.iter().any(|u| u.name == *name) {
                out.push(Unknown { kind, name: name.clone() });
            }
        };
        let table = |name: &Name| self.tables.contains_key(name);
        let relation = |name: &Name| self.tables.contains_key(name) || self.views.contains_key(name);
        match ddl {
            Ddl::AlterTable { table: t, actions, .. } => {
                need("table", t, relation(t));
                for action in actions {
                    match action {
                        AlterAction::SetType { column, .. }
                        | AlterAction::SetNotNull { column }
                        | AlterAction::DropNotNull { column }
                        | AlterAction::RenameColumn { from: column, .. }
                            if table(t) =>
                        {
                            let known = self.tables[t].column(column).is_some();
                            need("column", &format!("{t}.{column}"), known)
                        }
                        AlterAction::AttachPartition { partition } | AlterAction::DetachPartition { partition, .. } => {
                            need("table", partition, table(partition))
                        }
                        _ => {}
                    }
                }
            }
            Ddl::CreateIndex(index) => need("table", &index.table, table(&index.table)),
            Ddl::Drop { kind, names, if_exists: false, .. } => {
                for name in names {
                    if matches!(
                        kind,
                        ObjectKind::Table
                            | ObjectKind::Index
                            | ObjectKind::View
                            | ObjectKind::MaterializedView
                            | ObjectKind::Sequence
                    ) {
                        need(kind.as_str(), name, self.object_exists(*kind, name));
                    }
                }
            }
            Ddl::Rename { kind, from, if_exists: false, .. } => match kind {
                ObjectKind::Index => need("index", from, self.indexes.contains_key(from)),
                ObjectKind::Sequence => need("sequence", from, self.sequences.contains_key(from)),
                ObjectKind::View | ObjectKind::MaterializedView => need(kind.as_str(), from, relation(from)),
                _ => {}
            },
            Ddl::AlterIndex { name, .. } => need("index", name, self.indexes.contains_key(name)),
            Ddl::AlterSequence { name, .. } => need("sequence", name, self.sequences.contains_key(name)),
            Ddl::RefreshMaterializedView { name, .. } => need("materialized view", name, table(name)),
            Ddl::Reindex { kind: ReindexKind::Index, name, .. } => need("index", name, self.indexes.contains_key(name)),
            Ddl::Reindex { kind: ReindexKind::Table, name, .. } => need("table", name, table(name)),
            Ddl::CreateStatistics { table: t, .. } => need("table", t, table(t)),
            Ddl::Comment(CommentTarget::Column { table: t, .. } | CommentTarget::Constraint { table: t, .. }) => {
                need("table", t, relation(t))
            }
            Ddl::Update { table: t, .. } | Ddl::Delete { table: t, .. } | Ddl::Insert { table: t } if !t.is_empty() => {
                need("table", t, relation(t))
            }
            Ddl::Truncate { tables, .. } | Ddl::LockTable { tables, .. } | Ddl::Analyze { tables } => {
                for t in tables {
                    need("table", t, table(t));
                }
            }
            _ => {}
        }
        out
    }
}
