#!/usr/bin/env bash
# What scanning application code for queries adds to `sluice lint` (issue 35's target: at most
# 20% on a 5,000-file application repository, warm runs served from the code scan cache).
#
#   bench/query_scan.sh [REPO_DIR [MIGRATIONS_DIR]]
#
# REPO_DIR: an application repository checked out on disk (default: temporal, fetched at a pinned
# commit into bench/.repos/temporal; nothing fetched is committed). MIGRATIONS_DIR: its migration
# history, relative to it (the tool detected as `sluice lint` does), so that the reference is a
# real lint; without one, no history (only SCHEMA). The script writes a sluice.toml into a copy
# of it — the schema from its own PostgreSQL schema file when it has one, `[queries] code` =
# every top-level directory — and runs, interleaved (bench/interleave.py):
#   without-code   `sluice lint` with `[queries] code = []`
#   code-warm      with the code directories, the scan cache warm
#   code-cold      with the code directories and --no-cache
# reporting median wall, user and system time. The ratio warm / without is the target's figure.
# With BEFORE (another build, e.g. main's), its warm and --no-cache runs are timed in the same
# rounds (before-warm, before-cold), after checking that both builds, warm and cold, report the
# same findings.
#
# Env: RUNS (default 10), WARMUP (2), SLUICE (binary; default: a release build of this tree),
#      BEFORE (binary),
#      TEMPORAL_REPO (where to clone from; default GitHub), SCHEMA (the schema dump, relative to
#      the repository; default: temporal's).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
runs=${RUNS:-10}
warmup=${WARMUP:-2}
repo=${1:-}
migrations=${2:-}
if [[ -z "$repo" ]]; then
  repo="$root/bench/.repos/temporal"
  if [[ ! -d "$repo" ]]; then
    git clone -q "${TEMPORAL_REPO:-https://github.com/temporalio/temporal}" "$repo"
    git -C "$repo" checkout -q 6805caea59
  fi
  : "${SCHEMA:=schema/postgresql/v12/temporal/schema.sql}"
fi
if [[ -z "${SLUICE:-}" ]]; then
  cargo build --release --locked -q --manifest-path "$root/Cargo.toml"
  SLUICE="$root/target/release/sluice"
fi
SLUICE=$(realpath "$SLUICE")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp -r "$repo" "$work/app"
# The copy's files are new: past the caches' racy window (2 s) before any run, as a checked-out
# tree's are, or a fast repository's rounds would all fall inside it and re-read every file.
sleep 3
cd "$work/app"
rm -rf .git
files=$(find . -type f | wc -l)
dirs=$(find . -mindepth 1 -maxdepth 1 -type d ! -name '.*' -printf '"%f", ' | sed 's/, $//')
if [[ -z "$migrations" ]]; then
  mkdir -p .sluice-no-migrations
fi
write_config() { # CODE_DIRS
  {
    echo '[migrations]'
    if [[ -n "$migrations" ]]; then
      echo "dir = \"$migrations\""
    else
      echo 'dir = ".sluice-no-migrations"'
      echo 'layout = "flat"'
    fi
    [[ -n "${SCHEMA:-}" ]] && echo "schema_dump = \"$SCHEMA\""
    echo '[queries]'
    echo 'dirs = []'
    echo "code = [$1]"
  } > "$2"
}
write_config "" without.toml
write_config "$dirs" with.toml
code_files=$("$SLUICE" queries --format json . 2>/dev/null | jq '.totals.scanned' || echo '?')
echo "$("$SLUICE" --version); $files files, $code_files code files Sluice reads; $(nproc) CPUs; $(uptime)"
"$SLUICE" lint --config with.toml --cache-dir "$work/cache" > /dev/null || true   # fills the scan cache
"$SLUICE" lint --config with.toml --cache-dir "$work/cache" | tail -n 4 || true
"$SLUICE" lint --config without.toml --cache-dir "$work/cache" | tail -n 2 || true
before=()
if [[ -n "${BEFORE:-}" ]]; then
  BEFORE=$(realpath "$BEFORE")
  "$BEFORE" lint --config with.toml --cache-dir "$work/cache" > /dev/null || true   # its own caches
  rm -f "$work/first.json"
  for run in "$BEFORE --no-cache" "$BEFORE --cache-dir $work/cache" "$SLUICE --no-cache" "$SLUICE --cache-dir $work/cache"; do
    # shellcheck disable=SC2086 # the binary and its cache flags
    set -- ${run}
    "$1" lint --config with.toml "${@:2}" --format json | jq -S .findings > "$work/findings.json" || true
    if [[ -f "$work/first.json" ]] && ! cmp -s "$work/first.json" "$work/findings.json"; then
      echo "the findings differ: $run" >&2
      exit 1
    fi
    mv "$work/findings.json" "$work/first.json"
  done
  before=("before-warm=$BEFORE lint --config with.toml --cache-dir $work/cache"
    "before-cold=$BEFORE lint --config with.toml --no-cache")
fi
python3 "$root/bench/interleave.py" --runs "$runs" --warmup "$warmup" \
  "without-code=$SLUICE lint --config without.toml --cache-dir $work/cache" \
  "code-warm=$SLUICE lint --config with.toml --cache-dir $work/cache" \
  "code-cold=$SLUICE lint --config with.toml --no-cache" "${before[@]}"
