#!/usr/bin/env bash
# Writes link/symbol-order.txt: the functions that `lint` and `check` execute. build.rs hands
# the file to the linker (lld's --symbol-ordering-file), which places those functions together
# at the start of the binary's code. Without it they are scattered over its 11.7 MB, and the
# kernel maps the code around each page it faults in: a `lint` of Lemmy kept 9 MB of the binary
# resident, against 3.7 MB ordered.
#
#   bench/symbol_order.sh
#
# Records, with valgrind --tool=callgrind, the release build (which keeps its symbols) linting
# the bundled example, a 500-file generated corpus, Lemmy and crates.io (bench/fetch_history.sh;
# skipped when they cannot be fetched), and checking bench/gen_check_repo.sh's repository. Run
# it again after large changes and after a compiler upgrade: functions missing from the file
# still work, they are only placed after the ordered ones, and names no longer in the binary are
# skipped by the linker.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
command -v valgrind >/dev/null || apt-get install -y -q valgrind >/dev/null
# The release build itself: another profile (debug info, no stripping) mangles every name with
# another hash, which the linker would not find. A new compiler does too: run this again then.
cargo build --release --locked -q
sluice="$root/target/release/sluice"
records=$(mktemp -d)
trap 'rm -rf "$records"' EXIT

record() { # DIR SLUICE_ARGS...
  local dir=$1
  shift
  local n
  n=$(find "$records" -name '*.cg' | wc -l)
  (cd "$dir" && valgrind -q --tool=callgrind --demangle=no --callgrind-out-file="$records/$(printf '%02d' "$n").cg" \
    "$sluice" "$@" > /dev/null 2>&1) || true
}

record "$root" lint --config fixtures/transit-planner/sluice.toml --no-cache
corpus="$root/target/bench-corpus-500"
[[ -f "$corpus/sluice.toml" ]] || python3 bench/gen_corpus.py "$corpus" 500 > /dev/null
record "$corpus" lint --format json --no-cache
for history in lemmy crates.io; do
  if dir=$(bench/fetch_history.sh "$history" 2> /dev/null); then
    record "$dir" lint --format json --no-cache
  fi
done
repo="$root/target/bench-check-repo-200"
[[ -d "$repo/.git" ]] || bench/gen_check_repo.sh "$repo" 200 > /dev/null
record "$repo" check --base main --head HEAD --format json --fail-on never --no-plan --no-cache

mkdir -p link
nm "$sluice" | awk '$2 ~ /^[tT]$/ { print $3 }' > "$records/symbols"
python3 - "$records" > link/symbol-order.txt <<'PY'
import pathlib, re, sys
records = pathlib.Path(sys.argv[1])
in_binary = set((records / "symbols").read_text().split())
seen = {}
for record in sorted(records.glob("*.cg")):
    for line in record.read_text(errors="replace").splitlines():
        # callgrind names a function in full the first time it mentions it: `fn=(12) name`.
        match = re.match(r"c?fn=\(\d+\) (\S+)", line)
        if match and match.group(1) in in_binary:
            seen.setdefault(match.group(1), None)
print("\n".join(seen))
PY
echo "link/symbol-order.txt: $(wc -l < link/symbol-order.txt) functions"
