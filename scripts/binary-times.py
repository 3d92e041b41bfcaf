#!/usr/bin/env python3
"""How long each test binary ran, from `cargo test`'s output.

    cargo test ... 2>&1 | python3 scripts/binary-times.py --times FILE
        passes the output through unchanged and writes each binary's
        wall-clock time (from its "Running" line to the next binary's) to
        FILE, one "SECONDS<TAB>NAME" line each;
    python3 scripts/binary-times.py --summary FILE... [--top N]
        prints the slowest binaries of those files together.

scripts/test.sh runs the suite through it, so that every run, CI's too,
says where its time went.
"""

import argparse
import sys
import time


def main() -> int:
    args = argparse.ArgumentParser()
    args.add_argument("--times", help="where to write each binary's time")
    args.add_argument("--summary", nargs="+", help="time files to summarise")
    args.add_argument("--top", type=int, default=10)
    opts = args.parse_args()
    if opts.summary:
        return summary(opts.summary, opts.top)
    times = record(sys.stdin, sys.stdout)
    if opts.times:
        with open(opts.times, "w", encoding="utf-8") as f:
            for seconds, name in times:
                f.write(f"{seconds:.1f}\t{name}\n")
    return 0


def record(lines, out):
    """Copies `lines` to `out`; each binary's (seconds, name), then each
    test's (seconds, "test:BINARY NAME"): the time from the test before it
    in its binary finishing (or the binary starting) to its own end. Where
    a binary's tests run one at a time (the lab's take turns) that is the
    test's own time; where they run side by side it over-counts none and
    under-counts some, which still names the slow ones."""
    times, tests = [], []
    current = None
    started = last = time.monotonic()
    for line in lines:
        out.write(line)
        out.flush()
        text = line.strip()
        # "Running unittests src/lib.rs (target/debug/deps/x-123)",
        # "Running tests/cli/main.rs (target/debug/deps/cli-456)",
        # "Doc-tests sonde_model"
        if text.startswith("Running ") or text.startswith("Doc-tests "):
            now = time.monotonic()
            if current is not None:
                times.append((now - started, current))
            current = binary_name(text)
            started = last = now
        # "test lab_tcp::a_shaped_link ... ok"
        elif text.startswith("test ") and " ... " in text and current is not None:
            now = time.monotonic()
            name = text[len("test "):text.index(" ... ")]
            tests.append((now - last, f"test:{current.split()[0]} {name}"))
            last = now
    if current is not None:
        times.append((time.monotonic() - started, current))
    return times + tests


def summary(files, top: int) -> int:
    times, tests = [], []
    for path in files:
        try:
            with open(path, encoding="utf-8") as f:
                for line in f:
                    seconds, name = line.rstrip("\n").split("\t", 1)
                    if name.startswith("test:"):
                        tests.append((float(seconds), name[len("test:"):]))
                    else:
                        times.append((float(seconds), name))
        except FileNotFoundError:
            print(f"binary-times: no {path}", file=sys.stderr)
    times.sort(reverse=True)
    tests.sort(reverse=True)
    print(f"\nslowest test binaries (of {len(times)}, {sum(t for t, _ in times):.0f} s in all):")
    for seconds, name in times[:top]:
        print(f"  {seconds:7.1f} s  {name}")
    print(
        f"\nslowest tests (of {len(tests)}; each from the end of the test before it "
        "in its binary, its own time where the binary runs one at a time, as the lab does):"
    )
    for seconds, name in tests[: top * 2]:
        print(f"  {seconds:7.1f} s  {name}")
    return 0


def binary_name(text: str) -> str:
    """`Running tests/cli/main.rs (target/debug/deps/cli-4f…)` becomes
    `cli (tests/cli/main.rs)`; a unit-test binary is named by its crate."""
    if text.startswith("Doc-tests "):
        return "doc-tests " + text.split()[1]
    parts = text.split()
    source = " ".join(parts[1:-1]) if len(parts) > 2 else "?"
    binary = parts[-1].strip("()").rsplit("/", 1)[-1].rsplit("-", 1)[0]
    return f"{binary} ({source})"


if __name__ == "__main__":
    sys.exit(main())
