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
use crate::rules::{self, unread_text, Context, Facts, MigrationState, Role, RunnerTransaction, SourceFile};
use crate::schema::migrations::Migration;
use crate::schema::{Origin, Schema};
use crate::sql::parse::Statement;
use crate::sql::plpgsql::Block;
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

/// What the engine read of the migrations it checked: the parse-or-recognize rate, and the
/// objects statements referred to that the history never created.
#[derive(Debug, Default)]
struct Coverage {
    statements: usize,
    parsed: usize,
    recognized: usize,
    do_blocks: usize,
    do_statements: usize,
    /// "table foo (file:line)".
    unknown: Vec<String>,
}

impl Coverage {
    fn count(&mut self, statement: &Statement) {
        self.statements += 1;
        if statement.parse_error.is_none() {
            self.parsed += 1;
        } else if statement.fully_recognized {
            self.recognized += 1;
        }
        if let Some(block) = &statement.block {
            self.do_blocks += 1;
            self.do_statements += block.statements.len();
        }
    }

    fn notes(&self) -> Vec<String> {
        let mut notes = Vec::new();
        if self.statements > 0 {
            let understood = self.parsed + self.recognized;
            let mut note = format!(
                "Migration statements checked: {}; read by the SQL parser: {}; understood by Sluice's recognizer: {}; not understood: {} ({:.2}% understood)",
                self.statements,
                self.parsed,
                self.recognized,
                self.statements - understood,
                100.0 * understood as f64 / self.statements as f64
            );
            if self.do_blocks > 0 {
                note.push_str(&format!(
                    "; {} statement(s) inside {} DO block(s) checked one by one",
                    self.do_statements, self.do_blocks
                ));
            }
            notes.push(note + ".");
        }
        if !self.unknown.is_empty() {
            let shown: Vec<&str> = self.unknown.iter().take(10).map(String::as_str).collect();
            let more = self.unknown.len().saturating_sub(shown.len());
            notes.push(format!(
                "{} reference(s) to objects the migration history never created, so Sluice assumed the worst about them (an unknown table counts as large): {}{}. A schema dump (`[migrations] schema_dump`) gives Sluice what came before the history.",
                self.unknown.len(),
                shown.join(", "),
                if more > 0 { format!(" and {more} more") } else { String::new() }
            ));
        }
        notes
    }
}

/// One migration file being replayed: checks each statement (when `check`), then applies it.
struct Replay<'a> {
    file: &'a SourceFile,
    facts: &'a Facts<'a>,
    check: bool,
    findings: Vec<Finding>,
}

impl Replay<'_> {
    fn statement(
        &mut self,
        statement: &Statement,
        schema: &mut Schema,
        state: &mut MigrationState,
        coverage: &mut Coverage,
    ) {
        let statement = state.resolve(statement, schema);
        if self.check {
            coverage.count(&statement);
            for unknown in schema.unknown_references(&statement.ddl) {
                coverage
                    .unknown
                    .push(format!("{} {} ({}:{})", unknown.kind, unknown.name, self.file.display, statement.span.line));
            }
            self.check(&statement, schema, state, &mut |f| f);
        }
        state.observe(&statement, schema);
        let origin =
            Origin { file: self.file.display.clone(), line: statement.span.line, migration: Some(state.index) };
        schema.apply(&statement, &origin);
        if let Some(block) = &statement.block {
            self.do_block(block, schema, state, &origin);
        }
    }

    /// Runs every rule on a statement. A statement that does nothing (`IF [NOT] EXISTS` on an
    /// object that is, or is not, there) is not checked at all, and its sub-commands that do
    /// nothing are left out.
    fn check(
        &mut self,
        statement: &Statement,
        schema: &Schema,
        state: &MigrationState,
        mark: &mut dyn FnMut(Finding) -> Finding,
    ) {
        if schema.no_op(&statement.ddl).is_some() {
            return;
        }
        let effective = schema.without_no_op_actions(&statement.ddl).map(|ddl| Statement { ddl, ..statement.clone() });
        let statement = effective.as_ref().unwrap_or(statement);
        let mut found = Vec::new();
        let cx = Context { file: self.file, statement, schema, role: Role::Migration(state), facts: self.facts };
        check_statement(&cx, &mut found);
        self.findings.extend(found.into_iter().map(mark));
    }

    /// The statements of a DO block run as one statement: in one transaction, each under the
    /// condition of its branch, which every finding on them says.
    fn do_block(&mut self, block: &Block, schema: &mut Schema, state: &mut MigrationState, origin: &Origin) {
        for inner in &block.statements {
            state.do_block = Some(inner.branch);
            let statement = state.resolve(&inner.statement, schema);
            if self.check {
                self.check(&statement, schema, state, &mut |mut finding| {
                    finding.message = format!("{} ({})", finding.message, inner.branch.describe());
                    finding
                });
            }
            state.observe(&statement, schema);
            schema.apply(&statement, &Origin { line: statement.span.line, ..origin.clone() });
        }
        state.end_do_block();
    }
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
    let mut coverage = Coverage::default();
    if let Some(dump) = &sources.schema_dump {
        schema.apply_all(&dump.parsed.statements, &dump.display, None);
    }

    let layout_has_down = sources.migrations.iter().any(|m| m.down.is_some());
    for (index, source) in sources.migrations.iter().enumerate() {
        let file = &source.up;
        let down = source.down.as_ref().map(|down| down.parsed.statements.iter().map(|s| s.ddl.clone()).collect());
        let mut state = MigrationState {
            index,
            migration: Some(source.migration.clone()),
            layout_has_down,
            down,
            ..MigrationState::default()
        };
        let mut replay =
            Replay { file, facts: &facts, check: selected(&file.display), findings: source.findings.clone() };
        for (position, statement) in file.parsed.statements.iter().enumerate() {
            state.enter_runner_transaction(source.transactions.get(position).cloned().flatten());
            replay.statement(statement, &mut schema, &mut state, &mut coverage);
        }
        if replay.check {
            let mut file_findings = replay.findings;
            for rule in rules::REGISTRY {
                rule.finish_file(file, &mut file_findings);
            }
            findings.extend(suppress::apply(file, file_findings));
            // After suppression: nothing hides what was not read.
            findings.extend(unread_text::findings(file));
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
            let mut out = suppress::apply(file, out);
            out.extend(unread_text::findings(file));
            out
        })
        .collect();
    findings.extend(query_findings);

    let findings = apply_levels(findings, &settings.levels);
    let mut report = Report { findings, notes: coverage.notes() };
    report.sort();
    report
}

