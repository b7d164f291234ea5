"""Usage costs through the built binary: the profiling pass records CPU counters per arm (each
unsupported one with its reason, never a zero) and adds nothing to the timed samples; costs in
the spec give dollars per million tokens consistent with the run's own times; a setup gate
rejects a candidate whose prepare time is over the limit."""
import os
import shutil
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from ktrial_cli import SOURCE, run, sim_spec, validate_result  # noqa: E402


class UsageTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="kt-usage-")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def test_profile_adds_no_samples_and_records_counters(self):
        spec = sim_spec(os.path.join(self.tmp, "s.yaml"), batch_sizes=(1, 4))
        a, b = os.path.join(self.tmp, "a"), os.path.join(self.tmp, "b")
        p = run(["run", spec, "-o", a])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(run(["run", spec, "-o", b, "--no-profile"]).returncode, 0)
        # the same rows but for run_id (each run its own, the first column)
        drop_id = lambda f: [line.split(",", 1)[1] for line in f.read().splitlines()]
        with open(os.path.join(a, "samples.csv")) as f, open(os.path.join(b, "samples.csv")) as g:
            self.assertEqual(drop_id(f), drop_id(g))
        doc = validate_result(self, a)
        for point in doc["points"]:
            for arm in [point["baseline"], *point["candidates"]]:
                usage = arm["usage"]
                self.assertEqual(usage["calls"], 5)
                counters = usage["counters"]
                for name in ("task_clock_ns", "context_switches", "page_faults"):
                    self.assertIn(name, counters)
                for name, value in counters.items():
                    if isinstance(value, dict):  # unsupported: a reason, never a zero
                        self.assertTrue(value["unsupported"])
                    else:
                        self.assertGreaterEqual(value, 0)
                self.assertGreater(counters["task_clock_ns"], 0)
                energy = usage["energy"]
                self.assertTrue(energy.get("unavailable") or "package_j_per_call" in energy)
        self.assertIn("usage per call", p.stdout)
        # the sim's medians are virtual time, its usage lines the host's work: said, in run
        # and in show
        virtual = "(sim backend: wall and cpu are the host's real work"
        self.assertIn(virtual, p.stdout)
        self.assertIn(virtual, run(["show", a]).stdout)
        nodoc = validate_result(self, b)
        self.assertNotIn("usage", nodoc["points"][0]["baseline"])

    def test_profile_flag(self):
        # '--profile' turns the pass on where the spec has it off; with '--no-profile' it is a
        # usage error; no GPU figures on a backend that is not cuda
        spec = sim_spec(os.path.join(self.tmp, "s.yaml"), trials={"profile": False})
        p = run(["run", spec, "-o", os.path.join(self.tmp, "x"), "--profile", "--no-profile"])
        self.assertEqual(p.returncode, 64, p.stderr)
        self.assertIn("'--profile' and '--no-profile'", p.stderr)
        off, on = os.path.join(self.tmp, "off"), os.path.join(self.tmp, "on")
        self.assertEqual(run(["run", spec, "-o", off]).returncode, 0)
        self.assertNotIn("usage", validate_result(self, off)["points"][0]["baseline"])
        p = run(["run", spec, "-o", on, "--profile"])
        self.assertEqual(p.returncode, 0, p.stderr)
        usage = validate_result(self, on)["points"][0]["baseline"]["usage"]
        self.assertIn("task_clock_ns", usage["counters"])
        self.assertNotIn("gpu_counters", usage)
        self.assertFalse({"gpu_j_per_call", "gpu_unavailable"} & set(usage["energy"]))
        self.assertNotIn("gpu:", p.stdout)

    def test_profile_on_cuda_without_a_device(self):
        # like any CUDA run on a machine without a GPU (or a build without CUDA): 69, and why
        path = os.path.join(SOURCE, "tests", "gpu", "profile.yaml")  # run.sh's profile step
        p = run(["run", path, "-o", os.path.join(self.tmp, "c"), "--profile"])
        if p.returncode == 0:
            self.skipTest("this machine has a GPU: tests/gpu/run.sh checks the profile there")
        if "not built into this ktrial" in p.stderr:  # a -DKT_CUDA=OFF build: a spec error
            self.assertEqual(p.returncode, 65, p.stderr)
        else:
            self.assertEqual(p.returncode, 69, p.stderr)
            self.assertIn("backend 'cuda' is unavailable", p.stderr)

    def test_gpu_profile_checker(self):
        # tests/gpu/check_profile.py judges a lent GPU's run; here it must pass a consistent
        # record and fail a wrong device SOL, a missing view, and treat refused privileges apart
        import json
        import subprocess
        kernel = {"range": "0", "duration_ns": 12500, "sm_throughput_pct": 80,
                  "device_sol_pct": 40, "dram_throughput_pct": 35.5,
                  "occupancy_limit_registers": 2, "occupancy_limit_shared_mem": 3,
                  "occupancy_limit_warps": 8, "occupancy_limit_blocks": 32,
                  "achieved_occupancy_pct": 12.4, "waves_per_sm": 0.25, "grid_blocks": 66,
                  "sms": 132, "stalls": {"long_scoreboard": 4.5}}

        def check(gpu_counters, energy):
            usage = {"calls": 5, "threads": 1, "wall_ns_per_call": 1, "counters": {},
                     "energy": energy, "gpu_counters": gpu_counters}
            arm = {"name": "a", "usage": usage}
            path = os.path.join(self.tmp, "r.json")
            with open(path, "w") as f:
                json.dump({"points": [{"id": "p", "baseline": arm, "candidates": []}]}, f)
            script = os.path.join(SOURCE, "tests", "gpu", "check_profile.py")
            return subprocess.run([sys.executable, script, path], capture_output=True,
                                  text=True).returncode

        good = {"ranges": 1, "kernels": [kernel]}
        self.assertEqual(check(good, {"gpu_j_per_call": 0.01, "gpu_calls": 100}), 0)
        self.assertEqual(check(good, {}), 1)  # neither energy nor its reason
        self.assertEqual(check({"ranges": 1, "kernels": [dict(kernel, device_sol_pct=80)]},
                               {"gpu_unavailable": "x"}), 1)
        self.assertEqual(check({"ranges": 1, "kernels": [dict(kernel, stalls={})]},
                               {"gpu_unavailable": "x"}), 1)
        self.assertEqual(check({"ranges": 0, "kernels": []}, {"gpu_unavailable": "x"}), 1)
        refused = {"unavailable": "cuptiRangeProfilerEnable: CUPTI_ERROR_INSUFFICIENT_PRIVILEGES"}
        self.assertEqual(check(refused, {"gpu_unavailable": "x"}), 3)
        self.assertEqual(check({"unavailable": "no device"}, {"gpu_unavailable": "x"}), 1)

    def test_cpu_run_records_counters_per_arm(self):
        path = os.path.join(self.tmp, "gemm.yaml")
        with open(path, "w") as f:
            f.write("""version: 1
name: usage-cpu
op: gemm
backend: cpu
dtype: fp32
threads: 1
models: [qwen2.5-0.5b]
phases: [prefill]
batch_sizes: [1]
context_lengths: [16]
roles: [o]
inputs: {distribution: normal, seed: 3, sets: 1}
baseline: {variant: blas}
candidates:
  - {name: tiled, variant: tiled}
  - {name: deterministic, variant: deterministic}
trials: {warmup: 1, min_repetitions: 5, max_repetitions: 10, flush_cache: false}
""")
        out = os.path.join(self.tmp, "cpu")
        p = run(["run", path, "-o", out])
        self.assertIn(p.returncode, (0, 1, 2), p.stderr)
        doc = validate_result(self, out)
        point = doc["points"][0]
        # deterministic has no prepare (its state is NULL): profiled like the others
        self.assertEqual(len(point["candidates"]), 2)
        for arm in (point["baseline"], *point["candidates"]):
            self.assertIsNotNone(arm.get("usage"), arm["name"])
            counters = arm["usage"]["counters"]
            self.assertGreater(counters["task_clock_ns"], 0)
            self.assertIn("context_switches", counters)
            self.assertIn("page_faults", counters)
            self.assertEqual(len(counters), 9)  # every counter, supported or with its reason
        unsupported = [n for n, v in point["baseline"]["usage"]["counters"].items()
                       if isinstance(v, dict)]
        if unsupported:
            self.assertIn("not measurable on this machine", p.stdout)

    def test_costs_follow_the_run_s_own_times(self):
        spec = sim_spec(os.path.join(self.tmp, "c.yaml"), batch_sizes=(1, 8))
        with open(spec, "a") as f:
            f.write("costs: {usd_per_hour: 3.2}\n")
        out = os.path.join(self.tmp, "c")
        p = run(["run", spec, "-o", out])
        self.assertEqual(p.returncode, 0, p.stderr)
        doc = validate_result(self, out)
        for point in doc["points"]:
            batch = point["axes"]["batch_size"]
            for c in point["candidates"]:
                costs = c["costs"]
                self.assertEqual(costs["tokens_per_call"], batch)  # decode: the batch
                for arm, key in (("baseline", "baseline_usd_per_mtok"),
                                 ("candidate", "candidate_usd_per_mtok")):
                    median_ns = c["times"][arm]["median_ns"]
                    expect = 3.2 / 3600 * median_ns * 1e-9 / batch * 1e6
                    self.assertAlmostEqual(costs[key], expect, delta=expect * 1e-9)
        self.assertIn("per million tokens", p.stdout)
        # counts take the singular for one (docs/everyday-use.md)
        self.assertIn("; 1 token per call)", p.stdout)
        self.assertIn("; 8 tokens per call)", p.stdout)
        self.assertNotIn("1 tokens", p.stdout)

    def test_no_price_without_costs_or_without_times(self):
        # a failed baseline stops the point before its candidates are evaluated, and a crashed
        # candidate has no median: neither is priced at $0 or $nan, with costs or without
        crash = {"median_us": 100, "fail": "crash"}
        cases = {"nocosts": (crash, {"ok": {"median_us": 50}}, False),
                 "basecrash": (crash, {"ok": {"median_us": 50}}, True),
                 "candcrash": ({"median_us": 100},
                               {"bad": {"median_us": 50, "fail": "crash"},
                                "ok": {"median_us": 50}}, True)}
        for name, (baseline, candidates, priced) in cases.items():
            with self.subTest(spec=name):
                spec = sim_spec(os.path.join(self.tmp, name + ".yaml"), name=name,
                                baseline=baseline, candidates=candidates)
                if priced:
                    with open(spec, "a") as f:
                        f.write("costs: {usd_per_hour: 3.2}\n")
                out = os.path.join(self.tmp, name)
                p = run(["run", spec, "-o", out])
                self.assertIn(p.returncode, (1, 70), p.stderr)
                doc = validate_result(self, out)
                cost_lines = [ln for ln in p.stdout.splitlines() if ln.startswith("cost ")]
                for c in doc["points"][0]["candidates"]:
                    has_times = name == "candcrash" and c["name"] == "ok"
                    self.assertEqual("costs" in c, has_times, c.get("costs"))
                    self.assertEqual(any(f" {c['name']} " in ln for ln in cost_lines),
                                     has_times, cost_lines)
                self.assertNotIn("$0 ", p.stdout)
                self.assertNotIn("nan", "\n".join(cost_lines))

    def test_setup_gate_rejects_a_slow_prepare(self):
        spec = sim_spec(os.path.join(self.tmp, "g.yaml"),
                        candidates={"quick": {"median_us": 80, "prepare_ms": 1},
                                    "slow": {"median_us": 80, "prepare_ms": 300}},
                        thresholds={"setup": {"max_seconds": 0.1}})
        out = os.path.join(self.tmp, "g")
        p = run(["run", spec, "-o", out])
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        doc = validate_result(self, out)
        quick, slow = doc["points"][0]["candidates"]
        self.assertEqual(quick["verdict"], "KEEP")
        self.assertEqual(slow["verdict"], "REJECT")
        self.assertIn("setup", slow["reason_codes"])
        self.assertIn("thresholds.setup.max_seconds", " ".join(slow["reasons"]))
        self.assertGreater(slow["setup"]["prepare_s"], 0.29)

    def test_an_energy_limit_without_an_energy_figure_says_it_was_not_checked(self):
        # a limit chosen before the run must not pass unnoticed: with the profiling pass off
        # there is never an energy figure, whatever the machine's meters
        spec = sim_spec(os.path.join(self.tmp, "e.yaml"), trials={"profile": False},
                        candidates={"big": {"median_us": 80, "extra_bytes": 4096}},
                        thresholds={"energy": {"max_ratio": 1.1},
                                    "setup": {"max_memory_ratio": 2}})
        out = os.path.join(self.tmp, "e")
        p = run(["run", spec, "-o", out])
        doc = validate_result(self, out)
        self.assertEqual("NaN", doc["points"][0]["candidates"][0]["energy_ratio"])
        want = "warning: thresholds.energy.max_ratio was not checked at 1 candidate point"
        self.assertIn(want, p.stdout)
        self.assertIn(want, run(["show", out]).stdout)
        # the setup-memory reason reads as a ratio, like the memory gate's
        self.assertRegex(" ".join(doc["points"][0]["candidates"][0]["reasons"]),
                         r"setup memory 4096 bytes is [0-9.e+]+x the problem's inputs")


if __name__ == "__main__":
    unittest.main()
