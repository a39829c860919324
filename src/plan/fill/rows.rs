//! Filling from Sluice: rows drawn in Rust and streamed to PostgreSQL as binary `COPY`, which the
//! server ingests at about twice the rate it evaluates `INSERT … SELECT` expressions, while the
//! drawing runs on the other core. It applies when every filled column has a generator and a
//! type this module knows; otherwise the table is filled by [`super::sql`]. Values follow the
//! same distributions as the SQL generators (not the same random draws).

use super::choose::{target_rows, Choice, Filled, Shape, Source};
use super::schema::{resolve, Column, Table};
use super::stats::{self, Distribution, Role};
pub(super) use super::values::{Encoding, Value};
use crate::plan::scale::Generator;
use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};
use std::collections::BTreeMap;
use std::sync::Arc;

/// PostgreSQL's epoch (2000-01-01) in Unix seconds, for dates and timestamps.
const PG_EPOCH: i64 = 946_684_800;
const MICROS: i64 = 1_000_000;
/// 2025-01-01 00:00:00 UTC, the origin of the default dates and timestamps (as in SQL).
const DEFAULT_ORIGIN: i64 = 1_735_689_600;

/// How one column's value is drawn for row `g`.
#[derive(Debug, Clone)]
enum Draw {
    Arith(Expr),
    Uniform {
        low: i64,
        high: i64,
    },
    Zipf {
        n: u64,
        s: f64,
    },
    /// `start + floor(random * rows)`: a key of a table filled as a sequence.
    KeyOf {
        start: i64,
        rows: u64,
    },
    /// A random element of the referenced column's values, read once.
    Pick(Arc<Vec<i64>>),
    Timestamps {
        from: i64,
        span: i64,
    },
    Choice(Vec<Value>),
    /// As production's statistics describe the column ([`stats`]); a foreign key's value is
    /// then the nearest key at or above it in the referenced table (`keys`, sorted).
    Stats {
        distribution: Arc<Distribution>,
        role: Role,
        keys: Option<Keys>,
    },
    Pattern(Vec<String>),
    Labels(Vec<String>),
    DefaultText,
    DefaultBool,
    DefaultDate,
    DefaultTimestamp,
    DefaultUuid,
    DefaultBytes,
    Fixed(Value),
}

/// The keys a statistics-drawn foreign key takes its values from.
#[derive(Debug, Clone)]
enum Keys {
    /// `start..=end`: a table filled as a sequence.
    Range(i64, i64),
    /// Read from the referenced table, sorted.
    Sorted(Arc<Vec<Value>>),
}

/// A referenced column whose values must be read before drawing ([`RowGen::lookups`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Lookup {
    pub(super) table: String,
    pub(super) column: String,
    /// Read as text (keys of a text type), else as int8.
    pub(super) text: bool,
}

#[derive(Debug, Clone)]
struct ColumnGen {
    name: String,
    draw: Draw,
    null_fraction: f64,
    encoding: Encoding,
    /// The index of a pending [`Lookup`] whose values become `Pick` (or a `Stats` draw's keys).
    lookup: Option<usize>,
}

/// Draws and encodes a table's rows.
#[derive(Debug, Clone)]
pub(super) struct RowGen {
    columns: Vec<ColumnGen>,
    seed: u64,
    lookups: Vec<Lookup>,
    /// Composite unique keys whose members count within their leader's groups.
    groups: usize,
}

