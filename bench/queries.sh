#!/usr/bin/env bash
# `sluice queries` speed: whole-process wall time of reading the SQL of a large application
# (every Go, Rust, Java, Kotlin, TS/JS, Python file, mapper and .sqlx file under it), interleaved
# rounds and medians (bench/interleave.py), on all cores and on one (RAYON_NUM_THREADS=1).
#
#   bench/queries.sh DIR        a checked-out application, e.g. the ThingsBoard tree the census
#                               exports (bench/query_census.sh; 10,074 files, 6,975 read)
#
# Env: RUNS (default 10), WARMUP (2), SLUICE (binary; default: a release build of this tree).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:?usage: bench/queries.sh DIR}
if [[ -z "${SLUICE:-}" ]]; then
  cargo build --release --locked -q --manifest-path "$root/Cargo.toml"
  SLUICE="$root/target/release/sluice"
fi
echo "$("$SLUICE" --version); $(nproc) CPUs; $(find "$dir" -type f | wc -l) files; $(uptime)"
python3 "$root/bench/interleave.py" --runs "${RUNS:-10}" --warmup "${WARMUP:-2}" \
  "queries=$SLUICE queries --no-ignore --format json $dir" \
  "queries-1-thread=RAYON_NUM_THREADS=1 $SLUICE queries --no-ignore --format json $dir"
