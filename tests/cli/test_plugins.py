"""Plugins through the built binary: a plugin built outside the tree against the installed
header, two builds of one plugin A/B-tested, a plugin op, every bad-plugin case with its
message and exit code, crashes in run and in kt_plugin_init, 'kernels --plugin', and resume
and compare refusing a changed plugin."""
import hashlib
import json
import os
import platform
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from ktrial_cli import KTRIAL, SOURCE, run, validate_result  # noqa: E402

BUILD = os.environ.get("KT_BUILD_DIR", os.path.join(SOURCE, "build"))
TESTS = os.path.join(BUILD, "tests", "plugins")
EXAMPLES = os.path.join(BUILD, "examples", "plugins")
HOST_MACHINE = {"x86_64": "x86-64", "aarch64": "aarch64"}.get(platform.machine(),
                                                               "another architecture")
TINY = "{name: tiny, hidden: 96, heads: 3, kv_heads: 1, head_dim: 32, intermediate: 200}"


def test_plugin(name):
    return os.path.join(TESTS, f"libkt_test_{name}.so")


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def arm_yaml(arm):
    return "{" + ", ".join(f"{k}: {v}" for k, v in arm.items()) + "}"


def gemm_spec(path, plugins, baseline, candidates, op="gemm", extra=None, max_reps=12):
    """A small spec on awkward shapes (M = 3, N = K = 96); returns the line of each plugin."""
    lines = ["version: 1", "name: plugin-test", "plugins:"]
    lines += [f"  - {p}" for p in plugins]
    lines += [f"op: {op}", "backend: cpu", "dtype: fp32", "threads: 1", f"models: [{TINY}]",
              "batch_sizes: [3]", "context_lengths: [5]", "phases: [decode]"]
    lines += extra if extra is not None else ["roles: [o]"]
    lines += ["inputs: {distribution: llm, seed: 4, sets: 2}",
              f"baseline: {arm_yaml(baseline)}", "candidates:"]
    lines += [f"  - {arm_yaml(c)}" for c in candidates]
    lines += [f"trials: {{warmup: 1, min_repetitions: 10, max_repetitions: {max_reps}, "
              "max_seconds_per_point: 2, flush_cache: false}",
              "thresholds: {numerics: {max_rel_l2: 1.0e-4}, latency: {min_speedup: 0.01}}"]
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return path


class Base(unittest.TestCase):
    def setUp(self):
        if not KTRIAL or not os.path.exists(test_plugin("segv_run")):
            self.skipTest("needs the built ktrial and test plugins")
        self.tmp = tempfile.mkdtemp(prefix="kt-plugins-")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def spec(self, *args, **kw):
        return gemm_spec(os.path.join(self.tmp, "spec.yaml"), *args, **kw)

    def cand(self, doc, name):
        return {c["name"]: c for p in doc["points"] for c in p["candidates"]}[name]


