"""The recorder test carving runs in the sandbox: one test file of a package's own suite under
pytest, with the package's functions and methods wrapped (:mod:`.carve` sends this file's text
as a snippet, ``TARGETS`` set after it; it never runs on the host).

``carve(TEST_FILE)`` wraps each target ``(module, class, name)`` wherever the package's modules
hold it, runs the file (plugins not auto-loaded, no cache, each test under a time bound) and
returns ``[pytest's exit status, records, missed]``: the calls made while a test ran (the
tests' own, and those made inside them up to ``NESTED`` recorded calls deep), per call
``[module, class, name, test, args, kwargs, kind, value]``, arguments copied before the call
(each ``["v", value]``, ``["f", builtin name]`` or ``["l", a lambda's text]``);
``kind`` is ``value``, ``items`` (an iterator the test read to its end: what it gave) or
``raises`` (the exception's class name). An instance method's record gives the instance's
attributes first (``state``), a call only where the instance is of the class itself. Only
values the sandbox's value codec carries are kept, at most ``PER_FUNCTION`` distinct calls of a
function and ``PER_FILE`` in all. ``missed`` says why the other calls were not recorded:
``[module, class, name, cause, calls]`` (:data:`MISSED_CAUSES`, a cause naming a type adds
``: TYPE``), at most ``MISSED_PER_FUNCTION`` causes of a function.
"""

