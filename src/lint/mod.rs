//! The lint engine: replays migrations in order, checking each statement against the schema
//! just before it, then checks query files against the final schema. Source-agnostic: the
//! files come from disk (`sluice lint`) or from git blobs (`sluice check`).

pub mod baseline;
pub mod load;
pub mod policies;
pub mod query_cache;
pub mod since;
mod suppress;

use crate::config::RuleLevel;
use crate::finding::{Finding, Report};
use crate::policy::Policies;
use crate::queries::ParsedQuery;
use crate::rules::{
    self, constraint_without_rollback, history_not_understood, unread_text, Context, Facts, MigrationState, Role,
    Rollback, RunnerTransaction, SourceFile,
};
use crate::schema::cache::{self, SchemaCache};
use crate::schema::migrations::Migration;
use crate::schema::tools::script::{self, Script, Sending, Wrap};
use crate::schema::{Origin, Schema};
use crate::sql::parse::{self, Statement};
use crate::sql::plpgsql::Block;
use crate::sql::split::Strings;
use rayon::prelude::*;
use std::collections::BTreeMap;
use std::ops::Range;
use std::sync::Arc;

/// A migration as its tool runs it, read but not parsed yet: the engine parses the migrations it
/// replays, in parallel, while it replays the ones before (see [`parse_in_order`]).
#[derive(Debug, Clone)]
pub struct MigrationSource {
    pub migration: Migration,
    /// How findings name the up file.
    pub display: String,
    /// The up file's text, shared with the findings that quote it.
    pub text: Arc<str>,
    /// What the tool sends of it, and how (see `schema::tools::script`).
    pub script: Script,
    /// The rollback: a down file's (display path, text), or the file's own down section.
    pub down: Option<(String, Arc<str>)>,
    /// What the tool would refuse or break in this file (`runner-rejects-migration`).
    pub findings: Vec<Finding>,
}

/// What a migration's statements keep from the parse until they are replayed (see
/// [`parse::Keep`]): the first 512 their syntax trees, the first 8,192 everything. Typical
/// migrations are parsed once; a file of millions of statements holds a record of a couple of
/// hundred bytes per statement, and parses each again just before checking it. The unit tests
/// keep only the first statement whole, so that every migration they lint beyond one statement
/// goes through [`Statement::release`] and [`Statement::restore`].
const KEEP: parse::Keep =
    if cfg!(test) { parse::Keep { trees: 1, whole: 1 } } else { parse::Keep { trees: 512, whole: 8_192 } };

/// A migration parsed: its up file as the tool sends it, the transaction of each statement, and
/// its rollback (parsed only if a rule may ask: see `rules::Rollback`).
#[derive(Debug)]
pub struct ParsedMigration {
    pub up: SourceFile,
    /// Per statement of `up`: the transaction the tool puts it in (or PostgreSQL's implicit one).
    pub transactions: Vec<Option<Arc<RunnerTransaction>>>,
    pub down: Rollback,
    /// The files psql runs from `up` (`\i`, `\ir`), each where it runs.
    pub includes: Vec<ParsedInclude>,
}

/// A file psql runs from a migration, parsed.
#[derive(Debug)]
pub struct ParsedInclude {
    /// Where the include command is in the including file.
    pub at: usize,
    pub file: SourceFile,
    pub includes: Vec<ParsedInclude>,
}

impl ParsedInclude {
    fn parse(included: &script::Included, strings: Strings) -> ParsedInclude {
        let file = script::parse_keeping(
            included.display.clone(),
            Arc::clone(&included.text),
            &included.script,
            strings,
            KEEP,
        );
        let includes = included.script.includes.iter().map(|inner| ParsedInclude::parse(inner, strings)).collect();
        ParsedInclude { at: included.at, file, includes }
    }
}

impl MigrationSource {
    /// A migration whose runner wraps the whole file in a transaction, or runs each statement on
    /// its own: the simple case, for tests and callers without a tool.
    pub fn whole_text(migration: Migration, display: impl Into<String>, text: &str, in_transaction: bool) -> Self {
        let wrap = in_transaction.then(|| Wrap::file("the migration runner wraps the file in a transaction"));
        MigrationSource {
            migration,
            display: display.into(),
            text: text.into(),
            script: Script::whole(text, Sending::EachStatement, wrap),
            down: None,
            findings: Vec::new(),
        }
    }

