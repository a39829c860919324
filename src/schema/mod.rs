//! The schema model and its replay: a pure value, built statement by statement.

pub mod cache;
pub mod migrations;
mod model;
mod replay;
pub mod tools;

pub use model::*;
