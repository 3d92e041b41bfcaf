#!/usr/bin/env python3
"""Read an iperf3 `-J` document the way a script written for iperf3 does.

Usage: iperf3_json_check.py [--bidir] FILE

Prints one JSON line with the fields such scripts commonly read, and exits
non-zero, naming the key, if the document lacks one of them (or holds the
wrong kind of value there). `--bidir` says the test ran with --bidir, so the
reverse-direction sums are read too. Works on iperf3 3.11 and later (UDP
`end.sum_sent`/`end.sum_received` appeared in 3.11) and on
`sonde ... --json=iperf3`. Python 3 standard library only.
"""

import json
import sys


class Missing(Exception):
    """A field the script reads is absent or not of the expected kind."""


def get(doc, path, kind=None):
    """The value at `path` ("end.streams.0.sender.bytes"), checked to be `kind`."""
    value = doc
    for key in path.split("."):
        try:
            value = value[int(key)] if isinstance(value, list) else value[key]
        except (KeyError, IndexError, TypeError, ValueError):
            raise Missing(f"missing key: {path}")
    if kind == "int" and (isinstance(value, bool) or not isinstance(value, int)):
        raise Missing(f"not an integer: {path} = {value!r}")
    if kind == "number" and (isinstance(value, bool) or not isinstance(value, (int, float))):
        raise Missing(f"not a number: {path} = {value!r}")
    if kind == "str" and not isinstance(value, str):
        raise Missing(f"not a string: {path} = {value!r}")
    if kind == "list" and not isinstance(value, list):
        raise Missing(f"not a list: {path} = {value!r}")
    return value


def start_fields(doc):
    ts = "start.test_start"
    connected = get(doc, "start.connected", "list")
    return {
        "protocol": get(doc, f"{ts}.protocol", "str"),
        "num_streams": get(doc, f"{ts}.num_streams", "int"),
        "blksize": get(doc, f"{ts}.blksize", "int"),
        "duration": get(doc, f"{ts}.duration", "number"),
        "reverse": get(doc, f"{ts}.reverse", "int"),
        "connected": [
            {
                "local_host": get(doc, f"start.connected.{i}.local_host", "str"),
                "local_port": get(doc, f"start.connected.{i}.local_port", "int"),
                "remote_host": get(doc, f"start.connected.{i}.remote_host", "str"),
                "remote_port": get(doc, f"start.connected.{i}.remote_port", "int"),
            }
            for i in range(len(connected))
        ],
    }


def interval_fields(doc):
    intervals = get(doc, "intervals", "list")
    return {
        "intervals": len(intervals),
        "interval_bits_per_second": [
            get(doc, f"intervals.{i}.sum.bits_per_second", "number")
            for i in range(len(intervals))
        ],
    }


def tcp_fields(doc, suffix):
    sent, received = f"end.sum_sent{suffix}", f"end.sum_received{suffix}"
    return {
        f"sent_bytes{suffix}": get(doc, f"{sent}.bytes", "int"),
        f"sent_bits_per_second{suffix}": get(doc, f"{sent}.bits_per_second", "number"),
        f"retransmits{suffix}": get(doc, f"{sent}.retransmits", "int"),
        f"received_bytes{suffix}": get(doc, f"{received}.bytes", "int"),
        f"received_bits_per_second{suffix}": get(
            doc, f"{received}.bits_per_second", "number"
        ),
    }


def tcp_streams(doc):
    streams = get(doc, "end.streams", "list")
    return {
        "streams": [
            {
                "sender_bytes": get(doc, f"end.streams.{i}.sender.bytes", "int"),
                "receiver_bytes": get(doc, f"end.streams.{i}.receiver.bytes", "int"),
            }
            for i in range(len(streams))
        ]
    }


def udp_fields(doc, suffix):
    s, sent, received = f"end.sum{suffix}", f"end.sum_sent{suffix}", f"end.sum_received{suffix}"
    return {
        f"jitter_ms{suffix}": get(doc, f"{s}.jitter_ms", "number"),
        f"lost_packets{suffix}": get(doc, f"{s}.lost_packets", "int"),
        f"packets{suffix}": get(doc, f"{s}.packets", "int"),
        f"lost_percent{suffix}": get(doc, f"{s}.lost_percent", "number"),
        f"sent_bytes{suffix}": get(doc, f"{sent}.bytes", "int"),
        f"sent_packets{suffix}": get(doc, f"{sent}.packets", "int"),
        f"received_bytes{suffix}": get(doc, f"{received}.bytes", "int"),
        f"received_packets{suffix}": get(doc, f"{received}.packets", "int"),
        f"received_lost_packets{suffix}": get(doc, f"{received}.lost_packets", "int"),
        f"received_bits_per_second{suffix}": get(
            doc, f"{received}.bits_per_second", "number"
        ),
    }


def read(doc, bidir):
    fields = start_fields(doc)
    fields.update(interval_fields(doc))
    suffixes = ["", "_bidir_reverse"] if bidir else [""]
    if fields["protocol"] == "TCP":
        for suffix in suffixes:
            fields.update(tcp_fields(doc, suffix))
        fields.update(tcp_streams(doc))
    elif fields["protocol"] == "UDP":
        for suffix in suffixes:
            fields.update(udp_fields(doc, suffix))
    else:
        raise Missing(f"unknown protocol: start.test_start.protocol = {fields['protocol']!r}")
    return fields


def main(argv):
    args = argv[1:]
    bidir = "--bidir" in args
    files = [a for a in args if a != "--bidir"]
    if len(files) != 1:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    try:
        with open(files[0], encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        print(f"{files[0]}: cannot read a JSON document: {e}", file=sys.stderr)
        return 2
    try:
        fields = read(doc, bidir)
    except Missing as e:
        print(f"{files[0]}: {e}", file=sys.stderr)
        return 1
    print(json.dumps(fields, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
