"""oscar_jax: judge-aware Bradley–Terry ranking from LLM-judge comparisons (OSCAR).

Scores candidates, measures each judge's sensitivity and biases (position, length,
self-family), and reports prompt-cluster confidence intervals for win probabilities.

>>> import oscar_jax as oj
>>> result = oj.fit(oj.example_path(), "j+p")      # doctest: +SKIP
>>> result.leaderboard()                            # doctest: +SKIP

The names below are the public API, grouped as a reader meets them: load, model,
estimators, results, report, warnings. Each is imported on first use, so ``import
oscar_jax`` (and ``oscar --help``) does not start JAX; float64 and the persistent compile
cache are configured here all the same, before any array exists (runtime/x64.py,
runtime/cache.py). Everything else stays importable from its module.
"""

import sys
from types import ModuleType

from .runtime import x64 as _x64  # noqa: F401  (float64, BLAS threads, XLA flags: set before JAX loads)
from .runtime.cache import configure as _configure_cache

_configure_cache()  # the Python API and the CLI share one persistent compile cache

__version__ = "0.2.0"

# name → the module that defines it
_API = {
    # load: records in, one canonical validated frame out
    "load_judgments": "io.data",
    "load_arena_hard": "io.data",
    "example_path": "io.data",
    "Judgments": "io.data",
    "LoadReport": "io.columns",
    "family_of": "io.families",
    "load_votes": "human",
    # model: what is fitted, on which data
    "parse_model": "model.spec",
    "ModelSpec": "model.spec",
    "build_design": "model.design",
    "Design": "model.design",
    "prepare": "model.problem",
    "Problem": "model.problem",
    # estimators
    "fit": "fit",
    "bootstrap": "bootstrap",
    "compare": "compare",
    "attenuation": "attenuation",
    "attenuation_refit": "attenuation",
    "fixed_score_refit": "attenuation",
    "median_abs_log_discrepancy": "attenuation",
    "calibrate_positions": "swaps",
    "human_agreement": "human",
    "fit_bayes": "bayes",
    "Priors": "bayes",
    "fit_batch": "infer.batch_fit",
    "bootstrap_weights": "infer.weights",
    "prompt_folds": "infer.weights",
    "simulate": "simulate",
    "simulate_design": "simulate",
    "simulate_frame": "simulate",
    "SimParams": "simulate",
    "sweep": "sweep",
    # results
    "FitResult": "results.fit",
    "BootstrapResult": "results.bootstrap",
    "BatchFit": "infer.batch_fit",
    "CompareResult": "compare",
    "AttenuationResult": "attenuation",
    "FixedScoreRefit": "attenuation",
    "SwapCalibration": "swaps",
    "HumanAgreement": "human",
    "BayesResult": "bayes",
    "SweepResult": "sweep",
    # report
    "arena_leaderboard": "report.leaderboard",
    "write_report": "report.html",
    # warnings and errors
    "OscarInputError": "runtime.validate",
    "OscarDataWarning": "runtime.validate",
    "OscarFitWarning": "runtime.validate",
    "OscarNoteWarning": "runtime.validate",
    "BayesWarning": "bayes",
}

__all__ = ["__version__", *_API]


# Folders reachable as attributes (``oscar_jax.bayes.Priors``), also imported on first use.
_FOLDERS = ("audit", "bayes", "cli", "infer", "io", "model", "report", "results", "runtime")


def __getattr__(name):
    import importlib  # the face's lazy names, listed above; nothing in the package is discovered

    if name in _FOLDERS:
        return importlib.import_module(f"{__name__}.{name}")
    module = _API.get(name)
    if module is None:
        raise AttributeError(f"module 'oscar_jax' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))


class _Face(ModuleType):
    """The package module. Importing a submodule binds it to its parent; where a verb's
    module and its function share a name (``fit``, ``bootstrap``, ``compare``,
    ``attenuation``, ``simulate``, ``sweep``), ``oscar_jax.<name>`` stays the function."""

    def __setattr__(self, name, value):
        if isinstance(value, ModuleType) and _API.get(name) == name:
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Face
