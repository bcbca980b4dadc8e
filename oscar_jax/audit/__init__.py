"""Counterfactual bias audits of LLM judges (method section 9; the ad-relevance paper).

Read a long table of matched judgments (:func:`load_audit`), then :func:`audit` gives
the paper's measures (Bad DR, Fair DR, label distribution, mean pRel, consistency) and
t-tests across runs, paired item-level analyses (item-cluster bootstrap, clustered
McNemar, exact sign test) and a Bayesian ordinal / logit model with item effects.
:func:`simulate_audit` generates audits with known effects; :mod:`.calibrate` measures
false-positive rates, power and coverage on them.
"""

from .analysis import AuditResult, audit
from .bayes import AuditPosterior, BayesPrior, fit_audit_model
from .calibrate import (
    bayes_calibration,
    calibration_study,
    summarize_calibration,
    true_contrasts,
)
from .data import DEFAULT_LABELS, AuditData, AuditReport, parse_labels
from .load import load_audit
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
    "AuditPosterior",
    "AuditReport",
    "AuditResult",
    "AuditSimParams",
    "BayesPrior",
    "audit",
    "bayes_calibration",
    "calibration_study",
    "fit_audit_model",
    "load_audit",
    "parse_labels",
    "simulate_audit",
    "simulate_audit_data",
    "simulate_audit_frame",
    "summarize_calibration",
    "true_contrasts",
    "true_rates",
]
