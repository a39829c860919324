//! Turns a parsed sqlparser statement into Sluice's typed view, [`Ddl`].

use super::ddl::*;
use super::names::{self, expression, ident, object};
use sqlparser::ast::{
    self, AlterColumnOperation, AlterIndexOperation, AlterTableOperation, ColumnOption, CreateFunctionBody, Expr,
    FromTable, NullsDistinctOption, ObjectType, RenameTableNameKind, Statement, TableConstraint, TableFactor,
    TableObject, Value,
};

/// Functions whose result changes per call: a default calling one rewrites the table.
const VOLATILE_FUNCTIONS: &[&str] = &[
    "random",
    "clock_timestamp",
    "gen_random_uuid",
    "uuid_generate_v1",
    "uuid_generate_v1mc",
    "uuid_generate_v4",
    "nextval",
    "timeofday",
    "txid_current",
    "setseed",
];

pub fn is_volatile_default(expr: &Expr) -> bool {
    let mut volatile = false;
    let _ = ast::visit_expressions(expr, |e| {
        if let Expr::Function(f) = e {
            let name = names::last(&f.name);
            if VOLATILE_FUNCTIONS.contains(&name.as_str()) {
                volatile = true;
            }
        }
        std::ops::ControlFlow::<()>::Continue(())
    });
    volatile
}

fn default_of(expr: &Expr) -> Default {
    Default { expression: expression(expr), volatile: is_volatile_default(expr) }
}

pub fn data_type(data_type: &ast::DataType) -> String {
    names::lowercase_outside_quotes(&data_type.to_string())
}

fn index_keys(columns: &[ast::IndexColumn]) -> Vec<IndexKey> {
    columns.iter().map(|c| index_key(&c.column.expr)).collect()
}

pub fn index_key(expr: &Expr) -> IndexKey {
    let mut expr = expr;
    while let Expr::Nested(inner) = expr {
        expr = inner;
    }
    match expr {
        Expr::Identifier(i) => IndexKey::Column(ident(i)),
        Expr::CompoundIdentifier(parts) if !parts.is_empty() => IndexKey::Column(ident(parts.last().unwrap())),
        other => IndexKey::Expression(expression(other)),
    }
}

fn key_columns(columns: &[ast::IndexColumn]) -> Vec<Name> {
    index_keys(columns)
        .into_iter()
        .map(|k| match k {
            IndexKey::Column(c) => c,
            IndexKey::Expression(e) => e,
        })
        .collect()
}

fn constraint(c: &TableConstraint, not_valid: bool) -> Constraint {
    let (name, kind) = match c {
        TableConstraint::PrimaryKey(pk) => {
            (pk.name.as_ref().map(ident), ConstraintKind::PrimaryKey { columns: key_columns(&pk.columns) })
        }
        TableConstraint::Unique(u) => (
            u.name.as_ref().map(ident),
            ConstraintKind::Unique {
                columns: key_columns(&u.columns),
                nulls_not_distinct: matches!(u.nulls_distinct, NullsDistinctOption::NotDistinct),
            },
        ),
        TableConstraint::ForeignKey(fk) => (
            fk.name.as_ref().map(ident),
            ConstraintKind::ForeignKey {
                columns: fk.columns.iter().map(ident).collect(),
                references: object(&fk.foreign_table),
                referenced_columns: fk.referred_columns.iter().map(ident).collect(),
            },
        ),
        TableConstraint::Check(ch) => {
            (ch.name.as_ref().map(ident), ConstraintKind::Check { expression: expression(&ch.expr) })
        }
        TableConstraint::PrimaryKeyUsingIndex(u) => {
            (u.name.as_ref().map(ident), ConstraintKind::UsingIndex { index: ident(&u.index_name), primary_key: true })
        }
        TableConstraint::UniqueUsingIndex(u) => {
            (u.name.as_ref().map(ident), ConstraintKind::UsingIndex { index: ident(&u.index_name), primary_key: false })
        }
        _ => (None, ConstraintKind::Other),
    };
    Constraint { name, kind, not_valid }
}

