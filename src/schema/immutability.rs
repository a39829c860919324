//! Whether PostgreSQL would accept an expression as an index expression: it refuses any
//! expression that is not IMMUTABLE (`ERROR: functions in index expression must be marked
//! IMMUTABLE`), so a help that suggests `CREATE INDEX … ((created_at::date))` on a timestamptz
//! column suggests a statement that fails. The verdict reads the volatility of functions from
//! the history (user functions), the extensions it created and PostgreSQL 15's `pg_proc`
//! ([`crate::sql::catalog`]), and knows which casts and operators on dates, times and text
//! depend on settings (`TimeZone`, `DateStyle`): those are STABLE. What it cannot tell, it
//! counts as refused — a suggestion left out costs less than one PostgreSQL rejects.

use super::Schema;
use crate::sql::catalog;
use crate::sql::ddl::Volatility;
use crate::sql::names;
use sqlparser::ast::{self, BinaryOperator, Expr};

const TEMPORAL: &[&str] = &["date", "time", "timetz", "timestamp", "timestamptz", "interval"];
const TEXTUAL: &[&str] = &["text", "varchar", "bpchar", "name", "citext"];
/// Built-in types whose text input and output functions are IMMUTABLE (PostgreSQL 15's
/// `pg_proc`: `int4out`, `uuid_out`, `jsonb_out`, `time_out`, `timetz_out` …; `date_out`,
/// `timestamp_out`, `timestamptz_out`, `interval_out` and every date/time input are STABLE).
const PLAIN: &[&str] = &[
    "int2", "int4", "int8", "numeric", "float4", "float8", "bool", "uuid", "json", "jsonb", "bytea", "inet", "cidr",
    "macaddr", "oid", "bit", "varbit", "tsvector", "xml",
];

/// Why PostgreSQL would refuse `expression` (normalized, its columns `table`'s) in an index:
/// the first part of it that is not IMMUTABLE, or that an index cannot hold. `None` when
/// PostgreSQL accepts it.
pub fn index_refusal(expression: &str, table: &str, schema: &Schema) -> Option<String> {
    match crate::sql::depth::parse_expression(expression) {
        Some(expr) => Reader { table, schema }.refusal(&expr),
        None => Some(format!("Sluice could not read `{expression}` to tell whether it is IMMUTABLE")),
    }
}

struct Reader<'a> {
    table: &'a str,
    schema: &'a Schema,
}

fn base_type(written: &str) -> String {
    names::type_parts(written).0
}