    /// [`whole_text`](Self::whole_text) of files already parsed (they are parsed again when
    /// replayed: the engine keeps text, not syntax trees).
    pub fn whole_file(migration: Migration, up: SourceFile, down: Option<SourceFile>, in_transaction: bool) -> Self {
        let mut source = MigrationSource::whole_text(migration, up.display, &up.parsed.text, in_transaction);
        source.down = down.map(|down| (down.display, down.parsed.text));
        source
    }

    /// Parses the migration as the first of a history (its strings under PostgreSQL's default).
    pub fn parse(&self) -> ParsedMigration {
        self.parse_under(Strings::On)
    }

    /// Parses the migration, its strings read under `strings` at its start (see [`initial_strings`]).
    pub fn parse_under(&self, strings: Strings) -> ParsedMigration {
        let up = script::parse_keeping(self.display.clone(), Arc::clone(&self.text), &self.script, strings, KEEP);
        let transactions = script::transactions(&up, &self.script);
        let down = Rollback::new(self.down.as_ref().map(|(_, text)| Arc::clone(text)));
        if constraint_without_rollback::may_read_rollback(&up.parsed) {
            // Here, on a parsing thread, rather than when the rule asks, on the replay's.
            down.drops();
        }
        // An included file starts under what is known at the start of the migration: a SET in
        // the including file before it may have changed it.
        let included =
            if strings == Strings::On && names_the_strings_setting(&self.text) { Strings::Unknown } else { strings };
        let includes = self.script.includes.iter().map(|i| ParsedInclude::parse(i, included)).collect();
        ParsedMigration { up, transactions, down, includes }
    }

    /// The rollback parsed as a file of its own (`sluice lint --down`).
    pub fn rollback(&self) -> Option<SourceFile> {
        self.down.as_ref().map(|(display, text)| SourceFile::parse_shared(display.clone(), Arc::clone(text)))
    }

    /// What identifies this migration's part in the schema it builds: its path and the exact
    /// pieces of text the tool sends (see [`cache::Chain`]).
    fn digest(&self) -> cache::Key {
        let pieces = format!("{:?}", self.script.pieces);
        let mut parts: Vec<&[u8]> = vec![self.display.as_bytes(), self.text.as_bytes(), pieces.as_bytes()];
        for (display, text) in self.script.included_texts() {
            parts.extend([display.as_bytes(), text.as_bytes()]);
        }
        cache::digest(&parts)
    }
}

/// Whether `text` names `standard_conforming_strings` (any case): a SET of it, `set_config`, an
/// `ALTER DATABASE … SET`.
fn names_the_strings_setting(text: &str) -> bool {
    static FINDER: std::sync::OnceLock<aho_corasick::AhoCorasick> = std::sync::OnceLock::new();
    let finder = FINDER.get_or_init(|| {
        aho_corasick::AhoCorasick::builder()
            .ascii_case_insensitive(true)
            .build(["standard_conforming_strings"])
            .expect("a literal pattern")
    });
    finder.is_match(text)
}

/// The `standard_conforming_strings` each migration's text starts under: PostgreSQL's default
/// (on) until a migration names the setting, then unknown: the runner may keep one session for
/// every migration, or the database's default may have been changed (issue 38, item 3).
pub fn initial_strings(migrations: &[MigrationSource]) -> Vec<Strings> {
    let names: Vec<bool> = migrations.par_iter().map(|m| names_the_strings_setting(&m.text)).collect();
    let mut named = false;
    names
        .into_iter()
        .map(|this| {
            let strings = if named { Strings::Unknown } else { Strings::On };
            named |= this;
            strings
        })
        .collect()
}

impl MigrationSource {}

/// Everything the linter reads.
#[derive(Debug, Default)]
pub struct Sources {
    pub schema_dump: Option<SourceFile>,
    pub migrations: Vec<MigrationSource>,
    /// What the application runs: query files, sqlc's, SQL in code (see `crate::queries`).
    pub queries: Vec<ParsedQuery>,
    /// What the query sources could not read exactly, as (file, note): one note per file.
    pub query_notes: Vec<(String, String)>,
    /// Files the migration tool skips or refuses, and what could not be checked (reported
    /// when their file is selected).
    pub notices: Vec<Finding>,
    /// Which migration tool runs the history and why (`--explain`).
    pub tool: String,
    /// Production's workload (`[queries] workload`), whose entries are among `queries`: its
    /// rates and interval, for `pool-capacity`.
    pub workload: Option<crate::queries::workload::Workload>,
}

