#!/usr/bin/env bash
# Runs Sluice and squawk-cli 2.70.0 on the same migrations and prints, per rule family, both
# tools' finding counts side by side: what each catches on unsafe migrations, and how much each
# reports on migrations written the recommended way.
#
# Usage: bench/compare_squawk.sh [PROJECT_DIR...]
#   PROJECT_DIR: a directory with a sluice.toml and its migrations
#   (default: fixtures/unsafe-migrations, fixtures/safe-migrations, fixtures/safe-migrations-diesel).
# Env: SLUICE (binary; default target/release/sluice, else a debug build), SQUAWK (binary;
#   default: squawk-cli==2.70.0 installed into bench/.venv with pip), PG_VERSION (default 15).
set -euo pipefail

repo="$(cd "$(dirname "$0")/.." && pwd)"
cd "$repo"
PG_VERSION="${PG_VERSION:-15}"

# shellcheck source=bench/tools.sh
source "$repo/bench/tools.sh"

if [[ $# -eq 0 ]]; then
  set -- fixtures/unsafe-migrations fixtures/safe-migrations fixtures/safe-migrations-diesel
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
echo "sluice: $("$SLUICE" --version)   squawk: $("$SQUAWK" --version)   postgres_version: $PG_VERSION"
for project in "$@"; do
  name="$(basename "$project")"
  dir="$project/migrations"
  # The files a migration runner applies: up migrations only.
  mapfile -t files < <(find "$dir" -name '*.sql' ! -name '*.down.sql' ! -name 'down.sql' ! -name 'U*__*.sql' | sort)
  wrap=()
  if find "$dir" -name up.sql | grep -q .; then wrap=(--assume-in-transaction); fi
  (cd "$project" && "$SLUICE" lint --format json) > "$work/$name.sluice.json" || [[ $? -eq 1 ]]
  "$SQUAWK" --reporter json --pg-version "$PG_VERSION" "${wrap[@]}" "${files[@]}" > "$work/$name.squawk.json" || true
  echo "$name ${#files[@]}" >> "$work/projects"
done

python3 - "$work" <<'PY'
import json, sys, collections, os
work = sys.argv[1]
# Rule families: which Sluice rules and squawk rules answer the same question.
FAMILIES = [
    ("index build blocks writes", ["create-index-non-concurrently"], ["require-concurrent-index-creation", "require-concurrent-reindex"]),
    ("index drop blocks", ["drop-index-non-concurrently"], ["require-concurrent-index-deletion"]),
    ("CONCURRENTLY in a transaction", ["concurrently-in-transaction"], ["ban-concurrent-index-creation-in-transaction", "transaction-nesting"]),
    ("column default rewrites", ["add-column-volatile-default"], ["adding-field-with-default"]),
    ("NOT NULL column without default", ["add-column-not-null-without-default"], ["adding-required-field"]),
    ("SET NOT NULL scan", ["set-not-null"], ["adding-not-nullable-field"]),
    ("constraint validated at once", ["add-foreign-key-validated", "add-check-validated"], ["adding-foreign-key-constraint", "constraint-missing-not-valid"]),
    ("unique/primary key blocks", ["add-unique-constraint-blocking", "add-primary-key-blocking"], ["disallowed-unique-constraint", "adding-serial-primary-key-field"]),
    ("column type change", ["change-column-type"], ["changing-column-type"]),
    ("rename breaks running code", ["rename-column", "rename-table"], ["renaming-column", "renaming-table"]),
    ("drop breaks running code", ["drop-column", "drop-table"], ["ban-drop-column", "ban-drop-table"]),
    ("drop constraint", [], ["ban-drop-constraint"]),
    ("lock timeout", ["missing-lock-timeout"], ["require-lock-timeout", "require-timeout-settings"]),
    ("statement timeout", ["missing-statement-timeout"], ["require-statement-timeout"]),
    ("lock held across statements", ["lock-held-across-statements"], []),
    ("unbatched backfill", ["unbatched-backfill"], []),
    ("rollback drops the constraint", ["constraint-without-rollback"], []),
    ("type advice", ["prefer-jsonb", "prefer-timestamptz", "prefer-bigint-primary-key", "prefer-text-over-varchar"],
     ["prefer-bigint-over-int", "prefer-bigint-over-smallint", "prefer-identity", "prefer-text-field", "prefer-timestamp-tz"]),
    ("re-runnable statements (IF NOT EXISTS)", [], ["prefer-robust-stmts"]),
]
def family_of(rule, sluice):
    for name, s, q in FAMILIES:
        if rule in (s if sluice else q):
            return name
    return "other"

def counts(path, sluice):
    with open(path) as f:
        text = f.read().strip() or "[]"
    data = json.loads(text)
    findings = data["findings"] if sluice else data
    out = collections.defaultdict(collections.Counter)
    for finding in findings:
        rule = finding["rule"] if sluice else finding["rule_name"]
        level = (finding["severity"] if sluice else finding["level"]).lower()
        out[family_of(rule, sluice)][level] += 1
    return out, findings

def fmt(counter):
    if not counter:
        return "-"
    parts = [f"{counter[k]} {k[0].upper()}" for k in ("error", "warning", "info") if counter.get(k)]
    return " ".join(parts) or "-"

for line in open(os.path.join(work, "projects")):
    name, files = line.split()
    s, sf = counts(os.path.join(work, f"{name}.sluice.json"), True)
    q, qf = counts(os.path.join(work, f"{name}.squawk.json"), False)
    print(f"\n== {name} ({files} migration files) ==")
    print(f"{'rule family':<40} {'sluice':>16} {'squawk 2.70':>16}")
    for fam in [f[0] for f in FAMILIES] + ["other"]:
        if fam in s or fam in q:
            print(f"{fam:<40} {fmt(s.get(fam)):>16} {fmt(q.get(fam)):>16}")
    se = sum(c.get("error", 0) + c.get("warning", 0) for c in s.values())
    qe = sum(c.get("error", 0) + c.get("warning", 0) for c in q.values())
    print(f"{'total errors+warnings':<40} {se:>16} {qe:>16}")
    others = sorted({f['rule_name'] for f in qf if family_of(f['rule_name'], False) == 'other'} | {f['rule'] for f in sf if family_of(f['rule'], True) == 'other'})
    if others:
        print(f"  'other' = {', '.join(others)}")
print("\nE = error, W = warning, I = info. squawk reports every finding as a warning by default.")
PY
