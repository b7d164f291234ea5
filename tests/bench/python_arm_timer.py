#!/usr/bin/python3
"""python_arm_timer.py - one Python arm timed two ways in the same run: by ktrial (a pymodule
experiment whose baseline and candidate are the same module, cache flush off, one thread) and by
torch.utils.benchmark.Timer.blocked_autorange on the same module, inputs and thread count.
Prints both medians per call and their ratio; the figures of docs/benchmarks/python-arm.md come
from here. Not a test: its figures depend on the machine and its load.

    /usr/bin/python3 tests/bench/python_arm_timer.py [BUILD_DIR] [PROBLEM] [GLOBALS_YAML]
"""
import importlib.util
import json
import os
import subprocess
import sys
import tempfile

os.environ["OPENBLAS_NUM_THREADS"] = "1"  # as ktrial's worker sets it for threads: 1
import torch  # noqa: E402
import torch.utils.benchmark as benchmark  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
build = sys.argv[1] if len(sys.argv) > 1 else "build"
problem = os.path.abspath(sys.argv[2]) if len(sys.argv) > 2 else os.path.join(
    ROOT, "examples", "kernelbench", "problems", "23_Softmax.py")
globals_ = sys.argv[3] if len(sys.argv) > 3 else "{batch_size: 16, dim: 16384}"
ktrial = os.path.join(ROOT, build, "ktrial")

work = tempfile.mkdtemp(prefix="kt-pyarm-")
spec = os.path.join(work, "spec.yaml")
with open(spec, "w") as f:
    f.write(f"""version: 1
name: python-arm-timer
op: pymodule
problem: {problem}
globals: {globals_}
threads: 1
baseline: {{class: Model}}
candidates:
  - {{name: same, file: {problem}, class: Model}}
inputs: {{seed: 3, sets: 3}}
trials: {{warmup: 5, min_repetitions: 200, max_repetitions: 200, max_seconds_per_point: 120,
          flush_cache: false}}
thresholds: {{numerics: {{max_rel_l2: 1.0e-4}}, latency: {{min_speedup: 1.0}}}}
""")
out = os.path.join(work, "run")
r = subprocess.run([ktrial, "run", spec, "-o", out], capture_output=True, text=True)
if not os.path.exists(os.path.join(out, "result.json")):
    sys.exit(f"ktrial run failed:\n{r.stderr}")
with open(os.path.join(out, "result.json")) as f:
    cand = json.load(f)["points"][0]["candidates"][0]
ns = sorted(p["candidate_ns"] for p in cand["pairs"])
kt_median = ns[len(ns) // 2]

# the same module, inputs and threads under torch's own timer
spec_ = importlib.util.spec_from_file_location("problem", problem)
mod = importlib.util.module_from_spec(spec_)
spec_.loader.exec_module(mod)
for key, value in (kv.split(":") for kv in globals_.strip("{}").split(",")):
    setattr(mod, key.strip(), int(value))
torch.set_num_threads(1)
torch.set_grad_enabled(False)
torch.manual_seed(3)
model = mod.Model(*mod.get_init_inputs())
inputs = mod.get_inputs()
timer = benchmark.Timer(stmt="model(*inputs)", globals={"model": model, "inputs": inputs},
                        num_threads=1)
m = timer.blocked_autorange(min_run_time=2.0)
tb_median = m.median * 1e9

load = open("/proc/loadavg").read().split()[:3]
commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True,
                        text=True).stdout.strip()
print(f"commit {commit}, load {' '.join(load)}, torch {torch.__version__}, problem "
      f"{os.path.basename(problem)} {globals_}")
print(f"ktrial:                 median {kt_median / 1e3:9.2f} us over {len(cand['pairs'])} timed calls")
print(f"torch Timer (blocked):  median {tb_median / 1e3:9.2f} us over {len(m.times)} blocks of "
      f"{m.number_per_run} calls")
print(f"ratio ktrial / Timer:   {kt_median / tb_median:.3f}")
