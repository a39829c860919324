#!/usr/bin/env bash
# What `[plan] scale` adds to `sluice check`: the reporting outage's pull request (it drops the
# index the revenue query needs) in a throwaway git repository, at a small scale (2,000
# customers, 40,000 orders), compared with `check --no-plan`. The first run builds the fixture
# (reported separately); the timed runs reuse the cached one, as CI runs on the same base do.
# Whole-process wall clock, median, with hyperfine (`apt-get install hyperfine`) when present.
# Needs the PostgreSQL server binaries (`apt-get install postgresql`).
#
#   bench/check_plan.sh [RUNS]
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
runs=${1:-10}

cargo build --release --quiet --manifest-path "$root/Cargo.toml"
target_dir=$(cargo metadata --format-version 1 --no-deps --manifest-path "$root/Cargo.toml" | jq -r .target_directory)
sluice="$target_dir/release/sluice"

# The ephemeral server runs unprivileged when this runs as root, so the cache lives where it can go.
work=$(mktemp -d -p /var/tmp)
chmod 755 "$work"
trap 'rm -rf "$work"' EXIT
export SLUICE_CACHE_DIR="$work/cache"
repo="$work/repo"
plan="$root/fixtures/reporting/plan"
mkdir -p "$repo/db/migrations" "$repo/queries"
cd "$repo"
git init -q -b main
printf '[migrations]\ndir = "db/migrations"\n[queries]\ndirs = ["queries"]\n[plan]\nscale = "db/scale.toml"\nseq_scan_rows = 1000\n' > sluice.toml
cp "$plan"/base/*.sql db/migrations/
cp "$plan"/queries/*.sql queries/
sed -e 's/2_000_000/40_000/; s/200_000/2_000/g' "$plan/scale.toml" > db/scale.toml
git add -A
git -c user.name=bench -c user.email=bench@example.com commit -qm base
git checkout -qb feature
cp "$plan/head-regression/0003_drop_unused_indexes.sql" db/migrations/

with="$sluice check --format json --fail-on never"
without="$with --no-plan"
start=$(date +%s.%N)
$with > "$work/out.json" || { echo "sluice check failed" >&2; exit 2; }
echo "first run (builds the fixture): $(echo "$(date +%s.%N) - $start" | bc) s"
echo "plan-regression findings: $(jq '[.findings[] | select(.rule == "plan-regression")] | length' "$work/out.json")"

if command -v hyperfine > /dev/null; then
  hyperfine --warmup 1 --runs "$runs" --export-json "$work/times.json" -n "check (plans, cached fixture)" \
    "$with > /dev/null" -n "check --no-plan" "$without > /dev/null" > /dev/null
  jq -r '.results[] | "\(.command): median \(.median * 1000 | round) ms over \(.times | length) runs"' "$work/times.json"
else
  for cmd in "$with" "$without"; do
    for _ in $(seq "$runs"); do /usr/bin/time -f "%e" $cmd > /dev/null; done 2>&1 | sort -n | awk -v c="$cmd" \
      '{a[NR]=$1} END {print c ": median " a[int((NR+1)/2)] " s"}'
  done
fi
