# SPDX-License-Identifier: MIT
"""Find every CPython on this machine and pick one per supported test slot.

Sources, in this order: the paths in $SPYC_PYTHONS (colon-separated),
the CPythons that scripts/unpack-pythons unpacks from the shared folder
into build/pythons/ (run here first; it says so when that folder is
absent), pyenv's versions/*/bin/python3 (or python2), then python3.N,
python3 and
python2 in the PATH directories (pyenv's shims are skipped: they are shell
scripts that pick a version by directory, not interpreters).  Duplicates are
removed by realpath.  Each candidate is asked, by running it, for its version
and whether it is a shared build.

"Shared" means the running interpreter has libpython*.so mapped, as read from
its own /proc/self/maps.  sysconfig's Py_ENABLE_SHARED is also recorded, but
it is not trusted: Debian's /usr/bin/python3.11 reports Py_ENABLE_SHARED=1
because Debian also ships libpython3.11.so, yet that executable has the
interpreter linked in statically, which is what a profiler cares about.

Test slots: one per supported minor version (the newest interpreter of
that minor with the GIL, preferring a shared build), one per supported
free-threaded minor ("3.14t": built with --disable-gil, as the
interpreter's own sysconfig says), plus "static" (the first non-shared
supported 3.x build).  A slot with nothing in it is still listed, so that
the tests using it are reported as skipped by name.

Run `python3 tests/pyfind.py` to print what was found.
"""

import glob
import os
import re
import shutil
import subprocess
import sys

SUPPORTED = [(3, minor) for minor in range(6, 16)]
# Free-threaded (Py_GIL_DISABLED) builds supported, by minor version.
SUPPORTED_FREE_THREADED = [(3, 13), (3, 14), (3, 15)]

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Runs under the candidate itself, so it must work on Python 2.7 too.
_QUERY = r"""
import platform, sys
try:
    import sysconfig
    enable_shared = bool(sysconfig.get_config_var('Py_ENABLE_SHARED'))
    free_threaded = bool(sysconfig.get_config_var('Py_GIL_DISABLED'))
except Exception:
    enable_shared = free_threaded = False
mapped = None
try:
    with open('/proc/self/maps') as f:
        mapped = any('/libpython' in line for line in f)
except Exception:
    pass
shared = enable_shared if mapped is None else mapped
sys.stdout.write('%s|%s|%d|%d|%s|%d\n' % (platform.python_implementation(),
    platform.python_version(), shared, enable_shared,
    '.'.join(str(x) for x in sys.version_info[:3]), free_threaded))
"""


class Interpreter(object):
    """One CPython executable, as it describes itself."""

    def __init__(self, path, source, version, version_info, shared,
                 enable_shared, free_threaded=False):
        self.path = path
        self.realpath = os.path.realpath(path)
        self.source = source
        self.version = version              # e.g. "3.11.7"
        self.version_info = version_info    # e.g. (3, 11, 7)
        self.shared = shared
        self.enable_shared = enable_shared
        self.free_threaded = free_threaded  # built with --disable-gil

    @property
    def minor(self):
        """ "3.11", or "3.14t" for a free-threaded build."""
        return "%d.%d%s" % (self.version_info[0], self.version_info[1],
                            "t" if self.free_threaded else "")

    @property
    def kind(self):
        return "shared" if self.shared else "static"

    @property
    def supported(self):
        return tuple(self.version_info[:2]) in (
            SUPPORTED_FREE_THREADED if self.free_threaded else SUPPORTED)

    def __repr__(self):
        return "<Interpreter %s %s %s>" % (self.version, self.kind, self.path)


class Slot(object):
    """A test slot: a version (or "static") and what fills it."""

    def __init__(self, name, interpreter):
        self.name = name                    # "3.11" or "static"
        self.interpreter = interpreter      # Interpreter or None
        self.id_override = None

    @property
    def id(self):
        """Readable pytest id: "3.11-shared", "3.11-static", "3.9-missing"."""
        if self.id_override:
            return self.id_override
        if self.interpreter is None:
            return "%s-missing" % self.name
        return "%s-%s" % (self.interpreter.minor, self.interpreter.kind)

    @property
    def is_free_threaded(self):
        return self.name.endswith("t")

    @property
    def skip_reason(self):
        if self.interpreter is not None:
            return None
        if self.name == "static":
            return ("no static (non-shared) CPython %d.%d-%d.%d build found "
                    "on this machine" % (SUPPORTED[0] + SUPPORTED[-1]))
        if self.name.endswith("t"):
            return ("free-threaded CPython %s not found on this machine nor "
                    "in the shared folder" % self.name)
        return "CPython %s not found on this machine" % self.name

    def __repr__(self):
        return "<Slot %s %r>" % (self.id, self.interpreter)


def pyenv_root():
    """pyenv's root: `pyenv root`, else $PYENV_ROOT, else ~/.pyenv."""
    exe = shutil.which("pyenv")
    if exe:
        try:
            out = subprocess.run([exe, "root"], stdout=subprocess.PIPE,
                                 stderr=subprocess.DEVNULL, timeout=10,
                                 universal_newlines=True).stdout.strip()
            if out:
                return out
        except (OSError, subprocess.SubprocessError):
            pass
    return os.environ.get("PYENV_ROOT") or os.path.expanduser("~/.pyenv")


