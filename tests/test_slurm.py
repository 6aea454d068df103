# SPDX-License-Identifier: MIT
"""spyc under Slurm, on a one-node cluster the module starts for itself.

- `srun -n 2 spyc record -o prof.%r.%h.json -- python slurm_work.py`:
  the rank from SLURM_PROCID, the node's name for %h, and `spyc merge`'s
  seconds of work() by rank against the time each rank measured itself
  (the last rank does three times the others' work).
- `srun --overlap --jobid J spyc record --pid PID`: attached to a running
  step of job J, its python's pid found with `scontrol listpids`.
- `scancel` of `srun spyc record -- python ...` (a time limit does the
  same): the profile is still written.
- `srun --mpi=pmix`: an MPI job (mpi4py) over Slurm's PMIx plugin,
  checked as tests/test_mpi.py checks mpirun's.

The cluster: munged with its own key and socket, slurmctld and slurmd
(proctrack/linuxproc, task/none, select/cons_tres), the node named after
this host with the CPUs and memory `slurmd -C` finds, in a temporary
directory, on ports free at start; stopped with `scontrol shutdown` and
munged killed, however the module ends.  The daemons run as the user
running the tests (root or not: the jobs are that user's).  Needs
Debian's slurm-wlm and munge (scripts/install-deps installs them);
skipped by name without them.
"""

import ctypes
import json
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import warnings

import pytest

from conftest import TARGETS, decode, newest_python, target_env
from test_mpi import check_ranks, mpi4py_python, mpi_env
from test_record import check_profile, parse_summary

DAEMONS = ("munged", "slurmctld", "slurmd")
CLIENTS = ("srun", "sinfo", "squeue", "scontrol", "scancel")
# Generous: daemons starting on a loaded 2-core machine.
START_TIMEOUT = 60.0
# Units of work per rank (the last rank: three times this): 0.2 to 0.6 s
# of CPU, as fast as the CPython is.
UNITS = 100
RATE = 200
# Ranks of the MPI job: mpi_work.py's slow rank is rank 2.
MPI_RANKS = 3
MPI_SLOW_RANK = 2


def find_binary(name):
    """name's path on PATH or in the sbin folders (a user's PATH may lack
    them), or None."""
    return shutil.which(name) or shutil.which(
        name, path="/usr/sbin:/sbin:/usr/local/sbin")


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def log_tail(path, n=30):
    try:
        with open(path, "rb") as f:
            return "\n".join(decode(f.read()).splitlines()[-n:])
    except OSError as e:
        return "(%s)" % e


