#!/usr/bin/env bash
# `sluice check` on a pull-request-shaped change in a real application repository: what reading
# the code costs when the change adds a migration (so the affected-query rule looks for the
# unchanged code that reads its table) and edits a code file.
#
#   bench/check_code.sh REPO_DIR MIGRATIONS_DIR NEW_MIGRATION SQL [CODE_FILE]
#   e.g. bench/check_code.sh /tmp/ente server/migrations 999_bench.up.sql \
#          'ALTER TABLE users ADD COLUMN bench_note text;' server/pkg/repo/user.go
#
# The script copies REPO_DIR (a checkout or an export; its .git is left behind) into a new git
# repository whose `main` is one commit with a sluice.toml (`[migrations] dir` = MIGRATIONS_DIR,
# `[queries] code` = every top-level directory); branch `feature` adds MIGRATIONS_DIR/NEW_MIGRATION
# holding SQL and appends a comment line to CODE_FILE. Then, interleaved (bench/interleave.py):
#   cold    `sluice check --no-cache` (every cache off)
#   warm    `sluice check` with its caches warm (schema snapshot, code by git blob)
# and, once per build, the run that fills the caches (with the code cache, it parses every code
# file the cache does not know).
# for SLUICE and, when set, BEFORE (another build, e.g. the previous commit's), median wall times.
#
# Env: RUNS (default 10), SLUICE (default: a release build of this tree), BEFORE.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
repo=${1:?usage: check_code.sh REPO_DIR MIGRATIONS_DIR NEW_MIGRATION SQL [CODE_FILE]}
migrations=${2:?}
migration=${3:?}
sql=${4:?}
code_file=${5:-}
runs=${RUNS:-10}
if [[ -z "${SLUICE:-}" ]]; then
  cargo build --release --locked -q --manifest-path "$root/Cargo.toml"
  SLUICE="$root/target/release/sluice"
fi
SLUICE=$(realpath "$SLUICE")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/app"
(cd "$repo" && tar --exclude=./.git -cf - .) | tar -xf - -C "$work/app"
cd "$work/app"
dirs=$(find . -mindepth 1 -maxdepth 1 -type d ! -name '.*' -printf '"%f", ' | sed 's/, $//')
printf '[migrations]\ndir = "%s"\n\n[queries]\ndirs = []\ncode = [%s]\n' "$migrations" "$dirs" > sluice.toml
git init -q -b main
git -c user.email=bench@example.com -c user.name=bench -c commit.gpgsign=false add -A
git -c user.email=bench@example.com -c user.name=bench -c commit.gpgsign=false commit -qm base
git checkout -qb feature
printf '%s\n' "$sql" > "$migrations/$migration"
[[ -n "$code_file" ]] && printf '\n// edited by the benchmark\n' >> "$code_file"
git -c user.email=bench@example.com -c user.name=bench -c commit.gpgsign=false add -A
git -c user.email=bench@example.com -c user.name=bench -c commit.gpgsign=false commit -qm change
files=$(git ls-files | wc -l)
check="check --base main --head HEAD --format json --fail-on never --no-plan"
commands=()
for build in ${BEFORE:+before} after; do
  binary=$SLUICE
  [[ $build == before ]] && binary=$(realpath "$BEFORE")
  start=$(date +%s%N)
  "$binary" $check --cache-dir "$work/cache-$build" > "$work/$build.json" || [[ $? == 1 ]]   # fills the caches
  filled=$(( ($(date +%s%N) - start) / 1000000 ))
  echo "$build: $("$binary" --version); findings: $(jq '.findings | length' "$work/$build.json"); the run that filled the caches: $filled ms"
  commands+=("$build-cold=$binary $check --no-cache" "$build-warm=$binary $check --cache-dir $work/cache-$build")
done
if [[ -n "${BEFORE:-}" ]] && ! diff <(jq -S .findings "$work/before.json") <(jq -S .findings "$work/after.json") > /dev/null; then
  echo "the two builds report different findings" >&2
  exit 1
fi
echo "$files files; $(nproc) CPUs; $(uptime)"
python3 "$root/bench/interleave.py" --runs "$runs" --warmup 1 "${commands[@]}"
