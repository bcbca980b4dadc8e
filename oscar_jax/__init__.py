"""oscar_jax: judge-aware Bradley–Terry ranking from LLM-judge comparisons (OSCAR).

Scores candidates, measures each judge's sensitivity and biases (position, length,
self-family), and reports prompt-cluster confidence intervals for win probabilities.
"""

from .runtime import x64 as _x64  # noqa: F401  (float64 before anything else)
from .runtime import compile_cache

compile_cache.enable()  # the Python API and the CLI share one persistent XLA cache

from .io.data import LoadReport, load_judgments
from .io.data import load_arena_hard
from .model.design import Design, build_design
from .attenuation import FixedScoreRefit, attenuation, attenuation_refit, fixed_score_refit, median_abs_log_discrepancy
from .io.families import family_of
from .fit import OscarFitWarning, OscarNoteWarning, fit
from .compare import CompareResult, compare
from .report.leaderboard import arena_leaderboard, arena_text
from .infer.batch_fit import BatchFit, fit_batch
from .bootstrap import BootstrapResult, bootstrap
from .results.fit import FitResult
from .sweep import SweepResult, kendall_tau_b, release_compiled, sweep
from .simulate import TABLE_G1, SimParams, simulate, simulate_design, simulate_frame
from .model.spec import ModelSpec, parse_model
from .runtime.validate import OscarDataWarning, OscarInputError
from .infer.weights import bootstrap_weights, prompt_folds, within_fold_weights

__version__ = "0.1.0"

_LAZY = {"fit_bayes", "BayesResult", "BayesWarning", "Priors"}


def __getattr__(name):
    # The Bayesian variant pulls in NumPyro and ArviZ; load them only when asked for.
    if name in _LAZY:
        from . import bayes

        return getattr(bayes, name)
    raise AttributeError(f"module 'oscar_jax' has no attribute {name!r}")

__all__ = [
    "BayesResult",
    "BayesWarning",
    "Priors",
    "fit_bayes",
    "BatchFit",
    "BootstrapResult",
    "CompareResult",
    "FixedScoreRefit",
    "SweepResult",
    "attenuation_refit",
    "bootstrap",
    "bootstrap_weights",
    "compare",
    "fit_batch",
    "fixed_score_refit",
    "kendall_tau_b",
    "prompt_folds",
    "release_compiled",
    "sweep",
    "within_fold_weights",
    "Design",
    "SimParams",
    "TABLE_G1",
    "FitResult",
    "LoadReport",
    "ModelSpec",
    "OscarDataWarning",
    "OscarFitWarning",
    "OscarNoteWarning",
    "OscarInputError",
    "__version__",
    "arena_leaderboard",
    "arena_text",
    "attenuation",
    "build_design",
    "family_of",
    "fit",
    "load_arena_hard",
    "load_judgments",
    "median_abs_log_discrepancy",
    "parse_model",
    "simulate",
    "simulate_design",
    "simulate_frame",
]
