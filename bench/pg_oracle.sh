#!/usr/bin/env bash
# PostgreSQL as the oracle of Sluice's claims (issue 37): replays the two real diesel histories
# statement by statement on a throwaway PostgreSQL, reads pg_locks, relfilenode and the scan
# counters after each statement, and compares them with the claims of Sluice's findings (their
# `evidence.claims`): every lock, scan, rewrite and index build or rebuild a finding names must be
# one PostgreSQL made, and every write-blocking lock (with no lock_timeout), rewrite, rebuild and
# ALTER TABLE scan PostgreSQL makes on a table that existed before the migration must be claimed
# by a finding. Then compares the index and constraint names of the schema Sluice replayed with
# the catalog. See bench/pg_oracle.rs.
#
#   bench/pg_oracle.sh [lemmy|crates.io ...]      (default: both)
#
# The histories are fetched by bench/fetch_history.sh (never committed; LEMMY_REPO /
# CRATES_IO_REPO name local clones). Needs the PostgreSQL server binaries (initdb, postgres; as
# root the server runs as `postgres` or `nobody`). Exit code 1 when any history disagrees.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
histories=("$@")
[[ ${#histories[@]} -gt 0 ]] || histories=(lemmy crates.io)
nice cargo build --quiet --locked --release --example pg_oracle
status=0
for name in "${histories[@]}"; do
  project=$(bench/fetch_history.sh "$name")
  echo "== $name"
  target/release/examples/pg_oracle "$project" || status=1
  echo
done
exit $status
