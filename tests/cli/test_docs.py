"""The documentation agrees with the project: docs/spec.md documents exactly the properties of
schemas/experiment.schema.json (with its defaults), docs/results.md and results-provenance.md those of
schemas/result.schema.json, every relative link of README.md and docs/*.md resolves (anchors
included) inside the repository, and no file of the project points at documents outside it.

Reference tables: a heading that names a schema object, `#` for the top level or
`#/definitions/NAME` for a definition, starts a section; each table row of the section whose first
cell is a code span documents that property, by its path relative to the object (`a.b` for a
nested property, `a[]` for the items of an array, `a.*` for the values of a map). Objects reached
through a $ref to another documented definition get their own section."""
import glob
import json
import math
import os
import re
import unittest

from ktrial_cli import SOURCE

DOCS = os.path.join(SOURCE, "docs")
MARKER = re.compile(r"`(#(?:/definitions/[A-Za-z0-9_]+)?)`")


def has_properties(node):
    parts = [node] + [s for s in node.get("allOf", []) if "$ref" not in s]
    return any("properties" in p for p in parts)


def documented_definitions(schema):
    """Names of the definitions that are objects with properties of their own."""
    return {n for n, node in schema.get("definitions", {}).items() if has_properties(node)}


def resolve(schema, ref):
    """The node a local $ref ('#/definitions/x', '#/properties/y') points at."""
    node = schema
    for part in ref.lstrip("#").strip("/").split("/"):
        if part:
            node = node[part.replace("~1", "/").replace("~0", "~")]
    return node


def schema_sections(schema):
    """{"#" or "#/definitions/NAME": {path: property schema}} for every documented object.
    A $ref to an object with properties is documented where that object is (its own section,
    or its place under the top level), so the walk stops there."""
    objects = documented_definitions(schema)

    def walk(node, path, out, seen):
        if not isinstance(node, dict):
            return
        ref = node.get("$ref")
        if ref:
            target = resolve(schema, ref)
            if not has_properties(target) and ref not in seen:
                walk(target, path, out, seen | {ref})
        for key in ("anyOf", "oneOf", "allOf"):
            for sub in node.get(key, []):
                walk(sub, path, out, seen)
        for name, sub in node.get("properties", {}).items():
            p = f"{path}.{name}" if path else name
            out.setdefault(p, sub)
            walk(sub, p, out, seen)
        extra = node.get("additionalProperties")
        if isinstance(extra, dict):
            walk(extra, f"{path}.*", out, seen)
        if isinstance(node.get("items"), dict):
            walk(node["items"], f"{path}[]", out, seen)

    defs = schema.get("definitions", {})
    sections = {}
    root = {k: v for k, v in schema.items() if k != "definitions"}
    walk(root, "", sections.setdefault("#", {}), frozenset())
    for name in sorted(objects):
        node = defs[name]
        out = sections.setdefault(f"#/definitions/{name}", {})
        walk({k: v for k, v in node.items() if k != "$ref"}, "", out, frozenset())
    return sections


def doc_sections(text):
    """{marker: {path: [cells]}} from the reference tables of a markdown document."""
    sections, current, header = {}, None, None
    for line in text.splitlines():
        if line.startswith("#"):
            m = MARKER.search(line)
            current = m.group(1) if m else None
            if current is not None:
                sections.setdefault(current, {})
            header = None
            continue
        if current is None or not line.startswith("|"):
            continue
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip().strip("|"))]
        if header is None:
            header = [c.lower() for c in cells]
            continue
        m = re.fullmatch(r"`([^`]+)`", cells[0])
        if m:
            sections[current][m.group(1)] = dict(zip(header, cells))
    return sections


# a type cell that lists values: "`a` \\| `b` \\| `c`", "array of `a` \\| `b`", maybe followed by
# words for what the schema allows besides ("\\| a plugin's op")
ENUM_CELL = re.compile(r"(?:array of )?(`[^`]+`(?: \\\| `[^`]+`)+)(?! \\\| `)")


def enum_values(schema, node):
    """Every value an enum or const of 'node' allows, through $ref, anyOf and array items."""
    values = set()

    def walk(n, seen):
        if not isinstance(n, dict):
            return
        ref = n.get("$ref")
        if ref and ref not in seen:
            walk(resolve(schema, ref), seen | {ref})
        values.update(render(v) for v in n.get("enum", []))
        if "const" in n:
            values.add(render(n["const"]))
        for key in ("anyOf", "oneOf", "allOf"):
            for sub in n.get(key, []):
                walk(sub, seen)
        walk(n.get("items"), seen)

    walk(node, frozenset())
    return values


