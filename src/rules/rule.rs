//! What a rule is to the engine: its metadata, a check per statement, a fold per file.

use super::context::{Context, Facts, SourceFile};
use super::meta::RuleMeta;
use crate::finding::Finding;
use crate::schema::Schema;

/// A rule. SQL rules implement [`Rule::check`]; rules whose findings come from elsewhere
/// (git history, plans, the freeze calendar) carry only their metadata.
pub trait Rule: Sync + Send {
    fn meta(&self) -> &'static RuleMeta;

    /// Checks one statement of a migration or query file, pushing what it finds.
    fn check(&self, _cx: &Context, _out: &mut Vec<Finding>) {}

    /// Whether [`Rule::check`] also sees statements that do nothing (`IF [NOT] EXISTS` finding
    /// nothing to do): only the rules about the locks such a statement still takes.
    fn checks_no_ops(&self) -> bool {
        false
    }

    /// Called once per migration file after all its statements were checked, with the file's
    /// findings: a rule whose problem belongs to the file, a transaction or a held lock folds its
    /// per-statement findings into one here ([`super::grouping::fold`]).
    fn finish_file(&self, _file: &SourceFile, _findings: &mut Vec<Finding>) {}

    /// Called once after the whole history was replayed, with the migrations' findings and the
    /// schema it ends with (what the queries run against): a rule whose verdict on a statement
    /// depends on what later migrations do settles its findings here (those it marked with
    /// `Finding::settle`). Not called for a lone file (`lint --down`): its findings stand as
    /// they were made.
    fn finish_history(&self, _end: &Schema, _facts: &Facts, _findings: &mut Vec<Finding>) {}
}
