"""Behaviour of the fork-server sandbox: outcomes, proven completion, limits and guards."""

from __future__ import annotations

import json
import marshal
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from processes import descendants

from pytest_execretrieval.execution import _wire
from pytest_execretrieval.execution.sandbox import (
    PROTOCOL_ERROR,
    Limits,
    Sandbox,
    SandboxError,
    SuiteResult,
    run_suite,
)

TIMEOUT = 1.0
F = "def f(x):\n    return 10 // x\n"
OK = "\ndef ok():\n    return 1\n"  # appended to code whose test is just "it ran": assert ok()


@pytest.fixture(scope="module")
def sb():
    with Sandbox(Limits(timeout_s=TIMEOUT)) as sandbox:
        yield sandbox


@pytest.fixture(scope="module")
def unguarded():
    """Audit hook off: exercises the supervisor's own checks against real child processes."""
    with Sandbox(Limits(timeout_s=TIMEOUT), _guard=False) as sandbox:
        yield sandbox


@pytest.fixture(scope="module")
def tight():
    limits = Limits(timeout_s=TIMEOUT, file_size_bytes=1024**2, output_bytes=100)
    with Sandbox(limits) as sandbox:
        yield sandbox


def assert_not_passed(result: SuiteResult) -> None:
    assert not result.passed, result
    assert result.detail or any(o != "pass" for o in result.outcomes), result


def attack(body: str, prelude: str = "import os") -> str:
    """Snippet code whose ``attack()`` runs ``body`` in the child (a test calls it; the checker
    only decides), and whose ``ok()`` returns 1."""
    indented = "\n".join("    " + line for line in body.splitlines())
    return f"{prelude}\ndef attack():\n{indented}\n    return 0\n" + OK


# --- basic outcomes ---------------------------------------------------------------------------


def test_all_pass(sb):
    r = sb.run(F, "", ["assert f(1) == 10", "assert f(5) == 2"])
    assert r == SuiteResult(("pass", "pass"), True, "", "")


def test_assertion_failure(sb):
    r = sb.run(F, "", ["assert f(1) == 10", "assert f(1) == 11"])
    assert r.outcomes == ("pass", "fail")
    assert not r.passed
    assert r.detail == ""


def test_exception_in_test(sb):
    r = sb.run(F, "", ["assert f(0) == 1", "assert f(2) == 5"])
    assert r.outcomes == ("error:ZeroDivisionError", "pass")
    assert not r.passed


def test_module_level_exception_marks_every_test(sb):
    r = sb.run("x = 1 / 0\n" + F, "", ["assert f(1) == 10", "assert True"])
    assert r.outcomes == ("error:ZeroDivisionError",) * 2
    assert not r.passed
    assert "ZeroDivisionError" in r.detail


def test_setup_runs_before_code_in_same_namespace(sb):
    r = sb.run("def g():\n    return sqrt(16)\n", "from math import sqrt", ["assert g() == 4"])
    assert r.passed, r


def test_each_suite_runs_its_own_setup_and_tests_past_the_kept_plans(sb):
    # The checker keeps its plans and the zygote its compiled setups and calls for the last
    # _PLANS_KEPT suites (a spare inherits them): suites sharing tests but not setup, more of them
    # than are kept, and each seen again after its entry was dropped, still run their own.
    code = "def f():\n    return K\n"
    for _ in range(2):
        for k in range(_wire._PLANS_KEPT + 6):
            for setup_k in (k, k + 1):
                r = sb.run(code, f"K = {setup_k}", [f"assert f() == {k}"])
                assert r.outcomes == ("pass" if setup_k == k else "fail",), (k, setup_k, r)


def test_syntax_errors(sb):
    assert sb.run("def f(:\n", "", ["assert f(1)"]).outcomes == ("error:SyntaxError",)
    r = sb.run(F, "", ["assert f(1) ==", "assert f(1) == 10"])
    assert r.outcomes == ("error:SyntaxError", "pass")


def test_statements_outside_the_test_grammar_are_errors_not_code(sb):
    tests = ["x = 2\nassert x == 2", "assert x == 1", "del x", "assert ok()"]
    r = sb.run("x = 1" + OK, "", tests)
    assert r.outcomes == ("error:GrammarError",) * 3 + ("pass",), r


def test_output_is_captured(sb):
    r = sb.run(
        "import sys\nprint('hello')\nprint('oops', file=sys.stderr)" + OK, "", ["assert ok()"]
    )
    assert r.passed
    assert "hello" in r.output and "oops" in r.output


def test_output_is_truncated_and_large_output_does_not_block(tight):
    r = tight.run("print('x' * 1_000_000)" + OK, "", ["assert ok()"])
    assert r.passed, r
    assert len(r.output.encode()) <= 100


