#!/usr/bin/env python3
"""Generates a migration corpus for the lint benchmark: N flat migrations (default 2,000),
at least 5 MB in all, of the kinds real projects accumulate — tables, columns, indexes,
constraints, backfills, views, functions — plus a few query files.

Usage: gen_corpus.py OUT_DIR [N]
"""
import os
import random
import sys

out = sys.argv[1]
count = int(sys.argv[2]) if len(sys.argv) > 2 else 2000
random.seed(42)
os.makedirs(os.path.join(out, "migrations"), exist_ok=True)
os.makedirs(os.path.join(out, "queries"), exist_ok=True)
with open(os.path.join(out, "sluice.toml"), "w") as f:
    f.write('[migrations]\ndir = "migrations"\n[queries]\ndirs = ["queries"]\n')

TYPES = ["bigint", "integer", "text", "varchar(255)", "timestamptz", "timestamp", "boolean", "numeric(12,2)", "jsonb", "uuid", "date"]
tables = []
total = 0


def column_defs(n):
    cols = []
    for i in range(n):
        t = random.choice(TYPES)
        extra = random.choice(["", " NOT NULL", " NOT NULL DEFAULT now()" if "time" in t else " NULL", ""])
        cols.append(f"    col_{i}_{random.randint(0, 999)} {t}{extra}")
    return cols


def migration(i):
    parts = [f"-- Migration {i}: generated for the lint benchmark.\n-- It exercises the parser and the schema replay with realistic statements.\n"]
    name = f"table_{i}"
    cols = column_defs(random.randint(30, 46))
    tables.append((name, [c.split()[0] for c in cols]))
    parts.append(f"CREATE TABLE {name} (\n    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,\n    account_id bigint NOT NULL,\n    created_at timestamptz NOT NULL DEFAULT now(),\n" + ",\n".join(cols) + "\n);\n")
    parts.append(f"CREATE INDEX {name}_account_created ON {name} (account_id, created_at);\n")
    if len(tables) > 1:
        other, other_cols = random.choice(tables[:-1])
        c = random.choice(other_cols)
        parts.append("SET lock_timeout = '5s';\n")
        parts.append(f"CREATE INDEX CONCURRENTLY IF NOT EXISTS {other}_{c}_idx_{i} ON {other} ({c});\n")
        parts.append(f"ALTER TABLE {other} ADD COLUMN IF NOT EXISTS note_{i} text;\n")
        parts.append(f"ALTER TABLE {other} ADD CONSTRAINT {other}_account_fk_{i} FOREIGN KEY (account_id) REFERENCES {name} (id) NOT VALID;\n")
        parts.append(f"ALTER TABLE {other} VALIDATE CONSTRAINT {other}_account_fk_{i};\n")
        parts.append(f"UPDATE {other} SET note_{i} = 'migrated' WHERE id BETWEEN 1 AND 10000 AND note_{i} IS NULL;\n")
        parts.append(f"COMMENT ON COLUMN {other}.note_{i} IS 'Free text added by migration {i}; kept for the support team''s notes.';\n")
        parts.append(f"ALTER TABLE {other} ADD CONSTRAINT {other}_note_{i}_length CHECK (char_length(note_{i}) <= 2000) NOT VALID;\n")
        parts.append(f"ALTER TABLE {other} VALIDATE CONSTRAINT {other}_note_{i}_length;\n")
    parts.append(f"CREATE VIEW {name}_recent AS\n    SELECT id, account_id, created_at FROM {name}\n    WHERE created_at > now() - interval '30 days';\n")
    parts.append(f"CREATE FUNCTION {name}_touch() RETURNS trigger LANGUAGE plpgsql AS $$\nBEGIN\n    NEW.created_at := coalesce(NEW.created_at, now());\n    RETURN NEW; -- a semicolon inside a dollar-quoted body\nEND;\n$$;\n")
    return "\n".join(parts)


for i in range(1, count + 1):
    text = migration(i)
    total += len(text)
    with open(os.path.join(out, "migrations", f"{i:05d}_migration_{i}.sql"), "w") as f:
        f.write(text)

for q in range(50):
    name, cols = random.choice(tables)
    with open(os.path.join(out, "queries", f"query_{q}.sql"), "w") as f:
        f.write(f"SELECT id, {cols[0]} FROM {name} WHERE account_id = $1 AND created_at >= $2 ORDER BY created_at DESC LIMIT 50;\n")

print(f"{count} migrations, {total / 1e6:.1f} MB in {out}", file=sys.stderr)
