//! Which gate files the change edits, and what each edit would do: the `gate-config-changed`
//! findings. The trusted and the head's version of each kind of file are compared as the gate
//! reads them (rule levels, identity keys, windows…), and what differs is told on the file
//! that says it. A difference that comes from `sluice.toml` pointing elsewhere is told on
//! `sluice.toml`.

use super::item::{list, Effect, FileChange, How, Item, Link};
use super::{config_diff, freeze_diff, policy_diff, scale_diff, Gate, GatePolicies, SpecOn};
use crate::check::options::Deploy;
use crate::error::Result;
use crate::finding::Finding;
use crate::freeze::{calendar::Calendar, overrides::Overrides};
use crate::git::{Change, ChangeKind, Side};
use crate::plan::scale::ScaleSpec;
use crate::policy::{identity, tables};
use crate::queries::sqlc;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The change's edits by path (a renamed file under both its paths).
struct Edits<'c>(&'c [Change]);

impl Edits<'_> {
    /// The edited file's head path and how it changed, if `path` is edited.
    fn find(&self, path: &str) -> Option<(String, How)> {
        self.0.iter().find_map(|c| match &c.kind {
            ChangeKind::Renamed { from } if c.path == path || from == path => {
                Some((c.path.clone(), How::Moved { from: from.clone() }))
            }
            ChangeKind::Added if c.path == path => Some((c.path.clone(), How::Added)),
            ChangeKind::Modified if c.path == path => Some((c.path.clone(), How::Modified)),
            ChangeKind::Deleted if c.path == path => Some((c.path.clone(), How::Deleted)),
            _ => None,
        })
    }

    fn touches(&self, path: &str) -> bool {
        self.find(path).is_some()
    }
}

/// The files found so far, by head path.
struct Files<'c> {
    edits: Edits<'c>,
    by_path: BTreeMap<String, FileChange>,
    /// Where items go when none of their own files is edited: `sluice.toml`.
    config: Option<String>,
}

impl Files<'_> {
    /// Files `items` on the first of `candidates` the change edits, else on `sluice.toml`.
    fn attach(&mut self, items: Vec<Item>, candidates: &[Option<String>]) {
        if items.is_empty() {
            return;
        }
        let target = candidates
            .iter()
            .flatten()
            .chain(self.config.iter())
            .find_map(|p| self.edits.find(p))
            .or_else(|| candidates.iter().flatten().next().map(|p| (p.clone(), How::Modified)));
        let Some((path, how)) = target else {
            return;
        };
        self.by_path
            .entry(path.clone())
            .or_insert(FileChange { path, how, items: Vec::new(), link: None })
            .items
            .extend(items);
    }

    /// A configuration deleted in one place and added in another, too edited for git to call it
    /// a rename, is still a move: the review applied the old one.
    fn moved_config(&mut self, trusted: Option<&str>, proposed: Option<&str>) {
        let (Some(trusted), Some(proposed)) = (trusted, proposed) else { return };
        let deleted = matches!(self.edits.find(trusted), Some((_, How::Deleted)));
        if let (true, Some(file)) = (deleted, self.by_path.get_mut(proposed)) {
            if file.how == How::Added {
                file.how = How::Moved { from: trusted.to_string() };
            }
        }
    }

    /// Marks `path` as a symbolic link the change adds or retargets, described by `text`.
    fn link(&mut self, path: &str, text: String, redirects: bool) {
        // The link's own change: a rename *from* this path (its content moved to where the link points) is not it.
        let how = match self.edits.0.iter().find(|c| c.path == path).map(|c| &c.kind) {
            Some(ChangeKind::Added) => How::Added,
            Some(ChangeKind::Renamed { from }) => How::Moved { from: from.clone() },
            _ => How::Modified,
        };
        let file = self.by_path.entry(path.to_string()).or_insert(FileChange {
            path: path.to_string(),
            how,
            items: Vec::new(),
            link: None,
        });
        file.link = Some(Link { text, redirects });
    }

    /// Marks an edited gate file that has no item (yet): its edit changes nothing the gate reads.
    fn touch(&mut self, path: &str) {
        if let Some((path, how)) = self.edits.find(path) {
            self.by_path.entry(path.clone()).or_insert(FileChange { path, how, items: Vec::new(), link: None });
        }
    }
}

