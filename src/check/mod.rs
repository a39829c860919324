//! `sluice check`, the pull-request gate: what a change between two revisions does to the
//! migrations, queries and policies, read from git (no checkout, no `git` process).
//!
//! The schema is built from the base side's whole migration history (what production has
//! run, edits and deletions on the head side notwithstanding), then the migrations the change
//! adds are linted in order, then the added or modified query files, and the unchanged query
//! files whose tables an added migration changes. History findings (`migration-edited`, …)
//! come from [`git::history`]. Everything ends up in one [`Report`].
//!
//! The gate's own configuration (`sluice.toml`, policies, scale spec, freeze calendar and
//! overrides) comes from the base revision ([`gate`]): the change under review cannot loosen
//! the gate that reviews it. Changes to a declared table's identity need an approval from its
//! domain reviewers ([`review`]).

mod affected;
mod freeze;
mod gate;
mod plans;
mod review;

pub use plans::ignored_database_url_note;
pub use review::Approvals;

use crate::config::Loaded;
use crate::error::{read_text, Error, Result};
use crate::finding::{Finding, Report};
use crate::git::{self, history, Change, ChangeKind, Classifier, FileKind, GitTree, Oid, Repo, Side};
use crate::lint::{self, Settings, Sources};
use crate::rules::{migration_edited, SourceFile};
use crate::schema::migrations::{self, Migration};
use crate::schema::tools::{self, Tree};
use chrono::{DateTime, FixedOffset};
use gate::{Gate, GatePolicies};
use rayon::prelude::*;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::PathBuf;

/// What to compare and how. Paths are absolute (the CLI resolves them against its working
/// directory).
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// A directory inside the repository; `sluice.toml` is looked for from here up to the root.
    pub dir: PathBuf,
    pub base: Option<String>,
    pub head: Option<String>,
    /// Running in CI: the default head is HEAD, not the working tree.
    pub ci: bool,
    /// `--config`: the `sluice.toml` to use (read from the base revision when it is inside the
    /// repository, from disk outside it).
    pub config: Option<PathBuf>,
    pub migrations: Option<PathBuf>,
    pub queries: Vec<PathBuf>,
    pub policies: Option<PathBuf>,
    pub deploy: Deploy,
    pub plan: PlanRun,
    /// Snapshots of the base side's replayed schema (disabled by default).
    pub cache: crate::schema::cache::SchemaCache,
    /// Validated freeze calendars, by their text and imports (disabled by default).
    pub calendar_cache: crate::freeze::cache::CalendarCache,
    /// `--trust-head-config`: read the gate's configuration from the head (local experiments).
    pub trust_head_config: bool,
    pub approvals: Approvals,
}

/// Where and when the change would be deployed, for the change-freeze calendar.
#[derive(Debug, Clone, Default)]
pub struct Deploy {
    pub env: Option<String>,
    pub service: Option<String>,
    /// Default: now.
    pub at: Option<DateTime<FixedOffset>>,
    /// Flags that win over `[freeze]` in sluice.toml (see [`crate::freeze::FreezeOptions::resolve`]).
    pub calendar: Option<PathBuf>,
    pub overrides: Option<PathBuf>,
    pub audit_log: Option<PathBuf>,
}

/// How to run the plan comparison `[plan] scale` asks for.
#[derive(Debug, Clone, Default)]
pub struct PlanRun {
    /// `--no-plan`: skip it, with a note.
    pub skip: bool,
    /// A server to use instead of an ephemeral one (`--database-url`, `SLUICE_DATABASE_URL`).
    pub database_url: Option<String>,
    /// `DATABASE_URL` is set and was not used: the report says so.
    pub ignored_database_url: bool,
    /// Where the ephemeral cluster lives; `None`: the plan module's default.
    pub cache_dir: Option<PathBuf>,
}

/// One migration file of a side: the runner's view plus its repository-relative path.
struct SideMigration {
    migration: Migration,
    path: String,
}

