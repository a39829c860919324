//! Values drawn as production's statistics describe a column ([`crate::plan::snapshot`]):
//! NULLs by `null_frac`; the most common values with their frequencies; the rest spread over
//! the histogram's buckets (equal shares, as ANALYZE builds them), uniform within a bucket, so
//! many distinct values in all as `n_distinct` says, in the column's own value domain (the
//! bounds are production's values); physical order by `correlation`: a row takes the value at
//! its own position in the sorted order, or, for a share of `1 - |correlation|` of the rows,
//! at a random one.
//!
//! A unique column gives each row its own rank (a permutation of the rows that keeps the
//! correlation), and the last column of a composite unique key counts within the groups the
//! first one forms, each group as large as its value's frequency says.

use super::values::{Encoding, Value};
use crate::plan::snapshot::ColumnStats;
use rand::rngs::SmallRng;
use rand::RngExt;
use std::cmp::Ordering;

/// PostgreSQL's epoch-free instants: microseconds since the Unix epoch.
fn instant(text: &str, encoding: Encoding) -> Option<i64> {
    match encoding {
        Encoding::Date => chrono::NaiveDate::parse_from_str(text, "%Y-%m-%d")
            .ok()
            .and_then(|d| d.and_hms_opt(0, 0, 0))
            .map(|t| t.and_utc().timestamp_micros()),
        Encoding::Timestamp => chrono::NaiveDateTime::parse_from_str(text, "%Y-%m-%dT%H:%M:%S%.f")
            .ok()
            .map(|t| t.and_utc().timestamp_micros()),
        _ => chrono::DateTime::parse_from_rfc3339(text).ok().map(|t| t.timestamp_micros()),
    }
}

/// A value of the snapshot (JSON, as `to_jsonb` wrote it) in the column's encoding.
fn value_of(json: &serde_json::Value, encoding: Encoding, scale: usize) -> Option<Value> {
    use Encoding::*;
    let text = || json.as_str().map(str::to_string).unwrap_or_else(|| json.to_string());
    Some(match encoding {
        Int2 | Int4 | Int8 => Value::Int(json.as_i64().or_else(|| text().parse().ok())?),
        Float4 | Float8 => Value::Float(json.as_f64().or_else(|| text().parse().ok())?),
        Numeric => Value::Decimal(json.as_f64().or_else(|| text().parse().ok())?, scale),
        Bool => Value::Bool(json.as_bool()?),
        Text => Value::Text(text()),
        Date | Timestamp | Timestamptz => Value::Micros(instant(json.as_str()?, encoding)?),
        Uuid => {
            let hex: String = json.as_str()?.chars().filter(|c| *c != '-').collect();
            Value::Bytes(hex::decode(hex).ok().filter(|b| b.len() == 16)?)
        }
        Jsonb | Bytea => return None,
    })
}

/// Orders values of one column as PostgreSQL does under the C collation.
pub(super) fn compare(a: &Value, b: &Value) -> Ordering {
    match (a, b) {
        (Value::Int(x), Value::Int(y)) => x.cmp(y),
        (Value::Micros(x), Value::Micros(y)) => x.cmp(y),
        (Value::Text(x), Value::Text(y)) => x.as_bytes().cmp(y.as_bytes()),
        (Value::Bool(x), Value::Bool(y)) => x.cmp(y),
        (Value::Bytes(x), Value::Bytes(y)) => x.cmp(y),
        _ => number(a).unwrap_or(0.0).total_cmp(&number(b).unwrap_or(0.0)),
    }
}

fn number(v: &Value) -> Option<f64> {
    match v {
        Value::Int(i) => Some(*i as f64),
        Value::Float(f) | Value::Decimal(f, _) => Some(*f),
        Value::Micros(us) => Some(*us as f64),
        _ => None,
    }
}

/// A mass of the non-NULL rows: one common value, or a histogram bucket of `values` values.
#[derive(Debug, Clone)]
enum Atom {
    Point(Value),
    Bucket { low: Value, high: Value, values: u64 },
}

impl Atom {
    fn low(&self) -> &Value {
        match self {
            Atom::Point(v) | Atom::Bucket { low: v, .. } => v,
        }
    }

    fn values(&self) -> u64 {
        match self {
            Atom::Point(_) => 1,
            Atom::Bucket { values, .. } => *values,
        }
    }

