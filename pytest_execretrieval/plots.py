"""``execretrieval report DIR``: plots and a summary.md from the report JSONs in a directory.

Reads every ``DIR/*.json`` that is a schema_version 1 report (others are skipped with a note),
writes next to them, with fixed names:

* ``exec_at_k.png``: exec@k at every cut-off of :data:`.metrics.KS` per model, with the
  reports' 95% CIs;
* ``deception_by_operator.png``: deceived-pair rate by operator class (and overall), grouped
  bars per model (:func:`pytest_execretrieval.analyses.deception`);
* ``density_ablation.png``: expected exec@1 against the number ``d`` of own distractors kept
  (:func:`pytest_execretrieval.analyses.density_ablation`);
* ``similarity_<model>.png``: equivalent-vs-mutant code-to-code similarity histograms, per
  model that has ``code_similarity`` data;
* ``summary.md``: the metrics tables (:func:`pytest_execretrieval.compare.compare_reports`,
  markdown), the images and a table of analysis highlights.

matplotlib (the ``plots`` extra) is imported only when plotting, with the Agg canvas.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Sequence
from pathlib import Path

from .analyses import DENSITIES, code_similarity_samples, operator_order
from .analyses import analyses as run_analyses
from .compare import ComparisonError, ReportError, compare_reports, load_report, report_names
from .metrics import HEADLINE, at_k
from .report import file_stem

__all__ = [
    "DECEPTION_PNG",
    "DENSITY_PNG",
    "EXEC_AT_K_PNG",
    "SUMMARY_MD",
    "load_reports",
    "main_report",
    "analyses_markdown",
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
    """The schema_version 1 reports among ``directory/*.json`` (by file name) and skip notes."""
    reports, notes = [], []
    for path in sorted(Path(directory).glob("*.json")):
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
    import numpy as np
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    out_dir = Path(out_dir)
    names = report_names(list(reports))
    written: list[Path] = []

    def save(fig: Figure, file_name: str) -> None:
        FigureCanvasAgg(fig)
        path = out_dir / file_name
        fig.savefig(path, dpi=100, format="png")
        written.append(path)

    # exec@k curves
    fig = Figure(figsize=(6, 4), layout="constrained")
    ax = fig.add_subplot()
    # the cut-offs every report has (an older report may lack a newer one)
    curve = [m for m in at_k("exec") if all(m.name in r["metrics"] for r in reports)]
    ks = [m.k for m in curve]
    for name, r in zip(names, reports):
        ys = np.array([r["metrics"][m.name] for m in curve])
        ci = np.array([r["ci95"][m.name] for m in curve])
        err = np.clip(np.stack([ys - ci[:, 0], ci[:, 1] - ys]), 0, None)
        ax.errorbar(ks, ys, yerr=err, marker="o", capsize=3, label=name)
    ax.set(xlabel="k", ylabel="exec@k", xticks=ks, ylim=(0, 1.05), title="exec@k (95% CI)")
    ax.legend(fontsize="small")
    save(fig, EXEC_AT_K_PNG)

    # deception by operator class
    classes = operator_order(c for a in analyses for c in a["deception"]["by_operator"])
    groups = [*classes, "overall"]
    fig = Figure(figsize=(max(6, 1.1 * len(groups)), 4), layout="constrained")
    ax = fig.add_subplot()
    width = 0.8 / max(1, len(reports))
    x = np.arange(len(groups))
    for i, (name, a) in enumerate(zip(names, analyses)):
        dec = a["deception"]
        rows = [dec["by_operator"].get(c, {}) for c in classes] + [dec["overall"]]
        ax.bar(x + (i - (len(reports) - 1) / 2) * width, [_nan(r.get("pair_rate")) for r in rows],
               width, label=name)  # fmt: skip
    ax.set_xticks(x, groups, rotation=30, ha="right", fontsize="small")
    ax.set(ylabel="share of (query, own distractor) pairs\nwith distractor >= canonical",
           ylim=(0, 1.05), title="Deception by operator class")  # fmt: skip
    ax.legend(fontsize="small")
    save(fig, DECEPTION_PNG)

    # density ablation
    fig = Figure(figsize=(6, 4), layout="constrained")
    ax = fig.add_subplot()
    for name, a in zip(names, analyses):
        dens = a["density_ablation"]
        ax.plot(dens["d"], [_nan(v) for v in dens["expected_exec1"]], marker="o", label=name)
    ax.set(xlabel="own distractors kept per query (d)", ylabel="expected exec@1", ylim=(0, 1.05),
           xticks=list(DENSITIES), title="Distractor density ablation")  # fmt: skip
    ax.legend(fontsize="small")
    save(fig, DENSITY_PNG)

    # equivalent-vs-mutant similarity histograms
    for name, r, a in zip(names, reports, analyses):
        equivalent, mutant = code_similarity_samples(r)
        if not equivalent or not mutant:
            continue
        edges = np.histogram_bin_edges(np.concatenate([equivalent, mutant]), bins=20)
        fig = Figure(figsize=(6, 4), layout="constrained")
        ax = fig.add_subplot()
        ax.hist(equivalent, bins=edges, alpha=0.6, density=True,
                label=f"equivalent (n={len(equivalent)})")  # fmt: skip
        ax.hist(mutant, bins=edges, alpha=0.6, density=True, label=f"mutant (n={len(mutant)})")
        c2c = a["code_to_code"] or {}
        ax.set(xlabel="cosine similarity to the canonical", ylabel="density",
               title=f"{name}: code-to-code similarity (AUC {_fmt(c2c.get('auc'))})")  # fmt: skip
        ax.legend(fontsize="small")
        save(fig, similarity_png(name))
    return written


def _fmt(x: float | None, spec: str = ".3f") -> str:
    return "n/a" if x is None else format(x, spec)


def analyses_markdown(
    reports: Sequence[dict], analyses: Sequence[dict], images: Sequence[str], metrics_md: str
) -> str:
    """The summary.md text of reports with their analyses: corpus line, metrics tables
    (``metrics_md``), images, analysis highlights."""
    names = report_names(list(reports))
    corpus = reports[0]["corpus"]
    lines = [
        "# ExecRetrieval report", "",
        (f"Corpus `{corpus['sha256'][:16]}`: {corpus.get('n_queries', '?')} queries, "
         f"{corpus.get('n_snippets', '?')} snippets in the pool; {len(reports)} model(s)."), "",
        metrics_md.rstrip(), "",
    ]  # fmt: skip
    if images:
        lines += ["## Plots", "", *(f"![{Path(img).stem}]({img})" for img in images), ""]
    lines += [
        "## Analyses highlights", "",
        ("Deceived pair: an own distractor (mutant of the query's canonical) scoring >= the "
         "canonical. Margin: canonical score minus the best own distractor score. Rank-1 misses: "
         "share of failing rank-1 snippets that are the query's own distractor. Density: "
         "expected exec@1 keeping d own distractors per query. rho: Spearman(edit chars, "
         "margin). AUC: equivalent vs mutant code-to-code similarity (< 0.5 = inverted)."), "",
        ("| model | deceived pairs | queries deceived | median margin | rank-1 misses to own "
         f"distractor | exec@1 at d={DENSITIES[0]} / d={DENSITIES[-1]} | rho | AUC | "
         "false-high rate |"),
        "|---|---|---|---|---|---|---|---|---|",
    ]  # fmt: skip
    for name, a in zip(names, analyses):
        dec = a["deception"]["overall"]
        dens = a["density_ablation"]["expected_exec1"]
        c2c = a["code_to_code"] or {}
        miss = a["rank1_miss_attribution"]
        lines.append(
            f"| {name} | {_fmt(dec['pair_rate'])} ({dec['n_pairs']}) | {_fmt(dec['query_rate'])} | "
            f"{_fmt(dec['median_margin'], '+.4f')} | {_fmt(miss['own_distractor_share'])} "
            f"({miss['n_misses']} misses) | {_fmt(dens[0])} / {_fmt(dens[-1])} | "
            f"{_fmt(a['edit_size']['spearman_rho'])} | {_fmt(c2c.get('auc'))} | "
            f"{_fmt(c2c.get('false_high_rate'))} |"
        )
    domains = sorted({d for a in analyses for d in a["per_domain"]})
    if domains:
        lines += ["", f"{HEADLINE} by domain (queries):", "", f"| domain | {' | '.join(names)} |",
                  f"|---|{'---|' * len(names)}"]  # fmt: skip
        for dom in domains:
            cells = [a["per_domain"].get(dom) for a in analyses]
            lines.append(
                f"| {dom} | "
                + " | ".join(
                    "n/a" if c is None else f"{_fmt(c[HEADLINE])} ({c['n']})" for c in cells
                )
                + " |"
            )
    return "\n".join(lines) + "\n"


def write_report(directory: Path, reports: Sequence[dict]) -> list[Path]:
    """Write the plots and summary.md of ``reports`` into ``directory``; the written paths.

    Raises ``ReportError`` for no reports, :class:`ComparisonError` when the reports are not
    comparable (nothing is written then), ``ImportError`` without matplotlib.
    """
    directory = Path(directory)
    if not reports:
        raise ReportError(f"no schema_version 1 report JSON in {directory}")
    metrics_md = compare_reports(list(reports), fmt="markdown")  # checks comparability first
    results = [run_analyses(r) for r in reports]
    images = write_plots(reports, results, directory)
    summary = directory / SUMMARY_MD
    text = analyses_markdown(reports, results, [p.name for p in images], metrics_md)
    summary.write_text(text, encoding="utf-8")
    return [*images, summary]


def main_report(argv: Sequence[str] | None = None) -> int:
    """``execretrieval report DIR``: exit 0, or 2 with a message (no matplotlib, no reports)."""
    p = argparse.ArgumentParser(
        prog="execretrieval report",
        description="Plots and summary.md from the report JSONs in DIR.",
    )
    p.add_argument("directory", metavar="DIR")
    args = p.parse_args(argv)
    directory = Path(args.directory)
    if not directory.is_dir():
        print(f"execretrieval report: {directory} is not a directory", file=sys.stderr)
        return 2
    try:
        import matplotlib  # noqa: F401 - availability check only
    except ImportError:
        print(f"execretrieval report: matplotlib is not installed: {INSTALL_HINT}", file=sys.stderr)
        return 2
    reports, notes = load_reports(directory)
    for note in notes:
        print(f"execretrieval report: {note}", file=sys.stderr)
    try:
        written = write_report(directory, reports)
    except (ReportError, ComparisonError) as exc:
        print(f"execretrieval report: {exc}", file=sys.stderr)
        return 2
    except KeyError as exc:
        print(f"execretrieval report: malformed report (missing key {exc})", file=sys.stderr)
        return 2
    for path in written:
        print(f"wrote {path}")
    return 0
