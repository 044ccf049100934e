"""Go's parser wrapper, item gate and mutants (languages/go/: syntax.py, gate.py, mutation.py):
the gate refuses each construct a Go item may not hold and accepts a realistic canonical; each
mutation class makes its edit, one hunk each, every mutant valid Go syntax (tree-sitter's
verdict, and gofmt's where Go is installed), the same mutants on every run."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("tree_sitter_go")

from pytest_execretrieval.bounds import MAX_GO_TREE_DEPTH, MAX_JS_TREE_DEPTH  # noqa: E402
from pytest_execretrieval.languages.go import gate, syntax  # noqa: E402
from pytest_execretrieval.languages.go.mutation import (  # noqa: E402
    GO_CLASSES,
    GO_CORE_CLASSES,
    GO_MUTATION_FINGERPRINT,
    GO_MUTATION_VERSION,
    GO_OPERATORS,
    generate_go_edits,
    generate_go_mutants,
    go_fingerprint,
    go_mutation_version,
    valid_structure,
)
from pytest_execretrieval.languages.javascript.mutation import (  # noqa: E402
    JS_MUTATION_FINGERPRINT,
    js_fingerprint,
)
from pytest_execretrieval.mutation.fingerprint import (  # noqa: E402
    code_fingerprint,
    recorded_version,
)
from pytest_execretrieval.mutation.operators import (  # noqa: E402
    CORE_CLASSES,
    MUTATION_FINGERPRINT,
    OPERATORS,
    apply_edits,
    diff_blocks,
)

ROOT = Path(__file__).resolve().parents[1]


def fn(*lines: str, params: str = "a, b int", result: str = "int") -> str:
    """A function ``f(params) result`` whose body is ``lines``, indented by a tab."""
    return f"func f({params}) {result} {{\n" + "".join(f"\t{line}\n" for line in lines) + "}\n"


# --- the gate -------------------------------------------------------------------------------

CANONICAL = """import (
	"sort"
	"strings"
	u8 "unicode/utf8"
)

const limit = 10

type pair struct {
	word  string
	count int
}

func (p pair) less(q pair) bool {
	if p.count != q.count {
		return p.count > q.count
	}
	return p.word < q.word
}

func seen[K comparable, V any](m map[K]V, k K) bool {
	_, ok := m[k]
	return ok
}