def enum_problems(doc_file, schema, expected, found):
    """Rows whose type cell lists values other than the schema's enum."""
    problems = []
    for marker, rows in sorted(found.items()):
        for path, cells in sorted(rows.items()):
            m = ENUM_CELL.match(cells.get("type", ""))
            if not m or path not in expected.get(marker, {}):
                continue
            listed = set(re.findall(r"`([^`]+)`", m.group(1)))
            allowed = enum_values(schema, expected[marker][path])
            if listed != allowed:
                problems.append(f"{doc_file}: `{marker}` `{path}` lists {sorted(listed)}, the "
                                f"schema allows {sorted(allowed)}")
    return problems


def bound_problems(doc_file, expected, found):
    """Rows whose type cell leaves out a numeric bound of the schema: each minimum and maximum
    must appear as its figure (1,048,576 or 1048576; 2^63-1), an exclusive minimum of 0 as
    "above 0" or "(0,"."""
    def figures(v):
        out = {str(v), f"{v:,}"}
        if v == 2**63 - 1:
            out.add("2^63-1")
        return out
    problems = []
    for marker, rows in sorted(expected.items()):
        for path, node in sorted(rows.items()):
            cell = found.get(marker, {}).get(path, {}).get("type")
            if cell is None:
                continue
            for key in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
                if key not in node:
                    continue
                v = node[key]
                ok = figures(v) if key != "exclusiveMinimum" or v != 0 else {"above 0", "(0,"}
                if not any(f in cell for f in ok):
                    problems.append(f"{doc_file}: `{marker}` `{path}` type '{cell}' does not "
                                    f"give the schema's {key} {v}")
    return problems


def render(value):
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "[" + ", ".join(render(v) for v in value) + "]"
    return json.dumps(value)


def slug(heading):
    """GitHub's anchor of a heading."""
    text = re.sub(r"[`*]", "", heading.strip().lower())
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path):
    out, seen, fence = set(), {}, False
    with open(path) as f:
        for line in f:
            if line.startswith("```"):
                fence = not fence
            if fence:
                continue
            m = re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
            if m:
                base = slug(m.group(1))
                n = seen.get(base, 0)
                seen[base] = n + 1
                out.add(base if n == 0 else f"{base}-{n}")
    return out


def links(path):
    """(line number, target) of every markdown link outside code."""
    fence = False
    with open(path) as f:
        for no, line in enumerate(f, 1):
            if line.startswith("```"):
                fence = not fence
                continue
            if fence:
                continue
            line = re.sub(r"`[^`]*`", "", line)
            for m in re.finditer(r"\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)", line):
                yield no, m.group(1)
            m = re.match(r"\s*\[[^\]]+\]:\s*(\S+)", line)
            if m:
                yield no, m.group(1)