@settings(max_examples=15, deadline=None)
@given(
    st.lists(
        st.sampled_from(["pass", "fail", "error:KeyError", "error:SystemExit"]),
        min_size=1,
        max_size=6,
    )
)
def test_outcomes_follow_tests(sb, kinds):
    source = {
        "pass": "assert g(1)",
        "fail": "assert g(0)",
        "error:KeyError": "g({})",
        "error:SystemExit": "g(None)",
    }
    code = (
        "def g(x):\n    if x is None:\n        raise SystemExit(0)\n"
        "    return x if x != {} else x[1]\n"
    )
    r = sb.run(code, "", [source[k] for k in kinds])
    assert r.outcomes == tuple(kinds)
    assert r.passed == all(k == "pass" for k in kinds)


# --- timeouts ---------------------------------------------------------------------------------


def test_timeout_marks_running_and_remaining_tests(sb):
    code = F + "def spin():\n    while True:\n        pass\n"
    start = time.monotonic()
    r = sb.run(code, "", ["assert f(1) == 10", "spin()", "assert f(1) == 10"])
    assert time.monotonic() - start < TIMEOUT + 2
    assert r.outcomes == ("pass", "timeout", "timeout")
    assert not r.passed
    assert r.detail.startswith(f"timed out after {TIMEOUT} s during test 2")


def test_timeout_ignores_sigterm_and_sigint(sb):
    code = (
        "import signal\n"
        "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "signal.signal(signal.SIGINT, signal.SIG_IGN)\n"
        "while True:\n    pass\n"
    )
    start = time.monotonic()
    r = sb.run(code + OK, "", ["assert ok()", "assert ok()"])
    assert time.monotonic() - start < TIMEOUT + 2
    assert r.outcomes == ("timeout", "timeout")
    assert "setup/module code" in r.detail
    # the server is still healthy afterwards
    assert sb.run(F, "", ["assert f(1) == 10"]).passed


# --- early exits: exit status never means pass ------------------------------------------------


@pytest.mark.parametrize(
    ("code", "tests", "outcomes"),
    [
        (
            "import sys\ndef f():\n    sys.exit(0)" + OK,
            ["f()", "assert ok()"],
            ("error:SystemExit", "pass"),
        ),
        ("import sys\nsys.exit(0)" + OK, ["assert ok()"] * 2, ("error:SystemExit",) * 2),
        ("def f():\n    raise SystemExit", ["f()"], ("error:SystemExit",)),
        ("def f():\n    raise KeyboardInterrupt", ["f()"], ("error:KeyboardInterrupt",)),
        ("def f():\n    raise GeneratorExit", ["f()"], ("error:GeneratorExit",)),
    ],
)
def test_exit_exceptions_are_errors(sb, code, tests, outcomes):
    r = sb.run(code, "", tests)
    assert r.outcomes == outcomes
    assert not r.passed


def test_os_exit_mid_suite(sb):
    r = sb.run(attack("os._exit(0)"), "", ["assert ok()", "attack()", "assert ok()"])
    assert r.outcomes == ("pass", "error:EarlyExit", "error:EarlyExit")
    assert not r.passed
    assert "exited early (status 0) after 1 of 3 tests" in r.detail


def test_os_exit_at_module_level(sb):
    r = sb.run("import os\nos._exit(0)" + OK, "", ["assert ok()"])
    assert r.outcomes == ("error:EarlyExit",)
    assert not r.passed


def test_os_exit_after_last_test_is_not_a_pass(sb):
    r = sb.run(attack("import atexit\nos._exit(0)"), "", ["assert ok()", "attack()"])
    assert_not_passed(r)


def test_crash_by_signal(sb):
    code = attack("os.kill(os.getpid(), signal.SIGSEGV)", "import os, signal")
    r = sb.run(code, "", ["assert ok()", "attack()"])
    assert r.outcomes == ("pass", "error:EarlyExit")
    assert "SIGSEGV" in r.detail


def test_closing_fd_1_is_contained(sb):
    r = sb.run("import os\nos.close(1)\ndef f():\n    print('x')\n    return 1", "", ["f()"])
    assert r.outcomes == ("error:OSError",)
    assert not r.passed


def test_closing_sys_stdout(sb):
    r = sb.run("import sys\nsys.stdout.close()" + OK, "", ["assert ok()"])
    assert r.passed, r  # the runner survives a closed stdout and still proves completion
    r = sb.run("import sys\nsys.stdout.close()\ndef f():\n    print('x')", "", ["f()"])
    assert r.outcomes == ("error:ValueError",)


@pytest.mark.parametrize("where", ["module", "test"])
def test_closing_the_result_fd(sb, where):
    close = "import os\nos.closerange(3, 1024)\n"
    if where == "module":
        r = sb.run(close + OK, "", ["assert ok()", "assert ok()"])
    else:
        r = sb.run(attack("os.closerange(3, 1024)"), "", ["assert ok()", "attack()", "assert ok()"])
    assert_not_passed(r)
    assert "error:EarlyExit" in r.outcomes


