"""ktrial's schema stage and python3-jsonschema must give the same accept/reject answer.

tests/unit/test_schema_files (built with the unit tests) runs every spec of the corpora
through kt_yaml_load and kt_schema_validate and writes "SCHEMA SPEC accept|reject|yaml-error"
lines. This test runs it, reads each spec again with PyYAML set to the YAML 1.2 core schema
(the resolution ktrial uses; PyYAML's default is YAML 1.1, where 1e3 is a string and 010 is
octal), validates it with jsonschema's Draft7Validator, and compares. Specs that ktrial
rejects at the YAML stage (duplicate keys, yes/no booleans) have no schema answer to compare.
"""
import json
import os
import re
import subprocess
import sys
import tempfile
import unittest

try:
    import jsonschema
    import yaml
except ImportError as e:  # python3-yaml or python3-jsonschema missing: skip
    print(f"skipped: {e}")
    sys.exit(77)

SOURCE = os.environ.get("KT_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.environ.get("KT_BUILD_DIR", os.path.join(SOURCE, "build"))
HELPER = os.path.join(BUILD, "tests", "test_schema_files")


class Core12Loader(yaml.SafeLoader):
    """SafeLoader resolving plain scalars by the YAML 1.2 core schema, as ktrial does."""


Core12Loader.yaml_implicit_resolvers = {}
# the YAML 1.1 merge key, which ktrial applies too (runner/spec/yaml_tree.h)
Core12Loader.add_implicit_resolver("tag:yaml.org,2002:merge", re.compile(r"^(?:<<)$"), ["<"])
Core12Loader.add_implicit_resolver(
    "tag:yaml.org,2002:null", re.compile(r"^(?:~|null|Null|NULL|)$"), ["~", "n", "N", ""])
Core12Loader.add_implicit_resolver(
    "tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"),
    list("tTfF"))
Core12Loader.add_implicit_resolver(
    "tag:yaml.org,2002:int", re.compile(r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$"),
    list("-+0123456789"))
Core12Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
               r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"),
    list("-+0123456789."))


def _int(loader, node):
    text = loader.construct_scalar(node)
    if text.startswith("0o"):
        return int(text[2:], 8)
    if text.startswith("0x"):
        return int(text[2:], 16)
    return int(text, 10)


def _float(loader, node):
    text = loader.construct_scalar(node).lower()
    if text.endswith(".inf"):
        return float("-inf") if text.startswith("-") else float("inf")
    if text == ".nan":
        return float("nan")
    return float(text)


Core12Loader.add_constructor("tag:yaml.org,2002:int", _int)
Core12Loader.add_constructor("tag:yaml.org,2002:float", _float)


def load_core12(path):
    with open(path, "rb") as f:
        return yaml.load(f, Loader=Core12Loader)


class Core12LoaderTest(unittest.TestCase):
    """The reference reader must resolve scalars as ktrial does, or the comparison is moot."""

    def test_resolution(self):
        doc = yaml.load("a: 1e3\nb: 010\nc: 0o17\nd: 0x1F\ne: yes\nf: .inf\ng: ~\nh: True\n"
                        "i: 1_000\nj: 2001-01-01\nk: '1'\n", Loader=Core12Loader)
        self.assertEqual(doc, {"a": 1000.0, "b": 10, "c": 15, "d": 31, "e": "yes",
                               "f": float("inf"), "g": None, "h": True, "i": "1_000",
                               "j": "2001-01-01", "k": "1"})
        self.assertIsInstance(doc["a"], float)


class SchemaAgreementTest(unittest.TestCase):
    def run_helper(self):
        if not os.path.exists(HELPER):
            self.fail(f"{HELPER} is not built (it is one of the unit tests)")
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "answers.txt")
            env = dict(os.environ, KT_SOURCE_DIR=SOURCE, KT_AGREEMENT_OUT=out)
            proc = subprocess.run([HELPER], env=env, capture_output=True, text=True, timeout=120)
            # its own checks (file names' promises) may fail; the answers are still written,
            # and disagreeing with jsonschema is what this test reports
            if not os.path.exists(out):
                self.fail(f"test_schema_files wrote no answers:\n{proc.stdout}\n{proc.stderr}")
            with open(out) as f:
                return [line.split() for line in f if line.strip()]

    def test_same_answers(self):
        rows = self.run_helper()
        schemas, compared, disagreements = {}, 0, []
        for schema_rel, spec_rel, answer in rows:
            self.assertIn(answer, ("accept", "reject", "yaml-error"))
            if answer == "yaml-error":
                continue
            if schema_rel not in schemas:
                with open(os.path.join(SOURCE, schema_rel)) as f:
                    schema = json.load(f)
                jsonschema.Draft7Validator.check_schema(schema)
                schemas[schema_rel] = jsonschema.Draft7Validator(schema)
            validator = schemas[schema_rel]
            try:
                doc = load_core12(os.path.join(SOURCE, spec_rel))
            except yaml.YAMLError as e:  # PyYAML's parser is stricter than libyaml in places
                disagreements.append(f"{spec_rel}: ktrial reads it, PyYAML does not: {e}")
                continue
            errors = [e.message for e in validator.iter_errors(doc)]
            theirs = "reject" if errors else "accept"
            compared += 1
            if theirs != answer:
                disagreements.append(f"{spec_rel} against {schema_rel}: ktrial says {answer}, "
                                     f"jsonschema says {theirs} {errors[:3]}")
        self.assertGreater(compared, 0)
        self.assertEqual(disagreements, [], "\n".join(disagreements))

    def test_every_spec_is_covered(self):
        """The helper must not skip a file: every .yaml of the corpora has an answer."""
        answered = {spec for _, spec, _ in self.run_helper()}
        for folder in ("tests/specs/good", "tests/specs/bad",
                       "tests/specs/schema_agreement/experiment",
                       "tests/specs/schema_agreement/keywords"):
            full = os.path.join(SOURCE, folder)
            if not os.path.isdir(full):
                continue
            for name in os.listdir(full):
                if name.endswith(".yaml"):
                    self.assertIn(f"{folder}/{name}", answered)


if __name__ == "__main__":
    unittest.main()
