#!/usr/bin/env python3
"""The query census: on real public applications, the queries at known database calls counted
by an independent method, against what `sluice queries --format json` extracts.

Independent methods (none of them Sluice's tree-sitter code):
  Go          go/ast (query_census/census_go.go; names resolved across the package)
  Java        the JDK's compiler tree API (query_census/CensusJava.java)
  TS/JS       the TypeScript compiler's parser (query_census/census_ts.js, npm `typescript`)
  Python      Python's own `ast`
  MyBatis     Python's expat: every <select|insert|update|delete|selectKey> of a <mapper>
  .sqlx       Python's json: every .sqlx/query-*.json
  Rust        a token scan of the macro and method calls (no Rust parser is at hand): its
              disagreements are listed for a manual look

A census item is literal (a string literal or a concatenation of them), constant (a name with a
single definition whose value is one), dynamic (built at run time) or jpql. Recall is over
literal and constant items: an item is found when Sluice lists a query in the same file at the
same line (or the next: a Java text block's content starts on the line after its `\"\"\"`).

Usage: query_census.py --sluice BIN --snapshots DIR --work DIR [--apps a,b] [--details FILE]
"""

import argparse
import ast
import collections
import json
import os
import re
import shutil
import subprocess
import sys
import time
import xml.parsers.expat

HERE = os.path.dirname(os.path.abspath(__file__))

# name, snapshot directory under --snapshots, commit, stack, census languages
APPS = [
    ("miniflux", "miniflux+v2", "106cdd09e1557222303f3ed1376e1dadf0638621", "Go database/sql (lib/pq)", ["go"]),
    ("memos", "usememos+memos", "76a762924306e782871204f131f4033be5e8e41a", "Go database/sql", ["go"]),
    ("zero2prod", "LukeMathWalker+zero-to-production", "970987c5f793af6fc8e557731c9bbb23b620451e", "Rust sqlx query! + .sqlx", ["rust", "sqlx"]),
    ("atuin", "atuinsh+atuin", "824c8716d82bed774ee6a83c683087ae77715814", "Rust sqlx functions", ["rust", "sqlx"]),
    ("crates.io", "rust-lang+crates.io", "57fa000662f511321daa61e6769f190ea0e80771", "Rust diesel sql_query", ["rust", "sqlx"]),
    # A MySQL application: kept for the MyBatis recall; its SQL is MySQL's, not PostgreSQL's.
    ("mall", "macrozheng+mall", "74eebe067d4f17b2d0b61691bef2748e3a7daf80", "Java MyBatis XML (MySQL)", ["java", "mybatis"]),
    ("dolphinscheduler", "apache+dolphinscheduler", "7e0095dca198bfc50c59bbc10b3be5617d7b3229", "Java MyBatis XML (PostgreSQL, MySQL)", ["java", "mybatis"]),
    ("thingsboard", "thingsboard+thingsboard", "dfe65d5abc3aa959aaa853952d74943fbd6867bd", "Java Spring Data nativeQuery, JdbcTemplate", ["java", "mybatis"]),
    ("outline", "outline+outline", "d77dcdf853868c5d5fe125c895c9b71f0eff5c68", "TypeScript Sequelize query", ["ts"]),
    ("documenso", "documenso+documenso", "75330166cc00b29c14399bc2e391e4b4d8080c00", "TypeScript Prisma $queryRaw", ["ts"]),
    ("mathesar", "mathesar-foundation+mathesar", "e214743031f1e5aa762b22ac53b321755223da57", "Python psycopg, SQLAlchemy", ["python"]),
    ("robodanny", "Rapptz+RoboDanny", "39af9d71ffd5f099094a05352c18b987a1dc5d04", "Python asyncpg", ["python"]),
    ("synapse", "element-hq+synapse", "a58ad44eb0ce3cc14153f921206f322e17339dc5", "Python DB-API (PostgreSQL, SQLite)", ["python"]),
    ("boundary", "hashicorp+boundary", "01cd5c86e8602aa9babc54b07e51ef7b8445e0b6", "Go database/sql", ["go"]),
]

SKIP_DIRS = {"node_modules", "vendor", "target", ".git"}
KEYWORDS = {"SELECT", "INSERT", "UPDATE", "DELETE", "WITH", "CREATE", "ALTER", "DROP", "TRUNCATE", "COPY", "CALL",
            "SET", "LOCK", "VALUES", "MERGE", "REFRESH", "VACUUM", "ANALYZE", "DECLARE", "FETCH", "DO", "EXPLAIN"}


