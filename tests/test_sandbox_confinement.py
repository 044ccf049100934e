"""The checker confined like the child, the child without sockets, and a bounded wire (issue 24,
parts 2-4): each attack class run against the real sandbox, asserting that it reaches nothing on
the host, is never recorded as a pass (nor as a kill), and leaves the next suite unaffected.

The checker runs no item text once tests are data, so its confinement is exercised directly:
through /proc (its uid, namespaces, seccomp mode), through the test-only ``probe`` request that
makes the running checker attempt what it must not do, and through its seccomp program loaded
in a forked helper.
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from processes import descendants
from sandboxes import TIMEOUT, requires

from pytest_execretrieval.corpus.build import build
from pytest_execretrieval.corpus.items import load_items
from pytest_execretrieval.execution import _confine, _wire
from pytest_execretrieval.execution import sandbox as sandbox_module
from pytest_execretrieval.execution.outcome_cache import cached_run
from pytest_execretrieval.execution.runner import SuiteRunner
from pytest_execretrieval.execution.sandbox import (
    LAYERS,
    LOST,
    PROTOCOL_ERROR,
    Limits,
    Sandbox,
)

ROOT = Path(__file__).resolve().parents[1]
BENIGN = ("def f(x):\n    return 2 * x\n", "", ["assert f(2) == 4"])
P61 = (1 << 61) - 1  # ints equal modulo this share a hash


def checker_of(sandbox: Sandbox) -> int:
    """The checker: the one child of the process Sandbox started (its namespace's anchor)."""
    assert sandbox.server_pid is not None
    return descendants(sandbox.server_pid, zombies=False)[0]


def status(pid: int) -> dict[str, str]:
    with open(f"/proc/{pid}/status") as fh:
        return dict(line.rstrip("\n").split(":\t", 1) for line in fh if ":\t" in line)


def probe(sandbox: Sandbox, budget_s: float = 1.0, **attempts: object) -> dict | None:
    """The checker's answer to a ``probe`` request; None when it died instead of answering."""
    proc = sandbox._proc
    assert proc is not None and proc.stdin is not None and proc.stdout is not None
    body = json.dumps({"id": 0, "probe": attempts, "budget_s": budget_s}).encode()
    os.write(proc.stdin.fileno(), _wire._HEADER.pack(len(body)) + body)
    try:
        return sandbox_module._read_frame(proc.stdout.fileno(), time.monotonic() + 30)
    except sandbox_module._ServerGone:
        proc.wait(timeout=30)  # its anchor exits with it: the next run restarts the sandbox
        return None


@contextlib.contextmanager
def unix_listener(directory: str) -> Iterator[tuple[str, socket.socket]]:
    """A host unix socket, listening, in a fresh directory under ``directory``."""
    where = tempfile.mkdtemp(dir=directory)
    path = os.path.join(where, "s")
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    os.chmod(where, 0o777)
    os.chmod(path, 0o777)  # reachable by nobody too: only the sandbox may stand in the way
    server.listen(4)
    server.setblocking(False)
    try:
        yield path, server
    finally:
        server.close()
        os.unlink(path)
        os.rmdir(where)


def no_connection(server: socket.socket) -> bool:
    try:
        server.accept()[0].close()
    except BlockingIOError:
        return True
    return False


def listener_dirs() -> list[str]:
    """Host directories a process could otherwise reach a socket in: shared memory, /run, and
    a directory beside this file (outside every special mount)."""
    return [d for d in ("/dev/shm", "/run") if os.access(d, os.W_OK)] + [str(ROOT / "tests")]


# --- part 2: the checker ------------------------------------------------------------------------


def test_the_checker_runs_unprivileged_in_namespaces_of_its_own():
    with Sandbox(Limits(timeout_s=TIMEOUT)) as sandbox:
        record = sandbox.isolation
        pid = checker_of(sandbox)
        st = status(pid)
        mine = {ns: os.readlink(f"/proc/self/ns/{ns}") for ns in ("user", "pid", "net", "ipc")}
        theirs = {ns: os.readlink(f"/proc/{pid}/ns/{ns}") for ns in mine}
        assert sandbox.run(*BENIGN).passed
    checker_layers = [name for name in LAYERS if name.startswith("checker_")]
    assert len(checker_layers) == 11
    assert all(record["layers"][name] for name in checker_layers), record["missing"]
    assert record["checker"] == "confined"
    assert all(mine[ns] != theirs[ns] for ns in mine), (mine, theirs)
    assert st["NSpid"].split()[-1] == "1", st["NSpid"]  # init of its own PID namespace
    assert st["Seccomp"] == "2" and st["NoNewPrivs"] == "1", st
    if os.geteuid() == 0:  # nobody, seen from the host
        assert st["Uid"].split() == ["65534"] * 4 and st["Gid"].split() == ["65534"] * 4, st
        assert int(st["CapEff"], 16) == 0, st


def test_the_checker_cannot_signal_prlimit_or_connect():
    victim = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    before = resource.getrlimit(resource.RLIMIT_FSIZE)
    try:
        with Sandbox(Limits(timeout_s=TIMEOUT)) as sandbox:
            for directory in listener_dirs():
                with unix_listener(directory) as (path, server):
                    answer = probe(
                        sandbox,
                        kill=victim.pid,
                        prlimit=os.getpid(),
                        setpriority=os.getpid(),
                        connect=path,
                        socketpair=0,
                    )
                    assert no_connection(server), directory
                assert answer is not None
                assert all(v != "ok" for v in answer["probe"].values()), answer
                assert set(answer["probe"]) == {
                    "kill",
                    "prlimit",
                    "setpriority",
                    "connect",
                    "socketpair",
                }
            assert sandbox.run(*BENIGN).passed
        assert victim.poll() is None  # still running
        assert resource.getrlimit(resource.RLIMIT_FSIZE) == before
        assert os.getpriority(os.PRIO_PROCESS, 0) < 19
    finally:
        victim.kill()
        victim.wait()


def test_the_checkers_seccomp_program_denies_signals_prlimit_and_sockets():
    programs = _confine.seccomp_programs()
    checker_program = programs[_confine.ROLES.index("checker")]
    victim = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    caller = os.getpid()
    rfd, wfd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the helper: load the program, try, report
        results = {}
        try:
            _confine.set_no_new_privs()
            _confine.load_seccomp(checker_program)
            attempts = {
                "kill": lambda: os.kill(victim.pid, signal.SIGSTOP),
                "prlimit": lambda: resource.prlimit(caller, resource.RLIMIT_FSIZE, (0, 0)),
                "setpriority": lambda: os.setpriority(os.PRIO_PROCESS, caller, 19),
                "socket": lambda: socket.socket(socket.AF_UNIX, socket.SOCK_STREAM),
                "socketpair": lambda: socket.socketpair(),
                "fork": lambda: os._exit(0) if os.fork() == 0 else None,
                "own_rlimit": lambda: resource.setrlimit(resource.RLIMIT_CORE, (0, 0)),
            }
            for name, action in attempts.items():
                try:
                    action()
                    results[name] = "ok"
                except OSError as exc:
                    results[name] = exc.errno
            os.write(wfd, json.dumps(results).encode())
        finally:
            os._exit(0)
    os.close(wfd)
    try:
        results = json.loads(os.read(rfd, 65536))
        os.waitpid(pid, 0)
    finally:
        os.close(rfd)
        victim.kill()
        victim.wait()
    assert results.pop("own_rlimit") == "ok"  # glibc's setrlimit is prlimit64(0, ...)
    assert results == dict.fromkeys(results, 1) and len(results) == 6, results  # EPERM
    assert resource.getrlimit(resource.RLIMIT_FSIZE)[0] != 0


@pytest.mark.parametrize("how", ["spin", "spin_c"])
def test_the_checkers_cpu_time_per_request_is_bounded(how):
    with Sandbox(Limits(timeout_s=TIMEOUT)) as sandbox:
        checker = checker_of(sandbox)
        start = time.monotonic()
        answer = probe(sandbox, budget_s=0.3, **{how: 60})
        took = time.monotonic() - start
        if how == "spin":  # Python code: interrupted at the budget, the checker goes on
            assert answer is not None and answer["probe"] == {"spin": "CpuExceeded"}, answer
            assert checker_of(sandbox) == checker
        else:  # one call into C: the RLIMIT_CPU backstop ends the checker
            assert answer is None
        assert took < 20, took
        assert sandbox.run(*BENIGN).passed  # restarted if it had to be


def test_the_checker_and_everything_below_it_die_with_the_caller():
    script = (
        "import os, signal, sys, threading, time\n"
        f"sys.path.insert(0, {str(ROOT / 'tests')!r})\n"
        "from processes import descendants\n"
        "from pytest_execretrieval.execution.sandbox import Limits, Sandbox\n"
        "sb = Sandbox(Limits(timeout_s=60))\n"
        "code = 'import time\\ndef f():\\n    time.sleep(50)\\n'\n"
        "threading.Thread(target=sb.run, args=(code, '', ['f()']), daemon=True).start()\n"
        "time.sleep(1.5)\n"  # the suite is under way: the checker is waiting for its child
        "print(*[sb.server_pid, *descendants(sb.server_pid)], flush=True)\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        check=False,
    )
    pids = [int(p) for p in proc.stdout.split()]
    assert len(pids) >= 5, (proc.stdout, proc.stderr)  # anchor, checker, zygote x2, child
    deadline = time.monotonic() + 10
    while any(map(alive, pids)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(map(alive, pids)), [p for p in pids if alive(p)]


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


# --- part 3: the child ---------------------------------------------------------------------------


def test_a_child_cannot_connect_to_a_host_unix_socket(box):
    requires(box, "seccomp")
    for directory in listener_dirs():
        with unix_listener(directory) as (path, server):
            code = (
                "import socket\n"
                "def f():\n"
                "    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)\n"
                f"    s.connect({path!r})\n"
                "    return 1\n"
            )
            r = box.run(code, "", ["assert f() == 1"])
            assert r.outcomes == ("error:PermissionError",), (directory, r)
            assert no_connection(server), directory
    pair = "import socket\ndef f():\n    a, b = socket.socketpair()\n    a.send(b'x')\n"
    pair += "    return b.recv(1)\n"
    assert box.run(pair, "", ["assert f() == b'x'"]).passed  # asyncio's self-pipe still works
    assert box.run(*BENIGN).passed


def test_the_zygote_covers_shared_memory_and_run_with_empty_mounts(box):
    requires(box, "mount_namespace")
    zygote_init = descendants(box.server_pid, zombies=False)[2]
    with open(f"/proc/{zygote_init}/mountinfo") as fh:
        mounts = {line.split()[4]: line.split(" - ")[1].split()[0] for line in fh}
    for path in {os.path.realpath(p) for p in ("/dev/shm", "/run", "/var/run")}:
        if os.path.isdir(path):
            assert mounts.get(path) == "tmpfs", (path, mounts.get(path))
    assert box.run(*BENIGN).passed


# --- part 4: the wire ----------------------------------------------------------------------------


def forged(value: str) -> str:
    """A snippet that speaks for its child: ``{"m": "pass"}``, then its first test's answer
    with ``value`` as the encoded value (text built in the child), then exits."""
    return (
        "import os, struct\n"
        "def _frame(text):\n"
        "    data = text.encode() if isinstance(text, str) else text\n"
        "    os.write(4, struct.pack('>I', len(data)) + data)\n"
        '_frame(\'{"m": "pass"}\')\n'
        f'_frame(\'{{"e": 0, "r": [{{"v": \' + {value} + \'}}]}}\')\n'
        "os._exit(0)\n"
    )


COLLIDING = "','.join('[\"i\",\"%x\"]' % (k * P) for k in range(1, 100001))"
HOSTILE_VALUES = {
    "deep JSON": "'[\"l\",' * 200000 + '1' + ']' * 200000",
    "deep encoding": "'[\"t\",' * 300 + '1' + ']' * 300",
    "colliding set": "'[\"s\",' + " + COLLIDING + " + ']'",
    "colliding dict keys": "'[\"d\",' + " + COLLIDING.replace("]'", "],0'") + " + ']'",
    "too many elements": "'[\"l\",' + ','.join(['0'] * 1100000) + ']'",
    "unhashable set element": '\'["s",["l"]]\'',
    "bad tag": "'[\"no such tag\"]'",
    "bad UTF-8": "'\"' + '\\udcff' + '\"'",
}


@pytest.mark.parametrize("what", sorted(HOSTILE_VALUES))
def test_hostile_frames_are_protocol_errors_and_the_suite_unusable(box, what):
    code = f"P = {P61}\n" + forged(HOSTILE_VALUES[what])
    if what == "bad UTF-8":
        code = code.replace("text.encode()", "text.encode('utf-8', 'surrogateescape')")
    checker = checker_of(box)
    requests = box._requests
    start = time.monotonic()
    r = cached_run(None, box, code, "", ["assert f() == 1", "assert 1"])
    took = time.monotonic() - start
    assert r.outcomes == (PROTOCOL_ERROR, PROTOCOL_ERROR) and r.unusable and not r.passed, r
    assert "corrupt reply from the child" in r.detail, r
    assert box._requests == requests + 2  # tried once more, then unusable
    assert took < 3 * TIMEOUT, took  # the zygote ended the suite at once; no hashing storm
    assert checker_of(box) == checker  # the same checker, still answering
    assert box.run(*BENIGN).passed


def test_an_oversized_frame_from_a_child_is_a_protocol_error(box):
    code = "import os\nos.write(4, b'\\x7f\\xff\\xff\\xff' + b'x' * 100)\nos._exit(0)\n"
    r = box.run(code, "", ["assert f() == 1"])
    assert r.outcomes == (PROTOCOL_ERROR,) and r.unusable, r
    assert "exceeds the" in r.detail
    assert box.run(*BENIGN).passed


def test_a_garbled_reply_to_the_caller_is_a_lost_sandbox(monkeypatch):
    # What the caller reads from the checker is bounded and parsed the same way.
    rfd, wfd = os.pipe()
    deep = b"[" * 20000 + b"]" * 20000  # within a pipe buffer: written before it is read
    for body in (deep, b"\xff\xfe", b"{" * 3):
        os.write(wfd, _wire._HEADER.pack(len(body)) + body)
        with pytest.raises(sandbox_module._ServerGone):
            sandbox_module._read_frame(rfd, time.monotonic() + 5)
    os.write(wfd, _wire._HEADER.pack(1 << 30))
    with pytest.raises(sandbox_module._ServerGone, match="exceeds"):
        sandbox_module._read_frame(rfd, time.monotonic() + 5)
    os.close(rfd)
    os.close(wfd)


def test_an_honest_value_over_the_element_cap_is_unsupported_not_a_protocol_error(box):
    code = "def f():\n    return [0] * 1_100_000\n"
    r = box.run(code, "", ["assert len(f()) == 1_100_000"])
    assert r.outcomes == ("error:UnsupportedValue",) and not r.unusable, r
    assert "more than 1048576 elements" in r.detail


def test_decoding_refuses_colliding_keys_quickly():
    values = [["i", format(k * P61, "x")] for k in range(1, 20001)]
    for encoded in (["s", *values], ["F", *values], ["d", *[x for v in values for x in (v, 0)]]):
        start = time.process_time()
        with pytest.raises(ValueError, match="of one hash"):
            _wire.decode(encoded)
        assert time.process_time() - start < 1.0
    few = [["i", format(k * P61, "x")] for k in range(1, 60)]
    assert len(_wire.decode(["s", *few])) == 59  # a few collisions are a set like any other
    assert _wire.decode(["s", 1, 2, 3]) == {1, 2, 3}


# --- a mutant whose suite only breaks the sandbox is not a distractor -----------------------------

BREAKER = '''domain = "arrays_lists"
query = "Add one to a small number; numbers above a hundred are reported on the side."
entry_point = "bump"
canonical = """
import os

def bump(x):
    if x > 100:
        os.write(4, b"\\\\xff\\\\xff\\\\xff\\\\xff")
    return x + 1
"""
tests = [
  "assert bump(1) == 2",
  "assert bump(5) == 6",
  "assert bump(100) == 101",
]
'''


def test_a_mutant_that_only_breaks_the_protocol_is_not_a_distractor(tmp_path):
    items = tmp_path / "items"
    (items / "arrays_lists").mkdir(parents=True)
    (items / "arrays_lists" / "bump.toml").write_text(BREAKER)
    loaded, problems = load_items(items)
    assert not problems and len(loaded) == 1
    with (
        SuiteRunner(Limits(timeout_s=TIMEOUT)) as runner,
        SuiteRunner(Limits(timeout_s=1.0)) as mutant_runner,
    ):
        result = build(loaded, runner, mutant_runner)
        distractors = [s for s in result.corpus.snippets if s.kind == "distractor"]
        assert result.unusable, "no mutant broke the protocol: the test proves nothing"
        for line in result.unusable:
            assert "bump.toml" in line and "is unusable" in line and "corrupt reply" in line
        for d in distractors:  # every distractor is a real kill
            r = runner.run(d.code, "", loaded[0].tests)
            assert not r.passed and not r.unusable, (d.diff, r)
            assert LOST not in d.outcomes and PROTOCOL_ERROR not in d.outcomes
        assert all(s.operator != "unusable" for s in result.survivors)


def test_verify_names_an_unusable_snippet_of_every_kind(tmp_path):
    from pytest_execretrieval.corpus.verify import Case, check
    from pytest_execretrieval.execution.sandbox import SuiteResult

    items = tmp_path / "items"
    (items / "arrays_lists").mkdir(parents=True)
    (items / "arrays_lists" / "bump.toml").write_text(BREAKER)
    item = load_items(items)[0][0]
    for outcome in (LOST, PROTOCOL_ERROR):
        lost = SuiteResult((outcome,) * 3, False, "sandbox lost during this suite (test)")
        for name, must_pass in (("canonical", True), ("distractor[x]", False)):
            problem = check(Case(name, item, item.canonical, must_pass), lost)
            assert problem is not None and f"{name} is unusable" in problem, problem
            assert "sandbox lost during this suite (test)" in problem
