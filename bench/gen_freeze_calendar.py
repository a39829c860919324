#!/usr/bin/env python3
"""Writes a change-freeze calendar with N events (default 10,000) for bench/freeze.sh.

Events are one-off survey windows spread over 2026-2028 in four zones, plus a few yearly ones;
windows anchor to them by glob (12 h lead), with a weekly recurring peak and an allow window.
Deterministic (seeded) so runs are comparable.
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
with open(out, "w") as f:
    f.write("\n".join(lines))
print(f"wrote {n} events to {out}")
