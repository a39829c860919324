#!/usr/bin/env bash
# Benchmark of `sluice plan` on the 10-million-row transit fixture:
#   1. cold: build the fixture (migrations, 10M stop_times, indexes, ANALYZE) and plan 20 queries;
#   2. cached: the same base again (fixture reused), plan 20 queries; median of RUNS runs.
# Usage: bench/plan.sh [RUNS]   (needs PostgreSQL server binaries; uses a fresh cache directory)
set -euo pipefail
RUNS=${1:-5}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
# SLUICE_BIN: a prebuilt binary (the time is spent in PostgreSQL, so a debug build measures the same).
if [ -z "${SLUICE_BIN:-}" ]; then
  cargo build --release --quiet --manifest-path "$ROOT/Cargo.toml"
fi
BIN=${SLUICE_BIN:-${CARGO_TARGET_DIR:-$ROOT/target}/release/sluice}
FIX=$ROOT/fixtures/transit-planner/plan
WORK=$(mktemp -d /var/tmp/sluice-bench-XXXXXX)
chmod 755 "$WORK"
trap 'rm -rf "$WORK"' EXIT

# 20 queries: the fixture's three, and variations over the same tables.
mkdir -p "$WORK/queries"
cp "$FIX"/queries/*.sql "$WORK/queries/"
for i in $(seq 1 17); do
  case $((i % 4)) in
    0) echo "SELECT count(*) FROM stop_times WHERE route_id = \$1 AND service_date = \$2 + $i;" ;;
    1) echo "SELECT st.* FROM stop_times st JOIN trips t ON t.id = st.trip_id WHERE t.route_id = \$1 AND t.service_date = \$2 LIMIT $((i * 10));" ;;
    2) echo "SELECT s.name, count(*) FROM stop_times st JOIN stops s ON s.id = st.stop_id WHERE st.route_id = $i GROUP BY s.name;" ;;
    3) echo "SELECT * FROM stop_times WHERE trip_id = \$1 AND stop_sequence > $((i % 40)) ORDER BY stop_sequence;" ;;
  esac > "$WORK/queries/q$(printf %02d "$i").sql"
done

# Exit 1 (findings) is a verdict; anything else means the run did not measure what it claims.
run() {
  local rc=0
  (cd "$FIX" && "$BIN" plan --base-dir base --head-dir base --scale scale.toml --queries "$WORK/queries" \
     --cache-dir "$WORK/cache" --format json >/dev/null) || rc=$?
  if [ "$rc" -gt 1 ]; then echo "sluice plan failed (exit $rc)" >&2; exit "$rc"; fi
}

echo "cold run (build the 10M-row fixture, plan 20 queries on both sides):"
start=$(date +%s.%N); run; end=$(date +%s.%N)
printf '  %.1f s\n' "$(echo "$end - $start" | bc)"

echo "cached runs (fixture reused, plan 20 queries on both sides), $RUNS runs:"
times=()
for _ in $(seq 1 "$RUNS"); do
  s=$(date +%s.%N); run; e=$(date +%s.%N)
  times+=("$(echo "$e - $s" | bc)")
done
printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR]=$1} END {printf "  median %.2f s (min %.2f, max %.2f)\n", a[int((NR+1)/2)], a[1], a[NR]}'
