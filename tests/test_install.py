# SPDX-License-Identifier: MIT
"""`make install PREFIX=...`: the binary, the GPU agent where the
installed spyc finds it, the man page, and completions for bash and zsh
that offer what spyc's own --help lists."""

import os
import re
import shutil
import subprocess

import pytest

from conftest import REPO

COMMANDS_RE = re.compile(r"^  ([a-z][a-z-]*)  ", re.M)
OPTION_RE = re.compile(r"(?:^|[ ,])(--?[a-zA-Z][a-zA-Z-]*)", re.M)


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """PREFIX of a fresh `make install` (staged with DESTDIR, as packagers
    do), and the DESTDIR'd prefix."""
    root = str(tmp_path_factory.mktemp("install"))
    prefix = "/opt/spyc"
    res = subprocess.run(["make", "-s", "install", "PREFIX=" + prefix,
                          "DESTDIR=" + root], cwd=REPO,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         universal_newlines=True, timeout=600)
    assert res.returncode == 0, res.stdout
    return root + prefix


def help_text(spyc, *args):
    res = subprocess.run([spyc] + list(args) + ["--help"],
                         stdout=subprocess.PIPE, universal_newlines=True,
                         timeout=30)
    assert res.returncode == 0
    return res.stdout


def test_files(installed):
    for path in ("bin/spyc", "share/man/man1/spyc.1",
                 "share/bash-completion/completions/spyc",
                 "share/zsh/site-functions/_spyc"):
        assert os.path.isfile(os.path.join(installed, path)), path
    spyc = os.path.join(installed, "bin", "spyc")
    assert os.access(spyc, os.X_OK)
    res = subprocess.run([spyc, "--version"], stdout=subprocess.PIPE,
                         universal_newlines=True, timeout=30)
    assert res.returncode == 0 and res.stdout.startswith("spyc "), res.stdout
    with open(os.path.join(REPO, "man", "spyc.1")) as a, \
            open(os.path.join(installed, "share/man/man1/spyc.1")) as b:
        assert a.read() == b.read()


def test_installed_spyc_finds_its_agent(installed, any_python, tmp_path):
    """Installed, spyc finds spyc-agent.so in lib/spyc/ (no GPU here, so
    the program uses no CUDA and the profile is the CPU one)."""
    if not os.path.exists(os.path.join(REPO, "spyc-agent.so")):
        pytest.skip("spyc was built without its GPU agent (no CUPTI "
                    "headers found): there is none to install")
    agent = os.path.join(installed, "lib", "spyc", "spyc-agent.so")
    assert os.path.isfile(agent)
    env = dict((k, v) for k, v in os.environ.items() if k != "SPYC_AGENT")
    out = str(tmp_path / "p.json")
    res = subprocess.run([os.path.join(installed, "bin", "spyc"), "record",
                          "--gpu", "-o", out, "--", any_python.path, "-c",
                          "pass"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, universal_newlines=True,
                         env=env, timeout=60)
    assert "agent" not in res.stderr or "never loaded" in res.stderr, (
        res.stderr)
    assert "is missing" not in res.stderr, res.stderr
    assert os.path.isfile(out), res.stderr


def bash_complete(installed, words):
    """What the installed bash completion offers for words (the last one
    being completed)."""
    script = ('source "$1"; shift; COMP_WORDS=("$@"); '
              'COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); _spyc; '
              'printf "%s\\n" "${COMPREPLY[@]}"')
    env = dict(os.environ)
    env["PATH"] = os.path.join(installed, "bin") + os.pathsep + env["PATH"]
    res = subprocess.run(
        ["bash", "-c", script, "bash",
         os.path.join(installed, "share/bash-completion/completions/spyc")]
        + list(words), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        universal_newlines=True, env=env, timeout=60)
    assert res.returncode == 0, res.stderr
    return set(res.stdout.split())


def test_bash_completion(installed):
    spyc = os.path.join(installed, "bin", "spyc")
    commands = set(COMMANDS_RE.findall(help_text(spyc)))
    assert {"record", "dump", "top"} <= commands
    assert commands <= bash_complete(installed, ["spyc", ""])
    for cmd in sorted(commands):
        want = set(OPTION_RE.findall(help_text(spyc, cmd)))
        got = bash_complete(installed, ["spyc", cmd, "-"])
        assert want and want <= got, (cmd, sorted(want - got))
    assert bash_complete(installed, ["spyc", "record", "--format", ""]) >= {
        "speedscope", "folded", "svg"}
    assert str(os.getpid()) in bash_complete(installed,
                                             ["spyc", "dump", "--pid", ""])


def test_zsh_completion(installed):
    zsh = shutil.which("zsh")
    if zsh is None:
        pytest.skip("zsh not found: the zsh completion is checked only "
                    "where zsh is installed")
    res = subprocess.run([zsh, "-n", os.path.join(
        installed, "share/zsh/site-functions/_spyc")],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        universal_newlines=True, timeout=30)
    assert res.returncode == 0, res.stdout


def test_build_without_cupti(tmp_path, any_python):
    """Where CUPTI's headers cannot be found, spyc builds without its GPU
    agent, says so once, and refuses --gpu in one line (exit 2) before it
    launches anything; everything else works."""
    src = tmp_path / "src"
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"],
                           cwd=REPO, stdout=subprocess.PIPE,
                           universal_newlines=True, check=True).stdout.split()
    for name in files:
        if not os.path.isfile(os.path.join(REPO, name)):
            continue
        os.makedirs(str(src / os.path.dirname(name)), exist_ok=True)
        shutil.copy2(os.path.join(REPO, name), str(src / name))
    # No nvcc on PATH, and a CUDA_HOME with no headers.
    path = os.pathsep.join(
        d for d in os.environ.get("PATH", "").split(os.pathsep)
        if d and not os.path.exists(os.path.join(d, "nvcc")))
    env = dict(os.environ, PATH=path)
    res = subprocess.run(["make", "-j2", "spyc", "CUDA_HOME=" +
                          str(tmp_path / "no-cuda")], cwd=str(src), env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         universal_newlines=True, timeout=900)
    assert res.returncode == 0, res.stdout[-3000:]
    said = [l for l in res.stdout.splitlines()
            if "no CUPTI headers found" in l]
    assert len(said) == 1 and "built without the GPU agent" in said[0], \
        res.stdout[-3000:]
    assert not (src / "spyc-agent.so").exists()
    marker = tmp_path / "ran"
    script = tmp_path / "mark.py"
    script.write_text("open(%r, 'w').close()\n" % str(marker))
    res = subprocess.run([str(src / "spyc"), "record", "--gpu", "-o",
                          str(tmp_path / "out.json"), "--", any_python.path,
                          str(script)], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, universal_newlines=True,
                         timeout=60)
    lines = res.stderr.splitlines()
    assert res.returncode == 2 and len(lines) == 1 and "--gpu" in lines[0], \
        res.stderr
    assert not marker.exists()
    res = subprocess.run([str(src / "spyc"), "record", "-o",
                          str(tmp_path / "out.json"), "--", any_python.path,
                          str(script)], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, universal_newlines=True,
                         timeout=60)
    assert res.returncode == 0 and marker.exists(), res.stderr
