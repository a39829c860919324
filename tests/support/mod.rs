//! Shared by the robustness tests (`pathological.rs`, `mutation.rs`); `fuzz/` includes
//! `invariants.rs` too. Each test crate uses part of it.
#![allow(dead_code)]

pub mod invariants;
pub mod pathological;
