//! The gate's own configuration in `sluice check`, taken from the protected side the way branch
//! protection and code owners take theirs. `sluice.toml`, the policies, the scale spec, the
//! freeze calendar with the `.ics` files it imports, and the overrides are read from the base
//! revision; the change's edits to them take effect once merged, and each edited file gets a
//! `gate-config-changed` warning saying what the edit would do ([`changes`]).
//!
//! The exceptions cannot loosen anything: policy entries and scale-spec tables for tables the
//! change creates come from the head ([`Gate::policies`], [`Gate::scale_spec`]).
//! `--trust-head-config` reads everything from the head, for local experiments, and says so.
//!
//! Where the head's configuration moves a directory (migrations, queries, policies), the review
//! keeps reading the base's location on both sides: a change cannot point the gate away from the
//! files the migration runner reads.

pub(super) mod changes;
mod config_diff;
mod freeze_diff;
mod item;
mod policy_diff;
mod scale_diff;

pub(super) use item::describe_trust;

use super::options::{Deploy, Options};
use super::revisions::Revisions;
use crate::config::{self, Loaded};
use crate::error::{read_text, Error, Result};
use crate::freeze::{self, cache::CalendarCache, calendar::Calendar, overrides::Overrides, FreezeOptions};
use crate::git::{self, Change, ChangeKind, Oid, Repo, Side};
use crate::lint::rule_level_problem;
use crate::plan::capacity;
use crate::plan::scale::{self, ScaleSpec};
use crate::policy::index_usage::IndexUsage;
use crate::policy::Policies;
use crate::queries::workload::{self, Workload};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// One side's `sluice.toml`: the configuration, and the file it came from.
#[derive(Debug, Clone)]
pub(super) struct ConfigFile {
    pub loaded: Loaded,
    /// Repository-relative path (`None`: no file, defaults; or a file outside the repository).
    pub path: Option<String>,
    pub text: Option<String>,
}

/// A scale spec on one side.
pub(super) enum SpecOn {
    NotNamed,
    Missing(String),
    Found(ScaleSpec),
}

/// Where the review's configuration comes from and what the head proposes instead.
pub(super) struct Gate<'r> {
    repo: &'r Repo,
    pub base: Oid,
    pub head: Side,
    /// Where the configuration this review applies is read: the base commit, or the head with
    /// `--trust-head-config`.
    pub trusted_side: Side,
    pub trust_head: bool,
    /// The configuration this review applies.
    pub trusted: ConfigFile,
    /// The head's own configuration: what takes effect once the change is merged.
    pub proposed: ConfigFile,
    /// Validated freeze calendars: the base and head often hold the same one.
    calendar_cache: CalendarCache,
    /// `--workload-interval`.
    workload_interval: Option<std::time::Duration>,
}

/// The policies a review applies, and the two sides they were made from.
pub(super) struct GatePolicies {
    /// The trusted policies plus the head's entries for tables the change creates.
    pub effective: Policies,
    pub trusted: Policies,
    pub proposed: Policies,
    /// Tables whose entries came from the head because the change creates them.
    pub new_tables: BTreeSet<String>,
}

