//! Where the queries an application runs come from: one file per source, each yielding
//! statements with their origin, all checked by the same rules.
//!
//! The layer sits between `schema` and `rules`: a source reads files (or a workload export)
//! and knows nothing of rules; the lint engine checks what the sources yield against the
//! replayed schema.
//!
//! - [`code`]: SQL passed to known database calls in application code (Go, Rust, Java/Kotlin,
//!   TypeScript/JavaScript, Python) and in framework files (MyBatis mappers, sqlx offline
//!   data), each read with a real parser of its language.
//! - [`listing`]: what `sluice queries` shows of them.

pub mod code;
pub mod listing;
