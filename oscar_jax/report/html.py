"""One self-contained HTML page of a fit, to publish or share (``oscar report``).

The page holds the leaderboard (Elo and average-judge logit with intervals, Rank (UB),
votes), the judge table (with any flags the result carries), the win-probability heatmap,
the 1 − D² attenuation plot, the data notes and checks, and the exact command and package
versions that made it. Everything is inline: CSS in a ``<style>`` element, figures as
base64 PNG ``data:`` URIs, no scripts and no external links, so the file opens the same
offline, in a mail attachment or on a static page.
"""

from __future__ import annotations

import base64
import datetime as _dt
import html
import os
import platform
import re
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

from ..fit import companion_fits
from ..io.names import visible
from ..results.boards import ELO_BASE, ELO_SLOPE
from ..results.fit import FitResult
from ..results.schema import CI_LABELS
from ..runtime.validate import atomic_write_text
from .text import check_verdict, data_line, reference_line

__all__ = ["public_command", "public_path", "public_paths", "report_html", "versions", "write_report"]

_CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:2rem auto;max-width:1100px;
 padding:0 1rem;color:#1a1a1a;background:#fff;line-height:1.45}
h1{font-size:1.6rem;margin-bottom:.2rem}h2{font-size:1.2rem;margin-top:2.2rem;border-bottom:1px solid #ddd;
 padding-bottom:.2rem}