class OutsideTheTree(Base):
    def test_plugin_built_against_the_installed_header_gets_a_verdict(self):
        prefix = os.path.join(self.tmp, "prefix")
        subprocess.run(["cmake", "--install", BUILD, "--prefix", prefix, "--component",
                        "plugin-dev"], check=True, capture_output=True)
        env = dict(os.environ, PKG_CONFIG_PATH=os.path.join(prefix, "share", "pkgconfig"))
        cflags = subprocess.run(["pkg-config", "--cflags", "ktrial-plugin"], env=env,
                                check=True, capture_output=True, text=True).stdout.split()
        self.assertTrue(any(os.path.realpath(f[2:]) == os.path.realpath(
            os.path.join(prefix, "include")) for f in cflags if f.startswith("-I")), cflags)
        src = os.path.join(self.tmp, "src")
        os.makedirs(src)
        shutil.copy(os.path.join(SOURCE, "examples", "plugins", "gemm_blocked.c"),
                    os.path.join(src, "mine.c"))
        subprocess.run(["cc", "-O2", "-Wall", "-Werror", "-shared", "-fPIC"] + cflags +
                       ["mine.c", "-o", "libmine.so"], cwd=src, check=True)
        spec = gemm_spec(os.path.join(src, "spec.yaml"), ["libmine.so"], {"variant": "blas"},
                         [{"name": "mine", "variant": "blocked", "params": "{block: 32}"}])
        out = os.path.join(self.tmp, "out")
        r = run(["run", spec, "-o", out])
        self.assertIn(r.returncode, (0, 1, 2), r.stderr)
        doc = validate_result(self, out)
        mine = self.cand(doc, "mine")
        self.assertFalse(mine["failed"], mine)
        self.assertIn(mine["verdict"], ("KEEP", "REJECT", "INCONCLUSIVE"))
        # checked against the float64 reference on every input set, within the gate
        self.assertEqual(len(mine["numerics"]), 2)
        for n in mine["numerics"]:
            self.assertLess(n["rel_l2"], 1e-5)
        (plugin,) = doc["provenance"]["plugins"]
        self.assertEqual(plugin["sha256"], sha256(os.path.join(src, "libmine.so")))
        self.assertEqual(plugin["path"], "libmine.so")
        self.assertEqual(plugin["abi_version"], "1.0")
        self.assertRegex(plugin["build_id"] or "", r"^[0-9a-f]{16,}$")
        self.assertIsNone(plugin["git"])  # /tmp lies in no work tree

    def test_a_cpp_plugin_builds_against_the_header(self):
        if not shutil.which("g++"):
            self.skipTest("no g++")
        src = os.path.join(self.tmp, "cxx.cpp")
        with open(src, "w") as f:
            f.write("#include <ktrial/plugin.h>\n"
                    "static int run(void *, const kt_call *) { return KT_OK; }\n"
                    "static const kt_variant v = {\"gemm\", \"cxx\", \"cpu\", \"c++\", "
                    "nullptr, 0, nullptr, run, nullptr, nullptr};\n"
                    "int kt_plugin_init(kt_plugin_registrar *r) "
                    "{ return r->add_variant(r, &v); }\n")
        lib = os.path.join(self.tmp, "libcxx.so")
        subprocess.run(["g++", "-std=c++17", "-Wall", "-Wextra", "-Werror", "-shared", "-fPIC",
                        "-I" + os.path.join(SOURCE, "include"), src, "-o", lib], check=True)
        r = run(["kernels", "--plugin", lib])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("cpu/cxx: c++", r.stdout)

    def test_every_header_function_is_exported(self):
        with open(os.path.join(SOURCE, "include", "ktrial", "plugin.h")) as f:
            header = f.read()
        declared = set(re.findall(r"^[a-z_0-9 ]+[ *]+(kt_[a-z0-9_]+)\(", header, re.M))
        declared.discard("kt_plugin_init")
        with open(os.path.join(SOURCE, "include", "ktrial", "plugin.syms")) as f:
            listed = set(re.findall(r"(kt_[a-z0-9_]+);", f.read()))
        self.assertEqual(declared, listed)
        nm = subprocess.run(["nm", "-D", "--defined-only", KTRIAL], capture_output=True,
                            text=True, check=True).stdout
        exported = set(re.findall(r" T (kt_[a-z0-9_]+)$", nm, re.M))
        self.assertEqual(declared - exported, set())
        self.assertEqual(exported - declared, set())  # nothing else of ktrial is visible


