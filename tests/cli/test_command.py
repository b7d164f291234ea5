"""Command trials through the built binary: op 'command' on the process backend, with
tests/commands/fake_engine.c (built as kt_fake_engine) as baseline and candidates."""
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
import ktrial_cli as kc  # noqa: E402

BUILD = os.environ.get("KT_BUILD_DIR", "")
ENGINE = os.path.join(BUILD, "tests", "kt_fake_engine")


# a NUL byte (binary output), then the metric line: found by the line's length, not hidden
BINARY = "printf 'a\\000b\\n{\"metric\": \"tokens_per_s\", \"value\": 100}\\n'"
# the metric line indented, as a logger may print it: JSON allows the blanks
INDENTED = "printf '  \\t{\"metric\": \"tokens_per_s\", \"value\": 100}\\n'"
FLOOD = ("import sys; sys.stdout.write('x' * 2000000 + '\\n'); "
         "print('{\"metric\": \"tokens_per_s\", \"value\": 100}')")


def argv(*items):
    return json.dumps(list(items))


def engine(*flags):
    return argv(ENGINE, *flags)


class CommandTrials(unittest.TestCase):
    def setUp(self):
        if not os.path.exists(ENGINE):
            self.skipTest(f"{ENGINE} is not built")
        self.dir = tempfile.mkdtemp(prefix="kt-command-")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def spec(self, body, name="cmd", trials="{warmup: 1, min_repetitions: 6, max_repetitions: 10}",
             extra=""):
        path = os.path.join(self.dir, f"{name}.yaml")
        with open(path, "w") as f:
            f.write(f"version: 1\nname: {name}\nop: command\nbackend: process\n"
                    f"trials: {trials}\n{extra}{body}")
        return path

    def run_spec(self, path, *args, timeout=300):
        out = os.path.join(self.dir, "run-" + os.path.basename(path))
        r = kc.run(["run", path, "-o", out, *args], timeout=timeout)
        return r, out

    def candidate(self, doc, name):
        return [c for p in doc["points"] for c in p["candidates"] if c["name"] == name]

    def test_faster_keep_slower_reject_and_the_archive(self):
        path = self.spec(
            "tasks: [{name: short}, {name: long}]\n"
            f"baseline: {{run: {engine('--sleep-ms', '60', '--out', '{output}')}}}\n"
            "candidates:\n"
            f"  - {{name: faster, run: {engine('--sleep-ms', '15', '--out', '{output}')}}}\n"
            f"  - {{name: slower, run: {engine('--sleep-ms', '240', '--out', '{output}')}}}\n"
            "outputs: {format: f32, compare_to: baseline}\n"
            "thresholds: {numerics: {max_rel_l2: 1.0e-6}}\n",
            trials="{warmup: 1, min_repetitions: 8, max_repetitions: 40}")
        r, out = self.run_spec(path)
        doc = kc.validate_result(self, out)
        self.assertEqual(["KEEP"], [c["verdict"] for c in self.candidate(doc, "faster")], r.stdout)
        self.assertEqual(["REJECT"], [c["verdict"] for c in self.candidate(doc, "slower")])
        self.assertIn("slower", self.candidate(doc, "slower")[0]["reason_codes"])
        self.assertEqual(1, r.returncode)
        point = doc["points"][0]
        for arm in ("baseline", "faster", "slower"):
            for task in ("short", "long"):
                f = os.path.join(out, "outputs", point["id"], arm, f"{task}.f32")
                self.assertEqual(16 * 4, os.path.getsize(f), f)
        for arm in [point["baseline"]] + point["candidates"]:  # the build each arm ran
            self.assertEqual(os.path.realpath(ENGINE), arm["program"]["path"])
            with open(ENGINE, "rb") as f:
                self.assertEqual(hashlib.sha256(f.read()).hexdigest(), arm["program"]["sha256"])
        m = point["baseline"]["metrics"]
        self.assertGreater(m["calls"]["value"], 8)
        self.assertGreater(m["max_rss_mib"]["value"], 0)
        for arm in [point["baseline"]] + point["candidates"]:
            # the floor is the resident set of kt_exec, which started the largest call and
            # whose pages Linux folds into that call's peak: never above it
            am = arm["metrics"]
            self.assertGreater(am["rss_floor_mib"]["value"], 0)
            self.assertLessEqual(am["rss_floor_mib"]["value"], am["max_rss_mib"]["value"])
        self.assertGreaterEqual(m["wall_ms"]["value"], 60)
        self.assertGreater(point["baseline"]["bytes"], 0)  # peak RSS: the memory gate's figure

    def test_run_estimates_the_time_left_from_the_points_measured(self):
        # a command's cost is known only by running it: no invented plan figure
        path = self.spec(
            "batch_sizes: [1, 2]\n"
            f"baseline: {{run: {engine('--sleep-ms', '5')}}}\n"
            f"candidates:\n  - {{name: same, run: {engine('--sleep-ms', '5')}}}\n")
        r, out = self.run_spec(path)
        self.assertIn(r.returncode, (0, 1, 2), r.stderr)
        self.assertIn("plan: 2 points to measure, estimate after the first point", r.stderr)
        self.assertNotRegex(r.stderr, r"plan: [^\n]*estimate 0 s")
        left = re.search(r"\[1/2\] [^\n]*; estimate (\S+) s left", r.stderr)
        self.assertIsNotNone(left, r.stderr)
        self.assertGreaterEqual(float(left.group(1)), 0)  # a number, not nan
        doc = kc.validate_result(self, out)
        self.assertEqual("NaN", doc["timing"]["estimate_seconds"])
        # nor a nan at the end: no estimate is shown as the summary shows what it lacks
        self.assertRegex(r.stdout, r"\ntime: [0-9.]+ s measuring, estimate \u2014\n")
        self.assertNotIn("nan", r.stdout)

    def test_merged_shards_keep_every_points_outputs(self):
        path = self.spec(
            "batch_sizes: [1, 2]\ntasks: [{name: t}]\n"
            f"baseline: {{run: {engine('--sleep-ms', '2', '--out', '{output}')}}}\n"
            f"candidates:\n  - {{name: c, run: {engine('--sleep-ms', '2', '--out', '{output}')}}}\n"
            "outputs: {format: f32, compare_to: baseline}\n")
        shards = [os.path.join(self.dir, f"shard-{i}") for i in (1, 2)]
        for i, d in enumerate(shards, 1):
            r = kc.run(["run", path, "-o", d, "--shard", f"{i}/2"])
            self.assertEqual(0, r.returncode, r.stderr)
        out = os.path.join(self.dir, "merged")
        m = kc.run(["merge", *shards, "-o", out])
        self.assertIn(m.returncode, (0, 1, 2), m.stderr)
        doc = kc.validate_result(self, out)
        self.assertEqual(2, len(doc["points"]))
        for point in doc["points"]:  # each shard ran one point; the merged run has both
            for arm in ("baseline", "c"):
                f = os.path.join(out, "outputs", point["id"], arm, "t.f32")
                self.assertEqual(16 * 4, os.path.getsize(f), f)

    def assert_not_rejected_but_on_time(self, c):
        """An arm whose outputs and runs are right: only timing may judge it. Its speed verdict
        is a statistical one (arms that sleep alike are an A/A pair, wrongly REJECTed a few
        percent of the time by design), so it is not asserted; no other reason may appear."""
        self.assertLessEqual(set(c["reason_codes"]), {"slower", "faster", "undecided"},
                             c["reasons"])

    def assert_rejected(self, doc, name, code, *texts):
        c = self.candidate(doc, name)[0]
        self.assertEqual("REJECT", c["verdict"])
        self.assertEqual(code, c["reason_codes"][0], c["reasons"])
        for t in texts:
            self.assertIn(t, c["reasons"][0])
        return c

    def test_exit_crash_hang_and_a_failure_inside_the_pairs_reject_only_that_candidate(self):
        path = self.spec(
            # the baseline is 20x slower than 'fine', so a REJECT of 'fine' could only come from
            # the others' failures leaking into it, never from timing noise (an A/A pair here
            # would be a wrong REJECT a few percent of the time by design)
            f"baseline: {{run: {engine('--sleep-ms', '20')}}}\n"
            "candidates:\n"
            f"  - {{name: exits, run: {engine('--exit', '3')}}}\n"
            f"  - {{name: crashes, run: {engine('--segv')}}}\n"
            f"  - {{name: hangs, run: {engine('--hang')}, timeout_s: 1}}\n"
            f"  - {{name: late, run: {engine('--fail-at', '3', '--rep', '{repetition}')}}}\n"
            f"  - {{name: fine, run: {engine('--sleep-ms', '1')}}}\n"
            # the program is there, its folder is not: the reason says which is missing
            f"  - {{name: nowhere, run: {engine()}, cwd: 'no such dir'}}\n")
        start = time.monotonic()
        r, out = self.run_spec(path, timeout=120)
        self.assertLess(time.monotonic() - start, 100)  # the hang was killed, not waited for
        doc = kc.validate_result(self, out)
        exits = self.assert_rejected(doc, "exits", "command_failed", "exit status 3",
                                     "exiting 3 as asked", ENGINE)
        # stderr's last newline is not kept as a space before the point's name
        self.assertIn("exiting 3 as asked at ", exits["reasons"][0])
        self.assert_rejected(doc, "crashes", "command_failed", "signal 11")
        self.assert_rejected(doc, "hangs", "timeout", "timed out after 1 s")
        late = self.assert_rejected(doc, "late", "command_failed", "repetition 3",
                                    "exit status 4")
        self.assertEqual(3, late["repetitions"] if "repetitions" in late else len(late["pairs"]))
        self.assert_rejected(doc, "nowhere", "command_failed", "cannot enter its cwd",
                             os.path.join(self.dir, "no such dir"), ENGINE)
        self.assertNotEqual("REJECT", self.candidate(doc, "fine")[0]["verdict"])
        point = doc["points"][0]["id"]
        with open(os.path.join(out, "outputs", point, "late", "default.r3.failure.txt")) as f:
            self.assertIn("failing at repetition 3 as asked", f.read())
        self.assertEqual(1, r.returncode, r.stderr)

    def test_processes_a_call_leaves_behind_are_killed_with_a_warning(self):
        # a sleep of an unusual length marks this test's leftovers among the machine's processes
        left = "sleep 31.4159"
        path = self.spec(
            f"baseline: {{run: {engine('--sleep-ms', '5')}}}\n"
            f"candidates: [{{name: leaves, run: {argv('sh', '-c', left + ' & exit 0')}}}]\n",
            trials="{warmup: 1, min_repetitions: 6, max_repetitions: 6}")
        r, out = self.run_spec(path)
        self.assertIn(r.returncode, (0, 1, 2), r.stdout + r.stderr)
        self.assertEqual(1, r.stderr.count("warning: a call of 'leaves' at b1 left processes "
                                           "running after it exited; they were killed"), r.stderr)
        ps = subprocess.run(["pgrep", "-f", left], capture_output=True, text=True)
        self.assertEqual("", ps.stdout)  # none of the 13 calls' sleeps runs on

    def test_a_failing_baseline_is_a_point_error(self):
        path = self.spec(f"baseline: {{run: {engine('--exit', '9')}}}\n"
                         f"candidates: [{{name: c, run: {engine()}}}]\n")
        r, out = self.run_spec(path)
        doc = kc.validate_result(self, out)
        self.assertIn("exit status 9", doc["points"][0]["error"])
        self.assertEqual(["not_measured"], self.candidate(doc, "c")[0]["reason_codes"])
        self.assertEqual(70, r.returncode, r.stdout + r.stderr)
        # the overall line says what exit 70 means, not INCONCLUSIVE
        overall = "overall: ERROR at 1 of 1 point the baseline or the set-up failed"
        self.assertIn(overall, r.stdout)
        s = kc.run(["show", out])  # exits 0 once printed; the state line gives the run's 70
        self.assertIn(overall, s.stdout)
        j = kc.run(["show", out, "--json"])
        shown = json.loads(j.stdout)
        self.assertEqual("ERROR", shown["overall"]["state"])
        import jsonschema
        with open(os.path.join(kc.SOURCE, "schemas", "show.schema.json")) as f:
            jsonschema.Draft7Validator(json.load(f)).validate(shown)

    def test_wrong_outputs_fail_the_numerics_gate(self):
        path = self.spec(
            "tasks: [{name: a}]\n"
            f"baseline: {{run: {engine('--out', '{output}', '--n', '32')}}}\n"
            "candidates:\n"
            f"  - {{name: close, run: {engine('--out', '{output}', '--n', '32', '--perturb', '1e-9')}}}\n"
            f"  - {{name: wrong, run: {engine('--out', '{output}', '--n', '32', '--perturb', '0.5')}}}\n"
            f"  - {{name: short, run: {engine('--out', '{output}', '--n', '31')}}}\n"
            f"  - {{name: silent, run: {engine()}}}\n"
            "outputs: {format: f32}\n"
            "thresholds: {numerics: {max_rel_l2: 1.0e-3, min_cosine: 0.999}}\n")
        r, out = self.run_spec(path)
        doc = kc.validate_result(self, out)
        self.assert_not_rejected_but_on_time(self.candidate(doc, "close")[0])
        wrong = self.candidate(doc, "wrong")[0]
        self.assertEqual("REJECT", wrong["verdict"])
        self.assertIn("rel_l2", wrong["reason_codes"])
        self.assert_rejected(doc, "short", "output", "31 values", "32")
        self.assert_rejected(doc, "silent", "output", "missing")
        point = doc["points"][0]["id"]
        self.assertTrue(os.path.exists(os.path.join(out, "outputs", point, "short", "a.failing.f32")))

    def test_json_numbers_are_every_number_of_the_document_in_order(self):
        def arm(perturb):
            return engine("--out", "{output}", "--format", "json", "--n", "8", "--perturb", perturb)
        path = self.spec(
            f"baseline: {{run: {arm('0')}}}\n"
            f"candidates: [{{name: same, run: {arm('0')}}}, {{name: wrong, run: {arm('0.5')}}}]\n"
            "outputs: {format: json-numbers}\n"
            "thresholds: {numerics: {max_rel_l2: 1.0e-6}}\n")
        r, out = self.run_spec(path)
        doc = kc.validate_result(self, out)
        same = self.candidate(doc, "same")[0]
        self.assert_not_rejected_but_on_time(same)
        self.assertEqual(9, same["numerics"][0]["elems"])  # "tokens": 8, then 8 logits
        self.assertEqual(0, same["numerics"][0]["rel_l2"])
        self.assertIn("rel_l2", self.candidate(doc, "wrong")[0]["reason_codes"])

    def test_text_outputs_against_expect_files_show_the_first_differing_line(self):
        expect = os.path.join(self.dir, "a.expected.txt")
        subprocess.run([ENGINE, "--out", expect, "--format", "text", "--n", "5"], check=True,
                       capture_output=True)
        path = self.spec(
            "tasks: [{name: a, expect: a.expected.txt}]\n"
            f"baseline: {{run: {engine('--out', '{output}', '--format', 'text', '--n', '5')}}}\n"
            "candidates:\n"
            f"  - {{name: same, run: {engine('--out', '{output}', '--format', 'text', '--n', '5')}}}\n"
            f"  - {{name: differs, run: {engine('--out', '{output}', '--format', 'text', '--n', '5', '--perturb', '1')}}}\n"
            "outputs: {format: text, compare_to: expect}\n")
        r, out = self.run_spec(path)
        doc = kc.validate_result(self, out)
        self.assert_not_rejected_but_on_time(self.candidate(doc, "same")[0])
        self.assert_rejected(doc, "differs", "output", "line 1", "token 0: 1.841471",
                             "token 0: 0.841471")
        # a task whose expect file is missing: a point error that names the expect file
        os.remove(expect)
        shutil.rmtree(out)
        r, out = self.run_spec(path)
        self.assertEqual(70, r.returncode, r.stdout + r.stderr)
        doc = kc.validate_result(self, out)
        self.assertIn(f"the expect file '{expect}' is missing", doc["points"][0]["error"])

    def test_better_higher_uses_the_reported_throughput(self):
        def arm(v):
            return engine("--metric", "tokens_per_s", "--value", v)
        path = self.spec(
            f"baseline: {{run: {arm('100')}}}\n"
            f"candidates: [{{name: more, run: {arm('150')}}}, {{name: less, run: {arm('50')}}},"
            f" {{name: mute, run: {engine()}}},"
            # 2 MB of text, then the metric line: past the 1 MiB ktrial reads, and said so
            f" {{name: flood, run: {argv(sys.executable, '-c', FLOOD)}}},"
            f" {{name: binary, run: {argv('sh', '-c', BINARY)}}},"
            f" {{name: indented, run: {argv('sh', '-c', INDENTED)}}}]\n"
            "measure: {metric: tokens_per_s, better: higher, report: json-lines}\n")
        r, out = self.run_spec(path)
        doc = kc.validate_result(self, out)
        more = self.candidate(doc, "more")[0]
        self.assertEqual("KEEP", more["verdict"], more["reasons"])
        self.assertAlmostEqual(1.5, more["speedup"], places=6)
        self.assertEqual("REJECT", self.candidate(doc, "less")[0]["verdict"])
        self.assertAlmostEqual(0.5, self.candidate(doc, "less")[0]["speedup"], places=6)
        self.assert_rejected(doc, "mute", "metric_missing", "tokens_per_s")
        self.assert_rejected(doc, "flood", "metric_missing", "more than 1048576 bytes on stdout",
                             "tokens_per_s")
        self.assertAlmostEqual(1.0, self.candidate(doc, "binary")[0]["speedup"], places=6)
        self.assertAlmostEqual(1.0, self.candidate(doc, "indented")[0]["speedup"], places=6)
        # the other metric the command printed is kept with the arm's costs
        self.assertEqual(12, doc["points"][0]["baseline"]["metrics"]["rss_estimate"]["value"])

    def test_medians_of_a_reported_metric_show_as_that_metric(self):
        """The medians of a metric spec are the metric's values, named in the legend: a
        throughput of 40000 tokens/s is not '25.00 us', and a reported latency in ms is no
        time in ns."""
        def arm(metric, v):
            return engine("--metric", metric, "--value", v)
        for metric, better, base, cand, speedup in (("tokens_per_s", "higher", "40000", "80000",
                                                     "cand/base tokens_per_s"),
                                                    ("ttft_ms", "lower", "250", "125",
                                                     "base/cand ttft_ms")):
            path = self.spec(
                f"baseline: {{run: {arm(metric, base)}}}\n"
                f"candidates: [{{name: other, run: {arm(metric, cand)}}}]\n"
                f"measure: {{metric: {metric}, better: {better}}}\n", name=f"m-{better}")
            r, out = self.run_spec(path)
            kc.validate_result(self, out)
            shown = kc.run(["show", out])
            report = os.path.join(self.dir, f"{better}.html")
            kc.run(["report", out, "-o", report])
            with open(report) as f:
                html = f.read()
            for text in (r.stdout, shown.stdout):
                self.assertIn(f"medians of the reported {metric} over the pairs, {better} is "
                              f"better", text)
                self.assertIn(f"speedup = {speedup}", text)
                row = [ln for ln in text.splitlines() if ln.startswith("b1 ")][0]
                self.assertRegex(row, rf"\s{base}\s+{cand}\s+2\.000 ", text)
                self.assertNotRegex(row, r"\d (ns|us|ms|s) ")
            self.assertIn(f"<td class='num'>{base}</td><td class='num'>{cand}</td>", html)

    def test_a_task_file_that_cannot_be_read_is_a_warning_at_its_line(self):
        with open(os.path.join(self.dir, "here.json"), "w") as f:
            f.write("{}")
        path = self.spec(
            "tasks:\n"
            "  - {name: ok, input: here.json}\n"
            "  - {name: typo, input: hrer.json, expect: here.json}\n"
            "  - {name: dir, input: .}\n"  # line 9
            "baseline: {run: [\"true\", \"{input}\"]}\n"
            "candidates: [{name: c, run: [\"true\", \"{input}\"]}]\n")
        r = kc.run(["validate", path])
        self.assertEqual(0, r.returncode, r.stdout + r.stderr)  # a setup step may write it
        with open(path) as f:
            lines = f.read().split("\n")

        def at(value):  # file:line:col of a task's input value
            row = next(i for i, line in enumerate(lines) if f"input: {value}" in line)
            return f"{path}:{row + 1}:{lines[row].index(f'input: {value}') + len('input: ') + 1}"
        self.assertIn(f"{at('hrer.json')}: warning: tasks[1].input: "
                      f"'{os.path.join(self.dir, 'hrer.json')}': No such file or directory "
                      "(unless a setup step writes it, every call of this task fails)", r.stderr)
        self.assertIn(f"{at('.}')}: warning: tasks[2].input: '{self.dir}/.': not a regular file",
                      r.stderr)
        self.assertEqual(2, r.stderr.count("warning: tasks["), r.stderr)

    def test_arguments_stay_whole_env_cwd_setup_teardown(self):
        log = os.path.join(self.dir, "log.txt")
        args = os.path.join(self.dir, "args-{arm}-{task}.txt")
        os.mkdir(os.path.join(self.dir, "sub dir"))
        evil = "x; touch pwned 'q' \"$(touch pwned3)\" `id`.json"
        with open(os.path.join(self.dir, evil), "w") as f:
            f.write("{}")

        def arm(tag):
            run = engine("--args", args, "--tag", "{input}", "--format", "a b; touch pwned2",
                         "--log", log, "--env-name", "KT_TEST_VAR")
            return (f"run: {run}, setup: {engine('--log', log, '--tag', 'setup-' + tag)}, "
                    f"teardown: {engine('--log', log, '--tag', 'teardown-' + tag)}")
        path = self.spec(
            f"tasks: [{{name: t1, input: {json.dumps(evil)}}}]\n"
            f"baseline: {{{arm('base')}}}\n"
            f"candidates: [{{name: cand, {arm('cand')}, env: {{KT_TEST_VAR: '{{task}}-{{batch_size}}'}},"
            " cwd: 'sub dir'}]\n",
            trials="{warmup: 0, min_repetitions: 6, max_repetitions: 6}")
        r, out = self.run_spec(path)
        self.assertIn(r.returncode, (0, 1, 2), r.stdout + r.stderr)
        with open(os.path.join(self.dir, "args-cand-t1.txt")) as f:
            got = f.read().split("\n")
        self.assertEqual([ENGINE, "--args", os.path.join(self.dir, "args-cand-t1.txt"), "--tag",
                          os.path.join(self.dir, evil), "--format", "a b; touch pwned2", "--log",
                          log, "--env-name", "KT_TEST_VAR", ""], got)
        for where in (self.dir, os.path.join(self.dir, "sub dir"), os.getcwd()):
            for name in ("pwned", "pwned2", "pwned3"):
                self.assertFalse(os.path.exists(os.path.join(where, name)), where)
        with open(log) as f:
            lines = f.read().splitlines()
        tags = [line.split(" ")[0] for line in lines]
        self.assertEqual(["setup-base", "setup-cand"], tags[:2])
        self.assertEqual(["teardown-cand", "teardown-base"], tags[-2:])
        calls = lines[2:-2]
        self.assertEqual(12, len(calls))  # 6 pairs, both arms, no warmup
        cand = [c for c in calls if "KT_TEST_VAR=t1-1 " in c]
        base = [c for c in calls if "KT_TEST_VAR=(unset) " in c]
        self.assertEqual(6, len(cand))
        self.assertEqual(6, len(base))
        self.assertTrue(all(c.endswith("cwd=" + os.path.join(self.dir, "sub dir")) for c in cand))
        self.assertTrue(all(c.endswith("cwd=" + self.dir) for c in base))

    def test_an_unknown_placeholder_is_an_error_at_its_line_and_column(self):
        path = self.spec(
            f"baseline: {{run: {engine('--tag', '{batch_size}')}}}\n"
            "candidates:\n"
            f"  - {{name: c, run: [\"{ENGINE}\", \"--tag\", \"x{{modle}}\"]}}\n"
            "  - {name: d, run: [\"true\"], env: {A: \"{nope}\"}}\n"
            "  - {name: e, run: [\"true\"], setup: [\"true\", \"{task}\"]}\n"
            "  - {name: f, run: [\"\", \"x\"]}\n"
            # its outputs would be kept in outputs/<point>/../, outside the arms' folders
            "  - {name: .., run: [\"true\"]}\n")
        r = kc.run(["validate", path])
        self.assertEqual(65, r.returncode, r.stdout + r.stderr)
        with open(path) as f:
            lines = f.read().split("\n")
        row = next(i for i, line in enumerate(lines) if "{modle}" in line)
        col = lines[row].index("{modle}") + 1
        self.assertIn(f"{path}:{row + 1}:{col}: candidates[0].run[2]: unknown placeholder "
                      "'{modle}'", r.stderr)
        row = next(i for i, line in enumerate(lines) if "{nope}" in line)
        col = lines[row].index("{nope}") + 1
        self.assertIn(f"{path}:{row + 1}:{col}: candidates[1].env.A: unknown placeholder",
                      r.stderr)
        self.assertIn("candidates[2].setup[1]: '{task}' varies per call", r.stderr)
        row = next(i for i, line in enumerate(lines) if "name: f," in line)
        col = lines[row].index('""') + 1
        self.assertIn(f"{path}:{row + 1}:{col}: candidates[3].run[0]: the program is empty",
                      r.stderr)
        row = next(i for i, line in enumerate(lines) if "name: ..," in line)
        col = lines[row].index("..") + 1
        self.assertIn(f"{path}:{row + 1}:{col}: candidates[4].name: '..' would lead the archive "
                      "out", r.stderr)

    def test_without_outputs_rel_l2_is_not_measured(self):
        # nothing compared: no worst rel_l2 of 0 (a perfect result) in result.json, show or
        # the summary; the table shows "—"
        path = self.spec(
            f"baseline: {{run: {engine('--sleep-ms', '5')}}}\n"
            f"candidates:\n  - {{name: same, run: {engine('--sleep-ms', '5')}}}\n",
            trials="{warmup: 0, min_repetitions: 6, max_repetitions: 6}",
            extra=f"threads: {os.cpu_count() + 1}\n")
        r, out = self.run_spec(path)
        self.assertIn(r.returncode, (0, 1, 2), r.stderr)
        # a command's threads are its own business: no warning about ktrial's
        self.assertNotRegex(r.stderr, r"threads: \d+ is more than|\d+ threads\)")
        doc = kc.validate_result(self, out)
        c = self.candidate(doc, "same")[0]
        self.assertEqual("NaN", c["worst_rel_l2"])
        self.assertEqual("NaN", c["error_ratio"])
        row = next(line for line in r.stdout.splitlines() if line.startswith("b1 ") and "same" in line)
        self.assertNotRegex(row, r"\s0\s")
        s = kc.run(["show", out, "--json"])
        self.assertIsNone(json.loads(s.stdout)["points"][0]["candidates"][0]["rel_l2"])

    def test_numerics_limits_without_outputs_are_an_error_at_their_line(self):
        # a limit chosen before the run that nothing would check must not pass silently
        path = self.spec(
            f"baseline: {{run: {engine('--sleep-ms', '1')}}}\n"
            f"candidates:\n  - {{name: same, run: {engine('--sleep-ms', '1')}}}\n"
            "thresholds:\n  numerics:\n    max_rel_l2: 0.05\n")
        r = kc.run(["validate", path])
        self.assertEqual(65, r.returncode, r.stdout + r.stderr)
        with open(path) as f:
            row = f.read().split("\n").index("    max_rel_l2: 0.05") + 1
        self.assertIn(f"{path}:{row}:5: thresholds.numerics: a command trial checks numbers only "
                      "in its outputs", r.stderr)

    def test_validate_plan_prices_calls_with_one_calibration_call_per_arm(self):
        log = os.path.join(self.dir, "calls.txt")
        path = self.spec(
            f"baseline: {{run: {engine('--sleep-ms', '300', '--log', log, '--tag', 'base')}}}\n"
            f"candidates: [{{name: c, run: {engine('--sleep-ms', '300', '--log', log, '--tag', 'c')}}}]\n",
            trials="{warmup: 0, min_repetitions: 6, max_repetitions: 10}")
        r = kc.run(["validate", path])
        self.assertEqual(0, r.returncode, r.stderr)
        self.assertFalse(os.path.exists(log))  # plain validate runs nothing
        r = kc.run(["validate", "--plan", path])
        self.assertEqual(0, r.returncode, r.stderr)
        self.assertIn("2 of 2 succeeded", r.stdout)
        with open(log) as f:
            self.assertEqual(["base", "c"], [line.split(" ")[0] for line in f])
        total = float(r.stdout.split("total: estimate ")[1].split(" s")[0])
        self.assertGreaterEqual(total, 10 * 2 * 0.3)  # 10 pairs of two 0.3 s calls at least
        # and nothing a command trial never runs: no correctness step per input set, no
        # profiling pass (they made this plan 36 calls, 80% over)
        self.assertIn("up to 20 calls per point", r.stdout)
        # an arm whose call fails stops at its first failure: the plan prices that failure once
        # a point, and says which arm failed and why
        path = self.spec(f"baseline: {{run: {engine()}}}\n"
                         "candidates: [{name: gone, run: [\"/no/such/engine\"]}]\n", name="gone")
        r = kc.run(["validate", "--plan", path])
        self.assertEqual(0, r.returncode, r.stderr)
        self.assertIn("1 of 2 succeeded", r.stdout)
        self.assertRegex(r.stderr, r"warning: the calibration call of 'gone' at b1 failed after "
                         r"[0-9.e-]+ s \(priced as one such failure per point\): command could "
                         r"not start: No such file or directory")
        # a hang costs its timeout at every point (it was priced as free)
        path = self.spec(f"batch_sizes: [1, 2]\nbaseline: {{run: {engine()}}}\n"
                         f"candidates: [{{name: hangs, run: {engine('--hang')}, timeout_s: 1}}]\n",
                         name="hangs")
        r = kc.run(["validate", "--plan", path])
        self.assertEqual(0, r.returncode, r.stderr)
        self.assertIn("failed after 1", r.stderr)
        total = float(r.stdout.split("total: estimate ")[1].split(" s")[0])
        self.assertGreaterEqual(total, 2 * 1.0)

    def test_show_lists_the_tasks_whose_outputs_differ_most(self):
        # each task's name is the candidate's perturbation of its output
        path = self.spec(
            "tasks: [{name: '0.001'}, {name: '0.1'}, {name: '0.01'}]\n"
            f"baseline: {{run: {engine('--out', '{output}')}}}\n"
            f"candidates: [{{name: shifted, run: {engine('--out', '{output}', '--perturb', '{task}')}}}]\n"
            "outputs: {format: f32}\n")
        r, out = self.run_spec(path)
        doc = kc.validate_result(self, out)
        self.assertEqual(["0.001", "0.1", "0.01"], doc["spec"]["parsed"]["command"]["tasks"])
        s = kc.run(["show", out])
        self.assertEqual(0, s.returncode, s.stderr)
        lines = s.stdout.split("tasks whose outputs differ most")[1].splitlines()[2:5]
        self.assertEqual(["0.1", "0.01", "0.001"], [line.split()[0] for line in lines])
        point = doc["points"][0]["id"]
        self.assertTrue(lines[0].endswith(os.path.join(out, "outputs", point, "shifted", "0.1.f32")))

    def test_a_second_ctrl_c_kills_the_running_command(self):
        log = os.path.join(self.dir, "hang.txt")
        path = self.spec(
            f"baseline: {{run: {engine('--sleep-ms', '1')}}}\n"
            f"candidates: [{{name: slow, run: {engine('--log', log, '--tag', 'started', '--hang')},"
            " timeout_s: 3000}]\n",
            trials="{warmup: 0, min_repetitions: 6, max_repetitions: 6}")
        out = os.path.join(self.dir, "run")
        p = subprocess.Popen([kc.KTRIAL, "run", path, "-o", out], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 120
        while not os.path.exists(log) and time.monotonic() < deadline:
            time.sleep(0.05)
        self.assertTrue(os.path.exists(log))
        p.send_signal(signal.SIGINT)  # the first lets the call finish: it never will
        time.sleep(0.5)
        self.assertIsNone(p.poll())
        p.send_signal(signal.SIGINT)
        p.communicate(timeout=60)
        self.assertEqual(130, p.returncode)
        doc = kc.validate_result(self, out)
        self.assertEqual("interrupted", doc["points"][0]["stop_reason"])
        self.assertEqual(["not_measured"], self.candidate(doc, "slow")[0]["reason_codes"])

    def test_command_keys_belong_to_op_command_only(self):
        path = os.path.join(self.dir, "sim.yaml")
        kc.sim_spec(path)
        with open(path, "a") as f:
            f.write("tasks: [{name: a}]\n")
        r = kc.run(["validate", path])
        self.assertEqual(65, r.returncode)
        self.assertIn("only op 'command' has 'tasks'", r.stderr)


if __name__ == "__main__":
    unittest.main()
