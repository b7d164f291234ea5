"""ktrial validate and ktrial models, through the binary.

The bad-spec corpus (tests/specs/bad) states its own expectations in comment lines:
  # expect: LINE:COL: MESSAGE     one line per diagnostic ktrial must print, exactly
  # stage: yaml|schema|meaning     which validation stage finds the defect
  # unless-op: OP                  skip the file once this build has OP
Good specs (tests/specs/good) may say '# requires: OP BACKEND/VARIANT...' and are skipped
until this build has them.
"""
import glob
import json
import os
import re
import subprocess
import sys
import tempfile
import unittest

KTRIAL = os.environ.get("KTRIAL", "ktrial")
SOURCE = os.environ.get("KT_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))

try:
    import yaml
except ImportError:
    yaml = None
try:
    import jsonschema
except ImportError:
    jsonschema = None


def ktrial(*args):
    return subprocess.run([KTRIAL, *args], capture_output=True, text=True, timeout=60)


def registry():
    """Ops and 'backend/variant' names this build has, from 'ktrial kernels'."""
    out = ktrial("kernels").stdout
    ops = set(re.findall(r"^op (\S+):", out, re.M))
    variants = set(re.findall(r"^  (\w+/\S+):", out, re.M))
    return ops, variants


def header(path, key):
    """Values of '# key: value' comment lines at the top of 'path'."""
    values = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            if not line.startswith("#"):
                break
            m = re.match(r"#\s*%s:\s?(.*)$" % re.escape(key), line.rstrip("\n"))
            if m:
                values.append(m.group(1))
    return values


def spec_op(path):
    with open(path, encoding="utf-8") as f:
        m = re.search(r"^op:\s*(\S+)", f.read(), re.M)
    return m.group(1) if m else None


class Corpus(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.ops, cls.variants = registry()
        assert "synthetic" in cls.ops, "ktrial kernels lists no synthetic op"

    def test_good_specs_pass(self):
        files = sorted(glob.glob(os.path.join(SOURCE, "tests/specs/good/*.yaml")))
        self.assertGreaterEqual(len(files), 4)
        checked = 0
        for path in files:
            with self.subTest(spec=os.path.basename(path)):
                needs = " ".join(header(path, "requires")).split()
                missing = [n for n in needs if n not in self.ops and n not in self.variants]
                if missing:
                    continue  # written for ops or variants this build does not have yet
                r = ktrial("validate", path)
                self.assertEqual(r.returncode, 0, r.stderr)
                self.assertRegex(r.stdout, r"^ok: %s \(\d+ points?, \d+ candidates?\)\n$"
                                 % re.escape(path))
                self.assertNotIn(": error", r.stderr)
                checked += 1
        self.assertGreaterEqual(checked, 4)

    def test_bad_specs_fail_with_their_messages(self):
        files = sorted(glob.glob(os.path.join(SOURCE, "tests/specs/bad/*.yaml")))
        self.assertGreaterEqual(len(files), 30)
        for path in files:
            with self.subTest(spec=os.path.basename(path)):
                if any(op in self.ops for op in header(path, "unless-op")):
                    continue
                expected = header(path, "expect")
                self.assertTrue(expected, "no '# expect:' line")
                r = ktrial("validate", path)
                self.assertEqual(r.returncode, 65, r.stderr)
                self.assertEqual(r.stdout, "")
                got = [l for l in r.stderr.splitlines() if l.startswith(path + ":")]
                self.assertEqual(got, [f"{path}:{e}" for e in expected])
                self.assertEqual(len(got), len(r.stderr.splitlines()))

    def test_bad_specs_fail_at_their_stage(self):
        """A 'schema' defect is invalid for python3-jsonschema too; a 'meaning' one is valid."""
        if yaml is None or jsonschema is None:
            self.skipTest("python3-yaml or python3-jsonschema missing")
        with open(os.path.join(SOURCE, "schemas/experiment.schema.json")) as f:
            validator = jsonschema.Draft7Validator(json.load(f))
        stages = {}
        for path in sorted(glob.glob(os.path.join(SOURCE, "tests/specs/bad/*.yaml"))):
            stage = header(path, "stage")
            self.assertEqual(len(stage), 1, path)
            stage = stage[0]
            self.assertIn(stage, ("yaml", "schema", "meaning"), path)
            stages[stage] = stages.get(stage, 0) + 1
            if stage == "yaml":
                continue
            with self.subTest(spec=os.path.basename(path)):
                with open(path, encoding="utf-8") as f:
                    doc = yaml.safe_load(f)
                errors = list(validator.iter_errors(doc))
                if stage == "schema":
                    self.assertTrue(errors, "python3-jsonschema accepts it")
                else:
                    self.assertEqual([e.message for e in errors], [])
        self.assertGreaterEqual(min(stages.values()), 5, stages)

    def test_spec_over_one_mib(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "big.yaml")
            with open(os.path.join(SOURCE, "tests/specs/good/sim-minimal.yaml")) as f:
                text = f.read()
            text += "#" * (1200000 - len(text) - 1) + "\n"
            with open(path, "w") as f:
                f.write(text)
            self.assertEqual(os.path.getsize(path), 1200000)
            r = ktrial("validate", path)
            self.assertEqual(r.returncode, 65)
            self.assertEqual(r.stderr, f"{path}: spec is 1200000 bytes; the limit is 1048576\n")
            # exactly at the limit is still read
            with open(path, "w") as f:
                f.write(text[: 1048576 - 1] + "\n")
            r = ktrial("validate", path)
            self.assertEqual(r.returncode, 0, r.stderr)

    def test_experiments(self):
        files = sorted(glob.glob(os.path.join(SOURCE, "experiments/*.yaml")))
        files = [f for f in files if os.path.basename(f) != "models.yaml"]
        self.assertTrue(any("sim-quickstart" in f for f in files))
        for path in files:
            with self.subTest(spec=os.path.basename(path)):
                if spec_op(path) not in self.ops:
                    continue
                backend = re.search(r"^backend:\s*(\S+)", open(path).read(), re.M)
                if backend and not any(v.startswith(backend.group(1) + "/") for v in self.variants):
                    continue  # a backend this build leaves out (cuda without nvcc)
                if "\nplugins:" in open(path).read():
                    continue  # built plugins: tests/cli/test_plugins.py validates these
                r = ktrial("validate", path)
                self.assertEqual(r.returncode, 0, r.stderr)
                self.assertTrue(r.stdout.startswith(f"ok: {path} ("), r.stdout)


class Command(unittest.TestCase):
    def test_plan(self):
        path = os.path.join(SOURCE, "experiments/sim-matrix.yaml")
        r = ktrial("validate", "--plan", path)
        self.assertEqual(r.returncode, 0, r.stderr)
        lines = r.stdout.splitlines()
        self.assertEqual(lines[0], f"ok: {path} (11 points, 1 candidate)")
        rows = [l.split() for l in lines if re.match(r"^  b\d+/t\d+ ", l)]
        ids = [row[0] for row in rows]
        self.assertEqual(ids, ["b1/t1024", "b1/t8192", "b1/t65536", "b8/t1024", "b8/t8192",
                               "b8/t65536", "b64/t1024", "b64/t8192",
                               "b128/t1024", "b128/t8192", "b128/t65536"])
        # 2 arms x (3 sets + 3 warmup) + 200 pairs: (120 + 100) us x (6 + 200), plus 0.05 s
        # per worker and a start-up that grows with the problem (3 sets of b x t elements)
        calls = 220e-6 * 206 + 0.05
        for row in rows:
            self.assertGreaterEqual(float(row[1]), calls - 0.001)
        self.assertLess(float(rows[0][1]), calls + 0.01)
        self.assertGreater(float(rows[-1][1]), float(rows[0][1]))
        total = re.search(r"total: estimate ([0-9.]+) s = ([0-9.]+) min, of which ([0-9.]+) s "
                          r"start-up", r.stdout)
        self.assertIsNotNone(total, r.stdout)
        # the total is printed to 0.1 s, each row to 0.001 s
        self.assertAlmostEqual(float(total.group(1)), sum(float(x[1]) for x in rows),
                               delta=0.05 + 0.0005 * len(rows))
        self.assertIn("up to 412 calls per point", r.stdout)
        self.assertRegex(r.stdout, r"budget: 10 min: within on an idle host \([0-9.]+ min, the "
                         r"estimate validation checks\); (within|over) at this host's load now "
                         r"\([0-9.]+ min\)")

    def test_plan_prices_memory_and_run_refuses_a_point_that_cannot_fit(self):
        # about 1.5 TiB at its one point (64 input sets of a 70b layer's KV cache at 128K, and
        # the two spare sets of input buffers that keep an arm from seeing its last inputs):
        # more than any machine these tests run on has left
        with tempfile.TemporaryDirectory() as tmp:
            spec = os.path.join(tmp, "big.yaml")
            with open(spec, "w") as f:
                f.write("version: 1\nname: big\nop: attention_decode\nbackend: cpu\n"
                        "dtype: fp32\nmodels: [llama-3.1-70b]\nbatch_sizes: [8]\n"
                        "context_lengths: [131072]\ninputs: {sets: 64}\n"
                        "baseline: {variant: dense}\ncandidates: [{name: f, variant: ffd}]\n")
            r = ktrial("validate", "--plan", spec)
            self.assertEqual(r.returncode, 0, r.stderr)  # a spec's validity is not the host's
            self.assertRegex(r.stdout, r"memory: at least 1552\.\d+ GiB at the largest point")
            self.assertIn("too little: run refuses it without --force", r.stdout)
            out = os.path.join(tmp, "out")
            r = ktrial("run", spec, "-o", out)
            self.assertEqual(r.returncode, 69, r.stdout + r.stderr)
            self.assertRegex(r.stderr, r"error: point 'llama-3\.1-70b/b8/t131072' needs at least "
                             r"1552\.\d+ GiB .* --force runs it anyway")
            self.assertFalse(os.path.exists(out))  # refused before anything was written

    def test_plan_without_budget(self):
        r = ktrial("validate", "--plan",
                   os.path.join(SOURCE, "tests/specs/good/sim-minimal.yaml"))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("budget: none", r.stdout)

    def test_several_specs(self):
        good = os.path.join(SOURCE, "tests/specs/good/sim-minimal.yaml")
        bad = os.path.join(SOURCE, "tests/specs/bad/reserved-name.yaml")
        r = ktrial("validate", good, bad, good)
        self.assertEqual(r.returncode, 65)
        self.assertEqual(r.stdout.count(f"ok: {good} "), 2)
        self.assertIn(f"{bad}:", r.stderr)
        r = ktrial("validate", good, good)
        self.assertEqual(r.returncode, 0)

    def test_backend_flag(self):
        spec = os.path.join(SOURCE, "tests/specs/good/sim-minimal.yaml")
        r = ktrial("validate", "--backend", "cpu", spec)
        self.assertEqual(r.returncode, 65)
        self.assertEqual(r.stderr, f"{spec}:4:5: --backend: op 'synthetic' runs only on "
                                   "backend 'sim', not 'cpu'\n")
        for args in (["--backend=sim", spec], ["--backend", "auto", spec]):
            r = ktrial("validate", *args)
            self.assertEqual(r.returncode, 0, r.stderr)

    def test_usage_errors(self):
        spec = os.path.join(SOURCE, "tests/specs/good/sim-minimal.yaml")
        for args in ([], ["--bogus", spec], ["--backend", "gpu", spec], [spec, "--backend"],
                     ["-x", spec]):
            with self.subTest(args=args):
                r = ktrial("validate", *args)
                self.assertEqual(r.returncode, 64, r.stderr)
                self.assertIn("usage: ktrial validate SPEC... [--plan] [--backend NAME] [--json]", r.stderr)
                self.assertEqual(r.stdout, "")
        r = ktrial("validate", "--help")
        self.assertEqual(r.returncode, 0)
        self.assertIn("usage: ktrial validate", r.stdout)

    def test_missing_file(self):
        r = ktrial("validate", "/nonexistent/spec.yaml")
        self.assertEqual(r.returncode, 65)
        self.assertEqual(r.stderr,
                         "/nonexistent/spec.yaml: cannot open: No such file or directory\n")

    def test_warning_keeps_exit_zero(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "w.yaml")
            with open(os.path.join(SOURCE, "tests/specs/good/sim-minimal.yaml")) as f:
                text = f.read()
            with open(path, "w") as f:
                f.write(text + "exclude:\n  - {batch_size: 99}\n")
            r = ktrial("validate", path)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(r.stderr, f"{path}:13:5: warning: exclude[0] matches no point\n")
            self.assertTrue(r.stdout.startswith(f"ok: {path} (1 point, 1 candidate)"))


class Models(unittest.TestCase):
    def test_table_matches_catalog(self):
        r = ktrial("models")
        self.assertEqual(r.returncode, 0, r.stderr)
        lines = r.stdout.splitlines()
        self.assertEqual(lines[0].split(),
                         ["name", "hidden", "heads", "kv_heads", "head_dim", "intermediate",
                          "layers"])
        rows = [l.split() for l in lines[1:]]
        self.assertEqual(len(rows), 8)
        if yaml is None:
            return
        with open(os.path.join(SOURCE, "experiments/models.yaml")) as f:
            catalog = yaml.safe_load(f)["models"]
        fields = ["name", "hidden", "heads", "kv_heads", "head_dim", "intermediate", "layers"]
        self.assertEqual(rows, [[str(m[k]) for k in fields] for m in catalog])

    def test_catalog_file_is_valid(self):
        if yaml is None or jsonschema is None:
            self.skipTest("python3-yaml or python3-jsonschema missing")
        with open(os.path.join(SOURCE, "schemas/models.schema.json")) as f:
            schema = json.load(f)
        with open(os.path.join(SOURCE, "experiments/models.yaml")) as f:
            jsonschema.Draft7Validator(schema).validate(yaml.safe_load(f))

    def test_arguments_refused(self):
        r = ktrial("models", "extra")
        self.assertEqual(r.returncode, 64)


class Schema(unittest.TestCase):
    def test_schemas_are_draft7(self):
        if jsonschema is None:
            self.skipTest("python3-jsonschema missing")
        for name in ("experiment", "models"):
            with open(os.path.join(SOURCE, f"schemas/{name}.schema.json")) as f:
                schema = json.load(f)
            jsonschema.Draft7Validator.check_schema(schema)
            self.assertEqual(schema["$schema"], "http://json-schema.org/draft-07/schema#")
            self.assertIn("$id", schema)

    def test_every_object_is_closed(self):
        """additionalProperties is false on every object, except the maps whose keys ktrial
        checks against the registry (params, matrix rules), a command arm's env (any
        variable name) and op pymodule's globals (any name of the problem file)."""
        with open(os.path.join(SOURCE, "schemas/experiment.schema.json")) as f:
            schema = json.load(f)
        open_maps = {"params", "matrix_rule", "env", "globals"}

        def walk(node, where):
            if isinstance(node, dict):
                if node.get("type") == "object" and where not in open_maps:
                    self.assertIs(node.get("additionalProperties"), False, where)
                for k, v in node.items():
                    walk(v, k)
            elif isinstance(node, list):
                for v in node:
                    walk(v, where)
        walk(schema, "")


if __name__ == "__main__":
    sys.exit(unittest.main())