    /// Value `index` of the bucket (`index < values`), or a value beyond them when `distinct`
    /// must hold for every index (a unique column with more rows than the domain spans).
    fn value(&self, index: u64, distinct: bool) -> Value {
        let Atom::Bucket { low, high, values } = self else {
            return self.low().clone();
        };
        let f = (index as f64 + 0.5) / *values as f64;
        match (low, high) {
            (Value::Int(a), Value::Int(b)) => {
                let step = ((b - a) as f64 / *values as f64).max(if distinct { 1.0 } else { 0.0 });
                Value::Int(a + (index as f64 * step) as i64)
            }
            (Value::Micros(a), Value::Micros(b)) => {
                let step = ((b - a) as f64 / *values as f64).max(if distinct { 1.0 } else { 0.0 });
                Value::Micros(a + (index as f64 * step) as i64)
            }
            (Value::Float(a), Value::Float(b)) => Value::Float(a + f * (b - a)),
            (Value::Decimal(a, s), Value::Decimal(b, _)) => Value::Decimal(a + f * (b - a), *s),
            // Text between two bounds: the lower bound and a suffix (C collation keeps it above
            // the bound); `~` cannot occur in the suffix's digits, so two suffixes never meet.
            (Value::Text(a), _) if index > 0 => Value::Text(format!("{a}~{index}")),
            (Value::Bytes(a), _) if a.len() == 16 && index > 0 => {
                let mut b = a.clone();
                b[8..]
                    .copy_from_slice(&(u64::from_be_bytes(a[8..].try_into().unwrap_or([0; 8])) ^ index).to_be_bytes());
                Value::Bytes(b)
            }
            _ => low.clone(),
        }
    }
}

/// How a statistics-drawn column relates to the other columns of its table's unique keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Role {
    /// Drawn on its own.
    Free,
    /// The first column of composite unique key `n`: its rows come in groups, one per value.
    Leader(usize),
    /// The last column of composite unique key `n`: distinct within each group of the leader.
    Member(usize),
}

/// One column's distribution.
#[derive(Debug, Clone)]
pub(super) struct Distribution {
    null_frac: f64,
    atoms: Vec<Atom>,
    /// The non-NULL mass up to and including each atom, ending at 1.
    cumulative: Vec<f64>,
    unique: bool,
    /// The column's real values (histogram bounds, common values, and the common values of the
    /// columns referencing it), sorted: where a unique column's values are spread.
    known: Vec<Value>,
    order: Permutation,
    /// The share of rows placed at random: 1 - |correlation|.
    shuffled: f64,
    descending: bool,
    rows: u64,
}

impl Distribution {
    /// The distribution of `stats` for a table of `rows` rows, or `None` when the values cannot
    /// be read in `encoding` (the column then gets a value by its type).
    /// `referenced`: values other tables' columns hold often (a key must have them).
    pub(super) fn new(
        stats: &ColumnStats,
        referenced: &[serde_json::Value],
        encoding: Encoding,
        type_name: &str,
        rows: u64,
        seed: u64,
    ) -> Option<Self> {
        let scale = numeric_scale(type_name, stats);
        let read = |list: &[serde_json::Value]| -> Option<Vec<Value>> {
            list.iter().map(|v| value_of(v, encoding, scale)).collect()
        };
        let common = read(&stats.most_common_vals)?;
        let bounds = read(&stats.histogram_bounds)?;
        let non_null = 1.0 - stats.null_frac;
        let common_mass: f64 = stats.most_common_freqs.iter().sum();
        let mut atoms: Vec<(Atom, f64)> =
            common.into_iter().zip(&stats.most_common_freqs).map(|(v, f)| (Atom::Point(v), *f)).collect();
        let buckets = bounds.len().saturating_sub(1);
        let rest = (non_null - common_mass).max(0.0);
        if buckets > 0 {
            let distinct = (stats.distinct(rows as f64) - atoms.len() as f64).max(buckets as f64);
            let per_bucket = (distinct / buckets as f64).round().max(1.0) as u64;
            for pair in bounds.windows(2) {
                let atom = Atom::Bucket { low: pair[0].clone(), high: pair[1].clone(), values: per_bucket };
                atoms.push((atom, rest / buckets as f64));
            }
        } else if atoms.is_empty() {
            return None;
        }
        atoms.sort_by(|a, b| compare(a.0.low(), b.0.low()));
        let total: f64 = atoms.iter().map(|(_, m)| m).sum();
        if total <= 0.0 {
            return None;
        }
        let mut cumulative = Vec::with_capacity(atoms.len());
        let mut sum = 0.0;
        for (_, mass) in &atoms {
            sum += mass / total;
            cumulative.push(sum);
        }
        let correlation = stats.correlation.unwrap_or(0.0).clamp(-1.0, 1.0);
        // ANALYZE ranks equal values by their position, so rows in random order already
        // correlate by the sum of the squared frequencies of the values; sorting the rest
        // adds the remainder.
        let ties: f64 = atoms.iter().map(|(a, m)| (m / total).powi(2) / a.values() as f64).sum();
        let shuffled = if ties >= 1.0 { 1.0 } else { ((1.0 - correlation.abs()) / (1.0 - ties)).clamp(0.0, 1.0) };
        let mut known: Vec<Value> = atoms
            .iter()
            .flat_map(|(a, _)| match a {
                Atom::Point(v) => vec![v.clone()],
                Atom::Bucket { low, high, .. } => vec![low.clone(), high.clone()],
            })
            .collect();
        known.extend(read(referenced).unwrap_or_default());
        known.sort_by(compare);
        known.dedup_by(|a, b| compare(a, b) == Ordering::Equal);
        Some(Distribution {
            known,
            null_frac: stats.null_frac,
            atoms: atoms.into_iter().map(|(a, _)| a).collect(),
            cumulative,
            unique: stats.is_unique(),
            order: Permutation::new(rows, shuffled, seed),
            shuffled,
            descending: correlation < 0.0,
            rows: rows.max(1),
        })
    }