/// The schema a dump and migrations build, replayed as `lint` replays them (search_path, DO
/// blocks, the tool's transactions) without checking anything.
pub fn replay(schema_dump: Option<&SourceFile>, migrations: &[MigrationSource]) -> Schema {
    let policies = Policies::default();
    let facts = Facts { postgres_version: 15, policies: &policies, queries: &[], under_review: false };
    replay_unchecked(schema_dump, migrations, &facts)
}

fn replay_unchecked(schema_dump: Option<&SourceFile>, migrations: &[MigrationSource], facts: &Facts) -> Schema {
    let mut schema = Schema::default();
    let mut coverage = Coverage::default();
    if let Some(dump) = schema_dump {
        schema.apply_all(&dump.parsed.statements, &dump.display, None);
    }
    for (index, source) in migrations.iter().enumerate() {
        let mut state = MigrationState { index, ..MigrationState::default() };
        let mut replay = Replay { file: &source.up, facts, check: false, findings: Vec::new() };
        for (position, statement) in source.up.parsed.statements.iter().enumerate() {
            state.enter_runner_transaction(source.transactions.get(position).cloned().flatten());
            replay.statement(statement, &mut schema, &mut state, &mut coverage);
        }
    }
    schema
}

/// The schema the whole history builds.
pub fn final_schema(sources: &Sources) -> Schema {
    replay(sources.schema_dump.as_ref(), &sources.migrations)
}

/// Lints the down (rollback) file of migration `index` as a down migration: against the schema
/// as it stands after that migration, where everything the history created already exists.
pub fn lint_down(sources: &Sources, settings: &Settings, index: usize) -> Report {
    let facts = Facts {
        postgres_version: settings.postgres_version,
        policies: &settings.policies,
        queries: &sources.queries,
        under_review: settings.under_review,
    };
    let mut schema = replay_unchecked(sources.schema_dump.as_ref(), &sources.migrations[..=index], &facts);
    let mut coverage = Coverage::default();
    let source = &sources.migrations[index];
    let Some(file) = &source.down else { return Report::default() };
    let mut state = MigrationState {
        // No migration created anything the rollback touches: it all exists in production.
        index: usize::MAX,
        migration: Some(source.migration.clone()),
        ..MigrationState::default()
    };
    // The tool runs the rollback the way it runs the migration.
    state.enter_runner_transaction(source.transactions.first().cloned().flatten());
    let mut replay = Replay { file, facts: &facts, check: true, findings: Vec::new() };
    for statement in &file.parsed.statements {
        replay.statement(statement, &mut schema, &mut state, &mut coverage);
    }
    let mut found = replay.findings;
    for rule in rules::REGISTRY {
        rule.finish_file(file, &mut found);
    }
    let mut findings = suppress::apply(file, found);
    // After suppression: nothing hides what was not read.
    findings.extend(unread_text::findings(file));
    let mut report = Report { findings: apply_levels(findings, &settings.levels), notes: coverage.notes() };
    report.sort();
    report
}
