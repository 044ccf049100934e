"""``execretrieval report DIR``: plots and a summary.md from the report JSONs in a directory.

Reads every ``DIR/*.json`` that is a schema_version 1 report (others are skipped with a note),
writes next to them, with fixed names:

* ``exec_at_k.png``: exec@k at every cut-off of :data:`.metrics.KS` per model, with the
  reports' 95% CIs;
* ``deception_by_operator.png``: deceived-pair rate by operator class (and overall), grouped
  bars per model, each labelled with its number of pairs
  (:func:`pytest_execretrieval.scoring.analyses.deception`);
* ``density_ablation.png``: expected exec@1 against the number ``d`` of own distractors kept
  (:func:`pytest_execretrieval.scoring.analyses.density_ablation`);
* ``similarity_<model>.png``: equivalent-vs-mutant code-to-code similarity histograms, per
  model that has ``code_similarity`` data (the output and summary.md say why any is missing:
  :func:`similarity_notes`);
* ``summary.md``: what a session writes (:func:`.report.summary_markdown`: the gates'
  decisions and the flips against the baseline first, from the reports' gate records), with
  the metrics tables of every pair (:func:`.comparison.compare_reports`, markdown) and the
  images.

matplotlib (the ``plots`` extra) is imported only when plotting, with the Agg canvas;
:func:`plot_pngs` gives the same plots as PNG bytes, for the HTML page, without writing them.
"""

from __future__ import annotations

import io
import math
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ..safe_write import atomic_path, write_atomic
from ..sanitize import escape
from ..scoring.analyses import DENSITIES, code_similarity_samples, operator_order
from ..scoring.analyses import analyses as run_analyses
from ..scoring.compare import ReportError, load_report, report_names
from ..scoring.metrics import at_k
from .comparison import compare_reports
from .cross_language_text import FILE_STEM as CROSS_LANGUAGE
from .report import file_stem, summary_markdown
from .tables import or_na
from .verdict import HTML_FILE, report_label

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = [
    "DECEPTION_PNG",
    "DENSITY_PNG",
    "EXEC_AT_K_PNG",
    "SUMMARY_MD",
    "load_reports",
    "deception_figure",
    "plot_pngs",
    "similarity_notes",
    "similarity_png",
    "write_plots",
    "write_report",
]

EXEC_AT_K_PNG = "exec_at_k.png"
DECEPTION_PNG = "deception_by_operator.png"
DENSITY_PNG = "density_ablation.png"
SUMMARY_MD = "summary.md"
INSTALL_HINT = "pip install 'pytest-execretrieval[plots]'"


def similarity_png(name: str) -> str:
    """File name of a model's similarity histogram."""
    return f"similarity_{file_stem(name)}.png"


def load_reports(directory: Path) -> tuple[list[dict], list[str]]:
    """The schema_version 1 reports among ``directory/*.json`` (by file name) and skip notes
    (``cross-language.json``, the paired analysis a session writes beside its reports, is no
    report and needs no note)."""
    reports, notes = [], []
    for path in sorted(Path(directory).glob("*.json")):
        if path.name == f"{CROSS_LANGUAGE}.json":
            continue
        try:
            reports.append(load_report(path))
        except ReportError as exc:
            notes.append(f"skipping {exc}")
    return reports, notes


def _nan(x: float | None) -> float:
    return math.nan if x is None else float(x)


def write_plots(reports: Sequence[dict], analyses: Sequence[dict], out_dir: Path) -> list[Path]:
    """Write the PNGs for ``reports`` (with their :func:`analyses`) into ``out_dir``.

    Returns the written paths in a fixed order.  Raises ``ImportError`` without matplotlib.
    """
    written: list[Path] = []
    for file_name, fig in _figures(reports, analyses):
        path = Path(out_dir) / file_name
        with atomic_path(path, suffix=".png") as tmp:
            fig.savefig(tmp, dpi=100, format="png")
        written.append(path)
    return written


