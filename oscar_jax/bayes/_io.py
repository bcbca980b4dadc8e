"""Writing a BayesResult: its JSON, the DataTree as netCDF, summary CSVs and PNG plots."""

from __future__ import annotations

from dataclasses import asdict
from functools import lru_cache
from pathlib import Path

import numpy as np
import xarray as xr

from ..infer.sandwich import INDEPENDENCE_NOTE
from ..report.figures import COLOURS, GREY, new_figure, save_png
from ..report.render import shorten_names, write_tables
from ..results.boards import scale_note
from ..results.intervals import CI_KIND_NAMES
from ..results.schema import CI_LABELS, payload

__all__ = ["bayes_payload", "estimand", "save_idata", "load_idata", "save_result", "plot_forest", "plot_judges",
           "OKABE_ITO"]

OKABE_ITO = {**COLOURS, "grey": GREY}  # the package's one palette, by name


def estimand(result) -> dict:
    """Which model and sampler produced the numbers, and how the probabilities and their SEs are read."""
    pe = {"candidate": " + prompt × candidate effect", "slot": " + prompt slot shift"}.get(result.prompt_effect, "")
    d = result.diagnostics
    chains = d.get("chains")
    how = (f"SVI ({d.get('guide')} guide), {d.get('draws')} draws" if result.independent_draws else
           f"NUTS, {chains} chain{'s' if chains != 1 else ''} × {d.get('draws')} draws")
    return {"model": f"{result.effective_spec.name}{pe}, posterior by {how}",
            "point": "posterior mean" + (" on the point fit's scale: each draw's scores are the least-squares "
                                         "scores of its prompt-averaged q" if result.prompt_effect else ""),
            "intervals": CI_LABELS["hdi" if result.ci_kind == "hdi" else "bayes"]
            + ("" if result.prompt_effect else f" (without a prompt effect: {INDEPENDENCE_NOTE})"),
            "probabilities": "p_best, p_rank_r, p_a_better, p_kappa_greater: shares of the posterior draws, "
                             "ranked by each draw's sampled s"
                             + (" (prompt-conditional); q, q_field: posterior means of the prompt-averaged win "
                                "probabilities" if result.prompt_effect else "; q, q_field: posterior means"),
            "mcse": ("sd/√n: independent draws" if result.independent_draws
                     else "sd/√ESS, ArviZ's effective sample size of the mean")}


def bayes_payload(result, ci: str | float | None = None, *, ci_prob: float | None = None, scale: str = "logit",
                  anchor=None) -> dict:
    """JSON-ready summary (:func:`oscar_jax.results.schema.payload`): ``estimand``, ``scale``,
    ``candidates``, ``judges``, ``win_prob``, ``rank_distribution``, ``judge_comparisons``, the
    sampler's ``checks``."""
    kind, prob = result.interval_request(ci, ci_prob)
    lb = result.leaderboard(kind, ci_prob=prob, scale=scale, anchor=anchor)
    jc = result.judge_comparisons()
    header = {"model": result.spec.name, "fitted_model": result.effective_spec.name,
              "estimator": "bayes-svi" if result.independent_draws else "bayes-nuts", "estimand": result.estimand(),
              "prompt_effect": result.prompt_effect, "n_records": int(result.design.n_records),
              "n_prompts": int(result.design.n_clusters), "reference_judge": result.design.judges[result.design.reference],
              "seed": result.seed, "priors": asdict(result.priors), "settings": asdict(result.settings),
              "sigma_prompt": result.sigma_prompt(prob), "ci": kind, "ci_prob": prob}
    return payload(header=header, scale=scale_note(lb.attrs), leaderboard=lb,
                   judges=result.judges(kind, ci_prob=prob), win=result.win_matrix(kind, ci_prob=prob),
                   status=result.status(), design=result.design, checks=result.diagnostics, notes=result.notes,
                   sections={"rank_distribution": result.rank_distribution(), "judge_comparisons": jc},
                   tail={"timing": result.timing})


@lru_cache(maxsize=1)
def _netcdf4_engine() -> str | None:
    # Optional writers, tried in xarray's order of preference.
    try:
        import h5netcdf  # noqa: F401
        return "h5netcdf"
    except ImportError:
        pass
    try:
        import netCDF4  # noqa: F401
        return "netcdf4"
    except ImportError:
        return None


def _netcdf3_ready(ds: xr.Dataset) -> tuple[xr.Dataset, dict]:
    """A copy that the scipy (netCDF3) writer accepts: string attrs, UTF-8 char strings."""
    ds = ds.copy()
    ds.attrs = {k: (v if isinstance(v, (str, int, float, np.integer, np.floating)) else str(v)) for k, v in ds.attrs.items()}
    for name in ds.variables:
        var = ds[name]
        var.attrs = {k: (v if isinstance(v, (str, int, float)) else str(v)) for k, v in var.attrs.items()}
        if var.dtype == bool:  # netCDF3 has no boolean type
            ds[name] = var.astype(np.int8)
            ds[name].attrs["dtype"] = "bool"
    encoding = {name: {"dtype": "S1"} for name in ds.variables if ds[name].dtype.kind == "U"}
    return ds, encoding


