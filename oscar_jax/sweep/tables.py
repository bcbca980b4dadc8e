"""The outcome of a sweep: per-replicate rows, aggregates with Monte Carlo errors (G.3),
paired method differences, failure counts, Markdown and JSON.

The replicates are held as numpy columns and the tables made as rows in numpy, so that
``oscar simulate`` prints its summary without importing pandas (0.23–0.27 CPU-s beside
JAX); the DataFrames of the Python API are built from the same rows on first use."""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property, lru_cache, partial
from importlib.metadata import version
from pathlib import Path
from statistics import NormalDist

import numpy as np

from ..simulate import SimParams
from ..runtime.cache import remembered
from ..runtime.validate import OscarInputError
from .metrics import CHECKS, METRICS
from .settings import method_spec

__all__ = ["BINARY_METRICS", "SweepResult", "mc_summary", "paired_proportion_interval", "wilson_interval"]

BINARY_METRICS = ("top1",)  # 0/1 per replicate: proportions, with score intervals


@lru_cache(maxsize=None)
def _t_crit(level: float, dof: int) -> float:
    """The t_{dof} quantile of an interval at ``level``: ``scipy.stats.t.ppf`` bit for bit,
    from the special function it calls (``scipy.stats`` costs a sweep 0.3–0.5 s of imports),
    remembered in the cache folder (``scipy.special`` alone costs 0.17 CPU-s). Once per
    (level, dof) in a process: a table asks for each row, and scipy's version (the key)
    costs 2 ms to look up."""
    if dof <= 0:
        return float("nan")
    p = 0.5 + level / 2.0
    return remembered("t_quantiles", f"scipy {version('scipy')}: stdtrit({dof}, {p!r})", partial(_stdtrit, dof, p))


def _stdtrit(dof: int, p: float) -> float:
    from scipy.special import stdtrit

    return float(stdtrit(dof, p))


def mc_summary(values: np.ndarray, level: float) -> tuple[float, float, float, float]:
    """(mean, Monte Carlo SE = sd/√R, lower, upper) with a t_{R−1} interval (G.3)."""
    values = np.asarray(values, dtype=float)
    r = values.size
    if r == 0:
        return (math.nan,) * 4
    mean = float(np.mean(values))
    if r < 2:
        return mean, math.nan, math.nan, math.nan
    se = float(np.std(values, ddof=1) / math.sqrt(r))
    half = _t_crit(level, r - 1) * se
    return mean, se, mean - half, mean + half


def wilson_interval(successes: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """Wilson score interval for a proportion: inside [0, 1] for any count (a t interval on
    0/1 outcomes is not, e.g. 1.044 for 97 of 100)."""
    if n <= 0 or not 0 <= successes <= n:  # not a count of successes out of n
        return math.nan, math.nan
    z = NormalDist().inv_cdf(0.5 + level / 2.0)
    p = successes / n
    denom = 1.0 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def paired_proportion_interval(x, y, level: float = 0.95) -> tuple[float, float]:
    """Interval for mean(x) − mean(y) of paired 0/1 outcomes: Newcombe's (1998) method 10.

    Wilson intervals of the two proportions combined through the phi correlation of the
    pairs; it stays inside [−1, 1], where a t interval on the 0/1 differences runs past 1
    (e.g. when one method finds the best candidate in every replicate and the other never).
    """
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    n = x.size
    if n == 0 or x.shape != y.shape or not np.all(np.isin(x, (0.0, 1.0)) & np.isin(y, (0.0, 1.0))):
        return math.nan, math.nan
    a, b = int(np.sum((x == 1) & (y == 1))), int(np.sum((x == 1) & (y == 0)))
    c, d = int(np.sum((x == 0) & (y == 1))), int(np.sum((x == 0) & (y == 0)))
    p1, p2 = (a + b) / n, (a + c) / n
    l1, u1 = wilson_interval(a + b, n, level)
    l2, u2 = wilson_interval(a + c, n, level)
    denom = (a + b) * (c + d) * (a + c) * (b + d)
    phi = (a * d - b * c) / math.sqrt(denom) if denom > 0 else 0.0
    delta = math.sqrt(max((p1 - l1) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2) + (u2 - p2) ** 2, 0.0))
    eps = math.sqrt(max((u1 - p1) ** 2 - 2 * phi * (u1 - p1) * (p2 - l2) + (p2 - l2) ** 2, 0.0))
    return max(-1.0, p1 - p2 - delta), min(1.0, p1 - p2 + eps)