#[derive(Debug, Clone, Default)]
pub struct Settings {
    pub postgres_version: u32,
    pub levels: BTreeMap<String, RuleLevel>,
    pub policies: Policies,
    /// Snapshots of the replayed schema (disabled by default: the CLI turns it on).
    pub cache: SchemaCache,
    /// The files are a change under review (`sluice check`), not a whole project: rules about
    /// who must approve a change (`domain-review-required`) apply.
    pub under_review: bool,
    /// `[migrations] max_not_understood_percent` (`None`: the default).
    pub max_not_understood_percent: Option<u32>,
    /// The findings of unchanged queries, kept between runs (disabled by default: `sluice lint`
    /// turns it on).
    pub query_cache: query_cache::QueryCache,
}

fn check_statement(cx: &Context, out: &mut Vec<Finding>) {
    for rule in rules::REGISTRY {
        rule.check(cx, out);
    }
}

/// What is wrong with `[rules] id = level` in sluice.toml, by the rule registry: an id it does
/// not have, or `unread-text` set below error. The configuration asks (`config::RuleCheck`).
pub fn rule_level_problem(id: &str, level: &RuleLevel) -> Option<String> {
    if rules::find(id).is_none() {
        return Some(format!("unknown rule `{id}` in [rules]; `sluice rules` lists the rule ids"));
    }
    if id == rules::UNREAD_TEXT.id && *level != RuleLevel::Error {
        return Some(format!("`{id}` is always an error: Sluice never passes text it did not read"));
    }
    if id == history_not_understood::META.id && *level != RuleLevel::Error {
        return Some(format!(
            "`{id}` is always an error; set [migrations] max_not_understood_percent to allow more (100 turns it off)"
        ));
    }
    None
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

/// The schema a dump and migrations build: the dump, then every statement each migration's tool
/// sends, replayed unchecked and uncached (see [`schema_after`] for the cached replay).
pub fn replay(schema_dump: Option<&SourceFile>, migrations: &[MigrationSource], postgres_version: u32) -> Schema {
    let mut schema = initial_schema(schema_dump);
    replay_onto(&mut schema, migrations, 0..migrations.len(), postgres_version);
    schema
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
    /// The first statement neither parsed nor fully recognized: (file, line).
    first_not_understood: Option<(String, usize)>,
}

impl Coverage {
    fn count(&mut self, file: &str, statement: &Statement) {
        self.statements += 1;
        if statement.parse_error.is_none() {
            self.parsed += 1;
        } else if statement.fully_recognized {
            self.recognized += 1;
        } else if self.first_not_understood.is_none() {
            self.first_not_understood = Some((file.to_string(), statement.span.line));
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
                "Migration statements checked: {}; read by the SQL parser: {}; by Sluice's fallback recognizer: {}; not understood: {} ({:.2}% understood)",
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

/// The statements of one file being replayed: checks each statement (when `check`), then
/// applies it. The file is passed along rather than held, so that the caller can give a
/// statement its syntax tree just before and take it away just after.
struct Replay<'a> {
    facts: &'a Facts<'a>,
    check: bool,
    findings: Vec<Finding>,
}

impl Replay<'_> {
    fn statement(
        &mut self,
        file: &SourceFile,
        statement: &Statement,
        schema: &mut Schema,
        state: &mut MigrationState,
        coverage: &mut Coverage,
    ) {
        let statement = state.resolve(statement, schema);
        if self.check {
            coverage.count(&file.display, &statement);
            for unknown in schema.unknown_references(&statement.ddl) {
                coverage
                    .unknown
                    .push(format!("{} {} ({}:{})", unknown.kind, unknown.name, file.display, statement.span.line));
            }
            self.check(file, &statement, schema, state, &mut |f| f);
        }
        state.observe(&statement, schema);
        let origin = Origin { file: file.display.clone(), line: statement.span.line, migration: Some(state.index) };
        schema.apply(&statement, &origin);
        if let Some(block) = &statement.block {
            self.do_block(file, block, schema, state, &origin);
        }
    }

    /// Runs every rule on a statement. A statement that does nothing (`IF [NOT] EXISTS` on an
    /// object that is, or is not, there) is checked only by the rules about the locks it may still
    /// take (`Rule::checks_no_ops`), and its sub-commands that do nothing are left out (the rules
    /// see their locks through `Context::table_locks`).
    fn check(
        &mut self,
        file: &SourceFile,
        statement: &Statement,
        schema: &Schema,
        state: &MigrationState,
        mark: &mut dyn FnMut(Finding) -> Finding,
    ) {
        let mut found = Vec::new();
        if schema.no_op(&statement.ddl).is_some() {
            let cx = Context::new(file, statement, schema, Role::Migration(state), self.facts);
            for rule in rules::REGISTRY.iter().filter(|r| r.checks_no_ops()) {
                rule.check(&cx, &mut found);
            }
            self.findings.extend(found.into_iter().map(mark));
            return;
        }
        let effective = schema.without_no_op_actions(&statement.ddl).map(|ddl| Statement { ddl, ..statement.clone() });
        let cx =
            Context::new(file, effective.as_ref().unwrap_or(statement), schema, Role::Migration(state), self.facts)
                .written_as(statement);
        check_statement(&cx, &mut found);
        self.findings.extend(found.into_iter().map(mark));
    }

    /// The statements of a DO block run as one statement: in one transaction, each under the
    /// condition of its branch, which every finding on them says.
    fn do_block(
        &mut self,
        file: &SourceFile,
        block: &Block,
        schema: &mut Schema,
        state: &mut MigrationState,
        origin: &Origin,
    ) {
        for inner in &block.statements {
            state.do_block = Some(inner.branch);
            let statement = state.resolve(&inner.statement, schema);
            if self.check {
                let span = &statement.span;
                self.check(file, &statement, schema, state, &mut |mut finding| {
                    finding.message = format!("{} ({})", finding.message, inner.branch.describe());
                    rules::claims::mark_branch(&mut finding, (span.line, span.column), inner.branch);
                    finding
                });
            }
            state.observe(&statement, schema);
            schema.apply(&statement, &Origin { line: statement.span.line, ..origin.clone() });
        }
        state.end_do_block();
    }
}

/// Which files' findings are reported, by display path.
pub type Selector<'a> = &'a (dyn Fn(&str) -> bool + Sync);

/// Lints `sources`, reporting findings only for files `selected` accepts (the schema is
/// always built from the whole history, or taken from the cache for the part before the
/// first selected migration).
pub fn lint(sources: &Sources, settings: &Settings, selected: Selector) -> Report {
    lint_stages(sources, settings, selected).0
}

/// [`lint`] of a whole project (`sluice lint`), also saying what the schema cache did; an error
/// when a policy entry names no table of the history (see [`policies::check`]).
pub fn lint_reporting_cache(
    sources: &Sources,
    settings: &Settings,
    selected: Selector,
) -> crate::Result<(Report, cache::Use)> {
    let (report, cache_use, policies) = lint_stages(sources, settings, selected);
    policies?;
    Ok((report, cache_use))
}

/// The stages: resume from the schema cache, replay the migrations checking the selected ones,
/// add the tool's notices, check the query files and the policies against the final schema,
/// report.
fn lint_stages(sources: &Sources, settings: &Settings, selected: Selector) -> (Report, cache::Use, crate::Result<()>) {
    let facts = facts(sources, settings);
    let migrations = &sources.migrations;
    let first_checked = migrations.iter().position(|m| selected(&m.display)).unwrap_or(migrations.len());
    let (mut snapshots, mut schema) = Snapshots::resume(sources, settings, first_checked);
    let (mut findings, coverage) = check_migrations(sources, &facts, selected, &mut snapshots, &mut schema);
    for rule in rules::REGISTRY {
        rule.finish_history(&schema, &facts, &mut findings);
    }
    findings.extend(sources.notices.iter().filter(|f| selected(&f.file)).cloned());
    findings.extend(check_queries(sources, settings, &schema, &facts, selected));
    let policies = policies::check(&settings.policies, &schema);
    // Freeing a long history's schema (hundreds of thousands of allocations) is not the
    // report's business: a worker does it while the report is written.
    rayon::spawn(move || drop(schema));
    let mut report = report(findings, &coverage, settings);
    report.notes.extend(sources.query_notes.iter().filter(|(file, _)| selected(file)).map(|(_, note)| note.clone()));
    (report, snapshots.cache_use, policies)
}

/// What every rule may read besides the statement and the schema.
fn facts<'a>(sources: &'a Sources, settings: &'a Settings) -> Facts<'a> {
    Facts {
        postgres_version: settings.postgres_version,
        policies: &settings.policies,
        queries: rules::Queries::new(&sources.queries),
        under_review: settings.under_review,
    }
}

/// The findings with the `[rules]` levels applied, sorted, and what the engine read.
/// Findings a directive silenced are dropped, or kept apart for a review (`sluice check` shows
/// those its change adds).
fn report(mut findings: Vec<Finding>, coverage: &Coverage, settings: &Settings) -> Report {
    let max_percent = settings.max_not_understood_percent.unwrap_or(history_not_understood::DEFAULT_MAX_PERCENT);
    let first = coverage.first_not_understood.as_ref().map(|(file, line)| (file.as_str(), *line));
    findings.extend(history_not_understood::verdict(
        coverage.statements,
        coverage.parsed + coverage.recognized,
        max_percent,
        first,
    ));
    let (suppressed, findings): (Vec<Finding>, Vec<Finding>) =
        apply_levels(findings, &settings.levels).into_iter().partition(|f| f.suppression.is_some());
    let suppressed = if settings.under_review { suppressed } else { Vec::new() };
    let mut report = Report { findings, notes: coverage.notes(), suppressed };
    report.sort();
    report
}

/// The schema cache's part in a lint: the snapshot the replay resumes from and the one it
/// stores, just before the first checked migration.
struct Snapshots<'a> {
    settings: &'a Settings,
    first_checked: usize,
    /// `None`: nothing to resume or store.
    chain: Option<cache::Chain>,
    cache_use: cache::Use,
}

impl<'a> Snapshots<'a> {
    /// The schema to start from: the longest cached prefix before `first_checked`, else the
    /// schema dump's. When `first_checked` is the first migration there is nothing to resume
    /// from or to store, and no reason to hash the history (on a whole small history, 10–16%
    /// of the work).
    fn resume(sources: &Sources, settings: &'a Settings, first_checked: usize) -> (Snapshots<'a>, Schema) {
        let chain = (settings.cache.is_enabled() && first_checked > 0).then(|| chain(sources, settings));
        if chain.is_none() {
            settings.cache.forget_read_ahead();
        }
        let resumed = chain.as_ref().and_then(|chain| settings.cache.resume(chain, first_checked));
        let cache_use = cache::Use { resumed_at: resumed.as_ref().map_or(0, |(at, _)| *at), stored_at: None };
        let schema = resumed.map(|(_, schema)| schema).unwrap_or_else(|| initial_schema(sources.schema_dump.as_ref()));
        (Snapshots { settings, first_checked, chain, cache_use }, schema)
    }

    /// Stores the schema before migration `count` when that is the first checked one.
    fn reached(&mut self, count: usize, schema: &Schema) {
        if count != self.first_checked {
            return;
        }
        if let Some(chain) = self.chain.as_ref().filter(|_| count > self.cache_use.resumed_at) {
            if self.settings.cache.store(chain, count, schema) {
                self.cache_use.stored_at = Some(count);
            }
        }
    }
}

/// Replays the migrations from where `snapshots` resumed onto `schema`, checking those
/// `selected` accepts.
fn check_migrations(
    sources: &Sources,
    facts: &Facts,
    selected: Selector,
    snapshots: &mut Snapshots,
    schema: &mut Schema,
) -> (Vec<Finding>, Coverage) {
    let migrations = &sources.migrations;
    let layout_has_down = migrations.iter().any(|m| m.down.is_some());
    let mut findings: Vec<Finding> = Vec::new();
    let mut coverage = Coverage::default();
    parse_in_order(migrations, snapshots.cache_use.resumed_at..migrations.len(), |index, parsed| {
        snapshots.reached(index, schema);
        let source = &migrations[index];
        let replay = MigrationReplay { index, source, layout_has_down, check: selected(&source.display), facts };
        findings.extend(replay.run(parsed, schema, &mut coverage));
    });
    snapshots.reached(migrations.len(), schema);
    (findings, coverage)
}

/// The schema after the first `count` migrations of `sources`, from the cache when it has it
/// (and then stored there), for callers that need the schema but no findings.
pub fn schema_after(sources: &Sources, settings: &Settings, count: usize) -> Schema {
    let count = count.min(sources.migrations.len());
    let chain = settings.cache.is_enabled().then(|| chain(sources, settings));
    let resumed = chain.as_ref().and_then(|chain| settings.cache.resume(chain, count));
    let from = resumed.as_ref().map_or(0, |(at, _)| *at);
    let mut schema = resumed.map(|(_, schema)| schema).unwrap_or_else(|| initial_schema(sources.schema_dump.as_ref()));
    replay_onto(&mut schema, &sources.migrations, from..count, settings.postgres_version);
    if let Some(chain) = chain.filter(|_| count > from) {
        settings.cache.store(&chain, count, &schema);
    }
    schema
}

/// The schema the whole history builds, replayed as `lint` replays it (search_path, DO blocks,
/// the tool's transactions), uncached.
pub fn final_schema(sources: &Sources) -> Schema {
    let postgres_version = crate::config::Config::default().postgres_version;
    replay(sources.schema_dump.as_ref(), &sources.migrations, postgres_version)
}

/// Replays `migrations[range]` onto `schema`, unchecked.
fn replay_onto(schema: &mut Schema, migrations: &[MigrationSource], range: Range<usize>, postgres_version: u32) {
    let policies = Policies::default();
    let facts =
        Facts { postgres_version, policies: &policies, queries: rules::Queries::default(), under_review: false };
    let layout_has_down = migrations.iter().any(|m| m.down.is_some());
    let mut coverage = Coverage::default();
    parse_in_order(migrations, range, |index, parsed| {
        let source = &migrations[index];
        MigrationReplay { index, source, layout_has_down, check: false, facts: &facts }.run(
            parsed,
            schema,
            &mut coverage,
        );
    });
}

/// The schema before the first migration: empty, or what the schema dump builds.
fn initial_schema(schema_dump: Option<&SourceFile>) -> Schema {
    let mut schema = Schema::default();
    if let Some(dump) = schema_dump {
        schema.apply_all(&dump.parsed.statements, &dump.display, None);
    }
    schema
}

/// The cache keys of every prefix of the history: the schema dump and the PostgreSQL version
/// (what the replay depends on besides the migrations), then each migration. Session state
/// (`search_path`, `timezone`) is not part of a snapshot: each migration starts from the
/// default session, so the schema alone is the state between migrations.
fn chain(sources: &Sources, settings: &Settings) -> cache::Chain {
    let dump = sources.schema_dump.as_ref().map(|d| (d.display.as_str(), &*d.parsed.text));
    let (dump_path, dump_text) = dump.unwrap_or(("", ""));
    let version = settings.postgres_version.to_le_bytes();
    let digests: Vec<cache::Key> = sources.migrations.par_iter().map(MigrationSource::digest).collect();
    cache::Chain::new(&[&version, dump_path.as_bytes(), dump_text.as_bytes()], &digests)
}

/// How much text (and how many files) the engine parses at a time: bounded, so memory holds a
/// few chunks of parsed files, not the history; large enough to keep both cores busy. A small
/// history is cut into at least `CHUNKS` chunks (down to `MIN_CHUNK_BYTES`): a few chunks of it
/// keep the cores as busy, and parsed text takes tens of times its size.
const CHUNK_BYTES: usize = 64 * 1024;
const MIN_CHUNK_BYTES: usize = 16 * 1024;
const CHUNKS: usize = 32;
const CHUNK_FILES: usize = 64;

/// Parses `migrations[range]` in parallel, a chunk at a time, and hands each parsed migration to
/// `replay` in order, while the next chunk is being parsed: the replay, which must go in order,
/// overlaps with the parsing, which need not.
///
/// Both run on rayon's workers, one `join` per chunk: the worker that replays chunk `n` helps
/// parse chunk `n + 1` once it is done, and no other thread competes for the cores. A thread of
/// its own for the replay (or for handing parsed chunks over) made one runnable thread more
/// than a 2-core machine has cores, and rayon's idle workers spinning took turns with it.
fn parse_in_order(
    migrations: &[MigrationSource],
    range: Range<usize>,
    mut replay: impl FnMut(usize, ParsedMigration) + Send,
) {
    let strings = initial_strings(&migrations[..range.end]);
    let parse = |range: Range<usize>| -> (usize, Vec<ParsedMigration>) {
        let parsed = migrations[range.clone()].par_iter().zip(&strings[range.clone()]).map(|(m, s)| m.parse_under(*s));
        (range.start, parsed.collect())
    };
    let mut deliver = |(start, parsed): (usize, Vec<ParsedMigration>)| {
        for (offset, migration) in parsed.into_iter().enumerate() {
            replay(start + offset, migration);
        }
    };
    let mut chunks = chunks(&migrations[..range.end], range.start).into_iter();
    let Some(first) = chunks.next() else { return };
    // On a worker: `join` from any other thread would hand each step to the pool and wait.
    rayon::scope(|_| {
        let mut parsed = parse(first);
        for next in chunks {
            parsed = rayon::join(|| deliver(parsed), || parse(next)).1;
        }
        deliver(parsed);
    });
}

/// `from..migrations.len()` cut into runs of at most `CHUNK_FILES` files and about a
/// `CHUNKS`th of their text, within `MIN_CHUNK_BYTES..=CHUNK_BYTES`.
fn chunks(migrations: &[MigrationSource], from: usize) -> Vec<Range<usize>> {
    let total: usize = migrations[from..].iter().map(|m| m.text.len()).sum();
    let chunk_bytes = (total / CHUNKS).clamp(MIN_CHUNK_BYTES, CHUNK_BYTES);
    let mut out = Vec::new();
    let mut start = from;
    let mut bytes = 0;
    for (index, migration) in migrations.iter().enumerate().skip(from) {
        bytes += migration.text.len();
        if bytes >= chunk_bytes || index + 1 - start >= CHUNK_FILES {
            out.push(start..index + 1);
            start = index + 1;
            bytes = 0;
        }
    }
    if start < migrations.len() {
        out.push(start..migrations.len());
    }
    out
}

/// One migration replayed: each statement checked against the schema just before it (when the
/// file is selected), then applied, one syntax tree at a time.
struct MigrationReplay<'a> {
    index: usize,
    source: &'a MigrationSource,
    layout_has_down: bool,
    check: bool,
    facts: &'a Facts<'a>,
}

