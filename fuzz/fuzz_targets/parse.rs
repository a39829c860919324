//! The parser front end and the lint engine: no panic or stack overflow on any text, and every
//! range that could not be read is an `unread-text` error (tests/support/invariants.rs).
#![no_main]

#[path = "../../tests/support/invariants.rs"]
#[allow(dead_code)] // each target uses part of it
mod invariants;

libfuzzer_sys::fuzz_target!(|text: &str| {
    if let Err(problem) = invariants::check_lint(text) {
        panic!("{problem}");
    }
});
