#!/usr/bin/env python3
"""Writes a change-freeze calendar with N events (default 10,000) and 50 windows for bench/freeze.sh.

Events are one-off survey windows spread over 2026-2028 in four zones, plus a few yearly ones.
Windows: the three below (a glob-anchored 12 h lead over every survey, a weekly peak, an allow
window), and 47 more — daily and weekly recurring windows from 2000 (the default first date, so
expansion must start near the asked interval, not in 2000), monthly and yearly ones, one-offs,
and windows anchored to subsets of the events by glob. Deterministic (seeded) so runs are
comparable.
"""
import random
import sys

n = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
out = sys.argv[2] if len(sys.argv) > 2 else "freeze-10k.toml"
rng = random.Random(42)
zones = ["Europe/London", "America/New_York", "Australia/Sydney", "UTC"]
lines = ['timezone = "UTC"', ""]
for i in range(n):
    zone = zones[i % len(zones)]
    if i % 1000 == 0:
        lines += [
            "[[event]]",
            f'id = "survey-yearly-{i:05d}"',
            f'timezone = "{zone}"',
            f'rrule = "FREQ=YEARLY;BYMONTH={1 + i // 1000 % 12};BYDAY=2SA"',
            'start_time = "06:00"',
            'duration = "P1D"',
            "",
        ]
        continue
    day = rng.randrange(0, 3 * 365)
    year, rest = 2026 + day // 365, day % 365
    month, dom = 1 + rest // 31 % 12, 1 + rest % 28
    hour = rng.randrange(0, 20)
    length = rng.randrange(1, 4)
    lines += [
        "[[event]]",
        f'id = "survey-{i:05d}"',
        f'name = "Survey {i}"',
        f'timezone = "{zone}"',
        f'start = "{year}-{month:02d}-{dom:02d}T{hour:02d}:00"',
        f'end = "{year}-{month:02d}-{dom:02d}T{hour + length:02d}:30"',
        "",
    ]
lines += [
    "[[window]]",
    'id = "survey-freeze"',
    'kind = "deny"',
    'event = "survey-*"',
    'lead = "PT12H"',
    'environments = ["production"]',
    'services = ["survey-*"]',
    'reason = "Freeze from 12 hours before each survey window."',
    "",
    "[[window]]",
    'id = "commuter-peak"',
    'kind = "deny"',
    'timezone = "America/New_York"',
    'rrule = "FREQ=WEEKLY;BYDAY=MO,TU,WE,TH,FR"',
    'start_time = "07:00"',
    'end_time = "09:30"',
    'services = ["planner-*"]',
    'environments = ["production"]',
    'reason = "Commuter peak."',
    "",
    "[[window]]",
    'id = "warehouse-slots"',
    'kind = "allow"',
    'timezone = "Europe/London"',
    'rrule = "FREQ=WEEKLY;BYDAY=TU,TH"',
    'start_time = "13:00"',
    'end_time = "16:00"',
    'services = ["warehouse-*"]',
    'reason = "Staffed deploy slots."',
    "",
]
zones_w = ["Europe/London", "America/New_York", "Australia/Sydney", "Asia/Kolkata", "UTC"]
for w in range(47):
    zone = zones_w[w % len(zones_w)]
    head = ["[[window]]", f'id = "w{w:02d}"', 'kind = "deny"', f'services = ["svc-{w % 7}-*"]', f'reason = "Generated window {w}."']
    kind = w % 6
    if kind == 0:
        body = [f'timezone = "{zone}"', 'rrule = "FREQ=DAILY"', f'start_time = "{w % 24:02d}:00"', 'duration = "PT1H"']
    elif kind == 1:
        body = [f'timezone = "{zone}"', f'rrule = "FREQ=WEEKLY;BYDAY=MO,WE,FR;INTERVAL={1 + w % 2}"', 'start_time = "22:00"', 'end_time = "02:00"']
    elif kind == 2:
        body = [f'timezone = "{zone}"', 'rrule = "FREQ=MONTHLY;BYDAY=-1FR"', 'from = "2020-01-01"', 'start_time = "12:00"', 'duration = "P1DT12H"']
    elif kind == 3:
        body = [f'timezone = "{zone}"', f'rrule = "FREQ=YEARLY;BYMONTH={1 + w % 12};BYMONTHDAY=1"', 'start_time = "00:00"', 'duration = "P2D"']
    elif kind == 4:
        body = [f'timezone = "{zone}"', f'start = "2026-{1 + w % 12:02d}-10T08:00"', f'end = "2026-{1 + w % 12:02d}-12T08:00"']
    else:
        body = [f'event = "survey-0{w % 10}*"', 'lead = "P1D"', 'lag = "PT6H"']
    lines += head + body + [""]
with open(out, "w") as f:
    f.write("\n".join(lines))
print(f"wrote {n} events and 50 windows to {out}")