/// Reviews the change and returns the report (not yet filtered by `--fail-on`).
pub fn run(options: &Options) -> Result<Report> {
    let repo = git::open(&options.dir)?;
    let head = git::resolve_head(&repo, options.head.as_deref(), options.ci)?;
    let base = git::resolve_base(&repo, options.base.as_deref(), &head)?;
    let changes = git::changes(&repo, base, &head)?;
    let gate = Gate::load(&repo, base, head, &changes, options)?;
    let loaded = gate.loaded();
    let between = format!("{} and {}", describe_base(&repo, base, options), describe_head(&head, options));
    ensure_inside(&repo, loaded)?;
    let classifier =
        Classifier::new(repo.root(), &loaded.migrations_dir(), &loaded.query_dirs(), &loaded.policies_dir());
    let classified = classifier.classify_all(&changes);
    // The freeze first: it does not depend on what changed, and a missing calendar stops the run early.
    let (freeze_findings, freeze_notes) = freeze::check(&gate, &options.deploy)?;
    let freeze_findings = lint::apply_levels(freeze_findings, &loaded.config.rules);
    let sql_changed = classified.iter().any(|c| matches!(c.kind, FileKind::Migration | FileKind::Query));

    if !classified.iter().any(|c| c.is_reviewed()) {
        // Nothing SQL to lint: the base history is read only if a head policy needs it.
        let existing = || base_tables(&repo, loaded, base, &head);
        let policies = gate.policies(&existing)?;
        let (mut findings, gate_notes) = gate_findings(&gate, &changes, &policies, options)?;
        findings.extend(freeze_findings);
        review::apply_approvals(&mut findings, &options.approvals);
        let mut report = Report { findings, notes: Vec::new() };
        report.notes.push(format!("No migration, query or policy file changed between {between}."));
        report.notes.extend(gate_notes);
        let spec = || gate.scale_spec(&existing);
        report.notes.extend(plans::compare(&repo, loaded, base, &head, &options.plan, sql_changed, &spec)?.1);
        report.notes.extend(freeze_notes);
        report.sort();
        return Ok(report);
    }

    // Migrations of both sides, in the order their tool applies them.
    let migrations_dir = loaded.migrations_dir();
    let base_tree = GitTree::open(&repo, Side::Rev(base), &migrations_dir, &loaded.root)?;
    let head_tree = GitTree::open(&repo, head, &migrations_dir, &loaded.root)?;
    // The tool is the head side's, unless the change removes every migration.
    let detection_tree: &dyn Tree = if head_tree.files().is_empty() { &base_tree } else { &head_tree };
    let detection = tools::resolve(loaded.config.migrations.layout, detection_tree)?;
    let layout = detection.layout();
    let tool_options = lint::load::tool_options(loaded);
    let side_list = |tree: &GitTree| -> Result<Vec<SideMigration>> {
        Ok(detection
            .tool
            .order(tree)?
            .migrations
            .into_iter()
            .map(|migration| SideMigration { path: tree.display(&migration.up), migration })
            .collect())
    };
    let base_list = side_list(&base_tree)?;
    let head_list = side_list(&head_tree)?;
    // Flyway's repeatables are meant to change: they are not history, and a changed one runs again.
    let entries = |list: &[SideMigration]| -> Vec<history::MigrationEntry> {
        list.iter().filter(|m| !m.migration.repeatable).map(|m| (m.migration.version.clone(), m.path.clone())).collect()
    };
    let (base_entries, head_entries) = (entries(&base_list), entries(&head_list));

    // History: what the change did to migrations that already exist.
    let base_texts: HashMap<&str, &str> = base_tree.texts().iter().map(|(p, t)| (p.as_str(), t.as_str())).collect();
    let mut history_findings = history::findings(&base_entries, &head_entries, &changes);
    history_findings.extend(renamed_and_edited(&repo, &head, &changes, &base_entries, &head_entries, &base_texts)?);
    crate::rules::migration_out_of_order::weigh_for_runner(&mut history_findings, layout);

    // New to the runner: on head, not on base, and not an old migration moved under its old
    // version; or a repeatable the change modified.
    let base_paths: BTreeSet<&str> = base_list.iter().map(|m| m.path.as_str()).collect();
    let kept_by_rename = renamed_same_version(&changes, &base_entries, &head_entries);
    let modified: BTreeSet<&str> =
        changes.iter().filter(|c| c.kind == ChangeKind::Modified).map(|c| c.path.as_str()).collect();
    let added: Vec<&SideMigration> = head_list
        .iter()
        .filter(|m| {
            let new = !base_paths.contains(m.path.as_str()) && !kept_by_rename.contains(m.path.as_str());
            new || (m.migration.repeatable && modified.contains(m.path.as_str()))
        })
        .collect();
    let added_paths: BTreeSet<&str> = added.iter().map(|m| m.path.as_str()).collect();

    // Parse: the base history in parallel (it is most of the work), then the added files.
    let base_history = migrations::load(&base_tree, layout, &tool_options, None)?;
    let base_count = base_history.migrations.len();
    let (base_sources, _) = lint::load::sources_of(base_history);
    let is_added = |m: &Migration| added_paths.contains(head_tree.display(&m.up).as_str());
    let head_history = migrations::load(&head_tree, layout, &tool_options, Some(&is_added))?;
    let changed_paths: BTreeSet<&str> = changes.iter().map(|c| c.path.as_str()).collect();
    let (added_sources, head_notices) = lint::load::sources_of(head_history);
    // What the tool skips or refuses among the files this change touches.
    let tool_notices: Vec<Finding> =
        head_notices.into_iter().filter(|f| changed_paths.contains(f.file.as_str())).collect();
    let mut sources = Sources {
        schema_dump: read_schema_dump(&repo, loaded, &Side::Rev(base), &head)?,
        migrations: base_sources,
        ..Sources::default()
    };

    // The head side's query files.
    sources.queries = read_queries(&repo, &head, loaded, &classifier)?;
    let changed_queries: BTreeSet<String> = classified
        .iter()
        .filter(|c| c.kind == FileKind::Query && c.change.kind != ChangeKind::Deleted)
        .map(|c| c.change.path.clone())
        .collect();
    // The tables the base history builds, for policies that name a table: from the schema cache
    // when it has the base history (the lint below then resumes from the same snapshot).
    let replay_settings = Settings {
        postgres_version: loaded.config.postgres_version,
        cache: options.cache.clone(),
        ..Settings::default()
    };
    let existing = || Ok(table_names(&lint::schema_after(&sources, &replay_settings, base_count)));
    let policies = gate.policies(&existing)?;
    let settings = Settings {
        postgres_version: loaded.config.postgres_version,
        levels: loaded.config.rules.clone(),
        policies: policies.effective.clone(),
        under_review: true,
        cache: options.cache.clone(),
    };
    let affected = affected::queries(&sources, &settings, &added_sources, &changed_queries);

    // What the affected queries already had against the base schema is not this change's doing.
    let baseline: BTreeSet<(String, String, usize, usize, String)> = if affected.is_empty() {
        BTreeSet::new()
    } else {
        lint::lint(&sources, &settings, &|file| affected.contains_key(file))
            .findings
            .into_iter()
            .map(|f| (f.file, f.rule, f.line, f.column, f.message))
            .collect()
    };

    sources.migrations.extend(added_sources);
    let selected =
        |file: &str| added_paths.contains(file) || changed_queries.contains(file) || affected.contains_key(file);
    let linted = lint::lint(&sources, &settings, &selected);
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
    findings.extend(lint::apply_levels(history_findings, &settings.levels));
    findings.extend(lint::apply_levels(tool_notices, &settings.levels));
    let (gate_findings, gate_notes) = gate_findings(&gate, &changes, &policies, options)?;
    findings.extend(gate_findings);
    let existing = || Ok(table_names(&lint::schema_after(&sources, &replay_settings, base_count)));
    let spec = || gate.scale_spec(&existing);
    let (plan_findings, plan_notes) = plans::compare(&repo, loaded, base, &head, &options.plan, sql_changed, &spec)?;
    findings.extend(lint::apply_levels(plan_findings, &settings.levels));
    findings.extend(freeze_findings);
    let mut findings = affected::fold_into_migrations(findings, &affected);
    review::apply_approvals(&mut findings, &options.approvals);

    let mut report = Report { findings, notes: gate_notes };
    report.sort();
    let checked_queries = changed_queries.iter().filter(|q| sources.queries.iter().any(|f| &f.display == *q)).count();
    report.notes.insert(
        0,
        format!(
            "Reviewed the change between {between}: {} added migration(s), {checked_queries} changed query file(s), \
             {} unchanged query file(s) affected by the added migrations; schema built from {base_count} base \
             migration(s).",
            added.len(),
            affected.len(),
        ),
    );
    for (query, by) in &affected {
        let by = by.iter().cloned().collect::<Vec<_>>().join(", ");
        report.notes.push(format!("{query} re-checked: affected by {by}."));
    }
    report.notes.extend(plan_notes);
    report.notes.extend(freeze_notes);
    Ok(report)
}