impl MigrationReplay<'_> {
    fn run(&self, mut parsed: ParsedMigration, schema: &mut Schema, coverage: &mut Coverage) -> Vec<Finding> {
        let mut state = MigrationState {
            index: self.index,
            migration: Some(self.source.migration.clone()),
            layout_has_down: self.layout_has_down,
            down: std::mem::take(&mut parsed.down),
            ..MigrationState::default()
        };
        let seed = if self.check { self.source.findings.clone() } else { Vec::new() };
        let mut run = FileRun { schema, state: &mut state, coverage, findings: Vec::new() };
        self.file(&mut run, &mut parsed.up, &parsed.transactions, None, &mut parsed.includes, seed);
        run.findings
    }

    /// Replays one file of the migration (the migration itself, or a file psql includes from it,
    /// run at its place with the same session): each statement checked, then applied. Its
    /// findings go through its own directives, then its unread text is added.
    fn file(
        &self,
        run: &mut FileRun,
        file: &mut SourceFile,
        transactions: &[Option<Arc<RunnerTransaction>>],
        outer: Option<&Arc<RunnerTransaction>>,
        includes: &mut [ParsedInclude],
        seed: Vec<Finding>,
    ) {
        let mut replay = Replay { facts: self.facts, check: self.check, findings: seed };
        let text = Arc::clone(&file.parsed.text);
        let mut next_include = 0;
        let statements = file.parsed.statements.len();
        for position in 0..=statements {
            let start = file.parsed.statements.get(position).map_or(usize::MAX, |s| s.span.start);
            while let Some(include) = includes.get_mut(next_include).filter(|i| i.at < start) {
                // psql runs the file in the same session, in whatever transaction is open.
                let outer = transactions.get(position.saturating_sub(1)).cloned().flatten().or(outer.cloned());
                let all = vec![outer.clone(); include.file.parsed.statements.len()];
                self.file(run, &mut include.file, &all, outer.as_ref(), &mut include.includes, Vec::new());
                next_include += 1;
            }
            if position == statements {
                break;
            }
            run.state.enter_runner_transaction(transactions.get(position).cloned().flatten());
            file.parsed.statements[position].restore(&text);
            replay.statement(file, &file.parsed.statements[position], run.schema, run.state, run.coverage);
            // Checked and applied: only whole-file rules read it from now on.
            file.parsed.statements[position].release();
        }
        if !self.check {
            return;
        }
        let mut findings = replay.findings;
        for rule in rules::REGISTRY {
            rule.finish_file(file, &mut findings);
        }
        let mut findings = suppress::apply(file, findings);
        // After suppression: nothing hides what was not read.
        findings.extend(unread_text::findings(file));
        run.findings.extend(findings);
    }
}