    fn atom_at(&self, u: f64) -> (usize, f64) {
        let i = self.cumulative.partition_point(|c| *c <= u).min(self.atoms.len() - 1);
        let start = if i == 0 { 0.0 } else { self.cumulative[i - 1] };
        let mass = (self.cumulative[i] - start).max(f64::MIN_POSITIVE);
        (i, ((u - start) / mass).clamp(0.0, 1.0 - f64::EPSILON))
    }

    /// A foreign key's value for row `g`: a common value as it is (the referenced table has it),
    /// any other the key at the same place among `keys` (sorted) as the value among the column's
    /// own values, so the column keeps its distinct count and frequencies.
    /// A leader of a composite key that is also a foreign key: as [`Self::draw_key`], in the
    /// leader's order, with the row's place among the rows of the table (snapped keys can merge
    /// groups, so the member counts over the whole table).
    pub(super) fn draw_key<'k>(
        &self,
        g: u64,
        role: Role,
        keys: &'k [Value],
        places: &mut [u64],
        rng: &mut SmallRng,
    ) -> Option<&'k Value> {
        let u = match role {
            Role::Leader(n) => {
                places[n] = g - 1;
                (self.ranked(g) as f64 + 0.5) / self.rows as f64
            }
            _ => self.quantile(g, rng),
        };
        let (i, w) = self.atom_at(u);
        match &self.atoms[i] {
            Atom::Point(v) => {
                let at = keys.partition_point(|k| compare(k, v) == Ordering::Less);
                keys.get(at).or(keys.last())
            }
            atom => {
                let before: u64 = self.atoms[..i].iter().map(Atom::values).sum();
                let total: u64 = self.atoms.iter().map(Atom::values).sum();
                let ordinal = before + ((w * atom.values() as f64) as u64).min(atom.values() - 1);
                let at = (ordinal as f64 / total.max(1) as f64 * keys.len() as f64) as usize;
                keys.get(at.min(keys.len().saturating_sub(1)))
            }
        }
    }

    /// The value at quantile `u` of the non-NULL rows.
    fn at(&self, u: f64) -> Value {
        let (i, w) = self.atom_at(u);
        let atom = &self.atoms[i];
        let values = atom.values();
        atom.value(((w * values as f64) as u64).min(values - 1), false)
    }

    /// The value of the `k`-th row in order, and its place among the rows of that value, scaled
    /// to the table (the `n`-th of `m` rows at `n × rows / m`), so a key's member spreads its
    /// distinct values over its whole domain. Counted in whole rows: two rows never share one.
    fn grouped(&self, k: u64) -> (Value, u64) {
        let rows = self.rows as f64;
        let (i, w) = self.atom_at((k as f64 + 0.5) / rows);
        let atom = &self.atoms[i];
        let values = atom.values();
        let index = ((w * values as f64) as u64).min(values - 1);
        let start = if i == 0 { 0.0 } else { self.cumulative[i - 1] };
        let mass = (self.cumulative[i] - start) / values as f64;
        let first = ((start + mass * index as f64) * rows - 0.5).ceil().max(0.0) as u64;
        let group = (mass * rows).max(1.0);
        let within = k.saturating_sub(first) as f64;
        (atom.value(index, false), ((within * rows / group) as u64).min(self.rows - 1))
    }

    /// The `k`-th of `rows` distinct values in order (a unique column, a key's member).
    /// Numbers and instants: evenly spread over the domain's range, a step of at least one
    /// apart (beyond the range when it holds fewer values than rows). Text: the real values
    /// evenly spread, the gaps between them filled with the lower value and a suffix (C collation
    /// keeps it above it; `~` never occurs in the suffix's digits, so two never meet).
    fn distinct_at(&self, k: u64) -> Value {
        let (Some(first), Some(last)) = (self.known.first(), self.known.last()) else {
            return Value::Int(k as i64);
        };
        let rows = self.rows as f64;
        match (first, last) {
            (Value::Int(a), Value::Int(b)) => Value::Int(a + (k as f64 * ((b - a + 1) as f64 / rows).max(1.0)) as i64),
            (Value::Micros(a), Value::Micros(b)) => {
                Value::Micros(a + (k as f64 * ((b - a) as f64 / rows).max(1.0)) as i64)
            }
            (Value::Float(a), Value::Float(b)) => {
                Value::Float(a + k as f64 * ((b - a) / rows).max(f64::EPSILON * a.abs().max(1.0)))
            }
            (Value::Decimal(a, s), Value::Decimal(b, _)) => {
                let unit = 10f64.powi(-(*s as i32));
                Value::Decimal(a + k as f64 * ((b - a) / rows).max(unit), *s)
            }
            _ => {
                let gaps = self.known.len() as u64;
                let group = self.rows.div_ceil(gaps).max(1);
                let gap = (k / group).min(gaps - 1);
                let low = &self.known[gap as usize];
                Atom::Bucket { low: low.clone(), high: low.clone(), values: group }.value(k - gap * group, true)
            }
        }
    }

    /// Whether row `g` is NULL.
    pub(super) fn null(&self, rng: &mut SmallRng) -> bool {
        self.null_frac > 0.0 && rng.random::<f64>() < self.null_frac
    }

    /// The position of row `g` (1-based) in the sorted order, kept or displaced.
    fn quantile(&self, g: u64, rng: &mut SmallRng) -> f64 {
        let u =
            if rng.random::<f64>() < self.shuffled { rng.random::<f64>() } else { (g as f64 - 0.5) / self.rows as f64 };
        if self.descending {
            1.0 - u
        } else {
            u
        }
    }

    /// The rank of row `g` in the permuted order, as a quantile.
    fn ranked(&self, g: u64) -> u64 {
        let k = self.order.apply(g - 1);
        if self.descending {
            self.rows - 1 - k
        } else {
            k
        }
    }

    /// Row `g`'s value as `role` says, with the group place the leader of a key gives its
    /// member (`place`: written by a leader, read by a member).
    pub(super) fn draw(&self, g: u64, role: Role, place: &mut [u64], rng: &mut SmallRng) -> Value {
        match role {
            Role::Leader(n) => {
                let (value, within) = self.grouped(self.ranked(g));
                place[n] = within;
                value
            }
            Role::Member(n) => self.distinct_at(place[n]),
            Role::Free if self.unique => self.distinct_at(self.ranked(g)),
            Role::Free => self.at(self.quantile(g, rng)),
        }
    }
}

