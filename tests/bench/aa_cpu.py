#!/usr/bin/env python3
"""aa_cpu.py - how often ktrial gives a wrong verdict when the candidate IS the baseline, on this
machine's real CPU kernels (the statistics' own A/A tables in docs/statistics.md run on the sim
backend, whose samples are independent by construction; real calls are not).

Runs `ktrial run` N times on an A/A spec (the same variant and params as baseline and
candidate, `min_speedup` 1 by default, so KEEP and REJECT are both wrong) and prints one
markdown row per run (verdict, speedup and interval, pairs, looks, the order-effect shift, the
noisy pairs) and a summary: verdict counts and the wrong-verdict rate with a 95% Wilson
interval. With a second binary (--other), the runs alternate between the two, so load from
elsewhere falls on both alike, and each gets its own summary.

usage: tests/bench/aa_cpu.py [BUILD_DIR] [--runs=N] [--other=KTRIAL] [--variant=dense]
                             [--op=attention_decode] [--model=llama-3.2-1b] [--context=1024]
                             [--threads=1] [--seconds=2] [--min-speedup=1.0] [--cpu=0]
  BUILD_DIR default ./build; N default 16; --cpu: the core the runs are pinned to (taskset),
  "none" for no pinning. About N x (seconds + 1.5) s per binary. Run it on an idle machine
  (the load average is printed before and after); progress on stderr.
"""
import json
import math
import os
import subprocess
import sys
import tempfile

SPEC = """version: 1
name: aa-{variant}
op: {op}
backend: cpu
dtype: bf16
threads: {threads}
models: [{model}]
batch_sizes: [{batch}]
{axis}
inputs: {{distribution: normal, seed: 7, sets: 2}}
baseline: {{variant: {variant}}}
candidates:
  - {{name: same, variant: {variant}}}
trials: {{warmup: 1, min_repetitions: 10, max_repetitions: 200000,
         max_seconds_per_point: {seconds}, order: random, flush_cache: true, profile: false}}
thresholds:
  latency: {{min_speedup: {min_speedup}}}
"""


def parse(argv):
    o = {"build": "build", "runs": 16, "other": None, "variant": "dense",
         "op": "attention_decode", "model": "llama-3.2-1b", "context": 1024, "threads": 1,
         "seconds": 2.0, "min_speedup": 1.0, "cpu": "0"}
    for a in argv:
        if a.startswith("--") and "=" in a:
            k, v = a[2:].split("=", 1)
            k = k.replace("-", "_")
            if k not in o or k == "build":
                sys.exit("usage: see the head of " + sys.argv[0])
            o[k] = type(o[k])(v) if o[k] is not None and k != "cpu" else v
        elif not a.startswith("--"):
            o["build"] = a
        else:
            sys.exit("usage: see the head of " + sys.argv[0])
    return o


def wilson(k, n, z=1.96):
    if n == 0:
        return (math.nan, math.nan)
    p = k / n
    c = (p + z * z / (2 * n)) / (1 + z * z / n)
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (max(0.0, c - h), min(1.0, c + h))


def one_run(ktrial, spec, out, cpu):
    cmd = [ktrial, "run", spec, "-o", out]
    if cpu != "none":
        cmd = ["taskset", "-c", cpu] + cmd
    p = subprocess.run(cmd, capture_output=True, text=True)
    with open(os.path.join(out, "result.json")) as f:
        doc = json.load(f)
    c = doc["points"][0]["candidates"][0]
    return {"rc": p.returncode, "verdict": c["verdict"], "speedup": c["speedup"],
            "ci": c["ci"], "pairs": c["n_pairs"], "looks": c["looks"],
            "order": c["order_effect"], "noisy": c["noisy_pairs"],
            "sets": c.get("set_effect", {"p_value": math.nan, "shift": math.nan,
                                         "warning": False})}


def loadavg():
    with open("/proc/loadavg") as f:
        return f.read().split()[0]


def main():
    o = parse(sys.argv[1:])
    binaries = [("main", os.path.join(o["build"], "ktrial"))]
    if o["other"]:
        binaries.append(("other", o["other"]))
    for _, b in binaries:
        if not os.access(b, os.X_OK):
            sys.exit(f"aa_cpu.py: {b} not found; build first")
    # gemm: the model's qkv projection in decode at batch 'context', so --context=16 is M = 16
    if o["op"] == "attention_decode":
        batch, axis = 1, "context_lengths: [%d]" % o["context"]
    else:
        batch, axis = o["context"], "context_lengths: [32]\nphases: [decode]\nroles: [qkv]"
    tmp = tempfile.mkdtemp(prefix="kt_aa.")
    spec = os.path.join(tmp, "aa.yaml")
    with open(spec, "w") as f:
        f.write(SPEC.format(axis=axis, batch=batch, **o))
    print(f"load average before: {loadavg()}; {o['runs']} A/A runs per binary of "
          f"{o['variant']} ({o['op']}, {o['model']}, {o['context']}, {o['threads']} thread(s), "
          f"{o['seconds']} s a point, min_speedup {o['min_speedup']}, cpu {o['cpu']})\n")
    print("| binary | run | verdict | speedup [CI] | pairs | looks | order shift (p) | "
          "input-set shift (p) | noisy |")
    print("|---|---:|---|---|---:|---:|---|---|---:|")
    rows = {name: [] for name, _ in binaries}
    for i in range(o["runs"]):
        order = binaries if i % 2 == 0 else binaries[::-1]
        for name, b in order:
            out = os.path.join(tmp, f"{name}-{i}")
            print(f"[{i + 1}/{o['runs']}] {name}", file=sys.stderr)
            r = one_run(b, spec, out, o["cpu"])
            rows[name].append(r)
            sh, ss = r["order"], r["sets"]
            print(f"| {name} | {i + 1} | {r['verdict']} | {r['speedup']:.4f} "
                  f"[{r['ci'][0]:.4f}, {r['ci'][1]:.4f}] | {r['pairs']} | {r['looks']} | "
                  f"{sh['shift']:+.4f} ({sh['p_value']:.2g}) | "
                  f"{ss['shift']:+.4f} ({ss['p_value']:.2g}) | {r['noisy']} |")
    print(f"\nload average after: {loadavg()}\n")
    for name, _ in binaries:
        rs = rows[name]
        counts = {v: sum(r["verdict"] == v for r in rs) for v in
                  ("KEEP", "REJECT", "INCONCLUSIVE")}
        wrong = counts["KEEP"] + counts["REJECT"] if o["min_speedup"] == 1.0 else None
        s = sorted(r["speedup"] for r in rs)
        line = (f"{name}: {counts['KEEP']} KEEP, {counts['REJECT']} REJECT, "
                f"{counts['INCONCLUSIVE']} INCONCLUSIVE of {len(rs)}; speedups "
                f"{s[0]:.4f}-{s[-1]:.4f}; order effect flagged in "
                f"{sum(r['order']['warning'] for r in rs)}, input sets differ in "
                f"{sum(r['sets']['warning'] for r in rs)}")
        flagged = sum(r["verdict"] != "INCONCLUSIVE" and r["sets"]["warning"] for r in rs)
        if wrong is not None:
            lo, hi = wilson(wrong, len(rs))
            line += (f"; wrong verdicts {wrong}/{len(rs)} = {wrong / len(rs):.0%} "
                     f"[{lo:.0%}, {hi:.0%}] (the statistics allow 5%), {flagged} of them "
                     f"with the input-set warning")
        print(line)


if __name__ == "__main__":
    main()
