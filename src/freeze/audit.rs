//! The override audit log: one JSON line per decision that used an override.

use super::calendar::Calendar;
use super::decide::{Query, State, Status};
use super::overrides::Overrides;
use super::time::utc_string;
use crate::error::{Error, Result};
use chrono::Utc;
use serde_json::json;
use std::io::Write;
use std::path::Path;

/// The record for `status` (which must have used an override).
pub fn record(
    calendar: &Calendar,
    overrides: &Overrides,
    query: Query,
    status: &Status,
    command: &str,
) -> serde_json::Value {
    let used: Vec<_> = status.overrides_used.iter().map(|&i| &overrides.list[i]).collect();
    let windows: Vec<_> = status
        .entries
        .iter()
        .map(|e| {
            json!({
                "id": calendar.windows[e.window].id,
                "state": match e.state { State::Active => "active", State::Lifted(_) => "lifted", State::Outside => "outside" },
            })
        })
        .collect();
    json!({
        "time": utc_string(Utc::now()),
        "at": utc_string(status.at),
        "command": command,
        "decision": if status.frozen { "frozen" } else { "open" },
        "environment": query.env,
        "service": query.service,
        "windows": windows,
        "override": used.first().map(|o| o.id.clone()),
        "overrides": used.iter().map(|o| json!({"id": o.id, "ticket": o.ticket, "requested_by": o.requested_by, "approved_by": o.approved_by})).collect::<Vec<_>>(),
        "overrides_file": overrides.path.as_ref().map(|p| p.to_string_lossy().replace('\\', "/")),
        "override_commit": overrides.commit,
        "tool_version": env!("CARGO_PKG_VERSION"),
        "calendar": calendar.path.to_string_lossy().replace('\\', "/"),
        "calendar_sha256": calendar.digest,
    })
}

/// Appends the [`record`] of `status` to the log at `path` when the decision used an override.
pub fn log_if_overridden(
    path: &Path,
    calendar: &Calendar,
    overrides: &Overrides,
    query: Query,
    status: &Status,
    command: &str,
) -> Result<()> {
    if status.overrides_used.is_empty() {
        return Ok(());
    }
    append(path, &record(calendar, overrides, query, status, command))
}

/// Appends one line to the log, creating it (and its directory) if needed. A decision that uses an
/// override but cannot be audited is an error: the gate fails closed.
pub fn append(path: &Path, record: &serde_json::Value) -> Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .map_err(|e| Error::invalid(dir, None, format!("cannot create the audit log's directory: {e}")))?;
    }
    let mut file = super::input::open_append(path)?;
    let mut line = record.to_string();
    line.push('\n');
    file.write_all(line.as_bytes())
        .map_err(|e| Error::invalid(path, None, format!("cannot write to the audit log: {e}")))
}
