//! `policies/tables.toml` and its statistics snapshot: the input is split at the first NUL into
//! the TOML and the CSV it names (when it names one), so both loaders see arbitrary text.
#![no_main]

use std::path::Path;

libfuzzer_sys::fuzz_target!(|text: &str| {
    let (toml, csv) = text.split_once('\0').unwrap_or((text, ""));
    let csv = csv.to_string();
    let _ = sluice::policy::tables::TablesPolicy::parse(Path::new("policies/tables.toml"), toml, &|_| Ok(csv.clone()));
    let _ = sluice::policy::tables::parse_snapshot(Path::new("policies/table-stats.csv"), &csv);
});