def _groups(cols: dict, keys, rows=None) -> list[tuple[tuple, np.ndarray]]:
    """(key, row indices) for each distinct value of the ``keys`` columns over ``rows`` (default
    all), in the order of first appearance, rows in their order (pandas' ``groupby(sort=False)``)."""
    rows = np.arange(len(cols[keys[0]])) if rows is None else np.asarray(rows)
    out: dict = {}
    for i, key in zip(rows.tolist(), zip(*(np.asarray(cols[k])[rows].tolist() for k in keys))):
        out.setdefault(key, []).append(i)
    return [(key, np.asarray(idx, dtype=np.intp)) for key, idx in out.items()]


def _frame(rows):
    import pandas as pd  # the Python API's tables; the command line prints the rows

    return pd.DataFrame(list(rows))


@dataclass(frozen=True)
class SweepResult:
    """Outcome of :func:`~oscar_jax.sweep.sweep`.

    ``columns`` holds one numpy array per column and one entry per (setting, method,
    replicate): n, c, rho, method, rep, the metrics of :data:`METRICS`, ``ok`` and one flag
    per B.3 check, solver statistics; :attr:`replicates` is the same as a DataFrame.
    ``timing_rows`` has one dict per (setting, method) (:attr:`timings` as a DataFrame):
    compile and run seconds (``run_s``: the seconds of its chunk calls, which overlap other
    methods' calls where chunks run side by side on host threads,
    :mod:`oscar_jax.runtime.batching`).
    """

    columns: dict
    seed: int
    reps: int
    params: SimParams
    methods: tuple[str, ...]
    timing_rows: tuple = ()

    @classmethod
    def from_frame(cls, replicates, **kwargs) -> "SweepResult":
        """A result from a per-replicate DataFrame (the columns of :attr:`replicates`)."""
        return cls(columns={c: replicates[c].to_numpy() for c in replicates.columns}, **kwargs)

    @cached_property
    def replicates(self):
        """Per-replicate rows as a DataFrame (made once)."""
        import pandas as pd

        return pd.DataFrame(self.columns)

    @property
    def timings(self):
        """One row per (setting, method) as a DataFrame."""
        return _frame(self.timing_rows)

    def per_replicate(self):
        """Per-replicate rows (a copy)."""
        return self.replicates.copy()

    def method_name(self, method) -> str:
        """The display name of a method that was run (``"oscar"``, a :class:`ModelSpec` or
        the name itself); an input error for one that was not."""
        name = method_spec(method).name if not isinstance(method, str) or method not in self.methods else method
        if name not in self.methods:
            raise OscarInputError(f"method {method!r} was not run; available: {list(self.methods)}")
        return name

    def failure_rows(self) -> list[dict]:
        """:meth:`failures` as a list of rows."""
        cols, rows = self.columns, []
        for (n, c, rho, m), idx in _groups(cols, ("n", "c", "rho", "method")):
            ok = np.asarray(cols["ok"], bool)[idx]
            row = {"n": n, "c": c, "rho": rho, "method": m, "n_failed": int((~ok).sum())}
            for chk in CHECKS:
                flag = np.asarray(cols[chk], bool)[idx]
                row[f"failed_{chk}"] = int((flag if chk == "at_bound" else ~flag).sum())
            rows.append(row)
        return rows

    def failures(self):
        """Counts of replicates failing each B.3 check, per setting and method (a DataFrame)."""
        return _frame(self.failure_rows())

    def table_rows(self, level: float = 0.95) -> list[dict]:
        """:meth:`table` as a list of rows."""
        cols, rows = self.columns, []
        for (n, c, rho, m), idx in _groups(cols, ("n", "c", "rho", "method")):
            ok = np.asarray(cols["ok"], bool)[idx]
            good = idx[ok]
            row = {"n": int(n), "c": float(c), "rho": float(rho), "method": m, "reps": int(len(idx)),
                   "n_ok": int(len(good)), "n_failed": int((~ok).sum())}
            for metric in METRICS:
                mean, se, lo, hi = mc_summary(np.asarray(cols[metric])[good], level)
                row[metric] = mean
                row[f"{metric}_mcse"] = se
                row[f"{metric}_lo"] = lo
                row[f"{metric}_hi"] = hi
            row["top1_count"] = int(np.asarray(cols["top1"])[good].sum())
            # top-1 is a proportion of replicates: a Wilson interval stays inside [0, 1].
            row["top1_lo"], row["top1_hi"] = wilson_interval(row["top1_count"], row["n_ok"], level)
            rows.append(row)
        return rows

    def table(self, level: float = 0.95):
        """Aggregates per (setting, method) over the replicates that passed every B.3 check (a DataFrame).

        Columns: n, c, rho, method, reps (requested), n_ok, n_failed, and per metric its
        mean, ``_mcse`` (sd/√n_ok) and ``_lo``/``_hi`` (t_{n_ok−1} interval at ``level``).
        ``top1`` is the share of replicates recovering the best candidate (``top1_count``
        the count).
        """
        return _frame(self.table_rows(level))

    def difference_rows(self, a, b, level: float = 0.95) -> list[dict]:
        """:meth:`differences` as a list of rows."""
        a, b = self.method_name(a), self.method_name(b)
        cols = self.columns
        method = np.asarray(cols["method"])
        keys = list(zip(*(np.asarray(cols[k]).tolist() for k in ("n", "c", "rho", "rep"))))
        of_b: dict = {}
        for j in np.flatnonzero(method == b).tolist():
            of_b.setdefault(keys[j], []).append(j)
        # An inner join on (n, c, rho, rep) in the order of a's rows (pandas' merge).
        pairs = [(i, j) for i in np.flatnonzero(method == a).tolist() for j in of_b.get(keys[i], [])]
        ia, ib = (np.asarray([p[k] for p in pairs], dtype=np.intp) for k in (0, 1))
        joint = {k: np.asarray(cols[k])[ia] for k in ("n", "c", "rho")}
        ok = np.asarray(cols["ok"], bool)
        rows = []
        for (n, c, rho), idx in _groups(joint, ("n", "c", "rho")):
            both = idx[ok[ia[idx]] & ok[ib[idx]]]
            for metric in METRICS:
                xa, xb = np.asarray(cols[metric])[ia[both]], np.asarray(cols[metric])[ib[both]]
                mean, se, lo, hi = mc_summary(xa - xb, level)
                if metric in BINARY_METRICS and len(both):  # a difference of proportions, not of means
                    lo, hi = paired_proportion_interval(xa, xb, level)
                rows.append({"n": int(n), "c": float(c), "rho": float(rho), "a": a, "b": b, "metric": metric,
                             "n_pairs": int(len(both)), "diff": mean, "mcse": se, "lo": lo, "hi": hi})
        return rows

    def differences(self, a, b, level: float = 0.95):
        """Paired differences a − b per setting and metric (G.3; a DataFrame).

        Only replicates where both fits passed every B.3 check enter (``n_pairs``). Means
        get a t interval; the 0/1 metrics (``top1``) Newcombe's paired-proportion interval.
        """
        return _frame(self.difference_rows(a, b, level))

    def to_markdown(self, level: float = 0.95) -> str:
        """The summary as a Markdown table: mean (Monte Carlo SE) per metric; top-1 as a count."""
        head = ["N", "c", "ρ", "method", "ok/reps", "q RMSE", "κ RMSE", "Kendall τ_b", "top-1",
                "coverage cluster", "coverage model"]
        lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for r in self.table_rows(level):
            def cell(metric, digits, scale=1.0, r=r):
                mean, se = r[metric], r[f"{metric}_mcse"]
                if not np.isfinite(mean):
                    return "–"
                return f"{scale * mean:.{digits}f} ({scale * se:.{digits}f})"
            lines.append("| " + " | ".join([
                f"{r['n']:,}", f"{r['c']:g}", f"{r['rho']:g}", r["method"], f"{r['n_ok']}/{r['reps']}",
                cell("q_rmse", 4), cell("kappa_rmse", 4), cell("kendall_tau", 3), f"{r['top1_count']}/{r['n_ok']}",
                cell("coverage_cluster", 1, 100.0), cell("coverage_model", 1, 100.0)]) + " |")
        return "\n".join(lines)

    def to_dict(self, level: float = 0.95) -> dict:
        return {"seed": self.seed, "reps": self.reps, "methods": list(self.methods),
                "summary": self.table_rows(level), "failures": self.failure_rows(),
                "timings": [dict(r) for r in self.timing_rows]}

    def plot(self, out_dir, level: float = 0.95) -> list[Path]:
        """PNG figures against N (Figures 3 and 4); see :func:`oscar_jax.sweep.figures.plot_sweep`."""
        from .figures import plot_sweep  # matplotlib only when drawing

        return plot_sweep(self, out_dir, level)
