# SPDX-License-Identifier: MIT
"""Run a program under a seccomp filter that refuses some system calls
with EPERM, as a container runtime's seccomp profile does (Docker before
19.03 refused process_vm_readv and ptrace this way).

Usage: seccomp_deny.py NAME[,NAME...] PROGRAM [ARG...]; NAME is one of
SYSCALLS.  x86-64 only (the numbers are its own).
"""

import ctypes
import os
import struct
import sys

# x86-64 system call numbers (arch/x86/entry/syscalls/syscall_64.tbl).
SYSCALLS = {"ptrace": 101, "process_vm_readv": 310}

# linux/prctl.h, linux/seccomp.h, linux/audit.h, linux/filter.h
PR_SET_SECCOMP = 22
PR_SET_NO_NEW_PRIVS = 38
SECCOMP_MODE_FILTER = 2
SECCOMP_RET_ALLOW = 0x7FFF0000
SECCOMP_RET_ERRNO = 0x00050000
EPERM = 1
AUDIT_ARCH_X86_64 = 0xC000003E
BPF_LD_W_ABS = 0x20
BPF_JEQ_K = 0x15
BPF_RET_K = 0x06
# struct seccomp_data: nr at 0, arch at 4
DATA_NR, DATA_ARCH = 0, 4


def insn(code, jt, jf, k):
    return struct.pack("=HBBI", code, jt, jf, k)


def program(numbers):
    """Another architecture's calls pass; each number refused, else
    allowed."""
    prog = [insn(BPF_LD_W_ABS, 0, 0, DATA_ARCH),
            insn(BPF_JEQ_K, 1, 0, AUDIT_ARCH_X86_64),
            insn(BPF_RET_K, 0, 0, SECCOMP_RET_ALLOW),
            insn(BPF_LD_W_ABS, 0, 0, DATA_NR)]
    for nr in numbers:
        prog += [insn(BPF_JEQ_K, 0, 1, nr),
                 insn(BPF_RET_K, 0, 0, SECCOMP_RET_ERRNO | EPERM)]
    prog.append(insn(BPF_RET_K, 0, 0, SECCOMP_RET_ALLOW))
    return prog


class SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def main():
    names = sys.argv[1].split(",")
    prog = program([SYSCALLS[n] for n in names])
    code = ctypes.create_string_buffer(b"".join(prog))
    fprog = SockFprog(len(prog), ctypes.cast(code, ctypes.c_void_p))
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_void_p,
                           ctypes.c_ulong, ctypes.c_ulong]
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, None, 0, 0) or libc.prctl(
            PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.addressof(fprog),
            0, 0):
        sys.exit("seccomp_deny.py: prctl: %s" %
                 os.strerror(ctypes.get_errno()))
    os.execv(sys.argv[2], sys.argv[2:])


if __name__ == "__main__":
    main()