/// The domain reviewers the trusted `identity.toml` names (every table's and the top-level
/// ones), sorted and deduplicated: what the GitHub action must resolve before `check` runs.
pub fn reviewers(options: &Options) -> Result<Vec<String>> {
    let repo = git::open(&options.dir)?;
    let head = git::resolve_head(&repo, options.head.as_deref(), options.ci)?;
    let base = git::resolve_base(&repo, options.base.as_deref(), &head)?;
    let changes = git::changes(&repo, base, &head)?;
    let gate = Gate::load(&repo, base, head, &changes, options)?;
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

/// The migrations and query directories must be inside the repository: `check` reviews what git tracks.
fn ensure_inside(repo: &Repo, loaded: &Loaded) -> Result<()> {
    for (what, dir) in std::iter::once(("migrations", loaded.migrations_dir()))
        .chain(loaded.query_dirs().into_iter().map(|d| ("query", d)))
    {
        if repo.relative(&dir).is_none() {
            return Err(Error::Usage(format!(
                "{}: the {what} directory is outside the repository {}; `sluice check` reviews the files git \
                 tracks (use `sluice lint` for others)",
                dir.display(),
                repo.root().display()
            )));
        }
    }
    Ok(())
}

/// What the change does to the gate itself: `gate-config-changed` per edited gate file and
/// `domain-review-required` per edited identity declaration, with the trusted `[rules]`
/// levels applied, and the notes that go with them.
fn gate_findings(
    gate: &Gate,
    changes: &[Change],
    policies: &GatePolicies,
    options: &Options,
) -> Result<(Vec<Finding>, Vec<String>)> {
    let mut findings = gate.changed_findings(changes, policies, &options.deploy)?;
    // Findings about a declaration point at the head's identity.toml, or the base's when the head has none.
    let identity_of = |config: &gate::ConfigFile| config.loaded.policies_dir().join(crate::policy::identity::FILE);
    let proposed = identity_of(&gate.proposed);
    let identity_file = match gate.read(&gate.head, &proposed)? {
        Some(_) => gate.shown(&proposed),
        None => gate.shown(&identity_of(&gate.trusted)),
    };
    let (declarations, mut notes) = review::declaration_findings(policies, &identity_file);
    findings.extend(declarations);
    if gate.trust_head || findings.iter().any(|f| f.rule == crate::rules::gate_config_changed::META.id) {
        notes.insert(0, format!("{}.", gate::describe_trust(gate.trust_head)));
    }
    for table in &policies.new_tables {
        notes.push(format!(
            "The policies for `{table}` came from the head: the base revision has no such table, so they cannot relax \
             anything."
        ));
    }
    Ok((lint::apply_levels(findings, &gate.loaded().config.rules), notes))
}

/// The tables the base revision's history builds, read and replayed on demand (only when a
/// head policy names a table the base policies do not).
fn base_tables(repo: &Repo, loaded: &Loaded, base: Oid, head: &Side) -> Result<BTreeSet<String>> {
    let tree = GitTree::open(repo, Side::Rev(base), &loaded.migrations_dir(), &loaded.root)?;
    let layout = tools::resolve(loaded.config.migrations.layout, &tree)?.layout();
    let history = migrations::load(&tree, layout, &lint::load::tool_options(loaded), None)?;
    let (base_sources, _) = lint::load::sources_of(history);
    let dump = read_schema_dump(repo, loaded, &Side::Rev(base), head)?;
    Ok(table_names(&lint::replay(dump.as_ref(), &base_sources, loaded.config.postgres_version)))
}

fn table_names(schema: &crate::schema::Schema) -> BTreeSet<String> {
    schema.tables.keys().cloned().collect()
}

fn describe_base(repo: &Repo, base: Oid, options: &Options) -> String {
    let name = options.base.clone().or_else(|| {
        git::DEFAULT_BASES.iter().find(|name| repo.git().revparse_single(name).is_ok()).map(|name| name.to_string())
    });
    match name {
        Some(name) => format!("{} (merge base with {name})", short(base)),
        None => short(base),
    }
}

fn describe_head(head: &Side, options: &Options) -> String {
    match (head, &options.head) {
        (Side::WorkTree, _) => "the working tree".into(),
        (Side::Rev(oid), Some(name)) => format!("{} ({name})", short(*oid)),
        (Side::Rev(oid), None) => format!("{} (HEAD)", short(*oid)),
    }
}

fn short(oid: Oid) -> String {
    oid.to_string()[..10].to_string()
}

/// Old migrations moved under the same version: the runner has run them, they are not new.
fn renamed_same_version<'a>(
    changes: &'a [git::Change],
    base: &[history::MigrationEntry],
    head: &[history::MigrationEntry],
) -> BTreeSet<&'a str> {
    changes
        .iter()
        .filter_map(|c| match &c.kind {
            ChangeKind::Renamed { from } => {
                let old = base.iter().find(|(_, p)| p == from)?;
                let new = head.iter().find(|(_, p)| *p == c.path)?;
                (history::compare_versions(&old.0, &new.0).is_eq()).then_some(c.path.as_str())
            }
            _ => None,
        })
        .collect()
}