class TwoBuilds(Base):
    def test_two_builds_of_one_plugin_in_one_paired_run(self):
        o1 = os.path.join(EXAMPLES, "o1", "libkt_gemm_blocked.so")
        o3 = os.path.join(EXAMPLES, "o3", "libkt_gemm_blocked.so")
        spec = self.spec([o1, o3], {"variant": "blocked", "plugin": o1},
                         [{"name": "o3", "variant": "blocked", "plugin": o3}])
        out = os.path.join(self.tmp, "out")
        r = run(["run", spec, "-o", out])
        self.assertIn(r.returncode, (0, 1, 2), r.stderr)
        doc = validate_result(self, out)
        plugins = doc["provenance"]["plugins"]
        self.assertEqual([p["sha256"] for p in plugins], [sha256(o1), sha256(o3)])
        self.assertNotEqual(plugins[0]["sha256"], plugins[1]["sha256"])
        parsed = doc["spec"]["parsed"]
        self.assertEqual(parsed["baseline"]["plugin"]["sha256"], sha256(o1))
        self.assertEqual(parsed["candidates"][0]["plugin"]["sha256"], sha256(o3))
        self.assertFalse(self.cand(doc, "o3")["failed"])

    def test_a_variant_in_two_plugins_needs_the_arm_to_say_which(self):
        o1 = os.path.join(EXAMPLES, "o1", "libkt_gemm_blocked.so")
        o3 = os.path.join(EXAMPLES, "o3", "libkt_gemm_blocked.so")
        spec = self.spec([o1, o3], {"variant": "tiled"}, [{"name": "b", "variant": "blocked"}])
        r = run(["validate", spec])
        self.assertEqual(r.returncode, 65, r.stderr)
        self.assertIn(f"{spec}:5:5: plugins[1]: '{o3}': variant 'blocked' of op 'gemm' on cpu "
                      f"is also provided by '{o1}'; an arm that uses it must name its plugin "
                      f"(plugin: {o3})", r.stderr)

    def test_an_arm_plugin_must_be_listed(self):
        o1 = os.path.join(EXAMPLES, "o1", "libkt_gemm_blocked.so")
        spec = self.spec([o1], {"variant": "tiled"},
                         [{"name": "b", "variant": "blocked", "plugin": "other.so"}])
        r = run(["validate", spec])
        self.assertEqual(r.returncode, 65, r.stderr)
        self.assertRegex(r.stderr, r"spec.yaml:\d+:\d+: candidates\[0\]\.plugin: 'other.so' is "
                                   r"not listed under plugins")


class BadPlugins(Base):
    CASES = [
        ("missing", "cannot open: No such file or directory"),
        ("not-elf", "not an ELF shared library (no ELF header)"),
        ("other-arch", f"built for riscv (ELF machine 243); this ktrial runs on {HOST_MACHINE} "
                       "(rebuild it for this machine)"),
        ("no_init", "does not export kt_plugin_init"),
        ("bad_abi", "built for plugin ABI 99.2; this ktrial speaks 1.0 (rebuild it against "
                    "this ktrial's ktrial/plugin.h)"),
        ("init_error", "kt_plugin_init returned -4: the tuning table 'tiles.bin' is missing"),
        ("null_run", "variant 'norun' has a NULL run"),
        ("null_backend", "variant 'nobackend' has no backend (NULL; cpu, cuda or sim)"),
        ("min_max", "variant 'minmax': param 'tile' has min 64 > max 8"),
        ("empty_choice", "variant 'emptychoice': enum param 'fill': choice 1 of 'none||nan' is "
                         "empty, named twice or too long"),
        ("dup_builtin", "variant 'tiled' of op 'gemm' on cpu clashes with the built-in variant "
                        "'tiled'; rename it"),
        ("segv_init", "crashed in kt_plugin_init with signal 11 (Segmentation fault)"),
    ]

    def path_of(self, case):
        if case == "missing":
            return os.path.join(self.tmp, "nonexistent.so")
        if case == "not-elf":
            path = os.path.join(self.tmp, "fake.so")
            with open(path, "w") as f:
                f.write("#!/bin/sh\necho not a library\n")
            return path
        if case == "other-arch":  # e_machine, at byte 18 of the ELF header
            path = os.path.join(self.tmp, "libriscv.so")
            shutil.copy(os.path.join(EXAMPLES, "libkt_gemm_blocked.so"), path)
            with open(path, "r+b") as f:
                f.seek(18)
                f.write((243).to_bytes(2, "little"))
            return path
        return test_plugin(case)

    def test_each_bad_plugin_is_a_validation_error_at_its_entry(self):
        good = os.path.join(EXAMPLES, "libkt_gemm_blocked.so")
        for case, message in self.CASES:
            with self.subTest(case=case):
                bad = self.path_of(case)
                spec = self.spec([good, bad], {"variant": "tiled"},
                                 [{"name": "b", "variant": "blocked"}])
                for cmd in (["validate", spec], ["run", spec, "-o", self.tmp + "/o-" + case]):
                    r = run(cmd)
                    self.assertEqual(r.returncode, 65, r.stderr)
                    self.assertIn(f"{spec}:5:5: plugins[1]: '{bad}': {message}", r.stderr)
                    self.assertFalse(os.path.exists(self.tmp + "/o-" + case))

    def test_kernels_refuses_a_bad_plugin(self):
        r = run(["kernels", "--plugin", test_plugin("null_run")])
        self.assertEqual(r.returncode, 65)
        self.assertIn("variant 'norun' has a NULL run", r.stderr)

    def test_a_bare_file_name_is_probed_as_the_file_it_names(self):
        """'--plugin libp.so' is the file in the working folder, in the probe as in the load,
        not whatever the library path holds under that name."""
        here, elsewhere = os.path.join(self.tmp, "here"), os.path.join(self.tmp, "elsewhere")
        os.makedirs(here)
        os.makedirs(elsewhere)
        shutil.copy(test_plugin("segv_init"), os.path.join(here, "libp.so"))
        shutil.copy(os.path.join(EXAMPLES, "libkt_gemm_blocked.so"),
                    os.path.join(elsewhere, "libp.so"))
        env = dict(os.environ, LD_LIBRARY_PATH=elsewhere)
        r = run(["kernels", "--plugin", "libp.so"], cwd=here, env=env)
        self.assertEqual(r.returncode, 65, r.stderr)  # not ktrial itself killed by SIGSEGV
        self.assertIn("libp.so: crashed in kt_plugin_init with signal 11", r.stderr)