/// The `gate-config-changed` findings: one per gate file the change edits.
pub(in crate::check) fn findings(
    gate: &Gate,
    changes: &[Change],
    policies: &GatePolicies,
    flags: &Deploy,
) -> Result<Vec<Finding>> {
    let config = gate.proposed.path.clone().or_else(|| gate.trusted.path.clone());
    let mut files = Files { edits: Edits(changes), by_path: BTreeMap::new(), config: config.clone() };

    files.attach(
        config_diff::items(gate, &gate.trusted, &gate.proposed),
        &[gate.proposed.path.clone(), gate.trusted.path.clone()],
    );
    let mut gate_files: BTreeSet<String> =
        [gate.trusted.path.clone(), gate.proposed.path.clone()].into_iter().flatten().collect();

    policy_items(gate, policies, &mut files);
    gate_files.extend(evidence_items(gate, &mut files));
    gate_files.extend(sqlc_items(gate, &mut files));
    gate_files.extend(freeze_items(gate, flags, &mut files)?);
    gate_files.extend(scale_items(gate, &policies.new_tables, &mut files)?);

    let policy_dirs = [gate.trusted.loaded.policies_dir(), gate.proposed.loaded.policies_dir()].map(|d| gate.shown(&d));
    let under = |path: &str, dir: &str| dir.is_empty() || path.strip_prefix(dir).is_some_and(|r| r.starts_with('/'));
    for change in changes {
        let from = match &change.kind {
            ChangeKind::Renamed { from } => Some(from.as_str()),
            _ => None,
        };
        for path in std::iter::once(change.path.as_str()).chain(from) {
            if gate_files.contains(path) || policy_dirs.iter().any(|d| under(path, d)) {
                files.touch(path);
            }
        }
    }
    files.moved_config(gate.trusted.path.as_deref(), gate.proposed.path.as_deref());
    link_items(gate, changes, &gate_files, &policy_dirs, &mut files)?;
    Ok(files.by_path.into_values().map(|f| f.finding(gate.trust_head)).collect())
}

/// What the gate reads, by repository-relative path, and what each is: a symbolic link at one
/// of them, or at a directory above one, redirects it.
fn gate_inputs(gate: &Gate, gate_files: &BTreeSet<String>) -> Vec<(String, String)> {
    let mut inputs: Vec<(String, String)> = Vec::new();
    for config in [&gate.trusted, &gate.proposed] {
        let loaded = &config.loaded;
        inputs.extend(config.path.iter().map(|p| (p.clone(), "the gate's configuration".to_string())));
        inputs.push((gate.shown(&loaded.migrations_dir()), "the migrations directory".into()));
        inputs.push((gate.shown(&loaded.policies_dir()), "the policies directory".into()));
        for name in [identity::FILE, tables::FILE, "workload.toml"] {
            inputs.push((gate.shown(&loaded.policies_dir().join(name)), "a policy".into()));
        }
        if let Some(dump) = &loaded.config.migrations.schema_dump {
            inputs.push((gate.shown(&loaded.resolve(dump)), "the schema dump".into()));
        }
    }
    inputs.extend(gate_files.iter().map(|p| (p.clone(), "a gate file".to_string())));
    inputs.retain(|(path, _)| !path.is_empty());
    inputs
}

/// A symbolic link the change adds or retargets where the gate reads: an error when it stands
/// for a gate input or a directory above one (the link would decide what the gate reads once
/// merged, and in a checkout it already decides what a tool reading the disk sees), a warning
/// elsewhere in the policies directory.
fn link_items(
    gate: &Gate,
    changes: &[Change],
    gate_files: &BTreeSet<String>,
    policy_dirs: &[String],
    files: &mut Files,
) -> Result<()> {
    let inputs = gate_inputs(gate, gate_files);
    let under = |path: &str, dir: &str| dir.is_empty() || path.strip_prefix(dir).is_some_and(|r| r.starts_with('/'));
    for change in changes.iter().filter(|c| c.kind != ChangeKind::Deleted) {
        let Some(target) = gate.symlink_target(&gate.head, &change.path)? else {
            continue;
        };
        let link = change.path.as_str();
        let redirected = inputs.iter().find(|(input, _)| input == link || under(input, link));
        let text = match redirected {
            Some((input, what)) if input == link => {
                format!("`{link}` is now a symbolic link to `{target}`: it redirects {what} `{input}`")
            }
            Some((input, what)) => {
                format!("`{link}` is now a symbolic link to `{target}`: it redirects {what} `{input}` below it")
            }
            None if policy_dirs.iter().any(|d| under(link, d)) => {
                format!("`{link}` is now a symbolic link to `{target}` in the policies directory")
            }
            None => continue,
        };
        files.link(link, text, redirected.is_some());
    }
    Ok(())
}

