//! Comparing two EXPLAIN (FORMAT JSON) plans node by node and relation by relation, and
//! rendering them as an indented tree diff with the changed nodes marked.

use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

#[derive(Debug, Clone, Copy)]
pub struct Thresholds {
    /// A relation read by Seq Scan with at least this many rows is a regression (if it was indexed).
    pub seq_scan_rows: u64,
    pub cost_ratio_error: f64,
    pub cost_ratio_warning: f64,
    /// A head plan estimated below this cost is cheap whatever the ratio (a fraction of a
    /// millisecond): a cost ratio above `cost_ratio_error` is then a warning, not a regression.
    pub cost_floor: f64,
    /// A query with no base plan estimated above this cost is too expensive on its own.
    pub cost_limit: f64,
}

/// Costs within this factor of each other are the same: an index swapped for another at the
/// same cost is no plan change worth a warning.
pub const SAME_COST: f64 = 1.1;

impl Default for Thresholds {
    fn default() -> Self {
        Thresholds {
            seq_scan_rows: 100_000,
            cost_ratio_error: 10.0,
            cost_ratio_warning: 2.0,
            cost_floor: 1_000.0,
            cost_limit: 100_000.0,
        }
    }
}

/// What the server says about the head side, gathered before comparing.
#[derive(Debug, Clone, Default)]
pub struct HeadFacts {
    /// Estimated rows (`reltuples`) of each relation named in either plan.
    pub relation_rows: BTreeMap<String, f64>,
    /// Indexes the base plan used that no longer exist on head.
    pub missing_indexes: BTreeSet<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    Seq,
    Index,
    Other,
}

/// How a plan reads one relation.
#[derive(Debug, Clone, PartialEq)]
pub struct Scan {
    pub relation: String,
    pub alias: String,
    pub node_type: String,
    pub indexes: Vec<String>,
    /// Under ANALYZE: rows the node returned and rows its filter threw away (per loop).
    pub actual_rows: Option<f64>,
    pub removed_by_filter: Option<f64>,
    pub loops: Option<f64>,
}

impl Scan {
    pub fn access(&self) -> Access {
        match self.node_type.as_str() {
            "Seq Scan" => Access::Seq,
            "Index Scan" | "Index Only Scan" | "Bitmap Heap Scan" => Access::Index,
            _ => Access::Other,
        }
    }

    pub fn describe(&self) -> String {
        match self.indexes.as_slice() {
            [] => self.node_type.clone(),
            list => format!("{} using {}", self.node_type, list.join(", ")),
        }
    }
}

fn text(node: &Value, key: &str) -> Option<String> {
    node.get(key).and_then(Value::as_str).map(str::to_string)
}

fn number(node: &Value, key: &str) -> Option<f64> {
    node.get(key).and_then(Value::as_f64)
}

fn children(node: &Value) -> impl Iterator<Item = &Value> {
    node.get("Plans").and_then(Value::as_array).into_iter().flatten()
}

/// The `Plan` object of an EXPLAIN result (`{"Plan": …}`), or the node itself.
pub fn root(plan: &Value) -> &Value {
    plan.get("Plan").unwrap_or(plan)
}

pub fn total_cost(plan: &Value) -> f64 {
    number(root(plan), "Total Cost").unwrap_or(0.0)
}

fn bitmap_indexes(node: &Value, out: &mut Vec<String>) {
    if let Some(index) = text(node, "Index Name") {
        out.push(index);
    }
    for child in children(node) {
        if matches!(text(child, "Node Type").as_deref(), Some("Bitmap Index Scan" | "BitmapAnd" | "BitmapOr")) {
            bitmap_indexes(child, out);
        }
    }
}

/// Every relation scan in the plan, in plan order.
pub fn scans(plan: &Value) -> Vec<Scan> {
    fn walk(node: &Value, out: &mut Vec<Scan>) {
        if let Some(relation) = text(node, "Relation Name") {
            let node_type = text(node, "Node Type").unwrap_or_default();
            let mut indexes = Vec::new();
            if node_type == "Bitmap Heap Scan" {
                bitmap_indexes(node, &mut indexes);
            } else if let Some(index) = text(node, "Index Name") {
                indexes.push(index);
            }
            out.push(Scan {
                alias: text(node, "Alias").unwrap_or_else(|| relation.clone()),
                relation,
                node_type,
                indexes,
                actual_rows: number(node, "Actual Rows"),
                removed_by_filter: number(node, "Rows Removed by Filter"),
                loops: number(node, "Actual Loops"),
            });
        }
        for child in children(node) {
            walk(child, out);
        }
    }
    let mut out = Vec::new();
    walk(root(plan), &mut out);
    out
}

