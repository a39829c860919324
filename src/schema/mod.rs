//! The schema model and its replay: a pure value, built statement by statement.

pub mod cache;
mod derive;
pub mod immutability;
pub mod index_search;
pub mod migrations;
mod model;
pub mod naming;
mod references;
mod replay;
pub mod tools;

pub use derive::UNKNOWN as UNKNOWN_TYPE;
pub use model::*;
pub use references::Unknown;
