"""Run untrusted Go snippets, behind the Python sandbox's interface.

:class:`GoSandbox` is a :class:`~pytest_execretrieval.execution.sandbox.Sandbox` whose checker
serves Go suites (``run(code, setup, tests) -> SuiteResult``, the same outcomes, and
``error:CompileError`` for code the compiler refuses): the Node runner's confined checker plans
each test in the closed grammar and decides every verdict; the zygote compiles each candidate
with ``_driver.go`` and runs the binary under the same kernel layers (``_runner.py`` says
how). A call's Go value reaches the checker as :data:`CODEC` says.

The toolchain is the machine's (``go`` on ``PATH``; ``scripts/bootstrap`` installs Debian's
``golang-go`` where it is missing): :func:`find_go`. Its standard library is the one the
toolchain ships precompiled (Go 1.19 and older), else export data ``go list -export`` builds
once into the user's cache (no module is downloaded: the standard library only).
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import json
import os
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ...execution.sandbox import Limits, Sandbox, SandboxError, SuiteResult
from ._runner import GO_EXCEPTIONS as GO_EXCEPTIONS

__all__ = ["CODEC", "GO_EXCEPTIONS", "GO_RUNNER_VERSION", "GoSandbox", "Toolchain", "find_go"]

GO_RUNNER_VERSION = "go-1"  # in the outcome cache's key of Go suites
RUNNER_MODULE = Path(__file__).resolve().with_name("_runner.py")  # the checker loads it
_BATCHES_KEPT = 4  # announced items a sandbox remembers (a thread works on one at a time)
DRIVER = Path(__file__).resolve().with_name("_driver.go")
CODEC = (
    ("int, int8 ... int64, uint ... uint64", "int"),
    ("float32, float64 (NaN and infinities too)", "float"),
    ("*big.Int", "int"),
    ("string (invalid UTF-8 as U+FFFD)", "str"),
    ("bool", "bool"),
    ("slice (nil: empty)", "list"),
    ("array [N]T, and several results", "tuple"),
    ("map[K]V", "dict"),
    ("map[K]struct{}", "set"),
    ("pointer, interface", "what it holds (nil: None)"),
    ("no result", "None"),
    ("anything else (structs, funcs, channels)", "error:UnsupportedValue"),
    ("a panic", "error:panic; a runtime error: error:runtime_error"),
)


class Toolchain:
    """The Go toolchain the runner uses: ``go``, its root, tools and standard library."""

    def __init__(self, go: str) -> None:
        self.go = os.path.realpath(go)
        env = {"PATH": os.path.dirname(self.go), "HOME": str(Path.home()), "GOFLAGS": ""}
        names = ("GOROOT", "GOTOOLDIR", "GOOS", "GOARCH", "GOVERSION", "GOCACHE")
        out = subprocess.run(
            [self.go, "env", "-json", *names],
            capture_output=True,
            text=True,
            timeout=60,
            env=env,
            check=False,
        )
        if out.returncode:
            raise SandboxError(f"`go env` failed: {out.stderr.strip()[:300]}")
        found = json.loads(out.stdout)
        self.env = env
        self.goroot = os.path.realpath(found["GOROOT"])
        self.version = str(found.get("GOVERSION") or "unknown")
        self.compile = os.path.join(found["GOTOOLDIR"], "compile")
        self.link = os.path.join(found["GOTOOLDIR"], "link")
        self.cache = found.get("GOCACHE") or ""
        self.pkgdir = os.path.join(self.goroot, "pkg", f"{found['GOOS']}_{found['GOARCH']}")

    @functools.cached_property
    def importcfg(self) -> str:
        """``packagefile`` lines for every standard package: the shipped archives, else the
        export data ``go list -export`` builds into the cache."""
        lines = []
        if os.path.isdir(os.path.join(self.pkgdir, "runtime")) or os.path.isfile(
            os.path.join(self.pkgdir, "runtime.a")
        ):
            for root, _dirs, files in os.walk(self.pkgdir):
                for name in files:
                    if name.endswith(".a"):
                        path = os.path.join(root, name)
                        package = os.path.relpath(path, self.pkgdir)[: -len(".a")]
                        lines.append(f"packagefile {package}={path}\n")
            return "".join(sorted(lines))
        out = subprocess.run(
            [self.go, "list", "-export", "-f", "{{.ImportPath}}={{.Export}}", "std"],
            capture_output=True,
            text=True,
            timeout=900,
            env={**self.env, "CGO_ENABLED": "0"},
            check=False,
        )
        if out.returncode:
            raise SandboxError(f"`go list -export std` failed: {out.stderr.strip()[:300]}")
        for row in out.stdout.splitlines():
            package, _, path = row.partition("=")
            if path:
                lines.append(f"packagefile {package}={path}\n")
        return "".join(sorted(lines))

    @functools.cached_property
    def cgo_packages(self) -> list[str]:
        """The standard packages that need cgo (``runtime/cgo`` among their dependencies): a
        candidate importing one is refused, the binary is linked without dynamic imports."""
        out = subprocess.run(
            [self.go, "list", "-f", '{{.ImportPath}}:{{join .Deps ","}}', "std"],
            capture_output=True,
            text=True,
            timeout=300,
            env=self.env,
            check=False,
        )
        if out.returncode:
            raise SandboxError(f"`go list std` failed: {out.stderr.strip()[:300]}")
        rows = (line.partition(":") for line in out.stdout.splitlines())
        return sorted(
            p for p, _, deps in rows if p == "runtime/cgo" or "runtime/cgo" in deps.split(",")
        )

    def reads(self) -> list[str]:
        """What the build steps read besides the toolchain's root: the archives' folders."""
        folders = {os.path.dirname(line.partition("=")[2]) for line in self.importcfg.splitlines()}
        return sorted(f for f in folders if not f.startswith(self.goroot + os.sep))


@functools.lru_cache(maxsize=1)
def find_go() -> Toolchain:
    """The machine's Go toolchain (the first ``go`` on ``PATH``), or SandboxError saying how
    to get one."""
    go = shutil.which("go")
    if go is None:
        raise SandboxError(
            "no Go toolchain for Go suites: no `go` on PATH "
            "(install Go, e.g. Debian's golang-go, or run scripts/bootstrap)"
        )
    return Toolchain(go)


class _RunnerVersion:
    """:data:`GO_RUNNER_VERSION`, the toolchain's version and the driver's digest, read when
    asked for: another Go compiles the same code otherwise (a loop variable's scope changed in
    1.22), so the outcome cache and the corpus say which one ran."""

    def __get__(self, obj: object, owner: type | None = None) -> str:
        try:
            toolchain = find_go().version
        except SandboxError:
            toolchain = "no-toolchain"
        return f"{GO_RUNNER_VERSION}+{toolchain}+driver-{_driver_digest()}"


@functools.lru_cache(maxsize=1)
def _driver_digest() -> str:
    """The driver's own version: a digest of its source, which decides every value's form."""
    return hashlib.sha256(DRIVER.read_bytes()).hexdigest()[:12]


class GoSandbox(Sandbox):
    """A :class:`~pytest_execretrieval.execution.sandbox.Sandbox` for Go snippets (see the
    module docs). Go suites have no setup: a non-empty one is a ValueError."""

    language = "go"
    runner_version = _RunnerVersion()  # a str when read

    def __init__(self, limits: Limits = Limits(), *, isolation: str = "best") -> None:
        self.toolchain = find_go()
        # group -> (batch id, its codes): the items announced by expect(), the newest last
        self._batches: dict[str, tuple[str, list[str]]] = {}
        self._batch_serial = itertools.count()
        super().__init__(limits, isolation=isolation)

    def expect(self, group: str, codes: Sequence[str]) -> None:
        """The codes of ``group`` (an item) that the next suites run: one binary holds them
        all, built at the first (a code run without such a hint is built alone)."""
        codes = list(dict.fromkeys(codes))
        if self._batches.get(group, ("", []))[1] == codes:
            return
        self._batches.pop(group, None)
        self._batches[group] = (f"{group}#{next(self._batch_serial)}", codes)
        while len(self._batches) > _BATCHES_KEPT:
            del self._batches[next(iter(self._batches))]

    def _request_fields(self, code: str, group: str | None) -> dict[str, Any]:
        key, codes = self._batches.get(group or "", ("", []))
        if code not in codes:
            return {}
        return {"batch": {"id": key, "codes": codes, "index": codes.index(code)}}

    def _server_options(self) -> list[str]:
        tools = self.toolchain
        options = {
            "module": str(RUNNER_MODULE),
            "goroot": tools.goroot,
            "compile": tools.compile,
            "link": tools.link,
            "driver": str(DRIVER),
            "importcfg": tools.importcfg,
            "reads": tools.reads(),
            "cgo_packages": tools.cgo_packages,
        }
        return [json.dumps(options)]

    def run(
        self, code: str, setup: str, tests: Sequence[str], group: str | None = None
    ) -> SuiteResult:
        """As :meth:`Sandbox.run`, for Go; tests in the grammar with Go's exception names
        (``raises(panic, f, ...)``) and JSON-representable arguments."""
        if isinstance(setup, str) and setup.strip():
            raise ValueError("a Go suite has no setup (got a non-empty one)")
        return super().run(code, setup, tests, group)