def test_forged_frames_on_the_reply_channel_do_not_pass(sb):
    frames = '{"p": true}', '{"d": 1}'
    code = attack(
        "import json, struct\n"
        f"for text in {list(frames)!r}:\n"
        "    os.write(4, struct.pack('>I', len(text)) + text.encode())\n"
        "os._exit(0)"
    )
    r = sb.run(code, "", ["attack()", "assert attack() == 0"])
    assert_not_passed(r)


def test_flooding_the_reply_channel_is_contained(sb):
    code = attack("os.write(4, b'\\xff' * 1_000_000)")
    r = sb.run(code, "", ["assert ok()", "attack()", "assert ok()"])
    assert_not_passed(r)
    # A broken protocol: nothing the child said counts, not even the first test's pass.
    assert r.outcomes == (PROTOCOL_ERROR,) * 3 and r.unusable, r
    assert "corrupt reply from the child (frame of" in r.detail, r
    assert sb.run(F, "", ["assert f(1) == 10"]).passed  # the sandbox is fine


# --- child processes --------------------------------------------------------------------------


def test_fork_is_blocked(sb, unguarded):
    r = sb.run("import os\ndef f():\n    return os.fork()", "", ["assert f() >= 0"])
    assert r.outcomes == ("error:SandboxViolation",)
    assert "blocked os.fork" in r.detail
    r = unguarded.run("import os\ndef f():\n    return os.fork()", "", ["assert f() >= 0"])
    assert r.outcomes == ("error:PermissionError",), r  # seccomp, without the audit hook


@pytest.mark.parametrize(
    "stmt",
    [
        "import subprocess\nsubprocess.run(['touch', MARK])",
        "os.system('touch ' + MARK)",
        "os.popen('touch ' + MARK).read()",
        "os.posix_spawn('/usr/bin/touch', ['touch', MARK], {})",
        "os.execv('/usr/bin/touch', ['touch', MARK])",
        "import pty\npty.fork()",
        "import multiprocessing\nmultiprocessing.Process(target=print).start()",
        "import multiprocessing as mp\nmp.get_context('spawn').Process(target=print).start()",
        "import subprocess\nsubprocess._fork_exec(*[None] * 23)",
        "import asyncio\nasyncio.run(asyncio.create_subprocess_exec('touch', MARK))",
        "os.kill(os.getppid(), 9)",
        "os.killpg(os.getpgid(os.getppid()), 9)",
        "import resource\nresource.setrlimit(resource.RLIMIT_AS, (-1, -1))",
    ],
)
def test_process_creation_and_signals_are_blocked(sb, unguarded, tmp_path, stmt):
    mark = tmp_path / "mark"
    code = attack(stmt, f"import os\nMARK = {str(mark)!r}")
    r = sb.run(code, "", ["attack()", "assert ok()"])  # audit hook + kernel layers
    assert r.outcomes[0] != "pass" and not r.passed, r
    # The kernel layers alone: os.system() just returns -1. (The server is pid 1 of the PID
    # namespace and its process group is outside it: getpgid() says 0, killpg(0) is suicide.)
    unguarded.run(code, "", ["attack()", "assert ok()"])
    assert not mark.exists()
    for sandbox in (sb, unguarded):
        assert sandbox.run(F, "", ["assert f(1) == 10"]).passed  # sandbox alive


def test_ctypes_fails_as_an_import_error(sb):
    stmt = "import ctypes; ctypes.CDLL(None).fork()"
    code = attack(f"try:\n    {stmt}\nexcept ImportError:\n    pass\nelse:\n    1 / 0")
    r = sb.run(code, "", ["attack()"])
    assert r.passed, r


@pytest.mark.parametrize(
    "stmt",
    [
        "import _posixsubprocess\n_posixsubprocess.fork_exec(*[None] * 23)",
        "from _posixsubprocess import fork_exec\nfork_exec()",
        "import sys, subprocess; del sys.modules['subprocess']; import subprocess\n"
        "subprocess._fork_exec()",
    ],
)
def test_unaudited_fork_exec_is_a_blocked_stand_in(sb, stmt):
    r = sb.run(attack(stmt), "", ["attack()"])
    assert r.outcomes == ("error:SandboxViolation",), r
    assert "blocked _posixsubprocess.fork_exec" in r.detail


def test_each_child_has_its_own_random_state(sb):
    code = "import random\nprint(random.random())"
    first, second = (sb.run(code, "", ["attack()"]).output for _ in range(2))
    assert first != second


def test_snippets_compile_like_a_fresh_interpreter(sb):
    # No `from __future__ import annotations` leaks in from the runner: annotations evaluate.
    r = sb.run("def f(x: Undefined):\n    return x", "", ["assert f(1) == 1"])
    assert r.outcomes == ("error:NameError",), r


