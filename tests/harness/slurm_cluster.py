"""A real Slurm 22.05 cluster on 127.0.0.1, started and stopped by the test suite.

Everything lives in one private temporary directory: configs, state, logs, spool,
the munge key and socket, and a MariaDB datadir.  Daemons run in the foreground
as direct children so that the PIDs we record are exactly the daemons, and
``stop()`` can end those and nothing else.

Topology (see tests/fixtures/slurm/README.md for the full picture)::

    nodes    gpu01-04: 64 CPUs, ~1 TB, 8 x gpu:h100
             gpu05-08: 64 CPUs, ~1 TB, 8 x gpu:a100
    parts    gpu (default, all nodes), interactive (all nodes, MaxTime 4h)
    accounts root -> prod (60) -> vision-prod (GrpTRES gpu=32), nlp-prod
                  -> exp (30)  -> vision-exp (GrpTRES gpu=8), nlp-exp
                  -> elastic (10) -> elastic-pool (GrpTRES gpu=24)
    qos      high   Priority=1000 Preempt=low GrpTRES gpu=8 MaxSubmitJobsPerUser=2
             normal Priority=100  MaxTRESPerUser gpu=16
             low    Priority=10   MaxWall 1-00:00:00
    users    alice (vision-prod, vision-exp), bob (nlp-prod, nlp-exp),
             carol (vision-exp), dave (elastic-pool), erin (nlp-prod)
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import stat
import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import psutil

LOOPBACK = "127.0.0.1"
CLUSTER_NAME = "quotatop"
NODE_NAMES = [f"gpu{i:02d}" for i in range(1, 9)]
GPU_TYPE = {n: ("h100" if i < 4 else "a100") for i, n in enumerate(NODE_NAMES)}
# Node features a job's --constraint can ask for: the GPU model and a fabric.
NODE_FABRIC = {n: ("ib" if i % 2 == 0 else "eth") for i, n in enumerate(NODE_NAMES)}
GPUS_PER_NODE = 8
CPUS_PER_NODE = 64
REAL_MEMORY_MB = 1_000_000

# (account, parent, fairshare, GrpTRES or None)
ACCOUNTS: list[tuple[str, str, int, str | None]] = [
    ("prod", "root", 60, None),
    ("exp", "root", 30, None),
    ("elastic", "root", 10, None),
    ("vision-prod", "prod", 50, "gres/gpu=32"),
    ("nlp-prod", "prod", 50, None),
    ("vision-exp", "exp", 50, "gres/gpu=8"),
    ("nlp-exp", "exp", 50, None),
    ("elastic-pool", "elastic", 100, "gres/gpu=24"),
]
# user -> accounts (the first is the default account)
USERS: dict[str, list[str]] = {
    "alice": ["vision-prod", "vision-exp"],
    "bob": ["nlp-prod", "nlp-exp"],
    "carol": ["vision-exp"],
    "dave": ["elastic-pool"],
    "erin": ["nlp-prod"],
}
QOS_SETTINGS: dict[str, list[str]] = {
    "high": [
        "Priority=1000",
        "Preempt=low",
        "PreemptMode=requeue",
        "GrpTRES=gres/gpu=8",
        "MaxSubmitJobsPerUser=2",
    ],
    "normal": ["Priority=100", "MaxTRESPerUser=gres/gpu=16", "PreemptMode=requeue"],
    "low": ["Priority=10", "MaxWall=1-00:00:00", "PreemptMode=requeue"],
}

# Names of the daemons that start_daemon/stop_daemon understand.
DAEMONS = ["munged", "mariadbd", "slurmdbd", "slurmctld", *[f"slurmd-{n}" for n in NODE_NAMES]]

SLURM_BINARIES = ["slurmctld", "slurmd", "slurmdbd", "sbatch", "squeue", "sacctmgr", "scontrol"]
OTHER_BINARIES = ["munged", "mariadbd", "mariadb-install-db"]


# slurmdbd 22.05 always binds its port on INADDR_ANY (no NoInAddrAny for it).  This
# LD_PRELOAD shim turns any wildcard bind() into a loopback bind, so nothing we
# start listens beyond 127.0.0.1.
_LOOPBACK_SHIM_C = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <string.h>
#include <netinet/in.h>
#include <sys/socket.h>
typedef int (*bind_fn)(int, const struct sockaddr *, socklen_t);
int bind(int fd, const struct sockaddr *addr, socklen_t len) {
    static bind_fn real;
    if (!real) real = (bind_fn)dlsym(RTLD_NEXT, "bind");
    if (addr && addr->sa_family == AF_INET && len >= sizeof(struct sockaddr_in)) {
        struct sockaddr_in a;
        memcpy(&a, addr, sizeof a);
        if (a.sin_addr.s_addr == htonl(INADDR_ANY)) {
            a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
            return real(fd, (const struct sockaddr *)&a, sizeof a);
        }
    }
    if (addr && addr->sa_family == AF_INET6 && len >= sizeof(struct sockaddr_in6)) {
        struct sockaddr_in6 a6;
        memcpy(&a6, addr, sizeof a6);
        if (IN6_IS_ADDR_UNSPECIFIED(&a6.sin6_addr)) {
            a6.sin6_addr = in6addr_loopback;
            return real(fd, (const struct sockaddr *)&a6, sizeof a6);
        }
    }
    return real(fd, addr, len);
}
"""

