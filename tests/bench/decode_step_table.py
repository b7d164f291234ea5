#!/usr/bin/env python3
"""decode_step_table.py - the README's "whole decode step" tables from ktrial archives.

Usage: decode_step_table.py ffd RESULT_JSON     (dense vs FFD attention inside the step)
       decode_step_table.py fusion RESULT_JSON  (fusion settings against 'none')
       decode_step_table.py prefill RESULT_JSON (a prefill chunk beside a decode step)

Reads only what result.json holds (schemas/result.schema.json): the per-arm medians, the paired
speedup and its interval, the baseline's per-stage profile, the candidate's stage speedups with
their Amdahl bounds, rel_l2 and FFD's kept fraction. Prints Markdown on stdout."""
import json
import sys


def ms(ns):
    return "%.1f ms" % (ns / 1e6) if ns < 1e9 else "%.2f s" % (ns / 1e9)


def interval(c):
    text = "%.3f [%.3f, %.3f]" % (c["speedup"], c["ci"][0], c["ci"][1])
    return text + (" **%s**" % c["verdict"] if c["verdict"] in ("KEEP", "REJECT") else "")


def machine(r):
    host, build = r["provenance"]["host"], r["provenance"]["build"]
    threads = r["spec"]["parsed"].get("threads", 0)
    return "Machine: %s, %d cores, %s; %s; ktrial %s (%s), %s; %s." % (
        host["cpu_model"], host["cores"], host["os"], build["compiler"],
        build["ktrial_version"], build["ktrial_commit"][:12], build["build_type"],
        "%d thread%s" % (threads, "s" if threads > 1 else "") if threads else "all cores")


def stage(c, name):
    for s in c.get("stage_speedups", {}).get("stages", []):
        if s["name"] == name:
            return s
    return None


def share(arm, name):
    for s in arm.get("profile", {}).get("stages", []):
        if s["name"] == name:
            return s["share"]
    return None


def ffd_table(r):
    rows = ["| point | dense step (median) | FFD step | end-to-end speedup [CI] | attention share "
            "(dense) | FFD on the attention stage | Amdahl bound (limit) | rel_l2 | blocks kept |",
            "|---|---:|---:|---|---:|---:|---|---:|---:|"]
    for p in r["points"]:
        ax = p["axes"]
        label = "%s, b%d, %dK" % (ax["model"], ax["batch_size"], ax["context_length"] // 1024)
        if p.get("error"):
            rows.append("| %s | failed: %s | | | | | | | |" % (label, p["error"]))
            continue
        for c in p["candidates"]:
            if c.get("failed") or "speedup" not in c:
                rows.append("| %s | %s: %s | | | | | | | |" % (label, c["name"], c.get("failure")))
                continue
            a = stage(c, "attention")
            f = share(p["baseline"], "attention")
            kept = c.get("metrics", {}).get("kept_fraction", {}).get("value")
            rows.append("| %s | %s | %s | %s | %s | %s | %s | %.3g | %s |" % (
                label, ms(c["times"]["baseline"]["median_ns"]),
                ms(c["times"]["candidate"]["median_ns"]), interval(c),
                "%.1f%%" % (100 * f) if f is not None else "-",
                "%.2fx" % a["speedup"] if a else "-",
                "%.3fx (%.3fx)" % (a["amdahl_bound"], a["amdahl_limit"]) if a else "-",
                c["worst_rel_l2"], "%.1f%%" % (100 * kept) if kept is not None else "-"))
    return rows


def fusion_table(r):
    names = [c["name"] for c in r["spec"]["parsed"]["candidates"]]
    rows = ["| point | none (median) | " + " | ".join("`%s`" % n for n in names) + " |",
            "|---|---:|" + "---|" * len(names)]
    for p in r["points"]:
        ax = p["axes"]
        label = "%s, b%d, %dK" % (ax["model"], ax["batch_size"], ax["context_length"] // 1024)
        if p.get("error"):
            rows.append("| %s | failed: %s |" % (label, p["error"]) + " |" * len(names))
            continue
        cells, base = [], None
        for c in p["candidates"]:
            if c.get("failed") or "speedup" not in c:
                cells.append("failed: %s" % c.get("failure"))
                continue
            base = c["times"]["baseline"]["median_ns"]
            cells.append(interval(c))
        rows.append("| %s | %s | %s |" % (label, ms(base) if base else "-", " | ".join(cells)))
    return rows


def shares(arm, top=3):
    """The arm's largest stage shares, then the rest: 'attention 47%, mlp 33%, ...'."""
    stages = sorted(arm.get("profile", {}).get("stages", []), key=lambda s: -s["share"])
    if not stages:
        return "-"
    head = ["%s %.0f%%" % (s["name"], 100 * s["share"]) for s in stages[:top]]
    rest = 1 - sum(s["share"] for s in stages[:top])
    return ", ".join(head + ["rest %.0f%%" % (100 * rest)])


def prefill_table(r):
    """Per point (phase): the baseline's median per call and per new token, each candidate's
    speedup, and where the baseline's and each candidate's time goes."""
    names = [c["name"] for c in r["spec"]["parsed"]["candidates"]]
    chunk = r["spec"]["parsed"].get("inputs", {}).get("params", {}).get("chunk", 128)
    rows = ["| point | none (median) | per new token | " +
            " | ".join("`%s`" % n for n in names) + " | stages of none | " +
            " | ".join("stages of `%s`" % n for n in names) + " |",
            "|---|---:|---:|" + "---|" * len(names) + "---|" + "---|" * len(names)]
    for p in r["points"]:
        ax = p["axes"]
        phase = ax.get("phase", "decode")
        label = "%s, %s%s, b%d, %dK cached" % (
            ax["model"], phase, " %d" % chunk if phase == "prefill" else "", ax["batch_size"],
            ax["context_length"] // 1024)
        if p.get("error"):
            rows.append("| %s | failed: %s |" % (label, p["error"]) + " |" * (2 * len(names) + 2))
            continue
        cells, cand_shares, base = [], [], None
        for c in p["candidates"]:
            if c.get("failed") or "speedup" not in c:
                cells.append("failed: %s" % c.get("failure"))
                cand_shares.append("-")
                continue
            base = c["times"]["baseline"]["median_ns"]
            cells.append(interval(c))
            cand_shares.append(shares(c))
        tokens = ax["batch_size"] * (chunk if phase == "prefill" else 1)
        rows.append("| %s | %s | %s | %s | %s | %s |" % (
            label, ms(base) if base else "-", "%.3f ms" % (base / 1e6 / tokens) if base else "-",
            " | ".join(cells), shares(p["baseline"]), " | ".join(cand_shares)))
    return rows


def main(argv):
    tables = {"ffd": ffd_table, "fusion": fusion_table, "prefill": prefill_table}
    if len(argv) != 3 or argv[1] not in tables:
        sys.stderr.write(__doc__.split("\n\n")[1] + "\n")
        return 64
    with open(argv[2]) as f:
        r = json.load(f)
    rows = tables[argv[1]](r)
    print(machine(r))
    print()
    print("\n".join(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