fn policy_items(gate: &Gate, policies: &GatePolicies, files: &mut Files) {
    let in_dir = |config: &super::ConfigFile, name: &str| Some(gate.shown(&config.loaded.policies_dir().join(name)));
    let identity_files = [in_dir(&gate.proposed, identity::FILE), in_dir(&gate.trusted, identity::FILE)];
    files.attach(
        policy_diff::identity(&policies.trusted.identity, &policies.proposed.identity, &policies.new_tables),
        &identity_files,
    );
    let tables_file = in_dir(&gate.proposed, tables::FILE).unwrap_or_default();
    let text = gate.read(&gate.head, &gate.proposed.loaded.policies_dir().join(tables::FILE)).ok().flatten();
    let by_file = policy_diff::tables(
        &policies.trusted.tables,
        &policies.proposed.tables,
        &tables_file,
        text.as_deref(),
        &policies.new_tables,
    );
    for (file, items) in by_file {
        files.attach(items, &[Some(file), in_dir(&gate.trusted, tables::FILE)]);
    }
}

/// Production's evidence (`[queries] workload`, `[policies] index_usage`): an edit of a
/// snapshot replaces what the gate knows of production. Returns the snapshots' paths.
fn evidence_items(gate: &Gate, files: &mut Files) -> BTreeSet<String> {
    let mut paths: BTreeMap<String, &str> = BTreeMap::new();
    for config in [&gate.trusted, &gate.proposed] {
        for path in config.loaded.workload_files() {
            paths.insert(
                gate.shown(&path),
                "the workload snapshot (production's queries and rates, which the query \
                rules, drop-index-in-use and pool-capacity read)",
            );
        }
        if let Some(path) = config.loaded.index_usage_file() {
            paths.insert(
                gate.shown(&path),
                "the index-usage snapshot (how often production scans each index, which \
                drop-index-in-use reads)",
            );
        }
    }
    for (path, what) in &paths {
        if files.edits.touches(path) {
            files.attach(vec![Item::new(Effect::Changes, format!("replace {what}"), None)], &[Some(path.clone())]);
        }
    }
    paths.into_keys().collect()
}

/// sqlc's configurations (`[queries] sqlc`, or the `sqlc.yaml` / `sqlc.yml` / `sqlc.json` at
/// the root when it names none): their query paths are query sources, read from the base like
/// every gate input, so an edit that points them elsewhere takes effect once merged. Each edited
/// one says which query paths it would stop or start reading. Returns the configurations' paths.
fn sqlc_items(gate: &Gate, files: &mut Files) -> BTreeSet<String> {
    let mut paths = BTreeSet::new();
    for config in [&gate.trusted, &gate.proposed] {
        let loaded = &config.loaded;
        let named = loaded
            .sqlc_configs()
            .unwrap_or_else(|| sqlc::CONFIG_FILES.iter().map(|name| loaded.root.join(name)).collect());
        paths.extend(named.iter().filter(|p| !gate.is_outside(p)).map(|p| gate.shown(p)));
    }
    for path in &paths {
        if !files.edits.touches(path) {
            continue;
        }
        let side_paths = |side: &Side| -> std::result::Result<Vec<String>, String> {
            let shown = Path::new(path);
            match gate.read(side, &gate.repo.root().join(shown)) {
                Ok(Some(text)) => sqlc::parse(shown, &text)
                    .map(|config| config.queries.iter().map(|q| crate::git::slash(q)).collect())
                    .map_err(|e| e.to_string()),
                Ok(None) => Ok(Vec::new()),
                Err(e) => Err(e.to_string()),
            }
        };
        let mut items = Vec::new();
        match (side_paths(&Side::Rev(gate.base)), side_paths(&gate.head)) {
            (Ok(old), Ok(new)) => {
                let gone: Vec<String> = old.iter().filter(|q| !new.contains(q)).cloned().collect();
                let added: Vec<String> = new.iter().filter(|q| !old.contains(q)).cloned().collect();
                if !gone.is_empty() {
                    let text = format!(
                        "stop reading sqlc's queries in {} (the query rules and plan comparison check them)",
                        list(&gone)
                    );
                    items.push(Item::new(Effect::Relaxes, text, None));
                }
                if !added.is_empty() {
                    items.push(Item::new(Effect::Tightens, format!("read sqlc's queries in {}", list(&added)), None));
                }
            }
            (_, Err(problem)) => items.push(Item::new(
                Effect::Changes,
                format!("replace sqlc's configuration with one Sluice cannot read ({problem})"),
                None,
            )),
            (Err(_), Ok(_)) => items.push(Item::new(Effect::Changes, "replace sqlc's configuration", None)),
        }
        files.attach(items, &[Some(path.clone())]);
    }
    paths
}

