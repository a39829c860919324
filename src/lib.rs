//! Sluice: the deployment-safety and migration-review gate.
//!
//! The library does the work; `main.rs` only calls [`cli::main`].

pub mod cache;
pub mod check;
pub mod cli;
pub mod config;
pub mod error;
pub mod finding;
pub mod freeze;
pub mod git;
pub mod init;
pub mod lint;
pub mod plan;
pub mod policy;
pub mod queries;
pub mod report;
pub mod rules;
pub mod runner;
pub mod schema;
pub mod source;
pub mod sql;

pub use error::{Error, Result};
pub use finding::{Finding, Report, Severity};