p.sub{color:#555;margin-top:0}
table{border-collapse:collapse;margin:.6rem 0;font-size:.9rem}
th,td{padding:.25rem .6rem;text-align:right;border-bottom:1px solid #e6e6e6;white-space:nowrap}
th{background:#f3f5f7;font-weight:600}
td.name,th.name{text-align:left}
tr:nth-child(even) td{background:#fafbfc}
td.flag{color:#D55E00;text-align:left;white-space:normal}
.ok{color:#009E73;font-weight:600}.bad{color:#D55E00;font-weight:600}
figure{margin:1rem 0}figure img{max-width:100%;height:auto;border:1px solid #eee}
figcaption{color:#555;font-size:.85rem}
pre{background:#f6f8fa;padding:.7rem;overflow-x:auto;font-size:.85rem}
ul.notes li{margin:.2rem 0}
footer{margin-top:3rem;color:#777;font-size:.8rem}
"""


_ABS_PATH = re.compile(r"(?<![\w.~:/-])/(?:[\w.+@~-]+/)+[\w.+@~-]*")


def public_path(path) -> str:
    """A path as a published page may show it: relative to the working folder when inside it,
    else only its file name; never the machine's absolute directories."""
    text = str(path)
    if not os.path.isabs(text):
        return text
    rel = os.path.relpath(text, os.getcwd())
    return rel if not rel.startswith("..") else (Path(text).name or text)


def public_paths(text: str) -> str:
    """``text`` with every absolute path in it shown as :func:`public_path` shows it."""
    return _ABS_PATH.sub(lambda m: public_path(m.group()), str(text))


def public_command(argv) -> str:
    """A command line to publish: each path argument (``PATH`` or ``--opt=PATH``) as :func:`public_path`."""
    import shlex

    out = []
    for arg in map(str, argv):
        opt, eq, value = arg.partition("=")
        out.append(f"{opt}={public_path(value)}" if eq and opt.startswith("-") else public_path(arg))
    return shlex.join(out)


def _e(text) -> str:
    # Invisible and direction-changing characters shown as escapes, then HTML-escaped.
    return html.escape(visible(text), quote=True)


def _num(value, spec: str) -> str:
    try:
        v = float(value)
    except (TypeError, ValueError):
        return "–"
    return format(v, spec) if np.isfinite(v) else "–"


def _interval(lo, hi, spec: str) -> str:
    a, b = _num(lo, spec), _num(hi, spec)
    return "–" if "–" in (a, b) else f"[{a}, {b}]"


def _flag_text(value) -> str:
    """Flags as one comma-separated string, whatever shape the result gives them in."""
    if value is None or (isinstance(value, float) and not np.isfinite(value)):
        return ""
    if isinstance(value, str):
        return value
    try:
        return ", ".join(str(v) for v in value if v)
    except TypeError:
        return str(value)


def _flags(table: pd.DataFrame, key: str) -> dict[str, str]:
    """name → flags from a table's ``flags`` column; empty when nothing is flagged (the column is left out)."""
    found = {str(n): _flag_text(f) for n, f in zip(table[key], table["flags"])} if "flags" in table.columns else {}
    return found if any(found.values()) else {}


def _table(headers: list[tuple[str, str]], rows: list[list[str]]) -> str:
    """An HTML table; ``headers`` = (label, css class) and each cell is already escaped."""
    head = "".join(f'<th class="{c}">{_e(h)}</th>' if c else f"<th>{_e(h)}</th>" for h, c in headers)
    body = []
    for row in rows:
        cells = "".join(f'<td class="{c}">{v}</td>' if c else f"<td>{v}</td>" for (_, c), v in zip(headers, row))
        body.append(f"<tr>{cells}</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _png(fn, *args, **kwargs) -> str:
    """Render one figure of :mod:`oscar_jax.report.plots` and return it as a base64 data URI."""
    with tempfile.TemporaryDirectory() as tmp:
        path = fn(*args, Path(tmp) / "figure.png", **kwargs)
        data = Path(path).read_bytes()
    return "data:image/png;base64," + base64.b64encode(data).decode("ascii")


def _figure(uri: str, alt: str, caption: str) -> str:
    return f'<figure><img src="{uri}" alt="{_e(alt)}"><figcaption>{_e(caption)}</figcaption></figure>'


def versions() -> dict[str, str]:
    """Versions of Python, oscar_jax and the numerical packages a result depends on."""
    from .. import __version__

    out = {"python": platform.python_version(), "oscar_jax": __version__}
    for pkg in ("jax", "jaxlib", "numpy", "scipy", "pandas", "matplotlib"):
        try:
            out[pkg] = __import__(pkg).__version__  # every one of them is a dependency, so this is cheap
        except ImportError:
            out[pkg] = "not installed"
    out["platform"] = platform.platform(terse=True)
    return out


def _leaderboard_section(result: FitResult, elo: pd.DataFrame, logit: pd.DataFrame, flags: dict[str, str]) -> str:
    pct = f"{100 * elo.attrs.get('ci_prob', result.ci_prob):g}%"
    headers = [("Rank (UB)", ""), ("Model", "name"), ("Elo", ""), (f"Elo {pct} CI", ""),
               ("logit", ""), (f"logit {pct} CI", ""), ("Votes", "")]
    if flags:
        headers.append(("flags", "flag"))
    by_name = logit.set_index("candidate")
    rows = []
    for r in elo.itertuples(index=False):
        x = by_name.loc[r.candidate]
        # A withheld interval (the result's status) shows why, never a confident number.
        withheld = _e(r.interval) if r.interval != "ok" else None
        row = [str(int(r.rank_ub)), _e(r.candidate), _num(r.score, ".0f"),
               withheld or _interval(r.score_lo, r.score_hi, ".0f"), _num(x.score, ".3f"),
               withheld or _interval(x.score_lo, x.score_hi, ".3f"), f"{int(r.votes):,}"]
        if flags:
            row.append(_e(flags.get(str(r.candidate), "")))
        rows.append(row)
    source = CI_LABELS.get(elo.attrs.get("ci", "sandwich"), elo.attrs.get("ci", ""))
    return (
        "<h2>Leaderboard</h2>"
        f"<p>Scores are average-judge logits x = γ̄·s (independent of the reference judge; "
        f"P(i beats j) = σ(x<sub>i</sub> − x<sub>j</sub>) for a judge of average sensitivity with biases at zero) "
        f"and Elo = {ELO_BASE:g} + {ELO_SLOPE:.2f}·x. Intervals: {pct}, {_e(source)}. "
        "Rank (UB) = 1 + the number of models whose lower bound exceeds this model's upper bound.</p>"
        + _table(headers, rows)
    )


def _judge_section(result: FitResult, table: pd.DataFrame, flags: dict[str, str], ci: str) -> str:
    pct = f"{100 * result.ci_prob:g}%"
    headers = [("judge (* = reference)", "name"), ("records", ""), ("κ", ""), (f"κ {pct} CI", "")]
    has_d = table["D"].notna().any()
    if has_d:
        headers += [("D", ""), (f"D {pct} CI", "")]
    extra = [(c, lbl) for c, lbl in (("beta_len", "β_len"), ("beta_fam", "β_fam")) if table[c].notna().any()]
    headers += [(lbl, "") for _, lbl in extra]
    if flags:
        headers.append(("flags", "flag"))
    status = result.status(ci)
    rows = []
    for k, (_, r) in enumerate(table.iterrows()):
        name = ("* " if bool(r["reference"]) else "") + str(r["judge"])
        row = [_e(name), f"{int(r['n']):,}", _num(r["kappa"], ".3f"),
               _e(status.kappa[k]) if status.kappa[k] else _interval(r["kappa_lo"], r["kappa_hi"], ".3f")]
        if has_d:
            row += [_num(r["D"], ".2f"), _e(status.D[k]) if status.D[k] else _interval(r["D_lo"], r["D_hi"], ".2f")]
        row += [_num(r[c], ".2f") for c, _ in extra]
        if flags:
            row.append(_e(flags.get(str(r["judge"]), "")))
        rows.append(row)
    words = ["κ = γ·RMS(s): how sharply a judge separates the models."]
    if has_d:
        words.append("D = tanh(β<sub>pos</sub>/2): net preference for the first-shown answer (0 = none).")
    words += [{"beta_len": "β_len: length slope.", "beta_fam": "β_fam: bonus to the judge's own model family."}[c]
              for c, _ in extra]
    if has_d or extra:
        words.append("A dash marks a term the data cannot support for that judge.")
    return "<h2>Judges</h2>" + f"<p>{' '.join(words)}</p>" + _table(headers, rows)


def _checks_section(result: FitResult, extra_notes, ci: str = "sandwich") -> str:
    design = result.design
    notes = []
    if design.report is not None:
        notes.append(design.report.summary())
    notes += [str(n) for n in result.notes] + [str(n) for n in extra_notes]
    notes = [public_paths(n) for n in notes]
    note_html = ("<ul class=\"notes\">" + "".join(f"<li>{_e(n)}</li>" for n in notes) + "</ul>") if notes else \
        "<p>No data notes.</p>"
    rows = []
    for name, value in result.checks().items():
        if isinstance(value, dict) and "ok" in value:
            ok = bool(value["ok"])
            detail = ", ".join(f"{k} = {v:.3g}" if isinstance(v, float) else f"{k} = {v}"
                               for k, v in value.items() if k != "ok")
        elif isinstance(value, bool) and name != "all_ok":
            ok, detail = value, ""
        else:
            continue
        mark = '<span class="ok">passed</span>' if ok else '<span class="bad">FAILED</span>'
        rows.append([_e(name.replace("_", " ")), mark, _e(detail)])
    failed = result.failed_checks()
    said = check_verdict(result, ci)  # the CLI's words for the same checks
    ident = result.identification_check(ci)
    if said == "all passed":
        verdict = '<p class="ok">All checks passed.</p>'
    else:
        items = [f'<li class="bad">{_e(f)}</li>' for f in failed]
        items += [f'<li class="bad">{_e(m)}</li>' for m in ident["messages"]]
        said = said.replace("(! below)", "(flagged rows are marked in the tables above)")
        verdict = f'<p class="bad">Checks: {_e(said)}.</p><ul class="notes">' + "".join(items) + "</ul>"
    return ("<h2>Data notes and checks</h2>" + note_html
            + "<p>Fit checks (optimizer converged, curvature positive, every quantity identified; the paper's "
              "Appendix B.3):</p>" + verdict
            + _table([("check", "name"), ("result", "name"), ("details", "name")], rows))


def _provenance_section(command: str | None) -> str:
    vers = versions()
    rows = [[_e(k), _e(v)] for k, v in vers.items()]
    cmd = public_paths(command) if command else "(called from Python)"
    return ("<h2>How this page was made</h2>"
            f"<pre><code>{_e(cmd)}</code></pre>"
            + _table([("package", "name"), ("version", "name")], rows))


def report_html(result: FitResult, *, ci: str = "sandwich", j_fit: FitResult | None = None,
                pos_fit: FitResult | None = None, command: str | None = None, title: str | None = None, notes=(),
                ridge: float | None = None, seed: int = 0) -> str:
    """The HTML text of a self-contained report of ``result``.

    Parameters
    ----------
    result
        The fit to report.
    ci
        ``"sandwich"`` (prompt-cluster, default) or ``"model"`` intervals.
    j_fit, pos_fit
        A J fit and a fit with the position term on the same data, for the judge panel
        and the 1 − D² attenuation plot (default: :func:`oscar_jax.fit.companion_fits`).
    command
        The command line shown under "How this page was made".
    notes
        Extra lines for the data-notes list.
    ridge, seed
        Passed to the companion fits (use the values ``result`` was fitted with).
    """
    from ..attenuation import attenuation
    from .plots import attenuation_scatter, forest_plot, judge_panel, win_heatmap

    elo, logit = result.leaderboard(ci, scale="elo"), result.leaderboard(ci)
    if j_fit is None or pos_fit is None:
        auto_j, auto_pos = companion_fits(result, ridge=ridge, seed=seed)
        j_fit = auto_j if j_fit is None else j_fit
        pos_fit = auto_pos if pos_fit is None else pos_fit
    jt = result.judges(ci)

    d = result.design
    title = title or f"OSCAR leaderboard: {Path(d.report.source).name if d.report is not None else 'data'}"
    when = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    summary = f"{data_line(d, result.effective_spec.name + ' model')} · {reference_line(result, 200)}"
    parts = [f"<h1>{_e(title)}</h1>", f'<p class="sub">{_e(summary)}</p>']
    parts.append(_leaderboard_section(result, elo, logit, _flags(logit, "candidate")))
    parts.append(_figure(_png(forest_plot, elo), "forest plot of the scores",
                         "Scores with intervals, best at the top."))
    parts.append(_judge_section(result, jt, _flags(jt, "judge"), ci))
    parts.append(_figure(_png(judge_panel, result, j_fit=j_fit, ci=ci), "judge panel",
                         "(a) sensitivity κ without bias terms (J) against the chosen model; (b) first-slot "
                         "preference D; (c) bias coefficients."))
    parts.append("<h2>Win probabilities</h2>")
    parts.append(_figure(_png(win_heatmap, result, ci=ci), "win-probability heatmap",
                         "P(row model beats column model) for a judge of average sensitivity with biases at zero, "
                         "rows and columns ordered by score."))
    parts.append("<h2>Position bias attenuates sensitivity (1 − D²)</h2>")
    if "pos" in pos_fit.effective_spec.terms and "pos" not in j_fit.effective_spec.terms:
        att = attenuation(j_fit, pos_fit)
        parts.append(_figure(_png(attenuation_scatter, att), "attenuation plot",
                             "A judge who prefers the first-shown answer looks less sensitive when position is not "
                             "modelled: the κ ratio without/with position is predicted to be 1 − D² "
                             "(the paper's Eq. 5, Fig. 1(c))."))
    else:
        parts.append("<p>Not available: the data do not support a position term.</p>")
    parts.append(_checks_section(result, notes, ci))
    parts.append(_provenance_section(command))
    parts.append(f"<footer>Generated {when} by oscar_jax.</footer>")
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>{_e(title)}</title><style>{_CSS}</style></head><body>"
            + "\n".join(parts) + "</body></html>\n")


def write_report(path, result: FitResult, **kwargs) -> Path:
    """Write :func:`report_html` to ``path`` (via a temporary file, so a failed run leaves no half page)."""
    return atomic_write_text(path, report_html(result, **kwargs))
