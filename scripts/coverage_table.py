#!/usr/bin/env python3
"""Lines % and functions % per module, from `llvm-cov export -summary-only` (scripts/coverage.sh).

Usage: coverage_table.py COVERAGE.json SOURCES_DIR

llvm-cov reports per file; a module is a folder Sources/Survey*/, so the files' counts are
summed by folder. Files elsewhere (tests, the executables, the C shims, generated sources) count
neither in a module nor in the total.

The figures are llvm-cov report's: a file's lines are the sum of its functions' lines, so a
closure's lines count in the closure and again in the function around it; and its functions
include Swift's implicit closures (the right side of &&, || and ??, autoclosure arguments).
"""
import json
import os
import sys


def main():
    path, sources = sys.argv[1], os.path.abspath(sys.argv[2]) + os.sep
    with open(path) as f:
        files = json.load(f)["data"][0]["files"]
    modules = {}
    for entry in files:
        name = entry["filename"]
        if not name.startswith(sources):
            continue
        module = name[len(sources):].split(os.sep, 1)[0]
        if not module.startswith("Survey"):
            continue
        summary = entry["summary"]
        counts = modules.setdefault(module, [0, 0, 0, 0])
        counts[0] += summary["lines"]["covered"]
        counts[1] += summary["lines"]["count"]
        counts[2] += summary["functions"]["covered"]
        counts[3] += summary["functions"]["count"]

    def percent(covered, count):
        return f"{100 * covered / count:6.1f} %" if count else "     - "

    rows = sorted(modules.items()) + [("total", [sum(c[i] for c in modules.values()) for i in range(4)])]
    print(f"{'module':<18} {'lines':>8} {'of':>7} {'functions':>10} {'of':>6}")
    for module, (lc, ln, fc, fn) in rows:
        if module == "total":
            print("-" * 53)
        print(f"{module:<18} {percent(lc, ln):>8} {ln:>7} {percent(fc, fn):>10} {fn:>6}")


if __name__ == "__main__":
    main()
