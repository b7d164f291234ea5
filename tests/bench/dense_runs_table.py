#!/usr/bin/env python3
"""dense_runs_table.py - merge the dense tables of several `bench_attention --dense` runs (its
stdout saved to files) into one markdown table: per row each run's dense time, read pass and
fraction of the read pass, then the lowest and highest fraction, and per dtype the lowest
fraction at contexts >= 16K in every run. The README's dense table comes from it, because on
this VM one run's fractions move by tens of points with the machine's memory bandwidth.

usage: tests/bench/dense_runs_table.py RUN1.md RUN2.md ...
"""
import sys


def rows(path):
    """{(model, dtype, context): {column: value}} from one run's dense table."""
    out, cols = {}, None
    with open(path, encoding="utf-8") as f:
        for line in f:
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if cells[:2] == ["model", "d"]:
                cols = cells
            elif cols and line.startswith("| ") and len(cells) == len(cols):
                r = dict(zip(cols, cells))
                out[(r["model"], r["dtype"], int(r["context"]))] = r
    if not out:
        sys.exit(f"dense_runs_table.py: {path}: no dense table (bench_attention --dense output?)")
    return out


def pct(s):
    return float(s.rstrip("%"))


def main(paths):
    runs = [rows(p) for p in paths]
    keys = [k for k in runs[0] if all(k in r for r in runs)]
    n = len(runs)
    print("| model | d | heads / kv | dtype | context | dense ms (runs) | read pass GB/s (runs) "
          "| of read pass (runs) | lowest | highest |")
    print("|---|---:|---:|---|---:|---:|---:|---:|---:|---:|")
    for k in keys:
        first = runs[0][k]
        fr = [pct(r[k]["of read pass"]) for r in runs]
        print(f"| {k[0]} | {first['d']} | {first['heads / kv']} | {k[1]} | {k[2]} | "
              + " / ".join(r[k]["dense ms"] for r in runs) + " | "
              + " / ".join(r[k]["read pass GB/s"] for r in runs) + " | "
              + " / ".join(r[k]["of read pass"] for r in runs)
              + f" | {min(fr):.0f}% | {max(fr):.0f}% |")
    print()
    for dtype in ("bf16", "fp32"):
        low = [min(pct(r[k]["of read pass"]) for k in keys if k[1] == dtype and k[2] >= 16384)
               for r in runs]
        if low:
            print(f"dense {dtype} at contexts >= 16K, lowest fraction of the read pass in each of "
                  f"the {n} runs: " + ", ".join(f"{x:.0f}%" for x in low)
                  + f"; target 85%: {'met' if min(low) >= 85 else 'not met'}")
            print()


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