class RunTime(Base):
    def test_crashing_and_misbehaving_candidates_are_rejected_alone(self):
        spec = self.spec([test_plugin("segv_run"), test_plugin("misbehave"),
                          os.path.join(EXAMPLES, "libkt_gemm_blocked.so")],
                         {"variant": "tiled"},
                         [{"name": "segv", "variant": "segv"},
                          {"name": "fpe", "variant": "fpe"},
                          {"name": "nan", "variant": "nan"},
                          {"name": "unwritten", "variant": "unwritten"},
                          {"name": "fails", "variant": "fails"},
                          {"name": "good", "variant": "blocked"}],
                         extra=["roles: [o, qkv]"])
        out = os.path.join(self.tmp, "out")
        r = run(["run", spec, "-o", out])
        self.assertEqual(r.returncode, 1, r.stderr)
        doc = validate_result(self, out)
        self.assertEqual(doc["status"], "complete")
        self.assertEqual(len(doc["points"]), 2)
        with open(os.path.join(out, "points.jsonl")) as f:
            self.assertEqual(len(f.read().splitlines()), 2)
        for point in doc["points"]:
            c = {x["name"]: x for x in point["candidates"]}
            reasons = {k: " ".join(v["reasons"]) for k, v in c.items()}
            for name in ("segv", "fpe", "nan", "unwritten", "fails"):
                self.assertEqual(c[name]["verdict"], "REJECT", reasons[name])
            self.assertIn("signal 11", reasons["segv"])
            self.assertIn("signal 8", reasons["fpe"])
            self.assertIn("NaN", reasons["nan"])
            self.assertIn("unwritten", reasons["unwritten"])
            self.assertIn("not supported", reasons["fails"])
            self.assertNotEqual(c["good"]["verdict"], "REJECT", reasons["good"])

    def test_an_error_is_named_by_its_code_or_told_as_one_line_of_utf8(self):
        spec = self.spec([test_plugin("misbehave")], {"variant": "blas"},
                         [{"name": "silent", "variant": "silent"},
                          {"name": "odd", "variant": "oddcode"},
                          {"name": "garbled", "variant": "garbled"}])
        out = os.path.join(self.tmp, "out")
        r = subprocess.run([KTRIAL, "run", spec, "-o", out, "--no-profile"],
                           capture_output=True, timeout=300)
        self.assertEqual(r.returncode, 1, r.stderr)
        for stream in (r.stdout, r.stderr):
            stream.decode("utf-8")  # strict
            self.assertNotIn(b"\x1b", stream)
        doc = validate_result(self, out)  # json.load: strict UTF-8
        garbled = self.cand(doc, "garbled")["failure"]
        self.assertTrue(garbled.startswith("run failed: line one\\nline two\\x1b[2J \\xff, \u00e9"),
                        garbled)
        self.assertNotIn("\n", garbled)
        self.assertEqual(self.cand(doc, "silent")["failure"],
                         "run failed: returned -4 (KT_EINVAL) without a message (input set 0)")
        self.assertEqual(self.cand(doc, "odd")["failure"],
                         "run failed: returned -12345 (not a KT_E* code) without a message "
                         "(input set 0)")

    def test_a_write_next_to_the_output_is_rejected_and_harms_no_other_arm(self):
        spec = self.spec([test_plugin("overrun")], {"variant": "blas"},
                         [{"name": "over", "variant": "overrun"},
                          {"name": "under", "variant": "underrun"},
                          {"name": "tiled", "variant": "tiled"}])
        out = os.path.join(self.tmp, "out")
        r = run(["run", spec, "-o", out, "--no-profile"])
        self.assertEqual(r.returncode, 1, r.stderr)  # not 70: the baseline is not blamed
        doc = validate_result(self, out)
        (point,) = doc["points"]
        self.assertIsNone(point["error"])
        self.assertEqual(self.cand(doc, "over")["failure"],
                         "check guard: a write 64 bytes past output 'y' (0 bytes before its "
                         "start): wrote outside its output on input set 0")
        self.assertEqual(self.cand(doc, "under")["failure"],
                         "check guard: a write 0 bytes past output 'y' (32 bytes before its "
                         "start): wrote outside its output on input set 0")
        self.assertFalse(self.cand(doc, "tiled")["failed"])

    def test_a_positive_return_is_success_in_the_pairs_and_the_profiling_pass(self):
        spec = self.spec([test_plugin("misbehave")], {"variant": "blas"},
                         [{"name": "pos", "variant": "positive"}])
        out = os.path.join(self.tmp, "out")
        r = run(["run", spec, "-o", out])
        self.assertIn(r.returncode, (0, 1, 2), r.stderr)
        doc = validate_result(self, out)
        for point in doc["points"]:
            c = {x["name"]: x for x in point["candidates"]}["pos"]
            self.assertFalse(c["failed"], c["failure"])
            self.assertGreater(c["n_pairs"], 0)
            for arm in (c, point["baseline"]):
                self.assertEqual(arm["usage"]["calls"], 5, arm["usage"])

    def test_what_a_plugin_prints_stays_off_the_json_on_stdout(self):
        lib = test_plugin("chatty")
        spec = self.spec([lib], {"variant": "blas"}, [{"name": "chatty", "variant": "chatty"}])
        out = os.path.join(self.tmp, "out")
        r = run(["run", spec, "-o", out, "--json", "--no-profile"])
        self.assertIn(r.returncode, (0, 1, 2), r.stderr)
        self.assertEqual(json.loads(r.stdout)["status"], "complete")
        for said in ("loaded", "kt_plugin_init", "prepare", "run", "release"):
            self.assertIn(f"chatty: {said}\n", r.stderr)  # not lost: on stderr
        r = run(["kernels", "--plugin", lib, "--json"])
        self.assertEqual(r.returncode, 0, r.stderr)
        json.loads(r.stdout)

    def test_a_process_a_kernel_forks_neither_holds_the_run_nor_outlives_it(self):
        """The helper keeps the worker's pipe open: ktrial must see the worker end without the
        pipe's end of file (else it waits out the hang limit, 120 s), and end the helper."""
        spec = self.spec([test_plugin("forks")], {"variant": "blas"},
                         [{"name": "forks", "variant": "forks"}])
        out = os.path.join(self.tmp, "out")
        env = dict(os.environ, KT_CALIBRATION_FILE=os.path.join(self.tmp, "calibration.json"))
        r = run(["run", spec, "-o", out, "--no-profile"], cwd=self.tmp, env=env)
        self.assertIn(r.returncode, (0, 1, 2), r.stderr)
        forks = self.cand(validate_result(self, out), "forks")
        self.assertFalse(forks["failed"], forks["failure"])
        self.assertNotIn("hung", r.stderr)
        with open(os.path.join(self.tmp, "forked.pid")) as f:
            pids = [int(line) for line in f]
        self.assertEqual(len(pids), 2)  # the plan's calibration (not cached) and the worker
        alive = []
        for pid in pids:
            try:
                with open(f"/proc/{pid}/stat") as f:
                    if f.read().rsplit(")", 1)[1].split()[0] != "Z":
                        alive.append(pid)
                        os.kill(pid, signal.SIGKILL)
            except OSError:
                pass  # gone
        self.assertEqual(alive, [], "a forked helper outlived the run")

    def test_a_crash_in_release_is_blamed_on_the_release(self):
        spec = self.spec([test_plugin("segv_release")], {"variant": "blas"},
                         [{"name": "rel", "variant": "segvrelease"}])
        out = os.path.join(self.tmp, "out")
        r = run(["run", spec, "-o", out, "--no-profile"])
        self.assertEqual(r.returncode, 1, r.stderr)
        c = self.cand(validate_result(self, out), "rel")
        self.assertEqual(c["verdict"], "REJECT")
        self.assertIn("crashed with signal 11 (Segmentation fault) during release",
                      " ".join(c["reasons"]))

    def hang_spec(self, startup_s):
        spec = self.spec([test_plugin("hang_run")], {"variant": "tiled"},
                         [{"name": "hang", "variant": "hang"}])
        with open(spec) as f:
            text = f.read().replace("flush_cache: false}",
                                    f"flush_cache: false, max_startup_seconds: {startup_s}}}")
        with open(spec, "w") as f:
            f.write(text)
        env = dict(os.environ, KT_CALIBRATION_FILE=os.path.join(self.tmp, "calibration.json"))
        return spec, env

    def test_a_hanging_candidate_is_calibrated_once_within_the_startup_limit(self):
        """The plan's calibration runs every arm; a run plans twice (budget check, run)."""
        spec, env = self.hang_spec(2)
        out = os.path.join(self.tmp, "out")
        r = run(["run", spec, "-o", out], env=env)
        self.assertEqual(r.returncode, 1, r.stderr)
        warning = ("warning: plan: candidate 'hang' gave no answer within 2 s on the "
                   "calibration problem and was killed")
        self.assertEqual(r.stderr.count(warning), 1, r.stderr)
        reasons = " ".join(self.cand(validate_result(self, out), "hang")["reasons"])
        self.assertIn("hung", reasons)

    def children_once_one_stays(self, p):
        """ktrial's children, once one (not the plugin probe) has stayed for a second: the
        hanging arm, first in the plan's calibration, before the run has a folder."""
        children = f"/proc/{p.pid}/task/{p.pid}/children"
        polls = {}
        for _ in range(600):
            with open(children) as f:
                for k in f.read().split():
                    polls[k] = polls.get(k, 0) + 1
            if max(polls.values(), default=0) >= 10:
                break
            subprocess.run(["sleep", "0.1"])
        self.assertGreaterEqual(max(polls.values(), default=0), 10, "no child of ktrial stayed")
        return list(polls)

    def test_an_interrupt_while_the_plan_is_priced_says_nothing_was_written(self):
        spec, env = self.hang_spec(600)
        out = os.path.join(self.tmp, "out")
        p = subprocess.Popen([KTRIAL, "run", spec, "-o", out], env=env, start_new_session=True,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self.children_once_one_stays(p)
        os.killpg(p.pid, signal.SIGINT)  # as a terminal's Ctrl-C: ktrial and its children
        _, err = p.communicate(timeout=60)
        self.assertEqual(p.returncode, -signal.SIGINT, err)
        message = "interrupt: stopped before the run began; nothing was written"
        self.assertEqual(err.count(message), 1, err)  # ktrial says it, not its children too
        self.assertFalse(os.path.exists(out))

    def test_no_child_outlives_a_killed_ktrial(self):
        spec, env = self.hang_spec(600)
        p = subprocess.Popen([KTRIAL, "run", spec, "-o", os.path.join(self.tmp, "out")],
                             env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        kids = self.children_once_one_stays(p)
        p.kill()
        p.wait()

        def alive(pid):
            try:
                with open(f"/proc/{pid}/stat") as f:
                    return f.read().rsplit(")", 1)[1].split()[0] != "Z"
            except OSError:
                return False
        for _ in range(300):
            left = [k for k in kids if alive(k)]
            if not left:
                break
            subprocess.run(["sleep", "0.1"])
        for k in left:
            os.kill(int(k), 9)
        self.assertEqual(left, [], "a child of the killed ktrial still runs")

    def test_plugin_op_runs_with_its_float64_reference(self):
        lib = os.path.join(EXAMPLES, "libkt_rmsnorm.so")
        spec = self.spec([lib], {"variant": "twopass"}, [{"name": "u", "variant": "unrolled"}],
                         op="rmsnorm", extra=[])
        with open(spec) as f:
            text = f.read().replace("phases: [decode]", "phases: [decode, prefill]")
        with open(spec, "w") as f:
            f.write(text)
        out = os.path.join(self.tmp, "out")
        r = run(["run", spec, "-o", out])
        self.assertIn(r.returncode, (0, 1, 2), r.stderr)
        doc = validate_result(self, out)
        self.assertEqual(doc["spec"]["parsed"]["op"], "rmsnorm")
        self.assertEqual([p["id"] for p in doc["points"]],
                         ["tiny/decode/b3", "tiny/prefill/b3/t5"])
        for p in doc["points"]:
            for arm in [p["baseline"]] + p["candidates"]:
                for n in arm["numerics"]:
                    self.assertLess(n["rel_l2"], 1e-6)
                    self.assertGreater(n["rel_l2"], 0)  # fp32 arithmetic, not the reference
        # without the plugin the op is unknown
        with open(spec) as f:
            text = f.read().replace(f"plugins:\n  - {lib}\n", "")
        with open(spec, "w") as f:
            f.write(text)
        r = run(["validate", spec])
        self.assertEqual(r.returncode, 65)
        self.assertIn("op 'rmsnorm' is neither built in nor added by a listed plugin", r.stderr)

    def test_a_plugin_op_shape_always_gets_its_input_params(self):
        """The plan measures an op's generator and reference rates on a calibration point;
        that shape call gets the op's default input params like every other, not NULL."""
        spec = self.spec([test_plugin("op_inputs")], {"variant": "plain"},
                         [{"name": "again", "variant": "plain"}], op="rowscale", extra=[])
        with open(spec) as f:  # the op's only axis is the batch size
            text = "".join(line for line in f if not line.startswith(
                ("models:", "context_lengths:", "phases:")))
        text = text.replace("dtype: fp32", "dtype: fp16").replace(
            "sets: 2}", "sets: 2, params: {width: 31, offset: -2.0, absolute: true, sign: minus}}")
        with open(spec, "w") as f:
            f.write(text)
        calibration = os.path.join(self.tmp, "calibration.json")
        env = dict(os.environ, KT_CALIBRATION_FILE=calibration)
        out = os.path.join(self.tmp, "out")
        r = run(["run", spec, "-o", out, "--no-profile"], env=env)
        self.assertIn(r.returncode, (0, 1, 2), r.stderr)
        (point,) = validate_result(self, out)["points"]
        self.assertEqual(point["flops"], 3 * 31)  # batch 3, width 31 from inputs.params
        with open(test_plugin("op_inputs"), "rb") as f:
            sha = hashlib.sha256(f.read()).hexdigest()[:16]
        with open(calibration) as f:
            cache = json.load(f)
        # measured, not the fallback; under this build of the plugin, so a rebuilt plugin's op
        # and variants are measured again rather than priced by the old build's costs
        self.assertIn(f"rowscale/fp16/llm/plugin={sha}", cache)
        arms = [k for k in cache if k.startswith("arm/") and "/plain/" in k]
        self.assertTrue(arms)
        self.assertTrue(all(f"/plugin={sha}" in k for k in arms), arms)
        # an unbounded float param ('offset') keeps kernels --json within its schema
        import jsonschema
        k = run(["kernels", "--plugin", test_plugin("op_inputs"), "--json"])
        self.assertEqual(k.returncode, 0, k.stderr)
        doc = json.loads(k.stdout)
        with open(os.path.join(SOURCE, "schemas", "kernels.schema.json")) as f:
            jsonschema.validate(doc, json.load(f))
        (op,) = [o for o in doc["ops"] if o["name"] == "rowscale"]
        offset = next(p for p in op["input_params"] if p["name"] == "offset")
        self.assertEqual((offset["min"], offset["max"]), ("-Infinity", "Infinity"))

    def test_a_plugin_op_problem_ktrial_cannot_hold_is_a_validation_error(self):
        spec = self.spec([test_plugin("bad_shape")], {"variant": "copy"},
                         [{"name": "again", "variant": "copy"}], op="badshape", extra=[])
        with open(spec) as f:  # the op's only axis is the batch size
            text = "".join(line for line in f if not line.startswith(
                ("models:", "context_lengths:", "phases:")))
        with open(spec, "w") as f:
            f.write(text)
        self.assertEqual(run(["validate", spec]).returncode, 0)  # KT_TEST_BAD_SHAPE unset
        invalid = "point 'b3': op 'badshape' made an invalid problem: "
        for mode, message in [
                (1, invalid + "1 inputs and 0 outputs (at least one output, 12 tensors at most)"),
                (2, invalid + "10 inputs and 8 outputs (at least one output, 12 tensors at most)"),
                (3, invalid + "tensor 'y' has dims[0] = -5 (at least 1, and at most 2^48 "
                              "elements in all)"),
                (4, invalid + "tensor 1 has a name, dtype 0 and 9 dims (1 to 4)"),
                (5, "point 'b3': op 'badshape': shape returned -1 (KT_ERROR) without a message")]:
            with self.subTest(mode=mode):
                env = dict(os.environ, KT_TEST_BAD_SHAPE=str(mode))
                for cmd in (["validate", spec], ["run", spec, "-o", self.tmp + "/o"]):
                    r = run(cmd, env=env)
                    self.assertEqual(r.returncode, 65, r.stderr)
                    self.assertIn(f"{spec}:5:5: {message}", r.stderr)  # at op:

    def test_kernels_lists_a_plugins_variants_and_params(self):
        r = run(["kernels", "--plugin", os.path.join(EXAMPLES, "libkt_gemm_blocked.so"),
                 "--plugin", os.path.join(EXAMPLES, "libkt_rmsnorm.so")])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("(ABI 1.0)", r.stdout)
        self.assertIn("cpu/blocked: plain C blocked GEMM", r.stdout)
        self.assertRegex(r.stdout, r"block +int +default 64 +\[8, 512\] +tile edge")
        self.assertIn("op rmsnorm: y[M,H]", r.stdout)
        self.assertIn("cpu/unrolled:", r.stdout)
        self.assertNotIn("cpu/tiled", r.stdout)  # only what the plugins provide


class ChangedPlugin(Base):
    def test_resume_and_compare_refuse_a_rebuilt_plugin(self):
        lib = os.path.join(self.tmp, "libgemm.so")
        shutil.copy(os.path.join(EXAMPLES, "o1", "libkt_gemm_blocked.so"), lib)
        spec = self.spec(["libgemm.so"], {"variant": "tiled"},
                         [{"name": "b", "variant": "blocked"}], max_reps=10)
        old, new = os.path.join(self.tmp, "old"), os.path.join(self.tmp, "new")
        self.assertIn(run(["run", spec, "-o", old]).returncode, (0, 1, 2))
        os.remove(lib)
        shutil.copy(os.path.join(EXAMPLES, "o3", "libkt_gemm_blocked.so"), lib)
        r = run(["run", spec, "--resume", old])
        self.assertEqual(r.returncode, 65, r.stderr)
        self.assertIn("error: plugin 'libgemm.so' changed: sha256", r.stderr)
        self.assertIn(run(["run", spec, "-o", new]).returncode, (0, 1, 2))
        r = run(["compare", old, new])
        self.assertEqual(r.returncode, 65, r.stderr)
        self.assertIn("error: plugin 'libgemm.so' changed: sha256", r.stderr)
        r = run(["compare", old, new, "--force"])
        self.assertIn(r.returncode, (0, 1), r.stderr)
        self.assertIn("warning: plugin 'libgemm.so' changed", r.stderr)
        r = run(["run", spec, "--resume", old, "--force"])
        self.assertIn(r.returncode, (0, 1, 2), r.stderr)


class Experiments(Base):
    def test_the_plugin_experiments_validate(self):
        for name in ("plugin-gemm.yaml", "plugin-two-builds.yaml"):
            with self.subTest(spec=name):
                with open(os.path.join(SOURCE, "experiments", name)) as f:
                    text = f.read().replace("../build/", BUILD + "/")
                path = os.path.join(self.tmp, name)
                with open(path, "w") as f:
                    f.write(text)
                r = run(["validate", path])
                self.assertEqual(r.returncode, 0, r.stderr)


if __name__ == "__main__":
    unittest.main()
