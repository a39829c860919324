//! The lint engine: replays migrations in order, checking each statement against the schema
//! just before it, then checks query files against the final schema. Source-agnostic: the
//! files come from disk (`sluice lint`) or from git blobs (`sluice check`).

pub mod baseline;
pub mod load;
pub mod since;
mod suppress;

use crate::config::RuleLevel;
use crate::finding::{Finding, Report};
use crate::policy::Policies;
use crate::rules::{self, Context, Facts, MigrationState, Role, RunnerTransaction, SourceFile, UNPARSED_STATEMENT};
use crate::schema::migrations::Migration;
use crate::schema::{Origin, Schema};
use rayon::prelude::*;
use std::collections::BTreeMap;
use std::sync::Arc;

/// A migration with its parsed up (and down) file, and how its tool runs it.
#[derive(Debug)]
pub struct MigrationSource {
    pub migration: Migration,
    /// The statements the tool sends on deploy (see `schema::tools::script::parse`).
    pub up: SourceFile,
    pub down: Option<SourceFile>,
    /// Per statement of `up`: the transaction the tool puts it in (or PostgreSQL's implicit one).
    pub transactions: Vec<Option<Arc<RunnerTransaction>>>,
    /// What the tool would refuse or break in this file (`runner-rejects-migration`).
    pub findings: Vec<Finding>,
}

impl MigrationSource {
    /// A migration whose runner wraps the whole file in a transaction, or runs each statement on
    /// its own: the simple case, for tests and callers without a tool.
    pub fn whole_file(migration: Migration, up: SourceFile, down: Option<SourceFile>, in_transaction: bool) -> Self {
        let wrap = in_transaction.then(|| Arc::new(RunnerTransaction::whole_file()));
        let transactions = vec![wrap; up.parsed.statements.len()];
        MigrationSource { migration, up, down, transactions, findings: Vec::new() }
    }
}

/// Everything the linter reads.
#[derive(Debug, Default)]
pub struct Sources {
    pub schema_dump: Option<SourceFile>,
    pub migrations: Vec<MigrationSource>,
    pub queries: Vec<SourceFile>,
    /// Files the migration tool skips or refuses, and what could not be checked (reported
    /// when their file is selected).
    pub notices: Vec<Finding>,
    /// Which migration tool runs the history and why (`--explain`).
    pub tool: String,
}

#[derive(Debug, Clone, Default)]
pub struct Settings {
    pub postgres_version: u32,
    pub levels: BTreeMap<String, RuleLevel>,
    pub policies: Policies,
    /// The files are a change under review (`sluice check`), not a whole project: rules about
    /// who must approve a change (`domain-review-required`) apply.
    pub under_review: bool,
}

fn check_statement(cx: &Context, out: &mut Vec<Finding>) {
    for rule in rules::REGISTRY {
        rule.check(cx, out);
    }
}

/// A file the tokenizer could not read to the end: fail closed, say where.
fn tokenizer_finding(file: &SourceFile) -> Option<Finding> {
    let (message, span) = file.parsed.tokenizer_error.as_ref()?;
    Some(
        Finding::new(
            UNPARSED_STATEMENT.id,
            UNPARSED_STATEMENT.severity,
            file.display.clone(),
            format!("the rest of the file could not be read and was not checked: {message}"),
        )
        .at(span.line, span.column, span.line, span.column)
        .help(UNPARSED_STATEMENT.fix.trim()),
    )
}

/// Applies the `[rules]` severity overrides: the one place they are applied, for the engine's
/// findings and for those produced elsewhere (git history, plans, freeze).
pub fn apply_levels(findings: Vec<Finding>, levels: &BTreeMap<String, RuleLevel>) -> Vec<Finding> {
    findings
        .into_iter()
        .filter_map(|mut f| match levels.get(&f.rule) {
            Some(level) => level.severity().map(|s| {
                f.severity = s;
                f
            }),
            None => Some(f),
        })
        .collect()
}

/// The schema a dump and migrations build: the dump, then every statement each migration's tool sends.
pub fn replay(schema_dump: Option<&SourceFile>, migrations: &[MigrationSource]) -> Schema {
    let mut schema = Schema::default();
    if let Some(dump) = schema_dump {
        schema.apply_all(&dump.parsed.statements, &dump.display, None);
    }
    for (index, source) in migrations.iter().enumerate() {
        schema.apply_all(&source.up.parsed.statements, &source.up.display, Some(index));
    }
    schema
}

/// Lints `sources`, reporting findings only for files `selected` accepts (the schema is
/// always built from the whole history).
pub fn lint(sources: &Sources, settings: &Settings, selected: &(dyn Fn(&str) -> bool + Sync)) -> Report {
    let facts = Facts {
        postgres_version: settings.postgres_version,
        policies: &settings.policies,
        queries: &sources.queries,
        under_review: settings.under_review,
    };
    let mut schema = Schema::default();
    let mut findings: Vec<Finding> = Vec::new();
    if let Some(dump) = &sources.schema_dump {
        schema.apply_all(&dump.parsed.statements, &dump.display, None);
    }

    let layout_has_down = sources.migrations.iter().any(|m| m.down.is_some());
    for (index, source) in sources.migrations.iter().enumerate() {
        let file = &source.up;
        let check = selected(&file.display);
        let down = source.down.as_ref().map(|down| down.parsed.statements.iter().map(|s| s.ddl.clone()).collect());
        let mut state = MigrationState {
            index,
            migration: Some(source.migration.clone()),
            layout_has_down,
            down,
            ..MigrationState::default()
        };
        let mut file_findings = source.findings.clone();
        for (position, statement) in file.parsed.statements.iter().enumerate() {
            state.enter_runner_transaction(source.transactions.get(position).cloned().flatten());
            if check {
                let cx = Context { file, statement, schema: &schema, role: Role::Migration(&state), facts: &facts };
                check_statement(&cx, &mut file_findings);
            }
            state.observe(statement, &schema);
            schema.apply(
                statement,
                &Origin { file: file.display.clone(), line: statement.span.line, migration: Some(index) },
            );
        }
        if check {
            for rule in rules::REGISTRY {
                rule.finish_file(file, &mut file_findings);
            }
            file_findings.extend(tokenizer_finding(file));
            findings.extend(suppress::apply(file, file_findings));
        }
    }
    findings.extend(sources.notices.iter().filter(|f| selected(&f.file)).cloned());

    let query_findings: Vec<Finding> = sources
        .queries
        .par_iter()
        .filter(|file| selected(&file.display))
        .flat_map_iter(|file| {
            let mut out = Vec::new();
            for statement in &file.parsed.statements {
                check_statement(
                    &Context { file, statement, schema: &schema, role: Role::Query, facts: &facts },
                    &mut out,
                );
            }
            out.extend(tokenizer_finding(file));
            suppress::apply(file, out)
        })
        .collect();
    findings.extend(query_findings);

    let findings = apply_levels(findings, &settings.levels);
    let mut report = Report { findings, notes: Vec::new() };
    report.sort();
    report
}
