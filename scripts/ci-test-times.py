#!/usr/bin/env python3
"""Where a nextest run's time went, from its JUnit report (.config/nextest.toml writes
target/nextest/default/junit.xml): test-seconds and test count per test binary, then the slowest
tests. .ci/run prints it after the tests; run it by hand on any report:

    python3 scripts/ci-test-times.py target/nextest/default/junit.xml [--slowest N]

Test-seconds add up every test's own wall time; nextest runs two at a time on CI's two cores, so
the run's wall time is about half their sum when no long test is left running alone at the end.
"""

import argparse
import sys
import xml.etree.ElementTree as ET


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("junit", help="nextest's JUnit XML report")
    parser.add_argument("--slowest", type=int, default=20, help="how many of the slowest tests to list")
    args = parser.parse_args()
    try:
        root = ET.parse(args.junit).getroot()
    except (OSError, ET.ParseError) as error:
        print(f"ci-test-times: {args.junit}: {error}", file=sys.stderr)
        return 1
    tests = []
    for case in root.iter("testcase"):
        binary = case.get("classname", "?")
        seconds = float(case.get("time", "0") or 0)
        outcome = "passed"
        if case.find("failure") is not None or case.find("error") is not None:
            outcome = "FAILED"
        elif case.find("skipped") is not None:
            outcome = "skipped"
        tests.append((seconds, binary, case.get("name", "?"), outcome))
    if not tests:
        print(f"ci-test-times: {args.junit} lists no test", file=sys.stderr)
        return 1
    total = sum(t[0] for t in tests)
    per_binary: dict[str, list[float]] = {}
    for seconds, binary, _, _ in tests:
        per_binary.setdefault(binary, []).append(seconds)
    print(f"== test-seconds per binary ({len(tests)} tests, {total:.0f} test-seconds in all)")
    print(f"{'test-s':>8} {'share':>6} {'tests':>6}  binary")
    for binary, times in sorted(per_binary.items(), key=lambda kv: -sum(kv[1])):
        print(f"{sum(times):8.1f} {100 * sum(times) / total:5.1f}% {len(times):6d}  {binary}")
    print(f"== the {min(args.slowest, len(tests))} slowest tests")
    print(f"{'s':>8}  test")
    for seconds, binary, name, outcome in sorted(tests, reverse=True)[: args.slowest]:
        mark = "" if outcome == "passed" else f"  ({outcome})"
        print(f"{seconds:8.1f}  {binary} {name}{mark}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