/// The scale of a `numeric(p, s)` column, else the most decimals among its values.
fn numeric_scale(type_name: &str, stats: &ColumnStats) -> usize {
    if let Some(scale) = type_name
        .strip_prefix("numeric(")
        .and_then(|r| r.strip_suffix(')'))
        .and_then(|r| r.split(',').nth(1))
        .and_then(|s| s.trim().parse().ok())
    {
        return scale;
    }
    stats
        .most_common_vals
        .iter()
        .chain(&stats.histogram_bounds)
        .map(|v| v.to_string().split_once('.').map(|(_, d)| d.trim_end_matches('"').len()).unwrap_or(0))
        .max()
        .unwrap_or(0)
}

/// A permutation of `0..n` that keeps all but a `shuffled` share of the positions: within every
/// run of 100 positions the first `shuffled × 100` are exchanged among all such positions of
/// the table (a Feistel network with cycle walking), the others stay.
#[derive(Debug, Clone)]
struct Permutation {
    n: u64,
    /// Displaced positions per run of [`RUN`].
    moved: u64,
    subset: u64,
    half_bits: u32,
    keys: [u64; 4],
}

const RUN: u64 = 100;

impl Permutation {
    fn new(n: u64, shuffled: f64, seed: u64) -> Permutation {
        let moved = (shuffled.clamp(0.0, 1.0) * RUN as f64).round() as u64;
        let subset = (n / RUN) * moved + (n % RUN).min(moved);
        let bits = 64 - subset.max(1).leading_zeros();
        let half_bits = bits.div_ceil(2).max(1);
        let keys = [1, 2, 3, 4].map(|i: u64| mix(seed ^ i.wrapping_mul(0x9E37_79B9_7F4A_7C15)));
        Permutation { n, moved, subset, half_bits, keys }
    }