def plot_pngs(reports: Sequence[dict], analyses: Sequence[dict]) -> dict[str, bytes]:
    """The plots of :func:`write_plots` as PNG bytes by file name, nothing written.  Raises
    ``ImportError`` without matplotlib."""
    pngs = {}
    for file_name, fig in _figures(reports, analyses):
        buffer = io.BytesIO()
        fig.savefig(buffer, dpi=100, format="png")
        pngs[file_name] = buffer.getvalue()
    return pngs


def _figures(reports: Sequence[dict], analyses: Sequence[dict]) -> Iterator[tuple[str, Figure]]:
    """Each plot's file name and figure (on the Agg canvas), in a fixed order."""
    import numpy as np
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    names = report_names(list(reports))

    def drawn(fig: Figure, file_name: str) -> tuple[str, Figure]:
        FigureCanvasAgg(fig)
        return file_name, fig

    # exec@k curves
    fig = Figure(figsize=(6, 4), layout="constrained")
    ax = fig.add_subplot()
    # the cut-offs every report has (an older report may lack a newer one)
    curve = [m for m in at_k("exec") if all(m.name in r["metrics"] for r in reports)]
    ks = [m.k for m in curve if m.k is not None]  # every at_k metric has its k
    for name, r in zip(names, reports):
        ys = np.array([r["metrics"][m.name] for m in curve])
        ci = np.array([r["ci95"][m.name] for m in curve])
        err = np.clip(np.stack([ys - ci[:, 0], ci[:, 1] - ys]), 0, None)
        ax.errorbar(ks, ys, yerr=err, marker="o", capsize=3, label=name)
    ax.set(xlabel="k", ylabel="exec@k", xticks=ks, ylim=(0, 1.05), title="exec@k (95% CI)")
    ax.legend(fontsize="small")
    yield drawn(fig, EXEC_AT_K_PNG)

    # deception by operator class
    yield drawn(deception_figure(names, analyses), DECEPTION_PNG)

    # density ablation
    fig = Figure(figsize=(6, 4), layout="constrained")
    ax = fig.add_subplot()
    for name, a in zip(names, analyses):
        dens = a["density_ablation"]
        ax.plot(dens["d"], [_nan(v) for v in dens["expected_exec1"]], marker="o", label=name)
    ax.set(
        xlabel="own distractors kept per query (d)",
        ylabel="expected exec@1",
        ylim=(0, 1.05),
        xticks=list(DENSITIES),
        title="Distractor density ablation",
    )
    ax.legend(fontsize="small")
    yield drawn(fig, DENSITY_PNG)

    # equivalent-vs-mutant similarity histograms
    for name, r, a in zip(names, reports, analyses):
        equivalent, mutant = code_similarity_samples(r)
        if not equivalent or not mutant:
            continue
        edges = np.histogram_bin_edges(np.concatenate([equivalent, mutant]), bins=20).tolist()
        fig = Figure(figsize=(6, 4), layout="constrained")
        ax = fig.add_subplot()
        ax.hist(
            equivalent,
            bins=edges,
            alpha=0.6,
            density=True,
            label=f"equivalent (n={len(equivalent)})",
        )
        ax.hist(mutant, bins=edges, alpha=0.6, density=True, label=f"mutant (n={len(mutant)})")
        c2c = a["code_to_code"] or {}
        ax.set(
            xlabel="cosine similarity to the canonical",
            ylabel="density",
            title=f"{name}: code-to-code similarity (AUC {or_na(c2c.get('auc'))})",
        )
        ax.legend(fontsize="small")
        yield drawn(fig, similarity_png(name))


