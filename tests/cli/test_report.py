"""ktrial report, history, --junit and --markdown through the built binary. The HTML pages are
rendered by headless Chromium (Debian's package) with every network request refused; the DOM
it produces is counted (table rows, forest-plot marks, distribution and series plots), and a
screenshot is taken. The JUnit file is validated against tests/report/junit.xsd (xmllint) and
parsed with xml.etree. History runs over archives made at three commits of a scratch git
repository and must mark exactly the commit where the simulated speedup changed."""
import csv
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.dirname(__file__))
from ktrial_cli import SOURCE, run, sim_spec, validate_result  # noqa: E402

CHROMIUM = shutil.which("chromium")
XMLLINT = shutil.which("xmllint")


def render(html, png=None):
    """The DOM of 'html' after Chromium loaded it with no network, and a screenshot."""
    base = ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
            "--host-resolver-rules=MAP * ~NOTFOUND", "--window-size=1200,2000"]
    url = "file://" + os.path.abspath(html)
    if png:
        subprocess.run(base + [f"--screenshot={png}", url], capture_output=True, timeout=120)
    p = subprocess.run(base + ["--dump-dom", url], capture_output=True, text=True, timeout=120)
    return p.stdout


def count(dom, cls, tag=r"\w+"):
    return len(re.findall(rf"<{tag}[^>]*class=\"[^\"]*\b{cls}\b[^\"]*\"", dom))


class ReportTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="kt-report-")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def six_point_run(self, out, extra=()):
        spec = sim_spec(os.path.join(self.tmp, "six.yaml"), name="sim-six",
                        candidates={"fast": {"median_us": 85, "spread": 0.05},
                                    "slow": {"median_us": 120, "spread": 0.05},
                                    "same": {"median_us": 100, "spread": 0.05}},
                        batch_sizes=(1, 2), context_lengths=(64, 96, 128),
                        trials={"max_repetitions": 60})
        p = run(["run", spec, "-o", out, *extra])
        self.assertIn(p.returncode, (0, 1, 2), p.stderr)
        return p

    def check_self_contained(self, path):
        with open(path, encoding="utf-8") as f:
            html = f.read()
        self.assertNotIn("<script", html)
        self.assertIsNone(re.search(r"(src|href)=['\"]?https?:", html))
        self.assertNotIn("@import", html)
        self.assertIsNone(re.search(r"url\(", html))
        return html

    def test_report_of_a_six_point_sim_run(self):
        out = os.path.join(self.tmp, "six")
        junit, md = os.path.join(self.tmp, "run.xml"), os.path.join(self.tmp, "run.md")
        summary = os.path.join(self.tmp, "step-summary.md")
        with open(summary, "w") as f:
            f.write("earlier step\n")
        env_backup = os.environ.get("GITHUB_STEP_SUMMARY")
        os.environ["GITHUB_STEP_SUMMARY"] = summary
        try:
            p = self.six_point_run(out, ["--report", "--junit", junit, "--markdown", md])
        finally:
            if env_backup is None:
                del os.environ["GITHUB_STEP_SUMMARY"]
            else:
                os.environ["GITHUB_STEP_SUMMARY"] = env_backup
        doc = validate_result(self, out)
        report = os.path.join(out, "report.html")
        self.check_self_contained(report)
        n_rows = sum(len(pt["candidates"]) for pt in doc["points"])
        self.assertEqual(n_rows, 18)

        # JUnit: valid against the XSD, and one test case per point and candidate
        if XMLLINT:
            x = subprocess.run([XMLLINT, "--noout", "--schema",
                                os.path.join(SOURCE, "tests", "report", "junit.xsd"), junit],
                               capture_output=True, text=True)
            self.assertEqual(x.returncode, 0, x.stderr)
        suite = ET.parse(junit).getroot().find("testsuite")
        cases = suite.findall("testcase")
        self.assertEqual(len(cases), 18)
        verdicts = [c["verdict"] for pt in doc["points"] for c in pt["candidates"]]
        self.assertEqual(sum(c.find("failure") is not None for c in cases),
                         verdicts.count("REJECT"))
        self.assertEqual(sum(c.find("skipped") is not None for c in cases),
                         verdicts.count("INCONCLUSIVE"))
        self.assertEqual(int(suite.get("failures")), verdicts.count("REJECT"))
        self.assertGreater(verdicts.count("REJECT"), 0)

        with open(md) as f:
            text = f.read()
        self.assertEqual(len([ln for ln in text.splitlines() if ln.startswith("| b")]), 18)
        with open(summary) as f:
            self.assertEqual(f.read(), "earlier step\n" + text)  # appended, not replaced

        # show writes the same CI files from the archive
        j2, m2 = os.path.join(self.tmp, "show.xml"), os.path.join(self.tmp, "show.md")
        s = run(["show", out, "--junit", j2, "--markdown", m2])
        self.assertEqual(s.returncode, 0, s.stderr)
        with open(junit) as a, open(j2) as b:
            self.assertEqual(a.read(), b.read())

        if not CHROMIUM:
            self.skipTest("chromium is not installed (scripts/setup.sh installs it)")
        png = os.path.join(self.tmp, "report.png")
        dom = render(report, png)
        self.assertEqual(count(dom, "verdict-row", "tr"), 18)
        self.assertEqual(count(dom, "forest-mark", "g"), 18)
        self.assertEqual(count(dom, "dist-plot", "svg"), 6)
        self.assertEqual(count(dom, "series-plot", "svg"), 18)
        self.assertEqual(count(dom, "numerics", "table"), 6)
        self.assertGreater(os.path.getsize(png), 10000)

        # two archives of one experiment in one report; another experiment is refused
        out2 = os.path.join(self.tmp, "six-again")
        self.six_point_run(out2)
        both = os.path.join(self.tmp, "both.html")
        r = run(["report", out, os.path.join(out2, "result.json"), "-o", both])
        self.assertEqual(r.returncode, 0, r.stderr)
        dom = render(both)
        self.assertEqual(count(dom, "forest-mark", "g"), 36)
        self.assertEqual(count(dom, "dist-plot", "svg"), 12)
        other = sim_spec(os.path.join(self.tmp, "other.yaml"), name="other")
        self.assertEqual(run(["run", other, "-o", os.path.join(self.tmp, "o")]).returncode, 0)
        r = run(["report", out, os.path.join(self.tmp, "o"), "-o", both])
        self.assertEqual(r.returncode, 65)
        self.assertEqual(run(["report"]).returncode, 64)

    def test_report_says_what_was_not_measured_and_what_the_run_decided(self):
        # a crashed candidate has no p, rel_l2 or memory ratio ("—", as in the summary), and
        # an interrupted run's overall row says INTERRUPTED, never a verdict it does not have
        out = os.path.join(self.tmp, "crash")
        spec = sim_spec(os.path.join(self.tmp, "crash.yaml"), name="sim-crash",
                        candidates={"bad": {"median_us": 50, "fail": "crash"},
                                    "good": {"median_us": 80, "spread": 0.05}})
        p = run(["run", spec, "-o", out])
        self.assertEqual(1, p.returncode, p.stderr)

        def cells(html, candidate):
            row = re.search(rf"<tr class='verdict-row'><td>[^<]*</td><td>[^<]*</td>"
                            rf"<td>{candidate}</td>(.*?)</tr>", html)
            self.assertIsNotNone(row, html[:2000])
            return [re.sub("<[^>]+>", "", c) for c in re.findall(r"<td[^>]*>(.*?)</td>",
                                                                  row.group(1))]

        def overall(html):
            row = re.search(r"<tr class='overall-row'>(.*?)</tr>", html)
            self.assertIsNotNone(row)
            return re.sub("<[^>]+>", " ", row.group(1))

        self.assertEqual(0, run(["report", out]).returncode)
        html = self.check_self_contained(os.path.join(out, "report.html"))
        bad = cells(html, "bad")  # verdict, speedup, p, medians, rel_l2, memory, reasons
        self.assertEqual(["REJECT", "—", "—", "—", "—", "—", "—"], bad[:7])
        self.assertNotEqual("—", cells(html, "good")[2])
        self.assertRegex(overall(html), r"REJECT\s+over 1 point \(min_speedup 1")
        # nor in the numerics and extras tables: no 'nan' or 'NaN ms' for what never ran
        self.assertNotRegex(html, r"(?i)>[^<>]*\bnan\b")
        torn = os.path.join(self.tmp, "torn")  # an archive cut short on disk: said, not hidden
        os.makedirs(torn)
        with open(os.path.join(out, "result.json")) as f, \
                open(os.path.join(torn, "result.json"), "w") as g:
            g.write(f.read()[:300])
        unfinished = os.path.join(self.tmp, "unfinished")  # of this experiment, not complete
        os.makedirs(unfinished)
        with open(os.path.join(out, "result.json")) as f:
            doc = json.load(f)
        doc["status"] = "interrupted"
        with open(os.path.join(unfinished, "result.json"), "w") as g:
            json.dump(doc, g)
        h = run(["history", self.tmp, "--experiment", "sim-crash"])  # its text says so too
        self.assertEqual(0, h.returncode, h.stderr)
        self.assertIn(f"warning: 1 archive under '{self.tmp}' left out, unreadable (first "
                      f"'{torn}': '{torn}/result.json' is not valid JSON)", h.stderr)
        self.assertIn("note: 1 archive of 'sim-crash' left out, not complete", h.stderr)
        self.assertNotIn("nan", h.stdout)
        self.assertRegex(h.stdout, r"— \(not measured\) REJECT")
        with open(os.path.join(out, "result.json")) as f:
            doc = json.load(f)
        doc["status"] = "interrupted"
        doc["decision"]["exit_code"] = 130  # as an interrupted run records it: it verifies
        with open(os.path.join(out, "result.json"), "w") as f:
            json.dump(doc, f)
        r = run(["report", out])
        self.assertEqual(0, r.returncode, r.stderr)
        html = self.check_self_contained(os.path.join(out, "report.html"))
        self.assertRegex(overall(html), r"INTERRUPTED\s+after 1 of 1 point; no verdict")

    def test_markdown_says_what_the_run_decided(self):
        # the pull-request comment's heading is the summary's overall line: a shard, a run
        # whose baseline failed or one interrupted never reads as a verdict for the experiment;
        # a row with nothing measured shows —, and p is the summary's p (adj.)
        spec = sim_spec(os.path.join(self.tmp, "md.yaml"), name="sim-md", batch_sizes=(1, 2),
                        candidates={"fast": {"median_us": 50, "spread": 0.05}})
        md = os.path.join(self.tmp, "shard.md")
        out = os.path.join(self.tmp, "shard")
        p = run(["run", spec, "-o", out, "--shard", "1/2", "--markdown", md])
        self.assertEqual(0, p.returncode, p.stderr)
        with open(md) as f:
            text = f.read()
        self.assertIn("### ktrial: sim-md — shard 1/2 only, **KEEP** over its 1 point; not the "
                      "experiment's verdict", text)
        shown = re.search(r"(?m)^b1/t64 +fast .* (\S+) +\S+ +\S+ +\S+ GB/s +KEEP$", p.stdout)
        self.assertIsNotNone(shown, p.stdout)
        self.assertIn(f"| b1/t64 | fast | KEEP | ", text)
        self.assertRegex(text, rf"\| {re.escape(shown.group(1))} \| 0 \|\n")

        broken = sim_spec(os.path.join(self.tmp, "broken.yaml"), name="sim-md",
                          baseline={"median_us": 100, "fail": "error"})
        md = os.path.join(self.tmp, "broken.md")
        p = run(["run", broken, "-o", os.path.join(self.tmp, "broken"), "--markdown", md])
        self.assertEqual(70, p.returncode, p.stderr)
        with open(md) as f:
            text = f.read()
        self.assertIn("### ktrial: sim-md — **ERROR** at 1 of 1 point the baseline", text)
        self.assertIn("| b1/t64 | cand | ERROR | — | — | — |", text)

        doc = json.load(open(os.path.join(out, "result.json")))
        doc["status"] = "interrupted"
        doc["decision"]["exit_code"] = 130  # as an interrupted run records it: it verifies
        with open(os.path.join(out, "result.json"), "w") as f:
            json.dump(doc, f)
        md = os.path.join(self.tmp, "cut.md")
        p = run(["show", out, "--markdown", md])
        self.assertNotIn("fails verification", p.stderr)
        with open(md) as f:
            self.assertIn("— **INTERRUPTED** after 1 of 1 point; no verdict", f.read())

    def test_csv_is_the_decision_table_of_result_json(self):
        # the output format added by docs/architecture.md's recipe (one file, one table row,
        # the options' rows): a row per point and candidate, in run order, agreeing with
        # result.json; run and show write the same bytes; a comma in a reason is quoted
        spec = sim_spec(os.path.join(self.tmp, "csv.yaml"), name="sim-csv", batch_sizes=(1, 2),
                        candidates={"fast": {"median_us": 80, "spread": 0.05},
                                    "slow": {"median_us": 120, "spread": 0.05}},
                        trials={"max_repetitions": 60})
        out, first, again = (os.path.join(self.tmp, n) for n in ("csv", "run.csv", "show.csv"))
        p = run(["run", spec, "-o", out, "--csv", first])
        self.assertEqual(1, p.returncode, p.stderr)
        self.assertEqual(0, run(["show", out, "--csv", again]).returncode)
        with open(first, "rb") as a, open(again, "rb") as b:
            self.assertEqual(a.read(), b.read())
        with open(first, newline="") as f:
            rows = list(csv.DictReader(f))
        doc = json.load(open(os.path.join(out, "result.json")))
        want = [(pt["id"], c["name"], c) for pt in doc["points"] for c in pt["candidates"]]
        self.assertEqual([(i, n) for i, n, _ in want], [(r["point"], r["candidate"]) for r in rows])
        for (_, _, c), r in zip(want, rows):
            self.assertEqual("sim-csv", r["experiment"])
            self.assertEqual(c["verdict"], r["verdict"])
            self.assertAlmostEqual(c["speedup"], float(r["speedup"]), delta=1e-5 * c["speedup"])
            self.assertAlmostEqual(c["ci"][0], float(r["ci_low"]), delta=1e-5 * c["ci"][0])
            self.assertEqual(c["n_pairs"], int(r["pairs"]))
            self.assertEqual(";".join(c["reason_codes"]), r["reason_codes"])
            self.assertEqual("; ".join(c["reasons"]), r["reasons"])
        self.assertEqual({"KEEP", "REJECT"}, {r["verdict"] for r in rows})
        with open(first, newline="") as f:
            self.assertIn('"speedup ', f.read())  # reasons hold commas: quoted

    def test_report_of_the_quickstart(self):
        out = os.path.join(self.tmp, "quick")
        p = run(["run", os.path.join(SOURCE, "experiments", "quickstart.yaml"), "-o", out,
                 "--quick", "--report"], timeout=900)
        self.assertIn(p.returncode, (0, 1, 2), p.stderr)
        doc = validate_result(self, out)
        report = os.path.join(out, "report.html")
        html = self.check_self_contained(report)
        self.assertIn("kept_fraction", html)  # FFD's variant metric, in the extras table
        # written for people: the limits by name, the extras' values without raw JSON
        self.assertIn("limits: max_rel_l2 0.05, min_cosine 0.99</p>", html)
        extras = html[html.index("<table class='extras'>"):]
        extras = extras[:extras.index("</table>")]
        self.assertNotRegex(extras, r"[{\[]|&quot;|\.\d{8}|value ")
        self.assertRegex(extras, r"<td>blocks_total</td><td class='num'>\d+ blocks</td>")
        # the p column is the summary's: show --json's p_adjusted, to 3 digits
        shown = json.loads(run(["show", out, "--json"]).stdout)
        cells = re.findall(r"<tr class='verdict-row'>(?:<td[^>]*>.*?</td>){5}"
                           r"<td class='num'>([^<]*)</td>", html)
        expect = [c["p_adjusted"] for p in shown["points"] for c in p["candidates"]]
        self.assertEqual(len(cells), len(expect))
        for cell, p in zip(cells, expect):
            self.assertEqual(cell, "—" if p is None else f"{p:.3g}")
        if not CHROMIUM:
            self.skipTest("chromium is not installed (scripts/setup.sh installs it)")
        dom = render(report, os.path.join(self.tmp, "quick.png"))
        self.assertEqual(count(dom, "verdict-row", "tr"), len(doc["points"]))
        self.assertEqual(count(dom, "dist-plot", "svg"), len(doc["points"]))

    def test_history_marks_the_commit_that_changed_the_speedup(self):
        repo = os.path.join(self.tmp, "repo")
        os.makedirs(repo)
        git = lambda *a, date=None: subprocess.run(  # noqa: E731
            ["git", *a], cwd=repo, check=True, capture_output=True,
            env=dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.com",
                     GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@example.com",
                     **({"GIT_COMMITTER_DATE": date, "GIT_AUTHOR_DATE": date} if date else {})))
        git("init", "-q")
        with open(os.path.join(repo, ".gitignore"), "w") as f:
            f.write("results/\n")

        def commit(median, day):
            sim_spec(os.path.join(repo, "spec.yaml"), name="hist",
                     candidates={"cand": {"median_us": median, "spread": 0.05}},
                     batch_sizes=(1, 2), trials={"max_repetitions": 80})
            with open(os.path.join(repo, "notes.txt"), "a") as f:
                f.write(f"day {day}\n")
            git("add", "-A")
            git("commit", "-q", "-m", f"day {day}", date=f"2026-01-{day:02d}T12:00:00Z")
            return git("rev-parse", "HEAD").stdout.decode().strip()

        archives = []

        def measure(tag):
            out = os.path.join(repo, "results", tag)
            p = run(["run", os.path.join(repo, "spec.yaml"), "-o", out])
            self.assertIn(p.returncode, (0, 1, 2), p.stderr)
            archives.append(out)

        c1 = commit(80, 1)
        measure("a1")
        measure("a2")
        commit(80, 2)  # unrelated change: the same speedup
        measure("a3")
        c3 = commit(95, 3)  # the simulated candidate gets slower: 1.25x -> 1.05x
        measure("a4")
        measure("a5")
        self.assertNotEqual(c1, c3)

        results = os.path.join(repo, "results")
        p = run(["history", results, "--experiment", "hist", "--json"])
        self.assertEqual(p.returncode, 0, p.stderr)
        series = json.loads(p.stdout)
        import jsonschema
        with open(os.path.join(SOURCE, "schemas", "history.schema.json")) as f:
            errors = list(jsonschema.Draft7Validator(json.load(f)).iter_errors(series))
        self.assertEqual([], [f"{list(e.path)}: {e.message}" for e in errors[:5]])
        self.assertEqual(len(series), 2)  # b1/t64 and b2/t64, one candidate
        for s in series:
            runs = s["runs"]
            self.assertEqual(len(runs), 5)
            changed = [r["commit"] for r in runs if r["speedup_changed"]]
            self.assertEqual(changed, [c3], s)
            moved = [r for r in runs if r["speedup_changed"]][0]
            self.assertLess(moved["speedup_change"], -0.1)
        text = run(["history", results, "--experiment", "hist"]).stdout
        self.assertEqual(text.count("speedup changed"), 2)
        # a header names the columns of the runs' rows
        self.assertRegex(text, r"^point  candidate\n  commit +start \(UTC\) +speedup \(HL\) "
                         r"\[CI\] +verdict +against the run before\n")
        page = os.path.join(self.tmp, "history.html")
        self.assertEqual(run(["history", results, "--experiment", "hist", "-o", page]).returncode,
                         0)
        self.check_self_contained(page)
        self.assertEqual(run(["history", results, "--experiment", "none"]).returncode, 65)
        self.assertEqual(run(["history", results]).returncode, 64)
        if not CHROMIUM:
            self.skipTest("chromium is not installed (scripts/setup.sh installs it)")
        dom = render(page, os.path.join(self.tmp, "history.png"))
        self.assertEqual(count(dom, "history-plot", "svg"), 2)
        self.assertEqual(count(dom, "history-mark", "g"), 10)
        self.assertEqual(count(dom, "change-mark", "g"), 2)
        self.assertEqual(count(dom, "archive-row", "tr"), 5)


if __name__ == "__main__":
    unittest.main()
