#!/usr/bin/env python3
"""A generated application repository for bench/query_scan.sh (issue 35's "5,000-file
application repository"): FILES Go files in packages of 50, of which one in 50 passes SQL
literals to database/sql calls, the rest plain code; a migrations/ directory creating the tables
and their indexes, as an sqlx history (timestamped, one file per migration).

    bench/gen_code_repo.py DIR [FILES]    (default 5000)
    bench/query_scan.sh DIR migrations
"""
import os
import sys

root = sys.argv[1]
files = int(sys.argv[2]) if len(sys.argv) > 2 else 5000
tables = 40
os.makedirs(os.path.join(root, "migrations"), exist_ok=True)
for t in range(tables):
    with open(os.path.join(root, "migrations", f"2024010100{t:04d}_table_{t}.sql"), "w") as out:
        out.write(f"CREATE TABLE t{t} (id bigint PRIMARY KEY, tenant_id bigint NOT NULL, email text, created_at timestamptz);\n")
        out.write(f"CREATE INDEX t{t}_tenant ON t{t} (tenant_id, created_at);\n")
        out.write(f"CREATE INDEX t{t}_email ON t{t} (email);\n")
for i in range(files):
    package = f"pkg{i // 50}"
    directory = os.path.join(root, "internal", package)
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, f"file{i}.go"), "w") as out:
        out.write(f"package {package}\n\n")
        if i % 50 == 0:
            t = (i // 50) % tables
            out.write('import "database/sql"\n\n')
            out.write(f"func Load{i}(db *sql.DB, tenant int64, email string) error {{\n")
            out.write(f'\t_, err := db.Query(`SELECT id FROM t{t} WHERE tenant_id = $1 AND created_at > now() - interval \'1 day\'`, tenant)\n')
            out.write("\tif err != nil {\n\t\treturn err\n\t}\n")
            out.write(f'\t_, err = db.Query("SELECT id FROM t{t} WHERE email = $1", email)\n')
            out.write("\treturn err\n}\n")
        else:
            out.write(f"// Sum{i} adds what it is given.\nfunc Sum{i}(values []int) int {{\n")
            out.write("\ttotal := 0\n\tfor _, v := range values {\n\t\ttotal += v\n\t}\n\treturn total\n}\n")
