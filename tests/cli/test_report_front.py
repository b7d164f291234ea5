"""What a first look at an HTML report shows: a command trial without outputs has no numerics
table and no 'prepare_s 0' rows; a report of two archives has a change column, as 'compare'
reads the change (the two-sample Hodges-Lehmann of the paired log ratios); the distribution
plot's time axis is in the unit that fits."""
import os
import re
import tempfile
import unittest

from ktrial_cli import run, sim_spec

COMMAND = """version: 1
name: report-command
op: command
backend: process
tasks:
  - {name: one}
baseline:
  run: ["true"]
candidates:
  - name: sleep
    run: ["sleep", "0.02"]
trials: {warmup: 0, min_repetitions: 6, max_repetitions: 8, max_seconds_per_point: 60, order: random}
thresholds:
  latency: {min_speedup: 0.001, confidence: 0.95}
"""


def text(html):
    return re.sub(r"<[^>]+>", " ", html)


class ReportFrontTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def test_command_run_shows_no_numerics_and_no_empty_setup(self):
        spec = os.path.join(self.dir, "c.yaml")
        with open(spec, "w") as f:
            f.write(COMMAND)
        out = os.path.join(self.dir, "c")
        p = run(["run", spec, "-o", out, "--report"])
        self.assertIn(p.returncode, (0, 1, 2), p.stdout + p.stderr)
        with open(os.path.join(out, "report.html")) as f:
            html = f.read()
        self.assertNotIn("Numerics per input set", html)
        self.assertNotIn("<table class='numerics'>", html)
        self.assertNotIn("prepare_s", html)
        self.assertIn("max_rss_mib", html)  # the arms' costs are still there
        self.assertRegex(html, r"time per call, (ms|µs) \(every timed call\)")
        self.assertNotRegex(text(html), r"\d\.?\d*e\+\d\d")

    def test_two_archives_have_a_change_column(self):
        outs = []
        for i, median in enumerate((80, 95)):  # the candidate got slower
            spec = sim_spec(os.path.join(self.dir, f"s{i}.yaml"), name="report-change",
                            candidates={"cand": {"median_us": median, "spread": 0.02}},
                            trials={"min_repetitions": 10, "max_repetitions": 30})
            outs.append(os.path.join(self.dir, f"r{i}"))
            p = run(["run", spec, "-o", outs[-1]])
            self.assertIn(p.returncode, (0, 1, 2), p.stdout + p.stderr)
        html_path = os.path.join(self.dir, "two.html")
        p = run(["report", outs[0], outs[1], "-o", html_path])
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(html_path) as f:
            html = f.read()
        self.assertIn("<th>change vs the archive above [95% CI]</th>", html)
        rows = re.findall(r"<tr class='verdict-row'>(.*?)</tr>", html)
        self.assertEqual(len(rows), 2)
        self.assertNotIn("%", rows[0].split("<td class='reason'>")[0])  # nothing above it
        change = re.search(r"([+-]\d+\.\d)% \[([+-]\d+\.\d)%, ([+-]\d+\.\d)%\]( slower)?", rows[1])
        self.assertIsNotNone(change, rows[1])
        # 1.25x to 1.05x: about -16%, significant
        self.assertLess(float(change.group(1)), -8)
        self.assertEqual(change.group(4), " slower")
        # a report of one archive keeps its columns
        p = run(["report", outs[0], "-o", os.path.join(self.dir, "one.html")])
        with open(os.path.join(self.dir, "one.html")) as f:
            self.assertNotIn("change vs", f.read())


if __name__ == "__main__":
    unittest.main()