fn column(def: &ast::ColumnDef) -> Column {
    let name = ident(&def.name);
    let data_type = data_type(&def.data_type);
    let mut column = Column {
        identity: data_type.contains("serial"),
        name: name.clone(),
        data_type,
        not_null: false,
        default: None,
        generated_stored: false,
        constraints: Vec::new(),
    };
    for option in &def.options {
        let option_name = option.name.as_ref().map(ident);
        match &option.option {
            ColumnOption::NotNull => column.not_null = true,
            ColumnOption::Default(expr) => column.default = Some(default_of(expr)),
            ColumnOption::PrimaryKey(_) => {
                column.not_null = true;
                column.constraints.push(Constraint {
                    name: option_name,
                    kind: ConstraintKind::PrimaryKey { columns: vec![name.clone()] },
                    not_valid: false,
                })
            }
            ColumnOption::Unique(u) => column.constraints.push(Constraint {
                name: option_name,
                kind: ConstraintKind::Unique {
                    columns: vec![name.clone()],
                    nulls_not_distinct: matches!(u.nulls_distinct, NullsDistinctOption::NotDistinct),
                },
                not_valid: false,
            }),
            ColumnOption::ForeignKey(fk) => column.constraints.push(Constraint {
                name: option_name,
                kind: ConstraintKind::ForeignKey {
                    columns: vec![name.clone()],
                    references: object(&fk.foreign_table),
                    referenced_columns: fk.referred_columns.iter().map(ident).collect(),
                },
                not_valid: false,
            }),
            ColumnOption::Check(ch) => column.constraints.push(Constraint {
                name: option_name,
                kind: ConstraintKind::Check { expression: expression(&ch.expr) },
                not_valid: false,
            }),
            ColumnOption::Generated { generation_expr, generation_expr_mode, .. } => {
                if generation_expr.is_some() {
                    column.generated_stored =
                        !matches!(generation_expr_mode, Some(ast::GeneratedExpressionMode::Virtual));
                } else {
                    column.identity = true;
                }
            }
            ColumnOption::Identity(_) => column.identity = true,
            _ => {}
        }
    }
    column
}

fn alter_action(op: &AlterTableOperation) -> AlterAction {
    match op {
        AlterTableOperation::AddColumn { if_not_exists, column_def, .. } => {
            AlterAction::AddColumn { column: column(column_def), if_not_exists: *if_not_exists }
        }
        AlterTableOperation::DropColumn { column_names, if_exists, .. } if column_names.len() == 1 => {
            AlterAction::DropColumn { name: ident(&column_names[0]), if_exists: *if_exists }
        }
        AlterTableOperation::RenameColumn { old_column_name, new_column_name } => {
            AlterAction::RenameColumn { from: ident(old_column_name), to: ident(new_column_name) }
        }
        AlterTableOperation::RenameTable { table_name } => {
            let (RenameTableNameKind::As(n) | RenameTableNameKind::To(n)) = table_name;
            AlterAction::RenameTable { to: names::last(n) }
        }
        AlterTableOperation::AlterColumn { column_name, op } => {
            let column = ident(column_name);
            match op {
                AlterColumnOperation::SetNotNull => AlterAction::SetNotNull { column },
                AlterColumnOperation::DropNotNull => AlterAction::DropNotNull { column },
                AlterColumnOperation::SetDefault { value } => {
                    AlterAction::SetDefault { column, default: default_of(value) }
                }
                AlterColumnOperation::DropDefault => AlterAction::DropDefault { column },
                AlterColumnOperation::SetDataType { data_type: t, using, .. } => {
                    AlterAction::SetType { column, data_type: data_type(t), using: using.as_ref().map(expression) }
                }
                other => AlterAction::Other(format!("ALTER COLUMN {column} {other}")),
            }
        }
        AlterTableOperation::AddConstraint { constraint: c, not_valid } => {
            AlterAction::AddConstraint(constraint(c, *not_valid))
        }
        AlterTableOperation::DropConstraint { if_exists, name, .. } => {
            AlterAction::DropConstraint { name: ident(name), if_exists: *if_exists }
        }
        AlterTableOperation::ValidateConstraint { name } => AlterAction::ValidateConstraint { name: ident(name) },
        AlterTableOperation::RenameConstraint { old_name, new_name } => {
            AlterAction::RenameConstraint { from: ident(old_name), to: ident(new_name) }
        }
        other => AlterAction::Other(other.to_string()),
    }
}

fn table_factor_name(factor: &TableFactor) -> Option<Name> {
    match factor {
        TableFactor::Table { name, .. } => Some(object(name)),
        _ => None,
    }
}

fn object_kind(t: &ObjectType) -> ObjectKind {
    match t {
        ObjectType::Table => ObjectKind::Table,
        ObjectType::Index => ObjectKind::Index,
        ObjectType::View => ObjectKind::View,
        ObjectType::MaterializedView => ObjectKind::MaterializedView,
        ObjectType::Sequence => ObjectKind::Sequence,
        ObjectType::Schema => ObjectKind::Schema,
        _ => ObjectKind::Other,
    }
}

fn string_value(expr: &Expr) -> Option<String> {
    match expr {
        Expr::Value(v) => match &v.value {
            Value::SingleQuotedString(s) => Some(s.clone()),
            Value::DollarQuotedString(d) => Some(d.value.clone()),
            _ => None,
        },
        _ => None,
    }
}

