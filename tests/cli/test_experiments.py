"""Every spec shipped in experiments/ produces a result.json that the published schema accepts:
sim specs run whole; CPU specs run with --quick at their smallest point (one model, batch,
context, phase and role, chosen by size); CUDA specs run where the CUDA backend is available
and are skipped, saying so, where it is not. The specs in SLOW, which cost most, are run by
test_experiments_slow.py (label full, not quick); this file runs the others."""
import glob
import os
import shutil
import subprocess
import tempfile
import unittest

import yaml

from ktrial_cli import SOURCE, run, validate_result

ROLE_ORDER = ["o", "qkv", "down", "gate_up"]  # smallest weight first, for every catalog model
# The shipped specs whose run here takes 20-40 s of CPU each (a whole decoder layer or program
# per call, or a sim matrix up to batch 128 at 64K): run by test_experiments_slow.py.
SLOW = ["decode-step-fusion.yaml", "pipeline-command.yaml", "prefill-chunk.yaml",
        "serving-ab.yaml", "sim-matrix.yaml"]


def catalog():
    with open(os.path.join(SOURCE, "experiments", "models.yaml")) as f:
        return {m["name"]: m for m in yaml.safe_load(f)["models"]}


def smallest_point(spec):
    """The spec cut down to its smallest point, every other key as shipped."""
    models = catalog()
    out = dict(spec)
    if "models" in spec:
        out["models"] = [min(spec["models"],
                             key=lambda n: models[n]["hidden"] * models[n]["intermediate"])]
    for axis in ("batch_sizes", "context_lengths"):
        if axis in spec:
            out[axis] = [min(spec[axis])]
    if "phases" in spec:
        out["phases"] = ["decode"] if "decode" in spec["phases"] else [spec["phases"][0]]
    if "roles" in spec:
        out["roles"] = [min(spec["roles"], key=ROLE_ORDER.index)]
    out.pop("exclude", None)
    return out


def absolute_plugins(spec, path):
    """The spec with its plugin paths (relative to its own folder) made absolute, so that a
    copy elsewhere loads the same files; an arm's plugin: names them the same way."""
    if "plugins" not in spec:
        return spec
    here = os.path.dirname(os.path.abspath(path))
    fix = lambda p: os.path.normpath(os.path.join(here, p))  # noqa: E731
    out = dict(spec, plugins=[fix(p) for p in spec["plugins"]])
    for key in ("baseline",):
        if "plugin" in out.get(key, {}):
            out[key] = dict(out[key], plugin=fix(out[key]["plugin"]))
    out["candidates"] = [dict(c, plugin=fix(c["plugin"])) if "plugin" in c else c
                         for c in out.get("candidates", [])]
    return out


def command_copy(spec, path):
    """op command: a copy that runs from anywhere: the arms' commands from the shipped spec's
    folder (a program under ../build/ from this build folder), the task files by absolute
    path; only the first task and the fewest pairs, as --quick does for kernels."""
    if spec.get("op") != "command":
        return spec
    here = os.path.dirname(os.path.abspath(path))
    build = os.environ.get("KT_BUILD_DIR", os.path.join(SOURCE, "build"))
    out = dict(spec)
    tasks = [dict(spec["tasks"][0])]
    for key in ("input", "expect"):
        if key in tasks[0]:
            tasks[0][key] = os.path.join(here, tasks[0][key])
    out["tasks"] = tasks
    fix = lambda arm: dict(arm, cwd=here, run=[  # noqa: E731
        os.path.join(build, a[len("../build/"):]) if a.startswith("../build/") else a
        for a in arm["run"]])
    out["baseline"] = fix(spec["baseline"])
    out["candidates"] = [fix(c) for c in spec["candidates"]]
    trials = dict(spec.get("trials", {}))
    trials["max_repetitions"] = trials.get("min_repetitions", 6)
    out["trials"] = trials
    return out


