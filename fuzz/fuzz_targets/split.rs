//! The splitter accounts for every byte of any text (tests/support/invariants.rs).
#![no_main]

#[path = "../../tests/support/invariants.rs"]
#[allow(dead_code)] // each target uses part of it
mod invariants;

libfuzzer_sys::fuzz_target!(|text: &str| {
    if let Err(problem) = invariants::check_split(text) {
        panic!("{problem}");
    }
});