/// What the files of one migration share while they are replayed.
struct FileRun<'r> {
    schema: &'r mut Schema,
    state: &'r mut MigrationState,
    coverage: &'r mut Coverage,
    findings: Vec<Finding>,
}

/// The application's queries, checked in parallel against the final schema; those the query
/// cache holds are taken from it, neither parsed nor checked.
fn check_queries(
    sources: &Sources,
    settings: &Settings,
    schema: &Schema,
    facts: &Facts,
    selected: Selector,
) -> Vec<Finding> {
    let queries = &sources.queries;
    let run = queries.iter().any(|q| selected(&q.query.file)).then(|| open_query_cache(sources, settings)).flatten();
    let Some(run) = run else {
        return queries
            .par_iter()
            .filter(|q| selected(&q.query.file))
            .flat_map_iter(|q| check_query(q, schema, facts))
            .collect();
    };
    let checked: Vec<(Vec<Finding>, query_cache::Outcome)> = queries
        .par_iter()
        .enumerate()
        .filter(|(_, query)| selected(&query.query.file))
        .map(|(index, query)| {
            if let Some((key, findings)) = run.found(index) {
                return (findings, query_cache::Outcome::Found(key));
            }
            let read = std::sync::atomic::AtomicBool::new(false);
            let facts = Facts { queries: facts.queries.marking(&read), ..*facts };
            let findings = check_query(query, schema, &facts);
            let outcome = run.checked(index, &findings, read.load(std::sync::atomic::Ordering::Relaxed));
            (findings, outcome)
        })
        .collect();
    let (findings, outcomes): (Vec<Vec<Finding>>, Vec<query_cache::Outcome>) = checked.into_iter().unzip();
    run.finish(outcomes);
    findings.into_iter().flatten().collect()
}

