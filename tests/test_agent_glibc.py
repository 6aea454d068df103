# SPDX-License-Identifier: MIT
"""The GPU agent loads into a target whose C library is older than the
one it was built on, as in a container of an older distribution (Debian
11 and Ubuntu 20.04 have glibc 2.31, RHEL 8 2.28, CentOS 7 2.17).

Built against glibc 2.34 or later, the agent needed that glibc's new
versions of dlopen, pthread_create and others, and glibc 2.31's loader
refused it ("version `GLIBC_2.33' not found").  agent/libc-compat.h binds
them to their first versions.  Here the agent is loaded, every symbol
bound, by Debian 11's own glibc and loader (fetched by
scripts/install-deps into tests/build/glibc-2.31), and its attach entry
point runs there.
"""

import os
import platform
import re
import subprocess

import pytest

from conftest import REPO, TESTS, decode

AGENT = os.path.join(REPO, "spyc-agent.so")
LOADER = os.path.join(TESTS, "build", "spyc-agent-load")
OLD_GLIBC = os.path.join(TESTS, "build", "glibc-2.31")
OLD_LIBDIR = os.path.join(OLD_GLIBC, "lib", "x86_64-linux-gnu")
OLD_LDSO = os.path.join(OLD_LIBDIR, "ld-linux-x86-64.so.2")
# The oldest glibc the agent loads into: CentOS 7's, manylinux2014's.
OLDEST_GLIBC = (2, 17)
ENOENT, EINVAL = 2, 22

needs_agent = pytest.mark.skipif(
    not os.path.exists(AGENT),
    reason="spyc was built without the GPU agent (no CUPTI headers)")


def run(args):
    res = subprocess.run(args, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, timeout=60)
    return res.returncode, decode(res.stdout), decode(res.stderr)


@needs_agent
def test_agent_needs_no_glibc_past_2_17():
    """Every symbol version the agent needs is one glibc 2.17 has, and it
    names libdl and libpthread, where a glibc before 2.34 keeps dlopen
    and pthread_create."""
    rc, out, err = run(["readelf", "--wide", "-V", "-d", AGENT])
    assert rc == 0, err
    needs = set(tuple(int(p) for p in m.split("."))
                for m in re.findall(r"Name: GLIBC_([0-9.]+)", out))
    assert needs, "readelf shows no glibc version the agent needs:\n" + out
    newer = sorted(v for v in needs if v > OLDEST_GLIBC)
    assert not newer, (
        "the agent needs glibc %s, newer than %s: a target with an older "
        "glibc refuses to load it\n%s" % (
            ", ".join(".".join(map(str, v)) for v in newer),
            ".".join(map(str, OLDEST_GLIBC)), out))
    needed = re.findall(r"\(NEEDED\)\s+Shared library: \[([^]]+)\]", out)
    assert "libdl.so.2" in needed and "libpthread.so.0" in needed, needed


@needs_agent
@pytest.mark.skipif(platform.machine() != "x86_64",
                    reason="Debian 11's glibc is fetched for x86-64 only")
@pytest.mark.skipif(not os.path.exists(OLD_LDSO),
                    reason="Debian 11's glibc 2.31 is not in %s "
                    "(scripts/install-deps fetches it)" % OLD_GLIBC)
def test_agent_loads_under_glibc_2_31(tmp_path):
    """Debian 11's loader and glibc load the agent with every symbol
    bound, and its attach entry point runs: a channel that is not there
    is ENOENT, a file that is no channel EINVAL, as under this
    machine's glibc."""
    not_channel = tmp_path / "not-a-channel"
    not_channel.write_bytes(b"x" * 16)
    missing = str(tmp_path / "missing")
    for channel, want in ((missing, -ENOENT), (str(not_channel), -EINVAL)):
        here = run([LOADER, AGENT, channel])
        old = run([OLD_LDSO, "--library-path", OLD_LIBDIR, LOADER, AGENT,
                   channel])
        for what, (rc, out, err), glibc in (("this machine's glibc", here,
                                             None),
                                            ("glibc 2.31", old, "2.31")):
            assert rc == 0, "%s: the agent was not loaded: %s%s" % (
                what, out, err)
            lines = out.splitlines()
            assert lines[0].startswith("glibc "), out
            if glibc:
                assert lines[0] == "glibc " + glibc, out
            assert lines[1] == "attach %d" % want, (
                "%s, channel %s: %s%s" % (what, channel, out, err))
