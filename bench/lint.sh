#!/usr/bin/env bash
# Lint benchmark: Sluice against squawk-cli 2.70 on the same generated corpus of 2,000 migration
# files (5 MB or more), whole-process timings with hyperfine, median of 10 runs after 2 warm-ups.
# Usage: bench/lint.sh [N_MIGRATIONS]
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-2000}
work=${BENCH_DIR:-target/bench-lint}
venv=bench/.venv

command -v hyperfine >/dev/null || { echo "installing hyperfine"; apt-get install -y -q hyperfine >/dev/null; }
if [ ! -x "$venv/bin/squawk" ]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q squawk-cli==2.70.0
fi
cargo build --release --locked -q

rm -rf "$work" && python3 bench/gen_corpus.py "$work" "$n"
size=$(du -sb "$work/migrations" | cut -f1)
echo "corpus: $n migrations, $((size / 1000)) kB; sluice $(target/release/sluice --version); $("$venv/bin/squawk" --version)"

# Both tools exit non-zero when they find something; only the time matters here.
hyperfine --warmup 2 --runs 10 -i --export-json "$work/result.json" \
  -n sluice "target/release/sluice lint --config $work/sluice.toml --format json" \
  -n squawk "$venv/bin/squawk --reporter json $work/migrations/*.sql"

python3 - "$work/result.json" <<'PY'
import json, sys
r = {x["command"]: x for x in json.load(open(sys.argv[1]))["results"]}
s, q = r["sluice"]["median"], r["squawk"]["median"]
print(f"median: sluice {s*1000:.0f} ms, squawk {q*1000:.0f} ms; sluice is {q/s:.1f}x faster")
PY
