//! Where the queries an application runs come from: one file per source, each yielding
//! statements with their origin, all checked by the same rules.
//!
//! The layer sits between `schema` and `rules`: a source reads files (or a workload export)
//! and knows nothing of rules; the lint engine checks what the sources yield against the
//! replayed schema.
//!
//! - [`sql_files`]: `.sql` files in the query directories (`[queries] dirs`), in any
//!   placeholder style.
//! - [`sqlc`]: the query paths a `sqlc.yaml` / `sqlc.yml` / `sqlc.json` names (versions 1 and 2).
//! - [`code`]: SQL passed to known database calls in application code (Go, Rust, Java/Kotlin,
//!   TypeScript/JavaScript, Python) and in framework files (MyBatis mappers, sqlx offline
//!   data), each read with a real parser of its language.
//! - [`listing`]: what `sluice queries` shows of them.
//!
//! Every source yields [`Query`] values; [`ParsedQuery`] is one parsed for the rules, with
//! its placeholders read as parameters and the way back from a position in what the rules
//! read to the line and column in the file where the query is written.

pub mod blob_scan_cache;
pub mod changes;
pub mod code;
pub mod code_listing;
pub mod code_scan;
pub mod listing;
mod parsed;
mod query;
pub mod scan_cache;
pub mod sql_files;
pub mod sqlc;
pub mod workload;

pub use parsed::ParsedQuery;
pub use query::{Place, Query, QueryName, Source};

/// "3 query file(s)", or "2 query file(s), 41 queries in 12 code file(s)": what a run read.
pub fn describe_counts(queries: &[ParsedQuery]) -> String {
    let mut files = std::collections::BTreeSet::new();
    let mut code_files = std::collections::BTreeSet::new();
    let mut in_code = 0;
    let mut in_workload = 0;
    for q in queries {
        match q.query.source {
            Source::Code(_) => {
                in_code += 1;
                code_files.insert(q.query.file.as_str());
            }
            Source::Workload(_) => in_workload += 1,
            _ => {
                files.insert(q.query.file.as_str());
            }
        }
    }
    let mut out = format!("{} query file(s)", files.len());
    if in_code > 0 {
        out.push_str(&format!(", {in_code} queries in {} code file(s)", code_files.len()));
    }
    if in_workload > 0 {
        out.push_str(&format!(", {in_workload} workload entries"));
    }
    out
}
