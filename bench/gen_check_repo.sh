#!/usr/bin/env bash
# Generates the `sluice check` benchmark repository: `main` holds N migrations (default 2,000)
# building a realistic schema (tables, columns, indexes, backfills) and a few query files;
# branch `feature` (checked out, committed) adds 5 migrations and edits a query file.
#
#   bench/gen_check_repo.sh DIR [N]
set -euo pipefail

dir=${1:?usage: gen_check_repo.sh DIR [MIGRATIONS]}
count=${2:-2000}
rm -rf "$dir"
mkdir -p "$dir/migrations" "$dir/queries"
cd "$dir"
git init -q -b main
git config user.email bench@example.com
git config user.name bench
git config commit.gpgsign false

cat > sluice.toml <<'TOML'
[migrations]
dir = "migrations"

[queries]
dirs = ["queries"]
TOML

tables=50
for ((i = 1; i <= count; i++)); do
  version=$(printf '%05d' "$i")
  t=$(( (i - 1) % tables ))
  if (( i <= tables )); then
    cat > "migrations/${version}_create_t${t}.sql" <<SQL
CREATE TABLE t${t} (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    site_id bigint NOT NULL,
    observed_at timestamptz NOT NULL DEFAULT now(),
    note text
);
SQL
  else
    case $(( i % 4 )) in
      0) printf 'ALTER TABLE t%d ADD COLUMN c%d integer;\n' "$t" "$i" ;;
      # The first index on each table leads with site_id (t2_c53_idx on t2), later ones with observed_at:
      # dropping the first leaves the site_id filter of queries/report_N.sql without an index.
      1) if (( i <= 150 )); then keys='site_id, observed_at'; else keys='observed_at, site_id'; fi
         printf 'CREATE INDEX CONCURRENTLY t%d_c%d_idx ON t%d (%s);\n' "$t" "$i" "$t" "$keys" ;;
      2) printf "COMMENT ON TABLE t%d IS 'revision %d';\n" "$t" "$i" ;;
      3) printf 'ALTER TABLE t%d ADD COLUMN c%d text;\nUPDATE t%d SET note = NULL WHERE id < 0;\n' "$t" "$i" "$t" ;;
    esac > "migrations/${version}_change_t${t}.sql"
  fi
done

for ((q = 0; q < 20; q++)); do
  printf 'SELECT site_id, count(*)\nFROM t%d\nWHERE site_id = $1 AND observed_at >= $2\nGROUP BY site_id;\n' "$q" \
    > "queries/report_$q.sql"
done

git add -A
git commit -qm "base: $count migrations"
git checkout -q -b feature

for ((j = 1; j <= 5; j++)); do
  version=$(printf '%05d' $((count + j)))
  t=$(( j % tables ))
  case $j in
    1) printf 'CREATE INDEX t%d_note_idx ON t%d (note);\n' "$t" "$t" ;;
    2) printf 'ALTER TABLE t%d ADD COLUMN region text NOT NULL DEFAULT %s;\n' "$t" "'unknown'" ;;
    # Changes a column queries/report_3.sql filters on: an unchanged query affected by a migration.
    3) printf 'ALTER TABLE t%d ALTER COLUMN site_id TYPE integer;\n' "$t" ;;
    # Drops the index queries/report_2.sql needs (outage 3); t2_c53_idx is created by migration 53.
    4) printf 'DROP INDEX t2_c53_idx;\n' ;;
    5) printf 'CREATE TABLE pr_table (id bigint PRIMARY KEY, t%d_id bigint REFERENCES t%d (id));\n' "$t" "$t" ;;
  esac > "migrations/${version}_pr_$j.sql"
done
# Wraps an indexed column (outage 2): t4's indexes have observed_at as a key.
printf 'SELECT site_id, count(*)\nFROM t4\nWHERE date_trunc($$day$$, observed_at) = $1\nGROUP BY site_id;\n' \
  > queries/report_1.sql

git add -A
git commit -qm "pull request: 5 migrations, 1 query"
echo "$dir: main has $count migrations, feature adds 5 and edits queries/report_1.sql"
