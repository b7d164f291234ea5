"""Shared helpers for the CLI tests: run the built binary, write sim specs, validate results."""
import json
import os
import subprocess

KTRIAL = os.environ.get("KTRIAL", "")
SOURCE = os.environ.get("KT_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))


def run(args, cwd=None, env=None, timeout=300):
    return subprocess.run([KTRIAL] + args, cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout)


def arm(variant="lognormal", **params):
    inner = ", ".join(f"{k}: {v}" for k, v in params.items())
    return f"{{variant: {variant}, params: {{{inner}}}}}"


def sim_spec(path, name="sim-test", baseline=None, candidates=None, batch_sizes=(1,),
             context_lengths=(64,), trials=None, thresholds=None, seed=7, sets=2):
    """Writes a synthetic/sim spec; 'candidates' maps a name to its params dict."""
    baseline = baseline or {"median_us": 100, "spread": 0.05}
    candidates = candidates or {"cand": {"median_us": 80, "spread": 0.05}}
    trials = trials or {}
    t = {"warmup": 2, "min_repetitions": 10, "max_repetitions": 200,
         "max_seconds_per_point": 60, "order": "random", "flush_cache": False}
    t.update(trials)
    lines = [
        "version: 1",
        f"name: {name}",
        "op: synthetic",
        "backend: sim",
        "dtype: fp32",
        f"batch_sizes: [{', '.join(str(b) for b in batch_sizes)}]",
        f"context_lengths: [{', '.join(str(c) for c in context_lengths)}]",
        f"inputs: {{distribution: normal, seed: {seed}, sets: {sets}}}",
        f"baseline: {arm(**baseline)}",
        "candidates:",
    ]
    for cname, params in candidates.items():
        inner = ", ".join(f"{k}: {v}" for k, v in params.items())
        lines.append(f"  - {{name: {cname}, variant: lognormal, params: {{{inner}}}}}")
    lines.append("trials: {" + ", ".join(f"{k}: {str(v).lower() if isinstance(v, bool) else v}"
                                         for k, v in t.items()) + "}")
    if thresholds:
        lines.append("thresholds:")
        for section, values in thresholds.items():
            if isinstance(values, dict):
                inner = ", ".join(f"{k}: {str(v).lower() if isinstance(v, bool) else v}"
                                  for k, v in values.items())
                lines.append(f"  {section}: {{{inner}}}")
            else:
                lines.append(f"  {section}: {values}")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return path


def load_result(folder):
    with open(os.path.join(folder, "result.json")) as f:
        return json.load(f)


def validate_result(testcase, folder):
    """Validates folder/result.json against schemas/result.schema.json (python3-jsonschema)."""
    import jsonschema
    with open(os.path.join(SOURCE, "schemas", "result.schema.json")) as f:
        schema = json.load(f)
    doc = load_result(folder)
    errors = sorted(jsonschema.Draft7Validator(schema).iter_errors(doc), key=str)
    testcase.assertEqual([], [f"{list(e.path)}: {e.message}" for e in errors[:5]])
    verify_archive(testcase, folder)
    return doc


def verify_archive(testcase, folder):
    """'ktrial verify' on an archive a test wrote: its seal, its verdicts decided again from its
    pairs and samples, its aggregate and decision must all agree (docs/trust.md). Every archive
    a CLI test validates is verified so."""
    p = run(["verify", "--quiet", folder])
    testcase.assertEqual((p.returncode, p.stdout), (0, ""), f"ktrial verify {folder}:\n"
                         + p.stdout + p.stderr)


def verdicts(doc):
    """{(point id, candidate): verdict} of a result document."""
    return {(p["id"], c["name"]): c["verdict"] for p in doc["points"] for c in p["candidates"]}
