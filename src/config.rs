//! `sluice.toml`: found by walking up from the working directory, overridden by flags.
//! Unknown keys are errors naming the key, so a typo never silently disables a check.

use crate::error::{parse_toml, read_text, Error, Result};
use crate::finding::Severity;
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

/// The migration tool that runs the history: it decides the order, how a file is split into
/// statements and the transactions around them (see `schema::tools`, one file per tool).
/// `auto` detects it from the directory's marker files and says why under `--explain`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Layout {
    #[default]
    Auto,
    /// Plain `*.sql` files in file-name order, each statement on its own (psql-style runners).
    Flat,
    Flyway,
    /// diesel's `<version>_name/up.sql` folders (`folder` is the old name).
    #[serde(alias = "folder")]
    Diesel,
    GolangMigrate,
    Goose,
    Sqlx,
    Refinery,
    Prisma,
    Drizzle,
    Liquibase,
    Sqitch,
    Atlas,
    Dbmate,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MigrationsConfig {
    #[serde(default = "default_migrations_dir")]
    pub dir: PathBuf,
    #[serde(default)]
    pub layout: Layout,
    /// A `pg_dump --schema-only` file to start the schema from, instead of (or before) the history.
    #[serde(default)]
    pub schema_dump: Option<PathBuf>,
    /// Whether the migration runner wraps each file in a transaction. Unset: decided by the layout.
    #[serde(default)]
    pub transaction_per_file: Option<bool>,
    /// `sluice lint` reports migrations from this version on (earlier ones are replayed only).
    #[serde(default)]
    pub since: Option<String>,
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
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QueriesConfig {
    #[serde(default = "default_query_dirs")]
    pub dirs: Vec<PathBuf>,
}

fn default_query_dirs() -> Vec<PathBuf> {
    vec![PathBuf::from("queries")]
}

impl Default for QueriesConfig {
    fn default() -> Self {
        QueriesConfig { dirs: default_query_dirs() }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PoliciesConfig {
    #[serde(default = "default_policies_dir")]
    pub dir: PathBuf,
}

fn default_policies_dir() -> PathBuf {
    PathBuf::from("policies")
}

impl Default for PoliciesConfig {
    fn default() -> Self {
        PoliciesConfig { dir: default_policies_dir() }
    }
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FreezeConfig {
    /// Default `policies/freeze.toml`.
    #[serde(default)]
    pub calendar: Option<PathBuf>,
    /// Default `overrides.toml` beside the calendar, when present.
    #[serde(default)]
    pub overrides: Option<PathBuf>,
    #[serde(default)]
    pub audit_log: Option<PathBuf>,
    #[serde(default)]
    pub max_override_hours: Option<u32>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlanConfig {
    /// The scale spec; when set, `sluice check` also compares plans.
    #[serde(default)]
    pub scale: Option<PathBuf>,
    /// Whether `check` must fail when no plans can be obtained (no PostgreSQL).
    #[serde(default)]
    pub required: Option<bool>,
    #[serde(default)]
    pub seq_scan_rows: Option<u64>,
    #[serde(default)]
    pub cost_ratio_error: Option<f64>,
    #[serde(default)]
    pub cost_ratio_warning: Option<f64>,
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

    pub fn policies_dir(&self) -> PathBuf {
        self.resolve(&self.config.policies.dir)
    }
}

/// Parses `sluice.toml` text. `path` is only used in error messages.
pub fn parse(path: &Path, text: &str) -> Result<Config> {
    let config: Config = parse_toml(path, text)?;
    for id in config.rules.keys() {
        if crate::rules::find(id).is_none() {
            let line = text.lines().position(|l| l.contains(id.as_str())).map(|i| i + 1);
            return Err(Error::invalid(
                path,
                line,
                format!("unknown rule `{id}` in [rules]; `sluice rules` lists the rule ids"),
            ));
        }
    }
    if !(9..=30).contains(&config.postgres_version) {
        return Err(Error::invalid(
            path,
            None,
            format!("postgres_version = {} is not a PostgreSQL major version", config.postgres_version),
        ));
    }
    Ok(config)
}

/// Loads `explicit` if given, else the nearest `sluice.toml` walking up from `start`, else defaults rooted at `start`.
pub fn load(explicit: Option<&Path>, start: &Path) -> Result<Loaded> {
    let file = match explicit {
        Some(p) => {
            if !p.is_file() {
                return Err(Error::Usage(format!("{}: no such configuration file", p.display())));
            }
            Some(p.to_path_buf())
        }
        None => start.ancestors().map(|d| d.join(CONFIG_FILE)).find(|p| p.is_file()),
    };
    match file {
        Some(file) => {
            let text = read_text(&file)?;
            let config = parse(&file, &text)?;
            let root = file.parent().map(Path::to_path_buf).unwrap_or_else(|| start.to_path_buf());
            let root = if root.as_os_str().is_empty() { PathBuf::from(".") } else { root };
            Ok(Loaded { config, root, file: Some(file) })
        }
        None => Ok(Loaded { config: Config::default(), root: start.to_path_buf(), file: None }),
    }
}