/// A migration renamed under its old version and edited in the same change: the runner will
/// not run the edit any more than an edit in place.
fn renamed_and_edited(
    repo: &Repo,
    head: &Side,
    changes: &[git::Change],
    base: &[history::MigrationEntry],
    head_entries: &[history::MigrationEntry],
    base_texts: &HashMap<&str, &str>,
) -> Result<Vec<Finding>> {
    let mut out = Vec::new();
    for path in renamed_same_version(changes, base, head_entries) {
        let Some(change) = changes.iter().find(|c| c.path == path) else {
            continue;
        };
        let ChangeKind::Renamed { from } = &change.kind else {
            continue;
        };
        let (Some(old), Some(new)) = (base_texts.get(from.as_str()), git::read_file(repo, head, path)?) else {
            continue;
        };
        if *old != new {
            let version = head_entries.iter().find(|(_, p)| p == path).map(|(v, _)| v.as_str()).unwrap_or("");
            out.push(
                Finding::new(
                    migration_edited::META.id,
                    migration_edited::META.severity,
                    path,
                    format!(
                        "migration {version} was renamed from {from} and modified: databases that already ran it \
                         will never run the edit"
                    ),
                )
                .help(migration_edited::META.fix)
                .fact("version", version)
                .fact("renamed from", from.as_str()),
            );
        }
    }
    Ok(out)
}

