#!/usr/bin/env bash
# Lint benchmark: Sluice against squawk-cli 2.70 on the same files, whole-process wall time and
# peak memory, interleaved rounds (bench/interleave.py), medians.
#
#   bench/lint.sh [corpus [N_FILES] | lemmy | crates.io | all]     (default: all)
#
#   corpus     bench/gen_corpus.py's generated history (default 2,500 files, ~5 MB)
#   lemmy      Lemmy's 342 diesel migrations, fetched at a pinned commit (bench/fetch_history.sh)
#   crates.io  crates.io's 285 diesel migrations, likewise
#
# Env: RUNS (default 10), WARMUP (2), SLUICE (binary; default: a release build of this tree),
#      LEMMY_REPO / CRATES_IO_REPO (where to clone from; default GitHub).
# Target (issue 13): Sluice's median wall time at most 0.5x squawk's, peak RSS at most 2x.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
runs=${RUNS:-10}
warmup=${WARMUP:-2}
venv=bench/.venv

if [[ ! -x "$venv/bin/squawk" ]] || [[ "$("$venv/bin/squawk" --version)" != *2.70.0* ]]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q squawk-cli==2.70.0
fi
squawk="$root/$venv/bin/squawk"
if [[ -z "${SLUICE:-}" ]]; then
  cargo build --release --locked -q
  SLUICE="$root/target/release/sluice"
fi
SLUICE=$(realpath "$SLUICE")   # the commands run in each project's directory
echo "$("$SLUICE" --version); $("$squawk" --version); $(nproc) CPUs; $(uptime)"
# The code a lint runs is laid out together only for the names in link/symbol-order.txt that the
# binary still has (build.rs); a compiler upgrade or a large change drops them, and the peak
# memory rises by several megabytes: bench/symbol_order.sh writes the file again.
ordered=$({ nm "$SLUICE" 2> /dev/null || true; } | awk '$2 ~ /^[tT]$/ { print $3 }' | sort -u \
  | comm -12 - <(sort -u link/symbol-order.txt) | wc -l)
echo "link/symbol-order.txt: $ordered of $(wc -l < link/symbol-order.txt) functions are in this binary"

compare() { # NAME DIR SLUICE_ARGS SQUAWK_FILES...
  local name=$1 dir=$2 sluice_args=$3
  shift 3
  echo
  echo "== $name: $(find "$dir/migrations" -name '*.sql' | wc -l) .sql files, $(du -sb "$dir/migrations" | cut -f1 | awk '{printf "%.1f MB", $1/1e6}')"
  python3 bench/interleave.py --runs "$runs" --warmup "$warmup" --cwd "$dir" --json "$root/target/bench-lint-$name.json" \
    "sluice=$SLUICE lint --format json $sluice_args" \
    "squawk=$squawk --reporter json $*"
}

what=${1:-all}
if [[ $what == corpus || $what == all ]]; then
  n=${2:-2500}
  dir="$root/target/bench-corpus-$n"
  [[ -f "$dir/sluice.toml" ]] || python3 bench/gen_corpus.py "$dir" "$n"
  compare "corpus-$n" "$dir" "" "migrations/*.sql"
fi
for history in lemmy crates.io; do
  if [[ $what == "$history" || $what == all ]]; then
    dir=$(bench/fetch_history.sh "$history")
    # diesel runs each up.sql in a transaction: tell squawk, as Sluice knows from the layout.
    compare "$history" "$dir" "" --assume-in-transaction "migrations/*/up.sql"
  fi
done
