"""docs/ops.md lists every op's tensors as 'ktrial kernels' prints them from the one table
(kernels/op_tensors.c): for each op with tensors a section whose table has the same rows, in
the same order, with the same name, call position, shape, layout and dtype; and
'ktrial kernels --op NAME' prints exactly that op with its tensors."""
import json
import os
import re
import unittest

from ktrial_cli import SOURCE, run


def doc_tables():
    """{op: [(call, name, shape, layout, dtype), ...]} from docs/ops.md's tables."""
    with open(os.path.join(SOURCE, "docs", "ops.md")) as f:
        text = f.read()
    tables, op = {}, None
    for line in text.splitlines():
        m = re.match(r"^## (\w+)\s*$", line)
        if m:
            op = m.group(1)
            continue
        if op and line.startswith("| ") and not line.startswith("| call") and "---" not in line:
            cells = [c.strip().replace("\\|", "|")
                     for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]
            tables.setdefault(op, []).append(tuple(c.strip("`") for c in cells))
    return tables


class OpsDoc(unittest.TestCase):
    def test_the_page_matches_the_table(self):
        r = run(["kernels", "--json"])
        self.assertEqual(r.returncode, 0, r.stderr)
        want = {}
        for op in json.loads(r.stdout)["ops"]:
            rows = [(f"{t['role']}s[{t['index']}]", t["name"], t["shape"], t["layout"], t["dtype"])
                    for t in op["tensors"]]
            if rows:
                want[op["name"]] = rows
        self.assertIn("swiglu_mlp", want)
        self.assertEqual(doc_tables(), want)

    def test_kernels_op_prints_one_op_with_its_tensors(self):
        r = run(["kernels", "--op", "swiglu_mlp"])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("op swiglu_mlp:", r.stdout)
        self.assertNotIn("op gemm:", r.stdout)
        self.assertRegex(r.stdout, r"input\s+1\s+w_gate_up\s+\[2 intermediate, hidden\]")
        self.assertIn("rows 0..intermediate-1 are the gate", r.stdout)
        r = run(["kernels", "--op", "gemm", "--json"])
        ops = json.loads(r.stdout)["ops"]
        self.assertEqual([o["name"] for o in ops], ["gemm"])
        self.assertEqual([t["name"] for t in ops[0]["tensors"]], ["x", "w", "y"])

    def test_an_unknown_op_is_a_usage_error_with_a_suggestion(self):
        r = run(["kernels", "--op", "swiglu"])
        self.assertEqual(r.returncode, 64)
        self.assertIn("did you mean 'swiglu_mlp'", r.stderr)


if __name__ == "__main__":
    unittest.main()