/// Every index any node of the plan uses.
pub fn used_indexes(plan: &Value) -> BTreeSet<String> {
    fn walk(node: &Value, out: &mut BTreeSet<String>) {
        if let Some(index) = text(node, "Index Name") {
            out.insert(index);
        }
        for child in children(node) {
            walk(child, out);
        }
    }
    let mut out = BTreeSet::new();
    walk(root(plan), &mut out);
    out
}

pub fn relations(plan: &Value) -> BTreeSet<String> {
    scans(plan).into_iter().map(|s| s.relation).collect()
}

fn join_methods(plan: &Value) -> Vec<String> {
    fn walk(node: &Value, out: &mut Vec<String>) {
        if let Some(t) = text(node, "Node Type") {
            if matches!(t.as_str(), "Nested Loop" | "Hash Join" | "Merge Join") {
                out.push(t);
            }
        }
        for child in children(node) {
            walk(child, out);
        }
    }
    let mut out = Vec::new();
    walk(root(plan), &mut out);
    out
}

/// Sorts and hashes that went to disk (only known under ANALYZE).
pub fn spills(plan: &Value) -> Vec<String> {
    fn walk(node: &Value, out: &mut Vec<String>) {
        let t = text(node, "Node Type").unwrap_or_default();
        if text(node, "Sort Space Type").as_deref() == Some("Disk") {
            let method = text(node, "Sort Method").unwrap_or_default();
            out.push(format!("{t} ({method}, {} kB on disk)", number(node, "Sort Space Used").unwrap_or(0.0)));
        }
        if number(node, "Hash Batches").is_some_and(|b| b > 1.0) {
            out.push(format!("{t} ({} batches)", number(node, "Hash Batches").unwrap_or(0.0)));
        }
        for child in children(node) {
            walk(child, out);
        }
    }
    let mut out = Vec::new();
    walk(root(plan), &mut out);
    out
}

/// What a comparison found, as sentences; the caller turns each group into one finding.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Verdict {
    /// `plan-regression` (error).
    pub regressions: Vec<String>,
    /// `plan-cost-increase` (warning).
    pub cost_increases: Vec<String>,
    /// `index-inefficient` (warning).
    pub inefficient: Vec<String>,
    /// `plan-expensive` (error): a query with no base plan, expensive on its own.
    pub expensive: Vec<String>,
    pub base_cost: f64,
    pub head_cost: f64,
}

fn rows_text(rows: f64) -> String {
    crate::finding::group_digits(rows.max(0.0).round() as u64)
}

pub fn format_count(n: f64) -> String {
    rows_text(n)
}