def deception_figure(names: Sequence[str], analyses: Sequence[dict]) -> Figure:
    """Deceived-pair rate by operator class and overall, one bar per model and class, each bar
    labelled with the number of (query, own distractor) pairs behind it (``n=12``; none when
    the model has no pair of that class). Needs matplotlib."""
    import numpy as np
    from matplotlib.figure import Figure

    classes = operator_order(c for a in analyses for c in a["deception"]["by_operator"])
    groups = [*classes, "overall"]
    fig = Figure(figsize=(max(6, 1.1 * len(groups)), 4), layout="constrained")
    ax = fig.add_subplot()
    width = 0.8 / max(1, len(analyses))
    x = np.arange(len(groups))
    for i, (name, a) in enumerate(zip(names, analyses)):
        dec = a["deception"]
        rows = [dec["by_operator"].get(c, {}) for c in classes] + [dec["overall"]]
        bars = ax.bar(
            x + (i - (len(analyses) - 1) / 2) * width,
            [_nan(r.get("pair_rate")) for r in rows],
            width,
            label=name,
        )
        labels = [f"n={r['n_pairs']}" if r.get("pair_rate") is not None else "" for r in rows]
        ax.bar_label(bars, labels, padding=2, rotation=90, fontsize="x-small")
    ax.set_xticks(x, groups, rotation=30, ha="right", fontsize="small")
    ax.set(
        ylabel="share of (query, own distractor) pairs\nwith distractor >= canonical",
        ylim=(0, 1.4),
        yticks=np.linspace(0, 1, 6),
        title="Deception by operator class (n: pairs per bar)",
    )
    # one row above the bars and their labels (bars reach 1.0)
    ax.legend(fontsize="small", loc="upper left", ncols=min(4, max(1, len(analyses))))
    return fig


SIMILARITY_FLAG = "--execretrieval-code-similarity"


def similarity_notes(reports: Sequence[dict]) -> list[str]:
    """Why a model has no similarity histogram, one line each; ``[]`` when all have one.

    A report lacks code-similarity data unless its run had :data:`SIMILARITY_FLAG` (and a dense
    embedder: a lexical scorer such as BM25 compares no code with code); with the data, a
    histogram still needs items with alternatives. When no report has the data, one line says
    so for all.
    """
    names = report_names(list(reports))
    reasons: dict[str, str] = {}
    for name, r in zip(names, reports):
        equivalent, mutant = code_similarity_samples(r)
        if equivalent and mutant:
            continue
        sims = [q.get("code_similarity") or {} for q in r["per_query"]]
        if r.get("embedder", {}).get("similarity") == "bm25":
            reasons[name] = "a lexical scorer compares no code with code"
        elif not any(s.get("alternatives") or s.get("distractors") for s in sims):
            reasons[name] = f"the report lacks code-similarity data; run with {SIMILARITY_FLAG}"
        else:
            reasons[name] = "no item of the corpus has both an alternative and a distractor"
    lacking = f"the reports lack code-similarity data; run with {SIMILARITY_FLAG}"
    if len(reasons) == len(names) and all(SIMILARITY_FLAG in why for why in reasons.values()):
        return [f"no similarity histograms: {lacking}"]
    return [f"no similarity histogram for {name}: {why}" for name, why in reasons.items()]


def write_report(directory: Path, reports: Sequence[dict]) -> list[Path]:
    """Write the plots and summary.md of ``reports`` into ``directory``; the written paths.

    summary.md opens as a session's does (:func:`.report.summary_markdown`): the decision of
    every report that carries a gate, then its flips against the baseline, before the metrics.
    Raises ``ReportError`` for no reports, :class:`ComparisonError` when the reports are not
    comparable (nothing is written then), ``ImportError`` without matplotlib.
    """
    directory = Path(directory)
    if not reports:
        raise ReportError(f"no schema_version 1 report JSON in {directory}")
    metrics_md = compare_reports(list(reports), fmt="markdown")  # checks comparability first
    results = [run_analyses(r) for r in reports]
    images = write_plots(reports, results, directory)
    names = report_names(list(reports))
    by_name = dict(zip(names, reports))
    gates = {report_label(r, n): r["gate"] for n, r in by_name.items() if r.get("gate")}
    language = next((r["language"] for r in reports if r.get("language")), None)
    summary = directory / SUMMARY_MD
    text = summary_markdown(
        by_name,
        gates,
        results,
        metrics_md,
        [p.name for p in images],
        similarity_notes(reports),
        html=("../" if language else "") + HTML_FILE,
    )
    write_atomic(summary, escape(text))
    return [*images, summary]
