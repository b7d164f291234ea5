"""Finds dependency cycles between the object files of ktrial's static libraries.

An object A depends on object B when A refers to a symbol that B defines (read with
`nm` from the archives). A cycle (A needs B, B needs A, possibly through others) means the
two files cannot be understood, tested or replaced apart; the layering in
docs/architecture.md forbids it. Prints every strongly connected component of more than
one object and exits 1 if there is any.

It also reads the #include lines of every .c, .h, .cu and .cuh under the source folders
given with --src and reports include cycles (a header that includes itself through others).

usage: check_cycles.py [--src DIR ...] LIB.a [LIB.a ...]
"""
import os
import re
import subprocess
import sys


LINE = re.compile(r"^(.*?):([^:]+):\s*[0-9a-fA-F]*\s+([A-Za-z])\s+(\S+)$")


def nm(args, lib):
    """(object, type letter, symbol) for each line of `nm -A ARGS LIB`."""
    out = subprocess.run(["nm", "-A", *args, lib], capture_output=True, text=True,
                         check=True).stdout
    for line in out.splitlines():
        m = LINE.match(line)
        if m:
            yield f"{m.group(1)}:{m.group(2)}", m.group(3), m.group(4)


def read_objects(archives):
    defined, used = {}, {}
    for lib in archives:
        for obj, _, sym in nm(["--defined-only", "-g"], lib):
            defined.setdefault(sym, obj)
            used.setdefault(obj, set())
        for obj, _, sym in nm(["-u"], lib):
            used.setdefault(obj, set()).add(sym)
    graph = {o: set() for o in used}
    for obj, syms in used.items():
        for s in syms:
            d = defined.get(s)
            if d and d != obj:
                graph[obj].add(d)
    return graph


def components(graph):
    """Tarjan's strongly connected components, iteratively."""
    index, low, on_stack, stack, result, counter = {}, {}, set(), [], [], [0]
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, it = work[-1]
            nxt = next(it, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter[0]
                    counter[0] += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == node:
                        break
                result.append(sorted(comp))
    return result


INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def read_includes(roots):
    """Module graph from #include "..." lines; a name resolves against the including file's
    folder, then against each root (the include paths of the build)."""
    files = []
    for root in roots:
        for dirpath, _, names in os.walk(root):
            files += [os.path.join(dirpath, n) for n in names
                      if n.endswith((".c", ".h", ".cu", ".cuh"))]
    def module(path):
        return os.path.normpath(path)
    graph = {module(f): set() for f in files}
    for f in files:
        with open(f, encoding="utf-8", errors="replace") as fh:
            text = fh.read()
        for name in INCLUDE.findall(text):
            for base in [os.path.dirname(f), *roots]:
                target = os.path.join(base, name)
                if os.path.exists(target):
                    if module(target) != module(f):
                        graph.setdefault(module(f), set()).add(module(target))
                        graph.setdefault(module(target), set())
                    break
    return graph


def report(what, graph):
    cycles = [c for c in components(graph) if len(c) > 1]
    edges = sum(len(v) for v in graph.values())
    print(f"{what}: {len(graph)} nodes, {edges} dependencies between them")
    for c in cycles:
        print("  cycle: " + " <-> ".join(c))
    print(f"{what}: {len(cycles)} cycle(s)")
    return len(cycles)


def main():
    args, roots = sys.argv[1:], []
    while len(args) >= 2 and args[0] == "--src":
        roots.append(args[1])
        args = args[2:]
    if not args:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 64
    bad = report("objects (symbols)", read_objects(args))
    if roots:
        bad += report("files (#include)", read_includes(roots))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