/// The query cache for this run: its entries hold for the schema the whole history builds (its
/// snapshot key) and the facts the rules read besides the queries.
fn open_query_cache<'c>(sources: &Sources, settings: &'c Settings) -> Option<query_cache::Run<'c>> {
    if !settings.query_cache.is_enabled() {
        return None;
    }
    let chain = chain(sources, settings);
    let schema = chain.key(chain.len());
    let policies = format!("{:?}", settings.policies);
    let under_review = [u8::from(settings.under_review)];
    let context: [&[u8]; 3] = [schema, policies.as_bytes(), &under_review];
    settings.query_cache.open(&context, &sources.queries)
}

/// One query checked: rules and directives see the SQL with its parameters written `$n`; what
/// they find is then moved to where the query is written (its file, line and column, the
/// query's name or call).
fn check_query(query: &ParsedQuery, schema: &Schema, facts: &Facts) -> Vec<Finding> {
    let file = query.file();
    let mut out = Vec::new();
    for statement in &file.parsed.statements {
        check_statement(&Context::new(file, statement, schema, Role::Query, facts), &mut out);
    }
    let out = suppress::apply(file, out);
    let mut out: Vec<Finding> = out
        .into_iter()
        .map(|finding| {
            let statement = query.statement_at(finding.line);
            query.locate(finding, statement)
        })
        .collect();
    // After suppression: nothing hides what was not read.
    let at = |line, column| query.host_position(line, column);
    out.extend(unread_text::findings_at(file, &at).map(|finding| query.host_excerpt(finding)));
    out
}