TARGETS: list = []  # [module, class or "", name]: set after this text by the caller
PER_FUNCTION = 40
PER_FILE = 4000
MAX_REPR = 1500
TEST_SECONDS = 10  # set after this text by the caller too
NESTED = 3  # record calls made inside up to this many recorded calls
MISSED_PER_FUNCTION = 8  # distinct causes of calls not recorded, per function
# Why a call was not recorded (the host's MINED.md names them: carve.MISSED)
MISSED_CAUSES = ("subclass", "instance", "argument", "result", "uncopyable", "unread", "machine")

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def carve(test_file):
    import ast
    import builtins
    import copy
    import importlib
    import os
    import signal
    import sys
    import tempfile
    import types

    os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    root = sys.path[0]
    here = (root, os.path.realpath(os.getcwd()), tempfile.gettempdir())
    wire: Any = sys.modules.get("_wire")  # the sandbox's value codec, a top-level module there
    records: list[list[Any]] = []
    seen: dict[tuple[str, str, str], set[str]] = {}
    tried: dict[tuple[str, str, str], int] = {}  # calls looked at, recorded or not
    missed: dict[tuple[str, str, str], dict[str, int]] = {}  # why calls were not recorded
    depth = [0]

    def carried(value):
        try:
            wire.encode(value)
            text = repr(value)
        except Exception:  # noqa: BLE001 - not a value the codec (or a literal) carries
            return False
        return len(text) <= MAX_REPR

    def lambda_source(function):
        """A function argument as a lambda's text, where the test file defines it as a lambda
        or as ``def f(...): return EXPR`` (the grammar decides whether it is one of its own)."""
        code = getattr(function, "__code__", None)
        if code is None or code.co_freevars or not code.co_filename.startswith(root):
            return None
        try:
            with open(code.co_filename, encoding="utf-8") as handle:
                tree = ast.parse(handle.read())
        except (OSError, SyntaxError, ValueError, RecursionError, MemoryError):
            return None
        found = []
        for node in ast.walk(tree):
            if getattr(node, "lineno", None) != code.co_firstlineno:
                continue
            if isinstance(node, ast.Lambda) and function.__name__ == "<lambda>":
                found.append(ast.unparse(node))
            elif isinstance(node, ast.FunctionDef) and node.name == function.__name__:
                body = [b for b in node.body if not isinstance(b, ast.Expr)]
                if len(body) == 1 and isinstance(body[0], ast.Return) and body[0].value:
                    found.append(ast.unparse(ast.Lambda(node.args, body[0].value)))
        return found[0] if len(found) == 1 else None

    def shown(value):
        """An argument as the record gives it: ``["v", value]``, ``["f", name]`` (a builtin
        the grammar's lambdas may call) or ``["l", lambda text]``; None where none fits."""
        name = getattr(value, "__name__", "")
        if isinstance(name, str) and name and getattr(builtins, name, None) is value:
            return ["f", name]
        if isinstance(value, types.FunctionType):
            text = lambda_source(value)
            return None if text is None else ["l", text]
        return ["v", value] if carried(value) else None

    def uncopyable(values):
        for value in values:
            try:
                copy.deepcopy(value)
            except Exception:  # noqa: BLE001
                yield value

    def miss(key, cause, value=None):
        causes = missed.setdefault(key, {})
        if value is not None:
            cause += ": " + str(getattr(type(value), "__qualname__", "?"))[:60]
        if cause in causes or len(causes) < MISSED_PER_FUNCTION:
            causes[cause] = causes.get(cause, 0) + 1

    def note(key, args, kwargs, kind, value, state=False):
        calls = seen.setdefault(key, set())
        if len(calls) >= PER_FUNCTION or len(records) >= PER_FILE:
            return
        if kind != "raises" and not carried(value):
            return miss(key, "result", value)
        if state and not carried(args[0]):
            held = [v for v in args[0].values() if not carried(v)]
            return miss(key, "instance", held[0] if held else None)
        unshown = [a for a in [*args, *kwargs.values()] if shown(a) is None]
        if unshown:
            return miss(key, "argument", unshown[0])
        args = [shown(a) for a in args]
        kwargs = {k: shown(v) for k, v in kwargs.items()}
        signature = repr((args, kwargs))
        if any(place in signature + repr(value) for place in here):
            return miss(key, "machine")  # a path of this machine (the context, the scratch)
        if signature in calls:
            return
        calls.add(signature)
        test = os.environ.get("PYTEST_CURRENT_TEST", "").rpartition(" (")[0]
        records.append([*key, test, args, kwargs, kind, value])

    def recorded(key, function, owner, how):
        def recorder(*args, **kwargs):
            tried[key] = tried.get(key, 0) + 1
            full = len(seen.get(key, ())) >= PER_FUNCTION or len(records) >= PER_FILE
            if depth[0] > NESTED or full or tried[key] > 10 * PER_FUNCTION:
                return function(*args, **kwargs)  # nothing more to record: no copy to pay
            shown = args
            if how == "self":
                instance = args[0] if args else None
                if type(instance) is not owner or not hasattr(instance, "__dict__"):
                    miss(key, "subclass")
                    return function(*args, **kwargs)
                shown = (dict(vars(instance)), *args[1:])
            elif how == "cls":
                if not args or args[0] is not owner:
                    return function(*args, **kwargs)
                shown = args[1:]
            try:
                before = copy.deepcopy((tuple(shown), kwargs))
            except Exception:  # noqa: BLE001
                before = None
                held = list(uncopyable(shown[0].values())) if how == "self" else []
                if held:
                    miss(key, "instance", held[0])
                else:
                    miss(key, "uncopyable", next(uncopyable([*shown, *kwargs.values()]), None))
            depth[0] += 1
            try:
                result = function(*args, **kwargs)
            except Exception as exc:
                if before is not None:
                    note(key, before[0], before[1], "raises", type(exc).__name__, how == "self")
                raise
            finally:
                depth[0] -= 1
            if before is None:
                return result
            kind = type(result)
            if hasattr(kind, "__next__") and hasattr(kind, "__iter__"):
                return replayed(key, before, result, how == "self")
            try:
                note(key, before[0], before[1], "value", copy.deepcopy(result), how == "self")
            except Exception:  # noqa: BLE001
                miss(key, "result", result)
            return result

        recorder.__dict__["__wrapped__"] = function  # inspect.signature sees the function's
        for attribute in ("__name__", "__qualname__", "__doc__", "__module__"):
            try:
                setattr(recorder, attribute, getattr(function, attribute))
            except (AttributeError, TypeError):
                pass
        return recorder

    def replayed(key, before, iterator, state):
        items: list[Any] = []
        ended = False
        try:
            for item in iterator:
                try:
                    items.append(copy.deepcopy(item))
                except Exception:  # noqa: BLE001 - not recorded; the test reads on
                    miss(key, "result", item)
                    ended = True
                    yield item
                    break
                yield item
                if len(items) > PER_FILE:
                    break
            else:
                ended = True
                note(key, before[0], before[1], "items", items, state)
            yield from iterator
        finally:
            if not ended:
                miss(key, "unread")

    top = {target[0].partition(".")[0] for target in TARGETS}
    wrapped = {}
    for module_name, owner_name, name in TARGETS:
        try:
            module = importlib.import_module(module_name)
            owner = module
            for part in owner_name.split(".") if owner_name else ():
                owner = getattr(owner, part)
            member = vars(owner)[name]
        except Exception:  # noqa: BLE001 - a module that does not import records nothing
            continue
        key = (module_name, owner_name, name)
        if isinstance(member, staticmethod):
            setattr(owner, name, staticmethod(recorded(key, member.__func__, owner, "")))
        elif isinstance(member, classmethod):
            setattr(owner, name, classmethod(recorded(key, member.__func__, owner, "cls")))
        elif callable(member):
            how = "self" if owner_name else ""
            wrapper = recorded(key, member, owner, how)
            setattr(owner, name, wrapper)
            if not owner_name:
                wrapped[id(member)] = (member, wrapper)
    for module in list(sys.modules.values()):  # re-exports: `from .core import f` elsewhere
        if getattr(module, "__name__", "").partition(".")[0] not in top:
            continue
        for attribute, value in list(vars(module).items()):
            if id(value) in wrapped and wrapped[id(value)][0] is value:
                setattr(module, attribute, wrapped[id(value)][1])

    class Bounded:
        """Each test under a time bound: past it, the test fails and the file goes on."""

        def pytest_runtest_setup(self, item):
            def expired(signum, frame):
                raise TimeoutError(f"over {TEST_SECONDS} s")

            try:
                signal.signal(signal.SIGALRM, expired)
                signal.setitimer(signal.ITIMER_REAL, TEST_SECONDS)
            except (OSError, ValueError):
                pass

        def pytest_runtest_teardown(self, item):
            try:
                signal.setitimer(signal.ITIMER_REAL, 0)
            except (OSError, ValueError):
                pass

    try:
        import hypothesis

        hypothesis.settings.register_profile("carve", derandomize=True, database=None)
        hypothesis.settings.load_profile("carve")
    except Exception:  # noqa: BLE001 - no Hypothesis, or one that refuses: runs as it is
        pass
    import pytest

    arguments = [
        os.path.join(root, test_file),
        "-q",
        "-s",
        "-p",
        "no:cacheprovider",
        "--assert=plain",
        "--rootdir",
        root,
        "--confcutdir",
        root,
        "-o",
        "addopts=",
        "-W",
        "ignore",
    ]
    status = pytest.main(arguments, plugins=[Bounded()])
    causes = [[*key, cause, n] for key, found in missed.items() for cause, n in found.items()]
    return [int(status), records, causes]
