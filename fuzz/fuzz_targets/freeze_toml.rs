//! `policies/freeze.toml`: any text is a calendar or an error, never a panic. The calendar's
//! imports are resolved beside a directory that does not exist, so nothing outside is read.
#![no_main]

libfuzzer_sys::fuzz_target!(|text: &str| {
    let _ = sluice::freeze::calendar::parse(std::path::Path::new("/nonexistent/sluice-fuzz/freeze.toml"), text);
});
