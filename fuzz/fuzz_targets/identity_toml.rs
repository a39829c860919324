//! `policies/identity.toml`: any text is a policy or an error, never a panic.
#![no_main]

libfuzzer_sys::fuzz_target!(|text: &str| {
    let _ = sluice::policy::identity::IdentityPolicy::parse(std::path::Path::new("policies/identity.toml"), text);
});
