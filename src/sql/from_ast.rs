//! Turns a parsed sqlparser statement into Sluice's typed view, [`Ddl`].

use super::ddl::*;
use super::names::{self, expression, ident, object};
use sqlparser::ast::{
    self, AlterColumnOperation, AlterIndexOperation, AlterTableOperation, AlterViewOperation, ColumnOption,
    CommentObject, CreateFunctionBody, Expr, FromTable, FunctionBehavior, NullsDistinctOption, ObjectType,
    RenameTableNameKind, SchemaName, SetExpr, Statement, TableConstraint, TableFactor, TableObject, Value,
};
use std::ops::ControlFlow;

/// Functions whose result changes per call and that are not in PostgreSQL's core catalogue:
/// well-known extension functions (uuid-ossp). Core functions' volatility comes from
/// [`super::catalog`].
const EXTENSION_VOLATILE_FUNCTIONS: &[&str] =
    &["uuid_generate_v1", "uuid_generate_v1mc", "uuid_generate_v4", "gen_random_bytes", "gen_salt"];

/// Every function an expression calls, normalized (`public.` dropped).
pub fn called_functions(expr: &Expr) -> Vec<Name> {
    let mut out: Vec<Name> = Vec::new();
    let _ = ast::visit_expressions(expr, |e| {
        if let Expr::Function(f) = e {
            let name = object(&f.name);
            if !out.contains(&name) {
                out.push(name);
            }
        }
        ControlFlow::<()>::Continue(())
    });
    out
}

/// Whether a function is volatile by PostgreSQL's own catalogue (or a well-known extension).
pub fn is_builtin_volatile(name: &str) -> bool {
    let bare = name.strip_prefix("pg_catalog.").unwrap_or(name);
    super::catalog::volatility(bare) == Some(Volatility::Volatile) || EXTENSION_VOLATILE_FUNCTIONS.contains(&bare)
}

fn default_of(expr: &Expr) -> Default {
    let functions = called_functions(expr);
    let volatile = functions.iter().any(|f| is_builtin_volatile(f));
    Default { expression: expression(expr), functions, volatile }
}

pub fn data_type(data_type: &ast::DataType) -> String {
    names::lowercase_outside_quotes(&data_type.to_string())
}

/// `serial` is not a type: it is an integer type with a sequence default.
fn serial_type(data_type: &str) -> Option<&'static str> {
    match data_type {
        "serial" | "serial4" => Some("integer"),
        "bigserial" | "serial8" => Some("bigint"),
        "smallserial" | "serial2" => Some("smallint"),
        _ => None,
    }
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

/// The name PostgreSQL uses for an index column when naming the index: the column, the
/// expression's function name, or `expr`.
pub fn key_name(expr: &Expr) -> Name {
    names::index_column_name(expr).unwrap_or_else(|| "expr".to_string())
}

