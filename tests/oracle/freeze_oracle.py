#!/usr/bin/env python3
"""An independent oracle for Sluice's change-freeze engine.

Reads the JSON written by tests/freeze_differential.rs: random calendars (as plain data, not
Sluice's TOML), the questions asked, and Sluice's answers. Computes its own answers with
python-dateutil (RFC 5545 RRULE expansion) and zoneinfo (the IANA database, with its POSIX
footer for later years), following Sluice's documented semantics (README, "Change-freeze
calendar"), and prints every disagreement as one JSON object per line. Exit 0 when all agree.

Semantics implemented here, from the README:
- intervals are half-open [start, end); deny beats allow; when any allow window exists, deploys
  are permitted only inside an allow occurrence;
- a local time in a spring-forward gap is the first instant after the gap; an ambiguous one is
  the earlier instant;
- recurrences run on the wall clock from DTSTART = `from` (default 2000-01-01) + start_time;
  UNTIL without Z is wall-clock, with Z an instant; RDATEs are added, EXDATEs removed; the set
  is one of instants, so two wall-clock starts in one DST gap are one occurrence (the longer);
- an occurrence lasts from `start_time` to `end_time` on the wall clock (the next day when not
  after it), an RDATE at another time of day as long, or for `duration`: its days on the wall
  clock from the written start, its hours/minutes/seconds in real time; an occurrence squeezed
  to nothing by a DST change is no window but still an event;
- an anchored window runs from the event's real start minus `lead` to its real end plus `lag`
  (days on the wall clock of the event's zone, then hours in real time);
- next-open: the first instant from which deploys stay open for at least the minimum, searched
  730 days ahead; "open until" is the start of the next blocked stretch.
"""
import json
import re
import sys
from functools import lru_cache
from datetime import datetime, timedelta, timezone, tzinfo
from zoneinfo import ZoneInfo

from dateutil.rrule import rrulestr

UTC = timezone.utc
HORIZON = timedelta(days=730)
ZONES = {}




class Transitions(tzinfo):
    """A zone whose offset changes at given instants: what a VTIMEZONE whose observances have
    no RRULE defines (RFC 5545 section 3.6.5: each observance begins once at its DTSTART and at
    each RDATE). Written from the RFC, independently of Sluice's TZif."""

    def __init__(self, initial, changes):
        self.initial = timedelta(seconds=initial)
        self.changes = [(parse_utc(t), timedelta(seconds=o)) for t, o in changes]

    def _at(self, instant):
        offset = self.initial
        for t, o in self.changes:
            if t <= instant:
                offset = o
        return offset

    def utcoffset(self, dt):
        local = dt.replace(tzinfo=None)
        offsets = {self.initial} | {o for _, o in self.changes}
        valid = sorted((local - o).replace(tzinfo=UTC) for o in offsets if self._at((local - o).replace(tzinfo=UTC)) == o)
        if valid:
            # An overlap: fold 0 is the earlier instant.
            return local - valid[min(dt.fold, len(valid) - 1)].replace(tzinfo=None)
        # A gap: fold 0 reads it with the offset before the change, fold 1 with the one after.
        before = self.initial
        for t, o in self.changes:
            if t.replace(tzinfo=None) + before <= local < t.replace(tzinfo=None) + o:
                return before if dt.fold == 0 else o
            before = o
        return self.initial

    def dst(self, dt):
        return timedelta(0)

    def tzname(self, dt):
        return None

    def fromutc(self, dt):
        instant = dt.replace(tzinfo=UTC)
        local = dt.replace(tzinfo=None) + self._at(instant)
        # The second reading of a local time that happens twice has fold 1.
        earlier = [o for o in {self.initial} | {o for _, o in self.changes}
                   if (local - o).replace(tzinfo=UTC) < instant and self._at((local - o).replace(tzinfo=UTC)) == o]
        return local.replace(tzinfo=self, fold=1 if earlier else 0)


def zone(name):
    key = json.dumps(name, sort_keys=True)
    if key not in ZONES:
        ZONES[key] = Transitions(name["initial"], name["transitions"]) if isinstance(name, dict) else ZoneInfo(name)
    return ZONES[key]


def parse_utc(text):
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)


def fmt(t):
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ") if t is not None else None


