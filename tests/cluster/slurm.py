"""A real single-node Slurm for the tests: munge, slurmctld and slurmd from Debian's packages
(`slurmctld slurmd munge slurm-client`), started on localhost from a temporary folder and stopped
afterwards, leaving nothing running.

One node (this host, its real CPUs and memory) in two partitions, `cpu` (the default) and `gpu`.
The `gpu` partition is the same CPU node with a *fake* GPU gres (/dev/null as its device): a rule with
`resources: gpu=1` asks Slurm for a GPU, and the test shows where such a job *lands*, which is
what the profile decides. No slurmdbd: `sacct` needs one, so where a job ran is read from Slurm's job
completion log (jobcomp/filetxt, one line per finished job with its Partition), and Snakemake's
executor checks job states with `squeue` (MinJobAge keeps finished jobs visible to it).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from contextlib import contextmanager
from pathlib import Path

DAEMONS = ("munged", "mungekey", "slurmctld", "slurmd", "sbatch", "squeue", "sinfo")


def missing_tools() -> list[str]:
    found = {t: shutil.which(t) or (Path("/usr/sbin") / t if (Path("/usr/sbin") / t).exists() else None)
             for t in DAEMONS}
    return [t for t, p in found.items() if not p]


def _tool(name: str) -> str:
    return shutil.which(name) or str(Path("/usr/sbin") / name)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


CONF = """\
ClusterName=servesimtest
SlurmctldHost={host}(127.0.0.1)
SlurmctldPort={ctld_port}
SlurmdPort={d_port}
AuthType=auth/munge
AuthInfo=socket={d}/munge.sock
CredType=cred/munge
SlurmUser={user}
SlurmdUser=root
StateSaveLocation={d}/state
SlurmdSpoolDir={d}/spool
SlurmctldPidFile={d}/slurmctld.pid
SlurmdPidFile={d}/slurmd.pid
SlurmctldLogFile={d}/log/slurmctld.log
SlurmdLogFile={d}/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SwitchType=switch/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
MinJobAge=900
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/filetxt
JobCompLoc={d}/log/jobcomp.log
GresTypes=gpu
NodeName={host} NodeAddr=127.0.0.1 CPUs={cpus} RealMemory={mem_mb} Gres=gpu:1 State=UNKNOWN
PartitionName=cpu Nodes={host} Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4
PartitionName=gpu Nodes={host} MaxTime=INFINITE State=UP OverSubscribe=FORCE:4
"""


class Slurm:
    def __init__(self, folder: Path):
        self.dir = folder
        self.conf = folder / "slurm.conf"
        self.env = {**os.environ, "SLURM_CONF": str(self.conf)}

    def run(self, *args: str, check=True) -> str:
        return subprocess.run([_tool(args[0]), *args[1:]], env=self.env, capture_output=True, text=True,
                              check=check).stdout

    def finished_jobs(self) -> list[dict]:
        """One dict per finished job (JobId, Name, JobState, Partition, ...) from the jobcomp log."""
        f = self.dir / "log" / "jobcomp.log"
        rows = []
        for line in (f.read_text().splitlines() if f.exists() else []):
            rows.append(dict(kv.split("=", 1) for kv in line.split() if "=" in kv))
        return rows

    def logs(self, n: int = 3000) -> str:
        return "".join(f"\n===== {p.name} =====\n" + p.read_text(errors="replace")[-n:]
                       for p in sorted((self.dir / "log").glob("*.log")))


def _pid(f: Path) -> int | None:
    try:
        return int(f.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def _alive(pid: int | None) -> bool:
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    return True


def _host_mem_mb() -> int:
    return int(os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") // 2**20) - 512


# Snakemake's job step drops SLURM_CONF from the environment of the `srun` it starts inside each
# job, so the node's clients must find the config where Debian's Slurm looks by default
SYSTEM_CONF = Path("/etc/slurm/slurm.conf")
SYSTEM_FILES = ("slurm.conf", "gres.conf")  # linked into /etc/slurm for the test's lifetime


def system_conf_taken() -> bool:
    """A Slurm is already configured on this host: the fixture will not touch it."""
    return any((SYSTEM_CONF.parent / f).exists() or (SYSTEM_CONF.parent / f).is_symlink() for f in SYSTEM_FILES)


@contextmanager
def single_node_slurm(folder: Path, mem_mb: int | None = None):
    """Start munge, slurmctld and slurmd for one node (this host's CPUs and memory); yield a
    `Slurm`; stop them all and remove the config cache slurmd left (unless one was there before)."""
    folder = Path(folder)
    mem_mb = mem_mb or _host_mem_mb()
    if system_conf_taken():
        raise RuntimeError(f"{SYSTEM_CONF.parent} holds a Slurm config: a Slurm is configured on this host already")
    for sub in ("state", "spool", "log"):
        (folder / sub).mkdir(parents=True, exist_ok=True)
    s = Slurm(folder)
    host = socket.gethostname().split(".")[0]
    ctld_port = _free_port()
    # one fake GPU (its "device" is /dev/null: nothing real is bound; jobs asking for a GPU can run)
    (folder / "gres.conf").write_text(f"NodeName={host} Name=gpu File=/dev/null\n")
    s.conf.write_text(CONF.format(host=host, d=folder, ctld_port=ctld_port, d_port=_free_port(),
                                  user=os.environ.get("USER") or "root", cpus=os.cpu_count() or 1, mem_mb=mem_mb))
    pids = [folder / "munged.pid", folder / "slurmctld.pid", folder / "slurmd.pid"]
    try:
        SYSTEM_CONF.parent.mkdir(parents=True, exist_ok=True)
        for f in SYSTEM_FILES:
            (SYSTEM_CONF.parent / f).symlink_to(folder / f)
        subprocess.run([_tool("mungekey"), "--create", "--keyfile", str(folder / "munge.key")], check=True,
                       capture_output=True)
        os.chmod(folder / "munge.key", 0o600)
        subprocess.run([_tool("munged"), "--force", f"--key-file={folder}/munge.key", f"--socket={folder}/munge.sock",
                        f"--pid-file={pids[0]}", f"--log-file={folder}/log/munged.log",
                        f"--seed-file={folder}/munge.seed"], check=True, capture_output=True)
        subprocess.run([_tool("slurmctld"), "-f", str(s.conf)], env=s.env, check=True, capture_output=True)
        subprocess.run([_tool("slurmd"), "-f", str(s.conf)], env=s.env, check=True, capture_output=True)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if "idle" in s.run("sinfo", "-h", "-o", "%T", check=False):
                break
            time.sleep(0.5)
        else:
            raise RuntimeError("Slurm did not come up within 60 s:" + s.logs())
        yield s
    finally:
        subprocess.run([_tool("scancel"), "--user", os.environ.get("USER") or "root"], env=s.env,
                       capture_output=True, check=False) if shutil.which("scancel") else None
        for f in reversed(pids):  # slurmd, slurmctld, then munge
            pid = _pid(f)
            if _alive(pid):
                os.kill(pid, 15)
                for _ in range(100):
                    if not _alive(pid):
                        break
                    time.sleep(0.1)
                else:
                    os.kill(pid, 9)
        for f in SYSTEM_FILES:
            link = SYSTEM_CONF.parent / f
            if link.is_symlink() and link.resolve() == (folder / f).resolve():
                link.unlink()
