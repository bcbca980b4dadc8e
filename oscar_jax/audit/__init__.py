"""Counterfactual bias audits of LLM judges (method section 9; the ad-relevance paper).

Read a long table of matched judgments (:func:`load_audit`), then :func:`audit` gives
the paper's measures (Bad DR, Fair DR, label distribution, mean pRel, consistency) and
t-tests across runs, paired item-level analyses (item-cluster bootstrap, clustered
McNemar, exact sign test) and a Bayesian ordinal / logit model with item effects.
:func:`simulate_audit` generates audits with known effects; :mod:`.calibrate` measures
false-positive rates, power and coverage on them.
"""

from .. import _x64  # noqa: F401
from .analysis import AuditResult, audit
from .bayes import BayesPrior, BayesResult, fit_bayes
from .calibrate import (
    bayes_calibration,
    calibration_study,
    summarize_calibration,
    true_contrasts,
)
from .data import DEFAULT_LABELS, AuditData, AuditReport, load_audit, parse_labels
from .simulate import (
    RETAILER_EXAMPLE,
    AuditSimParams,
    simulate_audit,
    simulate_audit_data,
    simulate_audit_frame,
    true_rates,
)

__all__ = [
    "DEFAULT_LABELS",
    "RETAILER_EXAMPLE",
    "AuditData",
    "AuditReport",
    "AuditResult",
    "AuditSimParams",
    "BayesPrior",
    "BayesResult",
    "audit",
    "bayes_calibration",
    "calibration_study",
    "fit_bayes",
    "load_audit",
    "parse_labels",
    "simulate_audit",
    "simulate_audit_data",
    "simulate_audit_frame",
    "summarize_calibration",
    "true_contrasts",
    "true_rates",
]
