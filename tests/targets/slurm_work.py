# SPDX-License-Identifier: MIT
"""Slurm target, without MPI: each task of `srun -n N` does its share of
work in work(), the last task three times the share of the others.

The task's rank and the job's size are Slurm's (SLURM_PROCID,
SLURM_NTASKS), as srun sets them.  The tasks work one after the other
(task k starts once DIR/done.(k-1) exists), so that on a machine with
fewer cores than tasks each task's work() gets a core of its own and its
time in work() is close to its CPU time; waiting tasks poll with a sleep.

Each task prints one line, `rank R pid P work_cpu C work_wall W`, and
writes DIR/report.RANK.json (atomically): its rank, the job's size, its
pid, the units of work it did, the wall and CPU seconds it spent in
work() as it measured them itself, its host name and Slurm's name for
its node.

Usage: srun -n N python3 slurm_work.py UNITS DIR
"""

import json
import os
import socket
import sys
import time

CHUNK = 20000
SLOW_FACTOR = 3
POLL_S = 0.01


def spin(n):
    x = 1
    i = 0
    while i < n:
        x = (x * 1103515245 + 12345 + i) % 2147483648
        i += 1
    return x


def work(units):
    acc = 0
    for _ in range(units):
        acc ^= spin(CHUNK)
    return acc


def wait_for(path):
    while not os.path.exists(path):
        time.sleep(POLL_S)


def touch(path):
    with open(path + ".tmp", "w"):
        pass
    os.rename(path + ".tmp", path)


def main():
    units, out = int(sys.argv[1]), sys.argv[2]
    rank = int(os.environ["SLURM_PROCID"])
    size = int(os.environ["SLURM_NTASKS"])
    mine = units * (SLOW_FACTOR if rank == size - 1 else 1)
    if rank > 0:
        wait_for(os.path.join(out, "done.%d" % (rank - 1)))
    wall, cpu = time.perf_counter(), time.process_time()
    acc = work(mine)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    touch(os.path.join(out, "done.%d" % rank))
    report = {"rank": rank, "size": size, "pid": os.getpid(),
              "units": mine, "work_wall": wall, "work_cpu": cpu,
              "checksum": acc, "host": socket.gethostname(),
              "node": os.environ.get("SLURMD_NODENAME"),
              "function": work.__code__.co_name,
              "file": os.path.basename(work.__code__.co_filename)}
    print("rank %d pid %d work_cpu %.3f work_wall %.3f" % (
        rank, os.getpid(), cpu, wall))
    path = os.path.join(out, "report.%d.json" % rank)
    with open(path + ".tmp", "w") as f:
        json.dump(report, f)
    os.rename(path + ".tmp", path)


if __name__ == "__main__":
    main()
