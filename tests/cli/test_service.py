"""Service trials through the built binary: op 'service' with tests/service/tiny_server.py (a
Python http.server) as baseline and candidates. The differences are large (20 ms against 2 ms,
a p99 of 600 ms against 20 ms) so that no assertion depends on this machine's speed."""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
import ktrial_cli as kc  # noqa: E402

SERVER = os.path.abspath(os.path.join(kc.SOURCE, "tests", "service", "tiny_server.py"))
PYTHON = "/usr/bin/python3"


def read_pid(path):
    with open(path) as f:
        return int(f.read())


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie is no running server; it lingers only until its parent reaps it
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


class ServiceTrials(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="kt-service-")

    def tearDown(self):
        for name in os.listdir(self.dir):  # never leave a server behind, whatever failed
            if name.endswith(".pid"):
                try:
                    os.kill(read_pid(os.path.join(self.dir, name)), signal.SIGKILL)
                except (ProcessLookupError, ValueError):
                    pass
        shutil.rmtree(self.dir, ignore_errors=True)

    def server(self, name, *flags):
        pidfile = os.path.join(self.dir, f"{name}.pid")
        return json.dumps([PYTHON, SERVER, "--port", "{port}", "--pidfile", pidfile, *flags])

    def spec(self, candidates, base_flags=("--delay-ms", "20"), tasks=None, rounds=(2, 3),
             load="{mode: closed, concurrency: 1, requests_per_round: 10}", thresholds="",
             ready_s=20):
        tasks = tasks or [("t0", '{"prompt": "a"}', None)]
        lines = ["version: 1", "name: svc", "op: service", "backend: process", "tasks:"]
        for name, body, expect in tasks:
            with open(os.path.join(self.dir, f"{name}.json"), "w") as f:
                f.write(body)
            extra = ""
            if expect is not None:
                with open(os.path.join(self.dir, f"{name}.expected.txt"), "w") as f:
                    f.write(expect + "\n")
                extra = f", expect: {name}.expected.txt"
            lines.append(f"  - {{name: {name}, input: {name}.json{extra}}}")
        lines.append(f"baseline: {{setup: {self.server('baseline', *base_flags)}, "
                     f"ready: {{http_get: /health, timeout_s: {ready_s}}}}}")
        lines.append("candidates:")
        for name, flags in candidates.items():
            lines.append(f"  - {{name: {name}, setup: {self.server(name, *flags)}, "
                         f"ready: {{http_get: /health, timeout_s: {ready_s}}}}}")
        lines += ["request: {method: POST, path: /v1/completions, stream: none, timeout_s: 5}",
                  f"load: {load}", "measure: {metric: e2e}",
                  f"trials: {{warmup: 1, min_repetitions: {rounds[0]}, "
                  f"max_repetitions: {rounds[1]}, max_seconds_per_point: 120, order: alternate}}",
                  "thresholds:", "  latency: {min_speedup: 1.05" +
                  (", max_p99_ratio: 1.5" if "p99" in thresholds else "") + "}"]
        if "errors" in thresholds:
            lines.append("  errors: {max_rate: 0.05}")
        path = os.path.join(self.dir, "svc.yaml")
        with open(path, "w") as f:
            f.write("\n".join(lines) + "\n")
        return path

    def run_spec(self, path, timeout=240):
        out = os.path.join(self.dir, "run")
        r = kc.run(["run", path, "-o", out], timeout=timeout)
        return r, out

    def cand(self, doc, name):
        return [c for p in doc["points"] for c in p["candidates"] if c["name"] == name][0]

    def pids(self):
        return {n[:-4]: read_pid(os.path.join(self.dir, n))
                for n in os.listdir(self.dir) if n.endswith(".pid")}

    def assert_no_server(self):
        for name, pid in self.pids().items():
            self.assertFalse(alive(pid), f"server '{name}' (pid {pid}) still runs")

    def test_faster_candidate_is_kept_and_measured_apart(self):
        r, out = self.run_spec(self.spec({"fast": ("--delay-ms", "2")}))
        self.assertEqual(0, r.returncode, r.stdout + r.stderr)
        doc = kc.validate_result(self, out)
        c = self.cand(doc, "fast")
        self.assertEqual("KEEP", c["verdict"], r.stdout)
        self.assertGreater(c["speedup"], 1.05)
        base = doc["points"][0]["baseline"]["service"]
        cs = c["service"]  # a candidate's arm fields sit in its own object
        for s in (base, cs):
            self.assertEqual(1, s["starts"])
            self.assertGreater(s["startup_s"], 0)
            self.assertGreater(s["cold_ms"], 0)
            self.assertGreater(s["requests_per_s"], 0)
            self.assertEqual(0, s["errors"])
            self.assertGreater(s["peak_rss_mib"], 1)
            self.assertLessEqual(s["p50_ms"]["low"], s["p50_ms"]["value"])
            self.assertLessEqual(s["p50_ms"]["value"], s["p99_ms"]["value"])
        self.assertGreater(base["p50_ms"]["value"], cs["p50_ms"]["value"])
        for word in ("serving at", "startup", "cold ms", "p99", "req/s", "peak RSS"):
            self.assertIn(word, r.stdout)
        self.assert_no_server()
        # the same figures read back into every report
        junit, md, html = (os.path.join(self.dir, n) for n in ("j.xml", "m.md", "r.html"))
        show = kc.run(["show", out, "--junit", junit, "--markdown", md])
        self.assertEqual(0, show.returncode, show.stderr)
        self.assertIn("serving at", show.stdout)
        self.assertEqual(0, kc.run(["report", out, "-o", html]).returncode)
        for path in (junit, md, html):
            with open(path) as f:
                text = f.read()
            self.assertRegex(text, r"fast: startup [0-9.]+ s, cold [0-9.]+ ms, p50 [0-9.]+ \[")
            self.assertIn("peak RSS", text)

    def test_exclusive_restarts_per_round(self):
        path = self.spec({"fast": ("--delay-ms", "2")}, rounds=(2, 2))
        with open(path, "a") as f:
            f.write("exclusive: true\n")
        r, out = self.run_spec(path)
        self.assertEqual(0, r.returncode, r.stdout + r.stderr)
        doc = kc.validate_result(self, out)
        c = self.cand(doc, "fast")
        self.assertEqual("KEEP", c["verdict"], r.stdout)
        for s in (doc["points"][0]["baseline"]["service"], c["service"]):
            self.assertEqual(3, s["starts"])  # the check at prepare, then one per round
            self.assertEqual(2, s["rounds"])
        self.assert_no_server()

    def test_better_median_worse_p99_is_rejected(self):
        # two requests in ten take 600 ms: the candidate's median is 2 ms, its p99 600 ms, far
        # above any p99 the baseline's 20 ms can reach on a loaded machine
        tasks = [(f"t{i}", '{"prompt": "a"}', None) for i in range(8)]
        tasks += [("tail1", '{"prompt": "slow"}', None), ("tail2", '{"prompt": "slow"}', None)]
        path = self.spec({"spiky": ("--delay-ms", "2", "--slow-ms", "600")},
                         base_flags=("--delay-ms", "20"), tasks=tasks, thresholds="p99",
                         load="{mode: closed, concurrency: 1, requests_per_round: 20}")
        r, out = self.run_spec(path)
        doc = kc.validate_result(self, out)
        c = self.cand(doc, "spiky")
        self.assertEqual("REJECT", c["verdict"], r.stdout)
        self.assertIn("p99", c["reason_codes"])
        self.assertGreater(c["service"]["p99_ratio"]["low"], 1.5)
        self.assertEqual(1, r.returncode)
        self.assert_no_server()

    def test_errors_reject_with_stderr(self):
        r, out = self.run_spec(self.spec({"broken": ("--delay-ms", "2", "--fail")},
                                         thresholds="errors"))
        doc = kc.validate_result(self, out)
        c = self.cand(doc, "broken")
        self.assertEqual("REJECT", c["verdict"])
        self.assertIn("errors", c["reason_codes"])
        reason = c["reasons"][c["reason_codes"].index("errors")]
        self.assertIn("http", reason)
        self.assertIn("failing on purpose", reason)
        self.assert_no_server()

    def test_never_ready_is_rejected_and_stopped(self):
        r, out = self.run_spec(self.spec({"late": ("--never-ready",)}, ready_s=1.5))
        doc = kc.validate_result(self, out)
        c = self.cand(doc, "late")
        self.assertEqual("REJECT", c["verdict"])
        self.assertIn("server", c["reason_codes"])
        self.assertIn("never ready", " ".join(c["reasons"]))
        self.assertIn("late", self.pids())
        self.assert_no_server()

    def test_dies_mid_round_is_rejected(self):
        r, out = self.run_spec(self.spec({"dies": ("--delay-ms", "2", "--die-after", "8")}))
        doc = kc.validate_result(self, out)
        c = self.cand(doc, "dies")
        self.assertEqual("REJECT", c["verdict"])
        reason = " ".join(c["reasons"])
        self.assertIn("exited with status 3", reason)
        self.assertIn("dying on purpose", reason)
        self.assert_no_server()

    def test_changed_answer_is_named(self):
        tasks = [("same", '{"prompt": "a"}', "hello"), ("other", '{"prompt": "b"}', "goodbye")]
        r, out = self.run_spec(self.spec({"fast": ("--delay-ms", "2")}, tasks=tasks))
        doc = kc.validate_result(self, out)
        self.assertEqual(["other"], self.cand(doc, "fast")["service"]["changed_tasks"])
        self.assertIn("changed answers", r.stdout)
        self.assertIn("other", r.stdout)
        self.assertTrue(os.path.exists(os.path.join(out, "outputs", "b1", "fast",
                                                    "other.round0.body")))

    def test_ctrl_c_leaves_no_server(self):
        path = self.spec({"slow": ("--delay-ms", "20")}, rounds=(200, 400))
        out = os.path.join(self.dir, "run")
        p = subprocess.Popen([kc.KTRIAL, "run", path, "-o", out], stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True)
        deadline = time.time() + 60
        while len(self.pids()) < 2 and time.time() < deadline:
            time.sleep(0.1)
        self.assertEqual({"baseline", "slow"}, set(self.pids()))
        time.sleep(1.0)  # into the rounds
        p.send_signal(signal.SIGINT)
        p.communicate(timeout=120)
        self.assertNotEqual(0, p.returncode)
        self.assert_no_server()

    def test_killed_ktrial_leaves_no_server(self):
        path = self.spec({"slow": ("--delay-ms", "20")}, rounds=(200, 400))
        p = subprocess.Popen([kc.KTRIAL, "run", path, "-o", os.path.join(self.dir, "run")],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 60
        while len(self.pids()) < 2 and time.time() < deadline:
            time.sleep(0.1)
        time.sleep(0.5)
        p.kill()
        p.wait()
        deadline = time.time() + 10  # the parent-death signal is delivered at once
        while any(alive(pid) for pid in self.pids().values()) and time.time() < deadline:
            time.sleep(0.1)
        self.assert_no_server()

    def test_spec_errors_have_places(self):
        bad = {
            "{mode: open, requests_per_round: 5}": "needs rate_per_s",
            "{mode: closed, concurrency: 2, rate_per_s: 3}": "mode closed has no rate",
        }
        for load, words in bad.items():
            path = self.spec({"c": ()}, load=load)
            r = kc.run(["validate", path])
            self.assertEqual(65, r.returncode, r.stderr)
            self.assertRegex(r.stderr, r"svc\.yaml:\d+:\d+: .*" + words)
        path = self.spec({"c": ()})
        with open(path) as f:
            text = f.read()
        with open(path, "w") as f:
            f.write(text.replace("measure: {metric: e2e}", "measure: {metric: ttft}")
                    .replace('"{port}", "--pidfile"', '"8080", "--pidfile"', 1))
        r = kc.run(["validate", path])
        self.assertEqual(65, r.returncode)
        self.assertRegex(r.stderr, r"svc\.yaml:\d+:\d+: .*ttft needs request.stream: sse")
        self.assertRegex(r.stderr, r"svc\.yaml:\d+:\d+: baseline.setup: no '\{port\}'")


if __name__ == "__main__":
    unittest.main()