/// Lints the down (rollback) file of migration `index` as a down migration: against the schema
/// as it stands after that migration (from the schema cache when it has it), where everything
/// the history created already exists.
pub fn lint_down(sources: &Sources, settings: &Settings, index: usize) -> Report {
    let facts = facts(sources, settings);
    let source = &sources.migrations[index];
    let Some(file) = &source.rollback() else { return Report::default() };
    let mut schema = schema_after(sources, settings, index + 1);
    let mut coverage = Coverage::default();
    let mut state = MigrationState {
        // No migration created anything the rollback touches: it all exists in production.
        index: usize::MAX,
        migration: Some(source.migration.clone()),
        ..MigrationState::default()
    };
    // The tool runs the rollback the way it runs the migration.
    state.enter_runner_transaction(source.parse().transactions.first().cloned().flatten());
    let mut replay = Replay { facts: &facts, check: true, findings: Vec::new() };
    for statement in &file.parsed.statements {
        replay.statement(file, statement, &mut schema, &mut state, &mut coverage);
    }
    let mut found = replay.findings;
    for rule in rules::REGISTRY {
        rule.finish_file(file, &mut found);
    }
    let mut findings = suppress::apply(file, found);
    // After suppression: nothing hides what was not read.
    findings.extend(unread_text::findings(file));
    report(findings, &coverage, settings)
}
