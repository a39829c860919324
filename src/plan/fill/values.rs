//! What the two ways of drawing rows (by the scale spec's generators and by production's
//! statistics) produce: values, and the binary wire format of each column type.

use super::schema::Column;

/// A column type's binary wire format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Encoding {
    Int2,
    Int4,
    Int8,
    Float4,
    Float8,
    Numeric,
    Bool,
    /// text, varchar, char, citext, enum labels, json.
    Text,
    Jsonb,
    Date,
    Timestamp,
    Timestamptz,
    Uuid,
    Bytea,
}

impl Encoding {
    pub(super) fn of(column: &Column) -> Option<Encoding> {
        if !column.enum_labels.is_empty() {
            return Some(Encoding::Text);
        }
        let t = column.base_type.as_str();
        let base = t.split('(').next().unwrap_or(t).trim();
        Some(match base {
            "smallint" => Encoding::Int2,
            "integer" => Encoding::Int4,
            "bigint" => Encoding::Int8,
            "real" => Encoding::Float4,
            "double precision" => Encoding::Float8,
            "numeric" => Encoding::Numeric,
            "boolean" => Encoding::Bool,
            "text" | "character varying" | "character" | "json" => Encoding::Text,
            "jsonb" => Encoding::Jsonb,
            "date" => Encoding::Date,
            "timestamp without time zone" => Encoding::Timestamp,
            "timestamp with time zone" => Encoding::Timestamptz,
            "uuid" => Encoding::Uuid,
            "bytea" => Encoding::Bytea,
            _ => return None,
        })
    }
}

/// One drawn value, before encoding.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Value {
    Int(i64),
    Float(f64),
    /// A `numeric` with this many decimals.
    Decimal(f64, usize),
    Text(String),
    Bool(bool),
    /// Microseconds since the Unix epoch, UTC.
    Micros(i64),
    Bytes(Vec<u8>),
}
