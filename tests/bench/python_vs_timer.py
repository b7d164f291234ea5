#!/usr/bin/env python3
"""python_vs_timer.py - one Python arm timed by ktrial and by PyTorch's own
torch.utils.benchmark.Timer.blocked_autorange, in the same run, to see that the bridge adds
nothing the other harness would not see (docs/python.md).

The arm is examples/python/my_attention.py:decode (framework torch), the attention_decode op at
one point. ktrial runs it as the candidate of a spec (against the built-in dense kernel) with
trials.flush_cache false, so each timed call follows an untimed call of its own (warm, as
blocked_autorange measures); its median per call is read from result.json. Then, in this
process, the same function is called on tensors of the same shapes (fp32, normal inputs:
attention's time does not depend on the values) under Timer.blocked_autorange. The two are
done ROUNDS times, alternating, and the medians of each compared: the ratio ktrial / Timer and
whether it is within 10%.

usage: tests/bench/python_vs_timer.py [BUILD_DIR] [--rounds=3] [--batch=4] [--context=1024]
                                      [--threads=1]
  BUILD_DIR default ./build. Run it on an idle machine; the load average is printed.
"""
import importlib.util
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.normpath(os.path.join(HERE, "..", ".."))
ARM = os.path.join(SOURCE, "examples", "python", "my_attention.py")
# qwen2.5-0.5b's attention: 14 query heads over 2 KV heads, head_dim 64
HEADS, KV_HEADS, HEAD_DIM = 14, 2, 64

SPEC = """version: 1
name: python-vs-timer
op: attention_decode
backend: cpu
dtype: fp32
threads: {threads}
models: [qwen2.5-0.5b]
batch_sizes: [{batch}]
context_lengths: [{context}]
inputs: {{distribution: normal, seed: 3, sets: 2}}
baseline: {{variant: dense}}
candidates:
  - {{name: mine, python: {arm}:decode, framework: torch}}
trials: {{warmup: 5, min_repetitions: 60, max_repetitions: 60, max_seconds_per_point: 30,
         flush_cache: false}}
thresholds: {{latency: {{min_speedup: 0.001}}}}
"""


def ktrial_median(build, tmp, args):
    spec = os.path.join(tmp, "spec.yaml")
    with open(spec, "w") as f:
        f.write(SPEC.format(arm=ARM, **args))
    out = os.path.join(tmp, "out")
    subprocess.run(["rm", "-rf", out], check=True)
    r = subprocess.run([os.path.join(build, "ktrial"), "run", spec, "-o", out, "--json"],
                       capture_output=True, text=True)
    if r.returncode not in (0, 1, 2):
        sys.exit(f"ktrial run failed ({r.returncode}): {r.stderr[-2000:]}")
    with open(os.path.join(out, "result.json")) as f:
        doc = json.load(f)
    cand = doc["points"][0]["candidates"][0]
    if cand["failed"]:
        sys.exit(f"the arm failed: {cand['failure']}")
    return cand["times"]["candidate"]["median_ns"]


def timer_median(args):
    import torch
    import torch.utils.benchmark as benchmark
    torch.set_num_threads(args["threads"])
    spec = importlib.util.spec_from_file_location("my_attention", ARM)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    b, t = args["batch"], args["context"]
    g = torch.Generator().manual_seed(3)
    q = torch.randn(b, HEADS, HEAD_DIM, generator=g)
    k = torch.randn(b, KV_HEADS, t, HEAD_DIM, generator=g)
    v = torch.randn(b, KV_HEADS, t, HEAD_DIM, generator=g)
    out = torch.empty(b, HEADS, HEAD_DIM)
    problem = {"batch": b, "heads": HEADS, "kv_heads": KV_HEADS, "head_dim": HEAD_DIM,
               "context": t, "op": "attention_decode", "dtype": "fp32",
               "threads": args["threads"]}
    timer = benchmark.Timer(stmt="fn([q, k, v], [out], problem)",
                            globals={"fn": mod.decode, "q": q, "k": k, "v": v, "out": out,
                                     "problem": problem},
                            num_threads=args["threads"])
    return timer.blocked_autorange(min_run_time=2.0).median * 1e9


def main():
    build = os.path.join(SOURCE, "build")
    args = {"rounds": 3, "batch": 4, "context": 1024, "threads": 1}
    for a in sys.argv[1:]:
        if a.startswith("--") and "=" in a:
            key, value = a[2:].split("=", 1)
            args[key] = int(value)
        else:
            build = a
    print(f"load average before: {os.getloadavg()}", file=sys.stderr)
    kt, tm = [], []
    with tempfile.TemporaryDirectory(prefix="kt-pytimer-") as tmp:
        for r in range(args["rounds"]):
            kt.append(ktrial_median(build, tmp, args))
            tm.append(timer_median(args))
            print(f"round {r + 1}: ktrial {kt[-1] / 1e3:.1f} us, Timer {tm[-1] / 1e3:.1f} us",
                  file=sys.stderr)
    print(f"load average after: {os.getloadavg()}", file=sys.stderr)
    k, t = statistics.median(kt), statistics.median(tm)
    ratio = k / t
    print("| harness | median per call (us), per round | median of the rounds (us) |")
    print("|---|---|---|")
    print(f"| ktrial (Python arm, warm) | {', '.join(f'{x / 1e3:.1f}' for x in kt)} | "
          f"{k / 1e3:.1f} |")
    print(f"| torch.utils.benchmark blocked_autorange | "
          f"{', '.join(f'{x / 1e3:.1f}' for x in tm)} | {t / 1e3:.1f} |")
    print(f"\nratio ktrial / Timer: {ratio:.3f} ({'within' if abs(ratio - 1) <= 0.10 else 'NOT within'}"
          f" 10%); batch {args['batch']}, context {args['context']}, threads {args['threads']}")
    return 0 if abs(math.log(ratio)) <= math.log(1.10) else 1


if __name__ == "__main__":
    sys.exit(main())