def save_idata(idata: xr.DataTree, path) -> Path:
    """Write the DataTree: one netCDF4 file (``.nc``) when h5netcdf or netCDF4 is installed.

    Without either, xarray can write only netCDF3 (scipy), which has no groups: the
    groups then go to ``<path without .nc>/<group>.nc``, one file each; :func:`load_idata`
    reads both forms.
    """
    path = Path(path)
    engine = _netcdf4_engine()
    if engine is not None:
        idata.to_netcdf(path, engine=engine)
        return path
    folder = path.with_suffix("")
    folder.mkdir(parents=True, exist_ok=True)
    for name, node in idata.children.items():
        ds, encoding = _netcdf3_ready(node.to_dataset())
        ds.to_netcdf(folder / f"{name}.nc", engine="scipy", encoding=encoding)
    return folder


def load_idata(path) -> xr.DataTree:
    """Read what :func:`save_idata` wrote (a netCDF4 file or a folder of per-group netCDF3 files)."""
    path = Path(path)
    if path.is_dir() or (not path.exists() and path.with_suffix("").is_dir()):
        folder = path if path.is_dir() else path.with_suffix("")
        groups = {}
        for file in sorted(folder.glob("*.nc")):
            with xr.open_dataset(file, engine="scipy") as ds:
                ds = ds.load()
            for name in ds.variables:
                if ds[name].attrs.get("dtype") == "bool":
                    attrs = {k: v for k, v in ds[name].attrs.items() if k != "dtype"}
                    ds[name] = ds[name].astype(bool)
                    ds[name].attrs = attrs
            if "sample_dims" in ds.attrs:
                ds.attrs["sample_dims"] = ["chain", "draw"]
            groups[file.stem] = ds
        return xr.DataTree.from_dict(groups)
    return xr.open_datatree(path, engine=_netcdf4_engine())


def _figure(height: float):
    return new_figure(7.5, height)


def plot_forest(result, path, ci_prob: float | None = None) -> Path:
    """Forest plot of q against the field (posterior mean and interval) for every candidate."""
    prob = result.interval_level(ci_prob=ci_prob)
    lb = result.leaderboard(ci_prob=prob).iloc[::-1]
    fig = _figure(1.2 + 0.32 * len(lb))
    ax = fig.add_subplot()
    y = np.arange(len(lb))
    ax.hlines(y, lb.q_field_lo, lb.q_field_hi, color=OKABE_ITO["blue"], linewidth=2)
    ax.plot(lb.q_field, y, "o", color=OKABE_ITO["blue"], markersize=5, label="posterior mean")
    ax.axvline(0.5, color=OKABE_ITO["grey"], linestyle="--", linewidth=1)
    ax.set_yticks(y, [str(c) for c in lb.candidate])
    pct = int(round(100 * prob))
    ax.set_xlabel(f"win probability against the field q (posterior mean, {pct}% {CI_KIND_NAMES[result.ci_kind]})")
    ax.set_ylabel("candidate")
    pe = " + prompt effect" if result.prompt_effect else ""
    ax.set_title(f"Bayesian {result.effective_spec.name}{pe}: candidates")
    ax.legend(loc="lower right", frameon=False)
    path = Path(path)
    save_png(fig, path)
    return path


def plot_judges(result, path, ci_prob: float | None = None) -> Path:
    """Judge sensitivities κ_k with intervals; the reference judge in a second colour and marker."""
    prob = result.interval_level(ci_prob=ci_prob)
    jt = result.judges(ci_prob=prob).sort_values("kappa", kind="mergesort")
    fig = _figure(1.2 + 0.3 * len(jt))
    ax = fig.add_subplot()
    y = np.arange(len(jt))
    ref = jt.reference.to_numpy()
    colours = np.where(ref, OKABE_ITO["vermillion"], OKABE_ITO["blue"])
    ax.hlines(y, jt.kappa_lo, jt.kappa_hi, colors=colours, linewidth=2)
    ax.scatter(jt.kappa[~ref], y[~ref], color=OKABE_ITO["blue"], marker="o", s=25, zorder=3, label="judge")
    ax.scatter(jt.kappa[ref], y[ref], color=OKABE_ITO["vermillion"], marker="D", s=30, zorder=3,
               label="reference judge (γ = 1)")
    ax.set_yticks(y, shorten_names(jt.judge, 40))  # organisation first, then the end: never cut from the left
    pct = int(round(100 * prob))
    ax.set_xlabel(f"sensitivity κ = γ·RMS(s) (posterior mean, {pct}% {CI_KIND_NAMES[result.ci_kind]})")
    ax.set_ylabel("judge")
    ax.set_xlim(left=0.0)
    ax.set_title(f"Bayesian {result.effective_spec.name}: judge sensitivities")
    ax.legend(loc="lower right", frameon=False)
    path = Path(path)
    save_png(fig, path)
    return path


def save_result(result, out_dir, *, ci_prob: float, plots: bool = True) -> list[Path]:
    """Everything ``oscar bayes --out DIR`` writes; returns the paths."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tables = {
        "leaderboard": result.leaderboard(ci_prob=ci_prob),
        "judges": result.judges(ci_prob=ci_prob),
        "win_prob": result.win_matrix(ci_prob=ci_prob),
        "rank_distribution": result.rank_distribution(),
        "judge_comparisons": result.judge_comparisons(),
        "summary": result.summary(ci_prob=ci_prob).reset_index().rename(columns={"index": "variable"}),
    }
    written = write_tables(out, tables, result.to_dict(ci_prob=ci_prob))
    written.append(save_idata(result.idata, out / "posterior.nc"))
    if plots:
        written.append(plot_forest(result, out / "forest_q.png", ci_prob))
        written.append(plot_judges(result, out / "judges_kappa.png", ci_prob))
    return written
