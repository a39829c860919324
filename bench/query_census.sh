#!/usr/bin/env bash
# The query census (issue 35): on fourteen real public applications of different stacks, the
# queries at known database calls counted by an independent method (Go's go/ast, the JDK's
# compiler tree API, the TypeScript compiler, Python's ast, expat, json; a token scan for Rust)
# against what `sluice queries --format json` extracts: recall, the share Sluice parses, what is
# reported unreadable or skipped. Results: docs/queries-census.md.
#
#   bench/query_census.sh SNAPSHOTS [WORK]
#
#   SNAPSHOTS  a directory of fetched snapshots, one git directory per application at
#              SNAPSHOTS/owner+name/repo (or SNAPSHOTS/owner+name): the applications and the
#              commits measured are listed in bench/query_census.py (APPS). This machine reaches
#              no git host, so they are brought with the session's `fetch` tool (which writes
#              /work/.mirror/owner+name/repo); elsewhere, `git clone --bare
#              https://github.com/OWNER/NAME SNAPSHOTS/OWNER+NAME/repo` does the same.
#   WORK       where each application's files are written at its commit (default: a temporary
#              directory). Nothing fetched is committed or built: the census only reads it.
#
# Needs go, java (17+), node and npm (the `typescript` package is installed into WORK), python3.
# Env: SLUICE (binary; default: a release build of this tree), DETAILS (a JSON file for every
# miss, extra and unparsed statement).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
snapshots=${1:?usage: bench/query_census.sh SNAPSHOTS [WORK]}
work=${2:-$(mktemp -d)}
if [[ -z "${SLUICE:-}" ]]; then
  cargo build --release --locked -q --manifest-path "$root/Cargo.toml"
  SLUICE="$root/target/release/sluice"
fi
python3 "$root/bench/query_census.py" --sluice "$SLUICE" --snapshots "$snapshots" --work "$work" \
  ${DETAILS:+--details "$DETAILS"}