func top_words(text string, k int) []string {
	counts := map[string]int{}
	words := []string{}
	for _, w := range strings.Fields(strings.ToLower(text)) {
		if u8.RuneCountInString(w) > limit {
			continue
		}
		if !seen(counts, w) {
			words = append(words, w)
		}
		counts[w]++
	}
	pairs := []pair{}
	for _, w := range words {
		pairs = append(pairs, pair{w, counts[w]})
	}
	sort.Slice(pairs, func(i, j int) bool { return pairs[i].less(pairs[j]) })
	out := []string{}
	for i := 0; i < k && i < len(pairs); i++ {
		switch n := pairs[i].count; {
		case n <= 0:
			panic("impossible")
		default:
			out = append(out, pairs[i].word)
		}
	}
	return out
}
"""
BODY = "func f(a int) int {\n\treturn a\n}\n"


def test_a_realistic_canonical_is_accepted():
    assert gate.code_problems(CANONICAL, "top_words") == []
    assert gate.code_problems(CANONICAL, None) == []
    everything = "import (\n" + "".join(f'\t"{p}"\n' for p in sorted(gate.ALLOWED_IMPORTS))
    assert gate.code_problems(everything + ")\n\n" + BODY, "f") == []
    assert gate.code_problems("import `sort`\n\n" + BODY, "f") == []  # a raw-string path


# (code, the one problem's text): each holds one construct a Go item may not.
# fmt: off
REFUSED = [
    ("package main\n\n" + BODY, "a package clause"),
    ('import "C"\n\n' + BODY, "'C', which is cgo"),
    ('import "unsafe"\n\n' + BODY, "'unsafe', which steps around"),
    ('import "os"\n\n' + BODY, "'os', which reaches the host's files"),
    ('import "os/exec"\n\n' + BODY, "'os/exec', which reaches the host's files"),
    ('import "syscall"\n\n' + BODY, "'syscall', which makes system calls"),
    ('import "reflect"\n\n' + BODY, "'reflect', which reads and writes"),
    ('import "runtime/debug"\n\n' + BODY, "'runtime/debug', which controls the Go runtime"),
    ('import "net/http"\n\n' + BODY, "'net/http', which opens network connections"),
    ('import _ "embed"\n\n' + BODY, "'embed', which embeds the host's files"),
    ('import "io"\n\n' + BODY, "imports 'io': a Go item imports only bytes, container/heap"),
    ('import "\\x6fs"\n\n' + BODY, "a Go item imports only"),  # an escape is not "os" to the gate
    (BODY + 'import "sort"\n', "an import after a declaration"),
    ("var calls = 0\n\n" + BODY, "a package-level `var`"),
    ("x := 1\n\n" + BODY, "a statement outside a function"),
    ("func init() {}\n\n" + BODY, "declares function 'init', which would run before the driver"),
    ("func main() {}\n\n" + BODY, "declares function 'main', which is the driver's"),
    ("func execretrieval_table() {}\n\n" + BODY, "names 'execretrieval_table'"),
    ("func f(a int) int {\n\texecretrieval_x := a\n\treturn execretrieval_x\n}\n",
     "names 'execretrieval_x'"),
    ("type execretrieval_t int\n\n" + BODY, "names 'execretrieval_t'"),
    ("func f(a int) int {\n\tgo g()\n\treturn a\n}\n", "a `go` statement"),
    ("// f returns a\n" + BODY, "a comment"),
    ("func f(a int) int {\n\treturn a /* the input */\n}\n", "a comment"),
    ("//go:noinline\n" + BODY, "a `//go:` line is a compiler directive"),
    ("func f[T any](a T) T {\n\treturn a\n}\n", "function 'f' has type parameters"),
    ("type T int\n\nfunc (t T) f() int {\n\treturn 1\n}\n", "does not declare function 'f'"),
    ("func g(a int) int {\n\treturn a\n}\n", "does not declare function 'f' at top level"),
    ("func f(a int) int {\n\treturn a +\n", "does not parse"),
    ("func f(a int) int {\n\treturn " + "(" * 300 + "a" + ")" * 300 + "\n}\n",
     f"nests more than {MAX_GO_TREE_DEPTH} levels deep"),
]
# fmt: on


@pytest.mark.parametrize("code, problem", REFUSED)
def test_the_gate_refuses_each_forbidden_construct(code, problem):
    problems = gate.code_problems(code, "f")
    assert len(problems) == 1 and problem in problems[0], problems


# Each way the gate sees a map: (a declaration before f, f's parameters, its first statement,
# what `range` ranges over). Go randomises a map's order.
MAP_RANGES = [
    ("", "m map[int]int", "", "m"),
    ("", "a int", "\tm := map[int]int{a: 1}\n", "m"),
    ("", "a int", "\tm := make(map[int]bool)\n", "m"),
    ("", "a int", "\tvar m map[int]int\n", "m"),
    ("type C map[int]int\n\n", "c C", "", "c"),
    ("func g() map[int]int {\n\treturn nil\n}\n\n", "a int", "\tm := g()\n", "m"),
    ("", "a int", "", "map[int]int{a: 1}"),
    ("", "m map[int]map[int]bool", "", "m[0]"),
    ("", "a int", "\tm := make(map[string]map[int]bool)\n", 'm["x"]'),
]
KEYS = "\tkeys := []int{}\n\tfor k := range m {\n\t\tkeys = append(keys, k)\n\t}\n"


@pytest.mark.parametrize("before, params, first, over", MAP_RANGES)
def test_the_gate_refuses_a_range_over_a_map(before, params, first, over):
    loop = f"\tfor k := range {over} {{\n\t\treturn k\n\t}}\n"
    code = f"{before}func f({params}) int {{\n{first}{loop}\treturn 0\n}}\n"
    problems = gate.code_problems(code, "f")
    assert len(problems) == 1 and "ranges over the map" in problems[0], problems
    assert "Go randomises the order" in problems[0]


def test_the_gate_accepts_keys_collected_then_sorted_without_a_comparator():
    head = 'import "sort"\n\nfunc f(m map[int]int) []int {\n' + KEYS
    assert gate.code_problems(head + "\tsort.Ints(keys)\n\treturn keys\n}\n", "f") == []
    by_hand = "\tsort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })\n"
    assert (
        "ranges over the map `m`"
        in gate.code_problems(head + by_hand + "\treturn keys\n}\n", "f")[0]
    )
    unsorted = "func f(m map[int]int) []int {\n" + KEYS + "\treturn keys\n}\n"
    assert "ranges over the map `m`" in gate.code_problems(unsorted, "f")[0]
    more = (
        head.replace("append(keys, k)", "append(keys, k+1)")
        + "\tsort.Ints(keys)\n\treturn keys\n}\n"
    )
    assert "ranges over the map `m`" in gate.code_problems(more, "f")[0]
    names = "func f(m map[int]int, xs []int) int {\n\tfor _, x := range xs {\n\t\treturn x\n\t}\n"
    assert gate.code_problems(names + "\treturn len(m)\n}\n", "f") == []  # a slice is no map


def test_problems_come_in_source_order_once_per_construct():
    code = 'import "os"\n\nvar x = 1\nvar y = 2\n\nfunc main() {}\n\n// c\n' + BODY
    problems = gate.code_problems(code, "f")
    assert [p.split(":")[0] for p in problems] == ["line 1", "line 3", "line 6", "line 8"]


def test_setup_must_be_empty():
    assert gate.setup_problems("") == []
    assert "must be empty" in gate.setup_problems("x := 1")[0]


def test_the_depth_bound_is_javascripts():
    assert MAX_GO_TREE_DEPTH == MAX_JS_TREE_DEPTH


# --- the parser wrapper ---------------------------------------------------------------------


def test_top_level_functions_are_the_declared_functions_only():
    code = (
        "type T struct{}\n\nfunc (t T) method() {}\n\nfunc g[X any](x X) X { return x }\n\n"
        "const c = 1\n\nfunc h() func() int {\n\tinner := func() int { return c }\n"
        "\treturn inner\n}\n"
    )
    tree = syntax.parse(code)
    assert syntax.syntax_problem(tree) is None
    assert syntax.top_level_functions(tree) == {"g", "h"}
    assert syntax.top_level_functions(syntax.parse(CANONICAL)) == {"seen", "top_words"}


def test_the_stored_code_parses_without_a_package_clause():
    tree = syntax.parse(BODY)
    assert syntax.syntax_problem(tree) is None and tree.root_node.start_point == (0, 0)
    assert "line 2" in (syntax.syntax_problem(syntax.parse("func f() {\n\treturn )\n}")) or "")
    assert syntax.tree_depth(tree, 1000) == syntax.tree_depth(tree, 1000)
    assert syntax.tree_depth(tree, 3) == 4  # counts no further than limit + 1
    assert [n.type for n in syntax.walk(tree.root_node)][:2] == [
        "source_file",
        "function_declaration",
    ]


def test_structure_ignores_layout_and_comments_only():
    same = "func f(a int) int {\n\treturn a + 1 // one more\n}\n"
    assert syntax.structure(syntax.parse(BODY.replace("\t", "    "))) == syntax.structure(
        syntax.parse(BODY)
    )
    assert syntax.structure(syntax.parse(same)) == syntax.structure(
        syntax.parse(same.replace(" // one more", ""))
    )
    assert syntax.structure(syntax.parse(same)) != syntax.structure(syntax.parse(BODY))


def test_grammar_versions_name_the_pinned_packages():
    versions = syntax.grammar_versions()
    assert set(versions) == {"tree-sitter", "tree-sitter-go"}
    assert versions["tree-sitter-go"] != "missing"


# --- the mutants ----------------------------------------------------------------------------

# (class, source, every mutant of that class in order): each expected mutant is one edit.
# fmt: off
CASES = [
    ("off_by_one", fn("return a * 3"), [fn("return a * 2"), fn("return a * 4")]),
    ("off_by_one", fn("return a + 1"), [fn("return a"), fn("return a + 2")]),
    ("off_by_one", fn("return a * -1"), [fn("return a * -2"), fn("return a * 0")]),
    ("off_by_one", fn("return a / 1"), [fn("return a / 2")]),  # never a constant divisor 0
    ("off_by_one", fn("if a<0 {", "\treturn b", "}", "return a"),
     [fn("if a< -1 {", "\treturn b", "}", "return a"),
      fn("if a<1 {", "\treturn b", "}", "return a")]),
    ("off_by_one", fn("switch a {", "case 1, 2:", "\treturn b", "}", "return a"),
     [fn("switch a {", "case 0, 2:", "\treturn b", "}", "return a"),
      fn("switch a {", "case 1, 3:", "\treturn b", "}", "return a")]),
    ("off_by_one", fn("return len(make([]int, 0)) << 0"),  # no negative size or shift count
     [fn("return len(make([]int, 1)) << 0"), fn("return len(make([]int, 0)) << 1")]),
    ("wrong_operator", fn("return a * b"), [fn("return a / b")]),
    ("wrong_operator", fn("a += b", "return a"), [fn("a -= b", "return a")]),
    ("wrong_operator", fn("return a &^ b"), [fn("return a & b")]),
    ("wrong_operator", fn("return a > 0 && b > 0", result="bool"),
     [fn("return a > 0 || b > 0", result="bool")]),
    ("wrong_operator", fn("return -a"), [fn("return a")]),
    ("wrong_operator", fn("return a+-b"), [fn("return a- -b"), fn("return a+b")]),
    ("swap_arguments", fn("return g(a, b)"), [fn("return g(b, a)")]),
    ("swap_arguments", fn("return a - b - c"), [fn("return b - a - c"),
                                                fn("return c - (a - b)")]),
    ("swap_arguments", fn("return a << b"), [fn("return b << a")]),
    ("swap_arguments", fn("a, b = b, a+b", "return a"), [fn("a, b = a+b, b", "return a")]),
    ("swap_arguments", fn("return a, b", result="(int, int)"),
     [fn("return b, a", result="(int, int)")]),
    ("remove_edge_case_check",
     fn("if a == 0 {", "\treturn 0", "}", "return b / a"), [fn("return b / a")]),
    ("remove_edge_case_check",
     fn("if a < 0 {", '\tpanic("negative")', "}", "return a"), [fn("return a")]),
    ("remove_edge_case_check",
     fn("for i := 0; i < a; i++ {", "\tif i%2 == 0 {", "\t\tcontinue", "\t}", "\tb += i", "}",
        "return b"),
     [fn("for i := 0; i < a; i++ {", "\tb += i", "}", "return b")]),
    ("remove_edge_case_check",
     fn("switch {", "case a > b:", "\tif b < 0 {", "\t\treturn 0", "\t}", "\treturn a", "}",
        "return b"),
     [fn("switch {", "case a > b:", "\treturn a", "}", "return b")]),
    ("wrong_comparison", fn("return a == b", result="bool"), [fn("return a != b", result="bool")]),
    ("wrong_comparison", fn("return a <= b", result="bool"), [fn("return a >= b", result="bool")]),
    ("off_by_one_boundary", fn("return a < b", result="bool"),
     [fn("return a <= b", result="bool")]),
    ("off_by_one_boundary", fn("return xs[a+1]", params="xs []int, a int"),
     [fn("return xs[a]", params="xs []int, a int"),
      fn("return xs[a+2]", params="xs []int, a int")]),
    ("off_by_one_boundary", fn("return xs[0]", params="xs []int"),
     [fn("return xs[1]", params="xs []int")]),  # never a negative constant index
    ("off_by_one_boundary", fn("return xs[1:a]", params="xs []int, a int", result="[]int"),
     [fn(f"return xs[{s}]", params="xs []int, a int", result="[]int")
      for s in ("0:a", "2:a", "1:a + 1", "1:a - 1")]),
    ("negate_condition", fn("if a < b {", "\treturn a", "}", "return b"),
     [fn("if !(a < b) {", "\treturn a", "}", "return b")]),
    ("negate_condition", fn("if n := a * 2; n > b {", "\treturn n", "}", "return b"),
     [fn("if n := a * 2; !(n > b) {", "\treturn n", "}", "return b")]),
    ("negate_condition", fn("if !ok(a) {", "\treturn a", "}", "return b"),
     [fn("if ok(a) {", "\treturn a", "}", "return b")]),
    ("negate_condition", fn("for a < b {", "\ta *= 2", "}", "return a"),
     [fn("for !(a < b) {", "\ta *= 2", "}", "return a")]),
    ("negate_condition", fn("for i := 0; done(i); i++ {", "\ta += i", "}", "return a"),
     [fn("for i := 0; !done(i); i++ {", "\ta += i", "}", "return a")]),
    ("swap_min_max", fn("return math.Min(x, y)", params="x, y float64", result="float64"),
     [fn("return math.Max(x, y)", params="x, y float64", result="float64")]),
    ("swap_min_max", fn("return max(a, b)"), [fn("return min(a, b)")]),
    ("complement_comparison", fn("return a > b", result="bool"),
     [fn("return a <= b", result="bool")]),
    ("shadowing",
     fn("if a > 0 {", "\tb = a * 2", "\tg(b)", "}", "return b"),
     [fn("if a > 0 {", "\tb := a * 2", "\tg(b)", "}", "return b")]),
    ("shadowing",
     fn("i := 0", "for i = 0; i < a; i++ {", "}", "return i"),
     [fn("i := 0", "for i := 0; i < a; i++ {", "}", "return i")]),
    ("shadowing",
     fn("for _, x := range xs {", "\tif x > best {", "\t\tbest = x", "\t\tb += best", "\t}", "}",
        "return b", params="xs []int, b, best int"),
     [fn("for _, x := range xs {", "\tif x > best {", "\t\tbest := x", "\t\tb += best", "\t}",
         "}", "return b", params="xs []int, b, best int")]),
    ("update_operator", fn("a++", "return a"), [fn("a--", "return a")]),
    ("update_operator", fn("b--", "return b"), [fn("b++", "return b")]),
    ("boolean_literal", fn("return a == 1 && true", result="bool"),
     [fn("return a == 1 && false", result="bool")]),
]
# fmt: on


@pytest.mark.parametrize("cls, source, expected", CASES)
def test_each_class_makes_its_edit_and_only_it(cls, source, expected):
    mutants = [m for m in generate_go_mutants(source, "f") if m.operator == cls]
    assert [m.code for m in mutants] == expected
    for mutant in mutants:
        assert len(mutant.edits) == 1 and apply_edits(source, mutant.edits) == mutant.code
        assert diff_blocks(source, mutant.code)[0] == 1
        assert valid_structure(mutant.code, "f") is not None


def test_every_class_has_a_case_and_the_core_classes_are_pythons():
    assert {cls for cls, _, _ in CASES} == set(GO_CLASSES)
    assert GO_CORE_CLASSES == CORE_CLASSES
    assert list(GO_CLASSES)[: len(OPERATORS)] == list(OPERATORS)
    from pytest_execretrieval.languages.go import mutation

    doc = mutation.__doc__ or ""
    for name, entry in GO_OPERATORS.items():  # each class names its model
        line = doc[doc.index(f"\n``{name}`` (") + 1 :].split("\n", 1)[0]
        assert entry.functions and "JavaScript's" in line


# fmt: off
@pytest.mark.parametrize(
    "cls, source",
    [
        # `+` on strings stays `+`
        ("wrong_operator", fn('return "n=" + s', params="s string", result="string")),
        ("wrong_operator", fn("return strconv.Itoa(a) + s", params="s string, a int",
                              result="string")),
        ("wrong_operator", fn('s += "!"', "return s", params="s string", result="string")),
        # a spread, a type, `make`'s and `append`'s first argument, `nil` are never swapped
        ("swap_arguments", fn("return g(a, xs...)", params="a int, xs ...int")),
        ("swap_arguments", fn("return len(make([]int, a))")),
        ("swap_arguments", fn("return len(append(xs, a))", params="a int, xs []int")),
        ("swap_arguments", fn("return a, nil", result="(int, error)")),
        # an `else` branch, a guard that does not leave, a guard whose variable is then unread
        ("remove_edge_case_check", fn("if a > b {", "\treturn a", "} else {", "\treturn b", "}")),
        ("remove_edge_case_check", fn("if a > b {", "\tb++", "}", "return b")),
        ("remove_edge_case_check", fn("n, err := g(a)", "if err != nil {", "\treturn 0", "}",
                                      "return n")),
        # constant conditions are not negated, and a loop that never ends is no near miss
        ("negate_condition", fn("for true {", "\ta++", "}")),
        ("boolean_literal", fn("for true {", "\ta++", "}")),
        # `min` is the code's own function here
        ("swap_min_max", "func max(a, b int) int {\n\treturn a\n}\n\n" + fn("return min(a, b)")),
        # shadowing: the function's own body; an inner variable nobody reads (does not compile);
        # an outer variable nobody reads after (changes nothing); a name declared in the block
        ("shadowing", fn("b = a", "return b")),
        ("shadowing", fn("if a > 0 {", "\tb = a", "}", "return b")),
        ("shadowing", fn("if a > 0 {", "\tb = a", "\tg(b)", "}", "return a")),
        ("shadowing", fn("if a > 0 {", "\tc := 1", "\tc = a", "\tg(c)", "}", "return a")),
        ("shadowing", fn("for i = 0; i < a; i++ {", "}", "return a")),
        # strings, runes, types and signatures are never touched
        ("off_by_one", fn('return len("1") + len([2]int{}) + int(\'3\')',
                          params="a [4]int", result="[5]int")),
    ],
)
# fmt: on
def test_where_a_class_makes_no_edit(cls, source):
    assert [m.code for m in generate_go_mutants(source, "f") if m.operator == cls] == []


def test_an_edit_after_non_ascii_text_splices_at_the_right_place():
    source = fn('s := "héllo 😀"', "return len(s) < a", params="a int", result="bool")
    codes = {m.operator: m.code for m in generate_go_mutants(source, "f")}
    assert codes["off_by_one_boundary"] == source.replace("< a", "<= a")


def test_a_source_that_is_not_go_is_refused():
    with pytest.raises(ValueError, match="is not Go"):
        generate_go_mutants("func f( {", "f")
    with pytest.raises(ValueError, match="'g'"):
        generate_go_mutants(fn("return a"), "g")
    with pytest.raises(ValueError, match="'m'"):  # a method is no entry point
        generate_go_mutants("type T int\n\nfunc (t T) m() int {\n\treturn 1\n}\n", "m")


# Realistic canonicals: closures, switch, labels, multiple assignment, maps, slices, methods.
SAMPLES = [
    fn("out := [][]int{}", "for i := 0; i < len(a); i += b {", "\tend := i + b",
       "\tif end > len(a) {", "\t\tend = len(a)", "\t}", "\tout = append(out, a[i:end])", "}",
       "return out", params="a []int, b int", result="[][]int"),
    fn("switch r := a % 3; r {", "case 0:", '\treturn "fizz"', "case 1:", "\tif b {",
       '\t\treturn "x" + strconv.Itoa(a-1)', "\t}", "\tfallthrough", "default:",
       '\treturn strings.Repeat("!", a)', "}", params="a int, b bool", result="string"),
    fn("x, y := 0, 1", "for i := 0; i < n; i++ {", "\tx, y = y, x+y", "}", "return x",
       params="n int"),
    fn("var n, count uint = a, 0", "for n != 0 {", "\tn &= n - 1", "\tcount++", "}",
       "return int(count) &^ 1 << 2", params="a uint"),
    fn("seen := map[string]int{}", "keys := []string{}", "outer:", "for _, k := range names {",
       "\tv := a[k]", "\tfor j := 0; j < len(v); j++ {", "\t\tif v[j] < 0 {",
       "\t\t\tcontinue outer", "\t\t}", "\t\tif _, ok := seen[k]; !ok {",
       "\t\t\tkeys = append(keys, k)", "\t\t}", "\t\tseen[k] += v[j]", "\t}", "}",
       "sort.Slice(keys, func(p, q int) bool {", "\tif seen[keys[p]] != seen[keys[q]] {",
       "\t\treturn seen[keys[p]] > seen[keys[q]]", "\t}", "\treturn keys[p] < keys[q]", "})",
       "return keys", params="names []string, a map[string][]int", result="[]string"),
    "type stack []int\n\nfunc (s *stack) push(v int) { *s = append(*s, v) }\n\n"
    "const limit = 10\n\n"
    + fn("var st stack", "best := -1", "for i := 1; i <= int(math.Min(float64(a), limit)); i++ {",
         "\tst.push(i * i)", "\tif sq := st[len(st)-1]; sq%2 == 0 && sq > best {",
         "\t\tbest = sq", "\t\tst.push(-best)", "\t}", "}",
         "if len(st) == 0 {", '\tpanic("empty")', "}", "return best / max(len(st), 1)"),
]


def assert_mutants_sound(source: str) -> list:
    mutants = generate_go_mutants(source, "f")
    shapes = {valid_structure(source, "f")}
    for m in mutants:
        shape = valid_structure(m.code, "f")
        assert shape is not None and shape not in shapes, m.description
        shapes.add(shape)
        assert m.code != source and m.operator in GO_CLASSES
        assert len(m.edits) == 1 and apply_edits(source, m.edits) == m.code
        assert diff_blocks(source, m.code)[0] == 1
        assert m.line == source.count("\n", 0, m.edits[0].start) + 1
    return mutants


@pytest.mark.parametrize("source", SAMPLES)
def test_every_mutant_of_a_sample_is_one_valid_edit(source):
    assert gate.code_problems(source, "f") == []
    assert len({m.code for m in assert_mutants_sound(source)}) > 10


def test_every_class_mutates_some_sample():
    found = {m.operator for s in SAMPLES for m in generate_go_mutants(s, "f")}
    assert found == set(GO_CLASSES) - {"boolean_literal"}


def test_edits_come_in_position_order_with_one_class_each():
    edits = generate_go_edits(SAMPLES[1])
    assert [e.start for e in edits] == sorted(e.start for e in edits)
    assert len({(e.start, e.end, e.replacement) for e in edits}) == len(edits)


_DUMP = """
import json
from pytest_execretrieval.languages.go.mutation import generate_go_mutants
from tests.test_go_language import SAMPLES
print(json.dumps([[m.operator, m.line, m.code, m.description, m.lines_changed, m.chars_changed]
                  for s in SAMPLES for m in generate_go_mutants(s, "f")]))
