#!/usr/bin/env python3
"""tests/gpu/check_profile.py RESULT_JSON - checks the GPU half of the profiling pass on a lent
GPU: every profiled arm has GPU energy per call (or a reason) and the counter view of its
kernels, each value in its range, the device-wide SOL recomputed from its inputs. Exit 0 when
it holds, 1 when it does not, 3 when the machine refuses counters to this user
(NVreg_RestrictProfilingToAdminUsers: CUPTI_ERROR_INSUFFICIENT_PRIVILEGES)."""
import json
import math
import sys


def check_kernel(arm, k, problems):
    where = f"{arm} range {k.get('range')!r}"
    for key in ("sm_throughput_pct", "dram_throughput_pct", "achieved_occupancy_pct"):
        if key in k and not 0 <= k[key] <= 100.5:
            problems.append(f"{where}: {key} {k[key]} outside 0..100")
    for key in ("occupancy_limit_registers", "occupancy_limit_shared_mem",
                "occupancy_limit_warps", "occupancy_limit_blocks"):
        if key in k and (k[key] < 0 or k[key] != int(k[key])):
            problems.append(f"{where}: {key} {k[key]} is not a block count")
    if k.get("duration_ns", 1) <= 0:
        problems.append(f"{where}: duration_ns {k['duration_ns']}")
    if "waves_per_sm" in k and k["waves_per_sm"] <= 0:
        problems.append(f"{where}: waves_per_sm {k['waves_per_sm']}")
    if all(x in k for x in ("sm_throughput_pct", "grid_blocks", "sms")):
        want = k["sm_throughput_pct"] * min(k["grid_blocks"], k["sms"]) / k["sms"]
        if not math.isclose(k.get("device_sol_pct", -1), want, rel_tol=1e-9, abs_tol=1e-9):
            problems.append(f"{where}: device_sol_pct {k.get('device_sol_pct')} != {want}")
    if not k["stalls"]:
        problems.append(f"{where}: no stall reason collected")


def main(path):
    with open(path) as f:
        doc = json.load(f)
    problems, refused, arms = [], [], 0
    for point in doc["points"]:
        for arm in [point["baseline"], *point["candidates"]]:
            usage = arm.get("usage")
            if not usage:
                continue
            arms += 1
            name = f"{point['id']} {arm['name']}"
            energy = usage["energy"]
            if "gpu_j_per_call" in energy:
                if energy["gpu_j_per_call"] <= 0:
                    problems.append(f"{name}: gpu_j_per_call {energy['gpu_j_per_call']}")
            elif not energy.get("gpu_unavailable"):
                problems.append(f"{name}: neither gpu_j_per_call nor gpu_unavailable")
            else:
                print(f"note: {name}: GPU energy {energy['gpu_unavailable']}")
            gc = usage.get("gpu_counters")
            if gc is None:
                problems.append(f"{name}: no gpu_counters")
                continue
            if "unavailable" in gc:
                (refused if "INSUFFICIENT_PRIVILEGES" in gc["unavailable"] else problems).append(
                    f"{name}: counters {gc['unavailable']}")
                continue
            if not gc["kernels"]:
                problems.append(f"{name}: no kernel profiled")
            for k in gc["kernels"]:
                check_kernel(name, k, problems)
            for key, why in gc.get("unsupported", {}).items():
                print(f"note: {name}: CUPTI refused {key}: {why}")
            print(f"{name}: {gc['ranges']} range(s): " + json.dumps(gc["kernels"])[:400])
    if arms == 0:
        problems.append("no arm was profiled")
    for p in problems + refused:
        print("check_profile:", p)
    if problems:
        return 1
    return 3 if refused else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