    fn apply(&self, i: u64) -> u64 {
        let (run, offset) = (i / RUN, i % RUN);
        if offset >= self.moved || self.subset < 2 || i >= self.n {
            return i;
        }
        let mut j = run * self.moved + offset;
        // Cycle walking: the network permutes 0..4^half_bits; walk until back in the subset.
        loop {
            j = self.feistel(j);
            if j < self.subset {
                break;
            }
        }
        (j / self.moved) * RUN + j % self.moved
    }

    fn feistel(&self, x: u64) -> u64 {
        let mask = (1u64 << self.half_bits) - 1;
        let (mut left, mut right) = (x >> self.half_bits, x & mask);
        for key in self.keys {
            let next = left ^ (mix(right ^ key) & mask);
            left = right;
            right = next;
        }
        (left << self.half_bits) | right
    }
}

fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use serde_json::json;

    fn stats(row: serde_json::Value) -> ColumnStats {
        let text = format!("kind,schema,table,column,type,reltuples,relpages,relallvisible,stats\ncolumn,public,t,c,integer,,,,\"{}\"\n", row.to_string().replace('"', "\"\""));
        let s = crate::plan::snapshot::parse(std::path::Path::new("s.csv"), &text).expect("snapshot");
        s.tables[&("public".to_string(), "t".to_string())].columns["c"].clone()
    }

    #[test]
    fn a_permutation_is_a_bijection_that_keeps_the_unshuffled_share() {
        for (n, shuffled) in [(1_000u64, 0.3), (12_345, 1.0), (7, 0.5), (500, 0.0)] {
            let p = Permutation::new(n, shuffled, 42);
            let mut seen = vec![false; n as usize];
            let mut kept = 0;
            for i in 0..n {
                let k = p.apply(i);
                assert!(k < n && !seen[k as usize], "{n} {shuffled}: {i} -> {k}");
                seen[k as usize] = true;
                kept += u64::from(k == i);
            }
            assert!(kept as f64 >= (1.0 - shuffled) * n as f64 - RUN as f64, "{n} {shuffled}: {kept} kept");
        }
    }

    #[test]
    fn frequencies_nulls_and_distinct_values_follow_the_statistics() {
        let s = stats(json!({"null_frac": 0.1, "avg_width": 4, "n_distinct": 50,
            "most_common_vals": [7, 3], "most_common_freqs": [0.3, 0.2],
            "histogram_bounds": [10, 20, 30, 40, 50], "correlation": 0.0}));
        let d = Distribution::new(&s, &[], Encoding::Int4, "integer", 100_000, 1).expect("distribution");
        let mut rng = SmallRng::seed_from_u64(9);
        let (mut nulls, mut sevens, mut threes) = (0, 0, 0);
        let mut distinct = std::collections::BTreeSet::new();
        for g in 1..=100_000 {
            if d.null(&mut rng) {
                nulls += 1;
                continue;
            }
            let Value::Int(v) = d.draw(g, Role::Free, &mut [], &mut rng) else { panic!() };
            sevens += u32::from(v == 7);
            threes += u32::from(v == 3);
            assert!(v == 7 || v == 3 || (10..=50).contains(&v), "{v}");
            distinct.insert(v);
        }
        let share = |n: u32| f64::from(n) / 100_000.0;
        assert!((share(nulls) - 0.1).abs() < 0.01, "{nulls}");
        assert!((share(sevens) - 0.3).abs() < 0.01 && (share(threes) - 0.2).abs() < 0.01, "{sevens} {threes}");
        assert!((40..=52).contains(&distinct.len()), "{} distinct", distinct.len());
    }

    #[test]
    fn correlation_orders_the_rows_and_unique_columns_stay_unique() {
        let s = stats(json!({"null_frac": 0, "avg_width": 4, "n_distinct": -1,
            "histogram_bounds": [1, 250, 500, 750, 1000], "correlation": 0.9}));
        let d = Distribution::new(&s, &[], Encoding::Int4, "integer", 10_000, 1).expect("distribution");
        let mut rng = SmallRng::seed_from_u64(1);
        let values: Vec<i64> = (1..=10_000)
            .map(|g| match d.draw(g, Role::Free, &mut [], &mut rng) {
                Value::Int(v) => v,
                v => panic!("{v:?}"),
            })
            .collect();
        let unique: std::collections::BTreeSet<_> = values.iter().collect();
        assert_eq!(unique.len(), 10_000, "more rows than the domain spans: still distinct");
        // Pearson correlation of position and value rank, as ANALYZE computes it.
        let mut ranked: Vec<(i64, usize)> = values.iter().copied().zip(0..).collect();
        ranked.sort();
        let mut rank = vec![0f64; values.len()];
        for (r, (_, pos)) in ranked.iter().enumerate() {
            rank[*pos] = r as f64;
        }
        let n = values.len() as f64;
        let mean = (n - 1.0) / 2.0;
        let (mut cov, mut var) = (0.0, 0.0);
        for (pos, r) in rank.iter().enumerate() {
            cov += (pos as f64 - mean) * (r - mean);
            var += (pos as f64 - mean).powi(2);
        }
        let c = cov / var;
        assert!((c - 0.9).abs() < 0.05, "correlation {c}");
    }

    #[test]
    fn a_composite_key_s_member_is_distinct_within_each_group_of_its_leader() {
        let leader = stats(json!({"null_frac": 0, "avg_width": 3, "n_distinct": 3,
            "most_common_vals": ["EWR", "JFK", "LGA"], "most_common_freqs": [0.34, 0.33, 0.33], "correlation": 1}));
        let member = stats(json!({"null_frac": 0, "avg_width": 8, "n_distinct": 8_000,
            "histogram_bounds": ["2013-01-01T05:00:00+00:00", "2013-06-01T05:00:00+00:00", "2014-01-01T05:00:00+00:00"], "correlation": 0.3}));
        let rows = 24_000;
        let l = Distribution::new(&leader, &[], Encoding::Text, "text", rows, 1).expect("leader");
        let m = Distribution::new(&member, &[], Encoding::Timestamptz, "timestamp with time zone", rows, 2)
            .expect("member");
        let mut rng = SmallRng::seed_from_u64(1);
        let mut seen = std::collections::BTreeSet::new();
        let mut place = [0u64];
        for g in 1..=rows {
            let (Value::Text(a), Value::Micros(b)) =
                (l.draw(g, Role::Leader(0), &mut place, &mut rng), m.draw(g, Role::Member(0), &mut place, &mut rng))
            else {
                panic!()
            };
            assert!(seen.insert((a, b)), "row {g} repeats a key");
        }
    }

    #[test]
    fn values_are_read_in_the_column_s_domain() {
        assert_eq!(
            value_of(&json!("2013-01-01T05:00:00+00:00"), Encoding::Timestamptz, 0),
            Some(Value::Micros(1_357_016_400_000_000))
        );
        assert_eq!(value_of(&json!("2013-01-01"), Encoding::Date, 0), Some(Value::Micros(1_356_998_400_000_000)));
        assert_eq!(value_of(&json!(12.5), Encoding::Numeric, 2), Some(Value::Decimal(12.5, 2)));
        assert_eq!(value_of(&json!("N14228"), Encoding::Text, 0), Some(Value::Text("N14228".into())));
        assert_eq!(value_of(&json!("x"), Encoding::Int4, 0), None);
    }
}