def test_one_suite_compiled_once_serves_many_snippets(sb):
    tests = ["assert f(1) == 10", "assert f(", "assert f(2) == 20"]
    for code, outcomes in [
        ("def f(x):\n    return 10 * x", ("pass", "error:SyntaxError", "pass")),
        ("def f(x):\n    return 10", ("pass", "error:SyntaxError", "fail")),
        ("def f(x):\n    return 10 * x", ("pass", "error:SyntaxError", "pass")),
    ]:
        assert sb.run(code, "import math", tests).outcomes == outcomes
    assert sb.run("", "import math\n)", tests).outcomes == ("error:SyntaxError",) * 3


def test_common_libraries_still_work(sb):
    code = (
        "import asyncio, uuid, sqlite3\n"
        "from concurrent.futures import ThreadPoolExecutor\n"
        "async def g():\n    return 3\n"
        "def run_g():\n    return asyncio.run(g())\n"
        "def ids():\n    return {str(uuid.uuid4()), str(uuid.uuid4())}\n"
        "def query():\n    return sqlite3.connect(':memory:').execute('select 2').fetchone()\n"
        "def pool():\n"
        "    with ThreadPoolExecutor(2) as ex:\n        return list(ex.map(abs, [-1, 2]))\n"
    )
    tests = [
        "assert run_g() == 3",
        "assert len(ids()) == 2",
        "assert query() == (2,)",
        "assert pool() == [1, 2]",
    ]
    r = sb.run(code, "", tests)
    assert r == SuiteResult(("pass",) * 4, True, "", ""), r


@pytest.mark.parametrize("setsid", [False, True])
def test_no_process_survives_its_suite(unguarded, tmp_path, setsid):
    # Without the audit hook, seccomp refuses the fork; the PID namespace would kill anything
    # that got through when the suite ends.
    mark = tmp_path / "alive"
    code = attack(
        "if os.fork() == 0:\n" + ("    os.setsid()\n" if setsid else "") + "    time.sleep(0.5)\n"
        f"    open({str(mark)!r}, 'w').close()\n"
        "    os._exit(0)",
        "import os, time",
    )
    r = unguarded.run(code, "", ["assert attack() == 0"])
    assert r.outcomes == ("error:PermissionError",), r
    time.sleep(0.8)
    assert not mark.exists()


# --- the raises helper ------------------------------------------------------------------------


def test_raises_semantics(sb):
    code = (
        "import sys\nparse = int\nget = {}.__getitem__\nbye = sys.exit\n"
        "def ki():\n    raise KeyboardInterrupt\n"
        "def g(a, *, b):\n    if a != b:\n        raise ValueError\n"
    )
    tests = [
        "assert raises(ValueError, parse, 'x')",
        "assert not raises(ValueError, parse, '1')",
        "assert not raises(KeyError, parse, 'x')",
        "assert raises(LookupError, get, 1)",
        "assert raises((KeyError, ValueError), parse, 'x')",
        "assert raises(SystemExit, bye, 3)",
        "assert not raises(ValueError, bye, 3)",
        "assert not raises(ValueError, ki)",
        "assert raises(ValueError, g, 1, b=2)",
        "assert not raises(ValueError, g, 1, b=1)",
    ]
    r = sb.run(code, "", tests)
    assert r.outcomes == ("pass",) * len(tests), r
    # Not a builtin exception class, not a function name: outside the grammar.
    bad = ["assert not raises(ValueError, 'not callable')", "assert raises('x', parse, 'x')"]
    assert sb.run(code, "", bad).outcomes == ("error:GrammarError",) * 2


def test_snippet_cannot_redefine_raises(sb):
    code = "def raises(*args, **kwargs):\n    return True\ndef f(x):\n    return x\n"
    r = sb.run(code, "", ["assert raises(ValueError, f, 1)"])
    assert r.outcomes == ("fail",)


# --- resource limits --------------------------------------------------------------------------


def test_memory_limit(sb):
    r = sb.run("def big():\n    return len(bytearray(4 * 1024**3))\n", "", ["assert big() > 0"])
    assert r.outcomes == ("error:MemoryError",)
    assert not r.passed


def test_file_size_limit(tight):
    code = attack("with open('big', 'wb') as fh:\n    fh.write(b'x' * 2 * 1024**2)")
    r = tight.run(code, "", ["attack()"])
    assert r.outcomes == ("error:OSError",)


# --- filesystem -------------------------------------------------------------------------------


def test_writes_inside_the_temp_dir_work(sb):
    tests = [
        "open('a.txt', 'w').write('hi')\nassert open('a.txt').read() == 'hi'",
        "import os\nos.mkdir('d')\nos.rename('a.txt', 'd/b.txt')\nos.remove('d/b.txt')",
        "import shutil, tempfile\nd = tempfile.mkdtemp()\nshutil.rmtree(d)",
        "import os\nwith open(os.devnull, 'w') as fh:\n    fh.write('x')",
    ]
    r = sb.run(
        "".join(attack(t).replace("attack", f"t{i}") for i, t in enumerate(tests)),
        "",
        [f"t{i}()" for i in range(len(tests))],
    )
    assert r.passed, r


