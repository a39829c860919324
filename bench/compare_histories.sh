#!/usr/bin/env bash
# The noise side of the gate, measured on real public migration histories: runs Sluice and
# squawk-cli 2.70.0 on each history and prints, per history, errors / warnings / info per rule,
# findings per migration file, whether every squawk finding is also caught by Sluice (statement by
# statement, through a squawk rule -> Sluice rule map), and for `sluice check` how many of the last
# 10 commits that added a migration fail the gate, and on which rules.
#
# The histories are cloned into bench/.histories/ (git-ignored) at a pinned revision and never
# committed. Usage:
#   bench/compare_histories.sh [NAME=SOURCE@REV:MIGRATIONS_DIR ...]
# SOURCE is a git URL or a local clone. Default: LemmyNet/lemmy and rust-lang/crates.io at the
# revisions the README's figures come from.
# Env: SLUICE (binary; default target/release/sluice, else a debug build), SQUAWK (binary; default:
#   squawk-cli==2.70.0 installed into bench/.venv with pip), HISTORIES (clone directory),
#   COMMITS (how many recent migration commits `check` reviews; default 10), SHOW (unmatched
#   squawk findings listed per rule; default 5), KEEP (a directory to keep every raw report in).
set -euo pipefail

repo="$(cd "$(dirname "$0")/.." && pwd)"
cd "$repo"
HISTORIES="${HISTORIES:-$repo/bench/.histories}"
COMMITS="${COMMITS:-10}"

# shellcheck source=bench/tools.sh
source "$repo/bench/tools.sh"

if [[ $# -eq 0 ]]; then
  set -- \
    "lemmy=https://github.com/LemmyNet/lemmy@439734dd638a2c06a2f907beab7dcf4646e88f86:migrations" \
    "crates.io=https://github.com/rust-lang/crates.io@57fa000662f511321daa61e6769f190ea0e80771:migrations"
fi

if [[ -n "${KEEP:-}" ]]; then
  work="$KEEP"; rm -rf "$work"; mkdir -p "$work"
else
  work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT
fi
mkdir -p "$HISTORIES"
echo "sluice: $("$SLUICE" --version)   squawk: $("$SQUAWK" --version)"

for spec in "$@"; do
  name="${spec%%=*}"; rest="${spec#*=}"
  dir="${rest##*:}"; rest="${rest%:*}"
  rev="${rest##*@}"; source="${rest%@*}"
  clone="$HISTORIES/$name"
  if [[ ! -d "$clone/.git" ]]; then
    echo "cloning $source into $clone" >&2
    git clone --quiet "$source" "$clone"
  fi
  git -C "$clone" checkout --quiet --detach "$rev"
  out="$work/$name"
  mkdir -p "$out"

  # Sluice's configuration lives outside the clone: nothing is written into it. A directory it
  # names must exist (a missing one is a configuration error), so the policies directory is an
  # empty one and the query directories an empty list (these histories have no query files).
  mkdir -p "$out/policies"
  cat > "$out/sluice.toml" <<EOF
[migrations]
dir = "$clone/$dir"
[queries]
dirs = []
[policies]
dir = "$out/policies"
EOF
  (cd "$clone" && "$SLUICE" lint --config "$out/sluice.toml" --format json) > "$out/sluice.json" || [[ $? -eq 1 ]]

  # squawk on the files the runner applies; folder (diesel/dbmate) and Flyway runners wrap each in a transaction.
  wrap=()
  if [[ -n "$(find "$clone/$dir" -mindepth 2 -maxdepth 2 -name up.sql -print -quit)" ]]; then
    (cd "$clone" && find "$dir" -mindepth 2 -maxdepth 2 -name up.sql | sort) > "$out/files"
    wrap=(--assume-in-transaction)
  else
    (cd "$clone" && find "$dir" -maxdepth 1 -name '*.sql' ! -name '*.down.sql' ! -name 'U*__*.sql' | sort) > "$out/files"
    if grep -q '/V[0-9]' "$out/files"; then wrap=(--assume-in-transaction); fi
  fi
  mapfile -t files < "$out/files"
  (cd "$clone" && "$SQUAWK" --reporter json --pg-version 15 "${wrap[@]}" "${files[@]}") > "$out/squawk.json" || true

  # The gate on the last commits that added a migration, each reviewed against its parent.
  (cd "$clone" && git log -n "$COMMITS" --format='%H %s' --diff-filter=A -- "$dir/*/up.sql" "$dir/*.sql") > "$out/commits"
  : > "$out/checks"
  while read -r sha subject; do
    code=0
    (cd "$clone" && "$SLUICE" check --config "$out/sluice.toml" --base "$sha^" --head "$sha" --format json) \
      > "$out/check-$sha.json" 2> "$out/check-$sha.err" || code=$?
    echo "$sha $code $subject" >> "$out/checks"
  done < "$out/commits"
  echo "$name $out" >> "$work/histories"
done

python3 "$repo/bench/compare_histories.py" "$work/histories" "${SHOW:-5}"
