//! The schema model and its replay: a pure value, built statement by statement.

mod model;
pub mod migrations;
mod replay;

pub use model::*;