@pytest.fixture
def outside_dir():
    """A directory outside /tmp (which is the scratch tmpfs inside the sandbox)."""
    path = Path(__file__).resolve().parent / f".x_outside_{uuid.uuid4().hex}"
    path.mkdir()
    yield path
    import shutil

    shutil.rmtree(path)


def test_writes_outside_the_temp_dir_are_blocked(sb, unguarded, outside_dir):
    tmp_path = outside_dir
    outside = str(outside_dir / "x_outside")
    home = os.path.expanduser(f"~/x_outside_{uuid.uuid4().hex}")
    victim = tmp_path / "victim"
    victim.write_text("keep")
    tests = [
        f"open({outside!r}, 'w')",
        f"import os\nopen(os.path.expanduser({'~/' + os.path.basename(home)!r}), 'w')",
        f"import os\nos.open({outside!r}, os.O_WRONLY | os.O_CREAT)",
        f"open({str(victim)!r}, 'a')",
        f"import os\nos.remove({str(victim)!r})",
        f"import os\nos.rename({str(victim)!r}, 'stolen')",
        f"import os\nos.truncate({str(victim)!r}, 0)",
        f"import os\nos.chmod({str(victim)!r}, 0)",
        f"import os\nos.symlink({str(tmp_path)!r}, 'lnk')\nopen('lnk/new', 'w')",
        f"import shutil\nshutil.copyfile('/etc/hostname', {outside!r})",
        f"import sqlite3\nsqlite3.connect({outside!r})",
    ]
    code = "".join(attack(t).replace("attack", f"t{i}") for i, t in enumerate(tests))
    names = [f"t{i}()" for i in range(len(tests))]
    for sandbox in (sb, unguarded):  # audit hook + kernel layers, the kernel layers alone
        r = sandbox.run(code, "", names)
        assert all(o.startswith("error:") for o in r.outcomes), r
    assert not os.path.exists(outside)
    assert not os.path.exists(home)
    assert not (tmp_path / "new").exists()
    assert victim.read_text() == "keep"
    assert (victim.stat().st_mode & 0o777) != 0


def test_other_processes_proc_entries_are_unreadable(sb, unguarded):
    tests = [
        f"open('/proc/{os.getpid()}/environ', 'rb').read()",
        "open(f'/proc/{os.getppid()}/environ', 'rb').read()",
        "open('/proc/1/environ', 'rb').read()",
    ]
    code = "".join(attack(t).replace("attack", f"t{i}") for i, t in enumerate(tests))
    for sandbox in (sb, unguarded):
        r = sandbox.run(code, "", [f"t{i}()" for i in range(len(tests))])
        assert all(o.startswith("error:") for o in r.outcomes), r


def test_temp_dir_is_fresh_for_every_suite(sb):
    code = (
        "import os\nassert os.listdir('.') == []\nos.makedirs('a/b/c')\nopen('junk', 'w')\n"
        "def here():\n    return sorted(os.listdir('.'))\n"
    )
    for _ in range(3):
        r = sb.run(code, "", ["assert here() == ['a', 'junk']"])
        assert r.passed, r


def test_tempfile_uses_the_temp_dir(sb):
    code = "import os, tempfile\ndef same():\n    return tempfile.gettempdir() == os.getcwd()\n"
    r = sb.run(code, "", ["assert same()"])
    assert r.passed, r


def test_modules_the_server_does_not_preload_import_in_the_child(sb):
    from pytest_execretrieval.execution._zygote import PRELOAD

    names = ["dataclasses", "decimal", "hashlib", "inspect", "shutil", "statistics", "zlib"]
    assert not set(names) & set(PRELOAD)
    code = (
        f"import {', '.join(names)}\ndef f(): return statistics.mean([1, 2, 6])\n"
        "def h(): return hashlib.sha256(b'').hexdigest()\n"
    )
    r = sb.run(code, "", ["assert f() == 3", "assert len(h()) == 64"])
    assert r.passed, r


def test_children_inherit_no_module_that_registers_fork_handlers(sb):
    # threading's and random's at-fork handlers would run in every child (see
    # _confine.seccomp_programs): the zygote must not have imported them, nor what pulls them in.
    code = (
        "import sys\n"
        "def loaded():\n"
        "    return sorted({'threading', 'random', 'subprocess', 'pyseccomp'} & set(sys.modules))"
    )
    r = sb.run(code, "", ["assert loaded() == []"])
    assert r.passed, r
    r = sb.run(
        "import threading, random\ndef draw():\n    return random.random()\n",
        "",
        ["assert draw() < 1.0"],
    )
    assert r.passed, r


