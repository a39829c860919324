//! The stage of `sluice check` that finds the `sluice:ignore` directives the change adds: what
//! they silence is reported apart ([`crate::finding::Report::suppressed`]), counted for nothing,
//! and shown by every format, so a reviewer sees what the change waved through and why.

use super::revisions::Revisions;
use crate::finding::Finding;
use crate::git;
use std::collections::HashMap;

/// The findings of `suppressed` whose directive the base revision's version of the file does not
/// have (a new file has none). A base version that cannot be read counts as not having it: the
/// suppression is shown rather than hidden.
pub(super) fn added_by_change(revisions: &Revisions, suppressed: Vec<Finding>) -> Vec<Finding> {
    let base = revisions.base_side();
    let mut base_texts: HashMap<String, Option<String>> = HashMap::new();
    suppressed
        .into_iter()
        .filter(|finding| {
            let Some(suppression) = &finding.suppression else { return false };
            let text = base_texts
                .entry(finding.file.clone())
                .or_insert_with(|| git::read_file(&revisions.repo, &base, &finding.file).ok().flatten());
            !text.as_deref().is_some_and(|text| text.contains(&suppression.directive))
        })
        .collect()
}