/// Index column names for naming, INCLUDE columns after the keys, deduplicated as PostgreSQL does.
fn key_names<'e>(keys: impl IntoIterator<Item = &'e Expr>, include: &[ast::Ident]) -> Vec<Name> {
    let raw: Vec<Name> = keys.into_iter().map(key_name).chain(include.iter().map(ident)).collect();
    names::index_column_names(&raw)
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

/// The distinct columns an expression reads: a CHECK reading exactly one is named after it.
fn check_naming(expr: &Expr) -> Vec<Name> {
    let mut columns: Vec<Name> = Vec::new();
    let _ = ast::visit_expressions(expr, |e| {
        let column = match e {
            Expr::Identifier(i) => Some(ident(i)),
            Expr::CompoundIdentifier(parts) => parts.last().map(ident),
            _ => None,
        };
        if let Some(column) = column {
            if !columns.contains(&column) {
                columns.push(column);
            }
        }
        ControlFlow::<()>::Continue(())
    });
    if columns.len() == 1 {
        columns
    } else {
        Vec::new()
    }
}

fn constraint(c: &TableConstraint, not_valid: bool) -> Constraint {
    let (name, kind, naming) = match c {
        TableConstraint::PrimaryKey(pk) => (
            pk.name.as_ref().map(ident),
            ConstraintKind::PrimaryKey { columns: key_columns(&pk.columns) },
            key_names(pk.columns.iter().map(|c| &c.column.expr), &pk.include),
        ),
        TableConstraint::Unique(u) => (
            u.name.as_ref().map(ident),
            ConstraintKind::Unique {
                columns: key_columns(&u.columns),
                nulls_not_distinct: matches!(u.nulls_distinct, NullsDistinctOption::NotDistinct),
            },
            key_names(u.columns.iter().map(|c| &c.column.expr), &u.include),
        ),
        TableConstraint::ForeignKey(fk) => {
            let columns: Vec<Name> = fk.columns.iter().map(ident).collect();
            (
                fk.name.as_ref().map(ident),
                ConstraintKind::ForeignKey {
                    columns: columns.clone(),
                    references: object(&fk.foreign_table),
                    referenced_columns: fk.referred_columns.iter().map(ident).collect(),
                },
                columns,
            )
        }
        TableConstraint::Check(ch) => (
            ch.name.as_ref().map(ident),
            ConstraintKind::Check { expression: expression(&ch.expr) },
            check_naming(&ch.expr),
        ),
        TableConstraint::PrimaryKeyUsingIndex(u) => (
            u.name.as_ref().map(ident),
            ConstraintKind::UsingIndex { index: ident(&u.index_name), primary_key: true },
            Vec::new(),
        ),
        TableConstraint::UniqueUsingIndex(u) => (
            u.name.as_ref().map(ident),
            ConstraintKind::UsingIndex { index: ident(&u.index_name), primary_key: false },
            Vec::new(),
        ),
        TableConstraint::Exclude(x) => (
            x.name.as_ref().map(ident),
            ConstraintKind::Exclusion,
            key_names(x.elements.iter().map(|e| &e.column.column.expr), &x.include),
        ),
        _ => (None, ConstraintKind::Other, Vec::new()),
    };
    Constraint { name, kind, not_valid, naming }
}

fn column(def: &ast::ColumnDef) -> Column {
    let name = ident(&def.name);
    let written = data_type(&def.data_type);
    let serial = serial_type(&written);
    let mut column = Column {
        identity: serial.is_some(),
        serial: serial.is_some(),
        name: name.clone(),
        data_type: serial.map(str::to_string).unwrap_or(written),
        not_null: serial.is_some(),
        default: None,
        generated_stored: false,
        constraints: Vec::new(),
        collation: None,
    };
    let on_column = |option_name: Option<Name>, kind: ConstraintKind| Constraint {
        name: option_name,
        kind,
        not_valid: false,
        naming: vec![name.clone()],
    };
    for option in &def.options {
        let option_name = option.name.as_ref().map(ident);
        match &option.option {
            ColumnOption::NotNull => column.not_null = true,
            ColumnOption::Collation(name) => column.collation = Some(names::last(name)),
            ColumnOption::Default(expr) => column.default = Some(default_of(expr)),
            ColumnOption::PrimaryKey(_) => {
                column.not_null = true;
                column
                    .constraints
                    .push(on_column(option_name, ConstraintKind::PrimaryKey { columns: vec![name.clone()] }))
            }
            ColumnOption::Unique(u) => column.constraints.push(on_column(
                option_name,
                ConstraintKind::Unique {
                    columns: vec![name.clone()],
                    nulls_not_distinct: matches!(u.nulls_distinct, NullsDistinctOption::NotDistinct),
                },
            )),
            ColumnOption::ForeignKey(fk) => column.constraints.push(on_column(
                option_name,
                ConstraintKind::ForeignKey {
                    columns: vec![name.clone()],
                    references: object(&fk.foreign_table),
                    referenced_columns: fk.referred_columns.iter().map(ident).collect(),
                },
            )),
            ColumnOption::Check(ch) => column.constraints.push(Constraint {
                name: option_name,
                kind: ConstraintKind::Check { expression: expression(&ch.expr) },
                not_valid: false,
                naming: check_naming(&ch.expr),
            }),
            ColumnOption::Generated { generation_expr, generation_expr_mode, .. } => {
                if generation_expr.is_some() {
                    column.generated_stored =
                        !matches!(generation_expr_mode, Some(ast::GeneratedExpressionMode::Virtual));
                } else {
                    column.identity = true;
                    column.not_null = true;
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
        AlterTableOperation::DropColumn { column_names, if_exists, drop_behavior, .. } if column_names.len() == 1 => {
            AlterAction::DropColumn {
                name: ident(&column_names[0]),
                if_exists: *if_exists,
                cascade: matches!(drop_behavior, Some(ast::DropBehavior::Cascade)),
            }
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
                    let through = using.as_ref().and_then(|u| casts_of_column(u, &column, t));
                    AlterAction::SetType {
                        column: column.clone(),
                        data_type: data_type(t),
                        using: using.as_ref().filter(|_| through.is_none()).map(expression),
                        through: through.unwrap_or_default(),
                        collation: None,
                    }
                }
                AlterColumnOperation::AddGenerated { .. } => AlterAction::AddIdentity { column },
                other => AlterAction::Other(format!("ALTER COLUMN {column} {other}")),
            }
        }
        AlterTableOperation::AddConstraint { constraint: c, not_valid } => {
            AlterAction::AddConstraint(constraint(c, *not_valid))
        }
        AlterTableOperation::DropConstraint { if_exists, name, drop_behavior } => AlterAction::DropConstraint {
            name: ident(name),
            if_exists: *if_exists,
            cascade: matches!(drop_behavior, Some(ast::DropBehavior::Cascade)),
        },
        AlterTableOperation::ValidateConstraint { name } => AlterAction::ValidateConstraint { name: ident(name) },
        AlterTableOperation::RenameConstraint { old_name, new_name } => {
            AlterAction::RenameConstraint { from: ident(old_name), to: ident(new_name) }
        }
        AlterTableOperation::AttachPartitionOf { partition, .. } => {
            AlterAction::AttachPartition { partition: object(partition) }
        }
        AlterTableOperation::DetachPartitionOf { partition, mode } => AlterAction::DetachPartition {
            partition: object(partition),
            concurrently: matches!(mode, Some(ast::DetachPartitionMode::Concurrently)),
        },
        AlterTableOperation::Inherit { parent } => AlterAction::Inherit { parent: object(parent), inherit: true },
        AlterTableOperation::NoInherit { parent } => AlterAction::Inherit { parent: object(parent), inherit: false },
        other => AlterAction::Other(other.to_string()),
    }
}

/// `USING c`, `USING c::new_type` or `USING c::a::…::new_type`: the column through casts only,
/// with the types it is cast through on the way (innermost first; none for the first two). Such a
/// conversion forces no rewrite when each step is binary-coercible (PostgreSQL strips the
/// relabelings, `ATColumnChangeRequiresRewrite`); `None` for any other expression.
fn casts_of_column(using: &Expr, column: &str, new_type: &ast::DataType) -> Option<Vec<String>> {
    let mut expr = using;
    let mut casts: Vec<String> = Vec::new();
    loop {
        match expr {
            Expr::Nested(inner) => expr = inner,
            Expr::Cast { expr: inner, data_type: to, .. } => {
                casts.push(data_type(to));
                expr = inner
            }
            Expr::Identifier(i) if ident(i) == column => break,
            Expr::CompoundIdentifier(parts) if parts.last().is_some_and(|p| ident(p) == column) => break,
            _ => return None,
        }
    }
    // The outermost cast to the new type is the change itself.
    if casts.first().is_some_and(|t| *t == data_type(new_type)) {
        casts.remove(0);
    }
    casts.reverse();
    Some(casts)
}

fn table_factor_name(factor: &TableFactor) -> Option<Name> {
    match factor {
        TableFactor::Table { name, .. } => Some(object(name)),
        _ => None,
    }
}

pub fn object_kind(t: &ObjectType) -> ObjectKind {
    match t {
        ObjectType::Table => ObjectKind::Table,
        ObjectType::Index => ObjectKind::Index,
        ObjectType::View => ObjectKind::View,
        ObjectType::MaterializedView => ObjectKind::MaterializedView,
        ObjectType::Sequence => ObjectKind::Sequence,
        ObjectType::Schema => ObjectKind::Schema,
        ObjectType::Type => ObjectKind::Type,
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

fn volatility(behavior: Option<&FunctionBehavior>) -> Volatility {
    match behavior {
        Some(FunctionBehavior::Immutable) => Volatility::Immutable,
        Some(FunctionBehavior::Stable) => Volatility::Stable,
        _ => Volatility::Volatile,
    }
}

fn comment_target(object_type: &CommentObject, name: &ast::ObjectName) -> CommentTarget {
    let relation = |kind| CommentTarget::Relation { kind, name: object(name) };
    match object_type {
        CommentObject::Table => relation(ObjectKind::Table),
        CommentObject::View => relation(ObjectKind::View),
        CommentObject::MaterializedView => relation(ObjectKind::MaterializedView),
        CommentObject::Index => relation(ObjectKind::Index),
        CommentObject::Sequence => relation(ObjectKind::Sequence),
        CommentObject::Column => {
            let parts: Vec<String> = name
                .0
                .iter()
                .map(|p| match p {
                    ast::ObjectNamePart::Identifier(i) => ident(i),
                    ast::ObjectNamePart::Function(f) => ident(&f.name),
                })
                .collect();
            match parts.split_last() {
                Some((column, table)) if !table.is_empty() => {
                    CommentTarget::Column { table: names::qualified(table), column: column.clone() }
                }
                _ => CommentTarget::Other { kind: "COLUMN".into(), name: object(name) },
            }
        }
        other => CommentTarget::Other { kind: format!("{other:?}").to_uppercase(), name: object(name) },
    }
}

/// `SELECT … INTO new_table FROM …` creates a table, like `CREATE TABLE … AS`.
fn select_into(query: &ast::Query) -> Option<Name> {
    let SetExpr::Select(select) = query.body.as_ref() else { return None };
    let into = select.into.as_ref()?;
    into.targets.first().and_then(|t| match t {
        Expr::Identifier(i) => Some(ident(i)),
        Expr::CompoundIdentifier(parts) => Some(names::qualified(&parts.iter().map(ident).collect::<Vec<_>>())),
        _ => None,
    })
}

fn create_table(t: &ast::CreateTable) -> Ddl {
    Ddl::CreateTable {
        name: object(&t.name),
        if_not_exists: t.if_not_exists,
        columns: t.columns.iter().map(column).collect(),
        constraints: t.constraints.iter().map(|c| constraint(c, false)).collect(),
        from_query: t.query.is_some(),
        lineage: Box::new(TableLineage {
            partition_of: t.partition_of.as_ref().map(object),
            inherits: t.inherits.iter().flatten().map(object).collect(),
            partitioned: t.partition_by.is_some(),
            like: match &t.like {
                Some(ast::CreateTableLikeKind::Parenthesized(like) | ast::CreateTableLikeKind::Plain(like)) => {
                    Some(object(&like.name))
                }
                None => None,
            },
            ..TableLineage::default()
        }),
    }
}

/// The typed view of a parsed statement. `leading` are its first keywords, for `Other`.
pub fn ddl(statement: &Statement, leading: &str) -> Ddl {
    match statement {
        Statement::CreateTable(t) => create_table(t),
        Statement::AlterTable(t) => Ddl::AlterTable {
            table: object(&t.name),
            if_exists: t.if_exists,
            actions: t.operations.iter().map(alter_action).collect(),
        },
        Statement::CreateIndex(i) => Ddl::CreateIndex(Box::new(CreateIndex {
            name: i.name.as_ref().map(names::last),
            table: object(&i.table_name),
            unique: i.unique,
            concurrently: i.concurrently,
            if_not_exists: i.if_not_exists,
            only: false,
            keys: index_keys(&i.columns),
            key_names: key_names(i.columns.iter().map(|c| &c.column.expr), &i.include),
            predicate: i.predicate.as_ref().map(expression),
            nulls_not_distinct: i.nulls_distinct == Some(false),
            btree: matches!(i.using, None | Some(sqlparser::ast::IndexType::BTree)),
        })),
        Statement::Drop { object_type, if_exists, names: list, cascade, .. } => Ddl::Drop {
            kind: object_kind(object_type),
            names: list.iter().map(object).collect(),
            if_exists: *if_exists,
            concurrently: false,
            cascade: *cascade,
        },
        Statement::DropFunction(d) => Ddl::Drop {
            kind: ObjectKind::Function,
            names: d.func_desc.iter().map(|f| object(&f.name)).collect(),
            if_exists: d.if_exists,
            concurrently: false,
            cascade: matches!(d.drop_behavior, Some(ast::DropBehavior::Cascade)),
        },
        Statement::CreateExtension(e) => {
            Ddl::CreateExtension { name: e.name.value.clone(), if_not_exists: e.if_not_exists }
        }
        Statement::DropExtension(e) => Ddl::Drop {
            kind: ObjectKind::Extension,
            names: e.names.iter().map(|n| n.value.clone()).collect(),
            if_exists: e.if_exists,
            concurrently: false,
            cascade: matches!(e.cascade_or_restrict, Some(ast::ReferentialAction::Cascade)),
        },
        Statement::Analyze(a) => Ddl::Analyze { tables: a.table_name.iter().map(object).collect() },
        Statement::AlterType(t) => match &t.operation {
            ast::AlterTypeOperation::Rename(rename) => Ddl::Rename {
                kind: ObjectKind::Type,
                from: object(&t.name),
                to: ident(&rename.new_name),
                if_exists: false,
            },
            _ => Ddl::Other(leading.to_string()),
        },
        Statement::AlterIndex { name, operation: AlterIndexOperation::RenameIndex { index_name } } => {
            Ddl::Rename { kind: ObjectKind::Index, from: object(name), to: names::last(index_name), if_exists: false }
        }
        Statement::AlterView(v) => match &v.operation {
            AlterViewOperation::RenameTo { new_name } => Ddl::Rename {
                kind: if v.materialized { ObjectKind::MaterializedView } else { ObjectKind::View },
                from: object(&v.name),
                to: names::last(new_name),
                if_exists: v.if_exists,
            },
            _ => Ddl::Other(leading.to_string()),
        },
        Statement::CreateView(v) => Ddl::CreateView {
            name: object(&v.name),
            materialized: v.materialized,
            or_replace: v.or_replace,
            if_not_exists: v.if_not_exists,
            columns: v.columns.iter().map(|c| ident(&c.name)).collect(),
        },
        Statement::RefreshMaterializedView(r) => {
            Ddl::RefreshMaterializedView { name: object(&r.name), concurrently: r.concurrently }
        }
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
            // The locks its body takes are read by `parse`, from the statement's text.
            Ddl::CreateFunction {
                name: object(&f.name),
                sql_body,
                volatility: volatility(f.behavior.as_ref()),
                locks: Vec::new(),
            }
        }
        Statement::CreateSequence { if_not_exists, name, .. } => {
            Ddl::CreateSequence { name: object(name), if_not_exists: *if_not_exists }
        }
        Statement::CreateSchema { schema_name, if_not_exists, .. } => match schema_name {
            SchemaName::Simple(name) | SchemaName::NamedAuthorization(name, _) => {
                Ddl::CreateSchema { name: object(name), if_not_exists: *if_not_exists }
            }
            SchemaName::UnnamedAuthorization(role) => {
                Ddl::CreateSchema { name: ident(role), if_not_exists: *if_not_exists }
            }
        },
        Statement::Comment { object_type, object_name, .. } => Ddl::Comment(comment_target(object_type, object_name)),
        Statement::Set(ast::Set::SingleAssignment { scope, variable, values, .. }) => Ddl::Set {
            name: object(variable),
            value: values
                .iter()
                .map(|v| string_value(v).unwrap_or_else(|| v.to_string()))
                .collect::<Vec<_>>()
                .join(", "),
            local: matches!(scope, Some(ast::ContextModifier::Local)),
        },
        Statement::Set(ast::Set::SetTimeZone { local, value }) => Ddl::Set {
            name: "timezone".into(),
            value: string_value(value).unwrap_or_else(|| value.to_string()),
            local: *local,
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
        Statement::CreateTrigger(t) => Ddl::Trigger {
            table: object(&t.table_name),
            name: names::last(&t.name),
            action: TriggerAction::Create {
                function: t.exec_body.as_ref().map(|b| object(&b.func_desc.name)).unwrap_or_default(),
                events: t
                    .events
                    .iter()
                    .map(|e| match e {
                        ast::TriggerEvent::Insert => TriggerEvent::Insert,
                        ast::TriggerEvent::Update(_) => TriggerEvent::Update,
                        ast::TriggerEvent::Delete => TriggerEvent::Delete,
                        ast::TriggerEvent::Truncate => TriggerEvent::Truncate,
                    })
                    .collect(),
                per_row: matches!(
                    t.trigger_object,
                    Some(
                        ast::TriggerObjectKind::For(ast::TriggerObject::Row)
                            | ast::TriggerObjectKind::ForEach(ast::TriggerObject::Row)
                    )
                ),
            },
        },
        Statement::AlterTrigger(t) => match &t.operation {
            ast::AlterTriggerOperation::Rename { new_name } => Ddl::Trigger {
                table: object(&t.table_name),
                name: ident(&t.name),
                action: TriggerAction::Rename { to: ident(new_name) },
            },
            _ => Ddl::Other(leading.to_string()),
        },
        Statement::DropTrigger(t) => match &t.table_name {
            Some(table) => Ddl::Trigger {
                table: object(table),
                name: names::last(&t.trigger_name),
                action: TriggerAction::Drop { if_exists: t.if_exists },
            },
            None => Ddl::Other(leading.to_string()),
        },
        Statement::Truncate(t) => Ddl::Truncate {
            tables: t.table_names.iter().map(|t| object(&t.name)).collect(),
            cascade: matches!(t.cascade, Some(ast::CascadeOption::Cascade)),
        },
        Statement::Lock(l) => Ddl::LockTable {
            tables: l.tables.iter().map(|t| object(&t.name)).collect(),
            mode: l
                .lock_mode
                .as_ref()
                .map(|m| m.to_string().to_uppercase())
                .unwrap_or_else(|| "ACCESS EXCLUSIVE".into()),
        },
        Statement::Query(q) => match select_into(q) {
            Some(name) => Ddl::CreateTable {
                name,
                if_not_exists: false,
                columns: Vec::new(),
                constraints: Vec::new(),
                from_query: true,
                lineage: Box::default(),
            },
            None => Ddl::Query,
        },
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