def test_children_inherit_no_module_the_sandbox_needs_not(sb):
    # Every module the checker imports before it forks the zygote is in every child's memory,
    # and each fork and exit pays for its pages: typing and dataclasses (with inspect) came with
    # our annotations, socket with _confine, pathlib and importlib.util with the .pth files of
    # site-packages. A snippet still imports them, and still sees what site provides.
    heavy = {"typing", "dataclasses", "inspect", "socket", "pathlib", "importlib.util"}
    code = (
        f"import sys\ndef loaded():\n    return sorted(set({sorted(heavy)!r}) & set(sys.modules))"
    )
    r = sb.run(code, "", ["assert loaded() == []"])
    assert r.passed, r
    code = (
        "import sys, site, typing, dataclasses, socket, pathlib\n"
        "def seen():\n"
        "    names = ('exit', 'quit', 'help', 'copyright', 'credits', 'license')\n"
        "    dirs = [d for d in site.getsitepackages() if d in sys.path]\n"
        "    return [n for n in names if n in dir(__builtins__)], len(dirs) > 0\n"
    )
    names = ["exit", "quit", "help", "copyright", "credits", "license"]
    r = sb.run(code, "", [f"assert seen() == ({names!r}, True)"])
    assert r.passed, r


def _rss_anon_kb(pid: int) -> int:
    with open(f"/proc/{pid}/status") as fh:
        return int(next(ln for ln in fh if ln.startswith("RssAnon:")).split()[1])


def test_zygote_heap_is_no_larger_than_its_imports():
    # Each fork copies, and each child's exit tears down, the page tables of the zygote's heap.
    # Started as a script, the checker compiled _sandbox_child from source and the zygote kept
    # about 6 MB of the compiler's freed memory; pyseccomp's imports added more.
    from pytest_execretrieval.execution import _sandbox_child

    here = os.path.dirname(_sandbox_child.__file__)
    script = (
        f"import sys; sys.path.insert(0, {here!r}); import _sandbox_child, _confine, _zygote\n"
        "for m in _zygote.PRELOAD: __import__(m)\n"
        "print(next(ln for ln in open('/proc/self/status') if ln.startswith('RssAnon:')))"
    )
    command = [sys.executable, "-I", "-c", script]
    for _ in range(2):  # the first run may compile from source (and write the cached bytecode)
        reference = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    reference = reference.split()[1]
    with Sandbox() as sandbox:
        assert sandbox.run(OK, "", ["assert ok()"]).passed
        sizes = [_rss_anon_kb(pid) for pid in descendants(sandbox.server_pid)]
    assert sizes
    assert max(sizes) < int(reference) + 3 * 1024, (sizes, reference)


# --- environment and stdin --------------------------------------------------------------------


