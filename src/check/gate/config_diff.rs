//! What an edit of `sluice.toml` would do: rule levels relaxed or tightened, thresholds moved,
//! directories and files the gate reads moved elsewhere.

use super::item::{line_where, Effect, Item};
use super::{ConfigFile, Gate};
use crate::config::{Loaded, RuleLevel};
use crate::finding::Severity;
use crate::freeze::{overrides::DEFAULT_MAX_OVERRIDE_HOURS, DEFAULT_CALENDAR};
use crate::plan::diff::Thresholds;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Keys that name files or directories: compared as resolved locations, not as text, so that a
/// moved `sluice.toml` with adjusted relative paths is no change.
const LOCATION_KEYS: &[&str] = &[
    "migrations.dir",
    "migrations.schema_dump",
    "queries.dirs",
    "policies.dir",
    "plan.scale",
    "freeze.calendar",
    "freeze.overrides",
    "freeze.audit_log",
];

/// Everything the head's `sluice.toml` changes relative to the trusted one.
pub fn items(gate: &Gate, trusted: &ConfigFile, proposed: &ConfigFile) -> Vec<Item> {
    let text = proposed.text.as_deref();
    let mut items = rule_levels(trusted, proposed);
    items.extend(settings(trusted, proposed));
    items.extend(locations(gate, &trusted.loaded, &proposed.loaded, text));
    items
}

fn rank(level: RuleLevel) -> u8 {
    match level {
        RuleLevel::Off => 0,
        RuleLevel::Info => 1,
        RuleLevel::Warning => 2,
        RuleLevel::Error => 3,
    }
}

fn level_name(level: RuleLevel) -> &'static str {
    match level {
        RuleLevel::Off => "off",
        RuleLevel::Info => "info",
        RuleLevel::Warning => "warning",
        RuleLevel::Error => "error",
    }
}

fn default_level(id: &str) -> RuleLevel {
    match crate::rules::find(id).map(|m| m.severity) {
        Some(Severity::Info) => RuleLevel::Info,
        Some(Severity::Warning) => RuleLevel::Warning,
        _ => RuleLevel::Error,
    }
}

/// `[rules]`: each rule whose effective level differs, with the old and new level (a rule not
/// listed has its default).
fn rule_levels(trusted: &ConfigFile, proposed: &ConfigFile) -> Vec<Item> {
    let (old, new) = (&trusted.loaded.config.rules, &proposed.loaded.config.rules);
    let ids: BTreeSet<&String> = old.keys().chain(new.keys()).collect();
    let mut out = Vec::new();
    for id in ids {
        let from = old.get(id).copied().unwrap_or_else(|| default_level(id));
        let to = new.get(id).copied().unwrap_or_else(|| default_level(id));
        if from == to {
            continue;
        }
        let (effect, verb) =
            if rank(to) < rank(from) { (Effect::Relaxes, "relax") } else { (Effect::Tightens, "tighten") };
        let line = line_where(proposed.text.as_deref(), |l| {
            l.starts_with(&format!("\"{id}\"")) || l.starts_with(&format!("{id} ")) || l.starts_with(&format!("{id}="))
        });
        out.push(Item::new(effect, format!("{verb} `{id}` from {} to {}", level_name(from), level_name(to)), line));
    }
    out
}

/// Every other setting, by its dotted key, with the direction the known thresholds move the gate.
fn settings(trusted: &ConfigFile, proposed: &ConfigFile) -> Vec<Item> {
    let (old, new) = (flatten(trusted.text.as_deref()), flatten(proposed.text.as_deref()));
    let keys: BTreeSet<&String> = old.keys().chain(new.keys()).collect();
    let mut out = Vec::new();
    for key in keys.into_iter().filter(|k| !LOCATION_KEYS.contains(&k.as_str())) {
        let (from, to) = (old.get(key), new.get(key));
        // Writing out the default, or removing it, changes nothing the gate does.
        let effective = |v: Option<&toml::Value>| v.map(|v| v.to_string()).or_else(|| default_of(key));
        if from == to || effective(from) == effective(to) {
            continue;
        }
        let shown = |v: Option<&toml::Value>| match v {
            Some(v) => v.to_string(),
            None => match default_of(key) {
                Some(d) => format!("the default ({d})"),
                None => "the default".to_string(),
            },
        };
        let effect = direction(key, from, to);
        let verb = match effect {
            Effect::Relaxes => "relax",
            Effect::Tightens => "tighten",
            Effect::Changes => "change",
        };
        let leaf = key.rsplit('.').next().unwrap_or(key);
        let line = line_where(proposed.text.as_deref(), |l| {
            l.starts_with(leaf) && l[leaf.len()..].trim_start().starts_with('=')
        });
        out.push(Item::new(
            effect,
            format!("{verb} `{}` from {} to {}", display_key(key), shown(from), shown(to)),
            line,
        ));
    }
    out
}

