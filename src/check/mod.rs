//! `sluice check`, the pull-request gate: what a change between two revisions does to the
//! migrations, queries and policies, read from git (no checkout, no `git` process).
//!
//! The schema is built from the base side's whole migration history (what production has
//! run, edits and deletions on the head side notwithstanding), then the migrations the change
//! adds are linted in order, then the added or modified query files, and the unchanged query
//! files whose tables an added migration changes. History findings (`migration-edited`, …)
//! come from [`crate::git::history`]. Everything ends up in one [`Report`].
//!
//! [`run`] is a pipeline; each stage is a function with a typed input and output, in its own
//! file: resolve the revisions ([`revisions`]) → read the gate's configuration from the base
//! ([`gate`]) → classify the changes ([`changed`]) → the freeze verdict ([`freeze`], decided
//! this early because a missing calendar stops the run) → both sides' migrations in order and
//! the history findings ([`sides`]) → load the base history, the added migrations and the
//! query files ([`sources`]) → the trusted policies and lint settings → which queries to check,
//! changed or affected, and the lint ([`lint_change`], [`affected`]) → the gate's own files
//! ([`gate_review`]) → plans ([`plans`]) → approvals ([`review`]) → the report.
//!
//! The gate's own configuration (`sluice.toml`, policies, scale spec, freeze calendar and
//! overrides) comes from the base revision ([`gate`]): the change under review cannot loosen
//! the gate that reviews it. Changes to a declared table's identity need an approval from its
//! domain reviewers ([`review`]).

mod affected;
mod changed;
mod freeze;
mod gate;
mod gate_review;
mod lint_change;
mod options;
mod plans;
mod production;
mod review;
mod revisions;
mod sides;
mod sources;
mod sqlc_paths;
mod suppressed;

pub use options::{Approvals, Deploy, Options, PlanRun};
pub use plans::ignored_database_url_note;

use crate::error::Result;
use crate::finding::{Finding, Report};
use crate::git;
use changed::ChangedFiles;
use freeze::FreezeVerdict;
use gate::Gate;
use gate_review::GateReview;
use lint_change::{Linted, QueryFiles};
use plans::PlanReview;
use revisions::Revisions;
use sides::Sides;
use sources::ChangeSources;
use std::collections::BTreeSet;

/// Reviews the change and returns the report (not yet filtered by `--fail-on`): the stages in
/// the order they run, each taking what the ones before produced.
pub fn run(options: &Options) -> Result<Report> {
    let mut revisions = Revisions::resolve(options)?;
    let gate = Gate::load_from(&revisions.repo, revisions.base, revisions.head, &revisions.changes, options)?;
    // Git's diff names tree entries; a directory the gate reads may be reached through a link.
    let changes = std::mem::take(&mut revisions.changes);
    revisions.changes =
        git::links::seen_through_links(&revisions.repo, revisions.base, &revisions.head, changes, &gate.read_dirs())?;
    let changed = ChangedFiles::classify(&revisions, gate.loaded())?;
    // Decided before anything is read: a deployment named against a missing calendar stops the run here.
    let freeze = freeze::check(&gate, &options.deploy)?;
    if !changed.any_reviewed() {
        return gate_only(&revisions, &gate, &changed, freeze, options);
    }
    let sides = Sides::order(&revisions, gate.loaded())?;
    let history = sides.history_findings(&revisions)?;
    let mut sources = ChangeSources::load(&revisions, gate.loaded(), &sides, &changed, options)?;
    let production = production::read(&gate, &mut sources)?;
    let policies = gate.policies(&|| Ok(sources.base_tables()))?;
    let settings = lint_change::settings(gate.loaded(), &policies, options);
    let queries = QueryFiles::select(&mut sources, &revisions, &settings, changed.changed_queries())?;
    let query_changes = sources.query_changes(&revisions, &changed)?;
    let linted = lint_change::lint(sources, &settings, &queries);
    let gate_review = gate_review::review(&gate, &revisions.changes, &policies, options)?;
    let existing = || Ok(linted.sources.base_tables());
    let plans = plans::compare(&revisions, &gate, &options.plan, changed.sql_changed(), &existing)?;
    let mut report = report(
        &revisions,
        Review { history, linted, queries, query_changes, gate_review, plans, freeze, production },
        options,
    );
    report.findings.extend(changed.unread);
    report.sort();
    Ok(report)
}

/// What the stages found, for the report.
struct Review {
    history: Vec<Finding>,
    linted: Linted,
    queries: QueryFiles,
    /// The queries the change adds, edits or removes, base and head text.
    query_changes: Vec<crate::queries::changes::QueryChange>,
    gate_review: GateReview,
    plans: PlanReview,
    freeze: FreezeVerdict,
    production: production::Production,
}

