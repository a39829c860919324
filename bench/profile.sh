#!/usr/bin/env bash
# Where Sluice's time goes: samples `sluice lint` with perf (Debian's linux-perf; software
# cpu-clock events, which work in VMs without hardware counters) and prints the hottest
# functions, inclusive and exclusive; with inferno installed (`cargo install inferno`) it also
# writes a flame graph. For comparing two builds of Sluice on a loaded machine, prefer
# instruction counts: `valgrind --tool=callgrind` (see MODE=callgrind). Where the memory goes:
# MODE=heap runs heaptrack (apt-get install heaptrack) on a build with the system allocator
# (`--features system-allocator`: mimalloc's allocations are invisible to heaptrack) and prints
# the peak heap by the innermost Sluice functions that allocated it.
#
#   bench/profile.sh PROJECT_DIR [SLUICE_ARGS...]      e.g. bench/profile.sh target/bench-corpus-2500
#
# Env: SLUICE (binary; default: a release build of this tree with debug symbols), MODE=perf|callgrind|heap,
#      OUT (default target/profile).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
project=$(cd "${1:?usage: profile.sh PROJECT_DIR [SLUICE_ARGS...]}" && pwd)
shift
out=${OUT:-$root/target/profile}
mkdir -p "$out"
command -v perf >/dev/null || apt-get install -y -q linux-perf >/dev/null
if [[ -z "${SLUICE:-}" ]]; then
  # Symbols for the report; the same optimizations as the release build.
  features=() target=target/profiling
  if [[ ${MODE:-perf} == heap ]]; then features=(--features system-allocator) target=target/profiling-heap; fi
  (cd "$root" && CARGO_PROFILE_RELEASE_DEBUG=line-tables-only CARGO_PROFILE_RELEASE_STRIP=false \
    cargo build --release --locked -q "${features[@]}" --target-dir "$target")
  SLUICE="$root/$target/release/sluice"
fi
name=$(basename "$project")
cd "$project"
case ${MODE:-perf} in
  perf)
    perf record -q -F 999 -g --call-graph dwarf,16384 -o "$out/$name.perf.data" \
      "$SLUICE" lint --format json --no-cache "$@" > /dev/null || true
    perf report -i "$out/$name.perf.data" --no-children --percent-limit 1.5 --stdio -g none \
      --sort symbol 2>/dev/null | grep -v '^$' | head -40 | tee "$out/$name.self.txt"
    perf report -i "$out/$name.perf.data" --children --percent-limit 4 --stdio -g none \
      --sort symbol 2>/dev/null | grep -v '^$' | head -50 > "$out/$name.children.txt"
    echo "inclusive times: $out/$name.children.txt"
    if command -v inferno-collapse-perf >/dev/null; then
      perf script -i "$out/$name.perf.data" 2>/dev/null | inferno-collapse-perf | inferno-flamegraph > "$out/$name.svg"
      echo "flame graph: $out/$name.svg"
    fi
    ;;
  callgrind)
    valgrind --tool=callgrind --callgrind-out-file="$out/$name.callgrind" \
      "$SLUICE" lint --format json --no-cache "$@" > /dev/null 2> "$out/$name.callgrind.log" || true
    grep -E "Collected" "$out/$name.callgrind.log" || true
    callgrind_annotate "$out/$name.callgrind" 2>/dev/null | head -40
    ;;
  heap)
    command -v heaptrack >/dev/null || apt-get install -y -q heaptrack >/dev/null
    rm -f "$out/$name.heaptrack".*
    heaptrack -o "$out/$name.heaptrack" "$SLUICE" lint --format json --no-cache "$@" > /dev/null || true
    heaptrack_print -f "$out/$name.heaptrack".* --flamegraph-cost-type peak -F "$out/$name.peak.stacks" \
      | grep -E '^(peak heap|calls to)'
    python3 - "$out/$name.peak.stacks" <<'PY'
import collections, sys
peak = collections.Counter()
for line in open(sys.argv[1]):
    stack, _, cost = line.rstrip().rpartition(" ")
    ours = [f.split(" (")[0].split("::h")[0] for f in stack.split(";") if "sluice::" in f]
    peak[" < ".join(reversed(ours[-3:])) or "(outside Sluice)"] += int(cost)
for where, cost in peak.most_common(15):
    print(f"{cost / 1e6:8.2f} MB  {where[:150]}")
PY
    ;;
esac