def sql_like(text):
    """A statement keyword, a blank, and more (looser than Sluice's test, and written apart from it)."""
    match = re.match(r"[\s(]*([A-Za-z]+)\s+\S", text)
    return bool(match) and match.group(1).upper() in KEYWORDS


def files(root, suffixes):
    for directory, subdirs, names in os.walk(root):
        subdirs[:] = [d for d in subdirs if d not in SKIP_DIRS and (d == ".sqlx" or not d.startswith("."))]
        for name in names:
            if name.endswith(suffixes) and not name.endswith(".d.ts"):
                yield os.path.join(directory, name)


def item(path, line, kind, call):
    return {"file": path, "line": line, "kind": kind, "call": call}


def run_lines(command, **kwargs):
    result = subprocess.run(command, capture_output=True, text=True, **kwargs)
    if result.returncode != 0:
        sys.exit(f"{' '.join(command[:3])}…: exit {result.returncode}: {result.stderr[-2000:]}")
    return [json.loads(line) for line in result.stdout.splitlines() if line.strip()]


# --- the census of each language -----------------------------------------------------------

def census_go(root, work):
    cache = os.path.join(work, ".gocache")
    env = dict(os.environ, GOCACHE=cache, GOFLAGS="-mod=mod", GO111MODULE="off")
    return run_lines(["go", "run", os.path.join(HERE, "query_census", "census_go.go"), root], env=env)


def census_java(root, work):
    words = ("@Query", "@Select", "@Insert", "@Update", "@Delete", "NativeQuery", "query", "pdate", "execute",
             "prepare", "addBatch")
    chosen = []
    for path in files(root, (".java",)):
        with open(path, encoding="utf-8", errors="replace") as f:
            if any(w in f.read() for w in words):
                chosen.append(path)
    found = []
    for start in range(0, len(chosen), 400):
        found += run_lines(["java", os.path.join(HERE, "query_census", "CensusJava.java")] + chosen[start:start + 400])
    return found


def census_ts(root, work):
    node = os.path.join(work, ".census-node")
    if not os.path.isdir(os.path.join(node, "node_modules", "typescript")):
        os.makedirs(node, exist_ok=True)
        subprocess.run(["npm", "install", "--silent", "--no-audit", "--no-fund", "--prefix", node, "typescript@5"], check=True)
    chosen = []
    for path in files(root, (".ts", ".tsx", ".js", ".mjs", ".cjs", ".jsx", ".mts", ".cts")):
        if path.endswith(".min.js"):
            continue
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
        if "query" in text or "raw" in text or "Raw" in text:
            chosen.append(path)
    env = dict(os.environ, NODE_PATH=os.path.join(node, "node_modules"))
    found = []
    for start in range(0, len(chosen), 300):
        found += run_lines(["node", os.path.join(HERE, "query_census", "census_ts.js")] + chosen[start:start + 300], env=env)
    return found


class PythonCensus(ast.NodeVisitor):
    METHODS = {"execute", "executemany", "fetch", "fetchrow", "fetchval", "exec_driver_sql"}

    def __init__(self, path, tree, sqlalchemy):
        self.path, self.sqlalchemy, self.found = path, sqlalchemy, []
        self.scopes = [self.assignments(tree)]

    @staticmethod
    def assignments(scope):
        values = collections.defaultdict(list)
        nodes = list(ast.iter_child_nodes(scope))
        while nodes:
            node = nodes.pop()
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
                continue
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                values[node.targets[0].id].append(node.value)
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value:
                values[node.target.id].append(node.value)
            elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
                values[node.target.id].append(None)
            nodes.extend(ast.iter_child_nodes(node))
        return values

    def visit_FunctionDef(self, node):
        self.scopes.append(self.assignments(node))
        self.generic_visit(node)
        self.scopes.pop()

    visit_AsyncFunctionDef = visit_FunctionDef

    def lookup(self, name):
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        return []

    def classify(self, node, depth=0):
        """(kind, first literal node)"""
        if depth > 10:
            return "dynamic", node
        if isinstance(node, ast.Constant) and isinstance(node.value, (str, bytes)):
            return "literal", node
        if isinstance(node, ast.JoinedStr):
            if any(isinstance(v, ast.FormattedValue) for v in node.values):
                return "dynamic", node
            return "literal", node
        if isinstance(node, ast.BinOp):
            left, at = self.classify(node.left, depth)
            if isinstance(node.op, ast.Mod):
                return "dynamic", at
            if isinstance(node.op, ast.Add):
                right, _ = self.classify(node.right, depth)
                if None in (left, right) or "dynamic" in (left, right):
                    return "dynamic", at
                return ("constant" if "constant" in (left, right) else "literal"), at
        if isinstance(node, ast.Name):
            values = self.lookup(node.id)
            if len(values) == 1 and values[0] is not None:
                kind, at = self.classify(values[0], depth + 1)
                return ("constant" if kind in ("literal", "constant") else kind), at
            return ("dynamic" if len(values) > 1 else None), node
        if isinstance(node, ast.Call):
            function = node.func
            name = function.attr if isinstance(function, ast.Attribute) else getattr(function, "id", "")
            if name == "SQL" and node.args:
                return self.classify(node.args[0], depth)
            if name == "text":
                return None, node
            inner = function.value if isinstance(function, ast.Attribute) else (node.args[0] if node.args else node)
            return "dynamic", self.classify(inner, depth + 1)[1]
        return None, node

    @staticmethod
    def text_of(node):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return node.value
        if isinstance(node, ast.JoinedStr) and node.values and isinstance(node.values[0], ast.Constant):
            return node.values[0].value
        return ""

    def visit_Call(self, node):
        function = node.func
        name = function.attr if isinstance(function, ast.Attribute) else getattr(function, "id", "")
        is_text = name == "text" and self.sqlalchemy and (
            isinstance(function, ast.Name) or getattr(function.value, "id", "") in ("sa", "sqlalchemy", "sql"))
        if node.args and (is_text or (name in self.METHODS and isinstance(function, ast.Attribute))):
            kind, at = self.classify(node.args[0])
            if kind and sql_like(self.text_of(at)):
                self.found.append(item(self.path, at.lineno, kind, name))
        self.generic_visit(node)