/// The schema dump the history starts from: the base side's (what production had), else the
/// head side's when the change adds it.
fn read_schema_dump(repo: &Repo, loaded: &Loaded, base: &Side, head: &Side) -> Result<Option<SourceFile>> {
    let Some(dump) = &loaded.config.migrations.schema_dump else {
        return Ok(None);
    };
    let full = loaded.resolve(dump);
    let Some(path) = repo.relative(&full) else {
        return Ok(Some(SourceFile::parse(full.display().to_string(), read_text(&full)?)));
    };
    let text = match git::read_file(repo, base, &path)? {
        Some(text) => text,
        None => git::read_file(repo, head, &path)?.ok_or_else(|| {
            Error::Usage(format!("{path}: the schema dump named by [migrations] schema_dump exists on neither side"))
        })?,
    };
    Ok(Some(SourceFile::parse(path, text)))
}

/// Every query file on the head side, parsed in parallel.
fn read_queries(repo: &Repo, head: &Side, loaded: &Loaded, classifier: &Classifier) -> Result<Vec<SourceFile>> {
    let mut files: BTreeMap<String, String> = BTreeMap::new();
    for dir in loaded.query_dirs() {
        for (path, text) in git::read_files(repo, head, &dir)? {
            if classifier.classify(&path) == FileKind::Query {
                files.insert(path, text);
            }
        }
    }
    Ok(files.into_par_iter().map(|(path, text)| SourceFile::parse(path, text)).collect())
}
