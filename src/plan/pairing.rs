//! Which statement of a query source is which on the base side. A source whose text changed
//! between base and head (a query file; SQL in application code) is split into statements on
//! both sides; a statement whose text is the same on both sides pairs with itself, and between
//! two such anchors the changed statements pair in order. A head statement left over is new.
//! Each head statement then knows what to plan on the base fixture: itself, its base text, or
//! nothing.

pub use super::explain::OnBase;
use super::explain::{parse_queries, Query};
use super::sources::{BaseText, QuerySource};
use crate::error::Result;
use std::path::Path;

/// The statements of `source` to plan, each with its base counterpart.
pub fn queries_of(source: &QuerySource) -> Result<Vec<Query>> {
    let path = Path::new(&source.file);
    let mut head = parse_queries(path, &source.file, &source.text)?;
    match &source.base {
        BaseText::Same => {}
        BaseText::Absent => head.iter_mut().for_each(|q| q.on_base = OnBase::New),
        BaseText::Changed(text) => {
            // A base text that no longer splits is planned as new: only the head is the change's.
            let base = parse_queries(path, &source.file, text).unwrap_or_default();
            let pairs = pair(
                &base.iter().map(|q| q.text.as_str()).collect::<Vec<_>>(),
                &head.iter().map(|q| q.text.as_str()).collect::<Vec<_>>(),
            );
            for (query, counterpart) in head.iter_mut().zip(pairs) {
                query.on_base = match counterpart {
                    Some(i) if same_text(&base[i].text, &query.text) => OnBase::Same,
                    Some(i) => OnBase::Changed(Box::new(base[i].clone())),
                    None => OnBase::New,
                };
            }
        }
    }
    Ok(head)
}

/// Statements compare by their words: whitespace and line breaks are not a change.
fn same_text(a: &str, b: &str) -> bool {
    a.split_whitespace().eq(b.split_whitespace())
}

/// For each head statement, the base statement it pairs with: equal texts by their longest
/// common subsequence, then the statements between two equal ones in order.
pub fn pair(base: &[&str], head: &[&str]) -> Vec<Option<usize>> {
    let (n, m) = (base.len(), head.len());
    let mut table = vec![vec![0usize; m + 1]; n + 1];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            table[i][j] = if same_text(base[i], head[j]) {
                table[i + 1][j + 1] + 1
            } else {
                table[i + 1][j].max(table[i][j + 1])
            };
        }
    }
    let mut anchors = Vec::new();
    let (mut i, mut j) = (0, 0);
    while i < n && j < m {
        if same_text(base[i], head[j]) {
            anchors.push((i, j));
            i += 1;
            j += 1;
        } else if table[i + 1][j] >= table[i][j + 1] {
            i += 1;
        } else {
            j += 1;
        }
    }
    anchors.push((n, m));
    let mut out = vec![None; m];
    let (mut from_base, mut from_head) = (0, 0);
    for (bi, hj) in anchors {
        for (k, slot) in out[from_head..hj].iter_mut().enumerate() {
            *slot = (from_base + k < bi).then_some(from_base + k);
        }
        if hj < m {
            out[hj] = Some(bi);
        }
        (from_base, from_head) = (bi + 1, hj + 1);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_statements_anchor_and_changed_ones_pair_in_order() {
        let base = ["SELECT 1", "SELECT a FROM t WHERE a = $1", "SELECT 3"];
        let head = ["SELECT 1", "SELECT a FROM t WHERE a = $1 OR b > $2", "SELECT 3", "SELECT 4"];
        assert_eq!(pair(&base, &head), [Some(0), Some(1), Some(2), None]);
    }

    #[test]
    fn an_inserted_statement_is_new_and_the_others_keep_their_partners() {
        let base = ["SELECT a FROM t", "SELECT b FROM t"];
        let head = ["SELECT a FROM t", "SELECT new FROM t", "SELECT b  FROM\n t"];
        assert_eq!(pair(&base, &head), [Some(0), None, Some(1)], "whitespace is not a change");
        assert_eq!(pair(&[], &head), [None, None, None]);
        assert_eq!(pair(&base, &[]), Vec::<Option<usize>>::new());
    }

    #[test]
    fn a_changed_file_plans_its_base_text_on_base_and_a_new_statement_nowhere() {
        let source = QuerySource::compared(
            "queries/orders.sql".into(),
            "SELECT 1;\n-- changed\nSELECT id FROM orders WHERE customer_id = $1 OR total > $2;\nSELECT 2;\n".into(),
            Some("SELECT 1;\nSELECT id FROM orders WHERE customer_id = $1;\n".into()),
        );
        let queries = queries_of(&source).expect("queries");
        assert_eq!(queries.len(), 3);
        assert!(matches!(queries[0].on_base, OnBase::Same));
        let OnBase::Changed(base) = &queries[1].on_base else { panic!("changed: {:?}", queries[1].on_base) };
        assert_eq!(base.text, "SELECT id FROM orders WHERE customer_id = $1");
        assert_eq!((base.line, queries[1].line), (2, 3), "each side keeps its own lines");
        assert_eq!(base.param_columns.len(), 1, "the base text's own parameters");
        assert!(matches!(queries[2].on_base, OnBase::New));
        let new = QuerySource::compared("q.sql".into(), "SELECT 1;".into(), None);
        assert!(queries_of(&new).expect("queries").iter().all(|q| matches!(q.on_base, OnBase::New)));
    }
}
