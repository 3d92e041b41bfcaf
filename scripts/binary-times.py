#!/usr/bin/env python3
"""Passes `cargo test` output through unchanged and, at its end, prints how
long each test binary ran (wall clock, from its "Running" line to the next
binary's), the slowest first. scripts/test.sh pipes the suite through it
so that every run, CI's too, says where its time went.

    cargo test ... 2>&1 | python3 scripts/binary-times.py [--top N]
"""

import sys
import time


def main() -> int:
    top = 10
    if len(sys.argv) == 3 and sys.argv[1] == "--top":
        top = int(sys.argv[2])
    times = []
    current = None
    started = time.monotonic()
    began = started
    for line in sys.stdin:
        sys.stdout.write(line)
        sys.stdout.flush()
        text = line.strip()
        # "Running unittests src/lib.rs (target/debug/deps/x-123)",
        # "Running tests/cli/main.rs (target/debug/deps/cli-456)",
        # "Doc-tests sonde_model"
        if text.startswith("Running ") or text.startswith("Doc-tests "):
            now = time.monotonic()
            if current is not None:
                times.append((now - started, current))
            current = binary_name(text)
            started = now
    now = time.monotonic()
    if current is not None:
        times.append((now - started, current))
    if not times:
        return 0
    times.sort(reverse=True)
    print(f"\nslowest test binaries (of {len(times)}, "
          f"{now - began:.0f} s in all, build included):")
    for seconds, name in times[:top]:
        print(f"  {seconds:7.1f} s  {name}")
    return 0


def binary_name(text: str) -> str:
    """`Running tests/cli/main.rs (target/debug/deps/cli-4f…)` becomes
    `cli (tests/cli/main.rs)`; a unit-test binary is named by its crate."""
    if text.startswith("Doc-tests "):
        return "doc-tests " + text.split()[1]
    parts = text.split()
    source = parts[1] if len(parts) > 1 else "?"
    binary = parts[-1].strip("()").rsplit("/", 1)[-1].rsplit("-", 1)[0]
    return f"{binary} ({source})"


if __name__ == "__main__":
    sys.exit(main())