impl Reader<'_> {
    fn column_type(&self, expr: &Expr) -> Option<String> {
        let column = match expr {
            Expr::Identifier(i) => names::ident(i),
            Expr::CompoundIdentifier(parts) => names::ident(parts.last()?),
            _ => return None,
        };
        let table = self.schema.tables.get(self.table)?;
        table.column(&column).map(|c| base_type(&c.data_type))
    }

    /// The type of `expr` as far as the refusal needs it: columns, casts, literals.
    fn type_of(&self, expr: &Expr) -> Option<String> {
        match expr {
            Expr::Identifier(_) | Expr::CompoundIdentifier(_) => self.column_type(expr),
            Expr::Nested(inner) | Expr::Collate { expr: inner, .. } => self.type_of(inner),
            Expr::Cast { data_type, .. } => Some(base_type(&data_type.to_string())),
            Expr::Interval(_) => Some("interval".into()),
            Expr::Value(v) => match &v.value {
                ast::Value::SingleQuotedString(_) => Some("text".into()),
                ast::Value::Number(..) => Some("numeric".into()),
                _ => None,
            },
            Expr::AtTimeZone { timestamp, .. } => match self.type_of(timestamp)?.as_str() {
                "timestamptz" => Some("timestamp".into()),
                "timestamp" => Some("timestamptz".into()),
                _ => None,
            },
            _ => None,
        }
    }

    fn refusal(&self, expr: &Expr) -> Option<String> {
        match expr {
            Expr::Value(v) => match &v.value {
                ast::Value::Placeholder(p) => Some(format!("it holds the parameter {p}, which an index cannot")),
                _ => None,
            },
            Expr::Interval(_) => None,
            Expr::Identifier(i) => {
                let name = names::ident(i);
                if catalog::SQL_VALUE_FUNCTIONS.contains(&name.as_str()) {
                    Some(format!("{name} is STABLE"))
                } else if self.column_type(expr).is_some() {
                    None
                } else {
                    Some(format!("`{name}` is not a column of {}", self.table))
                }
            }
            Expr::CompoundIdentifier(_) => {
                self.column_type(expr).is_none().then(|| format!("`{expr}` is not a column of {}", self.table))
            }
            Expr::Nested(inner) | Expr::Collate { expr: inner, .. } | Expr::UnaryOp { expr: inner, .. } => {
                self.refusal(inner)
            }
            Expr::Function(f) => self.function_refusal(f),
            Expr::Extract { expr: inner, .. } => self.refusal(inner).or_else(|| {
                (self.type_of(inner).as_deref() != Some("timestamp") && self.type_of(inner).as_deref() != Some("date"))
                    .then(|| {
                        format!("extract(… FROM {inner}) is STABLE unless Sluice knows its argument is a timestamp or a date (on timestamptz it depends on the TimeZone setting)")
                    })
            }),
            Expr::Cast { expr: inner, data_type, .. } => {
                self.refusal(inner).or_else(|| self.cast_refusal(inner, self.type_of(inner), data_type))
            }
            Expr::AtTimeZone { timestamp, time_zone } => {
                self.refusal(timestamp).or_else(|| self.refusal(time_zone)).or_else(|| {
                    match self.type_of(timestamp).as_deref() {
                        Some("timestamp" | "timestamptz") => None,
                        _ => Some(format!(
                            "`{timestamp} AT TIME ZONE …` is IMMUTABLE only on a timestamp or timestamptz, which Sluice cannot tell `{timestamp}` is"
                        )),
                    }
                })
            }
            Expr::BinaryOp { left, op, right } => {
                self.refusal(left).or_else(|| self.refusal(right)).or_else(|| self.operator_refusal(left, op, right))
            }
            Expr::Case { operand, conditions, else_result, .. } => operand
                .iter()
                .map(|o| o.as_ref())
                .chain(conditions.iter().flat_map(|c| [&c.condition, &c.result]))
                .chain(else_result.iter().map(|e| e.as_ref()))
                .find_map(|e| self.refusal(e)),
            Expr::IsNull(inner) | Expr::IsNotNull(inner) | Expr::IsTrue(inner) | Expr::IsFalse(inner) => {
                self.refusal(inner)
            }
            Expr::Subquery(_) | Expr::Exists { .. } => {
                Some("it holds a subquery, which an index cannot".into())
            }
            other => Some(format!("Sluice cannot tell whether `{other}` is IMMUTABLE")),
        }
    }

    fn function_refusal(&self, f: &ast::Function) -> Option<String> {
        let mut arguments = Vec::new();
        if let ast::FunctionArguments::List(list) = &f.args {
            for arg in &list.args {
                let (ast::FunctionArg::Unnamed(a)
                | ast::FunctionArg::Named { arg: a, .. }
                | ast::FunctionArg::ExprNamed { arg: a, .. }) = arg;
                match a {
                    ast::FunctionArgExpr::Expr(e) => arguments.push(e),
                    _ => return Some(format!("Sluice cannot tell whether `{f}` is IMMUTABLE")),
                }
            }
        }
        if let Some(why) = arguments.iter().find_map(|a| self.refusal(a)) {
            return Some(why);
        }
        let function = names::object(&f.name);
        let bare = names::split(&function).1.to_string();
        // Not functions but expressions of the grammar (no pg_proc row): as immutable as their
        // arguments, checked above (PostgreSQL 15 accepts `CREATE INDEX … ((coalesce(a, b)))`).
        if f.name.0.len() == 1 && matches!(bare.as_str(), "coalesce" | "nullif" | "greatest" | "least") {
            return None;
        }
        let (volatility, whose) = if let Some(v) = self.schema.function_volatility(&function) {
            let origin = &self.schema.functions[&function].origin;
            (v, format!("which {}:{} creates as", origin.file, origin.line))
        } else if let Some((extension, v)) = self.schema.extension_function(&function) {
            (v, format!("which extension {extension} installs as"))
        } else if catalog::SQL_VALUE_FUNCTIONS.contains(&bare.as_str()) {
            (Volatility::Stable, "which is".into())
        } else if let Some(v) = catalog::volatility(&bare) {
            // date_trunc and date_part are STABLE only on timestamptz (PostgreSQL 15's pg_proc):
            // on a timestamp, a date or an interval they are IMMUTABLE.
            let on_timestamptz_only = matches!(bare.as_str(), "date_trunc" | "date_part") && arguments.len() == 2;
            if on_timestamptz_only
                && matches!(self.type_of(arguments[1]).as_deref(), Some("timestamp" | "date" | "interval"))
            {
                return None;
            }
            (v, "which PostgreSQL marks (in its most volatile form)".into())
        } else {
            return Some(format!(
                "{function}() is neither built in nor created by the migration history, so Sluice cannot tell it is IMMUTABLE"
            ));
        };
        (volatility != Volatility::Immutable).then(|| format!("it calls {bare}(), {whose} {}", volatility.as_str()))
    }

    fn cast_refusal(&self, inner: &Expr, source: Option<String>, target: &ast::DataType) -> Option<String> {
        let target = base_type(&target.to_string());
        let t = target.as_str();
        let Some(source) = source else {
            return (TEMPORAL.contains(&t) || TEXTUAL.contains(&t)).then(|| {
                format!("Sluice cannot tell the type of `{inner}`, and casts between text, dates and times are STABLE")
            });
        };
        let s = source.as_str();
        if s == t || (TEXTUAL.contains(&s) && TEXTUAL.contains(&t)) {
            return None;
        }
        let stable =
            || Some(format!("a cast from {s} to {t} is STABLE (it depends on the TimeZone or DateStyle setting)"));
        let temporal = |x: &str| TEMPORAL.contains(&x);
        if (s == "timestamptz" || t == "timestamptz") && (temporal(s) || temporal(t)) {
            return stable();
        }
        match (temporal(s), temporal(t), TEXTUAL.contains(&s), TEXTUAL.contains(&t)) {
            (true, true, _, _) => (s == "time" && t == "timetz").then(stable).flatten(),
            (_, true, true, _) => stable(),
            (true, _, _, true) => (!matches!(s, "time" | "timetz")).then(stable).flatten(),
            _ if PLAIN.contains(&s) || TEXTUAL.contains(&s) => None,
            _ => Some(format!(
                "`{inner}` is of type {s}, which is not a built-in type Sluice knows (an enum's cast to text is STABLE)"
            )),
        }
    }

    fn operator_refusal(&self, left: &Expr, op: &BinaryOperator, right: &Expr) -> Option<String> {
        let (l, r) = (self.type_of(left), self.type_of(right));
        match op {
            BinaryOperator::Plus | BinaryOperator::Minus => {
                let interval = l.as_deref() == Some("interval") || r.as_deref() == Some("interval");
                let timestamptz = l.as_deref() == Some("timestamptz") || r.as_deref() == Some("timestamptz");
                let unknown = l.is_none() || r.is_none();
                if interval && timestamptz {
                    Some("timestamptz ± interval is STABLE (the day's length depends on the TimeZone setting)".into())
                } else if interval && unknown {
                    Some(format!(
                        "Sluice cannot tell the type of `{left} {op} {right}`, and timestamptz ± interval is STABLE"
                    ))
                } else {
                    None
                }
            }
            BinaryOperator::StringConcat => {
                let textual = |t: &Option<String>| t.as_deref().is_some_and(|t| TEXTUAL.contains(&t));
                (!(textual(&l) && textual(&r))).then(|| {
                    "`||` with a side that is not text is STABLE (PostgreSQL's anytextcat / textanycat)".into()
                })
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sql::parse::parse_file;

    fn schema(ddl: &str) -> Schema {
        let mut schema = Schema::default();
        schema.apply_all(&parse_file(ddl.to_string()).statements, "m.sql", Some(0));
        schema
    }

    #[test]
    fn what_postgresql_refuses_in_an_index() {
        let schema = schema(
            "CREATE TYPE mood AS ENUM ('a');
CREATE TABLE t (ts timestamptz, local timestamp, d date, email text, n int, m mood, name varchar(20));",
        );
        let refused = |e: &str| index_refusal(e, "t", &schema);
        for accepted in [
            "lower(email)",
            "local::date",
            "date_trunc('day', local)",
            "ts AT TIME ZONE 'UTC'",
            "(ts AT TIME ZONE 'UTC')::date",
            "n + 1",
            "email || name",
            "n::text",
            "name::text",
            "coalesce(email, name)",
            "nullif(email, '')",
            "greatest(n, 1)",
            "least(n, 1)",
        ] {
            assert_eq!(refused(accepted), None, "{accepted}");
        }
        for (refused_expression, why) in [
            ("ts::date", "from timestamptz to date"),
            ("m::text", "type mood"),
            ("date_trunc('day', ts)", "date_trunc"),
            ("ts + interval '1 day'", "timestamptz ± interval"),
            ("local > now()", "now()"),
            ("lower(email) = $1", "parameter $1"),
            ("email || n", "anytextcat"),
            ("d::text", "from date to text"),
            ("mystery(email)", "neither built in"),
            ("coalesce(ts::date, d)", "from timestamptz to date"),
        ] {
            let found = refused(refused_expression);
            assert!(found.as_deref().is_some_and(|f| f.contains(why)), "{refused_expression}: {found:?}");
        }
    }
}