class ReferenceTest(unittest.TestCase):
    maxDiff = None
    def check(self, schema_file, doc_files, default_column):
        """'doc_files': the pages that together document the schema (their sections joined)."""
        with open(os.path.join(SOURCE, "schemas", schema_file)) as f:
            schema = json.load(f)
        expected = schema_sections(schema)
        texts = []
        for name in doc_files:
            with open(os.path.join(DOCS, name)) as f:
                texts.append(f.read())
        found = doc_sections("\n".join(texts))
        doc_file = " + ".join(doc_files)
        problems = enum_problems(doc_file, schema, expected, found)
        if default_column:  # the spec's reference: a user picks values within these
            problems += bound_problems(doc_file, expected, found)
        for marker in sorted(set(expected) | set(found)):
            want, have = expected.get(marker, {}), found.get(marker, {})
            if marker not in found:
                problems.append(f"{doc_file}: no section for `{marker}`")
            if marker not in expected:
                problems.append(f"{doc_file}: section `{marker}` is not in {schema_file}")
            for path in sorted(set(want) - set(have)):
                problems.append(f"{doc_file}: `{marker}` `{path}` is not documented")
            for path in sorted(set(have) - set(want)):
                problems.append(f"{doc_file}: `{marker}` `{path}` is not in {schema_file}")
            for path in sorted(set(want) & set(have)):
                if not have[path].get("meaning", "x").strip():
                    problems.append(f"{doc_file}: `{marker}` `{path}` has no meaning")
                if default_column and "default" in want[path]:
                    cell = have[path].get("default", "").replace("`", "").strip()
                    if cell != render(want[path]["default"]):
                        problems.append(f"{doc_file}: `{marker}` `{path}` default is "
                                        f"'{cell}', the schema says "
                                        f"'{render(want[path]['default'])}'")
        self.assertEqual([], problems)

    def test_spec_reference_matches_the_experiment_schema(self):
        self.check("experiment.schema.json", ["spec.md"], default_column=True)

    def test_results_reference_matches_the_result_schema(self):
        self.check("result.schema.json", ["results.md", "results-provenance.md"],
                   default_column=False)

    def test_the_checker_sees_a_missing_and_an_extra_property(self):
        schema = {"properties": {"a": {"type": "object", "properties": {"b": {}}},
                                 "c": {"$ref": "#/definitions/d"}},
                  "definitions": {"d": {"properties": {"e": {"default": 3}}}}}
        doc = ("## top (`#`)\n| key | meaning |\n|---|---|\n| `a` | x |\n| `a.z` | y |\n"
               "| `c` | z |\n## d (`#/definitions/d`)\n| key | default | meaning |\n|-|-|-|\n"
               "| `e` | 3 | w |\n")
        want, have = schema_sections(schema), doc_sections(doc)
        self.assertEqual(set(want["#"]), {"a", "a.b", "c"})
        self.assertEqual(set(have["#"]), {"a", "a.z", "c"})
        self.assertEqual(set(want["#/definitions/d"]), set(have["#/definitions/d"]))
        self.assertEqual(have["#/definitions/d"]["e"]["default"], render(3))


    def test_the_checker_sees_a_value_the_table_leaves_out(self):
        schema = {"properties": {"op": {"anyOf": [{"enum": ["a", "b"]}, {"pattern": "x"}]},
                                 "l": {"items": {"enum": [1, 2]}}, "n": {"type": "integer"}}}
        doc = ("## top (`#`)\n| key | type | meaning |\n|---|---|---|\n"
               "| `op` | `a` \\| a plugin's | x |\n| `l` | array of `1` \\| `2` | y |\n"
               "| `n` | `3` | z |\n")
        problems = enum_problems("d.md", schema, schema_sections(schema), doc_sections(doc))
        self.assertEqual([], problems)  # one value alone is no list
        doc = doc.replace("| `a` \\| a plugin's", "| `a` \\| `c` \\| a plugin's")
        problems = enum_problems("d.md", schema, schema_sections(schema), doc_sections(doc))
        self.assertEqual(["d.md: `#` `op` lists ['a', 'c'], the schema allows ['a', 'b']"],
                         problems)


class LookScheduleTest(unittest.TestCase):
    """The default design's looks as docs/how-it-decides.md and docs/statistics.md list them are the ones
    their rule gives (and tests/unit/test_sequential.c pins the code to): after every pair from
    7 to 14, then the ceil of the running product 14 x 1.2^k, then 200."""

    def test_listed_looks_follow_the_rule(self):
        looks, x = list(range(7, 15)), 14 * 1.2
        while math.ceil(x) < 200:
            looks.append(math.ceil(x))
            x *= 1.2
        looks.append(200)
        want = ", ".join(str(n) for n in [7, 8]) + ", ..., " + ", ".join(
            str(n) for n in looks[7:])
        for name in (os.path.join("docs", "how-it-decides.md"), os.path.join("docs", "statistics.md")):
            with open(os.path.join(SOURCE, name)) as f:
                text = " ".join(f.read().split())
            m = re.search(r"7, 8, \.\.\., 14, [0-9, ]*200: 23 looks", text)
            self.assertIsNotNone(m, name)
            self.assertEqual(m.group(0), want + ": 23 looks", name)
        self.assertEqual(len(looks), 23)


def doc_pages():
    """Every markdown page under docs/, subfolders included."""
    return sorted(glob.glob(os.path.join(DOCS, "**", "*.md"), recursive=True))


# A commit named in prose: 7 to 12 hex digits with a letter and a digit, standing alone (a
# sha256 in an example is longer, a word has no digit).
COMMIT = re.compile(r"(?<![0-9A-Za-z_/.-])(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,12}"
                    r"(?![0-9A-Za-z_-])")


