//! What the integration tests share: git repositories (`git`), freeze calendars (`freeze`), and
//! for the robustness tests (`pathological.rs`, `mutation.rs`) the invariants and inputs;
//! `fuzz/` includes `invariants.rs` too. Each test crate uses part of it.
#![allow(dead_code)]

pub mod freeze;
pub mod git;
pub mod invariants;
pub mod pathological;
