#!/usr/bin/env bash
# Fetches a real public migration history for the benchmarks, at a pinned commit, into
# target/bench-history/NAME (never committed: target/ is ignored), and writes a sluice.toml
# beside its migrations.
#
#   bench/fetch_history.sh NAME        NAME: lemmy (342 diesel migrations) | crates.io (285)
#
# The repository is cloned from GitHub; set LEMMY_REPO / CRATES_IO_REPO to a local clone or
# mirror instead (a path or URL git can clone). Prints the project directory.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
name=${1:?usage: fetch_history.sh lemmy|crates.io}
case $name in
  lemmy)
    url=${LEMMY_REPO:-https://github.com/LemmyNet/lemmy.git}
    commit=439734dd638a2c06a2f907beab7dcf4646e88f86 ;;
  crates.io)
    url=${CRATES_IO_REPO:-https://github.com/rust-lang/crates.io.git}
    commit=57fa000662f511321daa61e6769f190ea0e80771 ;;
  *) echo "unknown history: $name (lemmy or crates.io)" >&2; exit 2 ;;
esac

out="$root/target/bench-history/$name"
if [[ ! -f "$out/sluice.toml" ]]; then
  clone=$(mktemp -d)
  trap 'rm -rf "$clone"' EXIT
  git clone --quiet --no-checkout --filter=blob:none "$url" "$clone" 2>/dev/null \
    || git clone --quiet --no-checkout "$url" "$clone"
  git -C "$clone" -c advice.detachedHead=false checkout --quiet "$commit" -- migrations
  rm -rf "$out" && mkdir -p "$out"
  cp -r "$clone/migrations" "$out/migrations"
  printf '[migrations]\ndir = "migrations"\nlayout = "diesel"\n' > "$out/sluice.toml"
  git -C "$out" init --quiet   # findings name files relative to the project, as in a real checkout
fi
echo "$out"