impl<'r> Gate<'r> {
    /// Finds both sides' `sluice.toml` and decides which one the review applies.
    pub fn load(revisions: &'r Revisions, options: &Options) -> Result<Gate<'r>> {
        Gate::load_from(&revisions.repo, revisions.base, revisions.head, &revisions.changes, options)
    }

    /// [`Gate::load`] from the parts of the revisions it reads, so that the changes can be
    /// replaced afterwards ([`Gate::read_dirs`]).
    pub fn load_from(repo: &'r Repo, base: Oid, head: Side, changes: &[Change], options: &Options) -> Result<Gate<'r>> {
        let off_the_record = uncommitted_config(repo, base, changes, options)?;
        let proposed = find_config(repo, &head, options, None, off_the_record)?;
        let trusted = if options.trust_head_config {
            proposed.clone()
        } else {
            let renamed_from = proposed.path.as_deref().and_then(|path| renamed_from(changes, path));
            find_config(repo, &Side::Rev(base), options, Some((renamed_from, &proposed)), off_the_record)?
        };
        ensure_named_dirs(repo, &head, &proposed)?;
        ensure_named_dirs(repo, &head, &trusted)?;
        let trusted_side = if options.trust_head_config { head } else { Side::Rev(base) };
        Ok(Gate {
            repo,
            base,
            head,
            trusted_side,
            trust_head: options.trust_head_config,
            trusted,
            proposed,
            calendar_cache: options.calendar_cache.clone(),
            workload_interval: options.workload_interval,
        })
    }

    /// The directories the gate reads on either side (migrations, queries, policies), by
    /// repository-relative path: where a link on the way changes what the change does there
    /// ([`git::links::seen_through_links`]).
    pub fn read_dirs(&self) -> Vec<String> {
        let mut dirs = BTreeSet::new();
        for config in [&self.trusted, &self.proposed] {
            let loaded = &config.loaded;
            let named = std::iter::once(loaded.migrations_dir())
                .chain(loaded.query_dirs())
                .chain(std::iter::once(loaded.policies_dir()));
            dirs.extend(named.filter_map(|d| self.repo.relative(&d)));
        }
        dirs.into_iter().collect()
    }

    /// The configuration the review applies.
    pub fn loaded(&self) -> &Loaded {
        &self.trusted.loaded
    }

    /// A gate file's text on `side`: through git inside the repository, from disk outside it
    /// (where no change can edit it). `None` when it does not exist there.
    pub fn read(&self, side: &Side, path: &Path) -> Result<Option<String>> {
        match self.repo.relative(path) {
            Some(relative) => git::read_file(self.repo, side, &relative),
            None if path.is_file() => read_text(path).map(Some),
            None => Ok(None),
        }
    }

    /// The target of the symbolic link at repository-relative `path` on `side`, if it is one.
    pub fn symlink_target(&self, side: &Side, path: &str) -> Result<Option<String>> {
        git::symlink_target(self.repo, side, path)
    }

    /// How findings and notes name a path: repository-relative inside it.
    pub fn shown(&self, path: &Path) -> String {
        self.repo.relative(path).unwrap_or_else(|| git::slash(path))
    }

    fn load_policies(&self, side: &Side, dir: &Path) -> Result<Policies> {
        match self.repo.relative(dir) {
            None => Policies::load(dir),
            Some(relative) => {
                Policies::load_with(Path::new(&relative), &|path| git::read_file(self.repo, side, &git::slash(path)))
            }
        }
    }

    /// The trusted policies, plus the head's entries for tables that do not exist on the base
    /// (`existing` lists the base schema's tables; it is only asked when the head has such
    /// candidates). A head policy that cannot be read is an error: once merged it would break
    /// the gate.
    pub fn policies(&self, existing: &dyn Fn() -> Result<BTreeSet<String>>) -> Result<GatePolicies> {
        let mut trusted = self.load_policies(&self.trusted_side, &self.trusted.loaded.policies_dir())?;
        trusted.index_usage = self.index_usage_on(&self.trusted, &self.trusted_side)?;
        let mut proposed = self.load_policies(&self.head, &self.proposed.loaded.policies_dir())?;
        proposed.index_usage = self.index_usage_on(&self.proposed, &self.head)?;
        let mut effective = trusted.clone();
        let mut new_tables = BTreeSet::new();
        let candidates: Vec<&String> = proposed
            .identity
            .tables
            .keys()
            .chain(proposed.tables.rows.keys())
            .filter(|t| trusted.identity.get(t).is_none() && trusted.tables.rows(t).is_none())
            .collect();
        if !self.trust_head && !candidates.is_empty() {
            let existing = existing()?;
            for table in candidates.into_iter().filter(|t| !existing.contains(*t)) {
                if let Some(entry) = proposed.identity.get(table) {
                    // Who reviews a new table's identity is the base's call: its default reviewers.
                    let entry = crate::policy::identity::Entry { reviewers: Vec::new(), ..entry.clone() };
                    effective.identity.tables.insert(table.clone(), entry);
                }
                if let Some(rows) = proposed.tables.rows(table) {
                    effective.tables.rows.insert(table.clone(), rows.clone());
                }
                new_tables.insert(table.clone());
            }
        }
        Ok(GatePolicies { effective, trusted, proposed, new_tables })
    }

    /// The trusted scale spec named by `[plan] scale`, plus the head's tables that do not exist
    /// on the base. `None` when the trusted configuration names no spec.
    pub fn scale_spec(&self, existing: &dyn Fn() -> Result<BTreeSet<String>>) -> Result<Option<ScaleSpec>> {
        let Some(trusted) = self.load_spec(&self.trusted, &self.trusted_side)? else {
            return Ok(None);
        };
        let mut spec = trusted;
        if self.trust_head {
            return Ok(Some(spec));
        }
        let SpecOn::Found(proposed) = self.spec_on(&self.proposed, &self.head)? else {
            return Ok(Some(spec));
        };
        let candidates: Vec<&String> = proposed.tables.keys().filter(|t| spec.table(t).is_none()).collect();
        if candidates.is_empty() {
            return Ok(Some(spec));
        }
        let existing = existing()?;
        let mut added = Vec::new();
        for table in candidates.into_iter().filter(|t| !existing.contains(*t)) {
            spec.tables.insert(table.clone(), proposed.tables[table].clone());
            added.push(table.clone());
        }
        // The fixture cache is keyed by the spec's text: the tables taken from the head are part of it.
        if !added.is_empty() {
            spec.text.push_str(&format!("\n# sluice: new tables from the head: {}\n", added.join(", ")));
            for table in &added {
                spec.text.push_str(&format!("# {table}: {:?}\n", spec.tables[table]));
            }
        }
        Ok(Some(spec))
    }

    /// The scale spec `config` names, as `side` has it: `Ok(None)` when it names none, an error
    /// when it names one that `side` does not have.
    fn load_spec(&self, config: &ConfigFile, side: &Side) -> Result<Option<ScaleSpec>> {
        match self.spec_on(config, side)? {
            SpecOn::NotNamed => Ok(None),
            SpecOn::Found(spec) => Ok(Some(spec)),
            SpecOn::Missing(shown) => Err(Error::Usage(format!(
                "{shown}: the scale spec named by [plan] scale does not exist on the {}",
                self.describe_side(side)
            ))),
        }
    }

    pub(super) fn spec_on(&self, config: &ConfigFile, side: &Side) -> Result<SpecOn> {
        let Some(path) = &config.loaded.config.plan.scale else {
            return Ok(SpecOn::NotNamed);
        };
        let path = config.loaded.resolve(path);
        let shown = self.shown(&path);
        match self.read(side, &path)? {
            Some(text) => scale::parse(Path::new(&shown), &text).map(SpecOn::Found),
            None => Ok(SpecOn::Missing(shown)),
        }
    }

    /// "the base revision (abc1234567)" or "head".
    pub fn describe_side(&self, side: &Side) -> String {
        match side {
            Side::Rev(oid) if *oid == self.base => format!("base revision ({})", &oid.to_string()[..10]),
            Side::Rev(oid) => format!("head revision ({})", &oid.to_string()[..10]),
            Side::WorkTree => "working tree".into(),
        }
    }

    /// Where the freeze files are for a configuration, with the flags winning. The overrides
    /// default (`overrides.toml` beside the calendar) is decided by the side that is read, not
    /// by what is on disk.
    pub fn freeze_options(&self, config: &ConfigFile, flags: &Deploy) -> FreezeOptions {
        let mut options = FreezeOptions::resolve(
            &config.loaded,
            flags.calendar.as_deref(),
            flags.overrides.as_deref(),
            flags.audit_log.as_deref(),
            flags.cache_dir.as_deref(),
        );
        if flags.overrides.is_none() && config.loaded.config.freeze.overrides.is_none() {
            options.overrides = Some(options.calendar.parent().unwrap_or(Path::new(".")).join(freeze::OVERRIDES_FILE));
        }
        options
    }

    /// The calendar of `options` as `side` has it (`None`: not there), with the `.ics` files it
    /// imports read from the same side. Files are named repository-relative.
    pub fn load_calendar(&self, options: &FreezeOptions, side: &Side) -> Result<Option<Calendar>> {
        let Some(text) = self.read(side, &options.calendar)? else {
            return Ok(None);
        };
        let shown = PathBuf::from(self.shown(&options.calendar));
        let repo_root = self.repo.root().to_path_buf();
        let read = |file: &Path| self.read(side, &repo_root.join(file));
        self.calendar_cache.parse_with(&shown, &text, &read).map(Some)
    }

    /// The overrides of `options` as `side` has them, validated against `calendar`; they
    /// remember the commit they were read from, for the audit log.
    pub fn load_overrides(&self, options: &FreezeOptions, side: &Side, calendar: &Calendar) -> Result<Overrides> {
        let Some(path) = &options.overrides else {
            return Ok(Overrides::default());
        };
        let Some(text) = self.read(side, path)? else {
            return Ok(Overrides::default());
        };
        let shown = PathBuf::from(self.shown(path));
        let mut overrides = freeze::overrides::parse(&shown, &text, calendar, options.max_override_hours)?;
        overrides.commit = match (side, self.repo.relative(path)) {
            (Side::Rev(oid), Some(_)) => Some(oid.to_string()),
            _ => None,
        };
        Ok(overrides)
    }

    /// Whether `path` is outside the repository, where no change can edit it.
    pub fn is_outside(&self, path: &Path) -> bool {
        self.repo.relative(path).is_none()
    }

    /// The index-usage snapshot `config` names, as `side` has it: an error when it names one
    /// `side` does not have (the gate fails closed).
    fn index_usage_on(&self, config: &ConfigFile, side: &Side) -> Result<Option<IndexUsage>> {
        let Some(path) = config.loaded.index_usage_file() else { return Ok(None) };
        let shown = self.shown(&path);
        let text = self.read(side, &path)?.ok_or_else(|| {
            Error::Usage(format!(
                "{shown}: the index-usage snapshot named by [policies] index_usage does not exist on the {}",
                self.describe_side(side)
            ))
        })?;
        IndexUsage::parse(Path::new(&shown), shown.clone(), &text).map(Some)
    }

    /// Production's workload as the trusted side has it (`[queries] workload`), and the
    /// snapshots' names: policy data, never read from the head.
    pub fn workload(&self) -> Result<Option<(Workload, Vec<String>)>> {
        let files: Vec<(PathBuf, String)> = self
            .loaded()
            .workload_files()
            .into_iter()
            .map(|path| {
                let shown = self.shown(&path);
                (path, shown)
            })
            .collect();
        if files.is_empty() {
            return Ok(None);
        }
        let read = |path: &Path| {
            self.read(&self.trusted_side, path)?.ok_or_else(|| {
                Error::Usage(format!(
                    "{}: the workload snapshot named by [queries] workload does not exist on the {}",
                    self.shown(path),
                    self.describe_side(&self.trusted_side)
                ))
            })
        };
        let reading =
            workload::Reading::now(self.loaded().snapshot_max_age_days()).with_interval(self.workload_interval);
        let workload = workload::load(&files, &read, &reading)?;
        Ok(Some((workload, files.into_iter().map(|(_, shown)| shown).collect())))
    }

    /// The connection pool the trusted side declares (`workload.toml` in the policies
    /// directory), for `pool-capacity` on production's measured load.
    pub fn pool(&self) -> Result<Option<capacity::Workload>> {
        let path = self.loaded().policies_dir().join("workload.toml");
        let shown = self.shown(&path);
        match self.read(&self.trusted_side, &path)? {
            Some(text) => capacity::parse(Path::new(&shown), &text).map(Some),
            None => Ok(None),
        }
    }
}

/// The path `path` was renamed from in this change, if it was.
fn renamed_from(changes: &[Change], path: &str) -> Option<String> {
    changes.iter().find_map(|c| match &c.kind {
        ChangeKind::Renamed { from } if c.path == path => Some(from.clone()),
        _ => None,
    })
}

/// One side's `sluice.toml`. `--config` names the file (read from `side` inside the repository,
/// from disk outside it); otherwise the nearest `sluice.toml` walking up from the reviewed
/// directory. For the base side, `head` carries the head's file and where it was renamed from:
/// the base's version of that file wins over the walk, so a moved configuration is compared
/// with itself. No file at all is the defaults, rooted where the head keeps its configuration.
fn find_config(
    repo: &Repo,
    side: &Side,
    options: &Options,
    head: Option<(Option<String>, &ConfigFile)>,
    off_the_record: bool,
) -> Result<ConfigFile> {
    let mut candidates: Vec<String> = Vec::new();
    if let Some((renamed_from, proposed)) = &head {
        candidates.extend(renamed_from.iter().cloned());
        candidates.extend(proposed.path.iter().cloned());
    }
    match &options.config {
        Some(path) => match repo.relative(path).filter(|_| !off_the_record) {
            None => {
                // Outside the repository, or in it but in neither revision nor the change, the
                // change cannot edit it: both sides read the same file, from disk.
                let loaded = config::load(Some(path), &options.dir, &rule_level_problem)?;
                let text = read_text(path)?;
                return Ok(with_flags(ConfigFile { loaded, path: None, text: Some(text) }, options));
            }
            Some(relative) => candidates.push(relative),
        },
        None => {
            let start = git::relative_dir(repo.root(), &options.dir);
            let parts: Vec<&str> = start.split('/').filter(|p| !p.is_empty()).collect();
            candidates.extend(
                (0..=parts.len()).rev().map(|depth| git::join_dir(&parts[..depth].join("/"), config::CONFIG_FILE)),
            );
        }
    }
    for path in candidates {
        if let Some(text) = git::read_file(repo, side, &path)? {
            let config = config::parse(Path::new(&path), &text, &rule_level_problem)?;
            let dir = Path::new(&path).parent().unwrap_or(Path::new(""));
            let loaded = Loaded { config, root: repo.root().join(dir), file: Some(repo.root().join(&path)) };
            return Ok(with_flags(ConfigFile { loaded, path: Some(path), text: Some(text) }, options));
        }
    }
    if head.is_none() {
        if let Some(path) = &options.config {
            return Err(Error::Usage(format!("{}: no such configuration file", path.display())));
        }
    }
    let root = match &head {
        Some((_, proposed)) => proposed.loaded.root.clone(),
        None => repo.root().to_path_buf(),
    };
    let loaded = Loaded { config: config::Config::default(), root, file: None };
    Ok(with_flags(ConfigFile { loaded, path: None, text: None }, options))
}

/// Whether `--config` names a file inside the repository that neither the base revision nor the
/// change has (uncommitted, untracked or ignored, written by the CI job): no change can edit
/// it, so both sides read it from disk, as `lint` does and as a file outside the repository is.
fn uncommitted_config(repo: &Repo, base: Oid, changes: &[Change], options: &Options) -> Result<bool> {
    let Some(path) = &options.config else { return Ok(false) };
    let Some(relative) = repo.relative(path) else { return Ok(false) };
    let in_change = changes
        .iter()
        .any(|c| c.path == relative || matches!(&c.kind, ChangeKind::Renamed { from } if *from == relative));
    Ok(path.is_file() && !in_change && git::read_file(repo, &Side::Rev(base), &relative)?.is_none())
}

/// The directory flags (`--migrations`, `--queries`, `--policies`) win on both sides.
fn with_flags(mut file: ConfigFile, options: &Options) -> ConfigFile {
    file.loaded.config.override_dirs(options.migrations.as_ref(), &options.queries, options.policies.as_ref());
    file
}

/// Every directory a configuration or a flag names must exist on the head revision (on disk when
/// outside the repository): a typo must not silently turn a check off. The head is what the
/// review reads, and what the base becomes once the change is merged.
fn ensure_named_dirs(repo: &Repo, head: &Side, file: &ConfigFile) -> Result<()> {
    file.loaded.check_named_dirs(&|dir| match repo.relative(dir) {
        Some(relative) => {
            Ok((!git::is_dir(repo, head, &relative)?).then_some("no such directory on the head revision"))
        }
        None => config::disk_dir_problem(dir),
    })
}