/// Compares the base and head plans of one query. A Seq Scan of a large relation that the base
/// read through an index is a regression whatever the costs; a cost ratio is one only when the
/// head plan is expensive in absolute terms (`cost_floor`); a plan change (another scan, index
/// or join method, a dropped index) is a warning only when it costs more (beyond [`SAME_COST`]).
pub fn compare(base: &Value, head: &Value, facts: &HeadFacts, t: &Thresholds) -> Verdict {
    let mut v = Verdict { base_cost: total_cost(base), head_cost: total_cost(head), ..Verdict::default() };
    let costlier = v.head_cost > v.base_cost * SAME_COST;
    let base_scans = scans(base);
    let head_scans = scans(head);
    let mut seen = BTreeSet::new();
    for b in &base_scans {
        let h = head_scans
            .iter()
            .find(|h| h.relation == b.relation && h.alias == b.alias)
            .or_else(|| head_scans.iter().find(|h| h.relation == b.relation));
        let Some(h) = h else { continue };
        if !seen.insert((b.relation.clone(), b.alias.clone())) {
            continue;
        }
        let rows = facts.relation_rows.get(&h.relation).copied().unwrap_or(0.0);
        let name = if b.alias != b.relation { format!("{} ({})", b.relation, b.alias) } else { b.relation.clone() };
        if b.access() == Access::Index && h.access() == Access::Seq && rows >= t.seq_scan_rows as f64 {
            v.regressions.push(format!(
                "{name} was read by {} on base and is read by Seq Scan on head ({} rows)",
                b.describe(),
                rows_text(rows)
            ));
        } else if costlier && (b.node_type != h.node_type || b.indexes != h.indexes) {
            v.cost_increases.push(format!("{name}: {} on base, {} on head", b.describe(), h.describe()));
        }
    }
    // A dropped index is an outage only through what replaces it: a Seq Scan on a large relation
    // or a cost explosion, both judged above and below. Otherwise (another index serves the
    // query at a higher cost) it is a plan change to look at, not a gate failure.
    let head_indexes = used_indexes(head);
    for index in facts.missing_indexes.iter().filter(|_| costlier) {
        let instead = if head_indexes.is_empty() {
            "the head plan uses no index".to_string()
        } else {
            format!("the head plan uses {}", head_indexes.iter().cloned().collect::<Vec<_>>().join(", "))
        };
        v.cost_increases.push(format!("the base plan used index {index}, which no longer exists on head; {instead}"));
    }
    let (bj, hj) = (join_methods(base), join_methods(head));
    if bj != hj && costlier {
        v.cost_increases.push(format!(
            "join methods change: {} on base, {} on head",
            if bj.is_empty() { "none".into() } else { bj.join(", ") },
            if hj.is_empty() { "none".into() } else { hj.join(", ") }
        ));
    }
    let base_spills: BTreeSet<String> = spills(base).into_iter().collect();
    for spill in spills(head) {
        if !base_spills.contains(&spill) {
            v.cost_increases.push(format!("{spill} spills to disk on head"));
        }
    }
    if v.base_cost > 0.0 {
        let ratio = v.head_cost / v.base_cost;
        let sentence =
            format!("estimated cost grows {ratio:.1}× ({:.2} on base, {:.2} on head)", v.base_cost, v.head_cost);
        if ratio > t.cost_ratio_error && v.head_cost >= t.cost_floor {
            v.regressions.push(sentence);
        } else if ratio > t.cost_ratio_error {
            v.cost_increases
                .push(format!("{sentence}, a cheap plan still (below the cost floor of {:.0})", t.cost_floor));
        } else if ratio > t.cost_ratio_warning {
            v.cost_increases.push(sentence);
        }
    }
    v.inefficient = inefficient_scans(head);
    v
}

/// Judges a query with no base plan (new on head, or not planned on base) on its own: a large
/// relation read by Seq Scan, or an estimated cost above `cost_limit`.
pub fn absolute(head: &Value, facts: &HeadFacts, t: &Thresholds) -> Verdict {
    let mut v = Verdict { head_cost: total_cost(head), ..Verdict::default() };
    let mut seen = BTreeSet::new();
    for s in scans(head) {
        let rows = facts.relation_rows.get(&s.relation).copied().unwrap_or(0.0);
        if s.access() == Access::Seq && rows >= t.seq_scan_rows as f64 && seen.insert(s.relation.clone()) {
            v.expensive.push(format!("the head plan reads {} by Seq Scan ({} rows)", s.relation, rows_text(rows)));
        }
    }
    if v.head_cost > t.cost_limit {
        v.expensive.push(format!(
            "the head plan's estimated cost is {:.2}, above the limit of {:.0} ([plan] cost_limit)",
            v.head_cost, t.cost_limit
        ));
    }
    v.inefficient = inefficient_scans(head);
    v
}

