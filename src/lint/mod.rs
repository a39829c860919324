//! The lint engine: replays migrations in order, checking each statement against the schema
//! just before it, then checks query files against the final schema. Source-agnostic: the
//! files come from disk (`sluice lint`) or from git blobs (`sluice check`).

pub mod load;
mod suppress;

use crate::config::RuleLevel;
use crate::finding::{Finding, Report};
use crate::policy::Policies;
use crate::rules::{self, Context, Facts, MigrationState, Role, SourceFile, UNPARSED_STATEMENT};
use crate::schema::migrations::Migration;
use crate::schema::{Origin, Schema};
use rayon::prelude::*;
use std::collections::BTreeMap;

/// A migration with its parsed up (and down) file.
#[derive(Debug)]
pub struct MigrationSource {
    pub migration: Migration,
    pub up: SourceFile,
    pub down: Option<SourceFile>,
    /// The runner wraps this file in a transaction.
    pub in_transaction: bool,
}

/// Everything the linter reads.
#[derive(Debug, Default)]
pub struct Sources {
    pub schema_dump: Option<SourceFile>,
    pub migrations: Vec<MigrationSource>,
    pub queries: Vec<SourceFile>,
}

#[derive(Debug, Clone, Default)]
pub struct Settings {
    pub postgres_version: u32,
    pub levels: BTreeMap<String, RuleLevel>,
    pub policies: Policies,
}

/// dbmate keeps both directions in one file; only what precedes `-- migrate:down` runs on deploy.
fn down_section_start(file: &SourceFile) -> usize {
    file.parsed
        .comments
        .iter()
        .find(|c| c.text.trim_start_matches('-').trim().starts_with("migrate:down"))
        .map(|c| line_offset(&file.parsed.text, c.line))
        .unwrap_or(usize::MAX)
}

fn line_offset(text: &str, line: usize) -> usize {
    text.split_inclusive('\n').take(line - 1).map(str::len).sum()
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

/// The statements of a migration file that run on deploy: all of them, except a dbmate
/// file's `-- migrate:down` section.
pub fn deployed_statements(file: &SourceFile) -> impl Iterator<Item = &crate::sql::parse::Statement> {
    let down_start = down_section_start(file);
    file.parsed.statements.iter().take_while(move |s| s.span.start < down_start)
}

/// The schema the whole history builds: the schema dump, then every migration's deployed statements.
pub fn final_schema(schema_dump: Option<&SourceFile>, migrations: &[MigrationSource]) -> Schema {
    let mut schema = Schema::default();
    if let Some(dump) = schema_dump {
        schema.apply_all(&dump.parsed.statements, &dump.display, None);
    }
    for (index, source) in migrations.iter().enumerate() {
        schema.apply_all(deployed_statements(&source.up), &source.up.display, Some(index));
    }
    schema
}

/// Lints `sources`, reporting findings only for files `selected` accepts (the schema is
/// always built from the whole history).
pub fn lint(sources: &Sources, settings: &Settings, selected: &(dyn Fn(&str) -> bool + Sync)) -> Report {
    let facts =
        Facts { postgres_version: settings.postgres_version, policies: &settings.policies, queries: &sources.queries };
    let mut schema = Schema::default();
    let mut findings: Vec<Finding> = Vec::new();
    if let Some(dump) = &sources.schema_dump {
        schema.apply_all(&dump.parsed.statements, &dump.display, None);
    }

    let layout_has_down =
        sources.migrations.iter().any(|m| m.down.is_some() || down_section_start(&m.up) != usize::MAX);
    for (index, source) in sources.migrations.iter().enumerate() {
        let file = &source.up;
        let check = selected(&file.display);
        let down_start = down_section_start(file);
        // The rollback: a down file, or dbmate's `-- migrate:down` section of the same file.
        let down = match &source.down {
            Some(down) => Some(down.parsed.statements.iter().map(|s| s.ddl.clone()).collect()),
            None if down_start != usize::MAX => Some(
                file.parsed.statements.iter().filter(|s| s.span.start >= down_start).map(|s| s.ddl.clone()).collect(),
            ),
            None => None,
        };
        let mut state = MigrationState {
            index,
            migration: Some(source.migration.clone()),
            runner_transaction: source.in_transaction,
            layout_has_down,
            down,
            ..MigrationState::default()
        };
        let mut file_findings = Vec::new();
        for statement in file.parsed.statements.iter().take_while(|s| s.span.start < down_start) {
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
            file_findings.extend(tokenizer_finding(file));
            findings.extend(suppress::apply(file, file_findings));
        }
    }

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
