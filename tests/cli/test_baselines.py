"""Baseline libraries through the binary: result.json names OpenBLAS's core and build config,
a run warns when that core lacks vector extensions the CPU has (forced here with
OPENBLAS_CORETYPE=Prescott on a CPU with AVX2) or when OpenBLAS's or oneDNN's idle threads
spin after each call, and 'ktrial kernels' lists the onednn variant exactly when this build has
oneDNN."""
import json
import os
import shutil
import tempfile
import unittest

from ktrial_cli import run, validate_result


def cpu_flags():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("flags"):
                return set(line.split(":", 1)[1].split())
    return set()


def gemm_spec(path, baseline, candidate):
    with open(path, "w") as f:
        f.write(f"""version: 1
name: baseline-identity
op: gemm
backend: cpu
dtype: fp32
threads: 1
models: [{{name: small, hidden: 96, heads: 4, kv_heads: 2, head_dim: 24, intermediate: 160}}]
batch_sizes: [1]
context_lengths: [3]
phases: [prefill]
roles: [o]
inputs: {{distribution: normal, seed: 3, sets: 1}}
baseline: {{variant: {baseline}}}
candidates:
  - {{name: cand, variant: {candidate}}}
trials: {{warmup: 1, min_repetitions: 6, max_repetitions: 6, max_seconds_per_point: 5}}
""")
    return path


class BaselineIdentityTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="kt_baselines.")

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def env_info(self, env=None):
        p = run(["env", "--json"], env=env)
        self.assertEqual(p.returncode, 0, p.stderr)
        return json.loads(p.stdout)["devices"]["cpu"]["info"]

    def run_spec(self, baseline, candidate, env):
        spec = gemm_spec(os.path.join(self.tmp, f"{baseline}-{candidate}.yaml"), baseline, candidate)
        out = os.path.join(self.tmp, f"out-{baseline}-{candidate}")
        p = run(["run", spec, "-o", out], env=env)
        self.assertIn(p.returncode, (0, 1, 2), p.stderr)
        return p, validate_result(self, out)

    def test_result_names_core_and_warns_on_a_generic_core(self):
        flags = cpu_flags()
        if "avx2" not in flags:
            self.skipTest("the CPU has no AVX2: Prescott is not behind it")
        env = dict(os.environ, OPENBLAS_CORETYPE="Prescott")
        p, doc = self.run_spec("blas", "tiled", env)
        info = doc["provenance"]["device"]["info"]
        self.assertEqual(info["openblas_core"], "Prescott")
        self.assertIn("OpenBLAS 0.", info["openblas_config"])
        self.assertIn("Prescott", info["openblas_config"])
        self.assertEqual(info["openblas_core_isa"], "sse")
        want = "SkylakeX" if {"avx512f", "avx512bw", "avx512vl", "avx512dq"} <= flags else "Haswell"
        self.assertIn(f"OPENBLAS_CORETYPE={want}", info["openblas_warning"])
        self.assertIn("warning: OpenBLAS runs its Prescott kernels", p.stderr)
        self.assertIn(f"OPENBLAS_CORETYPE={want}", p.stderr)
        # printed once, however many arms call OpenBLAS
        self.assertEqual(p.stderr.count("OPENBLAS_CORETYPE="), 1)

    def test_spinning_openblas_threads_are_named_not_changed(self):
        env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_THREAD_TIMEOUT"}
        env["OPENBLAS_NUM_THREADS"] = "2"
        p, doc = self.run_spec("blas", "tiled", env)
        info = doc["provenance"]["device"]["info"]
        self.assertEqual(info["openblas_thread_timeout"], "unset")
        self.assertIn("OPENBLAS_THREAD_TIMEOUT=16", info["openblas_threads_warning"])
        self.assertIn("warning: OpenBLAS's 2 threads spin", p.stderr)
        env["OPENBLAS_THREAD_TIMEOUT"] = "16"
        p, doc = self.run_spec("blas", "deterministic", env)
        info = doc["provenance"]["device"]["info"]
        self.assertEqual(info["openblas_thread_timeout"], "16")
        self.assertNotIn("openblas_threads_warning", info)
        self.assertNotIn("threads spin", p.stderr)

    def test_spinning_openmp_threads_are_named_for_onednn_arms(self):
        if "onednn_version" not in self.env_info():
            self.skipTest("this build has no oneDNN")
        env = {k: v for k, v in os.environ.items()
               if k not in ("GOMP_SPINCOUNT", "OMP_WAIT_POLICY")}
        env["OMP_NUM_THREADS"] = "2"
        p, doc = self.run_spec("onednn", "tiled", env)
        info = doc["provenance"]["device"]["info"]
        self.assertEqual(info["omp_wait_policy"], "unset")
        self.assertEqual(info["gomp_spincount"], "unset")
        self.assertIn("GOMP_SPINCOUNT=2000", info["onednn_threads_warning"])
        self.assertIn("warning: oneDNN's 2 OpenMP threads spin", p.stderr)
        # recorded for every spec, printed only for specs whose arms call oneDNN
        p, doc = self.run_spec("tiled", "deterministic", env)
        self.assertIn("onednn_threads_warning", doc["provenance"]["device"]["info"])
        self.assertNotIn("OpenMP threads spin", p.stderr)
        env["GOMP_SPINCOUNT"] = "2000"
        p, doc = self.run_spec("onednn", "deterministic", env)
        info = doc["provenance"]["device"]["info"]
        self.assertEqual(info["gomp_spincount"], "2000")
        self.assertNotIn("onednn_threads_warning", info)
        self.assertNotIn("OpenMP threads spin", p.stderr)

    def test_no_warning_for_specs_without_openblas(self):
        if "avx2" not in cpu_flags():
            self.skipTest("the CPU has no AVX2")
        env = dict(os.environ, OPENBLAS_CORETYPE="Prescott")
        p, doc = self.run_spec("tiled", "deterministic", env)
        self.assertNotIn("OPENBLAS_CORETYPE", p.stderr)
        # recorded all the same: the provenance describes the machine, not the spec
        self.assertEqual(doc["provenance"]["device"]["info"]["openblas_core"], "Prescott")

    def test_detected_core_recorded_as_is(self):
        info = self.env_info()
        self.assertTrue(info["openblas_core"])
        self.assertIn(info["openblas_core"], info["openblas_config"])
        self.assertIn(info["cpu_isa"], ("sse", "avx", "avx2", "avx512", "unknown"))
        if "openblas_warning" in info:
            self.assertIn("OPENBLAS_CORETYPE=", info["openblas_warning"])

    def test_kernels_lists_onednn_when_built(self):
        info = self.env_info()
        p = run(["kernels", "--backend", "cpu"])
        self.assertEqual(p.returncode, 0, p.stderr)
        if "onednn_version" in info:
            self.assertIn("cpu/onednn: oneDNN matmul", p.stdout)
            self.assertIn("blas|tiled|onednn", p.stdout)
        else:
            self.assertIn("cpu/onednn: not built: oneDNN was not found", p.stdout)


if __name__ == "__main__":
    unittest.main()
