#!/usr/bin/env bash
# Lints real public migration histories nobody on this project wrote, and prints per history:
# migrations, statements, the parse-or-recognize rate, DO blocks checked, references to objects
# the history never created, and findings by rule and severity; then a deterministic sample of
# error/warning findings for manual review (issue 9, "How to know it is done").
#
# The histories are cloned at pinned commits into a temporary directory and never committed:
#   lemmy      LemmyNet/lemmy        migrations/                   diesel
#   crates.io  rust-lang/crates.io   migrations/                   diesel
#   harbor     goharbor/harbor       make/migrations/postgresql/   golang-migrate
#
# Usage: bench/real_histories.sh [--sample N] [--keep DIR]
#   --sample N   how many error/warning findings to print for review (default 30)
#   --keep DIR   clone into DIR and keep it (default: a temporary directory, removed at exit)
# Env: SLUICE (binary; default target/release/sluice, else a debug build),
#      HISTORIES_SRC (a directory of local mirrors named owner+name, e.g. LemmyNet+lemmy/repo;
#      default: clone from https://github.com).
set -euo pipefail

repo="$(cd "$(dirname "$0")/.." && pwd)"
sample=30
keep=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --sample) sample="$2"; shift 2 ;;
    --keep) keep="$2"; shift 2 ;;
    *) echo "usage: $0 [--sample N] [--keep DIR]" >&2; exit 2 ;;
  esac
done

if [[ -z "${SLUICE:-}" ]]; then
  if [[ -x "$repo/target/release/sluice" ]]; then
    SLUICE="$repo/target/release/sluice"
  else
    (cd "$repo" && cargo build --quiet)
    SLUICE="$repo/target/debug/sluice"
  fi
fi

# name | owner/repo | commit | migrations directory | layout
histories=(
  "lemmy|LemmyNet/lemmy|439734dd638a2c06a2f907beab7dcf4646e88f86|migrations|diesel"
  "crates.io|rust-lang/crates.io|57fa000662f511321daa61e6769f190ea0e80771|migrations|diesel"
  "harbor|goharbor/harbor|c50c7ddd6ea4e335a480b49c618281882ab7eec9|make/migrations/postgresql|golang-migrate"
)

if [[ -n "$keep" ]]; then
  work="$keep"
  mkdir -p "$work"
else
  work="$(mktemp -d)"
  trap 'rm -rf "$work"' EXIT
fi

fetch() { # name owner/repo commit
  local dir="$work/$1"
  if [[ -d "$dir/.git" ]] && git -C "$dir" cat-file -e "$3^{commit}" 2>/dev/null; then
    git -C "$dir" checkout --quiet --force "$3"
    return
  fi
  rm -rf "$dir"
  local mirror="${HISTORIES_SRC:-}/${2/\//+}/repo"
  if [[ -n "${HISTORIES_SRC:-}" && -d "$mirror" ]]; then
    git clone --quiet --shared --no-checkout "$mirror" "$dir"
  else
    git init --quiet "$dir"
    git -C "$dir" fetch --quiet --depth 1 "https://github.com/$2" "$3"
  fi
  git -C "$dir" checkout --quiet --force "$3"
}

: > "$work/index"
echo "sluice: $("$SLUICE" --version)"
for entry in "${histories[@]}"; do
  IFS='|' read -r name slug commit dir layout <<<"$entry"
  fetch "$name" "$slug" "$commit"
  printf 'postgres_version = 15\n[migrations]\ndir = "%s"\nlayout = "%s"\n' "$dir" "$layout" > "$work/$name/sluice.toml"
  (cd "$work/$name" && "$SLUICE" lint --format json) > "$work/$name.json" || [[ $? -eq 1 ]]
  echo "$name|$slug|$commit|$dir|$layout" >> "$work/index"
done

python3 - "$work" "$sample" <<'PY'
import collections, json, re, sys

work, sample = sys.argv[1], int(sys.argv[2])
histories = [line.strip().split("|") for line in open(f"{work}/index")]

def coverage(notes):
    for note in notes:
        m = re.match(r"Migration statements checked: (\d+); read by the SQL parser: (\d+); "
                     r"by Sluice's fallback recognizer: (\d+); not understood: (\d+)", note)
        if m:
            blocks = re.search(r"(\d+) statement\(s\) inside (\d+) DO block", note)
            return [int(x) for x in m.groups()] + ([int(blocks.group(1)), int(blocks.group(2))] if blocks else [0, 0])
    return [0, 0, 0, 0, 0, 0]

def unknown(notes):
    for note in notes:
        m = re.match(r"(\d+) reference\(s\) to objects the migration history never created", note)
        if m:
            return int(m.group(1)), note
    return 0, ""

reports = {}
print()
print("| history | tool | migrations | statements | parsed | recognized | not understood | parse-or-recognize | DO blocks (statements inside) | unknown objects | errors | warnings | info |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
for name, slug, commit, directory, layout in histories:
    report = json.load(open(f"{work}/{name}.json"))
    reports[name] = report
    statements, parsed, recognized, missed, inner, blocks = coverage(report["notes"])
    migrations = re.search(r"(\d+) migration\(s\) replayed", " ".join(report["notes"]))
    rate = 100.0 * (parsed + recognized) / statements if statements else 0.0
    n_unknown, _ = unknown(report["notes"])
    s = report["summary"]
    print(f"| {name} ({commit[:8]}) | {layout} | {migrations.group(1) if migrations else '?'} | {statements} | {parsed} | "
          f"{recognized} | {missed} | {rate:.2f}% | {blocks} ({inner}) | {n_unknown} | {s['error']} | {s['warning']} | {s['info']} |")

print()
rules = sorted({f["rule"] for r in reports.values() for f in r["findings"]})
print("| rule | " + " | ".join(reports) + " |")
print("|---|" + "---|" * len(reports))
for rule in rules:
    cells = []
    for report in reports.values():
        by = collections.Counter(f["severity"] for f in report["findings"] if f["rule"] == rule)
        cells.append(", ".join(f"{n} {sev}" for sev, n in sorted(by.items())) or "—")
    print(f"| `{rule}` | " + " | ".join(cells) + " |")

placeholders = [(name, f) for name, r in reports.items() for f in r["findings"]
                if re.search(r"\(unnamed\)|\(table of index|Expected: |\bis (big|small)?serial\b|(big|small)?serial →|→ (big|small)?serial", f["message"])]
print(f"\nfindings with a placeholder, parser internals or `serial` as a type: {len(placeholders)}")
for name, f in placeholders[:10]:
    print(f"  {name} {f['file']}:{f['line']} {f['rule']}: {f['message'][:160]}")
for name, report in reports.items():
    n, note = unknown(report["notes"])
    if n:
        print(f"{name}: {note[:400]}")

loud = sorted(((name, f) for name, r in reports.items() for f in r["findings"] if f["severity"] in ("error", "warning")),
              key=lambda x: (x[0], x[1]["file"], x[1]["line"], x[1]["rule"]))
print(f"\nSample of {min(sample, len(loud))} of {len(loud)} error/warning findings (evenly spaced), for manual review:")
for i in range(min(sample, len(loud))):
    name, f = loud[i * len(loud) // min(sample, len(loud))]
    print(f"{i + 1:2}. [{name}] {f['file']}:{f['line']} {f['severity']} {f['rule']}: {f['message']}")
PY