/// The typed view of a parsed statement. `leading` are its first keywords, for `Other`.
pub fn ddl(statement: &Statement, leading: &str) -> Ddl {
    match statement {
        Statement::CreateTable(t) => Ddl::CreateTable {
            name: object(&t.name),
            if_not_exists: t.if_not_exists,
            columns: t.columns.iter().map(column).collect(),
            constraints: t.constraints.iter().map(|c| constraint(c, false)).collect(),
            from_query: t.query.is_some(),
        },
        Statement::AlterTable(t) => Ddl::AlterTable {
            table: object(&t.name),
            if_exists: t.if_exists,
            actions: t.operations.iter().map(alter_action).collect(),
        },
        Statement::CreateIndex(i) => Ddl::CreateIndex(CreateIndex {
            name: i.name.as_ref().map(names::last),
            table: object(&i.table_name),
            unique: i.unique,
            concurrently: i.concurrently,
            if_not_exists: i.if_not_exists,
            keys: index_keys(&i.columns),
            predicate: i.predicate.as_ref().map(expression),
            nulls_not_distinct: i.nulls_distinct == Some(false),
        }),
        Statement::Drop { object_type, if_exists, names: list, cascade, .. } => Ddl::Drop {
            kind: object_kind(object_type),
            names: list.iter().map(object).collect(),
            if_exists: *if_exists,
            concurrently: false,
            cascade: *cascade,
        },
        Statement::AlterIndex { name, operation: AlterIndexOperation::RenameIndex { index_name } } => {
            Ddl::Rename { kind: ObjectKind::Index, from: object(name), to: names::last(index_name) }
        }
        Statement::CreateView(v) => Ddl::CreateView { name: object(&v.name), materialized: v.materialized },
        Statement::CreateFunction(f) => {
            let is_sql = f.language.as_ref().is_some_and(|l| l.value.eq_ignore_ascii_case("sql"));
            let sql_body = match &f.function_body {
                Some(CreateFunctionBody::AsBeforeOptions { body, .. })
                | Some(CreateFunctionBody::AsAfterOptions(body))
                    if is_sql =>
                {
                    string_value(body)
                }
                _ => None,
            };
            Ddl::CreateFunction { name: object(&f.name), sql_body }
        }
        Statement::Set(ast::Set::SingleAssignment { scope, variable, values, .. }) => Ddl::Set {
            name: object(variable),
            value: values
                .iter()
                .map(|v| string_value(v).unwrap_or_else(|| v.to_string()))
                .collect::<Vec<_>>()
                .join(", "),
            local: matches!(scope, Some(ast::ContextModifier::Local)),
        },
        Statement::Reset(r) => Ddl::Reset {
            name: match &r.reset {
                ast::Reset::ConfigurationParameter(name) => object(name),
                _ => "all".to_string(),
            },
        },
        Statement::StartTransaction { .. } => Ddl::Begin,
        Statement::Commit { .. } => Ddl::Commit,
        Statement::Rollback { .. } => Ddl::Rollback,
        Statement::Update(u) => Ddl::Update {
            table: table_factor_name(&u.table.relation).unwrap_or_default(),
            has_where: u.selection.is_some(),
        },
        Statement::Delete(d) => {
            let tables = match &d.from {
                FromTable::WithFromKeyword(t) | FromTable::WithoutKeyword(t) => t,
            };
            Ddl::Delete {
                table: tables.first().and_then(|t| table_factor_name(&t.relation)).unwrap_or_default(),
                has_where: d.selection.is_some(),
            }
        }
        Statement::Insert(i) => Ddl::Insert {
            table: match &i.table {
                TableObject::TableName(n) => object(n),
                _ => String::new(),
            },
        },
        Statement::CreateTrigger(t) => Ddl::Trigger { table: object(&t.table_name), drop: false },
        Statement::DropTrigger(t) => match &t.table_name {
            Some(table) => Ddl::Trigger { table: object(table), drop: true },
            None => Ddl::Other(leading.to_string()),
        },
        Statement::Truncate(t) => Ddl::Truncate { tables: t.table_names.iter().map(|t| object(&t.name)).collect() },
        Statement::Query(_) => Ddl::Query,
        _ => Ddl::Other(leading.to_string()),
    }
}

/// The normalized WHERE predicate of an UPDATE or DELETE, if it has one.
pub fn dml_predicate(statement: &Statement) -> Option<String> {
    match statement {
        Statement::Update(u) => u.selection.as_ref().map(expression),
        Statement::Delete(d) => d.selection.as_ref().map(expression),
        _ => None,
    }
}
