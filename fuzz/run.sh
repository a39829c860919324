#!/usr/bin/env bash
# Runs each cargo-fuzz target for SECONDS (default 600), one after the other, seeded with
# fuzz/seeds/ and the repository's fixtures; new corpus entries go to fuzz/corpus/<target>/
# (not committed), crashes to fuzz/artifacts/<target>/. Needs a nightly toolchain and
# cargo-fuzz: `rustup toolchain install nightly && cargo install cargo-fuzz`.
#
#   fuzz/run.sh            # every target, 10 minutes each
#   fuzz/run.sh 60 split   # one target, one minute
set -euo pipefail
cd "$(dirname "$0")"
seconds=${1:-600}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(split parse sluice_toml identity_toml tables_toml freeze_toml)

for target in "${targets[@]}"; do
  case $target in
    split | parse) seeds=(seeds/sql); fixtures='*.sql'; max_len=16384; dict=(-dict=sql.dict) ;;
    sluice_toml) seeds=(seeds/sluice_toml); fixtures='sluice.toml'; max_len=4096; dict=() ;;
    identity_toml) seeds=(seeds/identity_toml); fixtures='identity.toml'; max_len=4096; dict=() ;;
    tables_toml) seeds=(seeds/tables_toml); fixtures='tables.toml'; max_len=4096; dict=() ;;
    freeze_toml) seeds=(seeds/freeze_toml); fixtures='freeze.toml'; max_len=8192; dict=() ;;
    *) echo "unknown target $target" >&2; exit 2 ;;
  esac
  mkdir -p "corpus/$target"
  # The repository's own files of that kind seed the corpus too.
  find ../fixtures -name "$fixtures" -type f | while read -r file; do
    cp "$file" "corpus/$target/fixture-$(sha1sum < "$file" | cut -c1-16)"
  done
  # Statement boundaries and stack depth are what these targets are for: no sanitizer (the
  # code is safe Rust), debug assertions on (overflow checks), 2 GiB of memory per input.
  cargo +nightly fuzz run --sanitizer none --debug-assertions "$target" "corpus/$target" "${seeds[@]}" -- \
    "${dict[@]}" -max_total_time="$seconds" -max_len="$max_len" -timeout=20 -rss_limit_mb=2048 -print_final_stats=1
done