class Cluster(object):
    """A one-node Slurm cluster in a temporary directory."""

    def __init__(self, bins):
        self.bins = bins
        # Short: munge's socket path must fit a sockaddr_un (108 bytes).
        self.dir = tempfile.mkdtemp(prefix="spyc-slurm-")
        self.procs = {}
        self.node = socket.gethostname().split(".")[0]
        self.socket = os.path.join(self.dir, "munge", "munge.socket.2")
        self.conf = os.path.join(self.dir, "slurm.conf")
        env = target_env()
        for k in list(env):
            # The test may itself run inside a Slurm job: none of its
            # settings, nor a rank, may leak into this cluster's jobs.
            if k.startswith("SLURM_") or k in (
                    "OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"):
                del env[k]
        env["SLURM_CONF"] = self.conf
        self.env = env

    def path(self, *names):
        return os.path.join(self.dir, *names)

    def describe(self):
        return "\n".join("--- %s's log ---\n%s" % (d, log_tail(
            self.path(d + ".log"))) for d in DAEMONS)

    def spawn(self, name, argv):
        log = open(self.path(name + ".log"), "wb")
        try:
            self.procs[name] = subprocess.Popen(
                argv, stdout=log, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL, env=self.env, cwd=self.dir,
                start_new_session=True)
        finally:
            log.close()

    def wait_for(self, what, ready):
        deadline = time.time() + START_TIMEOUT
        while not ready():
            dead = [n for n, p in self.procs.items() if p.poll() is not None]
            if dead:
                pytest.fail("%s exited (status %s) while waiting for %s\n%s"
                            % (dead[0], self.procs[dead[0]].returncode, what,
                               self.describe()), pytrace=False)
            if time.time() > deadline:
                pytest.fail("no %s in %.0f s\n%s" % (
                    what, START_TIMEOUT, self.describe()), pytrace=False)
            time.sleep(0.05)

    def node_config(self):
        """`slurmd -C`'s NodeName line: this machine's CPUs, sockets,
        cores and memory, as slurmd will find them."""
        out = subprocess.run([self.bins["slurmd"], "-C"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             env=self.env, timeout=60)
        for line in decode(out.stdout).splitlines():
            if line.startswith("NodeName="):
                return line.split(None, 1)[1]
        pytest.fail("slurmd -C printed no NodeName line:\n%s%s" % (
            decode(out.stdout), decode(out.stderr)), pytrace=False)

    def start(self):
        os.makedirs(os.path.dirname(self.socket), mode=0o700)
        key = self.path("munge.key")
        fd = os.open(key, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(os.urandom(1024))
        # --force: munged refuses to run as root otherwise.
        self.spawn("munged", [
            self.bins["munged"], "--foreground", "--force",
            "--key-file=" + key, "--socket=" + self.socket,
            "--pid-file=" + self.path("munged.pid"),
            "--seed-file=" + self.path("munged.seed"),
            "--log-file=" + self.path("munged.file.log")])
        self.wait_for("munge socket", lambda: os.path.exists(self.socket))

        for d in ("state", "spool"):
            os.mkdir(self.path(d))
        user = pwd.getpwuid(os.geteuid()).pw_name
        conf = [
            "ClusterName=spyctest",
            "SlurmctldHost=%s(127.0.0.1)" % self.node,
            "SlurmctldPort=%d" % free_port(),
            "SlurmdPort=%d" % free_port(),
            "SlurmUser=%s" % user,
            "SlurmdUser=%s" % user,
            "AuthType=auth/munge",
            "CredType=cred/munge",
            "AuthInfo=socket=%s" % self.socket,
            "StateSaveLocation=%s" % self.path("state"),
            "SlurmdSpoolDir=%s" % self.path("spool"),
            "SlurmctldPidFile=%s" % self.path("slurmctld.pid"),
            "SlurmdPidFile=%s" % self.path("slurmd.pid"),
            "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/none",
            "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_Core",
            "JobAcctGatherType=jobacct_gather/none",
            "AccountingStorageType=accounting_storage/none",
            "MpiDefault=none",
            "MailProg=/bin/true",
            "ReturnToService=2",
            # SIGKILL 3 s after SIGTERM (not 30): a cancelled step that
            # lingers holds the teardown.
            "KillWait=3",
            "NodeName=%s NodeAddr=127.0.0.1 %s State=UNKNOWN" % (
                self.node, self.node_config()),
            "PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE "
            "State=UP",
        ]
        with open(self.conf, "w") as f:
            f.write("\n".join(conf) + "\n")
        self.spawn("slurmctld", [self.bins["slurmctld"], "-D"])
        self.spawn("slurmd", [self.bins["slurmd"], "-D"])
        self.wait_for("idle node in sinfo", self.node_idle)

    def node_idle(self):
        res = self.run(["sinfo", "-h", "-N", "-o", "%T", "-n", self.node],
                       check=False)
        return res.returncode == 0 and res.stdout.split() == ["idle"]

    def run(self, argv, check=True, timeout=60):
        """Run a client command (srun, scontrol, ...) against this
        cluster; a CompletedProcess with text outputs."""
        argv = [self.bins.get(argv[0], argv[0])] + [str(a)
                                                     for a in argv[1:]]
        try:
            res = subprocess.run(argv, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, env=self.env,
                                 cwd=self.dir, timeout=timeout)
        except subprocess.TimeoutExpired as e:
            pytest.fail("%s did not finish in %d s\nstderr: %s\n%s" % (
                " ".join(argv), timeout, decode(e.stderr or b""),
                self.describe()))
        res.stdout, res.stderr = decode(res.stdout), decode(res.stderr)
        if check:
            assert res.returncode == 0, (
                "$ %s\nexit %d\n--- stdout ---\n%s\n--- stderr ---\n%s" % (
                    " ".join(argv), res.returncode, res.stdout[-4000:],
                    res.stderr[-4000:]))
        return res

    def quiet(self, argv, timeout=30):
        """Run a client command for the teardown: its stdout, or "" when
        it fails or hangs (a dead controller)."""
        try:
            res = subprocess.run([self.bins[argv[0]]] + argv[1:],
                                 stdout=subprocess.PIPE,
                                 stderr=subprocess.DEVNULL, env=self.env,
                                 timeout=timeout)
        except (OSError, subprocess.SubprocessError):
            return ""
        return decode(res.stdout) if res.returncode == 0 else ""

    def stop(self):
        """Cancel every job, stop the daemons, remove the directory; each
        step runs whatever the ones before it did.  A step that takes
        long is named in a warning: teardown time is CI time."""
        slow = []

        def timed(what, fn, *args):
            start = time.time()
            try:
                return fn(*args)
            finally:
                if time.time() - start > 5:
                    slow.append("%s: %.1f s" % (what, time.time() - start))

        shut_down = False
        try:
            ctld = self.procs.get("slurmctld")
            if ctld is not None and ctld.poll() is None:
                timed("cancelling the jobs left", self.cancel_all)
                timed("scontrol shutdown", self.quiet,
                      ["scontrol", "shutdown"])
                shut_down = True
        finally:
            for name in ("slurmd", "slurmctld", "munged"):
                proc = self.procs.get(name)
                if proc is not None:
                    timed("stopping " + name, self.end, proc,
                          shut_down and name != "munged")
            # A step the controller never heard end keeps its slurmstepd
            # retrying, the controller gone.
            left = self.stepds()
            for pid in left:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            if left:
                slow.append("slurmstepd left running: pid %s, killed" %
                            ", ".join(str(p) for p in left))
            shutil.rmtree(self.dir, ignore_errors=True)
            if slow:
                warnings.warn("slow teardown of the Slurm cluster: " +
                              ", ".join(slow))

    def cancel_all(self):
        """scancel every job and wait until squeue lists none (SIGKILL
        comes KillWait after SIGTERM), 20 s at most."""
        jobs = self.quiet(["squeue", "-h", "-o", "%i"]).split()
        if jobs:
            self.quiet(["scancel"] + jobs)
        deadline = time.time() + 20
        while jobs and time.time() < deadline:
            time.sleep(0.1)
            jobs = self.quiet(["squeue", "-h", "-o", "%i"]).split()

    def stepds(self):
        """The pids of this cluster's slurmstepd processes: those holding
        a socket in its spool folder (a step's, NODE_JOB.STEP)."""
        spool = self.path("spool") + os.sep
        inodes = set()
        try:
            with open("/proc/net/unix") as f:
                for line in f.read().splitlines()[1:]:
                    fields = line.split()
                    if len(fields) >= 8 and fields[7].startswith(spool):
                        inodes.add("socket:[%s]" % fields[6])
        except OSError:
            return []
        if not inodes:
            return []
        pids = []
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                fds = os.listdir("/proc/%s/fd" % pid)
                if any(os.readlink("/proc/%s/fd/%s" % (pid, fd)) in inodes
                       for fd in fds):
                    pids.append(int(pid))
            except OSError:
                continue
        return [p for p in pids if p not in
                set(proc.pid for proc in self.procs.values())]

    @staticmethod
    def end(proc, asked):
        """Wait for a daemon to exit: 10 s if it was asked to already
        (scontrol shutdown), then SIGTERM, then SIGKILL."""
        for sig, wait in ((None, 10 if asked else 0),
                          (signal.SIGTERM, 10), (signal.SIGKILL, 30)):
            if sig is not None and proc.poll() is None:
                proc.send_signal(sig)
            try:
                proc.wait(timeout=wait)
                return
            except subprocess.TimeoutExpired:
                pass


@pytest.fixture(scope="module")
def slurm():
    """A running one-node cluster, or skip by name."""
    bins = dict((b, find_binary(b)) for b in DAEMONS + CLIENTS)
    missing = sorted(b for b, p in bins.items() if p is None)
    if missing:
        pytest.skip("not found: %s (Debian: slurm-wlm, munge)" %
                    ", ".join(missing))
    cluster = Cluster(bins)
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(scope="module")
def py():
    found = newest_python()
    if found is None:
        pytest.skip("no supported CPython (3.6-3.15) found on this machine")
    return found


def test_srun_ranks_and_imbalance(spyc, slurm, py, tmp_path):
    """srun -n 2 spyc record -o prof.%r.%h.json: one profile per task,
    named by SLURM_PROCID and the node, and merge's imbalance against the
    ranks' own times."""
    ranks = 2
    argv = ["srun", "-n", ranks, spyc.path, "record", "--rate", RATE, "-o",
            tmp_path / "prof.%r.%h.json", "--", py.path,
            os.path.join(TARGETS, "slurm_work.py"), UNITS, tmp_path]
    res = slurm.run(argv, check=False, timeout=300)
    describe = "$ %s\nexit %d\n--- stdout ---\n%s\n--- stderr ---\n%s" % (
        " ".join(str(a) for a in argv), res.returncode, res.stdout[-4000:],
        res.stderr[-4000:])
    assert res.returncode == 0, describe + "\n" + slurm.describe()
    assert "names one file" not in res.stderr, describe
    # Each rank printed what it measured; srun passed it on.
    printed = sorted(l.split()[:2] for l in res.stdout.splitlines()
                     if l.startswith("rank "))
    assert printed == [["rank", str(r)] for r in range(ranks)], describe

    hosts = []
    for r in range(ranks):
        with open(str(tmp_path / ("report.%d.json" % r))) as f:
            hosts.append(json.load(f)["host"])
    names = ["prof.%d.%s.json" % (r, hosts[r]) for r in range(ranks)]
    reports = check_ranks(spyc, tmp_path, ranks, ranks - 1, names,
                          ("SLURM_PROCID",), describe)
    for r in range(ranks):
        # %h, and the profile's host, are the task's host name, which
        # Slurm took for the node's.
        with open(str(tmp_path / names[r])) as f:
            assert json.load(f)["spyc_process"]["host"] == hosts[r]
        assert reports[r]["node"] == slurm.node, reports[r]
        assert hosts[r].split(".")[0] == slurm.node, reports[r]


def test_srun_one_output_for_all_tasks_warned(spyc, slurm, py, tmp_path):
    """srun -n 2 spyc record -o prof.json: both tasks would write
    prof.json, each replacing the other's; each spyc says so, in one
    line naming srun's task count."""
    argv = ["srun", "-n", 2, spyc.path, "record", "-o",
            tmp_path / "prof.json", "--", py.path, "-c", "pass"]
    res = slurm.run(argv, check=False, timeout=300)
    describe = "$ %s\nexit %d\n--- stderr ---\n%s" % (
        " ".join(str(a) for a in argv), res.returncode, res.stderr[-4000:])
    assert res.returncode == 0, describe + "\n" + slurm.describe()
    warned = [l for l in res.stderr.splitlines() if "names one file" in l]
    assert len(warned) == 2, describe
    assert all(l.startswith("spyc: warning: this is one of 2 tasks "
                            "(SLURM_STEP_NUM_TASKS)") for l in warned), describe


def listpids(slurm, job):
    """{(step, global task id): pid} of `scontrol listpids JOB`, run on
    the job's node in a step of its own, as README says."""
    res = slurm.run(["srun", "--overlap", "--jobid", job, "-w", slurm.node,
                     "scontrol", "listpids", job])
    pids = {}
    for line in res.stdout.splitlines()[1:]:
        f = line.split()
        if len(f) == 5 and f[0].isdigit() and f[4].isdigit():
            pids[(f[2], int(f[4]))] = int(f[0])
    return pids


class Job(object):
    """`srun -J NAME ARGV` left running in the background: a job of one
    step, its output in LOG."""

    def __init__(self, slurm, name, argv, log):
        self.slurm = slurm
        self.name = "%s-%d" % (name, os.getpid())
        self.log = log
        with open(log, "wb") as f:
            self.srun = subprocess.Popen(
                [slurm.bins["srun"], "-J", self.name] + [str(a)
                                                          for a in argv],
                stdout=f, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL, env=slurm.env, cwd=slurm.dir,
                start_new_session=True)

    def describe(self):
        return "srun: exit %s\n%s\n%s" % (self.srun.returncode,
                                          log_tail(self.log),
                                          self.slurm.describe())

    def wait_file(self, path):
        """Wait until path exists while srun runs; fail if it does not."""
        deadline = time.time() + START_TIMEOUT
        while not os.path.exists(str(path)):
            assert self.srun.poll() is None, (
                "%s not written\n%s" % (path, self.describe()))
            assert time.time() < deadline, (
                "%s not written in %.0f s\n%s" % (path, START_TIMEOUT,
                                                  self.describe()))
            time.sleep(0.05)

    def ids(self):
        """The job's id as squeue lists it (a list: empty once ended)."""
        return self.slurm.run(["squeue", "-h", "-n", self.name, "-o", "%i"],
                              check=False).stdout.split()

    def cancel(self):
        """scancel the job; its srun's exit status once it exits."""
        ids = self.ids()
        if ids:
            self.slurm.run(["scancel"] + ids, check=False)
        try:
            return self.srun.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(self.srun.pid, signal.SIGKILL)
            self.srun.wait()
            raise


def test_attach_with_srun_overlap(spyc, slurm, py, tmp_path):
    """A job's step runs hot.py; `srun --overlap --jobid J spyc record
    --pid PID` in a second step of the same job profiles it."""
    report = tmp_path / "hot.json"
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    job = Job(slurm, "spyc-target",
              ["-n", 1, py.path, os.path.join(TARGETS, "hot.py"), 0, report],
              str(tmp_path / "srun.log"))
    try:
        job.wait_file(report)
        with open(str(report)) as f:
            info = json.load(f)
        ids = job.ids()
        assert len(ids) == 1, (ids, job.describe())
        # The way a user finds it: the job's first task of step 0.
        pids = listpids(slurm, ids[0])
        assert pids.get(("0", 0)) == info["pid"], (pids, info)
        pid = pids[("0", 0)]

        out = str(out_dir / "prof.txt")
        argv = ["srun", "--overlap", "--jobid", ids[0], "-w", slurm.node,
                "-n", "1", spyc.path,
                "record", "--pid", pid, "--duration", 2, "--full-filenames",
                "-o", out]
        res = slurm.run(argv, check=False, timeout=120)
        describe = ("$ %s\nexit %d\n--- stdout ---\n%s\n--- stderr ---\n%s"
                    % (" ".join(str(a) for a in argv), res.returncode,
                       res.stdout[-4000:], res.stderr[-4000:]))
        assert res.returncode == 0, describe
        assert job.srun.poll() is None, "recording must not stop the target"
        summary = parse_summary(res.stderr, describe)
        check_profile(out, "folded", info["chain"], summary, describe,
                      full_filenames=True)
    finally:
        job.cancel()


def test_scancel_writes_the_profile(spyc, slurm, py, tmp_path):
    """scancel (and a job's time limit) sends SIGTERM to every process of
    the step at once, spyc and its program alike: `srun spyc record --
    python hot.py` still writes the profile, and exits as the program
    did (128 + SIGTERM)."""
    report = tmp_path / "hot.json"
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    out = str(out_dir / "prof.txt")
    job = Job(slurm, "spyc-cancelled",
              ["-n", 1, spyc.path, "record", "--full-filenames", "-o", out,
               "--", py.path, os.path.join(TARGETS, "hot.py"), 0, report],
              str(tmp_path / "srun.log"))
    try:
        job.wait_file(report)
        with open(str(report)) as f:
            info = json.load(f)
        # Some samples of the program's own functions first.
        time.sleep(1)
    finally:
        status = job.cancel()
    describe = job.describe()
    with open(job.log, "rb") as f:
        err = decode(f.read())
    assert "task 0: Exited with exit code %d" % (128 + signal.SIGTERM) in \
        err, describe
    assert status != 0, describe
    summary = parse_summary(err, describe)
    check_profile(out, "folded", info["chain"], summary, describe,
                  full_filenames=True, launched=True)


def pmix_missing(slurm):
    """Why `srun --mpi=pmix` cannot work here, or None."""
    res = slurm.run(["srun", "--mpi=list"], check=False)
    if "pmix" not in (res.stdout + res.stderr):
        return ("Slurm's mpi/pmix plugin is not installed (mpi_pmix.so; "
                "Debian: slurm-wlm-basic-plugins)")
    # The plugin loads libpmix.so (the unversioned name) when a step
    # starts.
    try:
        ctypes.CDLL("libpmix.so")
    except OSError:
        return ("libpmix.so, which Slurm's mpi/pmix plugin loads, is "
                "missing (Debian: libpmix-dev)")
    return None


def test_mpi_under_srun_pmix(spyc, slurm, tmp_path):
    """srun --mpi=pmix -n 3 spyc record -o prof.%r.json -- python
    mpi_work.py: MPI ranks wired up by Slurm's PMIx server, the rank
    from PMIX_RANK, merge's imbalance against the ranks' own times."""
    why = pmix_missing(slurm)
    if why:
        pytest.skip(why)
    mpi_py = mpi4py_python()
    if mpi_py is None:
        pytest.skip("no supported CPython here imports mpi4py "
                    "(Debian: python3-mpi4py)")
    env = dict(slurm.env)
    env.update((k, v) for k, v in mpi_env().items() if k.startswith("OMPI_"))
    # More ranks than the node's cores: --overcommit.
    argv = [slurm.bins["srun"], "--mpi=pmix", "--overcommit", "-n",
            str(MPI_RANKS), spyc.path, "record", "--rate", str(RATE), "-o",
            str(tmp_path / "prof.%r.json"), "--", mpi_py.path,
            os.path.join(TARGETS, "mpi_work.py"), str(UNITS), str(tmp_path)]
    try:
        proc = subprocess.run(argv, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, env=env,
                              cwd=str(tmp_path), timeout=300)
    except subprocess.TimeoutExpired as e:
        pytest.fail("srun did not finish in 300 s\nstderr: %s" %
                    decode(e.stderr or b""))
    describe = "$ %s\nexit %d\n--- stdout ---\n%s\n--- stderr ---\n%s" % (
        " ".join(argv), proc.returncode, decode(proc.stdout)[-4000:],
        decode(proc.stderr)[-4000:])
    assert proc.returncode == 0, describe + "\n" + slurm.describe()
    check_ranks(spyc, tmp_path, MPI_RANKS, MPI_SLOW_RANK,
                ["prof.%d.json" % r for r in range(MPI_RANKS)],
                ("PMIX_RANK",), describe)
