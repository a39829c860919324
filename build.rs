//! Links the `sluice` executable at a fixed address on Linux with glibc (`-no-pie`): a
//! position-independent executable is relocated by the dynamic loader at every start, which
//! writes 1.5 MB of its tables (56,000 relocations) into fresh private pages before `main` runs:
//! 1–2 ms and 2–3 MB of the peak memory of a `lint` that takes 13 ms on a small history. The
//! address space of libraries, heap and stacks is still randomized; only the executable's own
//! image is not. Static musl builds (the release binaries) and macOS link as their targets do.
fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let target = |key: &str| std::env::var(key).unwrap_or_default();
    if target("CARGO_CFG_TARGET_OS") == "linux" && target("CARGO_CFG_TARGET_ENV") == "gnu" {
        println!("cargo:rustc-link-arg-bins=-no-pie");
    }
}