# How long the session workload's jobs run (within their 1 h limit). They must outlast
# the test session: the tests read the states and reasons they leave (alice_prio pends on
# Priority only while alice_1 runs), and at 600 s, the whole suite growing by a minute
# (CI, once) had alice_1 end before tests/test_slurm_live.py read it.
WORKLOAD_SLEEP = 3300


class HarnessError(RuntimeError):
    """Raised when the cluster cannot be brought up; the message carries log tails."""


def _which(name: str) -> str | None:
    # Daemons live in /usr/sbin, which is not on every PATH (e.g. a non-root shell).
    path = os.environ.get("PATH", "") + os.pathsep + "/usr/sbin:/sbin:/usr/bin"
    return shutil.which(name, path=path)


def missing_binaries() -> list[str]:
    """Binaries the harness needs that are not installed (empty list = all present)."""
    return [b for b in SLURM_BINARIES + OTHER_BINARIES if _which(b) is None]


def _free_ports(count: int) -> list[int]:
    # Keep every socket bound until all are chosen so the kernel cannot hand out
    # the same port twice; the tiny race with other processes is accepted.
    socks: list[socket.socket] = []
    try:
        for _ in range(count):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind((LOOPBACK, 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def _port_open(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(0.2)
        return s.connect_ex((LOOPBACK, port)) == 0


def _tail(path: Path, lines: int = 25) -> str:
    try:
        text = path.read_text(errors="replace").splitlines()
    except OSError as exc:
        return f"(no log at {path}: {exc})"
    return "\n".join(text[-lines:])


def ensure_user(name: str) -> None:
    """Create a local Linux user (no home) unless it already exists."""
    try:
        import pwd

        pwd.getpwnam(name)
        return
    except KeyError:
        pass
    useradd = _which("useradd") or "useradd"
    proc = subprocess.run(
        [useradd, "--no-create-home", "--user-group", "--shell", "/bin/bash", name],
        capture_output=True,
        text=True,
        check=False,
    )
    # Exit 9 = already exists (another process won the race); that is fine.
    if proc.returncode not in (0, 9):
        raise HarnessError(f"useradd {name} failed: {proc.stderr.strip()}")


@dataclass
class SubmittedJob:
    """One sbatch the workload made and what the test expects Slurm to say."""

    key: str
    job_id: str
    user: str
    account: str
    qos: str
    expected_state: str  # RUNNING / PENDING / COMPLETED / FAILED
    expected_reason: str | None = None  # for PENDING jobs
    argv: list[str] = field(default_factory=list)


@dataclass
class Workload:
    jobs: dict[str, SubmittedJob]
    rejected: dict[str, str]  # key -> sbatch's error message
    preempted_job_ids: list[str]
    array_job_id: str

    def by_reason(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for j in self.jobs.values():
            if j.expected_reason:
                out.setdefault(j.expected_reason, []).append(j.job_id)
        return out


class SlurmCluster:
    """Start/stop a private Slurm cluster bound only to 127.0.0.1."""

    def __init__(self, base_dir: str | os.PathLike[str] | None = None) -> None:
        # Unix socket paths must stay short (<108 bytes), so prefer a short /tmp dir.
        self._own_dir = base_dir is None
        self.dir = Path(base_dir or tempfile.mkdtemp(prefix="qtslurm-", dir="/tmp"))
        self.hostname = socket.gethostname()
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self._argv: dict[str, list[str]] = {}
        self._logs: dict[str, Path] = {}
        self.ports: dict[str, int] = {}
        self.started = False
        self.startup_seconds: float | None = None
        self.env: dict[str, str] = {}
        self.loopback_shim: Path | None = None

    # ----- paths -------------------------------------------------------------------
    @property
    def slurm_conf(self) -> Path:
        return self.dir / "etc" / "slurm.conf"

    @property
    def munge_socket(self) -> Path:
        return self.dir / "run" / "munge.sock"

    @property
    def mysql_socket(self) -> Path:
        return self.dir / "run" / "mysqld.sock"

    @property
    def job_dir(self) -> Path:
        return self.dir / "jobs"

    def log_path(self, name: str) -> Path:
        return self._logs.get(name, self.dir / "log" / f"{name}.log")

    def log_tail(self, name: str, lines: int = 25) -> str:
        """Tail of a daemon's log file and of its captured stdout/stderr."""
        parts = []
        for path in dict.fromkeys([self.log_path(name), self.dir / "log" / f"{name}.out"]):
            if path.exists():
                parts.append(f"--- tail of {path} ---\n{_tail(path, lines)}")
        return "\n".join(parts) or f"(no log for {name} under {self.dir / 'log'})"

    # ----- lifecycle ---------------------------------------------------------------
    def start(self, timeout: float = 90.0) -> SlurmCluster:
        missing = missing_binaries()
        if missing:
            raise HarnessError(f"Slurm harness needs missing binaries: {', '.join(missing)}")
        t0 = time.monotonic()
        deadline = t0 + timeout
        try:
            self._prepare()
            self.start_daemon("munged")
            self._wait(lambda: self.munge_socket.exists(), deadline, "munged socket", "munged")
            self._init_mariadb()
            self.start_daemon("mariadbd")
            self._wait(
                lambda: _port_open(self.ports["mysql"]), deadline, "MariaDB port", "mariadbd"
            )
            self.start_daemon("slurmdbd")
            self._wait(
                lambda: _port_open(self.ports["slurmdbd"]), deadline, "slurmdbd port", "slurmdbd"
            )
            self._wait_dbd(deadline)
            self._sacctmgr("add", "cluster", CLUSTER_NAME)
            # The gres/gpu TRES only exist once slurmctld has registered them from
            # AccountingStorageTRES, and limits naming them need them.
            self.start_daemon("slurmctld")
            self.wait_controller(deadline - time.monotonic())
            self._wait(
                self._gpu_tres_known, deadline, "slurmctld to register gres/gpu TRES", "slurmctld"
            )
            self._setup_accounting()
            for n in NODE_NAMES:
                self.start_daemon(f"slurmd-{n}")
            self._wait(self._all_nodes_idle, deadline, "8 nodes idle in sinfo", "slurmctld")
        except BaseException:
            self.stop()
            raise
        self.started = True
        self.startup_seconds = time.monotonic() - t0
        return self

    def stop(self) -> None:
        """Terminate exactly the processes this harness started, then remove its files."""
        if self.is_running("slurmctld"):
            # Let Slurm end its own job steps first; they are re-parented away
            # from slurmd, so killing slurmd alone would leave them behind.
            with contextlib.suppress(HarnessError, subprocess.SubprocessError, OSError):
                ids = self.run(["squeue", "--noheader", "-o", "%A"], timeout=10).stdout.split()
                if ids:
                    self.run(["scancel", *ids], check=False, timeout=10)
        for name in reversed(list(self.procs)):
            self.stop_daemon(name)
        self._kill_leftovers()
        if self._own_dir and not os.environ.get("QUOTATOP_KEEP_SLURM_DIR"):
            shutil.rmtree(self.dir, ignore_errors=True)
        self.started = False

    def __enter__(self) -> SlurmCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def pids(self) -> dict[str, int]:
        return {n: p.pid for n, p in self.procs.items() if p.poll() is None}

    def start_daemon(self, name: str) -> None:
        if name not in DAEMONS:
            raise ValueError(f"unknown daemon {name!r}; known: {DAEMONS}")
        old = self.procs.get(name)
        if old is not None and old.poll() is None:
            return
        argv = self._daemon_argv(name)
        log = self.dir / "log" / f"{name}.out"
        with open(log, "ab") as out:
            # New session: a Ctrl-C in the pytest terminal must not reach the
            # daemons before stop() gets to end them in order.
            self.procs[name] = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=self._daemon_env(name),
                cwd=self.dir,
                start_new_session=True,
            )
        self._argv[name] = argv

    def stop_daemon(self, name: str, timeout: float = 10.0) -> None:
        proc = self.procs.get(name)
        if proc is None or proc.poll() is not None:
            return
        try:
            ps = psutil.Process(proc.pid)
            # Only the children the daemon itself forked (slurmstepd for jobs,
            # mariadbd helpers); never anything found by name.
            children = ps.children(recursive=True)
        except psutil.NoSuchProcess:
            children = []
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
        for child in children:
            with contextlib.suppress(psutil.Error):
                child.kill()
        if name == "munged":
            # munged refuses to start while a stale socket is there.
            with contextlib.suppress(OSError):
                self.munge_socket.unlink()

    def _kill_leftovers(self) -> None:
        # slurmstepd and job payloads double-fork away from slurmd, so they are
        # not our children; they are recognised by their working directory,
        # which is inherited from our daemons and lies inside our private dir.
        root = str(self.dir)
        found: list[psutil.Process] = []
        for proc in psutil.process_iter():
            with contextlib.suppress(psutil.Error):
                cwd = proc.cwd().removesuffix(" (deleted)")
                if cwd == root or cwd.startswith(root + os.sep):
                    found.append(proc)
        for proc in found:
            with contextlib.suppress(psutil.Error):
                proc.kill()
        psutil.wait_procs(found, timeout=5)

    def is_running(self, name: str) -> bool:
        p = self.procs.get(name)
        return p is not None and p.poll() is None

    # ----- client commands ---------------------------------------------------------
    def run(
        self,
        args: Sequence[str],
        *,
        check: bool = True,
        timeout: float = 30.0,
        input: str | None = None,
    ) -> subprocess.CompletedProcess[str]:
        """Run a Slurm client command (argv list, no shell) against this cluster."""
        argv = list(args)
        exe = _which(argv[0])
        if exe:
            argv[0] = exe
        proc = subprocess.run(
            argv,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
            input=input,
            cwd=self.job_dir if self.job_dir.exists() else None,
        )
        if check and proc.returncode != 0:
            raise HarnessError(
                f"{' '.join(args)} exited {proc.returncode}: {proc.stderr.strip()}\n"
                + self.log_tail("slurmctld", 15)
            )
        return proc

    def wait_controller(self, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout

        def up() -> bool:
            p = self.run(["scontrol", "ping"], check=False, timeout=10)
            return p.returncode == 0 and "UP" in p.stdout

        self._wait(up, deadline, "slurmctld to answer scontrol ping", "slurmctld")

    def wait_nodes_idle(self, timeout: float = 30.0) -> None:
        self.wait_until(self._all_nodes_idle, timeout, "all nodes idle")

    def wait_nodes_responding(self, timeout: float = 30.0) -> None:
        """All nodes registered and answering (idle, mixed or allocated; no '*')."""

        def ok() -> bool:
            states = self._node_states()
            return all(states.get(n, "unk*") in ("idle", "mix", "alloc") for n in NODE_NAMES)

        self.wait_until(ok, timeout, "all nodes responding")

    def wait_until(
        self, pred: Callable[[], bool], timeout: float, what: str, log: str = "slurmctld"
    ) -> None:
        """Poll pred (bounded); on timeout raise HarnessError with the log's tail."""
        self._wait(pred, time.monotonic() + timeout, what, log)

    def squeue_states(self) -> dict[str, tuple[str, str]]:
        """job id (as squeue prints it) -> (state, reason)."""
        out = self.run(["squeue", "--noheader", "-O", "JobID:|,State:|,Reason:"]).stdout
        res: dict[str, tuple[str, str]] = {}
        for line in out.splitlines():
            parts = [p.strip() for p in line.split("|")]
            if len(parts) >= 3:
                res[parts[0]] = (parts[1], parts[2])
        return res

    def job_info(self, job_id: str) -> dict[str, str]:
        out = self.run(["scontrol", "show", "job", "-o", job_id]).stdout
        info: dict[str, str] = {}
        for tok in out.split():
            k, sep, v = tok.partition("=")
            if sep and k not in info:
                info[k] = v
        return info

    # ----- workload ----------------------------------------------------------------
    def sbatch(
        self,
        user: str,
        account: str,
        qos: str,
        *extra: str,
        payload: str = "sleep 600",
        check: bool = True,
    ) -> tuple[str | None, list[str], subprocess.CompletedProcess[str]]:
        argv = [
            "sbatch",
            "--parsable",
            f"--uid={user}",
            f"--gid={user}",
            f"--account={account}",
            f"--qos={qos}",
            f"--chdir={self.job_dir}",
            "--output=/dev/null",
            "--requeue",
            *extra,
            "--wrap",
            payload,
        ]
        proc = self.run(argv, check=check)
        job_id = proc.stdout.strip().split(";")[0] or None if proc.returncode == 0 else None
        return job_id, argv, proc

    def submit_workload(self, timeout: float = 60.0) -> Workload:
        """Submit a fixed mix of jobs and wait until Slurm shows the expected states.

        The order matters: each step fills GPUs so that the next one pends for
        exactly one reason.  h100 (gpu01-04) and a100 (gpu05-08) are filled separately.
        """
        jobs: dict[str, SubmittedJob] = {}
        rejected: dict[str, str] = {}

        def sub(
            key: str,
            user: str,
            account: str,
            qos: str,
            state: str,
            reason: str | None,
            *extra: str,
            payload: str = f"sleep {WORKLOAD_SLEEP}",
        ) -> str:
            job_id, argv, _ = self.sbatch(user, account, qos, *extra, payload=payload)
            assert job_id
            jobs[key] = SubmittedJob(key, job_id, user, account, qos, state, reason, argv)
            return job_id

        one_h = "--time=01:00:00"
        # Finished jobs first, so sacct has history (one success, one failure).
        sub(
            "done_ok",
            "erin",
            "nlp-prod",
            "normal",
            "COMPLETED",
            None,
            "-c",
            "1",
            "--mem=1G",
            "--time=00:05:00",
            payload="true",
        )
        sub(
            "done_fail",
            "bob",
            "nlp-exp",
            "normal",
            "FAILED",
            None,
            "-c",
            "1",
            "--mem=1G",
            "--time=00:05:00",
            payload="exit 3",
        )
        done_ids = [jobs["done_ok"].job_id, jobs["done_fail"].job_id]
        self._wait(
            lambda: not (set(done_ids) & set(self.squeue_states())),
            time.monotonic() + 30,
            "short jobs to finish",
            "slurmctld",
        )

        gpu = "--gres=gpu:{}:{}".format
        res = ("-c", "8", "--mem=64G", one_h)
        # ---- a100: two low jobs, two normal jobs fill gpu05-08; a high job preempts.
        sub("low_1", "dave", "elastic-pool", "low", "RUNNING", None, gpu("a100", 8), *res)
        sub("low_2", "dave", "elastic-pool", "low", "RUNNING", None, gpu("a100", 8), *res)
        sub("erin_a1", "erin", "nlp-prod", "normal", "RUNNING", None, gpu("a100", 8), *res)
        sub("erin_a2", "erin", "nlp-prod", "normal", "RUNNING", None, gpu("a100", 8), *res)
        # ---- h100: carol at her account cap, bob at the per-user QoS cap, alice fills.
        sub("carol_1", "carol", "vision-exp", "normal", "RUNNING", None, gpu("h100", 8), *res)
        sub("bob_1", "bob", "nlp-prod", "normal", "RUNNING", None, gpu("h100", 8), *res)
        sub("bob_2", "bob", "nlp-prod", "normal", "RUNNING", None, gpu("h100", 8), *res)
        sub("alice_1", "alice", "vision-prod", "normal", "RUNNING", None, gpu("h100", 8), *res)
        running = [k for k, j in jobs.items() if j.expected_state == "RUNNING"]
        self._wait(
            lambda: all(
                self.squeue_states().get(jobs[k].job_id, ("",))[0] == "RUNNING" for k in running
            ),
            time.monotonic() + timeout,
            "the first 8 GPU jobs to run",
            "slurmctld",
        )

        # Now the cluster is full: every further GPU job pends for one reason.
        sub(
            "carol_grp",
            "carol",
            "vision-exp",
            "normal",
            "PENDING",
            "AssocGrpGRES",
            gpu("h100", 4),
            *res,
        )
        sub(
            "bob_cap",
            "bob",
            "nlp-prod",
            "normal",
            "PENDING",
            "QOSMaxGRESPerUser",
            gpu("h100", 8),
            *res,
        )
        sub(
            "alice_res",
            "alice",
            "vision-prod",
            "normal",
            "PENDING",
            "Resources",
            gpu("h100", 8),
            *res,
        )
        # Same shape, but nice'd below alice_res, so it waits behind it.
        sub(
            "alice_prio",
            "alice",
            "vision-prod",
            "normal",
            "PENDING",
            "Priority",
            gpu("h100", 8),
            "--nice=100000",
            *res,
        )
        sub(
            "alice_dep",
            "alice",
            "vision-prod",
            "normal",
            "PENDING",
            "Dependency",
            gpu("h100", 8),
            f"--dependency=afterok:{jobs['alice_1'].job_id}",
            *res,
        )
        sub(
            "erin_begin",
            "erin",
            "nlp-prod",
            "normal",
            "PENDING",
            "BeginTime",
            gpu("h100", 2),
            "--begin=now+2hours",
            *res,
        )
        # CPU-only array, two tasks at a time; the other tasks wait on JobArrayTaskLimit.
        array_id = sub(
            "array",
            "bob",
            "nlp-exp",
            "normal",
            "PENDING",
            "JobArrayTaskLimit",
            "--array=2-7%2",
            "-c",
            "2",
            "--mem=2G",
            one_h,
            "--partition=interactive",
        )

        # ---- preemption: high QoS on a full a100 pool requeues one of dave's low jobs.
        sub("alice_high", "alice", "vision-prod", "high", "RUNNING", None, gpu("a100", 8), *res)
        low_ids = {jobs["low_1"].job_id, jobs["low_2"].job_id}
        preempted: list[str] = []

        def preemption_done() -> bool:
            st = self.squeue_states()
            if st.get(jobs["alice_high"].job_id, ("",))[0] != "RUNNING":
                return False
            preempted[:] = [j for j in low_ids if int(self.job_info(j).get("Restarts", "0"))]
            return bool(preempted)

        self._wait(
            preemption_done,
            time.monotonic() + timeout,
            "high job to preempt (requeue) a low job",
            "slurmctld",
        )
        for key in ("low_1", "low_2"):
            if jobs[key].job_id in preempted:
                jobs[key].expected_state = "PENDING"
                # Requeued jobs are held back until their new BeginTime passes.
                jobs[key].expected_reason = "BeginTime"
        # Only now: submitted together with alice_high, this job would make the
        # scheduler preempt a second low job before noticing the QoS cap.
        # high's GrpTRES gpu=8 is used up by alice_high, so this one pends on it.
        sub(
            "alice_high_grp",
            "alice",
            "vision-prod",
            "high",
            "PENDING",
            "QOSGrpGRES",
            gpu("a100", 8),
            *res,
        )
        # MaxSubmitJobsPerUser=2 on high: sbatch itself refuses a third.
        _, _, proc = self.sbatch("alice", "vision-prod", "high", gpu("a100", 1), *res, check=False)
        rejected["alice_high_submit_limit"] = proc.stderr.strip()

        # Reasons are assigned by the next scheduling pass; wait for all of them.
        want = {j.job_id: j.expected_reason for j in jobs.values() if j.expected_state == "PENDING"}

        def reasons_shown() -> bool:
            st = self.squeue_states()
            return all(st.get(jid, ("", ""))[1] == r for jid, r in want.items())

        try:
            self._wait(
                reasons_shown,
                time.monotonic() + timeout,
                "pending reasons to appear in squeue",
                "slurmctld",
            )
        except HarnessError as exc:
            st = self.squeue_states()
            diff = {
                jid: (r, st.get(jid)) for jid, r in want.items() if st.get(jid, ("", ""))[1] != r
            }
            raise HarnessError(f"{exc}\nexpected vs actual: {diff}") from None
        return Workload(
            jobs=jobs, rejected=rejected, preempted_job_ids=sorted(preempted), array_job_id=array_id
        )

    # ----- internals ---------------------------------------------------------------
    def _wait(self, pred: Callable[[], bool], deadline: float, what: str, log: str) -> None:
        last_exc: Exception | None = None
        while True:
            try:
                if pred():
                    return
            except (HarnessError, subprocess.SubprocessError, OSError) as exc:
                last_exc = exc
            dead = [n for n, p in self.procs.items() if p.poll() is not None]
            if dead or time.monotonic() > deadline:
                why = f"daemon(s) exited: {dead}" if dead else "timed out"
                culprit = dead[0] if dead else log
                raise HarnessError(
                    f"waiting for {what}: {why}"
                    + (f" (last error: {last_exc})" if last_exc else "")
                    + "\n"
                    + self.log_tail(culprit)
                )
            time.sleep(0.25)

    def _node_states(self) -> dict[str, str]:
        out = self.run(["sinfo", "--noheader", "-N", "-o", "%N %t"], check=False).stdout
        return dict(line.split() for line in out.splitlines() if len(line.split()) == 2)

    def _all_nodes_idle(self) -> bool:
        states = self._node_states()
        return all(states.get(n) == "idle" for n in NODE_NAMES)

    def _daemon_env(self, name: str = "") -> dict[str, str]:
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("SLURM_", "SBATCH_", "SQUEUE_", "SINFO_", "SACCT_"))
        }
        env["SLURM_CONF"] = str(self.slurm_conf)
        if name == "slurmdbd" and self.loopback_shim is not None:
            env["LD_PRELOAD"] = str(self.loopback_shim)
        return env

    def _daemon_argv(self, name: str) -> list[str]:
        d = self.dir
        if name == "munged":
            return [
                _which("munged") or "munged",
                "--foreground",
                "--force",
                f"--socket={self.munge_socket}",
                f"--key-file={d / 'etc' / 'munge.key'}",
                f"--pid-file={d / 'run' / 'munged.pid'}",
                f"--log-file={d / 'log/munged.log'}",
                f"--seed-file={d / 'state' / 'munged.seed'}",
                "--num-threads=4",
            ]
        if name == "mariadbd":
            self._logs["mariadbd"] = d / "log" / "mariadbd.err"
            return [
                _which("mariadbd") or "mariadbd",
                "--no-defaults",
                f"--datadir={d / 'mysql'}",
                f"--socket={self.mysql_socket}",
                f"--port={self.ports['mysql']}",
                f"--bind-address={LOOPBACK}",
                "--user=root",
                "--skip-name-resolve",
                f"--pid-file={d / 'run' / 'mariadbd.pid'}",
                f"--log-error={d / 'log' / 'mariadbd.err'}",
                "--skip-log-bin",
                # Throw-away test data: durability is not worth the fsyncs.
                "--innodb-flush-log-at-trx-commit=0",
                "--innodb-doublewrite=0",
                "--innodb-buffer-pool-size=256M",
                "--innodb-lock-wait-timeout=900",
                "--max-allowed-packet=16M",
            ]
        if name == "slurmdbd":
            self._logs["slurmdbd"] = d / "log" / "slurmdbd.log"
            # slurmdbd has no -f: it reads slurmdbd.conf next to $SLURM_CONF.
            return [_which("slurmdbd") or "slurmdbd", "-D"]
        if name == "slurmctld":
            self._logs["slurmctld"] = d / "log" / "slurmctld.log"
            return [_which("slurmctld") or "slurmctld", "-D", "-f", str(self.slurm_conf)]
        if name.startswith("slurmd-"):
            node = name.removeprefix("slurmd-")
            self._logs[name] = d / "log" / f"slurmd-{node}.log"
            return [_which("slurmd") or "slurmd", "-D", "-N", node, "-f", str(self.slurm_conf)]
        raise ValueError(name)

    def _prepare(self) -> None:
        d = self.dir
        for sub in ("etc", "run", "log", "state", "spool", "dev", "mysql"):
            (d / sub).mkdir(parents=True, exist_ok=True)
        d.chmod(0o755)  # job users must reach jobs/ inside it
        self.job_dir.mkdir(exist_ok=True)
        self.job_dir.chmod(0o1777)
        names = ["mysql", "slurmdbd", "slurmctld", *NODE_NAMES]
        self.ports = dict(zip(names, _free_ports(len(names)), strict=True))

        key = d / "etc" / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o400)
        (d / "state" / "munged.seed").touch(mode=0o600)

        # GRES File= must name real character devices; /dev/null's 1:3 is harmless.
        for n in NODE_NAMES:
            (d / "dev" / n).mkdir(exist_ok=True)
            for i in range(GPUS_PER_NODE):
                dev = d / "dev" / n / f"nvidia{i}"
                if not dev.exists():
                    os.mknod(dev, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
            (d / "spool" / n).mkdir(exist_ok=True)

        for u in USERS:
            ensure_user(u)

        self.slurm_conf.write_text(self._slurm_conf_text())
        (d / "etc" / "gres.conf").write_text(self._gres_conf_text())
        dbd = d / "etc" / "slurmdbd.conf"
        dbd.write_text(self._slurmdbd_conf_text())
        dbd.chmod(0o600)  # slurmdbd refuses a world-readable config
        self.env = self._daemon_env()
        self.loopback_shim = self._build_loopback_shim()

    def _build_loopback_shim(self) -> Path | None:
        cc = _which("cc") or _which("gcc")
        if cc is None:
            return None
        src = self.dir / "run" / "loopback_bind.c"
        lib = self.dir / "run" / "loopback_bind.so"
        src.write_text(_LOOPBACK_SHIM_C)
        proc = subprocess.run(
            [cc, "-shared", "-fPIC", "-O2", "-o", str(lib), str(src), "-ldl"],
            capture_output=True,
            text=True,
            check=False,
            timeout=60,
        )
        return lib if proc.returncode == 0 else None

    def _slurm_conf_text(self) -> str:
        d = self.dir
        host = self.hostname
        lines = [
            f"ClusterName={CLUSTER_NAME}",
            f"SlurmctldHost={host}({LOOPBACK})",
            f"SlurmctldPort={self.ports['slurmctld']}",
            "SlurmUser=root",
            "SlurmdUser=root",
            "AuthType=auth/munge",
            "CredType=cred/munge",
            f"AuthInfo=socket={self.munge_socket}",
            # Bind slurmctld and slurmd to the configured 127.0.0.1 rather than
            # INADDR_ANY (slurmdbd has no such option in 22.05: see _loopback_shim).
            "CommunicationParameters=NoCtldInAddrAny,NoInAddrAny",
            f"StateSaveLocation={d / 'state' / 'ctld'}",
            f"SlurmdSpoolDir={d / 'spool' / '%n'}",
            f"SlurmctldPidFile={d / 'run' / 'slurmctld.pid'}",
            f"SlurmdPidFile={d / 'run' / 'slurmd-%n.pid'}",
            f"SlurmctldLogFile={d / 'log' / 'slurmctld.log'}",
            f"SlurmdLogFile={d / 'log' / 'slurmd-%n.log'}",
            "SlurmctldDebug=info",
            "SlurmdDebug=info",
            "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/none",
            "JobAcctGatherType=jobacct_gather/none",
            "MpiDefault=none",
            "SwitchType=switch/none",
            "ReturnToService=2",
            "SlurmdParameters=config_overrides",
            "SlurmctldTimeout=30",
            "SlurmdTimeout=300",
            "MessageTimeout=10",
            "KillWait=2",
            # Finished jobs stay in the controller's memory (scontrol show job) for an
            # hour: the session workload's finished jobs are read by modules that run
            # 10+ minutes after it was submitted (at 600, the CI run on febd9a1 found
            # job 1 purged once the suite had grown by two minutes).
            "MinJobAge=3600",
            "JobRequeue=1",
            "GresTypes=gpu",
            "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_Core_Memory",
            "DefMemPerCPU=1024",
            # Accounting through slurmdbd; the munge socket for that link comes
            # from AccountingStoragePass, not AuthInfo.
            "AccountingStorageType=accounting_storage/slurmdbd",
            f"AccountingStorageHost={LOOPBACK}",
            f"AccountingStoragePort={self.ports['slurmdbd']}",
            f"AccountingStoragePass={self.munge_socket}",
            "AccountingStorageEnforce=associations,limits,qos,safe",
            "AccountingStorageTRES=gres/gpu,gres/gpu:h100,gres/gpu:a100",
            "JobCompType=jobcomp/none",
            # Short intervals so that reasons and backfill estimates appear in seconds.
            "SchedulerType=sched/backfill",
            "SchedulerParameters=bf_interval=2,bf_resolution=60,sched_min_interval=100000,"
            "bf_window=4320",
            "PriorityType=priority/multifactor",
            "PriorityDecayHalfLife=7-0",
            "PriorityCalcPeriod=1",
            "PriorityMaxAge=7-0",
            "PriorityWeightAge=1000",
            "PriorityWeightFairshare=10000",
            "PriorityWeightJobSize=1000",
            "PriorityWeightPartition=1000",
            "PriorityWeightQOS=5000",
            "PreemptType=preempt/qos",
            "PreemptMode=REQUEUE",
        ]
        for n in NODE_NAMES:
            lines.append(
                f"NodeName={n} NodeHostname={host} NodeAddr={LOOPBACK} Port={self.ports[n]} "
                f"CPUs={CPUS_PER_NODE} Boards=1 SocketsPerBoard=2 CoresPerSocket=32 "
                f"ThreadsPerCore=1 RealMemory={REAL_MEMORY_MB} "
                f"Gres=gpu:{GPU_TYPE[n]}:{GPUS_PER_NODE} Feature={GPU_TYPE[n]},{NODE_FABRIC[n]} "
                "State=UNKNOWN"
            )
        nodes = "gpu[01-08]"
        lines += [
            f"PartitionName=gpu Nodes={nodes} Default=YES MaxTime=3-00:00:00 "
            "DefaultTime=04:00:00 PriorityJobFactor=1 State=UP",
            f"PartitionName=interactive Nodes={nodes} MaxTime=04:00:00 DefaultTime=01:00:00 "
            "PriorityJobFactor=10 State=UP",
        ]
        return "\n".join(lines) + "\n"

    def _gres_conf_text(self) -> str:
        lines = ["AutoDetect=off"]
        for n in NODE_NAMES:
            files = self.dir / "dev" / n / f"nvidia[0-{GPUS_PER_NODE - 1}]"
            lines.append(f"NodeName={n} Name=gpu Type={GPU_TYPE[n]} File={files}")
        return "\n".join(lines) + "\n"

    def _slurmdbd_conf_text(self) -> str:
        d = self.dir
        return (
            "\n".join(
                [
                    "AuthType=auth/munge",
                    f"AuthInfo=socket={self.munge_socket}",
                    f"DbdHost={self.hostname}",
                    f"DbdAddr={LOOPBACK}",
                    f"DbdPort={self.ports['slurmdbd']}",
                    "SlurmUser=root",
                    f"LogFile={d / 'log' / 'slurmdbd.log'}",
                    f"PidFile={d / 'run' / 'slurmdbd.pid'}",
                    "DebugLevel=info",
                    "StorageType=accounting_storage/mysql",
                    f"StorageHost={LOOPBACK}",
                    f"StoragePort={self.ports['mysql']}",
                    "StorageUser=root",
                    "StorageLoc=slurm_acct_db",
                ]
            )
            + "\n"
        )

    def _init_mariadb(self) -> None:
        datadir = self.dir / "mysql"
        if (datadir / "mysql").exists():
            return
        installer = _which("mariadb-install-db") or "mariadb-install-db"
        log = self.dir / "log" / "mariadb-install.log"
        with open(log, "wb") as out:
            proc = subprocess.run(
                [
                    installer,
                    "--no-defaults",
                    f"--datadir={datadir}",
                    "--user=root",
                    "--auth-root-authentication-method=normal",
                    "--skip-test-db",
                    "--skip-name-resolve",
                ],
                stdout=out,
                stderr=subprocess.STDOUT,
                timeout=60,
                check=False,
            )
        if proc.returncode != 0:
            raise HarnessError(f"mariadb-install-db failed:\n{_tail(log)}")

    def _sacctmgr(self, *args: str) -> subprocess.CompletedProcess[str]:
        proc = self.run(["sacctmgr", "-i", *args], check=False)
        # Re-adding an existing entity is not an error for an idempotent setup.
        if proc.returncode != 0 and "Nothing new added" not in (proc.stdout + proc.stderr):
            raise HarnessError(
                f"sacctmgr {' '.join(args)} failed ({proc.returncode}): "
                f"{proc.stderr.strip() or proc.stdout.strip()}\n" + self.log_tail("slurmdbd", 15)
            )
        return proc

    def _wait_dbd(self, deadline: float) -> None:
        # slurmdbd creates its tables on first start; the first sacctmgr that
        # works tells us it is ready.
        def dbd_ready() -> bool:
            return (
                self.run(
                    ["sacctmgr", "-n", "-P", "show", "cluster"], check=False, timeout=15
                ).returncode
                == 0
            )

        self._wait(dbd_ready, deadline, "slurmdbd to answer sacctmgr", "slurmdbd")

    def _gpu_tres_known(self) -> bool:
        out = self.run(
            ["sacctmgr", "-n", "-P", "show", "tres", "format=Type,Name"], check=False
        ).stdout
        return {"gres|gpu", "gres|gpu:h100", "gres|gpu:a100"} <= set(out.split())

    def _setup_accounting(self) -> None:
        self._sacctmgr("add", "qos", "high,low")
        for qos, settings in QOS_SETTINGS.items():
            self._sacctmgr("modify", "qos", qos, "set", *settings)
        for acct, parent, share, grp in ACCOUNTS:
            limits = [f"GrpTRES={grp}"] if grp else []
            self._sacctmgr(
                "add",
                "account",
                acct,
                f"Parent={parent}",
                f"Fairshare={share}",
                f"Description={acct}",
                f"Organization={acct.split('-')[0]}",
                f"Cluster={CLUSTER_NAME}",
                *limits,
            )
        # `add cluster` creates a root user association with RawShares=1 beside
        # prod/exp/elastic, which would turn 60-30-10 into 59.4-29.7-9.9.  Jobs are
        # submitted as the team users, so root needs no association.
        self._sacctmgr("delete", "user", "name=root", "account=root", f"cluster={CLUSTER_NAME}")
        for user, accts in USERS.items():
            for acct in accts:
                self._sacctmgr(
                    "add",
                    "user",
                    user,
                    f"Account={acct}",
                    f"DefaultAccount={accts[0]}",
                    "QOS=high,normal,low",
                    "DefaultQOS=normal",
                    f"Cluster={CLUSTER_NAME}",
                )
