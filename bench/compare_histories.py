"""Summarises what bench/compare_histories.sh collected: one section per history.

Reads, per history directory: sluice.json (`sluice lint --format json`), squawk.json (squawk's
JSON reporter), files (the migration files squawk was given), checks (sha, exit code, subject of
each `sluice check` run) and check-<sha>.json.
"""

import collections
import json
import os
import statistics
import sys

# squawk rule -> the Sluice rules that answer the same question. A squawk finding counts as
# caught when Sluice reports one of these on the same statement (for the per-file timeout rules:
# anywhere in the same file).
SAME_QUESTION = {
    "require-concurrent-index-creation": ["create-index-non-concurrently"],
    "require-concurrent-reindex": ["reindex-non-concurrently"],
    "require-concurrent-index-deletion": ["drop-index-non-concurrently"],
    "ban-concurrent-index-creation-in-transaction": ["concurrently-in-transaction"],
    "transaction-nesting": ["concurrently-in-transaction"],
    "adding-field-with-default": ["add-column-volatile-default"],
    "adding-required-field": ["add-column-not-null-without-default"],
    "adding-not-nullable-field": ["set-not-null", "add-column-not-null-without-default"],
    "adding-foreign-key-constraint": ["add-foreign-key-validated"],
    "constraint-missing-not-valid": ["add-check-validated", "add-foreign-key-validated", "add-unique-constraint-blocking",
                                     "add-primary-key-blocking"],
    "disallowed-unique-constraint": ["add-unique-constraint-blocking"],
    "adding-serial-primary-key-field": ["add-primary-key-blocking", "add-column-volatile-default"],
    "changing-column-type": ["change-column-type"],
    "renaming-column": ["rename-column"],
    "renaming-table": ["rename-table"],
    "ban-drop-column": ["drop-column"],
    "ban-drop-table": ["drop-table"],
    "require-lock-timeout": ["missing-lock-timeout"],
    "require-timeout-settings": ["missing-lock-timeout"],
    "require-statement-timeout": ["missing-statement-timeout"],
    "prefer-bigint-over-int": ["prefer-bigint-primary-key"],
    "prefer-bigint-over-smallint": ["prefer-bigint-primary-key"],
    "prefer-identity": ["prefer-bigint-primary-key"],
    "prefer-text-field": ["prefer-text-over-varchar"],
    "prefer-timestamp-tz": ["prefer-timestamptz"],
}
PER_FILE = {"require-lock-timeout", "require-timeout-settings", "require-statement-timeout"}
STYLE = {"prefer-bigint-over-int", "prefer-bigint-over-smallint", "prefer-identity", "prefer-text-field",
         "prefer-timestamp-tz", "prefer-robust-stmts", "identifier-too-long", "ban-char-field"}


def load(path, default):
    try:
        with open(path) as f:
            text = f.read().strip()
        return json.loads(text) if text else default
    except (OSError, ValueError):
        return default


def loud(finding):
    return finding["severity"] in ("error", "warning")


def per_rule(findings):
    table = collections.defaultdict(collections.Counter)
    for f in findings:
        table[f["rule"]][f["severity"]] += 1
    return table


def caught(squawk, sluice_by_file):
    """Whether Sluice reports a rule answering the same question on the same statement."""
    rules = SAME_QUESTION.get(squawk["rule_name"])
    if not rules:
        return None
    first, last = squawk["line"] + 1, squawk["line_end"] + 1  # squawk counts lines from 0
    for f in sluice_by_file.get(squawk["file"], []):
        if f["rule"] not in rules:
            continue
        if squawk["rule_name"] in PER_FILE or (f["line"] <= last and first <= f["end_line"]):
            return True
    return False


