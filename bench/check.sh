#!/usr/bin/env bash
# Times `sluice check` on a repository whose base has N migrations and whose pull request adds 5
# (bench/gen_check_repo.sh), and on one with half as many, to catch a step that is not linear in
# the history (reading a revision one file at a time once made 2,000 migrations take 12 s).
# Whole-process wall clock and peak memory, both sizes interleaved (bench/interleave.py), medians.
# The schema cache is off (--no-cache): this is the cold figure; bench/incremental.sh has the warm one.
#
#   bench/check.sh [MIGRATIONS] [RUNS]
# Targets: median under 1 s on a 2-core machine at 2,000 migrations, and no more than 3× the
# time of half the history (linear is at most 2×; quadratic is 4×). Exits 1 when either fails.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
count=${1:-2000}
runs=${2:-10}
half=$((count / 2))

if [[ -z "${SLUICE:-}" ]]; then
  cargo build --release --locked --quiet --manifest-path "$root/Cargo.toml"
  target_dir=$(cargo metadata --format-version 1 --no-deps --manifest-path "$root/Cargo.toml" | jq -r .target_directory)
  SLUICE="$target_dir/release/sluice"
fi
SLUICE=$(realpath "$SLUICE")   # the commands run in other directories

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$here/gen_check_repo.sh" "$work/full" "$count" > /dev/null
"$here/gen_check_repo.sh" "$work/half" "$half" > /dev/null

# Exit 1 (the gate fails) is the expected verdict for this pull request; only 2 is an error.
check="$SLUICE check --base main --head HEAD --format json --fail-on never --no-plan --no-cache"
(cd "$work/full" && $check > "$work/out.json") || { echo "sluice check failed" >&2; exit 2; }
echo "$("$SLUICE" --version); $(nproc) CPUs; findings on the pull request: $(jq '.findings | length' "$work/out.json")"

python3 "$here/interleave.py" --runs "$runs" --warmup 1 --json "$work/times.json" \
  "$count=cd $work/full && $check" "$half=cd $work/half && $check"
full=$(jq -r --arg n "$count" '.commands[$n].wall_median' "$work/times.json")
part=$(jq -r --arg n "$half" '.commands[$n].wall_median' "$work/times.json")
printf 'sluice check, %d base migrations + 5 added: median %.3f s; %d + 5: %.3f s; ratio %.2f\n' \
  "$count" "$full" "$half" "$part" "$(awk -v a="$full" -v b="$part" 'BEGIN { print a / b }')"
status=0
awk -v m="$full" 'BEGIN { exit !(m < 1.0) }' || { echo "slower than the 1 s target" >&2; status=1; }
awk -v a="$full" -v b="$part" 'BEGIN { exit !(a <= 3 * b) }' || {
  echo "doubling the history more than tripled the time: a step is not linear in it" >&2
  status=1
}
exit $status
