#!/usr/bin/env bash
# Times `sluice check` on a repository whose base has 2,000 migrations and whose pull request
# adds 5 (bench/gen_check_repo.sh). Whole-process wall clock, median of several runs, with
# hyperfine (`apt-get install hyperfine`) when present, else a plain loop.
#
#   bench/check.sh [MIGRATIONS] [RUNS]
# Target: median under 1 s on a 2-core machine.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
count=${1:-2000}
runs=${2:-10}

cargo build --release --quiet --manifest-path "$root/Cargo.toml"
target_dir=$(cargo metadata --format-version 1 --no-deps --manifest-path "$root/Cargo.toml" | jq -r .target_directory)
sluice="$target_dir/release/sluice"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
repo="$work/repo"
"$here/gen_check_repo.sh" "$repo" "$count"

# Exit 1 (the gate fails) is the expected verdict for this pull request; only 2 is an error.
cmd="$sluice check --repo $repo --base main --head HEAD --format json --fail-on never"
(cd "$repo" && $cmd > "$work/out.json") || { echo "sluice check failed" >&2; exit 2; }
echo "findings: $(jq '.findings | length' "$work/out.json")"

if command -v hyperfine > /dev/null; then
  hyperfine --warmup 2 --runs "$runs" --export-json "$work/times.json" "cd $repo && $cmd > /dev/null"
  median=$(jq '.results[0].median' "$work/times.json")
else
  echo "(hyperfine not installed: timing with a plain loop)"
  times=()
  for ((i = 0; i < runs; i++)); do
    start=$(date +%s%N)
    (cd "$repo" && $cmd > /dev/null)
    end=$(date +%s%N)
    times+=("$(( (end - start) / 1000 ))")
  done
  median=$(printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR]=$1} END {m = (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2; printf "%.4f", m / 1e6}')
fi
printf 'sluice check, %d base migrations + 5 added: median %.3f s over %d runs (%d cores)\n' \
  "$count" "$median" "$runs" "$(nproc)"
awk -v m="$median" 'BEGIN { exit !(m < 1.0) }' || { echo "slower than the 1 s target" >&2; exit 1; }
