# SPDX-License-Identifier: MIT
"""MPI target (mpi4py): each rank does its share of work in work(), rank 2
three times the share of the others, then all meet in a barrier and a
reduce.

The ranks work one after the other (rank k starts when rank k - 1 sends it
a token), so that on a machine with fewer cores than ranks each rank's
work() gets a core of its own and its time in work() is close to its CPU
time: a profile then shows rank 2 spending three times as long there.
Waiting ranks poll with a sleep between tests rather than blocking in MPI:
Open MPI's blocking waits spin on the CPU, which would take that core from
the working rank (and put the waits in the profile as running).

Each rank writes DIR/report.RANK.json (atomically) once it is done: its
rank, pid, the units of work it did, and the wall and CPU seconds it spent
in work(), as it measured them itself.

Usage: mpirun -np N python3 mpi_work.py UNITS DIR
"""

import json
import os
import sys
import time

from mpi4py import MPI

CHUNK = 20000
SLOW_RANK = 2
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


def wait(req):
    """Wait for a request without spinning; returns its message."""
    while True:
        done, msg = req.test()
        if done:
            return msg
        time.sleep(POLL_S)


def main():
    units, out = int(sys.argv[1]), sys.argv[2]
    comm = MPI.COMM_WORLD
    rank = comm.Get_rank()
    mine = units * (SLOW_FACTOR if rank == SLOW_RANK else 1)
    size = comm.Get_size()
    if rank > 0:
        wait(comm.irecv(source=rank - 1, tag=1))
    wall, cpu = time.perf_counter(), time.process_time()
    acc = work(mine)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    if rank + 1 < size:
        wait(comm.isend(rank, dest=rank + 1, tag=1))
    wait(comm.Ibarrier())
    total = comm.reduce(mine, op=MPI.SUM, root=0)
    report = {"rank": rank, "size": size, "pid": os.getpid(),
              "units": mine, "work_wall": wall, "work_cpu": cpu,
              "checksum": acc, "total_units": total,
              "function": work.__code__.co_name,
              "file": os.path.basename(work.__code__.co_filename)}
    path = os.path.join(out, "report.%d.json" % rank)
    with open(path + ".tmp", "w") as f:
        json.dump(report, f)
    os.rename(path + ".tmp", path)


if __name__ == "__main__":
    main()
