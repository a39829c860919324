//! What an edit of the scale spec would do: plans are compared on fixtures of that size, so a
//! smaller table hides a regression a production-sized one shows.

use super::item::{Effect, Item};
use crate::plan::scale::ScaleSpec;
use crate::plan::scale::{Generator, TableSpec};
use std::collections::BTreeSet;

/// How a table's columns are generated, without where the spec says it.
fn generators(table: &TableSpec) -> Vec<(&String, &Generator, f64)> {
    table.columns.iter().map(|(name, c)| (name, &c.generator, c.null_fraction)).collect()
}

/// Tables added, removed, resized or generated differently. `new_tables` are the tables the
/// change creates: their entries were applied from the head.
pub fn items(trusted: &ScaleSpec, proposed: &ScaleSpec, new_tables: &BTreeSet<String>) -> Vec<Item> {
    let names: BTreeSet<&String> = trusted.tables.keys().chain(proposed.tables.keys()).collect();
    let mut out = Vec::new();
    for table in names {
        let item = match (trusted.table(table), proposed.table(table)) {
            (None, Some(t)) if new_tables.contains(table) => Item::new(
                Effect::Changes,
                format!(
                    "fill new table `{table}` with {} rows (applied in this review: the base has no such table)",
                    t.rows
                ),
                Some(t.line),
            ),
            (None, Some(t)) => {
                Item::new(Effect::Tightens, format!("fill `{table}` with {} rows", t.rows), Some(t.line))
            }
            (Some(t), None) => Item::new(
                Effect::Relaxes,
                format!("leave `{table}` empty (was {} rows): plans on it would not be production-sized", t.rows),
                None,
            ),
            (Some(a), Some(b)) if a.rows != b.rows => Item::new(
                if b.rows < a.rows { Effect::Relaxes } else { Effect::Tightens },
                format!("fill `{table}` with {} rows instead of {}", b.rows, a.rows),
                Some(b.line),
            ),
            (Some(a), Some(b)) if generators(a) != generators(b) => {
                Item::new(Effect::Changes, format!("generate the columns of `{table}` differently"), Some(b.line))
            }
            _ => continue,
        };
        out.push(item);
    }
    out
}
