"""What the sandbox tests share: the suite timeout and the skip for a kernel layer missing here
(the module-scoped ``box`` fixture, one Sandbox with and one without the audit guard, is in
``conftest.py``)."""

from __future__ import annotations

import pytest

from pytest_execretrieval.execution.sandbox import Sandbox

TIMEOUT = 2.0


def requires(sandbox: Sandbox, *layers: str) -> None:
    missing = {k: v for k, v in sandbox.isolation["missing"].items() if k in layers}
    if missing:
        pytest.skip(
            "; ".join(f"sandbox layer {k} unavailable here: {v}" for k, v in missing.items())
        )
