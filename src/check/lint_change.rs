//! The stages of `sluice check` that lint the change: the settings the trusted configuration
//! gives, which query files to check (changed, or affected by an added migration), and the
//! lint of the added migrations and those query files against the base history's schema.

use super::affected;
use super::gate::GatePolicies;
use super::options::Options;
use super::revisions::Revisions;
use super::sources::ChangeSources;
use crate::config::Loaded;
use crate::error::Result;
use crate::finding::Finding;
use crate::lint::{self, Settings};
use std::collections::{BTreeMap, BTreeSet};

/// The lint settings of a review: the trusted `[rules]` levels and the effective policies.
pub(super) fn settings(loaded: &Loaded, policies: &GatePolicies, options: &Options) -> Settings {
    Settings {
        postgres_version: loaded.config.postgres_version,
        levels: loaded.config.rules.clone(),
        policies: policies.effective.clone(),
        under_review: true,
        cache: options.cache.clone(),
        max_not_understood_percent: loaded.config.migrations.max_not_understood_percent,
        // `check`'s queries come from git objects; its own blob cache serves their extraction.
        query_cache: lint::query_cache::QueryCache::disabled(),
    }
}

/// The query files the review checks.
pub(super) struct QueryFiles {
    /// Added or modified by the change.
    pub changed: BTreeSet<String>,
    /// Unchanged, but reading a table an added migration changes → those migrations.
    pub affected: BTreeMap<String, BTreeSet<String>>,
}

impl QueryFiles {
    /// The changed query files, and the unchanged ones the added migrations affect (reading
    /// the unchanged code that may be among them first).
    pub fn select(
        sources: &mut ChangeSources,
        revisions: &Revisions,
        settings: &Settings,
        changed: BTreeSet<String>,
    ) -> Result<QueryFiles> {
        let touched = affected::touched_tables(&sources.sources, settings, &sources.added);
        sources.add_affected_code(revisions, &touched.keys().cloned().collect())?;
        let affected = affected::queries(&sources.sources, &touched, &changed);
        Ok(QueryFiles { changed, affected })
    }
}

/// The change linted: its findings and what was read.
pub(super) struct Linted {
    /// The findings on the added migrations and the checked query files.
    pub findings: Vec<Finding>,
    /// The sources, the added migrations now part of the history.
    pub sources: ChangeSources,
    /// How many migrations the change adds.
    pub added_migrations: usize,
    /// How many of the changed query files exist on the head side.
    pub checked_queries: usize,
    /// What the checked files' `sluice:ignore` directives silenced (those the change adds are
    /// reported: [`super::suppressed`]).
    pub suppressed: Vec<Finding>,
}

/// Lints the added migrations after the base history, and the checked query files against the
/// schema they build. What an affected query already had against the base schema is not this
/// change's doing: it is left out, and what remains says which migration affects it.
pub(super) fn lint(mut sources: ChangeSources, settings: &Settings, queries: &QueryFiles) -> Linted {
    let affected = &queries.affected;
    let baseline: BTreeSet<(String, String, usize, usize, String)> = if affected.is_empty() {
        BTreeSet::new()
    } else {
        lint::lint(&sources.sources, settings, &|file| affected.contains_key(file))
            .findings
            .into_iter()
            .map(|f| (f.file, f.rule, f.line, f.column, f.message))
            .collect()
    };
    let added = std::mem::take(&mut sources.added);
    let added_migrations = added.len();
    sources.sources.migrations.extend(added);
    let added_paths = &sources.added_paths;
    let selected =
        |file: &str| added_paths.contains(file) || queries.changed.contains(file) || affected.contains_key(file);
    let linted = lint::lint(&sources.sources, settings, &selected);
    let suppressed = linted.suppressed;
    let mut findings: Vec<Finding> = Vec::new();
    for mut finding in linted.findings {
        if let Some(by) = affected.get(&finding.file) {
            let key =
                (finding.file.clone(), finding.rule.clone(), finding.line, finding.column, finding.message.clone());
            if baseline.contains(&key) {
                continue;
            }
            let by = by.iter().cloned().collect::<Vec<_>>().join(", ");
            finding.message = format!("{} (affected by {by})", finding.message);
            finding = finding.fact("affected by", by);
        }
        findings.push(finding);
    }
    let checked_queries =
        queries.changed.iter().filter(|q| sources.sources.queries.iter().any(|f| &f.query.file == *q)).count();
    Linted { findings, sources, added_migrations, checked_queries, suppressed }
}
