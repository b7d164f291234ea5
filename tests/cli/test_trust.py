"""Verdicts derived, never trusted (docs/trust.md): each attack on an archive ends in an error
naming what disagrees, or in the verdict its pairs give. A shard whose points.jsonl says KEEP
where its pairs say REJECT fails merge; an edited decision.verdict fails show and verify;
halved candidate times in samples.csv are caught by the seal and by deciding again from the
rows; a resume under a stricter max_rel_l2 decides the finished points again (REJECT) and keeps
both specs; verify passes on what ktrial writes and fails on each tampered copy."""
import hashlib
import json
import os
import re
import shutil
import tempfile
import unittest

from ktrial_cli import load_result, run, sim_spec, validate_result

SLOW = {"slow": {"median_us": 130, "spread": 0.05}}
TRIALS = {"max_repetitions": 40}


def reseal(folder):
    """Recomputes the seal of result.json as a careful forger would."""
    doc = load_result(folder)
    for name in doc["seal"]["files"]:
        with open(os.path.join(folder, name), "rb") as f:
            doc["seal"]["files"][name] = hashlib.sha256(f.read()).hexdigest()
    with open(os.path.join(folder, "result.json"), "w") as f:
        json.dump(doc, f, indent=1)


def edit_json(folder, change):
    path = os.path.join(folder, "result.json")
    with open(path) as f:
        doc = json.load(f)
    change(doc)
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)


def edit_text(path, change):
    with open(path) as f:
        text = f.read()
    with open(path, "w") as f:
        f.write(change(text))


def keep_every_verdict(text):
    """Only the verdict fields of points.jsonl edited to KEEP: the pairs stay as measured."""
    lines = []
    for line in text.splitlines():
        p = json.loads(line)
        for c in p["candidates"]:
            c["verdict"] = "KEEP"
        lines.append(json.dumps(p, separators=(",", ":")))
    return "\n".join(lines) + "\n"


def halve_candidate_times(text):
    rows = text.splitlines()
    out = [rows[0]]
    for row in rows[1:]:
        cells = row.split(",")
        if cells[15] == "candidate":
            cells[18] = repr(float(cells[18]) / 2)
        out.append(",".join(cells))
    return "\n".join(out) + "\n"


class TrustTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="kt_trust.")
        self.spec = sim_spec(os.path.join(self.tmp, "s.yaml"), name="trust-test",
                             batch_sizes=(1, 2), candidates=SLOW, trials=TRIALS)

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def archive(self, name="run", args=(), spec=None, rc=1):
        out = os.path.join(self.tmp, name)
        p = run(["run", spec or self.spec, "-o", out] + list(args))
        self.assertEqual(p.returncode, rc, p.stdout + p.stderr)
        validate_result(self, out)  # verified too
        return out

    def copy(self, folder, name):
        dst = os.path.join(self.tmp, name)
        shutil.copytree(folder, dst)
        return dst

    def test_tampered_shard_fails_merge(self):
        one = self.archive("s1", ["--shard", "1/2"], rc=0)
        two = self.archive("s2", ["--shard", "2/2"], rc=0)
        edit_text(os.path.join(one, "points.jsonl"), keep_every_verdict)
        reseal(one)  # the seal recomputed: the pairs still tell
        p = run(["merge", one, two, "-o", os.path.join(self.tmp, "m")])
        self.assertEqual(p.returncode, 65, p.stdout + p.stderr)
        self.assertRegex(p.stderr, r"points\.jsonl says KEEP for candidate 'slow' at point "
                         r"'b1/t64', its pairs say REJECT: speedup 0\.\d+ \[.*\] below 1")
        self.assertNotIn("KEEP", p.stdout)
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "m", "result.json")))
        # --force merges with the verdicts the pairs give, never the edited ones
        p = run(["merge", one, two, "-o", os.path.join(self.tmp, "f"), "--force", "--json"])
        self.assertEqual(p.returncode, 1, p.stderr)
        merged = json.loads(p.stdout)
        self.assertEqual(merged["decision"]["verdict"], "REJECT")
        self.assertEqual({c["verdict"] for pt in merged["points"] for c in pt["candidates"]},
                         {"REJECT"})
        validate_result(self, os.path.join(self.tmp, "f"))

    def test_edited_decision_fails_show_and_verify(self):
        good = self.archive()
        bad = self.copy(good, "bad")
        edit_json(bad, lambda d: d["decision"].update(verdict="KEEP"))
        for args in (["show", bad], ["verify", bad]):
            p = run(args)
            self.assertEqual(p.returncode, 65, p.stdout + p.stderr)
            self.assertIn("decision.verdict says KEEP, its candidates say REJECT",
                          p.stdout + p.stderr)
        self.assertNotIn("overall: KEEP", run(["show", bad]).stdout)
        forced = run(["show", bad, "--force"])
        self.assertEqual(forced.returncode, 0, forced.stderr)
        self.assertIn("overall: REJECT", forced.stdout)
        self.assertIn("warning:", forced.stderr)
        p = run(["compare", good, bad])
        self.assertEqual(p.returncode, 65, p.stderr)
        p = run(["report", bad, "-o", os.path.join(self.tmp, "r.html")])
        self.assertEqual(p.returncode, 65, p.stderr)
        self.assertIn("fails verification", p.stderr)

    def test_halved_samples_are_caught(self):
        bad = self.copy(self.archive(), "bad")
        edit_text(os.path.join(bad, "samples.csv"), halve_candidate_times)
        p = run(["verify", bad])
        self.assertEqual(p.returncode, 65, p.stdout)
        self.assertRegex(p.stdout, r"samples\.csv: sha256 \w+, result\.json's seal says")
        self.assertRegex(p.stdout, r"samples\.csv's pairs say KEEP for candidate 'slow' at "
                         r"point 'b1/t64', points\.jsonl's pairs say REJECT")
        reseal(bad)
        p = run(["verify", bad])
        self.assertEqual(p.returncode, 65, p.stdout)
        self.assertNotIn("sha256", p.stdout)
        self.assertIn("samples.csv's pairs say KEEP", p.stdout)

    def test_stricter_resume_decides_again_and_keeps_both_specs(self):
        loose = sim_spec(os.path.join(self.tmp, "q.yaml"), name="trust-q", batch_sizes=(1, 2),
                         candidates={"fast": {"median_us": 70, "spread": 0.05, "rel_error": 0.05}},
                         trials=TRIALS, thresholds={"numerics": {"max_rel_l2": 0.1}})
        out = self.archive("q", spec=loose, rc=0)
        with open(loose) as f:
            old_bytes = f.read()
        strict = os.path.join(self.tmp, "q2.yaml")
        with open(strict, "w") as f:
            f.write(old_bytes.replace("max_rel_l2: 0.1", "max_rel_l2: 0.001"))
        p = run(["run", strict, "--resume", out, "--force"])
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertIn("was KEEP, under the spec in force REJECT: rel_l2 0.05 above max_rel_l2 "
                      "0.001", p.stderr)
        self.assertRegex(p.stderr, r"its 2 finished points were decided again under the spec in "
                         r"force, 2 verdicts changed; the old spec is kept as spec-\w{12}\.yaml")
        doc = validate_result(self, out)
        self.assertEqual(doc["decision"]["verdict"], "REJECT")
        specs = doc["provenance"]["run"]["specs"]
        self.assertEqual([s["file"] for s in specs][-1], "spec.yaml")
        with open(os.path.join(out, specs[0]["file"])) as f:
            self.assertEqual(f.read(), old_bytes)
        self.assertEqual(sorted(specs[0]["points"]), ["b1/t64", "b2/t64"])
        with open(os.path.join(out, "spec.yaml")) as f:
            self.assertIn("max_rel_l2: 0.001", f.read())
        with open(os.path.join(out, "points.jsonl")) as f:
            self.assertEqual({c["verdict"] for line in f for c in json.loads(line)["candidates"]},
                             {"REJECT"})

    def test_verify_fails_on_each_tampered_copy(self):
        good = self.archive()
        p = run(["verify", good])
        self.assertEqual(p.returncode, 0, p.stdout)
        self.assertRegex(p.stdout, r": ok: 2 points and 1 candidate verdict decided again")

        def pairs_faster(d):
            for c in d["points"][0]["candidates"]:
                for pair in c["pairs"]:
                    pair["candidate_ns"] /= 2

        attacks = {
            "candidate verdict": (lambda f: edit_json(f, lambda d: d["candidates"][0].update(
                verdict="KEEP")), r"result\.json says candidate 'slow' KEEP"),
            "point verdict": (lambda f: edit_json(f, lambda d: d["points"][1]["candidates"][0]
                                                   .update(verdict="KEEP")),
                              r"result\.json says KEEP for candidate 'slow' at point 'b2/t64'"),
            "pairs in result.json": (lambda f: edit_json(f, pairs_faster),
                                     r"result\.json holds other pairs than points\.jsonl"),
            "a sealed file removed": (lambda f: os.remove(os.path.join(f, "samples.csv")),
                                      r"samples\.csv: sealed by result\.json, but cannot be read"),
            "an unsealed file added": (lambda f: shutil.copy(os.path.join(f, "spec.yaml"),
                                                             os.path.join(f, "spec-0.yaml")),
                                       r"spec-0\.yaml: not in result\.json's seal"),
            "exit code": (lambda f: edit_json(f, lambda d: d["decision"].update(exit_code=0)),
                          r"decision\.exit_code says 0, a run complete with these verdicts "
                          r"exits 1"),
            "the seal removed": (lambda f: edit_json(f, lambda d: d.pop("seal")),
                                 r"has no seal"),
            "points.jsonl line dropped": (
                lambda f: (edit_text(os.path.join(f, "points.jsonl"),
                                     lambda t: t.splitlines(True)[0]), reseal(f)),
                r"result\.json holds point 'b2/t64', points\.jsonl does not"),
            "the spec's limit moved": (
                lambda f: (edit_text(os.path.join(f, "spec.yaml"),
                                     lambda t: t + "  numerics: {max_rel_l2: 0.5}\n"
                                     if "thresholds:" in t else
                                     t + "thresholds:\n  latency: {min_speedup: 0.5}\n"),
                           reseal(f)),
                r"spec\.yaml: sha256 \w+, result\.json's spec\.sha256 says"),
        }
        for name, (tamper, expect) in attacks.items():
            with self.subTest(attack=name):
                bad = self.copy(good, re.sub(r"\W", "_", name))
                tamper(bad)
                p = run(["verify", bad])
                self.assertEqual(p.returncode, 65, p.stdout + p.stderr)
                self.assertRegex(p.stdout, expect)


if __name__ == "__main__":
    unittest.main()
