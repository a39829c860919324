#!/usr/bin/env python3
"""Generates the inputs of the scaling benchmark (bench/scaling.sh): projects whose size is one
number, to show that time grows linearly with it and memory stays bounded by the schema.

Usage: gen_pathological.py KIND SIZE OUT_DIR

  ddl-file     SIZE MB of DDL in one migration file (~45 bytes a statement: 25 MB ≈ 550 k statements)
  many-files   SIZE migration files of two statements each
  one-line     SIZE statements on a single line of one file
  and-or       a query whose WHERE is a chain of SIZE AND/OR terms
  select-one   SIZE MB of `SELECT 1;`
  insert       one INSERT of SIZE MB of VALUES rows
  indexes      SIZE CREATE INDEX statements on an existing table, in a diesel migration with a rollback
  backfills    SIZE `UPDATE … WHERE c IS NULL` statements after the ADD COLUMN of c, in one migration
  columns      SIZE `ALTER TABLE t ADD COLUMN` statements on one table, on one line (PostgreSQL
               refuses columns past 1,600: the work per statement is bounded by the table)
  mixed        SIZE MB of mixed SQL in one migration: tables, columns, indexes, constraints,
               backfills, views, functions, DO blocks, inserts and queries over a bounded schema

Each OUT_DIR is a project: sluice.toml, migrations/, queries/. Deterministic (fixed seed).
"""
import os
import random
import sys

kind, size, out = sys.argv[1], float(sys.argv[2]), sys.argv[3]
random.seed(13)
migrations = os.path.join(out, "migrations")
queries = os.path.join(out, "queries")
os.makedirs(migrations, exist_ok=True)
os.makedirs(queries, exist_ok=True)
with open(os.path.join(out, "sluice.toml"), "w") as f:
    f.write('[migrations]\ndir = "migrations"\nlayout = "flat"\n[queries]\ndirs = ["queries"]\n')

TABLES = 2000  # the schema stays this big however long the history: memory must not grow with it


def ddl_statement(i):
    """A short DDL statement over a schema of at most TABLES tables (with their columns and indexes)."""
    t = i % TABLES
    step = i // TABLES
    if step == 0:
        return f"CREATE TABLE t{t} (id bigint PRIMARY KEY, a text);"
    column = f"c{(step - 1) // 5 % 40}"
    return [
        f"ALTER TABLE t{t} ADD COLUMN {column} integer;",
        f"CREATE INDEX t{t}_{column} ON t{t} ({column});",
        f"COMMENT ON COLUMN t{t}.{column} IS 'v{step}';",
        f"DROP INDEX t{t}_{column};",
        f"ALTER TABLE t{t} DROP COLUMN {column};",
    ][(step - 1) % 5]


def mixed_statements(i):
    """A group of statements of the kinds real migrations hold, over at most TABLES tables whose
    columns, indexes and constraints come and go (the schema stays bounded however long the file)."""
    t = i % TABLES
    step = i // TABLES
    if step == 0:
        return (
            f"CREATE TABLE m{t} (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, account_id bigint NOT NULL, "
            f"created_at timestamptz NOT NULL DEFAULT now(), name varchar(255), payload jsonb);\n"
            f"INSERT INTO m{t} (account_id, name) VALUES (1, 'first row of m{t}'), (2, 'it''s the second');"
        )
    other = (t * 7 + step) % TABLES
    c = f"x{(step - 1) // 6 % 8}"
    return [
        f"SET lock_timeout = '5s';\nALTER TABLE m{t} ADD COLUMN {c} integer;\n"
        f"CREATE INDEX CONCURRENTLY m{t}_{c} ON m{t} ({c}) WHERE {c} IS NOT NULL;",
        f"ALTER TABLE m{t} ADD CONSTRAINT m{t}_{c}_fk FOREIGN KEY ({c}) REFERENCES m{other} (id) NOT VALID;\n"
        f"ALTER TABLE m{t} VALIDATE CONSTRAINT m{t}_{c}_fk;",
        f"UPDATE m{t} SET {c} = account_id WHERE id BETWEEN {step} AND {step + 10000} AND {c} IS NULL;\n"
        f"COMMENT ON COLUMN m{t}.{c} IS 'backfilled in step {step}; see the runbook''s section {step % 13}';",
        f"CREATE OR REPLACE VIEW m{t}_recent AS SELECT m.id, m.{c}, o.name FROM m{t} m JOIN m{other} o ON o.id = m.{c} "
        f"WHERE m.created_at > now() - interval '30 days' AND (m.name LIKE 'a%' OR m.payload ? 'k');\n"
        f"SELECT count(*) FROM m{t}_recent WHERE {c} IN (1, 2, 3);",
        f"CREATE OR REPLACE FUNCTION m{t}_touch() RETURNS trigger LANGUAGE plpgsql AS $$\nBEGIN\n"
        f"    NEW.created_at := coalesce(NEW.created_at, now());\n    RETURN NEW; -- ; inside the body\nEND;\n$$;\n"
        f"DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_class WHERE relname = 'm{t}') THEN RAISE NOTICE 'missing'; END IF; END $$;",
        f"DROP VIEW IF EXISTS m{t}_recent;\nALTER TABLE m{t} DROP CONSTRAINT IF EXISTS m{t}_{c}_fk;\n"
        f"DROP INDEX CONCURRENTLY IF EXISTS m{t}_{c};\nALTER TABLE m{t} DROP COLUMN IF EXISTS {c};",
    ][(step - 1) % 6]