def test_environment_is_scrubbed(monkeypatch):
    secret = "secret-" + uuid.uuid4().hex
    for name in ("GEMINI_API_KEY", "OPENAI_API_KEY", "GITHUB_TOKEN", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(name, secret)
    tests = [
        "assert not has('GEMINI_API_KEY')",
        "assert not tokens()",
        f"assert not leaks({secret!r})",
    ]
    code = (
        "import os\n"
        "def has(name):\n    return name in os.environ\n"
        "def tokens():\n"
        "    return [k for k in os.environ if 'TOKEN' in k or k.startswith('AWS_')]\n"
        "def leaks(s):\n    return [k for k, v in os.environb.items() if s.encode() in k + v]\n"
    )
    with Sandbox(Limits(timeout_s=TIMEOUT)) as sandbox:
        r = sandbox.run(code, "", tests)
    assert r.passed, r


def test_stdin_is_empty(sb):
    code = (
        "import os, sys\ndef read():\n    return sys.stdin.read()\nask = input\n"
        "def raw():\n    return os.read(0, 10)\n"
    )
    tests = ["assert read() == ''", "assert raises(EOFError, ask)", "assert raw() == b''"]
    assert sb.run(code, "", tests).passed


# --- server lifecycle -------------------------------------------------------------------------


def test_server_restarts_after_being_killed():
    with Sandbox(Limits(timeout_s=TIMEOUT)) as sandbox:
        assert sandbox.run(F, "", ["assert f(1) == 10"]).passed
        old = sandbox.server_pid
        os.kill(old, signal.SIGKILL)
        time.sleep(0.05)
        assert sandbox.run(F, "", ["assert f(1) == 10"]).passed
        assert sandbox.server_pid not in (None, old)


def test_server_exits_when_closed():
    sandbox = Sandbox(Limits(timeout_s=TIMEOUT))
    pid = sandbox.server_pid
    sandbox.close()
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    with pytest.raises(SandboxError, match="closed"):
        sandbox.run(F, "", ["assert f(1)"])


def test_run_suite_reuses_a_shared_sandbox():
    limits = Limits(timeout_s=TIMEOUT)
    assert run_suite(F, "", ["assert f(1) == 10"], limits).passed
    assert run_suite(F, "", ["assert f(1) == 11"], limits).outcomes == ("fail",)


def test_input_validation(sb):
    with pytest.raises(ValueError, match="empty"):
        sb.run(F, "", [])
    with pytest.raises(TypeError):
        sb.run(F, "", "assert 1")
    with pytest.raises(ValueError, match="timeout_s"):
        Limits(timeout_s=0)


# --- SuiteResult JSON -------------------------------------------------------------------------

outcome = st.one_of(
    st.sampled_from(["pass", "fail", "timeout"]),
    st.text(min_size=1).map(lambda s: "error:" + s),
)


@given(st.lists(outcome).map(tuple), st.booleans(), st.text(), st.text(), st.booleans())
def test_suite_result_json_round_trip(outcomes, passed, detail, output, known):
    returned = tuple(o if o != "pass" else "" for o in outcomes) if known else ()
    result = SuiteResult(outcomes, passed, detail, output, returned)
    data = result.to_json()
    assert ("returned" in data) == bool(returned)  # unknown: the JSON of before it existed
    assert SuiteResult.from_json(json.loads(json.dumps(data))) == result


@pytest.mark.parametrize(
    "bad",
    [
        None,
        [],
        {"outcomes": ["pass"]},
        {"outcomes": "pass", "passed": True, "detail": "", "output": ""},
        {"outcomes": ["pass"], "passed": 1, "detail": "", "output": ""},
        {"outcomes": ["fail"], "passed": False, "detail": "", "output": "", "returned": "x"},
        {"outcomes": ["fail"], "passed": False, "detail": "", "output": "", "returned": ["", ""]},
    ],
)
def test_suite_result_from_json_rejects_garbage(bad):
    with pytest.raises((TypeError, ValueError)):
        SuiteResult.from_json(bad)


def test_sandbox_is_not_usable_across_fork(sb):
    pid = os.fork()
    if pid == 0:
        try:
            sb.run(F, "", ["assert f(1)"])
        except SandboxError:
            os._exit(0)
        except BaseException:  # noqa: BLE001 - any other failure is exit status 2
            os._exit(2)
        os._exit(1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


def test_patching_builtins_or_main_cannot_fake_a_pass(sb):
    code = (
        "import builtins, __main__\n"
        "builtins.AssertionError = ZeroDivisionError\n"
        "builtins.exec = lambda *a, **k: None\n"
        "builtins.isinstance = lambda *a: True\n"
        "__main__._error = lambda exc: 'pass'\n"
        "def f():\n    return 1\nparse = int\n"
        "def div(a, b):\n    return a / b\n"
    )
    r = sb.run(code, "", ["assert f() == 2", "assert raises(KeyError, parse, 'x')", "div(1, 0)"])
    assert r.outcomes == ("fail", "fail", "error:ZeroDivisionError")


def test_candidate_module_is_importable(sb):
    code = (
        "import dataclasses, pickle\n@dataclasses.dataclass\nclass P:\n    x: 'int'\n"
        "def round_trip():\n    return pickle.loads(pickle.dumps(P(1))) == P(1)\n"
        "def name():\n    return __name__\n"
    )
    tests = ["assert round_trip()", "assert name() != '__main__'"]
    assert sb.run(code, "", tests).passed


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_server_dies_with_its_parent():
    script = (
        "import os, signal, sys\n"
        "from pytest_execretrieval.execution.sandbox import Sandbox\n"
        "sb = Sandbox()\n"
        "print(sb.server_pid, flush=True)\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    root = Path(__file__).resolve().parents[1]
    proc = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=root,
        check=False,
    )
    server = int(proc.stdout.split()[0])
    deadline = time.monotonic() + 10
    while _alive(server) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(server)


# --- suites submitted ahead -----------------------------------------------------------------


def test_a_submitted_suite_is_what_the_next_run_of_it_returns(sb):
    requests = sb._requests
    sb.submit(F, "", ["assert f(2) == 5", "assert f(0) == 1"])
    result = sb.run(F, "", ["assert f(2) == 5", "assert f(0) == 1"])
    assert result.outcomes == ("pass", "error:ZeroDivisionError")
    assert sb._requests == requests + 1  # it ran once, ahead


def test_a_run_of_another_suite_drops_the_submitted_one(sb):
    sb.submit(F, "", ["assert f(1) == 10"])
    assert sb.run(F, "", ["assert f(1) == 11"]).outcomes == ("fail",)
    assert sb._pending is None
    assert sb.run(F, "", ["assert f(1) == 10"]).outcomes == ("pass",)


def test_a_reply_taken_after_its_deadline_still_counts(monkeypatch):
    from pytest_execretrieval.execution import sandbox as sandbox_module

    monkeypatch.setattr(sandbox_module, "_REPLY_GRACE_S", 0.0)
    with Sandbox(Limits(timeout_s=0.5)) as sandbox:
        sandbox.submit(F, "", ["assert f(1) == 10"])
        time.sleep(0.8)  # the caller's own work outlasts the suite's deadline
        result = sandbox.run(F, "", ["assert f(1) == 10"])
    assert result.outcomes == ("pass",), result.detail


def test_closing_kills_a_submitted_suite_instead_of_waiting_for_it():
    sandbox = Sandbox(Limits(timeout_s=60))
    sandbox.submit("while True:\n    pass", "", ["assert 1"])
    proc = sandbox._proc
    sandbox.close()
    assert proc.returncode == -signal.SIGKILL


def test_a_runner_starts_each_suite_while_its_caller_takes_the_one_before():
    from pytest_execretrieval.execution.runner import SuiteRunner

    suites = [(F, "", [f"assert f({x}) == {10 // x}"]) for x in (1, 2, 3)]
    with SuiteRunner(Limits(timeout_s=TIMEOUT)) as runner:
        results = runner.imap(suites)
        assert next(results).passed
        sandbox = runner._sandbox("python")
        assert sandbox._pending is not None and sandbox._pending.suite[2] == ("assert f(2) == 5",)
        assert [r.passed for r in results] == [True, True]
        assert runner.executed == 3


def test_a_cached_suite_is_not_started_ahead_but_answered_from_the_cache(tmp_path):
    from pytest_execretrieval.execution.runner import SuiteRunner

    suites = [(F, "", [f"assert f({x}) == {10 // x}"]) for x in (1, 2)]
    with SuiteRunner(Limits(timeout_s=TIMEOUT), cache_dir=tmp_path) as runner:
        first = runner.run_many(suites)
        assert runner.prefetch(*suites[1]) == first[1]
        assert runner._sandbox("python")._pending is None
        assert runner.run_many(suites) == first
        assert runner.executed == 2


def test_interrupted_request_does_not_desynchronise_replies(monkeypatch):
    from pytest_execretrieval.execution import sandbox as sandbox_module

    with Sandbox(Limits(timeout_s=TIMEOUT)) as sandbox:
        real = sandbox_module._read_frame

        def interrupted(fd, deadline, limit):
            raise KeyboardInterrupt

        monkeypatch.setattr(sandbox_module, "_read_frame", interrupted)
        with pytest.raises(KeyboardInterrupt):
            sandbox.run(F, "", ["assert f(1) == 10"])
        monkeypatch.setattr(sandbox_module, "_read_frame", real)
        assert sandbox.run(F, "", ["assert f(1) == 11"]).outcomes == ("fail",)


def test_stopping_the_sandbox_mid_run_kills_every_process_of_it(monkeypatch):
    from pytest_execretrieval.execution import sandbox as sandbox_module

    seen: list[int] = []
    with Sandbox(Limits(timeout_s=60)) as sandbox:
        checker = sandbox.server_pid

        def interrupted(fd, deadline, limit):
            stop = time.monotonic() + 10
            while time.monotonic() < stop and len(seen) < 4:  # zygote, its init, the child
                seen[:] = [checker, *descendants(checker)]
                time.sleep(0.05)
            raise KeyboardInterrupt

        monkeypatch.setattr(sandbox_module, "_read_frame", interrupted)
        with pytest.raises(KeyboardInterrupt):
            sandbox.run("while True:\n    pass", "", ["assert 1"])
    assert len(seen) >= 4, seen
    stop = time.monotonic() + 5
    while any(map(_alive, seen)) and time.monotonic() < stop:
        time.sleep(0.05)
    assert not any(map(_alive, seen))


def test_a_suite_never_sees_what_an_earlier_snippet_did_to_its_namespaces(sb):
    # The zygote makes the snippet's builtins and module once; each child changes only its own
    # copy of them, by fork.
    spoiler = (
        "import builtins\nbuiltins.len = lambda x: 99\nbuiltins.MARK = 1\nSEEN = 1\n"
        "def f():\n    return 0\n"
    )
    assert sb.run(spoiler, "", ["assert f() == 0"]).passed
    probe = "def f():\n    return [len([1]), 'MARK' in dir(__builtins__), 'SEEN' in globals()]\n"
    assert sb.run(probe, "", ["assert f() == [1, False, False]"]).passed


def test_the_checker_compiles_and_the_child_loads_the_same_code():
    from pytest_execretrieval.execution import _child

    source = "def f(x):\n    return [y * 2 for y in range(x)]\n"
    loaded = marshal.loads(bytes.fromhex(_child.marshalled(source)))
    assert loaded == _child.snippet_code(source)
    assert loaded.co_filename == "<candidate>"
    assert _child.marshalled("def f(:\n") is None  # the child compiles it and reports the error
    assert _child.marshalled("x = 1\0") is None


def test_a_snippet_the_checker_cannot_compile_gets_the_same_outcome(sb):
    r = sb.run("def f(:\n    return 1\n", "", ["assert f() == 1"])
    assert r.outcomes == ("error:SyntaxError",)