def service_copy(spec, path):
    """op service: a copy that runs from anywhere: the servers' programs under ../build/ from
    this build folder, the task files by absolute path, the fewest rounds."""
    if spec.get("op") != "service":
        return spec
    here = os.path.dirname(os.path.abspath(path))
    build = os.environ.get("KT_BUILD_DIR", os.path.join(SOURCE, "build"))
    out = dict(spec)
    out["tasks"] = [{k: os.path.join(here, v) if k in ("input", "expect") else v
                     for k, v in t.items()} for t in spec["tasks"]]
    fix = lambda arm: dict(arm, setup=[  # noqa: E731
        os.path.join(build, a[len("../build/"):]) if a.startswith("../build/") else a
        for a in arm["setup"]])
    out["baseline"] = fix(spec["baseline"])
    out["candidates"] = [fix(c) for c in spec["candidates"]]
    trials = dict(spec.get("trials", {}))
    trials["max_repetitions"] = trials.get("min_repetitions", 3)
    out["trials"] = trials
    return out


def shipped_specs():
    specs = sorted(glob.glob(os.path.join(SOURCE, "experiments", "**", "*.yaml"), recursive=True))
    return [s for s in specs if os.path.basename(s) != "models.yaml"]


def cuda_available():
    p = run(["env", "--json"])
    return p.returncode == 0 and '"cuda"' in p.stdout and '"available": true' in p.stdout


class ExperimentsTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="kt_experiments.")

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def run_spec(self, path, extra):
        out = os.path.join(self.tmp, os.path.basename(path) + ".out")
        p = run(["run", path, "-o", out] + extra, timeout=900)
        self.assertIn(p.returncode, (0, 1, 2), p.stdout + p.stderr)
        doc = validate_result(self, out)
        self.assertEqual(doc["status"], "complete")
        self.assertGreater(len(doc["points"]), 0)
        return doc

    def test_every_shipped_spec_writes_a_valid_result(self):
        specs = shipped_specs()
        self.assertGreater(len(specs), 10)
        slow = [s for s in specs if os.path.basename(s) in SLOW]
        self.assertEqual(sorted(os.path.basename(s) for s in slow), sorted(SLOW))
        self.check_specs([s for s in specs if s not in slow])

    def check_specs(self, specs):
        has_cuda = None
        for path in specs:
            with open(path) as f:
                spec = yaml.safe_load(f)
            with self.subTest(spec=os.path.relpath(path, SOURCE)):
                if spec["backend"] == "sim":
                    self.run_spec(path, [])
                    continue
                if spec["backend"] == "cuda":
                    has_cuda = cuda_available() if has_cuda is None else has_cuda
                    if not has_cuda:
                        self.skipTest("the CUDA backend is not available here")
                small = os.path.join(self.tmp, os.path.basename(path))
                copy = service_copy(command_copy(spec, path), path)
                program = "setup" if spec.get("op") == "service" else "run"
                missing = [a[program][0] for a in [copy["baseline"]] + copy["candidates"]
                           if spec.get("op") in ("command", "service") and "/" in a[program][0]
                           and not os.path.exists(os.path.join(a.get("cwd", ""),
                                                               a[program][0]))]
                if missing:  # a build that left the example out (CI's sanitizer build)
                    self.skipTest(f"{missing[0]} is not built here")
                with open(small, "w") as f:
                    yaml.safe_dump(service_copy(command_copy(
                        smallest_point(absolute_plugins(spec, path)), path), path), f,
                        sort_keys=False)
                doc = self.run_spec(small, ["--quick"])
                self.assertEqual(len(doc["points"]), 1)
                if spec["op"] == "command":  # per-task outputs and rusage figures kept
                    point = doc["points"][0]
                    for arm in [point["baseline"]] + point["candidates"]:
                        self.assertGreater(arm["metrics"]["max_rss_mib"]["value"], 0)
                        self.assertGreater(arm["metrics"]["user_cpu_ms"]["value"], 0)
                        task = spec["tasks"][0]["name"]
                        kept = os.path.join(self.tmp, os.path.basename(small) + ".out", "outputs",
                                            point["id"], arm["name"], f"{task}.f32")
                        self.assertTrue(os.path.getsize(kept) > 0, kept)
                if spec["op"] == "service":  # every arm measured apart, its answers kept
                    point = doc["points"][0]
                    for arm in [point["baseline"]] + point["candidates"]:
                        self.assertGreater(arm["service"]["startup_s"], 0)
                        self.assertGreater(arm["service"]["peak_rss_mib"], 0)
                        task = spec["tasks"][0]["name"]
                        kept = os.path.join(self.tmp, os.path.basename(small) + ".out", "outputs",
                                            point["id"], arm["name"], f"{task}.round0.body")
                        self.assertTrue(os.path.getsize(kept) > 0, kept)


if __name__ == "__main__":
    unittest.main()