/// `plan.seq_scan_rows` → `[plan] seq_scan_rows`.
fn display_key(key: &str) -> String {
    match key.split_once('.') {
        Some((section, rest)) => format!("[{section}] {rest}"),
        None => key.to_string(),
    }
}

fn default_of(key: &str) -> Option<String> {
    let thresholds = Thresholds::default();
    Some(match key {
        "postgres_version" => "15".into(),
        "plan.required" => "false".into(),
        "plan.seq_scan_rows" => thresholds.seq_scan_rows.to_string(),
        "plan.cost_ratio_error" => thresholds.cost_ratio_error.to_string(),
        "plan.cost_ratio_warning" => thresholds.cost_ratio_warning.to_string(),
        "plan.cost_floor" => thresholds.cost_floor.to_string(),
        "plan.cost_limit" => thresholds.cost_limit.to_string(),
        "freeze.max_override_hours" => DEFAULT_MAX_OVERRIDE_HOURS.to_string(),
        "migrations.layout" => "auto".into(),
        _ => return None,
    })
}

/// Which way a setting moves the gate: a higher threshold or a longer override lets more
/// through; `required = false` lets a missing PostgreSQL pass.
fn direction(key: &str, from: Option<&toml::Value>, to: Option<&toml::Value>) -> Effect {
    let number = |v: Option<&toml::Value>| -> Option<f64> {
        match v {
            Some(toml::Value::Integer(i)) => Some(*i as f64),
            Some(toml::Value::Float(f)) => Some(*f),
            None => default_of(key)?.parse().ok(),
            _ => None,
        }
    };
    match key {
        "plan.required" => {
            let on = |v: Option<&toml::Value>| v.and_then(toml::Value::as_bool).unwrap_or(false);
            match (on(from), on(to)) {
                (true, false) => Effect::Relaxes,
                (false, true) => Effect::Tightens,
                _ => Effect::Changes,
            }
        }
        "plan.seq_scan_rows"
        | "plan.cost_ratio_error"
        | "plan.cost_ratio_warning"
        | "plan.cost_floor"
        | "plan.cost_limit"
        | "freeze.max_override_hours" => match (number(from), number(to)) {
            (Some(a), Some(b)) if b > a => Effect::Relaxes,
            (Some(a), Some(b)) if b < a => Effect::Tightens,
            _ => Effect::Changes,
        },
        _ => Effect::Changes,
    }
}

/// The document's settings outside `[rules]`, by dotted key.
fn flatten(text: Option<&str>) -> BTreeMap<String, toml::Value> {
    let mut out = BTreeMap::new();
    let Some(table) = text.and_then(|t| t.parse::<toml::Table>().ok()) else {
        return out;
    };
    fn walk(prefix: &str, table: &toml::Table, out: &mut BTreeMap<String, toml::Value>) {
        for (key, value) in table {
            let path = if prefix.is_empty() { key.clone() } else { format!("{prefix}.{key}") };
            match value {
                toml::Value::Table(inner) => walk(&path, inner, out),
                other => {
                    out.insert(path, other.clone());
                }
            }
        }
    }
    let mut rest = table;
    rest.remove("rules");
    walk("", &rest, &mut out);
    out
}

/// `a, b`; no directory at all is nothing to read (`None`), not a directory named ``.
fn joined(items: Vec<String>) -> Option<String> {
    (!items.is_empty()).then(|| items.join(", "))
}

