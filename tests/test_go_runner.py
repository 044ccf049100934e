"""The Go runner: each candidate compiled with the driver and run confined (real toolchain)."""

from __future__ import annotations

import os
import shutil

import pytest

from pytest_execretrieval.execution.sandbox import Limits
from pytest_execretrieval.languages.go import _runner
from pytest_execretrieval.languages.go.runner import GoSandbox, find_go

pytestmark = pytest.mark.skipif(shutil.which("go") is None, reason="no Go toolchain")

ADD = """
import "strings"

func add_binary(a string, b string) string {
	i, j, carry := len(a)-1, len(b)-1, 0
	out := []byte{}
	for i >= 0 || j >= 0 || carry > 0 {
		total := carry
		if i >= 0 {
			total += int(a[i] - '0')
			i--
		}
		if j >= 0 {
			total += int(b[j] - '0')
			j--
		}
		out = append(out, byte('0'+total%2))
		carry = total / 2
	}
	for l, r := 0, len(out)-1; l < r; l, r = l+1, r-1 {
		out[l], out[r] = out[r], out[l]
	}
	if s := strings.TrimLeft(string(out), "0"); s != "" {
		return s
	}
	return "0"
}
"""
ADD_TESTS = [
    'assert add_binary("11", "1") == "100"',
    'assert add_binary("1010", "1011") == "10101"',
    'assert add_binary("", "") == "0"',
    'assert not raises(panic, add_binary, "1", "1")',
]


@pytest.fixture(scope="module")
def sandbox():
    with GoSandbox(Limits(timeout_s=5, memory_bytes=512 << 20)) as box:
        yield box


def test_a_canonical_passes_and_a_mutant_fails(sandbox):
    assert sandbox.run(ADD, "", ADD_TESTS).passed
    mutant = sandbox.run(ADD.replace("carry > 0", "carry > 1"), "", ADD_TESTS)
    assert mutant.outcomes[:2] == ("fail", "fail") and not mutant.passed


def test_the_suite_is_fully_confined(sandbox):
    sandbox.run(ADD, "", ADD_TESTS[:1])
    assert sandbox.isolation["missing"] == {} or os.geteuid() != 0


def test_code_that_does_not_compile_is_a_compile_error_with_the_messages(sandbox):
    result = sandbox.run(ADD.replace("total += int", "total += x"), "", ADD_TESTS)
    assert set(result.outcomes) == {_runner.COMPILE_ERROR}
    assert "undefined: x" in result.output
    missing = sandbox.run("func other() int { return 1 }", "", ADD_TESTS[:1])
    assert missing.outcomes == (_runner.COMPILE_ERROR,)  # the language's missing_entry_point


@pytest.mark.parametrize(
    ("code", "test"),
    [
        ('func f() (int, string) { return 1, "a" }', 'assert f() == (1, "a")'),
        ("func f() [2]int { return [2]int{1, 2} }", "assert f() == (1, 2)"),
        ("func f() []int { var s []int; return s }", "assert f() == []"),
        ("func f() map[int]struct{} { return map[int]struct{}{3: {}} }", "assert f() == {3}"),
        ('func f() map[string]int { return map[string]int{"a": 1} }', 'assert f() == {"a": 1}'),
        ("func f() *int { return nil }", "assert f() is None"),
        ("func f() float64 { return 0.1 + 0.2 }", "assert math.isclose(f(), 0.3)"),
        (
            'import "math/big"\n\nfunc f() *big.Int { n, _ := new(big.Int).SetString('
            '"123456789012345678901234567890", 10); return n }',
            "assert f() == 123456789012345678901234567890",
        ),
        (
            'func f(xs [][]int, m map[string]int) int { return len(xs) + m["k"] }',
            'assert f([[1], [2, 3]], {"k": 5}) == 7',
        ),  # fmt: skip
    ],
)
def test_go_values_reach_the_checker_as_the_codec_says(sandbox, code, test):
    result = sandbox.run(code, "", [test])
    assert result.outcomes == ("pass",), (result.returned, result.output)


def test_panics_and_runtime_errors_are_told_apart(sandbox):
    code = (
        'func f(xs []int, i int) int {\n\tif i < 0 {\n\t\tpanic("negative")\n\t}\n\treturn xs[i]\n}'
    )
    tests = [
        "assert raises(panic, f, [1], -1)",
        "assert not raises(runtime_error, f, [1], -1)",
        "assert raises(runtime_error, f, [1], 5)",
        "assert not raises(panic, f, [1], 5)",  # a crash is no deliberate panic
        "assert f([1], 5) == 1",
        "assert raises(panic, g)",
        "assert g() == 1",
    ]
    code += "\n\nfunc g() int {\n\tpanic(nil)\n}"  # recover() gives nil: still a panic
    result = sandbox.run(code, "", tests)
    assert result.outcomes == ("pass",) * 4 + ("error:runtime_error", "pass", "error:panic")