def summarise(name, out, show):
    sluice = load(os.path.join(out, "sluice.json"), {"findings": []})["findings"]
    squawk = load(os.path.join(out, "squawk.json"), [])
    files = [l.strip() for l in open(os.path.join(out, "files")) if l.strip()]
    print(f"\n== {name}: {len(files)} migration files ==")

    s_table, q_table = per_rule(sluice), collections.Counter(f["rule_name"] for f in squawk)
    print(f"\nSluice, per rule{'':<32}{'error':>7}{'warning':>9}{'info':>7}")
    for rule, c in sorted(s_table.items(), key=lambda kv: (-kv[1]["error"] - kv[1]["warning"], kv[0])):
        print(f"  {rule:<46}{c['error']:>7}{c['warning']:>9}{c['info']:>7}")
    s_ew = sum(1 for f in sluice if loud(f))
    print(f"  {'total':<46}{sum(c['error'] for c in s_table.values()):>7}"
          f"{sum(c['warning'] for c in s_table.values()):>9}{sum(c['info'] for c in s_table.values()):>7}")
    print("\nsquawk 2.70, per rule (every finding is a warning)")
    for rule, n in q_table.most_common():
        print(f"  {rule:<46}{n:>7}")
    print(f"  {'total':<46}{len(squawk):>7}")

    ratio = s_ew / len(squawk) if squawk else float("inf")
    print(f"\nSluice errors+warnings {s_ew} vs squawk total {len(squawk)}: {ratio:.0%} "
          f"(target: at most 50%) -> {'met' if ratio <= 0.5 else 'NOT met'}")
    squawk_no_style = sum(1 for f in squawk if f["rule_name"] not in STYLE)
    print(f"  (squawk without its type-style rules: {squawk_no_style})")

    by_file_s = collections.Counter(f["file"] for f in sluice if loud(f))
    by_file_q = collections.Counter(f["file"] for f in squawk)
    for label, counter in (("Sluice errors+warnings", by_file_s), ("squawk findings", by_file_q)):
        counts = [counter.get(f, 0) for f in files]
        flagged = [c for c in counts if c]
        print(f"{label} per file: mean {statistics.mean(counts) if counts else 0:.2f}, "
              f"files with any {len(flagged)}/{len(files)}, median of those {statistics.median(flagged) if flagged else 0}, "
              f"max {max(counts) if counts else 0}")

    # Is every squawk finding that a reviewer would act on also caught by Sluice?
    sluice_by_file = collections.defaultdict(list)
    for f in sluice:
        sluice_by_file[f["file"]].append(f)
    missed, no_counterpart, matched = collections.defaultdict(list), collections.Counter(), 0
    for q in squawk:
        hit = caught(q, sluice_by_file)
        if hit is None:
            no_counterpart[q["rule_name"]] += 1
        elif hit:
            matched += 1
        else:
            missed[q["rule_name"]].append(q)
    mapped = matched + sum(len(v) for v in missed.values())
    print(f"\nsquawk findings with a Sluice counterpart rule: {mapped}; caught on the same statement: {matched}")
    for rule, items in sorted(missed.items(), key=lambda kv: -len(kv[1])):
        print(f"  not caught: {rule} x{len(items)} (Sluice: {', '.join(SAME_QUESTION[rule])})")
        for q in items[:show]:
            print(f"      {q['file']}:{q['line'] + 1}")
    if no_counterpart:
        print("  squawk rules Sluice has no counterpart for: "
              + ", ".join(f"{r} x{n}" for r, n in no_counterpart.most_common()))

    # The gate on recent pull requests.
    checks = [l.split(" ", 2) for l in open(os.path.join(out, "checks")) if l.strip()]
    failing = 0
    print(f"\n`sluice check` on the last {len(checks)} commits that added a migration (each against its parent):")
    for sha, code, *subject in checks:
        report = load(os.path.join(out, f"check-{sha}.json"), {"findings": []})
        errors = collections.Counter(f["rule"] for f in report["findings"] if f["severity"] == "error")
        warnings = collections.Counter(f["rule"] for f in report["findings"] if f["severity"] == "warning")
        verdict = {"0": "pass", "1": "FAIL"}.get(code, f"exit {code}")
        failing += code == "1"
        why = ", ".join(f"{r} x{n}" for r, n in errors.most_common()) or "-"
        also = ", ".join(f"{r} x{n}" for r, n in warnings.most_common())
        print(f"  {sha[:10]} {verdict:<5} errors: {why}" + (f"; warnings: {also}" if also else "")
              + f"  ({(subject[0] if subject else '')[:60]})")
        if code not in ("0", "1"):
            err = open(os.path.join(out, f"check-{sha}.err")).read().strip()
            print(f"      {err[:200]}")
    print(f"  {failing} of {len(checks)} fail the gate at --fail-on error")


def main():
    histories, show = sys.argv[1], int(sys.argv[2])
    for line in open(histories):
        name, out = line.split()
        summarise(name, out, show)


if __name__ == "__main__":
    main()
