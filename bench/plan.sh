#!/usr/bin/env bash
# `sluice plan` on the 10-million-row transit fixture, beside PostgreSQL's own load floor, in the
# same run on the same kind of server:
#   floor:  psql on a server started with Sluice's own settings (read from src/plan/server.rs):
#           the fixture's 10,000,000 stop_times rows (drawn as scale.toml says) by generate_series
#           into an UNLOGGED table, then its primary key and the 3-column departure index, then
#           ANALYZE. Only the SQL is timed.
#   cold:   sluice plan with an empty cache: initdb, server start, migrations, 10.27 M rows into
#           4 tables, their indexes, ANALYZE, then 20 queries planned on base and head.
#   cached: the same again, the fixture reused.
# Floor and cold runs alternate (RUNS of each); the script prints each run, the medians and the
# ratio cold / floor. Needs the PostgreSQL server binaries and psql; about 4 GB of disk.
#
#   bench/plan.sh [RUNS]        (SLUICE_BIN=path uses a prebuilt binary)
set -euo pipefail
RUNS=${1:-3}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
if [ -z "${SLUICE_BIN:-}" ]; then
  cargo build --release --quiet --manifest-path "$ROOT/Cargo.toml"
fi
BIN=$(realpath "${SLUICE_BIN:-${CARGO_TARGET_DIR:-$ROOT/target}/release/sluice}")
FIX=$ROOT/fixtures/transit-planner/plan
PGBIN=$(pg_config --bindir 2>/dev/null || ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
WORK=$(mktemp -d /var/tmp/sluice-bench-XXXXXX)
chmod 755 "$WORK"
FLOOR_PID=
cleanup() {
  if [ -n "$FLOOR_PID" ]; then kill -INT "$FLOOR_PID" 2>/dev/null || true; wait "$FLOOR_PID" 2>/dev/null || true; fi
  rm -rf "$WORK"
}
trap cleanup EXIT

# The server runs unprivileged when this runs as root (initdb refuses root).
as_server() { if [ "$(id -u)" = 0 ]; then su postgres -s /bin/sh -c "$(printf '%q ' "$@")"; else "$@"; fi; }
seconds() { echo "$2 - $1" | bc; }
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

# --- the floor's server: Sluice's settings, its own cluster and socket --------------------------
mkdir -p "$WORK/floor"
[ "$(id -u)" = 0 ] && chown postgres: "$WORK/floor"
as_server "$PGBIN/initdb" -D "$WORK/floor/data" -U sluice -A trust -E UTF8 --locale=C --no-sync > /dev/null
mapfile -t SETTINGS < <(sed -n '/^fn settings/,/^}/p' "$ROOT/src/plan/server.rs" | grep -o '"[a-z_]*=[^"]*"' | tr -d '"' | grep -v '^unix_socket_directories=')
ARGS=()
for s in "${SETTINGS[@]}" "unix_socket_directories=$WORK/floor"; do ARGS+=(-c "$s"); done
echo "server settings (both sides): ${SETTINGS[*]}"
if [ "$(id -u)" = 0 ]; then
  su postgres -s /bin/sh -c "exec $(printf '%q ' "$PGBIN/postgres" -D "$WORK/floor/data" "${ARGS[@]}")" > "$WORK/floor/log" 2>&1 &
else
  "$PGBIN/postgres" -D "$WORK/floor/data" "${ARGS[@]}" > "$WORK/floor/log" 2>&1 &
fi
FLOOR_PID=$!
until "$PGBIN/pg_isready" -q -h "$WORK/floor"; do sleep 0.2; done
export PGOPTIONS="-c client_min_messages=warning"
PSQL=("$PGBIN/psql" -X -q -v ON_ERROR_STOP=1 -h "$WORK/floor" -U sluice -d postgres)

# The fixture's stop_times, as the scale spec draws it (scale.toml; the expressions Sluice's SQL
# generators use), into an UNLOGGED table: what PostgreSQL itself needs to produce that table.
floor() {
  "${PSQL[@]}" -c "DROP TABLE IF EXISTS stop_times" -c "CHECKPOINT"
  local start end
  start=$(date +%s.%N)
  "${PSQL[@]}" > "$WORK/floor/steps" <<'SQL'
\timing on
CREATE UNLOGGED TABLE stop_times (
    trip_id bigint NOT NULL, stop_sequence integer NOT NULL, route_id integer NOT NULL,
    service_date date NOT NULL, departure_time timestamp NOT NULL, stop_id integer NOT NULL);
INSERT INTO stop_times
SELECT 1 + (g - 1) / 40, 1 + (g - 1) % 40,
       least(400, floor(power(1 + random() * (power(401::float8, -0.1) - 1), 1 / -0.1::float8))),
       (timestamptz '2025-01-01T00:00:00Z' + random() * (timestamptz '2025-12-31T00:00:00Z' - timestamptz '2025-01-01T00:00:00Z'))::date,
       (timestamptz '2025-01-01T00:00:00Z' + random() * (timestamptz '2026-01-01T00:00:00Z' - timestamptz '2025-01-01T00:00:00Z'))::timestamp,
       1 + floor(random() * 20000)
FROM generate_series(1, 10000000) AS g;
ALTER TABLE stop_times ADD PRIMARY KEY (trip_id, stop_sequence);
CREATE INDEX ON stop_times (route_id, service_date, departure_time);
ANALYZE stop_times;
SQL
  end=$(date +%s.%N)
  seconds "$start" "$end"
}

# --- 20 queries: the fixture's three, and variations over the same tables -----------------------
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
sluice() {
  local rc=0 start end
  start=$(date +%s.%N)
  (cd "$FIX" && "$BIN" plan --base-dir base --head-dir base --scale scale.toml --queries "$WORK/queries" \
     --cache-dir "$WORK/cache" --format json > "$WORK/out.json" 2> "$WORK/err.log") || rc=$?
  end=$(date +%s.%N)
  if [ "$rc" -gt 1 ]; then echo "sluice plan failed (exit $rc):" >&2; cat "$WORK/err.log" >&2; exit "$rc"; fi
  seconds "$start" "$end"
}

floors=(); colds=()
for run in $(seq 1 "$RUNS"); do
  f=$(floor); floors+=("$f")
  rm -rf "$WORK/cache"
  c=$(sluice); colds+=("$c")
  printf 'run %d: floor %.1f s, sluice plan cold %.1f s\n' "$run" "$f" "$c"
done
echo "the floor's steps in the last run (insert, primary key, index, analyze):"
grep -o 'Time: [0-9.]* ms' "$WORK/floor/steps" | sed -n '2,5p' | awk '{printf "  %.1f s\n", $2 / 1000}'
echo "sluice's own steps in the last cold run:"
sed -n 's/^sluice: fixture: /  /p' "$WORK/err.log"

cached=()
for _ in $(seq 1 "$RUNS"); do cached+=("$(sluice)"); done

fm=$(printf '%s\n' "${floors[@]}" | median)
cm=$(printf '%s\n' "${colds[@]}" | median)
km=$(printf '%s\n' "${cached[@]}" | median)
printf 'PostgreSQL floor (psql): median %.1f s over %d runs\n' "$fm" "$RUNS"
printf 'sluice plan, cold:       median %.1f s over %d runs\n' "$cm" "$RUNS"
printf 'ratio cold / floor:      %.2f\n' "$(echo "$cm / $fm" | bc -l)"
printf 'sluice plan, cached:     median %.2f s over %d runs\n' "$km" "$RUNS"
