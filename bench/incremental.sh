#!/usr/bin/env bash
# Incremental checks with the schema cache: `sluice lint NEWEST.sql` and `sluice check` on a pull
# request, warm (the cache filled by a first run) against --no-cache, interleaved, medians.
#
#   bench/incremental.sh
#
# Projects: bench/gen_corpus.py's 2,500 migrations, Lemmy's history (bench/fetch_history.sh), and
# bench/gen_check_repo.sh's repository (2,000 base migrations, a pull request adding 5).
# Env: RUNS (default 10), SLUICE (binary; default: a release build of this tree).
# Target (issue 13): both under 100 ms warm.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
runs=${RUNS:-10}
if [[ -z "${SLUICE:-}" ]]; then
  cargo build --release --locked -q
  SLUICE="$root/target/release/sluice"
fi
SLUICE=$(realpath "$SLUICE")   # the commands run in other directories
cache=$(mktemp -d)
trap 'rm -rf "$cache"' EXIT
echo "$("$SLUICE" --version); $(nproc) CPUs; $(uptime)"

newest() { # PROJECT_DIR GLOB: the last migration file in replay order (names sort in it here)
  (cd "$1" && ls $2 | sort | tail -1)
}

corpus="$root/target/bench-corpus-2500"
[[ -f "$corpus/sluice.toml" ]] || python3 bench/gen_corpus.py "$corpus" 2500
lemmy=$(bench/fetch_history.sh lemmy)
for project in "$corpus" "$lemmy"; do
  if [[ $project == "$lemmy" ]]; then file=$(newest "$project" 'migrations/*/up.sql'); else file=$(newest "$project" 'migrations/*.sql'); fi
  echo
  echo "== lint $file in $project"
  (cd "$project" && "$SLUICE" lint --format json --cache-dir "$cache" "$file" > /dev/null) || true
  python3 bench/interleave.py --runs "$runs" --warmup 1 --cwd "$project" \
    "warm=$SLUICE lint --format json --cache-dir $cache $file" \
    "no-cache=$SLUICE lint --format json --no-cache $file"
done

repo="$root/target/bench-check-repo"
[[ -d "$repo/.git" ]] || bench/gen_check_repo.sh "$repo" 2000 > /dev/null
# The generated repository holds every object loose (one file each: the slowest to read); a
# clone, as CI checks out, holds them packed. Both are measured.
packed="$root/target/bench-check-repo-packed"
if [[ ! -d "$packed/.git" ]]; then
  rm -rf "$packed"
  git clone -q --no-local "$repo" "$packed"
  git -C "$packed" branch -q main origin/main
fi
for dir in "$repo" "$packed"; do
  echo
  echo "== check: 2,000 base migrations, a pull request adding 5; objects: $(git -C "$dir" count-objects -v | awk '/^count/ {l=$2} /^in-pack/ {p=$2} END {print l " loose, " p " packed"}')"
  (cd "$dir" && "$SLUICE" check --base main --head HEAD --format json --fail-on never --no-plan --cache-dir "$cache" > /dev/null)
  python3 bench/interleave.py --runs "$runs" --warmup 1 --cwd "$dir" \
    "warm=$SLUICE check --base main --head HEAD --format json --fail-on never --no-plan --cache-dir $cache" \
    "no-cache=$SLUICE check --base main --head HEAD --format json --fail-on never --no-plan --no-cache"
done