/// The freeze files' items, read only when the change edits one of them (a 10,000-event
/// calendar is not parsed twice for nothing). Returns the freeze files, for [`Files::touch`].
fn freeze_items(gate: &Gate, flags: &Deploy, files: &mut Files) -> Result<BTreeSet<String>> {
    let trusted = gate.freeze_options(&gate.trusted, flags);
    let proposed = gate.freeze_options(&gate.proposed, flags);
    let shown = |p: &Option<std::path::PathBuf>| p.as_deref().map(|p| gate.shown(p));
    let calendars = [Some(gate.shown(&proposed.calendar)), Some(gate.shown(&trusted.calendar))];
    let overrides = [shown(&proposed.overrides), shown(&trusted.overrides)];
    let mut paths: BTreeSet<String> = calendars.iter().chain(&overrides).flatten().cloned().collect();
    let edited = paths.iter().any(|p| files.edits.touches(p))
        || files.edits.0.iter().any(|c| {
            c.path.ends_with(".ics") || matches!(&c.kind, ChangeKind::Renamed { from } if from.ends_with(".ics"))
        })
        || calendars[0] != calendars[1]
        || overrides[0] != overrides[1];
    if !edited {
        return Ok(paths);
    }
    let load = |options, side, shown: &Option<String>| -> Result<(Calendar, Overrides)> {
        let calendar = match gate.load_calendar(options, side)? {
            Some(calendar) => calendar,
            None => crate::freeze::calendar::parse(Path::new(shown.as_deref().unwrap_or_default()), "")?,
        };
        let overrides = gate.load_overrides(options, side, &calendar)?;
        Ok((calendar, overrides))
    };
    let (old_calendar, old_overrides) = load(&trusted, &gate.trusted_side, &calendars[1])?;
    let (new_calendar, new_overrides) = load(&proposed, &gate.head, &calendars[0])?;
    for calendar in [&old_calendar, &new_calendar] {
        paths.extend(calendar.events.iter().map(|e| e.file.to_string_lossy().replace('\\', "/")));
    }
    files.attach(freeze_diff::windows(&old_calendar, &new_calendar), &calendars);
    for (file, items) in freeze_diff::events(&old_calendar, &new_calendar) {
        files.attach(items, &[Some(file), calendars[0].clone()]);
    }
    files.attach(freeze_diff::overrides(&old_overrides, &new_overrides, gate.trust_head), &overrides);
    Ok(paths)
}

/// The scale spec's items, when either side names one. Returns the spec files.
fn scale_items(gate: &Gate, new_tables: &BTreeSet<String>, files: &mut Files) -> Result<BTreeSet<String>> {
    let path = |config: &super::ConfigFile| {
        config.loaded.config.plan.scale.as_ref().map(|p| gate.shown(&config.loaded.resolve(p)))
    };
    let specs = [path(&gate.proposed), path(&gate.trusted)];
    let paths: BTreeSet<String> = specs.iter().flatten().cloned().collect();
    if !paths.iter().any(|p| files.edits.touches(p)) && specs[0] == specs[1] {
        return Ok(paths);
    }
    let load = |config: &super::ConfigFile, side| -> Result<ScaleSpec> {
        Ok(match gate.spec_on(config, side)? {
            SpecOn::Found(spec) => spec,
            SpecOn::NotNamed | SpecOn::Missing(_) => {
                ScaleSpec { path: Default::default(), text: String::new(), tables: BTreeMap::new() }
            }
        })
    };
    let (old, new) = (load(&gate.trusted, &gate.trusted_side)?, load(&gate.proposed, &gate.head)?);
    files.attach(scale_diff::items(&old, &new, new_tables), &specs);
    Ok(paths)
}