def write(path, text):
    with open(path, "w") as f:
        f.write(text)


if kind == "ddl-file":
    limit = int(size * 1e6)
    with open(os.path.join(migrations, "0001_big.sql"), "w") as f:
        written = i = 0
        while written < limit:
            line = ddl_statement(i) + "\n"
            f.write(line)
            written += len(line)
            i += 1
    print(f"{i} statements, {written / 1e6:.1f} MB", file=sys.stderr)
elif kind == "many-files":
    count = int(size)
    for i in range(count):
        write(os.path.join(migrations, f"{i + 1:07d}_m.sql"), ddl_statement(2 * i) + "\n" + ddl_statement(2 * i + 1) + "\n")
    print(f"{count} files", file=sys.stderr)
elif kind == "one-line":
    count = int(size)
    write(os.path.join(migrations, "0001_one_line.sql"), " ".join(ddl_statement(i) for i in range(count)) + "\n")
    print(f"{count} statements on one line", file=sys.stderr)
elif kind == "and-or":
    terms = int(size)
    write(os.path.join(migrations, "0001_t.sql"), "CREATE TABLE t (id bigint PRIMARY KEY, a int, b text);\nCREATE INDEX t_a ON t (a);\n")
    chain = "".join(f" {'AND' if i % 3 else 'OR'} {'a' if i % 2 else 'b'} = {i}" if i else "a = 0" for i in range(terms))
    write(os.path.join(queries, "chain.sql"), f"SELECT id FROM t WHERE {chain};\n")
    print(f"{terms} terms, {len(chain) / 1e6:.1f} MB", file=sys.stderr)
elif kind == "select-one":
    count = int(size * 1e6) // len("SELECT 1;\n")
    write(os.path.join(migrations, "0001_select.sql"), "SELECT 1;\n" * count)
    print(f"{count} statements", file=sys.stderr)
elif kind == "insert":
    write(os.path.join(migrations, "0001_t.sql"), "CREATE TABLE t (id bigint PRIMARY KEY, name text, at timestamptz);\n")
    limit = int(size * 1e6)
    rows = []
    written = 0
    i = 0
    while written < limit:
        row = f"({i}, 'name {i}', '2025-01-01 00:00:00+00')"
        rows.append(row)
        written += len(row) + 2
        i += 1
    write(os.path.join(migrations, "0002_insert.sql"), "INSERT INTO t (id, name, at) VALUES\n" + ",\n".join(rows) + ";\n")
    print(f"{i} rows", file=sys.stderr)
elif kind == "indexes":
    # diesel's layout: every migration has a rollback, so each new index is checked against it.
    with open(os.path.join(out, "sluice.toml"), "w") as f:
        f.write('[migrations]\ndir = "migrations"\nlayout = "diesel"\n[queries]\ndirs = ["queries"]\n')
    for name, up, down in [
        ("2020-01-01-000000_t", "CREATE TABLE t (id bigint PRIMARY KEY, a int);\n", "DROP TABLE t;\n"),
        ("2020-01-02-000000_indexes", "".join(f"CREATE INDEX t_a_{i} ON t (a);\n" for i in range(int(size))), "SELECT 1;\n"),
    ]:
        os.makedirs(os.path.join(migrations, name), exist_ok=True)
        write(os.path.join(migrations, name, "up.sql"), up)
        write(os.path.join(migrations, name, "down.sql"), down)
    print(f"{int(size)} indexes", file=sys.stderr)
elif kind == "backfills":
    write(os.path.join(migrations, "0001_t.sql"), "CREATE TABLE t (id bigint PRIMARY KEY, a int);\n")
    updates = "".join("UPDATE t SET b = a WHERE b IS NULL;\n" for _ in range(int(size)))
    write(os.path.join(migrations, "0002_backfill.sql"), "ALTER TABLE t ADD COLUMN b int;\n" + updates)
    print(f"{int(size)} updates", file=sys.stderr)
elif kind == "columns":
    count = int(size)
    adds = " ".join(f"ALTER TABLE t ADD COLUMN c{i} integer;" for i in range(count))
    write(os.path.join(migrations, "0001_columns.sql"), "CREATE TABLE t (id bigint PRIMARY KEY);\n" + adds + "\n")
    print(f"{count} ADD COLUMNs on one line", file=sys.stderr)
elif kind == "mixed":
    limit = int(size * 1e6)
    with open(os.path.join(migrations, "0001_mixed.sql"), "w") as f:
        written = i = 0
        while written < limit:
            text = mixed_statements(i) + "\n"
            f.write(text)
            written += len(text)
            i += 1
    print(f"{i} groups, {written / 1e6:.1f} MB", file=sys.stderr)
else:
    sys.exit(f"unknown kind {kind}")
