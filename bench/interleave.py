#!/usr/bin/env python3
"""Whole-process benchmark runner: runs several commands in interleaved rounds (A B, then B A,
…) so that a change in the machine's load hits every command alike, and reports per command the
median wall time, user and system CPU time (from wait4's rusage), and peak resident memory,
plus the load average before and after.

Peak memory comes from GNU time (`/usr/bin/time`, Debian's `time` package), which the warm-up
runs go through. Linux carries a process's peak RSS across exec, so wait4's figure for a child
this Python process forks is never below the interpreter's own peak (about 15 MB): a small
command such as squawk on a small history measured 15 MB whatever it really used. GNU time
forks the command from its own small process, so its figure is the command's. Its extra process
costs about a millisecond, so the timed runs do without it, except with --warmup 0, when they
carry it and give the memory figure too.

Usage:
  interleave.py [--runs N] [--warmup N] [--json FILE] [--cwd DIR] NAME=COMMAND [NAME=COMMAND...]

A command is run through `sh -c`; its output is discarded. Exit codes 0 and 1 are accepted
(linters exit 1 when they find something; only the time matters here); any other code — a
configuration error, a missing binary — stops the benchmark, because a command that fails at
once would otherwise look fast. The first command is the reference for the ratio column.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


ACCEPTED_EXIT_CODES = (0, 1)


GNU_TIME = "/usr/bin/time"


def run_once(command, cwd, memory):
    with tempfile.NamedTemporaryFile(mode="r") as peak:
        # `sh -c CMD` execs CMD directly: the peak GNU time reports is the command's own.
        argv = ["sh", "-c", command]
        if memory:
            argv = [GNU_TIME, "--format=%M", "--output", peak.name, *argv]
        start = time.perf_counter()
        process = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - start
        code = os.waitstatus_to_exitcode(status)
        if code not in ACCEPTED_EXIT_CODES:
            sys.exit(f"interleave.py: `{command}` exited with {code} in {cwd or os.getcwd()}; fix the command (run it by hand to see why)")
        # After "Command exited with non-zero status 1", when it did: the last line is %M, in KiB.
        rss_mb = int(peak.read().split()[-1]) / 1024 if memory else None
    return {"wall": wall, "user": usage.ru_utime, "sys": usage.ru_stime, "rss_mb": rss_mb, "status": code}


def load():
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--json")
    parser.add_argument("--cwd")
    parser.add_argument("commands", nargs="+", metavar="NAME=COMMAND")
    args = parser.parse_args()
    if not shutil.which(GNU_TIME):
        sys.exit(f"interleave.py: {GNU_TIME} not found; install GNU time (Debian: apt-get install time) to measure peak memory")
    commands = [c.split("=", 1) for c in args.commands]
    if any(len(c) != 2 for c in commands):
        parser.error("each command is NAME=COMMAND")

    peaks = {name: [] for name, _ in commands}
    for _ in range(args.warmup):
        for name, command in commands:
            peaks[name].append(run_once(command, args.cwd, memory=True)["rss_mb"])
    load_before = load()
    samples = {name: [] for name, _ in commands}
    for round_ in range(args.runs):
        order = commands if round_ % 2 == 0 else list(reversed(commands))
        for name, command in order:
            sample = run_once(command, args.cwd, memory=args.warmup == 0)
            samples[name].append(sample)
            if args.warmup == 0:
                peaks[name].append(sample["rss_mb"])
    load_after = load()

    def median(name, key):
        return statistics.median(s[key] for s in samples[name])

    reference = commands[0][0]
    print(f"{args.runs} interleaved rounds after {args.warmup} warm-up(s); "
          f"load average {load_before:.2f} before, {load_after:.2f} after; {os.cpu_count()} CPUs")
    print(f"{'command':<24} {'wall (median)':>14} {'min':>8} {'max':>8} {'user':>8} {'sys':>8} {'peak RSS':>10} {'vs ' + reference:>10}")
    result = {"runs": args.runs, "load_before": load_before, "load_after": load_after, "commands": {}}
    for name, command in commands:
        walls = [s["wall"] for s in samples[name]]
        row = {
            "command": command,
            "wall_median": median(name, "wall"),
            "wall_min": min(walls),
            "wall_max": max(walls),
            "user_median": median(name, "user"),
            "sys_median": median(name, "sys"),
            "rss_mb_median": statistics.median(peaks[name]),
            "rss_mb_max": max(peaks[name]),
            "exit_codes": sorted({s["status"] for s in samples[name]}),
        }
        row["ratio"] = row["wall_median"] / median(reference, "wall")
        result["commands"][name] = row
        print(f"{name:<24} {row['wall_median'] * 1000:>11.0f} ms {row['wall_min'] * 1000:>5.0f} ms "
              f"{row['wall_max'] * 1000:>5.0f} ms {row['user_median']:>7.2f}s {row['sys_median']:>7.2f}s "
              f"{row['rss_mb_max']:>7.0f} MB {row['ratio']:>9.2f}x")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