def test_a_loop_times_out_and_the_next_suite_is_served(sandbox):
    result = GoSandbox(Limits(timeout_s=1)).run("func f() int { for {} }", "", ["assert f() == 1"])
    assert result.outcomes == ("timeout",)
    assert sandbox.run(ADD, "", ADD_TESTS).passed


HOSTILE = {
    "reads a file": 'import "os"\n\nfunc f() string { b, _ := os.ReadFile("/etc/hostname"); '
    "return string(b) }",
    "writes a file": 'import "os"\n\nfunc f() string { if os.WriteFile("/tmp/go-pwn", nil, 0o644) '
    '== nil { return "wrote" }; return "" }',
    "runs a program": 'import "os/exec"\n\nfunc f() string { out, _ := exec.Command("/bin/sh", '
    '"-c", "echo ran").Output(); return string(out) }',
    "forks": 'import "syscall"\n\nfunc f() string { _, _, e := syscall.RawSyscall('
    'syscall.SYS_FORK, 0, 0, 0); if e == 0 { return "forked" }; return "" }',
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_code_reaches_nothing_and_never_passes(sandbox, name):
    result = sandbox.run(HOSTILE[name], "", ['assert f() == "never"', 'assert f() == ""'])
    assert not result.passed and result.outcomes[0] != "pass"
    assert result.outcomes[1] == "pass"  # it ran, and got nothing
    assert not os.path.exists("/tmp/go-pwn")


def test_an_import_that_needs_cgo_is_refused_not_a_lost_sandbox(sandbox):
    code = (
        'import "net"\n\nfunc f() string { _, err := net.Dial("tcp", "127.0.0.1:9"); '
        "return err.Error() }"
    )
    result = sandbox.run(code, "", ['assert f() == ""'])
    assert result.outcomes == (_runner.COMPILE_ERROR,)
    assert "needs cgo" in result.output


def test_memory_beyond_the_limit_ends_the_suite(sandbox):
    code = "func f() int { s := [][]byte{}; for { s = append(s, make([]byte, 1<<20)); _ = s } }"
    result = sandbox.run(code, "", ["assert f() == 1"])
    assert result.outcomes == ("error:EarlyExit",) and "out of memory" in result.output


def test_the_entry_table_names_only_identifiers():
    table = _runner.entry_table(["f", "g", "f", "x; os.Exit(1)", "_ok"], "c0")
    assert '"f": f' in table and '"g": g' in table and '"_ok": _ok' in table
    assert "os.Exit" not in table and table.count('"f"') == 1


def test_the_runner_version_names_the_toolchain():
    assert GoSandbox.runner_version.startswith(f"go-1+{find_go().version}+driver-")


def test_an_items_candidates_share_one_binary_and_keep_their_own_outcomes(sandbox):
    """A batch (Sandbox.expect): a candidate that does not compile, one that loops and one that
    crashes the process are each their own outcome; the others are served after them."""
    codes = [
        ADD,
        ADD.replace("total += int", "total += x"),  # does not compile
        "func add_binary(a string, b string) string { for {} }",  # times out
        ADD.replace("carry > 0", "carry > 1"),
        "func add_binary(a string, b string) string { var f func(); f(); return a }",  # crashes
        ADD,
    ]
    box = GoSandbox(Limits(timeout_s=2))
    try:
        box.expect("item", codes)
        results = [box.run(code, "", ADD_TESTS[:2], group="item") for code in codes]
    finally:
        box.close()
    assert [r.outcomes for r in results] == [
        ("pass", "pass"),
        (_runner.COMPILE_ERROR,) * 2,
        ("timeout", "timeout"),
        ("fail", "fail"),
        ("error:runtime_error", "error:runtime_error"),
        ("pass", "pass"),
    ]


def test_the_suite_runner_builds_each_items_codes_together(tmp_path):
    from pytest_execretrieval.execution.runner import SuiteRunner

    mutant = ADD.replace("carry > 0", "carry > 1")
    suites = [(code, "", ADD_TESTS, "go", item) for item in ("a", "b") for code in (ADD, mutant)]
    for jobs in (1, 2):
        with SuiteRunner(Limits(timeout_s=5), cache_dir=tmp_path / str(jobs), jobs=jobs) as r:
            assert [x.passed for x in r.run_many(suites)] == [True, False, True, False]
