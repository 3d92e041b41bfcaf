#!/usr/bin/env python3
"""Read an iperf3 `-J` document with two readers no one in sonde wrote.

Usage: iperf3_consumers.py FILE [EXIT_STATUS]

1. The PyPI `iperf3` package (0.1.11): `iperf3.TestResult(text)`, which
   parses the JSON without libiperf. Its attributes are printed as read.
2. The fields perfSONAR pScheduler's iperf3 tool reads, from
   pscheduler-tool-iperf3/iperf3/iperf3_parser.py (parse_output and
   rename_json) and, for a failed run, pscheduler-tool-iperf3/iperf3/run
   (_make_result, which takes `error` from the JSON when iperf3 exits
   non-zero). Written here from reading that code, field by field:
     intervals                       required
     intervals[].streams[], .sum     optional; from each object the keys
                                     socket, start, end, bytes,
                                     bits_per_second, omitted, jitter_ms,
                                     packets, lost_packets, retransmits,
                                     snd_cwnd, rtt, mean_rtt
     end                             required
     end.sum_sent, else end.sum      one required (the summary)
     end.streams[].udp, else .sender optional (per-stream summaries)
     error                           when the exit status is non-zero

Prints one JSON object {"pypi": {...}, "pscheduler": {...}}; exits 1 naming
the field when a reader fails on the document. Python 3 and the iperf3
package (scripts/python-deps.sh).
"""

import json
import sys

import iperf3

PYPI_FIELDS = [
    "error", "protocol", "num_streams", "reverse", "blksize", "duration", "omit",
    "local_host", "local_port", "remote_host", "remote_port", "version",
    "system_info", "time", "timesecs", "tcp_mss_default", "local_cpu_total",
    "remote_cpu_total", "sent_bytes", "sent_bps", "sent_Mbps", "received_bytes",
    "received_bps", "received_Mbps", "retransmits", "bytes", "bps", "Mbps",
    "jitter_ms", "packets", "lost_packets", "lost_percent", "seconds",
]

# pScheduler's rename_json: iperf3 key -> pScheduler's name.
RENAMED = {
    "socket": "stream-id", "start": "start", "end": "end",
    "bytes": "throughput-bytes", "bits_per_second": "throughput-bits",
    "omitted": "omitted", "jitter_ms": "jitter", "packets": "sent",
    "lost_packets": "lost", "retransmits": "retransmits",
    "snd_cwnd": "tcp-window-size", "rtt": "rtt", "mean_rtt": "rtt",
}


class Refused(Exception):
    pass


def renamed(obj, where):
    if not isinstance(obj, dict):
        raise Refused(f"{where} is not an object")
    return {RENAMED[k]: v for k, v in obj.items() if k in RENAMED}


def pypi(text):
    try:
        result = iperf3.TestResult(text)
    except (KeyError, IndexError, TypeError) as e:
        raise Refused(f"iperf3.TestResult: missing {e!r}")
    if result.error is not None:
        # Only `error` is set then (its `reverse` and `type` properties
        # read `start` keys a failed iperf3 run does not write either).
        return {"error": result.error}
    out = {name: getattr(result, name) for name in PYPI_FIELDS if hasattr(result, name)}
    out["type"] = result.type
    return out


def pscheduler(text, status):
    doc = json.loads(text)
    if status != 0:
        error = doc.get("error") if isinstance(doc, dict) else None
        if not isinstance(error, str) or not error:
            raise Refused("a failed run's document has no error string")
        return {"succeeded": False, "error": f"iperf3 returned an error: {error}"}
    if "intervals" not in doc:
        raise Refused("missing intervals")
    intervals = []
    for i, interval in enumerate(doc["intervals"]):
        intervals.append({
            "streams": [renamed(s, f"intervals[{i}].streams[]") for s in interval.get("streams", [])],
            "summary": renamed(interval.get("sum", {}), f"intervals[{i}].sum"),
        })
    if "end" not in doc:
        raise Refused("missing end")
    end = doc["end"]
    if "sum_sent" in end:
        summary = renamed(end["sum_sent"], "end.sum_sent")
    elif "sum" in end:
        summary = renamed(end["sum"], "end.sum")
    else:
        raise Refused("end has neither sum_sent nor sum")
    streams = []
    for s in end.get("streams", []):
        if "udp" in s:
            streams.append(renamed(s["udp"], "end.streams[].udp"))
        elif "sender" in s:
            streams.append(renamed(s["sender"], "end.streams[].sender"))
    return {"succeeded": True, "intervals": intervals,
            "summary": {"streams": streams, "summary": summary}}


def main(argv):
    if len(argv) not in (2, 3):
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    status = int(argv[2]) if len(argv) == 3 else 0
    with open(argv[1], encoding="utf-8") as f:
        text = f.read()
    try:
        out = {"pypi": pypi(text), "pscheduler": pscheduler(text, status)}
    except Refused as e:
        print(f"{argv[1]}: {e}", file=sys.stderr)
        return 1
    print(json.dumps(out, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
