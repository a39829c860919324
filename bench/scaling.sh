#!/usr/bin/env bash
# Scaling benchmark: Sluice on inputs built to find super-linear steps (bench/gen_pathological.py),
# each at a size and at a multiple of it, so that linear time shows as a time ratio close to the
# size ratio and bounded memory as a flat peak RSS. squawk 2.70 runs beside it where it can.
#
#   bench/scaling.sh [KIND...]      (default: every kind below)
#
# Env: RUNS (default 3), SLUICE (binary; default: a release build of this tree), SQUAWK=0 to skip squawk.
# Targets (issue 13): a 25 MB migration < 30 s and < 1 GB; 100 MB < 2 min and < 1 GB; 200,000
# files and 100,000 statements on one line in linear time; a 50,000-term AND/OR chain < 1 s.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
runs=${RUNS:-3}
if [[ -z "${SLUICE:-}" ]]; then
  cargo build --release --locked -q
  SLUICE="$root/target/release/sluice"
fi
squawk="$root/bench/.venv/bin/squawk"
[[ -x $squawk && ${SQUAWK:-1} != 0 ]] || squawk=""

# kind: sizes to run (the last is the target size)
declare -A sizes=(
  [ddl-file]="12.5 25 100"
  [many-files]="50000 100000 200000"
  [named-files]="1250 2500 5000"
  [one-line]="25000 50000 100000"
  [and-or]="12500 25000 50000"
  [select-one]="4 8"
  [insert]="5 10"
  [indexes]="10000 20000 40000"
  [backfills]="10000 20000 40000"
)
kinds=("$@")
[[ ${#kinds[@]} -gt 0 ]] || kinds=(ddl-file many-files named-files one-line and-or select-one insert indexes backfills)
SLUICE=$(realpath "$SLUICE")   # the commands run in each project's directory
echo "$("$SLUICE" --version); $(nproc) CPUs; $(uptime)"
for kind in "${kinds[@]}"; do
  for size in ${sizes[$kind]}; do
    # named-files: many-files' history with every file named on the command line, as
    # `sluice lint migrations/*.sql` names them (each name was once compared with each file).
    generated=${kind/named-files/many-files}
    dir="$root/target/bench-scaling/$generated-$size"
    [[ -f "$dir/sluice.toml" ]] || python3 bench/gen_pathological.py "$generated" "$size" "$dir"
    echo
    echo "== $kind $size: $(du -sb "$dir/migrations" "$dir/queries" | awk '{s+=$1} END {printf "%.1f MB", s/1e6}')"
    named=""
    [[ $kind == named-files ]] && named=$(cd "$dir" && echo migrations/*.sql)
    commands=("sluice=$SLUICE lint --format json --no-cache $named")
    # squawk reads one file at a time; with 200,000 files the shell's argument list is too long
    # (and `indexes` is a diesel layout of directories).
    if [[ -n $squawk && $kind == named-files ]]; then
      commands+=("squawk=$squawk --reporter json $named")
    elif [[ -n $squawk && $kind != many-files && $kind != indexes ]]; then
      commands+=("squawk=$squawk --reporter json migrations/*.sql queries/*.sql")
    fi
    python3 bench/interleave.py --runs "$runs" --warmup 0 --cwd "$dir" \
      --json "$root/target/bench-scaling-$kind-$size.json" "${commands[@]}"
  done
done
