#!/usr/bin/env python3
"""A year of hourly results for bench/portal, as NDJSON for
`sonde results import`: each template (a real sonde result, -J) cloned
once an hour for 365 days back from the last full hour, with a new id and
start, and figures that follow the hour of day (a busy afternoon: less
TCP throughput, more UDP loss, more RTT), so the day heat map and the
year's chart have a shape.

    year.py tcp.json udp.json ping.json > year.ndjson
"""
import copy
import json
import math
import sys
import uuid
from datetime import datetime, timedelta, timezone

HOURS = 365 * 24


def busy(hour):
    """0 at night, 1 at 15:00 UTC."""
    return max(0.0, math.sin((hour - 9) / 12 * math.pi))


def shaped(doc, at, k):
    d = copy.deepcopy(doc)
    d["id"] = str(uuid.uuid4())
    d["start"] = (at + timedelta(minutes=5 * k)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    b = busy(at.hour)
    for section in d.get("summary", {}).values():
        if not isinstance(section, dict):
            continue
        if section.get("throughput_bps") is not None and d["test"] == "tcp":
            section["throughput_bps"] = int(9.4e6 * (1 - 0.4 * b))
        if section.get("loss_pct") is not None and d["test"] == "udp":
            section["loss_pct"] = round(0.5 * b, 3)
            section["pdr_pct"] = round(100 - 0.5 * b, 3)
        rtt = section.get("rtt_ms")
        if isinstance(rtt, dict):
            base = 20 + 15 * b
            for key in rtt:
                rtt[key] = base if key != "mdev" else 1.0
    return d


def main():
    templates = [json.load(open(p)) for p in sys.argv[1:]]
    end = datetime.now(timezone.utc).replace(minute=0, second=0, microsecond=0)
    out = sys.stdout
    for h in range(HOURS, 0, -1):
        at = end - timedelta(hours=h)
        for k, t in enumerate(templates):
            out.write(json.dumps(shaped(t, at, k)))
            out.write("\n")


main()