impl RowGen {
    /// A generator for these choices, or `None` when a column needs SQL (an `sql` expression
    /// beyond integer arithmetic over `g`, a type without a binary encoding here, a reference to
    /// non-integer keys).
    pub(super) fn new(
        choices: &[Choice<'_>],
        tables: &[Table],
        filled: &BTreeMap<i64, Filled>,
        rows: u64,
        seed: u64,
    ) -> Option<RowGen> {
        let mut gen = RowGen { columns: Vec::new(), seed, lookups: Vec::new(), groups: 0 };
        for (position, choice) in choices.iter().enumerate() {
            let column = choice.column;
            let encoding = Encoding::of(column)?;
            let lookups_before = gen.lookups.len();
            let (draw, null_fraction) = match &choice.source {
                Source::Spec(cspec) => {
                    (gen.spec_draw(&cspec.generator, encoding, tables, filled)?, cspec.null_fraction)
                }
                Source::Reference { target, column } => (gen.key_draw(target, column, filled)?, 0.0),
                Source::Default => (default_draw(column, encoding)?, 0.0),
                Source::Statistics { stats, referenced, key, role } => {
                    let seed = seed ^ (position as u64).wrapping_mul(0x2545_F491_4F6C_DD1D);
                    let distribution = Distribution::new(stats, referenced, encoding, &column.base_type, rows, seed)?;
                    if let Role::Leader(n) | Role::Member(n) = role {
                        gen.groups = gen.groups.max(n + 1);
                    }
                    let keys = match key {
                        Some((target, c)) => Some(gen.keys_of(target, c, encoding, filled)?),
                        None => None,
                    };
                    // NULLs are the distribution's to draw.
                    (Draw::Stats { distribution: Arc::new(distribution), role: *role, keys }, 0.0)
                }
            };
            let lookup = (gen.lookups.len() > lookups_before).then(|| gen.lookups.len() - 1);
            if !draw_fits(&draw, encoding) {
                return None;
            }
            gen.columns.push(ColumnGen { name: column.name.clone(), draw, null_fraction, encoding, lookup });
        }
        Some(gen)
    }

    /// The filled columns, in the order of the fields.
    pub(super) fn column_names(&self) -> Vec<&str> {
        self.columns.iter().map(|c| c.name.as_str()).collect()
    }

    /// Referenced columns to read (`SELECT column::int8 … WHERE column IS NOT NULL`, or `::text`).
    pub(super) fn lookups(&self) -> &[Lookup] {
        &self.lookups
    }

    /// Supplies the values read for [`RowGen::lookups`], in the same order.
    pub(super) fn resolve_lookups(&mut self, values: Vec<Vec<Value>>) {
        for column in &mut self.columns {
            let Some(i) = column.lookup else { continue };
            match &mut column.draw {
                Draw::Stats { keys, .. } => {
                    let mut sorted = values[i].clone();
                    sorted.sort_by(stats::compare);
                    *keys = Some(Keys::Sorted(Arc::new(sorted)));
                }
                draw => {
                    let ints = values[i].iter().filter_map(|v| if let Value::Int(i) = v { Some(*i) } else { None });
                    *draw = Draw::Pick(Arc::new(ints.collect()));
                }
            }
        }
    }

    /// The keys a statistics-drawn foreign key snaps to: a sequence's range at once, else read.
    fn keys_of(
        &mut self,
        target: &Table,
        column: &str,
        encoding: Encoding,
        filled: &BTreeMap<i64, Filled>,
    ) -> Option<Keys> {
        let f = target_rows(target, filled)?;
        if let Some(Shape::Sequence(start)) = f.shapes.get(column) {
            return Some(Keys::Range(*start, start + f.rows as i64 - 1));
        }
        let text = matches!(encoding, Encoding::Text);
        if !text && !matches!(encoding, Encoding::Int2 | Encoding::Int4 | Encoding::Int8) {
            return None;
        }
        self.lookups.push(Lookup { table: target.qualified.clone(), column: column.to_string(), text });
        Some(Keys::Sorted(Arc::new(Vec::new())))
    }

    fn spec_draw(
        &mut self,
        generator: &Generator,
        encoding: Encoding,
        tables: &[Table],
        filled: &BTreeMap<i64, Filled>,
    ) -> Option<Draw> {
        Some(match generator {
            Generator::Uniform { low, high } => Draw::Uniform { low: *low, high: *high },
            Generator::Zipf { n, s } => Draw::Zipf { n: *n, s: *s },
            Generator::References { table, column } => self.key_draw(resolve(tables, table)?, column, filled)?,
            Generator::Timestamps { from, to } => {
                let micros = |s: &str| chrono::DateTime::parse_from_rfc3339(s).ok().map(|t| t.timestamp_micros());
                let (from, to) = (micros(from)?, micros(to)?);
                Draw::Timestamps { from, span: to - from }
            }
            Generator::OneOf(values) => {
                Draw::Choice(values.iter().map(|v| literal(v, encoding)).collect::<Option<Vec<_>>>()?)
            }
            Generator::Constant(v) => Draw::Fixed(literal(v, encoding)?),
            Generator::Pattern(p) => Draw::Pattern(p.split("{n}").map(str::to_string).collect()),
            Generator::Sequence(start) => Draw::Arith(Expr::parse(&format!("{start} + g - 1"))?),
            Generator::Sql(sql) => Draw::Arith(Expr::parse(sql)?),
        })
    }

    fn key_draw(&mut self, target: &Table, column: &str, filled: &BTreeMap<i64, Filled>) -> Option<Draw> {
        let f = target_rows(target, filled)?;
        if let Some(Shape::Sequence(start)) = f.shapes.get(column) {
            return Some(Draw::KeyOf { start: *start, rows: f.rows });
        }
        let referenced = target.columns.iter().find(|c| c.name == column)?;
        if !super::choose::is_integer(&referenced.base_type) {
            return None;
        }
        self.lookups.push(Lookup { table: target.qualified.clone(), column: column.to_string(), text: false });
        Some(Draw::Pick(Arc::new(Vec::new())))
    }

    /// Rows `first..=last` as binary COPY data; the header when `first` is 1, and the trailer
    /// when `last` is the table's last row. An error names the column and the row.
    pub(super) fn chunk(&self, first: u64, last: u64, total: u64) -> Result<Vec<u8>, String> {
        let mut rng = SmallRng::seed_from_u64(self.seed ^ first.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let mut out = Vec::with_capacity(((last - first + 1) as usize) * (2 + self.columns.len() * 12));
        if first == 1 {
            out.extend_from_slice(b"PGCOPY\n\xff\r\n\0");
            out.extend_from_slice(&0i32.to_be_bytes());
            out.extend_from_slice(&0i32.to_be_bytes());
        }
        let fields = self.columns.len() as i16;
        let mut places = vec![0u64; self.groups];
        for g in first..=last {
            out.extend_from_slice(&fields.to_be_bytes());
            for column in &self.columns {
                if column.null_fraction > 0.0 && rng.random::<f64>() < column.null_fraction {
                    out.extend_from_slice(&(-1i32).to_be_bytes());
                    continue;
                }
                let value = match &column.draw {
                    Draw::Stats { distribution, role, keys } => {
                        if *role == Role::Free && distribution.null(&mut rng) {
                            out.extend_from_slice(&(-1i32).to_be_bytes());
                            continue;
                        }
                        if let (Role::Free | Role::Leader(_), Some(Keys::Sorted(keys))) = (role, keys) {
                            let key = distribution.draw_key(g, *role, keys, &mut places, &mut rng);
                            let key =
                                key.ok_or_else(|| format!("column {}: the referenced table has no keys", column.name))?;
                            encode(key, column.encoding, &mut out)
                                .map_err(|e| format!("column {}: row {g}: {e}", column.name))?;
                            continue;
                        }
                        let value = distribution.draw(g, *role, &mut places, &mut rng);
                        match keys {
                            Some(keys) => {
                                // Snapping can merge the leader's groups: its member then counts
                                // over the whole table, so the key stays unique.
                                if let Role::Leader(n) = role {
                                    places[*n] = g - 1;
                                }
                                snap(keys, value).ok_or_else(|| {
                                    format!("column {}: the referenced table has no keys", column.name)
                                })?
                            }
                            None => value,
                        }
                    }
                    other => draw(other, g as i64, &mut rng)
                        .ok_or_else(|| format!("column {}: the value for row {g} overflows", column.name))?,
                };
                encode(&value, column.encoding, &mut out)
                    .map_err(|e| format!("column {}: row {g}: {e}", column.name))?;
            }
        }
        if last == total {
            out.extend_from_slice(&(-1i16).to_be_bytes());
        }
        Ok(out)
    }
}

/// The key at or above `value` among `keys`, else the last.
fn snap(keys: &Keys, value: Value) -> Option<Value> {
    match (keys, value) {
        (Keys::Range(low, high), Value::Int(v)) => Some(Value::Int(v.clamp(*low, *high))),
        (Keys::Range(low, _), _) => Some(Value::Int(*low)),
        (Keys::Sorted(keys), value) => {
            let at = keys.partition_point(|k| stats::compare(k, &value) == std::cmp::Ordering::Less);
            keys.get(at).or(keys.last()).cloned()
        }
    }
}

/// Whether a draw's values can be written in `encoding` (decided before drawing anything).
fn draw_fits(draw: &Draw, encoding: Encoding) -> bool {
    use Encoding::*;
    let integer = matches!(encoding, Int2 | Int4 | Int8 | Float4 | Float8 | Numeric | Text);
    match draw {
        Draw::Arith(_) | Draw::Uniform { .. } | Draw::Zipf { .. } | Draw::KeyOf { .. } | Draw::Pick(_) => integer,
        Draw::Timestamps { .. } | Draw::DefaultTimestamp | Draw::DefaultDate => {
            matches!(encoding, Date | Timestamp | Timestamptz)
        }
        Draw::Pattern(_) | Draw::DefaultText | Draw::Labels(_) => matches!(encoding, Text | Jsonb),
        Draw::DefaultBool => encoding == Bool,
        Draw::DefaultUuid => encoding == Uuid,
        Draw::DefaultBytes => encoding == Bytea,
        Draw::Choice(values) => values.iter().all(|v| value_fits(v, encoding)),
        // Built for the encoding.
        Draw::Stats { .. } => true,
        Draw::Fixed(v) => value_fits(v, encoding),
    }
}

fn value_fits(value: &Value, encoding: Encoding) -> bool {
    use Encoding::*;
    match value {
        Value::Int(_) => matches!(encoding, Int2 | Int4 | Int8 | Float4 | Float8 | Numeric | Text),
        Value::Float(_) => matches!(encoding, Float4 | Float8),
        Value::Decimal(..) => encoding == Numeric,
        Value::Text(_) => matches!(encoding, Text | Jsonb),
        Value::Bool(_) => encoding == Bool,
        Value::Micros(_) => matches!(encoding, Date | Timestamp | Timestamptz),
        Value::Bytes(_) => encoding == Bytea,
    }
}

/// A value for a column the spec says nothing about, as [`super::choose::default_expr`] draws it.
fn default_draw(column: &Column, encoding: Encoding) -> Option<Draw> {
    if !column.enum_labels.is_empty() {
        return Some(Draw::Labels(column.enum_labels.clone()));
    }
    Some(match encoding {
        Encoding::Int2 => Draw::Arith(Expr::parse("g % 32767")?),
        Encoding::Int4 | Encoding::Int8 | Encoding::Numeric | Encoding::Float4 | Encoding::Float8 => {
            Draw::Arith(Expr::parse("g")?)
        }
        Encoding::Text => {
            let t = column.base_type.as_str();
            if t == "json" {
                Draw::Fixed(Value::Text("{}".into()))
            } else {
                Draw::DefaultText
            }
        }
        Encoding::Jsonb => Draw::Fixed(Value::Text("{}".into())),
        Encoding::Bool => Draw::DefaultBool,
        Encoding::Date => Draw::DefaultDate,
        Encoding::Timestamp | Encoding::Timestamptz => Draw::DefaultTimestamp,
        Encoding::Uuid => Draw::DefaultUuid,
        Encoding::Bytea => Draw::DefaultBytes,
    })
}

/// A spec literal (as `scale.rs` writes it: `'text'`, `42`, `1.5`, `true`) as a value for
/// `encoding`; `None` when only PostgreSQL can read it (e.g. `'2025-07-02'` for an interval).
fn literal(sql: &str, encoding: Encoding) -> Option<Value> {
    if let Some(inner) = sql.strip_prefix('\'').and_then(|s| s.strip_suffix('\'')) {
        let text = inner.replace("''", "'");
        return match encoding {
            Encoding::Text | Encoding::Jsonb => Some(Value::Text(text)),
            Encoding::Date | Encoding::Timestamp | Encoding::Timestamptz => parse_instant(&text).map(Value::Micros),
            _ => None,
        };
    }
    match sql {
        "true" => return Some(Value::Bool(true)),
        "false" => return Some(Value::Bool(false)),
        _ => {}
    }
    if let Ok(i) = sql.parse::<i64>() {
        return Some(Value::Int(i));
    }
    sql.parse::<f64>().ok().filter(|f| f.is_finite()).map(Value::Float)
}

/// `2025-07-02`, `2025-07-02 08:00:00` (read as UTC: the fill sessions run in UTC) or RFC 3339.
fn parse_instant(text: &str) -> Option<i64> {
    if let Ok(t) = chrono::DateTime::parse_from_rfc3339(text) {
        return Some(t.timestamp_micros());
    }
    if let Ok(t) = chrono::NaiveDateTime::parse_from_str(text, "%Y-%m-%d %H:%M:%S") {
        return Some(t.and_utc().timestamp_micros());
    }
    chrono::NaiveDate::parse_from_str(text, "%Y-%m-%d")
        .ok()
        .and_then(|d| d.and_hms_opt(0, 0, 0))
        .map(|t| t.and_utc().timestamp_micros())
}

/// A bijection on u64 (splitmix64's finaliser): distinct, well-mixed values per row.
fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

fn draw(draw: &Draw, g: i64, rng: &mut SmallRng) -> Option<Value> {
    Some(match draw {
        Draw::Arith(expr) => Value::Int(expr.eval(g)?),
        Draw::Uniform { low, high } => Value::Int(rng.random_range(*low..=*high)),
        Draw::Zipf { n, s } => {
            // Inverse CDF of the continuous power law on [1, n + 1), floored, as the SQL generator.
            let (n, u) = (*n as f64, rng.random::<f64>());
            let x = if (s - 1.0).abs() < 1e-9 {
                (n + 1.0).powf(u)
            } else {
                let e = 1.0 - s;
                (1.0 + u * ((n + 1.0).powf(e) - 1.0)).powf(1.0 / e)
            };
            Value::Int(x.floor().min(n).max(1.0) as i64)
        }
        Draw::KeyOf { start, rows } => Value::Int(start + rng.random_range(0..*rows) as i64),
        Draw::Pick(values) if values.is_empty() => return None,
        Draw::Pick(values) => Value::Int(values[rng.random_range(0..values.len())]),
        Draw::Timestamps { from, span } => Value::Micros(from + (rng.random::<f64>() * *span as f64) as i64),
        Draw::Choice(values) => values[rng.random_range(0..values.len())].clone(),
        Draw::Stats { distribution, role, .. } => distribution.draw(g as u64, *role, &mut [0; 8], rng),
        Draw::Pattern(parts) => Value::Text(parts.join(&g.to_string())),
        Draw::Labels(labels) => Value::Text(labels[(g as usize) % labels.len()].clone()),
        Draw::DefaultText => Value::Text(format!("v{g}")),
        Draw::DefaultBool => Value::Bool(g % 2 == 0),
        Draw::DefaultDate => Value::Micros((DEFAULT_ORIGIN + (g % 3650) * 86_400) * MICROS),
        Draw::DefaultTimestamp => Value::Micros((DEFAULT_ORIGIN + g) * MICROS),
        Draw::DefaultUuid => {
            let mut bytes = Vec::with_capacity(16);
            bytes.extend_from_slice(&mix(g as u64).to_be_bytes());
            bytes.extend_from_slice(&(g as u64).to_be_bytes());
            Value::Bytes(bytes)
        }
        Draw::DefaultBytes => Value::Bytes([mix(g as u64).to_be_bytes(), mix(!(g as u64)).to_be_bytes()].concat()),
        Draw::Fixed(value) => value.clone(),
    })
}

fn field(out: &mut Vec<u8>, bytes: &[u8]) {
    out.extend_from_slice(&(bytes.len() as i32).to_be_bytes());
    out.extend_from_slice(bytes);
}

/// Appends one field (length and bytes) in `encoding`'s binary format.
fn encode(value: &Value, encoding: Encoding, out: &mut Vec<u8>) -> Result<(), String> {
    use Encoding::*;
    let range = |name: &str| format!("{value:?} is out of range for type {name}");
    match (value, encoding) {
        (Value::Int(i), Int2) => field(out, &i16::try_from(*i).map_err(|_| range("smallint"))?.to_be_bytes()),
        (Value::Int(i), Int4) => field(out, &i32::try_from(*i).map_err(|_| range("integer"))?.to_be_bytes()),
        (Value::Int(i), Int8) => field(out, &i.to_be_bytes()),
        (Value::Int(i), Float4) => field(out, &(*i as f32).to_be_bytes()),
        (Value::Int(i), Float8) => field(out, &(*i as f64).to_be_bytes()),
        (Value::Float(f), Float4) => field(out, &(*f as f32).to_be_bytes()),
        (Value::Float(f), Float8) => field(out, &f.to_be_bytes()),
        (Value::Int(i), Numeric) => field(out, &numeric(*i)),
        (Value::Decimal(f, scale), Numeric) => {
            field(out, &decimal(f, *scale).ok_or_else(|| format!("{f} is not a finite number for numeric"))?)
        }
        (Value::Float(f) | Value::Decimal(f, _), Text) => field(out, f.to_string().as_bytes()),
        (Value::Bool(b), Text) => field(out, b.to_string().as_bytes()),
        (Value::Int(i), Text) => field(out, i.to_string().as_bytes()),
        (Value::Text(t), Text) => field(out, t.as_bytes()),
        (Value::Text(t), Jsonb) => field(out, &[&[1u8][..], t.as_bytes()].concat()),
        (Value::Bool(b), Bool) => field(out, &[u8::from(*b)]),
        (Value::Micros(us), Timestamp | Timestamptz) => field(out, &(us - PG_EPOCH * MICROS).to_be_bytes()),
        (Value::Micros(us), Date) => {
            let days = (us.div_euclid(MICROS) - PG_EPOCH).div_euclid(86_400);
            field(out, &i32::try_from(days).map_err(|_| range("date"))?.to_be_bytes())
        }
        (Value::Bytes(b), Uuid | Bytea) => field(out, b),
        _ => return Err(format!("{value:?} cannot be written as {encoding:?}")),
    }
    Ok(())
}

/// A number with `scale` decimals in `numeric`'s binary format.
fn decimal(value: &f64, scale: usize) -> Option<Vec<u8>> {
    if !value.is_finite() {
        return None;
    }
    let text = format!("{:.*}", scale, value.abs());
    let (whole, fraction) = text.split_once('.').unwrap_or((&text, ""));
    // Base-10000 groups: the whole part from the point leftwards, the fraction rightwards.
    let whole = whole.trim_start_matches('0');
    let padded = format!("{}{whole}", "0".repeat((4 - whole.len() % 4) % 4));
    let mut fraction = fraction.to_string();
    while fraction.len() % 4 != 0 {
        fraction.push('0');
    }
    let group = |s: &str| s.parse::<i16>().ok();
    let mut digits: Vec<i16> = Vec::new();
    for chunk in padded.as_bytes().chunks(4).chain(fraction.as_bytes().chunks(4)) {
        digits.push(group(std::str::from_utf8(chunk).ok()?)?);
    }
    let mut weight = padded.len() as i16 / 4 - 1;
    while digits.first() == Some(&0) {
        digits.remove(0);
        weight -= 1;
    }
    while digits.last() == Some(&0) {
        digits.pop();
    }
    if digits.is_empty() {
        weight = 0;
    }
    let sign: i16 = if *value < 0.0 && !digits.is_empty() { 0x4000 } else { 0 };
    let mut out = Vec::with_capacity(8 + 2 * digits.len());
    for header in [digits.len() as i16, weight, sign, scale as i16] {
        out.extend_from_slice(&header.to_be_bytes());
    }
    for d in digits {
        out.extend_from_slice(&d.to_be_bytes());
    }
    Some(out)
}

/// An integer in `numeric`'s binary format: base-10000 digits, most significant first.
fn numeric(value: i64) -> Vec<u8> {
    let mut digits = Vec::new();
    let mut rest = value.unsigned_abs();
    while rest > 0 {
        digits.push((rest % 10_000) as i16);
        rest /= 10_000;
    }
    digits.reverse();
    let weight = digits.len() as i16 - 1;
    while digits.last() == Some(&0) {
        digits.pop();
    }
    let sign: i16 = if value < 0 { 0x4000 } else { 0 };
    let mut out = Vec::with_capacity(8 + 2 * digits.len());
    for header in [digits.len() as i16, weight.max(0), sign, 0] {
        out.extend_from_slice(&header.to_be_bytes());
    }
    for d in digits {
        out.extend_from_slice(&d.to_be_bytes());
    }
    out
}

// ---------------------------------------------------------------------------------------------
// `sql = "…"` generators that are integer arithmetic over `g` (keys derived from the row number,
// the common case) are evaluated here with PostgreSQL's bigint semantics; anything else is SQL.

#[derive(Debug, Clone, PartialEq)]
enum Expr {
    G,
    Int(i64),
    Neg(Box<Expr>),
    Bin(Box<Expr>, char, Box<Expr>),
}

impl Expr {
    fn parse(text: &str) -> Option<Expr> {
        let tokens = tokenize(text)?;
        let mut pos = 0;
        let expr = parse_sum(&tokens, &mut pos)?;
        (pos == tokens.len()).then_some(expr)
    }

    /// `None` on overflow or division by zero (PostgreSQL raises an error there too).
    fn eval(&self, g: i64) -> Option<i64> {
        match self {
            Expr::G => Some(g),
            Expr::Int(i) => Some(*i),
            Expr::Neg(e) => e.eval(g)?.checked_neg(),
            Expr::Bin(a, op, b) => {
                let (a, b) = (a.eval(g)?, b.eval(g)?);
                match op {
                    '+' => a.checked_add(b),
                    '-' => a.checked_sub(b),
                    '*' => a.checked_mul(b),
                    // Truncation toward zero and the dividend's sign, as PostgreSQL's int8 / and %.
                    '/' => a.checked_div(b),
                    _ => a.checked_rem(b),
                }
            }
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Token {
    G,
    Int(i64),
    Op(char),
}

fn tokenize(text: &str) -> Option<Vec<Token>> {
    let mut tokens = Vec::new();
    let mut chars = text.chars().peekable();
    while let Some(&c) = chars.peek() {
        match c {
            ' ' | '\t' | '\n' => {
                chars.next();
            }
            '0'..='9' => {
                let mut n = String::new();
                while let Some(d) = chars.next_if(|d| d.is_ascii_digit() || *d == '_') {
                    if d != '_' {
                        n.push(d);
                    }
                }
                tokens.push(Token::Int(n.parse().ok()?));
            }
            'g' => {
                chars.next();
                if chars.peek().is_some_and(|c| c.is_alphanumeric() || *c == '_') {
                    return None;
                }
                tokens.push(Token::G);
            }
            '+' | '-' | '*' | '/' | '%' | '(' | ')' => {
                chars.next();
                tokens.push(Token::Op(c));
            }
            _ => return None,
        }
    }
    Some(tokens)
}

fn parse_sum(tokens: &[Token], pos: &mut usize) -> Option<Expr> {
    let mut left = parse_product(tokens, pos)?;
    while let Some(Token::Op(op @ ('+' | '-'))) = tokens.get(*pos) {
        *pos += 1;
        left = Expr::Bin(Box::new(left), *op, Box::new(parse_product(tokens, pos)?));
    }
    Some(left)
}

fn parse_product(tokens: &[Token], pos: &mut usize) -> Option<Expr> {
    let mut left = parse_unary(tokens, pos)?;
    while let Some(Token::Op(op @ ('*' | '/' | '%'))) = tokens.get(*pos) {
        *pos += 1;
        left = Expr::Bin(Box::new(left), *op, Box::new(parse_unary(tokens, pos)?));
    }
    Some(left)
}

fn parse_unary(tokens: &[Token], pos: &mut usize) -> Option<Expr> {
    let token = tokens.get(*pos)?;
    *pos += 1;
    match token {
        Token::G => Some(Expr::G),
        Token::Int(i) => Some(Expr::Int(*i)),
        Token::Op('-') => Some(Expr::Neg(Box::new(parse_unary(tokens, pos)?))),
        Token::Op('+') => parse_unary(tokens, pos),
        Token::Op('(') => {
            let inner = parse_sum(tokens, pos)?;
            (tokens.get(*pos) == Some(&Token::Op(')'))).then(|| {
                *pos += 1;
                inner
            })
        }
        Token::Op(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn eval(text: &str, g: i64) -> Option<i64> {
        Expr::parse(text)?.eval(g)
    }

    #[test]
    fn integer_arithmetic_over_g_follows_postgresql() {
        assert_eq!(eval("1 + (g - 1) / 40", 80), Some(2));
        assert_eq!(eval("1 + (g - 1) % 40", 80), Some(40));
        assert_eq!(eval("-7 / 2", 0), Some(-3), "truncates toward zero");
        assert_eq!(eval("-7 % 3", 0), Some(-1), "the dividend's sign");
        assert_eq!(eval("2 * -g + 1_000", 3), Some(994));
        assert_eq!(eval("g / 0", 1), None, "division by zero is not a value");
        assert_eq!(eval("9223372036854775807 + g", 1), None, "overflow is not a value");
    }

    #[test]
    fn anything_else_is_left_to_sql() {
        for text in ["random()", "g::int", "1.5 * g", "gg", "(g", "g +", "abs(g)", "'x' || g"] {
            assert_eq!(Expr::parse(text), None, "{text}");
        }
    }

    #[test]
    fn literals_become_values_of_the_column_type() {
        assert_eq!(literal("'north'", Encoding::Text), Some(Value::Text("north".into())));
        assert_eq!(literal("'it''s'", Encoding::Text), Some(Value::Text("it's".into())));
        assert_eq!(literal("42", Encoding::Int4), Some(Value::Int(42)));
        assert_eq!(literal("true", Encoding::Bool), Some(Value::Bool(true)));
        let day = literal("'2025-07-02'", Encoding::Date);
        assert_eq!(day, Some(Value::Micros(1_751_414_400 * MICROS)));
        assert_eq!(literal("'1 day'", Encoding::Date), None, "PostgreSQL reads what Sluice cannot");
    }

    #[test]
    fn binary_encodings_match_postgresql() {
        let one = |v: Value, e: Encoding| {
            let mut out = Vec::new();
            encode(&v, e, &mut out).expect("encodes");
            out
        };
        assert_eq!(one(Value::Int(7), Encoding::Int4), [0, 0, 0, 4, 0, 0, 0, 7]);
        assert!(encode(&Value::Int(70_000), Encoding::Int2, &mut Vec::new()).is_err());
        // 2000-01-02 is day 1 of PostgreSQL's epoch; 2000-01-01 00:00:01 is 1,000,000 µs.
        assert_eq!(one(Value::Micros((PG_EPOCH + 86_400) * MICROS), Encoding::Date), [0, 0, 0, 4, 0, 0, 0, 1]);
        assert_eq!(one(Value::Micros((PG_EPOCH + 1) * MICROS), Encoding::Timestamp)[4..], 1_000_000i64.to_be_bytes());
        // 123456789 = 1|2345|6789 in base 10000: 3 digits, weight 2.
        assert_eq!(numeric(123_456_789), [0, 3, 0, 2, 0, 0, 0, 0, 0, 1, 9, 41, 26, 133]);
        assert_eq!(numeric(-20_000), [0, 1, 0, 1, 64, 0, 0, 0, 0, 2]);
        assert_eq!(numeric(0), [0, 0, 0, 0, 0, 0, 0, 0]);
        // 12.5 with scale 2: 12|5000, weight 0, dscale 2; -0.05: 0500 at weight -1.
        assert_eq!(decimal(&12.5, 2), Some(vec![0, 2, 0, 0, 0, 0, 0, 2, 0, 12, 19, 136]));
        assert_eq!(decimal(&-0.05, 2), Some(vec![0, 1, 255, 255, 64, 0, 0, 2, 1, 244]));
        assert_eq!(decimal(&0.0, 2), Some(vec![0, 0, 0, 0, 0, 0, 0, 2]));
    }

    #[test]
    fn chunks_carry_the_header_once_and_the_trailer_at_the_end() {
        let gen = RowGen {
            columns: vec![ColumnGen {
                name: "id".into(),
                draw: Draw::Arith(Expr::G),
                null_fraction: 0.0,
                encoding: Encoding::Int8,
                lookup: None,
            }],
            seed: 1,
            lookups: Vec::new(),
            groups: 0,
        };
        let first = gen.chunk(1, 2, 3).expect("chunk");
        assert!(first.starts_with(b"PGCOPY\n\xff\r\n\0"));
        assert_eq!(first.len(), 19 + 2 * (2 + 4 + 8));
        let last = gen.chunk(3, 3, 3).expect("chunk");
        assert_eq!(last.len(), 2 + 4 + 8 + 2);
        assert!(last.ends_with(&[0xff, 0xff]));
    }
}
