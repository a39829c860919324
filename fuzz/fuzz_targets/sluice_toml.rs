//! `sluice.toml`: any text is a configuration or an error, never a panic.
#![no_main]

libfuzzer_sys::fuzz_target!(|text: &str| {
    let _ = sluice::config::parse(std::path::Path::new("sluice.toml"), text, &sluice::lint::rule_level_problem);
});
