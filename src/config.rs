//! `sluice.toml`: found by walking up from the working directory, overridden by flags.
//! Unknown keys are errors naming the key, so a typo never silently disables a check.

use crate::error::{line_of_key, line_of_offset, parse_toml, read_text, Error, Result};
use crate::finding::Severity;
pub use crate::runner::Layout;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub const CONFIG_FILE: &str = "sluice.toml";

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    #[serde(default = "default_postgres_version")]
    pub postgres_version: u32,
    #[serde(default)]
    pub migrations: MigrationsConfig,
    #[serde(default)]
    pub queries: QueriesConfig,
    #[serde(default)]
    pub policies: PoliciesConfig,
    /// Rule id → severity override ("error" | "warning" | "info" | "off").
    #[serde(default)]
    pub rules: BTreeMap<String, RuleLevel>,
    #[serde(default)]
    pub freeze: FreezeConfig,
    #[serde(default)]
    pub plan: PlanConfig,
    /// The directories named explicitly, in sluice.toml or on the command line: they must exist.
    #[serde(skip)]
    pub named_dirs: Vec<NamedDir>,
    /// The files named the same way (`[queries] sqlc`): they must exist too.
    #[serde(skip)]
    pub named_files: Vec<NamedDir>,
}

/// A directory the configuration or the command line names explicitly. It must exist: a typo in
/// `[policies] dir` would otherwise silently turn the policy checks off. A default directory
/// may be absent (nothing declared).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamedDir {
    /// How it was given: `[policies] dir`, `--queries`.
    pub key: &'static str,
    pub path: PathBuf,
    /// Its line in sluice.toml; `None` for a flag.
    pub line: Option<usize>,
}

fn default_postgres_version() -> u32 {
    15
}

