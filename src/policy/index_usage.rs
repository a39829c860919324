//! Index usage in production (`[policies] index_usage`): the CSV `psql --csv` prints for
//! [`EXPORT_QUERY`] (`sluice stats indexes`), from `pg_stat_user_indexes`. How often each index
//! was scanned since the database's statistics were last reset tells `drop-index-in-use` that
//! production reads through an index no query file shows, or that it never did, so dropping it
//! is safe.

use super::csv_export::Export;
use crate::error::Result;
use chrono::{DateTime, FixedOffset};
use std::collections::BTreeMap;
use std::path::Path;

/// The query whose `psql --csv` output is the index-usage snapshot.
pub const EXPORT_QUERY: &str = "\
-- Sluice index-usage snapshot: how often production scanned each index, from
-- pg_stat_user_indexes, and when this database's statistics were last reset.
-- Read-only, statistics views only (any role that may connect; pg_monitor on managed services).
--   sluice stats indexes | psql \"$DATABASE_URL\" --csv > policies/index-usage.csv
-- then in sluice.toml:
--   [policies]
--   index_usage = \"policies/index-usage.csv\"
SELECT s.schemaname,
       s.relname,
       s.indexrelname,
       s.idx_scan,
       s.idx_tup_read,
       now() AS captured_at,
       d.stats_reset,
       current_database() AS database
FROM pg_catalog.pg_stat_user_indexes s
CROSS JOIN pg_catalog.pg_stat_database d
WHERE d.datname = current_database()
ORDER BY 1, 2, 3;
";

const REQUIRED: &[&str] = &["schemaname", "relname", "indexrelname", "idx_scan", "idx_tup_read"];

/// One index's counters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexScans {
    /// The CSV line it is on.
    pub line: usize,
    pub table: String,
    pub idx_scan: u64,
    pub idx_tup_read: u64,
}

#[derive(Debug, Clone, Default)]
pub struct IndexUsage {
    /// How findings name the file.
    pub file: String,
    pub captured_at: Option<DateTime<FixedOffset>>,
    /// `pg_stat_database.stats_reset`; `None`: never reset (counted since the statistics began).
    pub stats_reset: Option<DateTime<FixedOffset>>,
    /// By index name as the schema model names it (`public.` dropped).
    pub indexes: BTreeMap<String, IndexScans>,
}

/// Days of statistics after which an index never scanned is called unused with confidence.
pub const UNUSED_AFTER_DAYS: i64 = 30;

impl IndexUsage {
    pub fn parse(path: &Path, file: String, text: &str) -> Result<IndexUsage> {
        let export = Export::parse(path, text, REQUIRED, "sluice stats indexes")?;
        let mut usage = IndexUsage { file, ..IndexUsage::default() };
        for (i, record) in export.records().enumerate() {
            if i == 0 {
                usage.captured_at = record.timestamp("captured_at")?;
                usage.stats_reset = record.timestamp("stats_reset")?;
            }
            let name = qualified(record.text("schemaname"), record.text("indexrelname"));
            let table = qualified(record.text("schemaname"), record.text("relname"));
            let scans = IndexScans {
                line: record.line,
                table,
                idx_scan: record.count("idx_scan")?,
                idx_tup_read: record.count("idx_tup_read")?,
            };
            usage.indexes.insert(name, scans);
        }
        Ok(usage)
    }

    pub fn get(&self, index: &str) -> Option<&IndexScans> {
        self.indexes.get(index)
    }

    /// `since the statistics reset on 2026-09-01 (93 days before the snapshot of 2026-12-03)`.
    pub fn period(&self) -> String {
        let taken = self.captured_at.map(|at| format!("the snapshot of {}", at.format("%Y-%m-%d")));
        match (self.stats_reset, self.captured_at) {
            (Some(reset), Some(at)) => format!(
                "since the statistics reset on {} ({} days before {})",
                reset.format("%Y-%m-%d"),
                (at - reset).num_days(),
                taken.unwrap_or_default()
            ),
            (Some(reset), None) => format!("since the statistics reset on {}", reset.format("%Y-%m-%d")),
            (None, _) => format!(
                "since the statistics began (no reset recorded){}",
                taken.map(|t| format!(", to {t}")).unwrap_or_default()
            ),
        }
    }

    /// Whether the counters cover long enough that an index never scanned is unused: a reset at
    /// least [`UNUSED_AFTER_DAYS`] before the snapshot, or no reset recorded at all.
    pub fn covers_long(&self) -> bool {
        match (self.stats_reset, self.captured_at) {
            (Some(reset), Some(at)) => (at - reset).num_days() >= UNUSED_AFTER_DAYS,
            (Some(_), None) => false,
            (None, _) => true,
        }
    }

    /// `policies/index-usage.csv:4`.
    pub fn place(&self, scans: &IndexScans) -> String {
        format!("{}:{}", self.file, scans.line)
    }
}

/// A catalog name as the schema model writes it: `public.` left out.
fn qualified(schema: &str, name: &str) -> String {
    match schema {
        "public" | "" => name.to_string(),
        _ => format!("{schema}.{name}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEADER: &str = "schemaname,relname,indexrelname,idx_scan,idx_tup_read,captured_at,stats_reset,database\n";

    fn parse(text: &str) -> Result<IndexUsage> {
        IndexUsage::parse(Path::new("policies/index-usage.csv"), "policies/index-usage.csv".into(), text)
    }

    #[test]
    fn indexes_are_named_as_the_schema_names_them() {
        let usage = parse(&format!(
            "{HEADER}public,users,users_email,1204,1300,2026-12-03 10:00:00+00,2026-09-01 00:00:00+00,app\n\
             audit,Log,\"Log_at\",0,0,2026-12-03 10:00:00+00,2026-09-01 00:00:00+00,app\n"
        ))
        .unwrap();
        let email = usage.get("users_email").unwrap();
        assert_eq!((email.line, email.table.as_str(), email.idx_scan), (2, "users", 1204));
        assert_eq!(usage.get("audit.Log_at").unwrap().idx_scan, 0);
        assert_eq!(
            usage.period(),
            "since the statistics reset on 2026-09-01 (93 days before the snapshot of 2026-12-03)"
        );
        assert!(usage.covers_long());
    }

    #[test]
    fn a_recent_reset_is_not_long_enough_to_call_an_index_unused() {
        let usage =
            parse(&format!("{HEADER}public,t,t_a,0,0,2026-12-03 10:00:00+00,2026-12-01 00:00:00+00,app\n")).unwrap();
        assert!(!usage.covers_long());
        let never = parse(&format!("{HEADER}public,t,t_a,0,0,2026-12-03 10:00:00+00,,app\n")).unwrap();
        assert!(never.covers_long());
        assert_eq!(never.period(), "since the statistics began (no reset recorded), to the snapshot of 2026-12-03");
    }

    #[test]
    fn bad_input_names_file_and_line() {
        let e = parse("schemaname,relname,indexrelname,idx_scan\npublic,t,t_a,1\n").unwrap_err().to_string();
        assert!(e.starts_with("policies/index-usage.csv:1: the header lacks the column idx_tup_read"), "{e}");
        let e = parse(&format!("{HEADER}public,t,t_a,1,1,,,app\npublic,t,t_b,-3,1,,,app\n")).unwrap_err().to_string();
        assert_eq!(e, "policies/index-usage.csv:3: idx_scan `-3` is not a count (a whole number, not negative)");
    }
}