/// The last stage: every finding in one report, an approval from a table's domain reviewers
/// applied, and the notes saying what was reviewed.
fn report(revisions: &Revisions, review: Review, options: &Options) -> Report {
    let Review { history, linted, queries, query_changes, gate_review, plans, freeze, production } = review;
    let mut findings = linted.findings;
    findings.extend(production.findings);
    findings.extend(history);
    findings.extend(linted.sources.tool_notices);
    findings.extend(gate_review.findings);
    findings.extend(plans.findings);
    findings.extend(freeze.findings);
    let mut findings = affected::fold_into_migrations(findings, &queries.affected);
    review::apply_approvals(&mut findings, &options.approvals);

    let suppressed = suppressed::added_by_change(revisions, linted.suppressed);
    let mut report = Report { findings, notes: gate_review.notes, suppressed };
    report.sort();
    report.notes.insert(
        0,
        format!(
            "Reviewed the change between {}: {} added migration(s), {} changed query file(s), {} unchanged query \
             file(s) affected by the added migrations; schema built from {} base migration(s).",
            revisions.between,
            linted.added_migrations,
            linted.checked_queries,
            queries.affected.len(),
            linted.sources.base_count,
        ),
    );
    if !query_changes.is_empty() {
        let shown: Vec<String> = query_changes
            .iter()
            .take(10)
            .map(|c| {
                let what = match (&c.base, &c.head) {
                    (None, _) => "new",
                    (_, None) => "removed",
                    _ => "edited",
                };
                format!("{} at {}:{} ({what})", c.label, c.file, c.line)
            })
            .collect();
        let more = query_changes.len().saturating_sub(shown.len());
        let more = if more > 0 { format!(" and {more} more") } else { String::new() };
        report.notes.push(format!("Queries this change adds, edits or removes: {}{more}.", shown.join(", ")));
    }
    for (query, by) in &queries.affected {
        let by = by.iter().cloned().collect::<Vec<_>>().join(", ");
        report.notes.push(format!("{query} re-checked: affected by {by}."));
    }
    // What the checked code files could not read, or set aside (another database's code,
    // migration code): the gate says what it did not check, as `lint` does.
    let checked = |file: &str| queries.changed.contains(file) || queries.affected.contains_key(file);
    report.notes.extend(
        linted.sources.sources.query_notes.iter().filter(|(file, _)| checked(file)).map(|(_, note)| note.clone()),
    );
    report.notes.extend(production.notes);
    report.notes.extend(plans.notes);
    report.notes.extend(freeze.notes);
    report
}

/// A change with no migration, query or policy file to lint: the gate's own files, the plans
/// and the freeze. The base history is read only if a head policy needs its tables.
fn gate_only(
    revisions: &Revisions,
    gate: &Gate,
    changed: &ChangedFiles,
    freeze: FreezeVerdict,
    options: &Options,
) -> Result<Report> {
    let existing = || sources::base_tables(revisions, gate.loaded());
    let policies = gate.policies(&existing)?;
    let gate_review = gate_review::review(gate, &revisions.changes, &policies, options)?;
    let mut findings = gate_review.findings;
    findings.extend(freeze.findings);
    findings.extend(changed.unread.iter().cloned());
    review::apply_approvals(&mut findings, &options.approvals);
    let mut report = Report { findings, notes: Vec::new(), ..Default::default() };
    report.notes.push(format!("No migration, query or policy file changed between {}.", revisions.between));
    report.notes.extend(gate_review.notes);
    report.notes.extend(plans::compare(revisions, gate, &options.plan, changed.sql_changed(), &existing)?.notes);
    report.notes.extend(freeze.notes);
    report.sort();
    Ok(report)
}

/// The domain reviewers the trusted `identity.toml` names (every table's and the top-level
/// ones), sorted and deduplicated: what the GitHub action must resolve before `check` runs.
pub fn reviewers(options: &Options) -> Result<Vec<String>> {
    let revisions = Revisions::resolve(options)?;
    let gate = Gate::load(&revisions, options)?;
    // Only the trusted entries name reviewers; new tables fall back to the top-level ones.
    let identity = gate.policies(&|| Ok(BTreeSet::new()))?.trusted.identity;
    let all: BTreeSet<String> = identity
        .default_reviewers
        .iter()
        .chain(identity.tables.values().flat_map(|e| e.reviewers.iter()))
        .cloned()
        .collect();
    Ok(all.into_iter().collect())
}