def unpacked_pythons():
    """The interpreters scripts/unpack-pythons put in build/pythons/."""
    script = os.path.join(ROOT, "scripts", "unpack-pythons")
    try:
        subprocess.run([script], stdout=sys.stderr, timeout=600, check=True)
    except (OSError, subprocess.SubprocessError) as e:
        sys.stderr.write("pyfind: %s failed: %s\n" % (script, e))
    found = []
    for tree in sorted(glob.glob(os.path.join(ROOT, "build", "pythons",
                                              "*", "bin"))):
        # A free-threaded tree also has python3.N, the same executable.
        names = sorted(glob.glob(os.path.join(tree, "python3.*")))
        names = [n for n in names if re.search(r"python3\.\d+t?$", n)]
        names.sort(key=lambda n: not n.endswith("t"))
        if names:
            found.append(names[0])
    return found


def _candidates():
    """Yield (path, source) for every executable that may be a CPython."""
    for path in os.environ.get("SPYC_PYTHONS", "").split(":"):
        if path:
            yield path, "SPYC_PYTHONS"
    for path in unpacked_pythons():
        yield path, "shared folder"

    root = pyenv_root()
    def natural(path):
        return [int(t) if t.isdigit() else t
                for t in re.split(r"(\d+)", os.path.basename(path))]

    for vdir in sorted(glob.glob(os.path.join(root, "versions", "*")),
                       key=natural):
        for name in ("python3", "python2"):
            path = os.path.join(vdir, "bin", name)
            if os.path.isfile(path):
                yield path, "pyenv"
                break

    name_re = re.compile(r"^python[23](\.\d+)?$")
    real_root = os.path.realpath(root)
    for d in os.environ.get("PATH", "").split(os.pathsep):
        if not d or os.path.basename(os.path.normpath(d)) == "shims":
            continue
        real_d = os.path.realpath(d)
        if real_d.startswith(real_root + os.sep) and "shims" in real_d:
            continue
        try:
            names = sorted(os.listdir(d))
        except OSError:
            continue
        for name in names:
            if name_re.match(name):
                yield os.path.join(d, name), "PATH"


def _describe(path, source):
    """Ask the interpreter at path about itself; None if it is no CPython."""
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        return None
    env = dict((k, v) for k, v in os.environ.items()
               if not k.startswith("PYTHON"))
    try:
        res = subprocess.run([path, "-S", "-c", _QUERY], env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             timeout=20, universal_newlines=True)
    except (OSError, subprocess.SubprocessError):
        return None
    fields = res.stdout.strip().split("|")
    if res.returncode != 0 or len(fields) != 6 or fields[0] != "CPython":
        return None
    impl, version, shared, enable_shared, vinfo, free_threaded = fields
    return Interpreter(path, source, version,
                       tuple(int(x) for x in vinfo.split(".")),
                       shared == "1", enable_shared == "1",
                       free_threaded == "1")


_found = None


def discover():
    """Every distinct CPython found, in discovery order (cached)."""
    global _found
    if _found is None:
        seen = set()
        found = []
        for path, source in _candidates():
            real = os.path.realpath(path)
            if real in seen:
                continue
            seen.add(real)
            interp = _describe(path, source)
            if interp is not None:
                found.append(interp)
        _found = found
    return list(_found)


def find(major, minor=None, free_threaded=False):
    """The best interpreter of that version (newest, shared first), or None."""
    matches = [i for i in discover() if i.version_info[0] == major and
               (minor is None or i.version_info[1] == minor) and
               i.free_threaded == free_threaded]
    if not matches:
        return None
    return max(matches, key=lambda i: (i.shared, i.version_info))


def slots():
    """The test slots: each supported version, the free-threaded ones,
    then "static", each filled or not."""
    result = [Slot("%d.%d" % v, find(*v)) for v in SUPPORTED]
    result += [Slot("%d.%dt" % v, find(v[0], v[1], True))
               for v in SUPPORTED_FREE_THREADED]
    static = [i for i in discover() if not i.shared and i.supported]
    last = Slot("static", static[0] if static else None)
    if last.id in [s.id for s in result]:
        # Only a static build of that minor exists; keep the ids unique.
        last.id_override = "static-" + last.interpreter.minor
    result.append(last)
    return result


def require(slot):
    """The slot's interpreter; skip the calling test (by name) if empty."""
    if slot.interpreter is None:
        import pytest
        pytest.skip(slot.skip_reason)
    return slot.interpreter


def main():
    found = discover()
    print("CPython interpreters found (%d):" % len(found))
    print("  %-9s %-7s %-16s %-13s %s" % (
        "version", "kind", "Py_ENABLE_SHARED", "source", "path"))
    for i in found:
        path = i.path if i.path == i.realpath else "%s -> %s" % (i.path,
                                                                 i.realpath)
        print("  %-9s %-7s %-16s %-13s %s" % (
            i.version + ("t" if i.free_threaded else ""), i.kind,
            int(i.enable_shared), i.source, path))
    print()
    print("Test slots:")
    for s in slots():
        if s.interpreter is None:
            print("  %-13s skipped: %s" % (s.id, s.skip_reason))
        else:
            print("  %-13s %s %s" % (s.id, s.interpreter.version,
                                     s.interpreter.path))
    return 0


if __name__ == "__main__":
    sys.exit(main())