/// The directories and files the gate reads, resolved: where the head's configuration would
/// read them instead of the trusted one.
fn locations(gate: &Gate, trusted: &Loaded, proposed: &Loaded, text: Option<&str>) -> Vec<Item> {
    let shown = |p: &Path| gate.shown(p);
    let optional = |loaded: &Loaded, p: &Option<std::path::PathBuf>| p.as_ref().map(|p| shown(&loaded.resolve(p)));
    let calendar = |loaded: &Loaded| {
        shown(&loaded.resolve(loaded.config.freeze.calendar.as_deref().unwrap_or(Path::new(DEFAULT_CALENDAR))))
    };
    let dirs = |loaded: &Loaded| joined(loaded.query_dirs().iter().map(|d| shown(d)).collect());
    let pairs: [(&str, &str, Option<String>, Option<String>); 8] = [
        (
            "migrations directory",
            "dir",
            Some(shown(&trusted.migrations_dir())),
            Some(shown(&proposed.migrations_dir())),
        ),
        ("query directories", "dirs", dirs(trusted), dirs(proposed)),
        ("policies directory", "dir", Some(shown(&trusted.policies_dir())), Some(shown(&proposed.policies_dir()))),
        (
            "schema dump",
            "schema_dump",
            optional(trusted, &trusted.config.migrations.schema_dump),
            optional(proposed, &proposed.config.migrations.schema_dump),
        ),
        (
            "scale spec",
            "scale",
            optional(trusted, &trusted.config.plan.scale),
            optional(proposed, &proposed.config.plan.scale),
        ),
        ("freeze calendar", "calendar", Some(calendar(trusted)), Some(calendar(proposed))),
        (
            "freeze overrides",
            "overrides",
            optional(trusted, &trusted.config.freeze.overrides),
            optional(proposed, &proposed.config.freeze.overrides),
        ),
        (
            "freeze audit log",
            "audit_log",
            optional(trusted, &trusted.config.freeze.audit_log),
            optional(proposed, &proposed.config.freeze.audit_log),
        ),
    ];
    let mut out = Vec::new();
    for (what, key, from, to) in pairs {
        if from == to {
            continue;
        }
        let line = line_where(text, |l| l.starts_with(key) && l[key.len()..].trim_start().starts_with('='));
        let (effect, text) = match (&from, &to) {
            (Some(from), Some(to)) => (
                // Not following the move is what keeps the gate on the files the runner reads.
                Effect::Changes,
                format!("read the {what} from `{to}` instead of `{from}` (this review read `{from}` on both sides)"),
            ),
            (None, Some(to)) => (Effect::Tightens, format!("start reading the {what} `{to}`")),
            (Some(from), None) => (Effect::Relaxes, format!("stop reading the {what} `{from}`")),
            (None, None) => continue,
        };
        out.push(Item::new(effect, text, line));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(text: &str) -> ConfigFile {
        let config = crate::config::parse(Path::new("sluice.toml"), text, &crate::lint::rule_level_problem).unwrap();
        ConfigFile {
            loaded: Loaded { config, root: "/repo".into(), file: Some("/repo/sluice.toml".into()) },
            path: Some("sluice.toml".into()),
            text: Some(text.into()),
        }
    }

    #[test]
    fn rule_levels_say_which_way_and_where() {
        let base = file("[rules]\n\"missing-lock-timeout\" = \"error\"\n");
        let head =
            file("[rules]\n\"create-index-non-concurrently\" = \"off\"\n\"missing-statement-timeout\" = \"warning\"\n");
        let items = rule_levels(&base, &head);
        let texts: Vec<(&str, Effect, Option<usize>)> =
            items.iter().map(|i| (i.text.as_str(), i.effect, i.line)).collect();
        assert_eq!(
            texts,
            [
                ("relax `create-index-non-concurrently` from error to off", Effect::Relaxes, Some(2)),
                ("relax `missing-lock-timeout` from error to warning", Effect::Relaxes, None),
                ("tighten `missing-statement-timeout` from info to warning", Effect::Tightens, Some(3)),
            ]
        );
    }

    #[test]
    fn thresholds_relax_upwards_and_required_off_relaxes() {
        let base = file("[plan]\nrequired = true\nseq_scan_rows = 1000\n[freeze]\nmax_override_hours = 4\n");
        let head = file("postgres_version = 16\n[plan]\nseq_scan_rows = 5000000\n[freeze]\nmax_override_hours = 2\n");
        let items = settings(&base, &head);
        let texts: Vec<(&str, Effect)> = items.iter().map(|i| (i.text.as_str(), i.effect)).collect();
        assert_eq!(
            texts,
            [
                ("tighten `[freeze] max_override_hours` from 4 to 2", Effect::Tightens),
                ("relax `[plan] required` from true to the default (false)", Effect::Relaxes),
                ("relax `[plan] seq_scan_rows` from 1000 to 5000000", Effect::Relaxes),
                ("change `postgres_version` from the default (15) to 16", Effect::Changes),
            ]
        );
    }

    /// Issue 37: "from the default (15) to 15" and "from `` instead of `queries`".
    #[test]
    fn writing_out_a_default_changes_nothing_and_no_directory_is_not_a_directory() {
        let base = file("[migrations]\ndir = \"migrations\"\n");
        let head = file("postgres_version = 15\n[migrations]\ndir = \"migrations\"\n[plan]\nrequired = false\n");
        assert!(
            settings(&base, &head).is_empty(),
            "{:?}",
            settings(&base, &head).iter().map(|i| &i.text).collect::<Vec<_>>()
        );
        assert_eq!(joined(Vec::new()), None, "[queries] dirs = []: start or stop reading, never from ``");
        assert_eq!(joined(vec!["queries".into(), "app/sql".into()]).as_deref(), Some("queries, app/sql"));
    }

    #[test]
    fn a_higher_cost_floor_or_limit_relaxes() {
        let items =
            settings(&file("[plan]\ncost_limit = 500000\n"), &file("[plan]\ncost_floor = 5000\ncost_limit = 1000\n"));
        let texts: Vec<(&str, Effect)> = items.iter().map(|i| (i.text.as_str(), i.effect)).collect();
        assert_eq!(
            texts,
            [
                ("relax `[plan] cost_floor` from the default (1000) to 5000", Effect::Relaxes),
                ("tighten `[plan] cost_limit` from 500000 to 1000", Effect::Tightens),
            ]
        );
    }
}
