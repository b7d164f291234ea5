"""A real one-node Slurm: munged, slurmctld and slurmd from Debian's packages, configured in a
temporary folder with this machine's CPUs. 'ktrial slurm --submit' puts a 6-point sim spec on
it as a 3-task job array plus an afterok merge job; the merged verdicts and speedups must equal
those of the same spec run unsharded. Every daemon started here is stopped by its pid, also
when the test fails. Skips (77) when not root or when Slurm or munge is not installed."""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "cli"))
from ktrial_cli import KTRIAL, run, sim_spec, validate_result  # noqa: E402

DAEMONS = ("munged", "slurmctld", "slurmd", "sbatch", "scontrol", "sinfo")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Cluster:
    """munged + slurmctld + slurmd in 'root', stopped by pid in stop()."""

    def __init__(self, root):
        self.root = root
        self.pidfiles = []
        self.conf = os.path.join(root, "slurm.conf")
        self.env = dict(os.environ, SLURM_CONF=self.conf)

    def path(self, *parts):
        return os.path.join(self.root, *parts)

    def start(self):
        for d in ("munge", "state", "spool", "log"):
            os.makedirs(self.path(d), exist_ok=True)
        os.chmod(self.path("munge"), 0o700)
        key = self.path("munge", "munge.key")
        with open(key, "wb") as f:
            f.write(os.urandom(1024))
        os.chmod(key, 0o400)
        sock = self.path("munge", "socket")
        self.pidfiles.append(self.path("munge", "munged.pid"))
        subprocess.run(["munged", "--force", f"--key-file={key}", f"--socket={sock}",
                        f"--pid-file={self.pidfiles[-1]}", f"--seed-file={self.path('munge', 'seed')}",
                        f"--log-file={self.path('log', 'munged.log')}"], check=True)
        host = socket.gethostname().split(".")[0]
        with open(self.conf, "w") as f:
            f.write(f"""ClusterName=ktrialtest
SlurmctldHost={host}(127.0.0.1)
SlurmUser=root
SlurmdUser=root
SlurmctldPort={free_port()}
SlurmdPort={free_port()}
AuthType=auth/munge
AuthInfo=socket={sock}
CredType=cred/munge
StateSaveLocation={self.path('state')}
SlurmdSpoolDir={self.path('spool')}
SlurmctldPidFile={self.path('slurmctld.pid')}
SlurmdPidFile={self.path('slurmd.pid')}
SlurmctldLogFile={self.path('log', 'slurmctld.log')}
SlurmdLogFile={self.path('log', 'slurmd.log')}
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SwitchType=switch/none
MpiDefault=none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
NodeName={host} NodeAddr=127.0.0.1 CPUs={os.cpu_count()} State=UNKNOWN
PartitionName=debug Nodes={host} Default=YES MaxTime=INFINITE State=UP
""")
        for daemon in ("slurmctld", "slurmd"):
            self.pidfiles.append(self.path(f"{daemon}.pid"))
            subprocess.run([daemon, "-f", self.conf], env=self.env, check=True)
        deadline = time.time() + 60
        while time.time() < deadline:
            p = subprocess.run(["sinfo", "-h", "-o", "%T"], env=self.env, capture_output=True,
                               text=True)
            if p.returncode == 0 and p.stdout.strip() in ("idle", "mixed", "allocated"):
                return
            time.sleep(0.5)
        raise RuntimeError("the one-node Slurm did not come up: " + self.logs())

    def logs(self):
        out = []
        for name in ("slurmctld.log", "slurmd.log", "munged.log"):
            try:
                with open(self.path("log", name)) as f:
                    out.append(f"--- {name}\n" + "".join(f.readlines()[-15:]))
            except OSError:
                pass
        return "\n".join(out)

    def stop(self):
        """SIGTERM each daemon by the pid it wrote, then SIGKILL what is still there."""
        pids = []
        for pidfile in reversed(self.pidfiles):
            try:
                with open(pidfile) as f:
                    pids.append(int(f.read().strip()))
            except (OSError, ValueError):
                continue
        for pid in pids:
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        deadline = time.time() + 15
        for pid in pids:
            while time.time() < deadline:
                try:
                    os.kill(pid, 0)
                except ProcessLookupError:
                    break
                time.sleep(0.2)
            else:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass

    def job_state(self, job_id):
        p = subprocess.run(["scontrol", "-o", "show", "job", str(job_id)], env=self.env,
                           capture_output=True, text=True)
        fields = dict(kv.split("=", 1) for kv in p.stdout.split() if "=" in kv)
        return fields.get("JobState", "UNKNOWN"), fields.get("ExitCode", "")


def figures(doc):
    points = [(p["id"], c["name"], c["verdict"], c["speedup"], c["ci"], c["n_pairs"])
              for p in doc["points"] for c in p["candidates"]]
    return points, [(c["name"], c["verdict"], c["geomean_speedup"]) for c in doc["candidates"]]


class SlurmTest(unittest.TestCase):
    def test_sharded_on_slurm_equals_unsharded(self):
        tmp = tempfile.mkdtemp(prefix="kt-slurm-")
        os.chmod(tmp, 0o755)
        cluster = Cluster(os.path.join(tmp, "cluster"))
        try:
            cluster.start()
            spec = sim_spec(os.path.join(tmp, "spec.yaml"), name="sim-slurm",
                            candidates={"fast": {"median_us": 90, "spread": 0.05},
                                        "same": {"median_us": 100, "spread": 0.05}},
                            batch_sizes=(1, 2), context_lengths=(64, 96, 128),
                            thresholds={"aggregate": "geomean"})
            whole = os.path.join(tmp, "whole")
            w = run(["run", spec, "-o", whole])
            job = os.path.join(tmp, "job")
            p = subprocess.run([KTRIAL, "slurm", spec, "--shards", "3", "--submit", "-o", job],
                               env=cluster.env, capture_output=True, text=True, timeout=120)
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr + cluster.logs())
            words = p.stdout.split()
            array_id = int(words[words.index("array") + 1])
            merge_id = int(words[words.index("job", words.index("merge")) + 1])
            deadline = time.time() + 300
            state = ("PENDING", "")
            while time.time() < deadline:
                state = cluster.job_state(merge_id)
                if state[0] in ("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT"):
                    break
                time.sleep(1)
            logs = ""
            for name in sorted(os.listdir(os.path.join(job, "logs"))):
                with open(os.path.join(job, "logs", name)) as f:
                    logs += f"--- {name}\n{f.read()}"
            # the merge job's exit code is the verdict's: the same as the unsharded run's
            self.assertEqual(state[1], f"{w.returncode}:0",
                             f"array {array_id}, merge {merge_id}: {state}\n{logs}")
            for i in (1, 2, 3):
                doc = validate_result(self, os.path.join(job, f"shard-{i}"))
                self.assertEqual(doc["provenance"]["run"]["shard"], f"{i}/3")
            merged = validate_result(self, os.path.join(job, "merged"))
            self.assertEqual(figures(merged), figures(validate_result(self, whole)))
            self.assertEqual(len(merged["shards"]), 3)
        finally:
            cluster.stop()
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    missing = [d for d in DAEMONS if not shutil.which(d)]
    if os.geteuid() != 0 or missing:
        print("skipped: " + ("needs root to start munged and slurmd" if os.geteuid() != 0
                             else "not installed: " + ", ".join(missing)))
        sys.exit(77)
    unittest.main()