def parse_local(text):
    for f in ("%Y-%m-%dT%H:%M", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d"):
        try:
            return datetime.strptime(text, f)
        except ValueError:
            pass
    raise ValueError(text)


@lru_cache(maxsize=None)
def resolve(naive, tz):
    """Wall clock -> UTC: gap -> first instant after it; overlap -> the earlier instant."""
    candidates = []
    for fold in (0, 1):
        u = naive.replace(tzinfo=tz, fold=fold).astimezone(UTC)
        if u.astimezone(tz).replace(tzinfo=None) == naive:
            candidates.append(u)
    if candidates:
        return min(candidates)
    a = naive.replace(tzinfo=tz, fold=0).astimezone(UTC)
    b = naive.replace(tzinfo=tz, fold=1).astimezone(UTC)
    lo, hi = min(a, b), max(a, b)
    after = hi.astimezone(tz).utcoffset()
    # The smallest instant in (lo, hi] with the offset after the gap.
    lo_s, hi_s = int(lo.timestamp()), int(hi.timestamp())
    while hi_s - lo_s > 1:
        mid = (lo_s + hi_s) // 2
        if datetime.fromtimestamp(mid, UTC).astimezone(tz).utcoffset() == after:
            hi_s = mid
        else:
            lo_s = mid
    return datetime.fromtimestamp(hi_s, UTC)


def local_of(t, tz):
    return t.astimezone(tz).replace(tzinfo=None)


DURATION = re.compile(r"^P(?:(\d+)W)?(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+)S)?)?$")


@lru_cache(maxsize=None)
def duration(text):
    """(calendar days, exact timedelta)."""
    m = DURATION.match(text)
    if not m:
        raise ValueError(text)
    w, d, h, mi, s = (int(x) if x else 0 for x in m.groups())
    return 7 * w + d, timedelta(hours=h, minutes=mi, seconds=s)


def add(t, tz, dur):
    days, exact = dur
    if days:
        t = resolve(local_of(t, tz) + timedelta(days=days), tz)
    return t + exact


def sub(t, tz, dur):
    days, exact = dur
    if days:
        t = resolve(local_of(t, tz) - timedelta(days=days), tz)
    return t - exact


@lru_cache(maxsize=None)
def parse_time(text):
    return datetime.strptime(text, "%H:%M").time()


def starts(spec, tz, lo, hi):
    """Wall-clock starts of a recurring spec within [lo, hi] (naive)."""
    start_time = parse_time(spec["start_time"]) if spec.get("start_time") else None
    dtstart = datetime.combine(parse_local(spec.get("from") or "2000-01-01").date(), start_time) if start_time else None
    out = set()
    for rule in spec.get("rules", []):
        parts = [p for p in rule.split(";") if p]
        until_local = until_utc = None
        kept = []
        for p in parts:
            k, v = p.split("=", 1)
            if k.upper() == "UNTIL":
                if v.endswith("Z"):
                    until_utc = datetime.strptime(v, "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC)
                else:
                    until_local = datetime.strptime(v, "%Y%m%dT%H%M%S")
            else:
                kept.append(p)
        r = rrulestr(";".join(kept), dtstart=dtstart)
        for t in r:
            if t > hi:
                break
            if until_local is not None and t > until_local:
                break
            if until_utc is not None and resolve(t, tz) > until_utc:
                break
            if t >= lo:
                out.add(t)
    for d in spec.get("rdate", []):
        t = parse_local(d)
        if lo <= t <= hi:
            out.add(t)
    for d in spec.get("exdate", []):
        out.discard(parse_local(d))
    return sorted(out)


def instances(spec, tz, lo, hi):
    """(start, end) UTC instants of a schedule touching [lo, hi)."""
    out = []
    if "once" in spec:
        s, e = resolve(parse_local(spec["once"]["start"]), tz), resolve(parse_local(spec["once"]["end"]), tz)
        out.append((s, max(s, e)))
    else:
        slack = timedelta(days=3) + (timedelta(days=duration(spec["duration"])[0]) + duration(spec["duration"])[1] if "duration" in spec else timedelta(days=1))
        start_time = parse_time(spec["start_time"]) if spec.get("start_time") else None
        et = parse_time(spec["end_time"]) if "end_time" in spec else None
        if et is not None:
            # Every occurrence lasts the rule's wall-clock length, start_time to end_time (the
            # next day when not after it), an RDATE at another time of day too.
            wall = datetime.combine(datetime.min, et) - datetime.combine(datetime.min, start_time)
            if wall <= timedelta(0):
                wall += timedelta(days=1)
        by_start = {}
        for ls in starts(spec, tz, (lo - slack).replace(tzinfo=None), (hi + timedelta(days=2)).replace(tzinfo=None)):
            s = resolve(ls, tz)
            if et is not None:
                e = resolve(ls + wall, tz)
            else:
                days, exact = duration(spec["duration"])
                e = resolve(ls + timedelta(days=days), tz) + exact
            # The recurrence set is a set of instants: two wall-clock starts in one DST gap are
            # one occurrence, the longer.
            by_start[s] = max(by_start.get(s, s), e)
        out.extend(sorted(by_start.items()))
    return [(s, e) for (s, e) in out if s < hi and (e > lo or (s == e and s >= lo))]


def occurrences(cal, lo, hi):
    """Every window occurrence intersecting [lo, hi): (window, event, start, end)."""
    events = {e["id"]: e for e in cal["events"]}
    out = []
    for w in cal["windows"]:
        if "event_ids" in w:
            lead, lag = duration(w.get("lead", "PT0S")), duration(w.get("lag", "PT0S"))
            reach = timedelta(days=lead[0] + lag[0] + 2) + lead[1] + lag[1]
            for eid in w["event_ids"]:
                ev = events[eid]
                tz = zone(ev["tz"])
                for s, e in instances(ev, tz, lo - reach - timedelta(days=40), hi + reach):
                    ws, we = sub(s, tz, lead), add(e, tz, lag)
                    if ws < hi and we > lo and ws < we:
                        out.append((w["id"], eid, ws, we))
        else:
            tz = zone(w["tz"])
            for s, e in instances(w, tz, lo, hi):
                if s < e:
                    out.append((w["id"], None, s, e))
    return out


def merge(intervals):
    out = []
    for a, b in sorted(i for i in intervals if i[0] < i[1]):
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return out


def subtract(span, holes):
    out, cursor = [], span[0]
    for a, b in merge(holes):
        if b <= cursor or a >= span[1]:
            continue
        if a > cursor:
            out.append((cursor, a))
        cursor = max(cursor, b)
    if cursor < span[1]:
        out.append((cursor, span[1]))
    return out


class Oracle:
    def __init__(self, cal, lo, hi):
        self.cal = cal
        self.kinds = {w["id"]: w["kind"] for w in cal["windows"]}
        self.allow_regime = any(k == "allow" for k in self.kinds.values())
        self.all = occurrences(cal, lo, hi)

    def within(self, lo, hi):
        return [o for o in self.all if o[2] < hi and o[3] > lo]

    def blocked(self, lo, hi):
        blocked, allowed = [], []
        for w, _, s, e in self.within(lo, hi):
            if self.kinds[w] == "deny":
                blocked.append((max(s, lo), min(e, hi)))
            else:
                allowed.append((s, e))
        if self.allow_regime:
            blocked += subtract((lo, hi), allowed)
        return merge(blocked)

    def next_open(self, after, minimum):
        end = after + HORIZON
        cursor = after
        for a, b in self.blocked(after, end):
            gap = a - cursor
            if gap > timedelta(0) and gap >= minimum:
                return cursor
            cursor = max(cursor, b)
        if end - cursor > timedelta(0) and end - cursor >= minimum:
            return cursor
        return None

    def open_until(self, t):
        b = self.blocked(t, t + HORIZON)
        return b[0][0] if b else None

    def status(self, t):
        active = self.within(t, t + timedelta(microseconds=1))
        deny = any(self.kinds[w] == "deny" for w, _, _, _ in active)
        inside_allow = any(self.kinds[w] == "allow" for w, _, _, _ in active)
        frozen = deny or (self.allow_regime and not inside_allow)
        return frozen, (self.next_open(t, timedelta(0)) if frozen else t)


def check(case):
    q, answers = case["queries"], case["sluice"]
    instants = [parse_utc(q["list"][0]), parse_utc(q["list"][1])]
    instants += [parse_utc(t) for t in q["status"]] + [parse_utc(a) for a, _ in q["next_open"]]
    lo, hi = min(instants) - timedelta(days=2), max(instants) + HORIZON + timedelta(days=2)
    oracle = Oracle(case["calendar"], lo, hi)
    problems = []
    lf, lt = parse_utc(q["list"][0]), parse_utc(q["list"][1])
    mine = sorted((w, e, fmt(s), fmt(t)) for w, e, s, t in oracle.within(lf, lt))
    theirs = sorted(tuple(r) for r in answers["list"])
    if mine != theirs:
        problems.append({"check": "list", "from": q["list"][0], "to": q["list"][1],
                         "oracle_only": sorted(set(mine) - set(theirs)), "sluice_only": sorted(set(theirs) - set(mine))})
    for t, (frozen, next_open) in zip(q["status"], answers["status"]):
        f, n = oracle.status(parse_utc(t))
        if f != frozen or fmt(n) != next_open:
            problems.append({"check": "status", "at": t, "oracle": [f, fmt(n)], "sluice": [frozen, next_open]})
    for (after, minimum), (next_open, open_until) in zip(q["next_open"], answers["next_open"]):
        n = oracle.next_open(parse_utc(after), timedelta(seconds=minimum))
        u = oracle.open_until(n) if n is not None else None
        if fmt(n) != next_open or fmt(u) != open_until:
            problems.append({"check": "next-open", "after": after, "min_seconds": minimum,
                             "oracle": [fmt(n), fmt(u)], "sluice": [next_open, open_until]})
    return problems


def main():
    cases = json.load(open(sys.argv[1]))
    failed = checks = 0
    for case in cases:
        checks += 1 + len(case["queries"]["status"]) + len(case["queries"]["next_open"])
        for p in check(case):
            failed += 1
            p["seed"] = case["seed"]
            print(json.dumps(p))
    print(json.dumps({"calendars": len(cases), "checks": checks, "disagreements": failed}), file=sys.stderr)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