"""


def test_mutants_are_the_same_on_every_run():
    here = [
        [m.operator, m.line, m.code, m.description, m.lines_changed, m.chars_changed]
        for s in SAMPLES
        for m in generate_go_mutants(s, "f")
    ]
    there = subprocess.run(
        [sys.executable, "-c", _DUMP],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT), "PYTHONHASHSEED": "7"},
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert json.loads(there) == here and len(here) > 100


@pytest.mark.skipif(shutil.which("gofmt") is None, reason="needs Go's gofmt (Go's own parser)")
def test_gofmt_parses_every_mutant(tmp_path):
    """tree-sitter accepts no mutant Go's own parser refuses."""
    codes = [s for s in SAMPLES] + [m.code for s in SAMPLES for m in generate_go_mutants(s, "f")]
    for i, code in enumerate(codes):
        (tmp_path / f"m{i}.go").write_text("package main\n\n" + code)
    done = subprocess.run(["gofmt", "-e", "-l", str(tmp_path)], capture_output=True, text=True)
    assert done.returncode == 0 and done.stderr == "", done.stderr[:2000]


def test_go_mutation_fingerprint_is_recorded() -> None:
    fingerprint = go_fingerprint()
    assert fingerprint == GO_MUTATION_FINGERPRINT, (
        "the Go mutation code (languages/go/mutation.py, syntax.py, the shared operators.py, "
        "select.py, stacking.py), its table or the tree-sitter versions changed: if the mutants "
        "changed, bump GO_MUTATION_VERSION in languages/go/mutation.py; either way set "
        f'GO_MUTATION_FINGERPRINT = "{fingerprint}" there'
    )
    assert go_mutation_version() == GO_MUTATION_VERSION
    # Python's and JavaScript's versions do not move with Go's
    assert code_fingerprint() == MUTATION_FINGERPRINT
    assert js_fingerprint() == JS_MUTATION_FINGERPRINT


def test_an_unrecorded_fingerprint_marks_the_version():
    assert recorded_version("1", "ab" * 32, "cd" * 32) == "1+unrecorded-" + "cd" * 6