def census_python(root, work):
    found = []
    for path in files(root, (".py",)):
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
        if not any(w in text for w in ("execute", "fetch", "text(")):
            continue
        try:
            tree = ast.parse(text)
        except SyntaxError as e:
            print(f"  python census: {path}: {e}", file=sys.stderr)
            continue
        visitor = PythonCensus(path, tree, "sqlalchemy" in text)
        visitor.visit(tree)
        found += visitor.found
    return found


def census_mybatis(root, work):
    found = []
    for path in files(root, (".xml",)):
        with open(path, "rb") as f:
            data = f.read()
        if b"<mapper" not in data:
            continue
        parser = xml.parsers.expat.ParserCreate()
        depth, in_mapper = [0], [False]

        def start(name, attributes, parser=parser):
            depth[0] += 1
            if depth[0] == 1:
                in_mapper[0] = name == "mapper"
            elif in_mapper[0] and ((depth[0] == 2 and name in ("select", "insert", "update", "delete")) or name == "selectKey"):
                database = attributes.get("databaseId", "")
                kind = "skipped" if database and not database.lower().startswith(("postgres", "pg")) else "mapper"
                found.append(item(path, parser.CurrentLineNumber, kind, f"{name} {attributes.get('id', '')}"))

        def end(name):
            depth[0] -= 1

        parser.StartElementHandler, parser.EndElementHandler = start, end
        try:
            parser.Parse(data, True)
        except xml.parsers.expat.ExpatError as e:
            print(f"  mybatis census: {path}: {e}", file=sys.stderr)
    return found


def census_sqlx(root, work):
    found = []
    for path in files(root, (".json",)):
        if os.path.basename(os.path.dirname(path)) == ".sqlx" and os.path.basename(path).startswith("query-"):
            with open(path, encoding="utf-8") as f:
                data = json.load(f)
            if "query" in data:
                found.append(item(path, 0, "sqlx", "offline"))
    return found


RUST_MACRO = re.compile(r"\b(query|query_as|query_scalar)(_unchecked)?!\s*\(")
RUST_CALL = re.compile(r"(?:\bsqlx::(?:query|query_as|query_scalar)(?:::<[^>]*>)?|\bsql_query|\.(?:query|query_one|query_opt|execute|prepare|batch_execute|simple_query))\s*\(")
RUST_STRING = re.compile(r'\s*(?:[A-Za-z_][\w:<>, ]*\s*,\s*)?(r#*"|")')


def census_rust(root, work):
    found = []
    for path in files(root, (".rs",)):
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
        for pattern, kind_of_call in ((RUST_MACRO, "macro"), (RUST_CALL, "call")):
            for match in pattern.finditer(text):
                rest = text[match.end():]
                string = RUST_STRING.match(rest) if kind_of_call == "macro" else re.match(r'\s*&?(r#*"|")', rest)
                if not string:
                    continue
                at = match.end() + string.start(1)
                body = rest[string.end():string.end() + 200]
                if kind_of_call == "call" and not sql_like(body):
                    continue
                found.append(item(path, text.count("\n", 0, at) + 1, "literal", match.group(0).strip("( ")))
    return found


