#!/usr/bin/env bash
# Whole-process timings of `sluice freeze status`, `next-open` and `list` (one month) on a
# calendar of 10,000 events and 50 windows (target: < 20 ms median each), cold (--no-cache) and
# warm (the validated calendar cached). Needs hyperfine (apt-get install hyperfine) and python3.
# RUNS=N changes the number of runs per command (default 40).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet
bin="${CARGO_TARGET_DIR:-target}/release/sluice"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
python3 bench/gen_freeze_calendar.py 10000 "$work/freeze.toml" >/dev/null
cal=(--calendar "$work/freeze.toml")
# Sanity: the calendar loads and the commands answer.
"$bin" freeze list "${cal[@]}" --from 2026-06-01T00:00:00Z --to 2026-07-01T00:00:00Z --format json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["occurrences"]), "occurrences in June 2026")'
"$bin" freeze next-open "${cal[@]}" --env production --service survey-api --after 2026-06-01T00:00:00Z --min-duration PT12H
# Each command twice: cold (--no-cache: parse and validate the calendar, as the first run after
# an edit does) and warm (the validated calendar read from the cache, as every later run does).
names=(
  "status (survey-api)"
  "status (every window)"
  "next-open PT12H (survey-api)"
  "next-open PT2H (warehouse, allow)"
  "list one month (table)"
  "list one month (json)"
)
commands=(
  "freeze status ${cal[*]} --env production --service survey-api --at 2026-06-01T12:00:00Z --format json"
  "freeze status ${cal[*]} --at 2026-06-01T12:00:00Z --format json"
  "freeze next-open ${cal[*]} --env production --service survey-api --after 2026-06-01T00:00:00Z --min-duration PT12H"
  "freeze next-open ${cal[*]} --env production --service warehouse-etl --after 2026-06-01T00:00:00Z --min-duration PT2H"
  "freeze list ${cal[*]} --from 2026-06-01T00:00:00Z --to 2026-07-01T00:00:00Z"
  "freeze list ${cal[*]} --from 2026-06-01T00:00:00Z --to 2026-07-01T00:00:00Z --format json"
)
# A cached answer must be the uncached one, byte for byte.
for c in "${commands[@]}"; do
  cmp <($bin $c --no-cache || true) <($bin $c --cache-dir "$work/cache" || true)
done
args=()
for i in "${!commands[@]}"; do
  args+=(-n "${names[$i]} cold" "$bin ${commands[$i]} --no-cache")
  args+=(-n "${names[$i]} warm" "$bin ${commands[$i]} --cache-dir $work/cache")
done
hyperfine --warmup 3 --runs "${RUNS:-40}" -N -i --export-json "$work/hyperfine.json" "${args[@]}"

python3 - "$work/hyperfine.json" <<'PY'
import json, sys
for r in json.load(open(sys.argv[1]))["results"]:
    cpu = (r["user"] + r["system"]) * 1000
    print(f'{r["command"]:<40} median {r["median"] * 1000:6.1f} ms wall   mean {cpu:5.1f} ms CPU (user+sys)')
PY