/// Index scans whose filter throws away more than 90% of what the index fetched: the index
/// serves only a prefix of the predicate.
pub fn inefficient_scans(plan: &Value) -> Vec<String> {
    let mut out = Vec::new();
    for s in scans(plan) {
        let (Some(kept), Some(removed)) = (s.actual_rows, s.removed_by_filter) else {
            continue;
        };
        let loops = s.loops.unwrap_or(1.0).max(1.0);
        let fetched = kept + removed;
        if s.access() == Access::Index && fetched > 0.0 && removed / fetched > 0.9 && removed * loops >= 1000.0 {
            out.push(format!(
                "{} on {}: the filter removes {:.1}% of the rows the index fetched ({} of {} per loop); the index serves only part of the predicate",
                s.describe(),
                s.relation,
                100.0 * removed / fetched,
                rows_text(removed),
                rows_text(fetched)
            ));
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Rendering.

/// One plan node as a line of the tree.
#[derive(Debug, Clone, PartialEq)]
pub struct Line {
    pub depth: usize,
    /// What identifies the node across plans (type, index, relation).
    pub key: String,
    /// Estimates (and actuals under ANALYZE).
    pub detail: String,
}

pub fn lines(plan: &Value) -> Vec<Line> {
    fn walk(node: &Value, depth: usize, out: &mut Vec<Line>) {
        let mut key = text(node, "Node Type").unwrap_or_else(|| "?".into());
        if let Some(strategy) = text(node, "Strategy").filter(|s| s != "Plain") {
            key = format!("{key} ({strategy})");
        }
        if let Some(index) = text(node, "Index Name") {
            key.push_str(&format!(" using {index}"));
        }
        if let Some(relation) = text(node, "Relation Name") {
            key.push_str(&format!(" on {relation}"));
            if let Some(alias) = text(node, "Alias").filter(|a| *a != relation) {
                key.push_str(&format!(" {alias}"));
            }
        }
        let mut detail = format!(
            "cost={:.2}..{:.2} rows={}",
            number(node, "Startup Cost").unwrap_or(0.0),
            number(node, "Total Cost").unwrap_or(0.0),
            rows_text(number(node, "Plan Rows").unwrap_or(0.0))
        );
        if let Some(ms) = number(node, "Actual Total Time") {
            detail
                .push_str(&format!(" actual={ms:.3}ms rows={}", rows_text(number(node, "Actual Rows").unwrap_or(0.0))));
            if let Some(removed) = number(node, "Rows Removed by Filter") {
                detail.push_str(&format!(" removed-by-filter={}", rows_text(removed)));
            }
        }
        out.push(Line { depth, key, detail });
        for child in children(node) {
            walk(child, depth + 1, out);
        }
    }
    let mut out = Vec::new();
    walk(root(plan), 0, &mut out);
    out
}

/// Both plans as one indented tree: `  ` unchanged, `- ` only on base, `+ ` only on head
/// (a changed node shows as its base line then its head line).
pub fn render_diff(base: &Value, head: &Value) -> String {
    let a = lines(base);
    let b = lines(head);
    // Nodes match by what they are, not how deep: a Sort inserted above a join moves the join down.
    let same = |x: &Line, y: &Line| x.key == y.key;
    // Longest common subsequence over node keys; plans are small.
    let mut table = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            table[i][j] =
                if same(&a[i], &b[j]) { table[i + 1][j + 1] + 1 } else { table[i + 1][j].max(table[i][j + 1]) };
        }
    }
    let mut out = String::from("plan diff (- base, + head):\n");
    let line = |mark: &str, l: &Line| format!("{mark} {}{}  ({})\n", "  ".repeat(l.depth), l.key, l.detail);
    let (mut i, mut j) = (0, 0);
    while i < a.len() || j < b.len() {
        if i < a.len() && j < b.len() && same(&a[i], &b[j]) {
            // The same node: its estimates on both sides when they differ.
            let both = if a[i].detail == b[j].detail {
                b[j].clone()
            } else {
                Line { detail: format!("base {}; head {}", a[i].detail, b[j].detail), ..b[j].clone() }
            };
            out.push_str(&line(" ", &both));
            i += 1;
            j += 1;
        } else if j < b.len() && (i == a.len() || table[i][j + 1] >= table[i + 1][j]) {
            out.push_str(&line("+", &b[j]));
            j += 1;
        } else {
            out.push_str(&line("-", &a[i]));
            i += 1;
        }
    }
    // Removals before additions at the same spot read better; the LCS walk above emits
    // additions first when tied, so reorder each run of changes.
    reorder_runs(&out)
}

fn reorder_runs(text: &str) -> String {
    let mut out = Vec::new();
    let mut minus = Vec::new();
    let mut plus = Vec::new();
    let flush = |out: &mut Vec<String>, minus: &mut Vec<String>, plus: &mut Vec<String>| {
        out.append(minus);
        out.append(plus);
    };
    for l in text.lines() {
        if l.starts_with('-') {
            minus.push(l.to_string());
        } else if l.starts_with('+') {
            plus.push(l.to_string());
        } else {
            flush(&mut out, &mut minus, &mut plus);
            out.push(l.to_string());
        }
    }
    flush(&mut out, &mut minus, &mut plus);
    out.join("\n")
}

/// One plan as an indented tree (for queries with no base plan).
pub fn render_tree(plan: &Value) -> String {
    lines(plan)
        .iter()
        .map(|l| format!("  {}{}  ({})", "  ".repeat(l.depth), l.key, l.detail))
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn index_scan(index: &str, cost: f64) -> Value {
        json!({"Plan": {"Node Type": "Index Scan", "Relation Name": "orders", "Alias": "orders", "Index Name": index, "Total Cost": cost}})
    }

    fn facts(rows: f64) -> HeadFacts {
        HeadFacts { relation_rows: [("orders".to_string(), rows)].into(), ..HeadFacts::default() }
    }

    #[test]
    fn a_large_ratio_on_a_cheap_plan_is_a_warning_and_on_an_expensive_one_a_regression() {
        let t = Thresholds::default();
        let cheap = compare(&index_scan("a_idx", 4.6), &index_scan("b_idx", 86.0), &facts(200_000.0), &t);
        assert!(cheap.regressions.is_empty(), "{cheap:?}");
        assert!(cheap.cost_increases.iter().any(|s| s.contains("18.7×") && s.contains("below the cost floor of 1000")));
        let dear = compare(&index_scan("a_idx", 460.0), &index_scan("b_idx", 8_600.0), &facts(200_000.0), &t);
        assert_eq!(dear.regressions, ["estimated cost grows 18.7× (460.00 on base, 8600.00 on head)"]);
    }

    #[test]
    fn an_index_swap_at_the_same_cost_is_no_warning() {
        let t = Thresholds::default();
        let mut f = facts(200_000.0);
        f.missing_indexes.insert("a_idx".into());
        let same = compare(&index_scan("a_idx", 5_000.0), &index_scan("b_idx", 5_200.0), &f, &t);
        assert_eq!(same, Verdict { base_cost: 5_000.0, head_cost: 5_200.0, ..Verdict::default() });
        let dearer = compare(&index_scan("a_idx", 5_000.0), &index_scan("b_idx", 7_000.0), &f, &t);
        assert_eq!(dearer.cost_increases.len(), 2, "the swap and the dropped index: {dearer:?}");
    }

    #[test]
    fn an_index_path_lost_to_a_seq_scan_of_a_large_table_is_a_regression_whatever_the_cost() {
        let seq = json!({"Plan": {"Node Type": "Seq Scan", "Relation Name": "orders", "Alias": "orders", "Total Cost": 900.0}});
        let v = compare(&index_scan("a_idx", 400.0), &seq, &facts(200_000.0), &Thresholds::default());
        assert_eq!(v.regressions.len(), 1, "{v:?}");
        let small = compare(&index_scan("a_idx", 400.0), &seq, &facts(2_000.0), &Thresholds::default());
        assert!(small.regressions.is_empty());
    }

    #[test]
    fn an_unchanged_node_shows_both_estimates_when_they_differ() {
        let plan = |index: &str, cost: f64| {
            json!({"Plan": {"Node Type": "Limit", "Total Cost": cost, "Plan Rows": 20, "Plans": [
                {"Node Type": "Index Scan", "Relation Name": "orders", "Index Name": index, "Total Cost": cost, "Plan Rows": 20}
            ]}})
        };
        let diff = render_diff(&plan("a_idx", 4.6), &plan("b_idx", 86.0));
        assert_eq!(
            diff.lines().collect::<Vec<_>>(),
            [
                "plan diff (- base, + head):",
                "  Limit  (base cost=0.00..4.60 rows=20; head cost=0.00..86.00 rows=20)",
                "-   Index Scan using a_idx on orders  (cost=0.00..4.60 rows=20)",
                "+   Index Scan using b_idx on orders  (cost=0.00..86.00 rows=20)",
            ]
        );
        let same = render_diff(&plan("a_idx", 4.6), &plan("a_idx", 4.6));
        assert!(same.lines().nth(1).is_some_and(|l| l == "  Limit  (cost=0.00..4.60 rows=20)"), "{same}");
    }

    #[test]
    fn a_query_with_no_base_plan_is_judged_by_seq_scans_and_the_cost_limit() {
        let t = Thresholds::default();
        let seq = json!({"Plan": {"Node Type": "Seq Scan", "Relation Name": "orders", "Alias": "orders", "Total Cost": 3_000.0}});
        assert_eq!(
            absolute(&seq, &facts(200_000.0), &t).expensive,
            ["the head plan reads orders by Seq Scan (200,000 rows)"]
        );
        assert!(absolute(&seq, &facts(2_000.0), &t).expensive.is_empty());
        let dear = index_scan("a_idx", 250_000.0);
        assert_eq!(
            absolute(&dear, &facts(2_000.0), &t).expensive,
            ["the head plan's estimated cost is 250000.00, above the limit of 100000 ([plan] cost_limit)"]
        );
    }
}
