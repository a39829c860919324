//! What an edit of the freeze files would do: windows and events added, removed or moved in the
//! calendar (and the `.ics` files it imports), overrides added or removed.

use super::item::{Effect, Item};
use crate::freeze::calendar::{Calendar, Kind};
use crate::freeze::overrides::{Override, Overrides};
use crate::freeze::time::utc_string;
use std::collections::{BTreeMap, BTreeSet};

/// The calendar's own windows.
pub fn windows(trusted: &Calendar, proposed: &Calendar) -> Vec<Item> {
    let ids: BTreeSet<&String> = trusted.windows.iter().chain(&proposed.windows).map(|w| &w.id).collect();
    let mut out = Vec::new();
    for id in ids {
        let (old, new) = (trusted.window(id), proposed.window(id));
        let item = match (old, new) {
            (None, Some(w)) if w.kind == Kind::Deny => {
                Item::new(Effect::Tightens, format!("add deny window `{id}`"), Some(w.line))
            }
            (None, Some(w)) => Item::new(
                Effect::Changes,
                format!("add allow window `{id}` (deploys it applies to are allowed only inside allow windows)"),
                Some(w.line),
            ),
            (Some(w), None) if w.kind == Kind::Deny => Item::new(
                Effect::Relaxes,
                format!("remove deny window `{id}`: the deploys it blocks would go out"),
                None,
            ),
            (Some(_), None) => Item::new(Effect::Changes, format!("remove allow window `{id}`"), None),
            (Some(old), Some(new)) => {
                let mut what = Vec::new();
                if old.kind != new.kind {
                    what.push(format!("kind {} → {}", old.kind.as_str(), new.kind.as_str()));
                }
                if format!("{:?}", old.anchor) != format!("{:?}", new.anchor) {
                    what.push("its times".to_string());
                }
                if old.environments.patterns != new.environments.patterns {
                    what.push(format!(
                        "environments {} → {}",
                        old.environments.describe(),
                        new.environments.describe()
                    ));
                }
                if old.services.patterns != new.services.patterns {
                    what.push(format!("services {} → {}", old.services.describe(), new.services.describe()));
                }
                if old.reason != new.reason {
                    what.push("its reason".to_string());
                }
                if what.is_empty() {
                    continue;
                }
                let effect =
                    if old.kind == Kind::Deny && new.kind == Kind::Allow { Effect::Relaxes } else { Effect::Changes };
                Item::new(effect, format!("change window `{id}` ({})", what.join(", ")), Some(new.line))
            }
            (None, None) => continue,
        };
        out.push(item);
    }
    out
}

/// Events by the file that declares them: the calendar, or an imported `.ics` file.
pub fn events(trusted: &Calendar, proposed: &Calendar) -> BTreeMap<String, Vec<Item>> {
    fn index(c: &Calendar) -> BTreeMap<String, &crate::freeze::calendar::Event> {
        c.events.iter().map(|e| (e.id.clone(), e)).collect()
    }
    let (old, new) = (index(trusted), index(proposed));
    let ids: BTreeSet<&String> = old.keys().chain(new.keys()).collect();
    let mut out: BTreeMap<String, Vec<Item>> = BTreeMap::new();
    let file = |e: &crate::freeze::calendar::Event| e.file.to_string_lossy().replace('\\', "/");
    for id in ids {
        let (item, at) = match (old.get(id), new.get(id)) {
            (None, Some(e)) => (
                Item::new(
                    Effect::Changes,
                    format!("add event `{id}` ({}): windows anchored to it freeze around it", e.name),
                    Some(e.line),
                ),
                file(e),
            ),
            (Some(e), None) => (
                Item::new(
                    Effect::Relaxes,
                    format!("remove event `{id}` ({}): windows anchored to it no longer freeze around it", e.name),
                    None,
                ),
                file(e),
            ),
            (Some(a), Some(b)) => {
                let moved = format!("{:?}{:?}", a.schedule, a.tz) != format!("{:?}{:?}", b.schedule, b.tz);
                if !moved && a.name == b.name {
                    continue;
                }
                let what = if moved { "move event" } else { "rename event" };
                (Item::new(Effect::Changes, format!("{what} `{id}` ({})", b.name), Some(b.line)), file(b))
            }
            (None, None) => continue,
        };
        out.entry(at).or_default().push(item);
    }
    out
}

fn describe(o: &Override) -> String {
    format!(
        "for {} (ticket {}, requested by {}, approved by {}, {} to {})",
        o.windows.join(", "),
        if o.ticket.is_empty() { "none" } else { &o.ticket },
        if o.requested_by.is_empty() { "nobody" } else { &o.requested_by },
        if o.approved_by.is_empty() { "nobody" } else { &o.approved_by },
        o.not_before.map(utc_string).unwrap_or_else(|| "?".into()),
        o.expires_at.map(utc_string).unwrap_or_else(|| "?".into()),
    )
}

/// Overrides added, removed or changed. An override the change adds is never honoured by its
/// own review: it must reach the base revision through a pull request of its own.
pub fn overrides(trusted: &Overrides, proposed: &Overrides, trust_head: bool) -> Vec<Item> {
    let find = |list: &Overrides, id: &str| list.list.iter().find(|o| o.id == id).cloned();
    let ids: BTreeSet<String> = trusted.list.iter().chain(&proposed.list).map(|o| o.id.clone()).collect();
    let honoured = if trust_head {
        "honoured in this review only because of --trust-head-config"
    } else {
        "not honoured until it is on the base revision, through a reviewed pull request of its own"
    };
    let mut out = Vec::new();
    for id in ids {
        let item = match (find(trusted, &id), find(proposed, &id)) {
            (None, Some(o)) => {
                Item::new(Effect::Relaxes, format!("add override `{id}` {}: {honoured}", describe(&o)), Some(o.line))
            }
            (Some(o), None) => Item::new(Effect::Tightens, format!("remove override `{id}` {}", describe(&o)), None),
            (Some(a), Some(b)) if describe(&a) != describe(&b) || a.reason != b.reason => Item::new(
                Effect::Relaxes,
                format!("change override `{id}` to {}: the change is {honoured}", describe(&b)),
                Some(b.line),
            ),
            _ => continue,
        };
        out.push(item);
    }
    out
}
