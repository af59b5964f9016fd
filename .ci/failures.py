#!/usr/bin/env python3
"""Reads a `cargo test --no-fail-fast` log and prints what failed, compactly.

Usage: failures.py LOG summary   -> one block per failed test: its name and panic message
       failures.py LOG reruns    -> one line per failed test: cargo args, then the test name

The end of a CI log is what a reader sees first, and cargo prints only the last failure's
message there; this names every failure with its message, so a noisy run can be told apart
from a real regression.
"""
import re
import sys


def failures(log):
    """(cargo args, test name, message lines) of every failed test, in order."""
    out = []
    pending = {}  # test name -> its panic message, for the binary running now
    name, capturing = None, False
    for line in log.splitlines():
        m = re.match(r"^---- (\S+) stdout ----$", line)
        if m:
            name, capturing = m.group(1), False
            pending[name] = []
            continue
        if name is not None:
            if line.startswith("failures:"):
                name = None
            elif "panicked at" in line:
                capturing = True
            elif line.startswith(("stack backtrace", "note:")):
                capturing = False
            if capturing and name is not None and len(pending[name]) < 6:
                pending[name].append(line.strip()[:400])
        m = re.match(r"^error: test failed, to rerun pass `(.+)`$", line)
        if m:
            out.extend((m.group(1), n, msg) for n, msg in pending.items())
            pending, name = {}, None
    return out


def main():
    log = open(sys.argv[1], errors="replace").read()
    found = failures(log)
    if sys.argv[2] == "reruns":
        for args, name, _ in found:
            print(f"{args}\t{name}")
        return
    for args, name, msg in found:
        print(f"FAILED {name} ({args})")
        for m in msg[:6]:
            print(f"    {m}")


if __name__ == "__main__":
    main()
