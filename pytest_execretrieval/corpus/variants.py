"""Which corpus of an items directory: one row of :data:`VARIANTS` and its number of edits.

Every corpus kind is one row: its folder, the options that select it, where its candidates come
from, which classes its selection prefers and what its engine records of its generator. A new
kind (a mined corpus, one with real bugs) is one more row; nothing else reads the options.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..mutation.families import ALL_CLASSES, ALL_OPERATORS, FAMILY_CANDIDATES_PER_CLASS
from ..mutation.fingerprint import families_version
from ..mutation.operators import CORE_CLASSES, Mutant, generate_mutants
from . import balanced
from .behaviours import BEHAVIOURS_VERSION
from .items import BenchmarkItem

MAX_STACK = 4  # `execretrieval build --stack K` builds K = 2..4
# The options that select a corpus (`execretrieval build --stack/--source/--families`, the
# `--execretrieval-*` flags and ini keys of the same names), with their defaults: the default
# corpus. A row names the values that select it; an option left at its default selects nothing.
OPTION_DEFAULTS: dict[str, object] = {
    "stack": 1,
    "source": "operators",
    "families": False,
    "balanced": False,
}

Candidates = Callable[[BenchmarkItem], list[Mutant]]


class VariantUnavailable(Exception):
    """A corpus kind's generator needs an extra that is not installed; the message says how to
    install it."""


@dataclass(frozen=True)
class CorpusKind:
    """One kind of corpus (a row of :data:`VARIANTS`).

    ``ks``: the edits per distractor its corpora may have. ``directory``: its folder under the
    items directory (``""``: the directory itself), ``{k}`` standing for the edits.
    ``options(k)``: the options, at their non-default values, that select it with ``k`` edits.
    ``generator()``: loads its single-edit candidates' generator (an extra is imported only
    then; :class:`VariantUnavailable` when missing). ``preferred``: the classes its selection
    prefers after distinct classes. ``engine()``: what its corpora record of their generator
    beyond the engine every corpus records (a change makes them stale). ``centred``: its
    families are centred on a wrong member where :mod:`.balanced` draws it (the single edits
    are run first, then the chosen centre's own single edits). ``distinct``: behaviourally
    duplicate distractors count as one (:mod:`.behaviours`)."""

    name: str
    ks: range
    directory: str
    options: Callable[[int], dict[str, object]]
    generator: Callable[[], Candidates]
    preferred: tuple[str, ...] = CORE_CLASSES
    engine: Callable[[], dict] = dict
    centred: bool = False
    distinct: bool = False


def _language_operators(item: BenchmarkItem) -> list[Mutant]:
    """The item's language's own operator table (the paper's candidates)."""
    return list(item.lang.mutants(item.canonical, item.entry_point))


def _every_class(item: BenchmarkItem) -> list[Mutant]:
    """Every class's operators, the real-bug families too, the first
    :data:`~.mutation.families.FAMILY_CANDIDATES_PER_CLASS` of each."""
    return generate_mutants(
        item.canonical, item.entry_point, ALL_OPERATORS, FAMILY_CANDIDATES_PER_CLASS
    )


def _mutmut():
    """:mod:`.mutation.mutmut_source`, the only module that imports mutmut and libcst."""
    try:
        from ..mutation import mutmut_source
    except ImportError as exc:
        raise VariantUnavailable(
            f"--source mutmut needs mutmut: pip install 'pytest-execretrieval[mutmut]' ({exc})"
        ) from None
    return mutmut_source


def _mutmut_candidates() -> Candidates:
    generate = _mutmut().generate_mutmut_mutants
    return lambda item: generate(item.canonical, item.entry_point)


def _families_engine() -> dict:
    return {"families": families_version(), "candidates_per_class": FAMILY_CANDIDATES_PER_CLASS}


VARIANTS: dict[str, CorpusKind] = {
    kind.name: kind
    for kind in (
        # The paper's shape: single edits of the core operator classes, in the directory itself.
        # Behaviourally duplicate distractors count as one (.behaviours).
        CorpusKind(
            "default",
            range(1, 2),
            "",
            lambda k: {},
            lambda: _language_operators,
            engine=lambda: {"behaviours": BEHAVIOURS_VERSION},
            distinct=True,
        ),
        # K > 1 edits per distractor on disjoint lines, stacked from proven single edits.
        CorpusKind(
            "stack",
            range(2, MAX_STACK + 1),
            "stack-{k}",
            lambda k: {"stack": k},
            lambda: _language_operators,
        ),
        # Candidates from mutmut's own operators.
        CorpusKind(
            "mutmut",
            range(1, 2),
            "mutmut",
            lambda k: {"source": "mutmut"},
            _mutmut_candidates,
            engine=lambda: {"source": _mutmut().engine_source()},
        ),
        # Distractors drawn across every operator class, the real-bug families alike.
        CorpusKind(
            "families",
            range(1, 2),
            "families",
            lambda k: {"families": True},
            lambda: _every_class,
            preferred=ALL_CLASSES,
            engine=_families_engine,
        ),
        # Families whose shape does not name the canonical: most centred on a wrong member.
        CorpusKind(
            "balanced",
            range(1, 2),
            "balanced",
            lambda k: {"balanced": True},
            lambda: _language_operators,
            engine=balanced.engine,
            centred=True,
        ),
    )
}
# `--source`'s choices: the default and every kind that `--source NAME` selects.
SOURCES = (
    str(OPTION_DEFAULTS["source"]),
    *(kind.name for kind in VARIANTS.values() if "source" in kind.options(kind.ks[0])),
)


@dataclass(frozen=True, init=False)
class CorpusVariant:
    """One corpus of an items directory: a kind of :data:`VARIANTS` and its ``k`` edits per
    distractor. Made from the options that select it, in their spelling
    (``CorpusVariant(stack=3)``, ``CorpusVariant(source="mutmut")``,
    ``CorpusVariant(families=True)``, ``CorpusVariant(balanced=True)``), or from its row
    (:meth:`of`); options that select different corpora are a ``ValueError`` (:meth:`checked`
    names the options)."""

    kind: str
    k: int

    def __init__(
        self,
        stack: int = 1,
        source: str = "operators",
        families: bool = False,
        balanced: bool = False,
    ):
        options = {"stack": stack, "source": source, "families": families, "balanced": balanced}
        kind, k = _resolve(options, str)
        object.__setattr__(self, "kind", kind.name)
        object.__setattr__(self, "k", k)

    @classmethod
    def checked(
        cls,
        stack: int,
        source: str,
        families: bool,
        flag: Callable[[str], str],
        balanced: bool = False,
    ) -> CorpusVariant:
        """The variant that command-line options ask for; the ``ValueError`` of a conflict
        spells each option as ``flag(name)`` does (``--stack``, ``--execretrieval-stack``)."""
        options = {"stack": stack, "source": source, "families": families, "balanced": balanced}
        _resolve(options, flag)
        return cls(stack, source, families, balanced)

    @classmethod
    def of(cls, kind: str, k: int = 1) -> CorpusVariant:
        """The ``kind`` row's corpus with ``k`` edits per distractor."""
        row = VARIANTS.get(kind)
        if row is None or k not in row.ks:
            raise ValueError(f"no {kind!r} corpus with {k} edits; the kinds: {tuple(VARIANTS)}")
        return cls(**row.options(k))  # type: ignore[arg-type]

    @property
    def row(self) -> CorpusKind:
        return VARIANTS[self.kind]

    @property
    def flags(self) -> tuple[str, ...]:
        """The ``execretrieval build`` options that select this corpus (none: the default)."""
        return tuple(_spelled(name, value, "--{}".format) for name, value in self._options())

    def _options(self) -> list[tuple[str, object]]:
        return list(self.row.options(self.k).items())


def _spelled(name: str, value: object, flag: Callable[[str], str]) -> str:
    """An option as a command line writes it: ``--families``, ``--stack 2``."""
    return flag(name) if value is True else f"{flag(name)} {value}"


def _resolve(options: dict[str, object], flag: Callable[[str], str]) -> tuple[CorpusKind, int]:
    """The row and edits the options select; a ``ValueError`` naming the options (spelled by
    ``flag``) when a value is out of range or two options select different corpora."""
    stack, source = options["stack"], options["source"]
    if not (isinstance(stack, int) and 1 <= stack <= MAX_STACK):
        raise ValueError(f"{flag('stack')}: {stack} is not in 1..{MAX_STACK}")
    if source not in SOURCES:
        raise ValueError(f"{flag('source')}: {source!r} is not one of {SOURCES}")
    asked = {name: v for name, v in options.items() if v != OPTION_DEFAULTS[name]}
    for kind in VARIANTS.values():
        for k in kind.ks:
            if kind.options(k) == asked:
                return kind, k
    raise ValueError(_conflict(list(asked.items()), flag))


def _conflict(asked: list[tuple[str, object]], flag: Callable[[str], str]) -> str:
    """Why two of the options ``asked`` (the first two, in option order) exclude each other."""
    (first, first_value), (second, second_value) = asked[:2]
    if first == "stack":  # several edits: every other kind has single edits only
        return (
            f"{_spelled(second, second_value, flag)} has single edits only: "
            f"drop {_spelled(first, first_value, flag)}"
        )
    return (
        f"{_spelled(first, first_value, flag)} and {_spelled(second, second_value, flag)} "
        "select different corpora: drop one"
    )


DEFAULT_VARIANT = CorpusVariant()


def corpus_dir(items_dir: Path, variant: CorpusVariant = DEFAULT_VARIANT) -> Path:
    """Where the ``variant`` corpus of ``items_dir`` lives (its row's directory)."""
    return Path(items_dir) / variant.row.directory.format(k=variant.k)


def build_command(items_dir: Path, variant: CorpusVariant = DEFAULT_VARIANT) -> str:
    """The ``execretrieval build`` command line that (re)builds the ``variant`` corpus."""
    return " ".join(("execretrieval", "build", str(items_dir), *variant.flags))
