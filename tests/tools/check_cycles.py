"""Checks ktrial's layering: no dependency cycle, and no dependency against the declared order.

Two graphs, each checked for cycles (any strongly connected component of more than one node,
Tarjan's algorithm) and, when --order is given, for back-edges between folders:

- objects: an object depends on the object that defines a symbol it uses, read with `nm` from
  the static libraries and the program's own objects (main.c's) given as arguments. An object
  is placed in the folder of its source file when its name is that of exactly one source file
  under the --src folders.
- files: the `#include "..."` lines of every .c, .h, .cu and .cuh under the --src folders (tests
  are not among them); a name resolves against the including file's folder, then each root.

The order is read from the one place it is written: the fenced block that follows the line
`<!-- layers: -->` in docs/architecture.md. Each line of the block that starts with a folder
(`runner/<name>` or `kernels`) is a layer, the highest first; several folders at the start of one
line are peers, none of which may use another. A folder may use only the layers below it. A file
in no declared folder (a new folder nobody placed) is an error too.

Prints every cycle and every back-edge (with the files or objects behind it) and exits 1 if
there is any.

usage: check_cycles.py [--order DOC] [--src DIR ...] LIB.a|OBJ.o [...]
"""
import os
import re
import subprocess
import sys


NM_ARCHIVE = re.compile(r"^(.*?):([^:]+):\s*[0-9a-fA-F]*\s+([A-Za-z])\s+(\S+)$")
NM_OBJECT = re.compile(r"^([^:]+):\s*[0-9a-fA-F]*\s+([A-Za-z])\s+(\S+)$")


def nm(args, path):
    """(object, type letter, symbol) for each line of `nm -A ARGS PATH`."""
    out = subprocess.run(["nm", "-A", *args, path], capture_output=True, text=True,
                         check=True).stdout
    archive = path.endswith(".a")
    for line in out.splitlines():
        m = (NM_ARCHIVE if archive else NM_OBJECT).match(line)
        if m:
            if archive:
                yield f"{m.group(1)}:{m.group(2)}", m.group(3), m.group(4)
            else:
                yield m.group(1), m.group(2), m.group(3)


def read_objects(paths):
    defined, used = {}, {}
    for path in paths:
        for obj, _, sym in nm(["--defined-only", "-g"], path):
            defined.setdefault(sym, obj)
            used.setdefault(obj, set())
        for obj, _, sym in nm(["-u"], path):
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
SOURCE_SUFFIXES = (".c", ".h", ".cu", ".cuh")


def source_files(roots):
    files = []
    for root in roots:
        for dirpath, _, names in os.walk(root):
            files += [os.path.normpath(os.path.join(dirpath, n)) for n in names
                      if n.endswith(SOURCE_SUFFIXES)]
    return sorted(files)


def read_includes(roots):
    """File graph from #include "..." lines."""
    files = source_files(roots)
    graph = {f: set() for f in files}
    for f in files:
        with open(f, encoding="utf-8", errors="replace") as fh:
            text = fh.read()
        for name in INCLUDE.findall(text):
            for base in [os.path.dirname(f), *roots]:
                target = os.path.normpath(os.path.join(base, name))
                if os.path.exists(target):
                    if target != f:
                        graph[f].add(target)
                        graph.setdefault(target, set())
                    break
    return graph


FOLDER = re.compile(r"^(?:runner/[A-Za-z0-9_]+|kernels)$")


def read_order(doc):
    """[[folder, ...], ...], the highest layer first, from the block after '<!-- layers: -->'."""
    with open(doc, encoding="utf-8") as fh:
        lines = fh.read().splitlines()
    try:
        start = next(i for i, l in enumerate(lines) if l.strip().startswith("<!-- layers:"))
        fence = next(i for i in range(start + 1, len(lines)) if lines[i].startswith("```"))
    except StopIteration:
        sys.exit(f"{doc}: no '<!-- layers: -->' line followed by a fenced block")
    layers = []
    for line in lines[fence + 1:]:
        if line.startswith("```"):
            break
        peers = []
        for token in line.split():
            if not FOLDER.match(token):
                break
            peers.append(token)
        if peers:
            layers.append(peers)
    if not layers:
        sys.exit(f"{doc}: the layers block names no folder")
    return layers


def rank_of(layers):
    """{folder: rank}, 0 for the lowest layer."""
    return {f: len(layers) - 1 - i for i, peers in enumerate(layers) for f in peers}


def folder_of(path, src_parent):
    """'runner/<name>' or 'kernels' for a source path, or None."""
    rel = os.path.relpath(path, src_parent)
    parts = rel.split(os.sep)
    if parts[0] == "kernels":
        return "kernels"
    if parts[0] == "runner" and len(parts) > 2:
        return "runner/" + parts[1]
    return None


def back_edges(what, graph, where, ranks):
    """Edges from a folder to one at the same rank (a peer) or above it, and nodes in no
    declared folder. 'where' maps a node to its folder, or None when it is unknown."""
    bad = 0
    crossings = {}
    for node, deps in graph.items():
        a = where(node)
        if a is None:
            continue
        if a not in ranks:
            print(f"  {node}: in folder {a}, which the declared order does not place")
            bad += 1
            continue
        for dep in deps:
            b = where(dep)
            if b is None or b == a or b not in ranks:
                continue
            if ranks[b] >= ranks[a]:
                crossings.setdefault((a, b), []).append(f"{node} -> {dep}")
    for (a, b), examples in sorted(crossings.items()):
        print(f"  back-edge: {a} -> {b} ({len(examples)}), against the declared order")
        for e in sorted(examples)[:5]:
            print(f"      {e}")
        bad += 1
    print(f"{what}: {bad} back-edge(s) or unplaced folder(s)")
    return bad


def report_cycles(what, graph):
    cycles = [c for c in components(graph) if len(c) > 1]
    edges = sum(len(v) for v in graph.values())
    print(f"{what}: {len(graph)} nodes, {edges} dependencies between them")
    for c in cycles:
        print("  cycle: " + " <-> ".join(c))
    print(f"{what}: {len(cycles)} cycle(s)")
    return len(cycles)


def object_folders(graph, roots):
    """{object node: folder} for objects named after exactly one source file."""
    by_name = {}
    for f in source_files(roots):
        by_name.setdefault(os.path.basename(f) + ".o", []).append(f)
    parent = os.path.dirname(os.path.normpath(roots[0])) if roots else "."
    out = {}
    for node in graph:
        name = os.path.basename(node.split(":")[-1])
        paths = by_name.get(name, [])
        out[node] = folder_of(paths[0], parent) if len(paths) == 1 else None
    return out


def main():
    args, roots, order = sys.argv[1:], [], None
    while len(args) >= 2 and args[0] in ("--src", "--order"):
        if args[0] == "--src":
            roots.append(os.path.normpath(args[1]))
        else:
            order = args[1]
        args = args[2:]
    if not args:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 64
    objects = read_objects(args)
    bad = report_cycles("objects (symbols)", objects)
    files = read_includes(roots) if roots else {}
    if roots:
        bad += report_cycles("files (#include)", files)
    if order:
        layers = read_order(order)
        ranks = rank_of(layers)
        print("declared order, highest first: " + " > ".join("|".join(p) for p in layers))
        parent = os.path.dirname(roots[0]) if roots else "."
        bad += back_edges("files (#include)", files, lambda n: folder_of(n, parent), ranks)
        placed = object_folders(objects, roots)
        bad += back_edges("objects (symbols)", objects, placed.get, ranks)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