class ShapeTest(unittest.TestCase):
    """The front door stays a front door: README.md at most 300 lines and 25 KB, every docs page
    at most about 400 lines, and no commit hashes (a figure's history) outside docs/benchmarks/,
    where each figure names the commit it was measured at."""

    def test_readme_is_a_landing_page(self):
        path = os.path.join(SOURCE, "README.md")
        with open(path) as f:
            lines = f.read().split("\n")
        self.assertLessEqual(len(lines), 300)
        self.assertLessEqual(os.path.getsize(path), 25 * 1024)
        self.assertTrue(any(line.startswith("## Contents") for line in lines))

    def test_no_page_over_400_lines(self):
        long = []
        for path in doc_pages():
            with open(path) as f:
                n = sum(1 for _ in f)
            if n > 420:
                long.append(f"{os.path.relpath(path, SOURCE)}: {n} lines")
        self.assertEqual([], long)

    def test_no_commit_hashes_outside_the_benchmarks(self):
        found = []
        bench = os.path.join(DOCS, "benchmarks") + os.sep
        for path in [os.path.join(SOURCE, "README.md")] + doc_pages():
            if path.startswith(bench):
                continue
            with open(path) as f:
                for no, line in enumerate(f, 1):
                    for m in COMMIT.finditer(line):
                        found.append(f"{os.path.relpath(path, SOURCE)}:{no}: {m.group(0)}")
        self.assertEqual([], found)

    def test_the_commit_pattern(self):
        self.assertEqual(["77f5b4d", "1aaa832"],
                         COMMIT.findall("at commit 77f5b4d, then (1aaa832) and"))
        self.assertEqual([], COMMIT.findall("deadbeef 1234567 sha256:" + "ab12" * 16))
        self.assertEqual([], COMMIT.findall("results/20261204T151550Z-x and ffd-d5 0x7fc0dead"))


class LinkTest(unittest.TestCase):
    def test_every_relative_link_resolves(self):
        files = [os.path.join(SOURCE, "README.md")] + doc_pages()
        self.assertGreaterEqual(len(files), 4)
        root = os.path.realpath(SOURCE)
        problems, checked = [], 0
        for path in files:
            rel = os.path.relpath(path, SOURCE)
            for no, target in links(path):
                if re.match(r"[a-z][a-z0-9+.-]*:", target):
                    continue  # http:, https:, mailto:
                checked += 1
                file_part, _, anchor = target.partition("#")
                dest = os.path.realpath(os.path.join(os.path.dirname(path), file_part)) \
                    if file_part else os.path.realpath(path)
                if not (dest == root or dest.startswith(root + os.sep)):
                    problems.append(f"{rel}:{no}: {target} leaves the repository")
                elif not os.path.exists(dest):
                    problems.append(f"{rel}:{no}: {target} does not exist")
                elif anchor and (not dest.endswith(".md") or anchor not in anchors(dest)):
                    problems.append(f"{rel}:{no}: {target}: no heading has that anchor")
        self.assertEqual([], problems)
        self.assertGreater(checked, 10)

    def test_anchor_slugs(self):
        self.assertEqual(slug("How a run decides"), "how-a-run-decides")
        self.assertEqual(slug("Top level (`#`)"), "top-level-")
        self.assertEqual(slug("`arm`: a variant at a point"), "arm-a-variant-at-a-point")
        self.assertEqual(slug("1. Layers, and why"), "1-layers-and-why")


class SelfContainedTest(unittest.TestCase):
    # built from parts so that this file does not match itself
    OUTSIDE = ["../" + "shared", "/work/" + "shared", "REFERENCE" + ".md", "DESIGN" + ".md",
               "DESIGN" + " section", "STYLE" + ".md"]
    SKIP = {".git", "results", ".gpu-deps", "__pycache__", "wt"}
    TEXT = (".c", ".h", ".cu", ".cuh", ".py", ".md", ".yaml", ".yml", ".json", ".txt", ".cmake",
            ".sh", ".in")

    def test_nothing_points_outside_the_repository(self):
        problems = []
        for folder, dirs, files in os.walk(SOURCE):
            dirs[:] = [d for d in dirs if d not in self.SKIP and not d.startswith("build")]
            for name in files:
                if not (name.endswith(self.TEXT) or name in ("CMakeLists.txt", "run")):
                    continue
                path = os.path.join(folder, name)
                with open(path, errors="replace") as f:
                    for no, line in enumerate(f, 1):
                        for word in self.OUTSIDE:
                            if word in line:
                                problems.append(f"{os.path.relpath(path, SOURCE)}:{no}: {word}")
        self.assertEqual([], problems)


if __name__ == "__main__":
    unittest.main()