impl Default for Config {
    fn default() -> Self {
        Config {
            postgres_version: default_postgres_version(),
            migrations: MigrationsConfig::default(),
            queries: QueriesConfig::default(),
            policies: PoliciesConfig::default(),
            rules: BTreeMap::new(),
            freeze: FreezeConfig::default(),
            plan: PlanConfig::default(),
            named_dirs: Vec::new(),
            named_files: Vec::new(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RuleLevel {
    Error,
    Warning,
    Info,
    Off,
}

impl RuleLevel {
    pub fn severity(self) -> Option<Severity> {
        match self {
            RuleLevel::Error => Some(Severity::Error),
            RuleLevel::Warning => Some(Severity::Warning),
            RuleLevel::Info => Some(Severity::Info),
            RuleLevel::Off => None,
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MigrationsConfig {
    #[serde(default = "default_migrations_dir")]
    pub dir: PathBuf,
    #[serde(default)]
    pub layout: Layout,
    /// A `pg_dump --schema-only` file to start the schema from, instead of (or before) the history.
    pub schema_dump: Option<PathBuf>,
    /// Whether the migration runner wraps each file in a transaction. Unset: decided by the layout.
    pub transaction_per_file: Option<bool>,
    /// `sluice lint` reports migrations from this version on (earlier ones are replayed only).
    pub since: Option<String>,
    /// The share (percent) of the checked migration statements that may go not understood before
    /// the verdict is an error (`history-not-understood`; default 25, 100 turns it off).
    pub max_not_understood_percent: Option<u32>,
}

fn default_migrations_dir() -> PathBuf {
    PathBuf::from("migrations")
}

impl Default for MigrationsConfig {
    fn default() -> Self {
        MigrationsConfig {
            dir: default_migrations_dir(),
            layout: Layout::Auto,
            schema_dump: None,
            transaction_per_file: None,
            since: None,
            max_not_understood_percent: None,
        }
    }
}

/// Where the application's queries are (see `crate::queries`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QueriesConfig {
    /// Directories of `.sql` query files, any placeholder style.
    #[serde(default = "default_query_dirs")]
    pub dirs: Vec<PathBuf>,
    /// sqlc configurations (`sqlc.yaml`, `sqlc.yml`, `sqlc.json`): their query paths. Unset: the
    /// one at the project's root, when there is one; `[]`: none.
    #[serde(default)]
    pub sqlc: Option<Vec<PathBuf>>,
    /// Directories of application code scanned for SQL at known database calls.
    #[serde(default)]
    pub code: Vec<PathBuf>,
    /// The project's own functions that take SQL (`rawQuery`, `db.rawQuery`): the first
    /// argument of their calls in the code directories is read as a query (all languages read but
    /// Kotlin; see `queries::code::ProjectCalls`).
    #[serde(default)]
    pub calls: Vec<String>,
    /// Exports of production's `pg_stat_statements` (`sluice stats workload`): one snapshot, or
    /// two taken some time apart for rates. Policy data: `sluice check` reads them from the base.
    #[serde(default)]
    pub workload: Vec<PathBuf>,
    /// The time between the two workload snapshots, when they carry no `captured_at`
    /// (`--workload-interval`; never in sluice.toml).
    #[serde(skip)]
    pub workload_interval: Option<std::time::Duration>,
}

fn default_query_dirs() -> Vec<PathBuf> {
    vec![PathBuf::from("queries")]
}

impl Default for QueriesConfig {
    fn default() -> Self {
        QueriesConfig {
            dirs: default_query_dirs(),
            sqlc: None,
            code: Vec::new(),
            calls: Vec::new(),
            workload: Vec::new(),
            workload_interval: None,
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PoliciesConfig {
    #[serde(default = "default_policies_dir")]
    pub dir: PathBuf,
    /// An export of production's `pg_stat_user_indexes` (`sluice stats indexes`).
    #[serde(default)]
    pub index_usage: Option<PathBuf>,
    /// A workload or index-usage snapshot older than this is a note (default 30).
    #[serde(default)]
    pub snapshot_max_age_days: Option<u32>,
}

/// [`PoliciesConfig::snapshot_max_age_days`] when unset.
pub const DEFAULT_SNAPSHOT_MAX_AGE_DAYS: u32 = 30;

fn default_policies_dir() -> PathBuf {
    PathBuf::from("policies")
}

impl Default for PoliciesConfig {
    fn default() -> Self {
        PoliciesConfig { dir: default_policies_dir(), index_usage: None, snapshot_max_age_days: None }
    }
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FreezeConfig {
    /// Default `policies/freeze.toml`.
    pub calendar: Option<PathBuf>,
    /// Default `overrides.toml` beside the calendar, when present.
    pub overrides: Option<PathBuf>,
    pub audit_log: Option<PathBuf>,
    pub max_override_hours: Option<u32>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlanConfig {
    /// The scale spec; when set, `sluice check` also compares plans.
    pub scale: Option<PathBuf>,
    /// Whether `check` must fail when no plans can be obtained (no PostgreSQL).
    pub required: Option<bool>,
    pub seq_scan_rows: Option<u64>,
    pub cost_ratio_error: Option<f64>,
    pub cost_ratio_warning: Option<f64>,
    /// Below this estimated cost a head plan is cheap: a cost ratio is then no regression.
    #[serde(default)]
    pub cost_floor: Option<f64>,
    /// Above this estimated cost a query with no base plan is `plan-expensive`.
    #[serde(default)]
    pub cost_limit: Option<f64>,
    /// A production statistics snapshot (`sluice stats columns`): what the scale spec does not
    /// name is generated from it.
    #[serde(default)]
    pub stats: Option<PathBuf>,
    /// `generated` (default) or `statistics`: production's figures installed on a fixture
    /// built to production's page counts.
    #[serde(default)]
    pub fixture: Option<FixtureKind>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum FixtureKind {
    Generated,
    Statistics,
}

/// A loaded configuration and the directory paths in it are relative to.
#[derive(Debug, Clone)]
pub struct Loaded {
    pub config: Config,
    /// The directory holding `sluice.toml` (or the working directory when there is none).
    pub root: PathBuf,
    /// The file it came from, if any.
    pub file: Option<PathBuf>,
}

impl Loaded {
    pub fn resolve(&self, path: &Path) -> PathBuf {
        if path.is_absolute() {
            path.to_path_buf()
        } else {
            self.root.join(path)
        }
    }

    pub fn migrations_dir(&self) -> PathBuf {
        self.resolve(&self.config.migrations.dir)
    }

    pub fn query_dirs(&self) -> Vec<PathBuf> {
        self.config.queries.dirs.iter().map(|d| self.resolve(d)).collect()
    }

    /// Whether `[queries] dirs` is left at its default (`queries` beside the configuration),
    /// which a project need not have.
    pub fn query_dirs_defaulted(&self) -> bool {
        self.config.queries.dirs == default_query_dirs()
    }

    /// The sqlc configurations named, resolved; `None` when `[queries] sqlc` is unset (the
    /// caller looks for one at the root).
    pub fn sqlc_configs(&self) -> Option<Vec<PathBuf>> {
        self.config.queries.sqlc.as_ref().map(|files| files.iter().map(|f| self.resolve(f)).collect())
    }

    /// The application code directories, resolved.
    pub fn code_dirs(&self) -> Vec<PathBuf> {
        self.config.queries.code.iter().map(|d| self.resolve(d)).collect()
    }

    pub fn policies_dir(&self) -> PathBuf {
        self.resolve(&self.config.policies.dir)
    }

    /// The workload snapshots named, resolved.
    pub fn workload_files(&self) -> Vec<PathBuf> {
        self.config.queries.workload.iter().map(|f| self.resolve(f)).collect()
    }

    /// The index-usage snapshot named, resolved.
    pub fn index_usage_file(&self) -> Option<PathBuf> {
        self.config.policies.index_usage.as_ref().map(|f| self.resolve(f))
    }

    pub fn snapshot_max_age_days(&self) -> u32 {
        self.config.policies.snapshot_max_age_days.unwrap_or(DEFAULT_SNAPSHOT_MAX_AGE_DAYS)
    }

    /// Fails on the first explicitly named directory `problem` finds wrong (it returns what is
    /// wrong with a resolved path, `None` when it is a directory). The error names the key, the
    /// path as written and as resolved, and the line of sluice.toml.
    pub fn check_named_dirs(&self, problem: &dyn Fn(&Path) -> Result<Option<&'static str>>) -> Result<()> {
        self.check_named(&self.config.named_dirs, problem)
    }

    /// [`check_named_dirs`](Self::check_named_dirs) for the files named (`problem` says what is
    /// wrong with a file).
    pub fn check_named_files(&self, problem: &dyn Fn(&Path) -> Result<Option<&'static str>>) -> Result<()> {
        self.check_named(&self.config.named_files, problem)
    }

    /// [`check_named_files`](Self::check_named_files) for the files named by `key` only
    /// (`[queries] sqlc`).
    pub fn check_named_files_of(
        &self,
        key: &str,
        problem: &dyn Fn(&Path) -> Result<Option<&'static str>>,
    ) -> Result<()> {
        let of_key: Vec<NamedDir> = self.config.named_files.iter().filter(|n| n.key == key).cloned().collect();
        self.check_named(&of_key, problem)
    }

    fn check_named(&self, list: &[NamedDir], problem: &dyn Fn(&Path) -> Result<Option<&'static str>>) -> Result<()> {
        for named in list {
            let resolved = self.resolve(&named.path);
            let Some(what) = problem(&resolved)? else { continue };
            let mut message = format!("{} {}: {what}", named.key, named.path.display());
            if resolved != named.path {
                message.push_str(&format!(" ({})", resolved.display()));
            }
            return Err(match (&self.file, named.line) {
                (Some(file), Some(line)) => Error::invalid(file, Some(line), message),
                _ => Error::Usage(message),
            });
        }
        Ok(())
    }
}

/// What is wrong with a file on disk, if anything.
pub fn disk_file_problem(path: &Path) -> Result<Option<&'static str>> {
    Ok(match std::fs::metadata(path) {
        Ok(m) if m.is_file() => None,
        Ok(_) => Some("not a file"),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Some("no such file"),
        Err(e) => return Err(Error::io(path, e)),
    })
}

/// What is wrong with a directory on disk, if anything.
pub fn disk_dir_problem(path: &Path) -> Result<Option<&'static str>> {
    Ok(match std::fs::metadata(path) {
        Ok(m) if m.is_dir() => None,
        Ok(_) => Some("not a directory"),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Some("no such directory"),
        Err(e) => return Err(Error::io(path, e)),
    })
}

impl Config {
    /// Applies the command-line directories, which replace the configured ones (and must exist too).
    pub fn override_dirs(&mut self, migrations: Option<&PathBuf>, queries: &[PathBuf], policies: Option<&PathBuf>) {
        let mut replace = |key: &str, flag: &'static str, paths: Vec<PathBuf>| {
            self.named_dirs.retain(|d| d.key != key);
            self.named_dirs.extend(paths.into_iter().map(|path| NamedDir { key: flag, path, line: None }));
        };
        if let Some(dir) = migrations {
            replace("[migrations] dir", "--migrations", vec![dir.clone()]);
            self.migrations.dir = dir.clone();
        }
        if !queries.is_empty() {
            replace("[queries] dirs", "--queries", queries.to_vec());
            self.queries.dirs = queries.to_vec();
        }
        if let Some(dir) = policies {
            replace("[policies] dir", "--policies", vec![dir.clone()]);
            self.policies.dir = dir.clone();
        }
    }
}

/// Where sluice.toml names directories, with their spans (for the line in errors).
#[derive(Deserialize, Default)]
struct DirKeys {
    #[serde(default)]
    migrations: DirSection,
    #[serde(default)]
    queries: DirSection,
    #[serde(default)]
    policies: DirSection,
}

#[derive(Deserialize, Default)]
struct DirSection {
    dir: Option<toml::Spanned<PathBuf>>,
    dirs: Option<Vec<toml::Spanned<PathBuf>>>,
    code: Option<Vec<toml::Spanned<PathBuf>>>,
    sqlc: Option<Vec<toml::Spanned<PathBuf>>>,
    workload: Option<Vec<toml::Spanned<PathBuf>>>,
    index_usage: Option<toml::Spanned<PathBuf>>,
    calls: Option<Vec<toml::Spanned<String>>>,
}

/// The files sluice.toml names (`[queries] sqlc` and `workload`, `[policies] index_usage`),
/// with their lines.
fn named_files(path: &Path, text: &str) -> Result<Vec<NamedDir>> {
    let keys: DirKeys = parse_toml(path, text)?;
    let named = |key: &'static str, file: toml::Spanned<PathBuf>| NamedDir {
        key,
        line: Some(line_of_offset(text, file.span().start)),
        path: file.into_inner(),
    };
    let mut out: Vec<NamedDir> = keys.queries.sqlc.into_iter().flatten().map(|f| named("[queries] sqlc", f)).collect();
    out.extend(keys.queries.workload.into_iter().flatten().map(|f| named("[queries] workload", f)));
    out.extend(keys.policies.index_usage.map(|f| named("[policies] index_usage", f)));
    Ok(out)
}

fn named_dirs(path: &Path, text: &str) -> Result<Vec<NamedDir>> {
    let keys: DirKeys = parse_toml(path, text)?;
    let named = |key: &'static str, dir: toml::Spanned<PathBuf>| NamedDir {
        key,
        line: Some(line_of_offset(text, dir.span().start)),
        path: dir.into_inner(),
    };
    let mut out = Vec::new();
    out.extend(keys.migrations.dir.map(|d| named("[migrations] dir", d)));
    out.extend(keys.queries.dirs.into_iter().flatten().map(|d| named("[queries] dirs", d)));
    out.extend(keys.queries.code.into_iter().flatten().map(|d| named("[queries] code", d)));
    out.extend(keys.policies.dir.map(|d| named("[policies] dir", d)));
    Ok(out)
}

/// Every `[queries] calls` entry is a function or method name, named once; else the entry's line.
fn check_calls(path: &Path, text: &str) -> Result<()> {
    let keys: DirKeys = parse_toml(path, text)?;
    let mut seen = std::collections::HashSet::new();
    for entry in keys.queries.calls.into_iter().flatten() {
        let line = Some(line_of_offset(text, entry.span().start));
        let name = entry.get_ref();
        let problem =
            call_problem(name).or_else(|| (!seen.insert(name.clone())).then(|| format!("`{name}` is named twice")));
        if let Some(problem) = problem {
            return Err(Error::invalid(path, line, format!("[queries] calls: {problem}")));
        }
    }
    Ok(())
}

/// What is wrong with a `[queries] calls` entry, if anything: it must be a name, or names joined
/// by dots.
pub fn call_problem(entry: &str) -> Option<String> {
    let valid_name = |name: &str| {
        let mut chars = name.chars();
        chars.next().is_some_and(|c| c.is_alphabetic() || c == '_' || c == '$')
            && chars.all(|c| c.is_alphanumeric() || c == '_' || c == '$')
    };
    (!entry.split('.').all(valid_name)).then(|| {
        format!("`{entry}` is not a function or method name (`rawQuery`, `db.rawQuery`) whose first argument is SQL")
    })
}

/// What is wrong with a `[rules]` entry (`id = level`), if anything. The configuration keeps
/// rule ids as data: the caller asks the rule registry (`lint::rule_level_problem`).
pub type RuleCheck<'a> = &'a dyn Fn(&str, &RuleLevel) -> Option<String>;

/// Parses `sluice.toml` text, each `[rules]` entry checked by `rules`. `path` is only used in
/// error messages.
pub fn parse(path: &Path, text: &str, rules: RuleCheck) -> Result<Config> {
    let mut config: Config = parse_toml(path, text)?;
    config.named_dirs = named_dirs(path, text)?;
    config.named_files = named_files(path, text)?;
    for (id, level) in &config.rules {
        if let Some(problem) = rules(id, level) {
            let line = text.lines().position(|l| l.contains(id.as_str())).map(|i| i + 1);
            return Err(Error::invalid(path, line, problem));
        }
    }
    check_calls(path, text)?;
    if let Some(percent) = config.migrations.max_not_understood_percent.filter(|p| *p > 100) {
        return Err(Error::invalid(
            path,
            line_of_key(text, "max_not_understood_percent"),
            format!("[migrations] max_not_understood_percent = {percent} is not a percentage (0 to 100)"),
        ));
    }
    if !(9..=30).contains(&config.postgres_version) {
        return Err(Error::invalid(
            path,
            line_of_key(text, "postgres_version"),
            format!("postgres_version = {} is not a PostgreSQL major version", config.postgres_version),
        ));
    }
    Ok(config)
}

/// Loads `explicit` if given, else the nearest `sluice.toml` walking up from `start`, else
/// defaults rooted at `start`; `rules` as in [`parse`].
pub fn load(explicit: Option<&Path>, start: &Path, rules: RuleCheck) -> Result<Loaded> {
    let file = match explicit {
        Some(p) => {
            if !p.exists() {
                return Err(Error::Usage(format!("{}: no such configuration file", p.display())));
            }
            Some(p.to_path_buf())
        }
        // A directory (or FIFO) named sluice.toml is found too, and refused when read: skipping
        // it would silently use another configuration, or none.
        None => start.ancestors().map(|d| d.join(CONFIG_FILE)).find(|p| p.exists()),
    };
    match file {
        Some(file) => {
            let text = read_text(&file)?;
            let config = parse(&file, &text, rules)?;
            let root = file.parent().map(Path::to_path_buf).unwrap_or_else(|| start.to_path_buf());
            let root = if root.as_os_str().is_empty() { PathBuf::from(".") } else { root };
            Ok(Loaded { config, root, file: Some(file) })
        }
        None => Ok(Loaded { config: Config::default(), root: start.to_path_buf(), file: None }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lint::rule_level_problem;

    fn loaded(text: &str, root: &Path) -> Loaded {
        let file = root.join(CONFIG_FILE);
        Loaded { config: parse(&file, text, &rule_level_problem).unwrap(), root: root.to_path_buf(), file: Some(file) }
    }

    #[test]
    fn project_calls_are_names_and_a_bad_one_is_its_line() {
        let path = Path::new("sluice.toml");
        let good = "[queries]\ncode = [\"src\"]\ncalls = [\"rawQuery\", \"prisma.$queryRawUnsafe\"]\n";
        let config = parse(path, good, &rule_level_problem).unwrap();
        assert_eq!(config.queries.calls, ["rawQuery", "prisma.$queryRawUnsafe"]);
        for (text, problem) in [
            (
                "[queries]\ncalls = [\n  \"rawQuery\",\n  \"raw query\",\n]\n",
                "sluice.toml:4: [queries] calls: `raw query` is not a function or method name",
            ),
            ("[queries]\ncalls = [\"rawQuery()\"]\n", "sluice.toml:2: [queries] calls: `rawQuery()` is not"),
            ("[queries]\ncalls = [\"a..b\"]\n", "sluice.toml:2: [queries] calls: `a..b` is not"),
            ("[queries]\ncalls = [\"q\",\n\"q\"]\n", "sluice.toml:3: [queries] calls: `q` is named twice"),
        ] {
            let err = parse(path, text, &rule_level_problem).unwrap_err();
            assert!(err.to_string().starts_with(problem), "{err}");
            assert!(matches!(err, Error::Invalid { .. }), "exit 2: {err:?}");
        }
        assert!(parse(path, "[queries]\ncalls = \"rawQuery\"\n", &rule_level_problem).is_err(), "a list");
    }

    #[test]
    fn a_named_directory_that_does_not_exist_is_an_error_with_key_and_line() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("queries")).unwrap();
        std::fs::write(dir.path().join("policis"), "").unwrap();
        let text = "[queries]\ndirs = [\"queries\", \"querys\"]\n[policies]\ndir = \"policis\"\n";
        let err = loaded(text, dir.path()).check_named_dirs(&disk_dir_problem).unwrap_err().to_string();
        let file = dir.path().join(CONFIG_FILE);
        let expected = format!(
            "{}:2: [queries] dirs querys: no such directory ({})",
            file.display(),
            dir.path().join("querys").display()
        );
        assert_eq!(err, expected);
        let err = loaded("[policies]\ndir = \"policis\"\n", dir.path())
            .check_named_dirs(&disk_dir_problem)
            .unwrap_err()
            .to_string();
        assert!(err.contains(":2: [policies] dir policis: not a directory"), "{err}");
    }

    #[test]
    fn default_directories_may_be_absent_and_flags_must_exist() {
        let dir = tempfile::tempdir().unwrap();
        let mut config = loaded("postgres_version = 16\n", dir.path());
        assert!(config.check_named_dirs(&disk_dir_problem).is_ok(), "defaults: nothing declared");
        config.config.override_dirs(None, &[], Some(&PathBuf::from("nowhere")));
        let err = config.check_named_dirs(&disk_dir_problem).unwrap_err();
        assert!(matches!(err, Error::Usage(_)), "{err:?}");
        assert!(err.to_string().starts_with("--policies nowhere: no such directory"), "{err}");
    }

    #[test]
    fn a_configuration_that_is_a_directory_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join(CONFIG_FILE)).unwrap();
        let err = load(None, dir.path(), &rule_level_problem).unwrap_err().to_string();
        assert!(err.ends_with("sluice.toml: cannot read: a directory, not a regular file"), "{err}");
        let err = load(Some(&dir.path().join(CONFIG_FILE)), dir.path(), &rule_level_problem).unwrap_err().to_string();
        assert!(err.ends_with("cannot read: a directory, not a regular file"), "{err}");
    }

    #[test]
    fn bad_values_name_their_line() {
        let err = parse(Path::new("sluice.toml"), "# a comment\npostgres_version = 7\n", &rule_level_problem)
            .unwrap_err()
            .to_string();
        assert_eq!(err, "sluice.toml:2: postgres_version = 7 is not a PostgreSQL major version");
        let err = parse(Path::new("sluice.toml"), "[rules]\n\"unread-text\" = \"off\"\n", &rule_level_problem)
            .unwrap_err()
            .to_string();
        assert_eq!(err, "sluice.toml:2: `unread-text` is always an error: Sluice never passes text it did not read");
    }
}
