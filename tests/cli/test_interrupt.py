"""Ctrl-C on a CPU run: acknowledged on stderr within a second, exit 130 within ten, the
measured points archived, the resume command printed, and that command finishes the run.
Once during a point's start-up (inputs and float64 reference), once during timed pairs, and
once with a second Ctrl-C."""
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import unittest

from ktrial_cli import KTRIAL, load_result, run, validate_result

# identical arms and min_speedup 1.0: no early verdict, so the pairs run until the clock
SPEC = """version: 1
name: interrupt-test
op: attention_decode
backend: cpu
dtype: bf16
threads: 1
models: [llama-3.2-1b]
batch_sizes: [1]
context_lengths: [{contexts}]
inputs: {{distribution: normal, seed: 7, sets: 2}}
baseline: {{variant: dense}}
candidates:
  - {{name: same, variant: dense}}
trials: {{warmup: 1, min_repetitions: 10, max_repetitions: 200000, max_seconds_per_point: 4,
         order: random, flush_cache: true}}
thresholds:
  latency: {{min_speedup: 1.0}}
"""


class Watched:
    """A ktrial run whose stderr lines are read as they come, with their arrival times."""

    def __init__(self, args):
        self.lines = []
        self.cond = threading.Condition()
        self.proc = subprocess.Popen([KTRIAL] + args, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, text=True)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.proc.stderr:
            with self.cond:
                self.lines.append((time.monotonic(), line.rstrip("\n")))
                self.cond.notify_all()

    def wait_for(self, pattern, timeout):
        """The arrival time of the first line matching 'pattern', or None."""
        end = time.monotonic() + timeout
        with self.cond:
            while True:
                for t, line in self.lines:
                    if re.search(pattern, line):
                        return t
                left = end - time.monotonic()
                if left <= 0 or self.proc.poll() is not None and not self.reader.is_alive():
                    return None
                self.cond.wait(min(left, 0.1))

    def text(self):
        with self.cond:
            return "\n".join(line for _, line in self.lines)


class InterruptTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="kt_interrupt.")
        self.out = os.path.join(self.tmp, "run")

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def spec(self, contexts):
        path = os.path.join(self.tmp, "interrupt-test.yaml")
        with open(path, "w") as f:
            f.write(SPEC.format(contexts=contexts))
        return path

    def interrupt(self, spec, when, signals=1, settle=0.0):
        """Runs 'spec', sends SIGINT 'settle' seconds after the line 'when' (once, or twice
        in a row), and checks the acknowledgement, the exit and the archive."""
        w = Watched(["run", spec, "-o", self.out])
        started = w.wait_for(when, 300)
        self.assertIsNotNone(started, w.text())
        time.sleep(settle)
        sent = time.monotonic()
        w.proc.send_signal(signal.SIGINT)
        ack = w.wait_for(r"^interrupt: finishing the current pair; Ctrl-C again to stop now$",
                         5)
        self.assertIsNotNone(ack, w.text())
        self.assertLess(ack - sent, 1.0)
        if signals == 2:
            w.proc.send_signal(signal.SIGINT)
            second = w.wait_for(r"^interrupt: stopping the worker now$", 5)
            self.assertIsNotNone(second, w.text())
        try:
            rc = w.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            w.proc.kill()
            self.fail("no exit within 10 s of Ctrl-C:\n" + w.text())
        self.assertLess(time.monotonic() - sent, 10.5)
        w.reader.join(5)
        w.proc.stderr.close()
        self.last_stderr = w.text()
        self.assertEqual(rc, 130, w.text())
        doc = validate_result(self, self.out)
        self.assertEqual(doc["status"], "interrupted")
        self.assertEqual(doc["decision"]["exit_code"], 130)
        m = re.search(r"continue with: (ktrial run .* --resume .*)$", w.text(), re.M)
        self.assertIsNotNone(m, w.text())
        return shlex.split(m.group(1))[1:], doc

    def resume_completes(self, args, n_points):
        p = run(args, timeout=600)
        self.assertIn(p.returncode, (0, 1, 2), p.stdout + p.stderr)
        doc = validate_result(self, self.out)
        self.assertEqual(doc["status"], "complete")
        self.assertEqual(len(doc["points"]), n_points)
        self.assertTrue(all(pt["stop_reason"] != "interrupted" for pt in doc["points"]))
        # both sessions are recorded, the resume last, and between them they archived every
        # point once (the cut one by the resume only)
        run_prov = doc["provenance"]["run"]
        sessions = run_prov["sessions"]
        self.assertEqual(len(sessions), 2, sessions)
        self.assertNotIn("--resume", sessions[0]["argv"])
        self.assertEqual(sessions[1]["argv"], run_prov["argv"])
        self.assertIn("--resume", sessions[1]["argv"])
        self.assertEqual(sessions[1]["start_utc"], run_prov["start_utc"])
        self.assertLessEqual(sessions[0]["end_utc"], sessions[1]["start_utc"])
        self.assertEqual(sessions[0]["points"] + sessions[1]["points"], n_points)
        with open(os.path.join(self.out, "points.jsonl")) as f:
            self.assertEqual(len(f.read().splitlines()), n_points)
        shown = run(["show", self.out]).stdout
        self.assertRegex(shown, r"(?m)^  session 1: \S+ to \S+, .*, %d points?$"
                         % sessions[0]["points"])
        self.assertRegex(shown, r"(?m)^  session 2: %s to \S+, " % sessions[1]["start_utc"])

    def test_during_start_up(self):
        spec = self.spec("4096")
        # inside the inputs and float64 reference of the point
        args, doc = self.interrupt(spec, r"^\[1/1\] .*: start-up", settle=0.3)
        self.assertEqual(doc["points"][0]["stop_reason"], "interrupted")
        self.resume_completes(args, 1)

    def test_during_timed_pairs_keeps_the_finished_points(self):
        spec = self.spec("1024, 4096, 2048")
        args, doc = self.interrupt(spec, r"^\[2/3\] .*: timed pairs")
        self.assertEqual(len(doc["points"]), 2)
        self.assertEqual(doc["timing"]["not_run"], 1)  # the third never started
        # the cut point's progress line gives no verdict of its own
        self.assertRegex(self.last_stderr, r"(?m)^\[2/3\] \S+ interrupted after \d+ pairs?, "
                         r"no verdict, ")
        self.assertNotEqual(doc["points"][0]["stop_reason"], "interrupted")
        self.assertEqual(doc["points"][1]["stop_reason"], "interrupted")
        cut = doc["points"][1]["candidates"][0]
        self.assertGreater(len(cut["pairs"]), 0)
        # cut short: no verdict of its own, and not counted as a failed point
        self.assertEqual(cut["verdict"], "INCONCLUSIVE")
        self.assertRegex(" ".join(cut["reasons"]), r"not measured: interrupted after \d+ pairs?")
        self.assertEqual(doc["decision"]["point_errors"], 0)
        # nor in its candidate's tallies and geometric mean: a resume measures it again
        tally = doc["candidates"][0]
        self.assertEqual(sum(tally["points"].values()), 1, tally)
        self.assertIn("1 point cut short by the interrupt, not counted", tally["reason"])
        shown = run(["show", self.out])
        # no bare KEEP under an interrupted run: the candidate's line says what was decided
        self.assertRegex(shown.stdout, r"(?m)^candidate same +INTERRUPTED +decided at 1 of 3 "
                         r"points \(\d keep, \d reject, \d inconclusive\); no verdict over the "
                         r"experiment")
        self.assertNotRegex(shown.stdout, r"(?m)^candidate .*\b(KEEP|REJECT|INCONCLUSIVE)\b")
        self.assertRegex(shown.stdout, r"geomean speedup [0-9.]+ over 1 of 1 point\b")
        # show counts the point that never started, as the run's own summary did
        self.assertIn("overall: INTERRUPTED after 1 of 3 points", shown.stdout)
        self.assertIn("interrupted after 1 of 3 points (1 cut short, 1 not started)",
                      shown.stdout)
        # compare leaves the cut point out and says so; the finished one is compared
        c = run(["compare", self.out, self.out, "--json"])
        self.assertIn(c.returncode, (0, 1), c.stdout + c.stderr)
        self.assertIn("1 shared point left out: cut short by an interrupt", c.stderr)
        rows = json.loads(c.stdout)["rows"]
        self.assertEqual([r["point"] for r in rows], [doc["points"][0]["id"]])
        self.resume_completes(args, 3)

    def test_second_ctrl_c_stops_the_worker_at_once(self):
        # both arms sleep 1 s per call, 2 s a pair (a signal does not cut it short): after the
        # first Ctrl-C the worker would finish its pair; the second, sent at once, kills it
        # first. The first waits 0.3 s after "timed pairs" (printed as warmup starts), so the
        # worker is inside its first pair and the supervisor has read so: a loaded machine
        # would have to hold the test back some 1.7 s for the pair to end first, and the kill
        # no longer lands in the instant between the warmup and repetitions steps
        spec = os.path.join(self.tmp, "slow-pair.yaml")
        with open(spec, "w") as f:
            f.write("version: 1\nname: slow-pair\nop: synthetic\nbackend: sim\n"
                    "batch_sizes: [1]\ncontext_lengths: [64]\n"
                    "inputs: {distribution: normal, seed: 7, sets: 1}\n"
                    "baseline: {variant: lognormal, params: {median_us: 100, sleep_us: 1000000}}\n"
                    "candidates:\n  - {name: c, variant: lognormal,\n"
                    "     params: {median_us: 80, sleep_us: 1000000}}\n"
                    "trials: {warmup: 0, min_repetitions: 6, max_repetitions: 6, order: random,\n"
                    "         profile: false}\n")
        args, doc = self.interrupt(spec, r"^\[1/1\] .*: timed pairs", signals=2, settle=0.3)
        point = doc["points"][0]
        self.assertEqual(point["stop_reason"], "interrupted")
        self.assertIn("interrupted during repetitions", point["error"])
        self.resume_completes(args, 1)


if __name__ == "__main__":
    unittest.main()