CENSUS = {"go": census_go, "java": census_java, "ts": census_ts, "python": census_python,
          "mybatis": census_mybatis, "sqlx": census_sqlx, "rust": census_rust}


# --- matching -----------------------------------------------------------------------------

def export(git_dir, commit, root):
    """Writes the files of `commit` under `root`; a snapshot lacks its largest files (fonts,
    images), which `git archive` refuses: those are left out."""
    listing = subprocess.run(["git", "--git-dir", git_dir, "ls-tree", "-r", "-z", commit], capture_output=True, check=True).stdout
    entries = [e.split(b"\t", 1) for e in listing.split(b"\0") if e]
    blobs = [(meta.split()[2], path.decode()) for meta, path in entries if meta.split()[1] == b"blob" and meta.split()[0] != b"120000"]
    batch = subprocess.Popen(["git", "--git-dir", git_dir, "cat-file", "--batch"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    for sha, path in blobs:
        batch.stdin.write(sha + b"\n")
        batch.stdin.flush()
        header = batch.stdout.readline().split()
        if len(header) < 3 or header[1] != b"blob":
            continue
        data = batch.stdout.read(int(header[2]))
        batch.stdout.read(1)
        target = os.path.join(root, path)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "wb") as f:
            f.write(data)
    batch.stdin.close()
    batch.wait()


def measure(name, snapshot, commit, stack, languages, args):
    root = os.path.join(args.work, name)
    if not os.path.isdir(root):
        git_dir = os.path.join(args.snapshots, snapshot, "repo")
        if not os.path.isdir(git_dir):
            git_dir = os.path.join(args.snapshots, snapshot)
        export(git_dir, commit, root)
    started = time.monotonic()
    listing = subprocess.run([args.sluice, "queries", "--no-ignore", "--format", "json", root], capture_output=True, text=True)
    seconds = time.monotonic() - started
    if listing.returncode != 0:
        sys.exit(f"{name}: sluice queries: {listing.stderr}")
    extracted = json.loads(listing.stdout)
    census = []
    for language in languages:
        census += CENSUS[language](root, args.work)

    by_line = collections.Counter()
    set_aside = collections.Counter()
    mapper_found = collections.Counter()
    sqlx_found = collections.Counter()
    native_sources = ("Spring @Query(nativeQuery = true)", "JPA @NamedNativeQuery", "Spring Data JDBC @Query")
    for file in extracted["files"]:
        for query in file["queries"]:
            if query["source"].startswith("MyBatis ") and not query["source"].startswith("MyBatis @"):
                mapper_found[file["path"]] += 1
            elif query["source"] == "sqlx offline data":
                sqlx_found[file["path"]] += 1
            else:
                by_line[(file["path"], query["line"])] += 1
        for note in file["unreadable"]:
            if note["source"].startswith("MyBatis ") and not note["source"].startswith("MyBatis @"):
                mapper_found[file["path"]] += 1
        # Another database's SQL, migration code and test code: counted in the file's note, never
        # checked; a census item there is found (not dropped), as an unreadable mapper statement is.
        aside = sum(o["statements"] for o in file.get("other_database") or [])
        aside += (file.get("migration") or {}).get("statements", 0)
        aside += (file.get("test") or {}).get("statements", 0)
        set_aside[file["path"]] += aside
        mapper_found[file["path"]] += aside

    result = collections.Counter()
    misses = []
    unmatched = collections.Counter(by_line)
    for entry in sorted(census, key=lambda e: (e["file"], e["line"])):
        kind = entry["kind"]
        if kind in ("mapper", "sqlx"):
            found = mapper_found if kind == "mapper" else sqlx_found
            result[f"{kind}_census"] += 1
            if found[entry["file"]] > 0:
                found[entry["file"]] -= 1
                result[f"{kind}_found"] += 1
            else:
                misses.append(entry)
            continue
        result[f"{kind}_census"] += 1
        if kind not in ("literal", "constant"):
            continue
        native = entry["call"] in ("@Query", "@NamedNativeQuery")
        if native:
            result["native_census"] += 1
        for line in (entry["line"], entry["line"] + 1):
            key = (entry["file"], line)
            if unmatched[key] > 0:
                unmatched[key] -= 1
                result[f"{kind}_found"] += 1
                result["native_found"] += native
                break
        else:
            if set_aside[entry["file"]] > 0:
                set_aside[entry["file"]] -= 1
                result[f"{kind}_found"] += 1
                result["aside_found"] += 1
            else:
                misses.append(entry)
    extras = [key for key, n in unmatched.items() for _ in range(n)]
    queries = extracted["totals"]["queries"]
    literal_census = result["literal_census"] + result["constant_census"]
    literal_found = result["literal_found"] + result["constant_found"]
    row = {
        "app": name, "stack": stack, "commit": commit[:12], "scanned": extracted["totals"]["scanned"],
        "seconds": round(seconds, 2), "queries": queries, "parsed": extracted["totals"]["parsed"],
        "unreadable": extracted["totals"]["unreadable"], "skipped": extracted["totals"]["skipped"],
        "literal_census": literal_census, "literal_found": literal_found,
        "dynamic_census": result["dynamic_census"], "jpql_census": result["jpql_census"],
        "native_census": result["native_census"], "native_found": result["native_found"],
        "mapper_census": result["mapper_census"], "mapper_found": result["mapper_found"],
        "sqlx_census": result["sqlx_census"], "sqlx_found": result["sqlx_found"],
        "extra": len(extras),
        "other_database": extracted["totals"].get("other_database", 0), "migration": extracted["totals"].get("migration", 0),
        "test": extracted["totals"].get("test", 0),
        "aside_found": result["aside_found"],
    }
    return row, misses, extras, extracted


def percent(part, whole):
    return "–" if whole == 0 else f"{100 * part / whole:.1f}%"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sluice", required=True)
    parser.add_argument("--snapshots", required=True, help="the directory holding the fetched snapshots (owner+name/repo)")
    parser.add_argument("--work", required=True, help="where the applications are checked out")
    parser.add_argument("--apps", help="comma-separated names (default: all)")
    parser.add_argument("--details", help="write every miss, extra and unparsed statement here (JSON)")
    args = parser.parse_args()
    wanted = set(args.apps.split(",")) if args.apps else None
    for tool in ("go", "java", "node", "npm", "git", "tar"):
        if shutil.which(tool) is None:
            sys.exit(f"query_census: `{tool}` is needed (apt-get install golang-go default-jdk-headless nodejs npm git)")
    rows, details = [], {}
    for app in APPS:
        if wanted and app[0] not in wanted:
            continue
        if not os.path.isdir(os.path.join(args.snapshots, app[1])):
            print(f"{app[0]}: no snapshot {app[1]} under {args.snapshots}: skipped", file=sys.stderr)
            continue
        row, misses, extras, extracted = measure(*app, args)
        rows.append(row)
        unparsed = [q["sql"][:300] for f in extracted["files"] for q in f["queries"] if not q["parsed"]]
        details[app[0]] = {"misses": misses, "extras": [list(e) for e in extras], "unparsed": unparsed}
        print(json.dumps(row), file=sys.stderr)
    print("| application | stack | commit | files | queries | parsed | literal/constant found | nativeQuery | MyBatis | .sqlx | run time | unreadable | JPQL skipped | another database / migration / test code | extra |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['app']} | {r['stack']} | {r['commit']} | {r['scanned']} | {r['queries']} | "
              f"{percent(r['parsed'], r['queries'])} | {r['literal_found']}/{r['literal_census']} ({percent(r['literal_found'], r['literal_census'])}) | "
              f"{r['native_found']}/{r['native_census']} | {r['mapper_found']}/{r['mapper_census']} | {r['sqlx_found']}/{r['sqlx_census']} | "
              f"{r['seconds']} s | {r['unreadable']} (census: {r['dynamic_census']} built at run time) | {r['skipped']} ({r['jpql_census']}) | "
              f"{r['other_database']} / {r['migration']} / {r['test']} | {r['extra']} |")
    def totals(selected):
        return {key: sum(r[key] for r in selected) for key in ("queries", "parsed", "literal_found", "literal_census")}

    def exact(part, whole):
        return f"{100 * part / whole:.2f}%" if whole else "–"

    total = totals(rows)
    print(f"\nAll: {total['parsed']} of {total['queries']} parsed ({exact(total['parsed'], total['queries'])}); "
          f"{total['literal_found']} of {total['literal_census']} literal and constant queries found "
          f"({exact(total['literal_found'], total['literal_census'])}).")
    # mall is kept for its MyBatis mappers; its SQL is MySQL's, which PostgreSQL's parser refuses.
    postgres = totals([r for r in rows if "(MySQL)" not in r["stack"]])
    print(f"PostgreSQL applications (all but MySQL's): {postgres['parsed']} of {postgres['queries']} parsed "
          f"({exact(postgres['parsed'], postgres['queries'])}).")
    if args.details:
        with open(args.details, "w") as f:
            json.dump(details, f, indent=1)


if __name__ == "__main__":
    main()
