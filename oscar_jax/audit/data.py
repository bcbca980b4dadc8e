"""A coded counterfactual audit: matched judgments of the same items under several conditions.

An audit (method section 9; ad-relevance paper, Section 3) judges every *item* (a
query–ad pair, a prompt) under every *condition* of one *attribute* (advertiser
``Retailer A`` … ``Retailer F``, language ``en``/``zh``/``fi``, demographic wording),
possibly several times (*repetitions*, the runs of a stochastic judge).
:class:`AuditData` holds it as dense arrays ``values[item, condition, repetition]`` with
a boolean ``mask``; every analysis works on those arrays with masks, so missing
judgments never need resampling or ragged data. :class:`AuditReport` counts what the
reader (:func:`~oscar_jax.audit.load.load_audit`) used, excluded and why.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..runtime.validate import OscarInputError, check_choice, resolve_name

__all__ = ["DEFAULT_LABELS", "AuditData", "AuditReport", "parse_labels"]

# Most favourable first, as the paper lists them (good, fair, bad).
DEFAULT_LABELS = ("good", "fair", "bad")


@dataclass
class AuditReport:
    """What :func:`load_audit` did: counts of rows used, excluded and why.

    Attributes
    ----------
    n_input
        Rows in the input table.
    n_other_attribute
        Rows of other attributes (not part of this audit; selection, not a drop).
    n_used
        Judgments in the audit arrays.
    incomplete_items
        Items that miss at least one (condition, repetition) judgment that other items
        have, mapped to the conditions they miss (first few only in messages).
    incomplete_policy
        ``"drop"`` (those items removed from every condition, so the design stays
        balanced), ``"keep"`` (kept; each analysis uses the judgments available and
        pairs only what is observed in both conditions) or ``"error"``.
    n_dropped_items, n_dropped_rows
        What the ``"drop"`` policy removed.
    notes
        Everything else a user should know (assumed single run, column choices).
    """

    source: str
    n_input: int
    n_other_attribute: int = 0
    n_used: int = 0
    incomplete_items: dict = field(default_factory=dict)
    incomplete_policy: str = "drop"
    n_dropped_items: int = 0
    n_dropped_rows: int = 0
    notes: list[str] = field(default_factory=list)

    def summary(self) -> str:
        parts = [f"{self.n_used} of {self.n_input} judgments used"]
        if self.n_other_attribute:
            parts.append(f"{self.n_other_attribute} rows of other attributes not part of this audit")
        if self.incomplete_items:
            n = len(self.incomplete_items)
            if self.incomplete_policy == "drop":
                parts.append(f"{n} incomplete items dropped ({self.n_dropped_rows} judgments)")
            else:
                parts.append(f"{n} incomplete items kept (analyses use the judgments available)")
        return "; ".join(parts)

    def to_dict(self) -> dict:
        shown = dict(list(self.incomplete_items.items())[:20])
        return {
            "source": self.source, "n_input": self.n_input, "n_other_attribute": self.n_other_attribute,
            "n_used": self.n_used, "n_incomplete_items": len(self.incomplete_items),
            "incomplete_examples": {str(k): list(v) for k, v in shown.items()},
            "incomplete_policy": self.incomplete_policy, "n_dropped_items": self.n_dropped_items,
            "n_dropped_rows": self.n_dropped_rows, "notes": list(self.notes),
        }


@dataclass(frozen=True, eq=False)
class AuditData:
    """A coded audit: dense arrays over (item, condition, repetition) plus name tables.

    Shapes use I items, C conditions, R repetitions, M labels.

    Attributes
    ----------
    kind
        ``"label"`` (categorical) or ``"prob"`` (probabilities).
    values
        (I, C, R): label codes (int32, 0 = least favourable … M−1 = most favourable,
        −1 where missing) or probabilities (float64, NaN where missing).
    mask
        (I, C, R) bool, True where a judgment exists.
    items, conditions, repetitions
        Names along each axis (conditions in order of first appearance).
    labels
        Label names, most favourable first (as given); ``labels[M−1−code]`` is the name
        of ``code``. Empty for probabilities.
    attribute
        The audited attribute (None when the data do not say).
    """

    kind: str
    values: np.ndarray
    mask: np.ndarray
    items: tuple
    conditions: tuple[str, ...]
    repetitions: tuple
    labels: tuple[str, ...]
    attribute: str | None
    report: AuditReport

    @property
    def n_items(self) -> int:
        return len(self.items)

    @property
    def n_conditions(self) -> int:
        return len(self.conditions)

    @property
    def n_reps(self) -> int:
        return len(self.repetitions)

    @property
    def n_labels(self) -> int:
        return len(self.labels)

    def condition_index(self, name: str, what: str = "condition") -> int:
        """Index of a condition given its exact name or a unique case-insensitive substring."""
        return self.conditions.index(resolve_name(what, str(name), list(self.conditions)))

    def label_name(self, code: int) -> str:
        return self.labels[self.n_labels - 1 - int(code)]

    @classmethod
    def from_arrays(cls, values, mask=None, *, kind: str = "label", conditions=None,
                    labels=DEFAULT_LABELS, items=None, repetitions=None,
                    attribute: str | None = None) -> AuditData:
        """Wrap simulated or precomputed (I, C, R) arrays (codes 0 = least favourable)."""
        check_choice("kind", kind, ("label", "prob"))
        values = np.asarray(values)
        if values.ndim != 3:
            raise OscarInputError(f"values must have shape (items, conditions, repetitions); got {values.shape}")
        mask = np.ones(values.shape, bool) if mask is None else np.asarray(mask, bool)
        if mask.shape != values.shape:
            raise OscarInputError(f"mask has shape {mask.shape}; values have {values.shape}")
        n_i, n_c, n_r = values.shape
        if kind == "label":
            m = len(labels)
            vals = np.where(mask, values, -1).astype(np.int32)
            bad = mask & ((vals < 0) | (vals >= m))
            if bad.any():
                i, c, r = np.argwhere(bad)[0]
                raise OscarInputError(f"label code {values[i, c, r]} at item {i}, condition {c}, repetition {r} "
                                      f"is outside 0..{m - 1} for labels {list(labels)}")
        else:
            labels = ()
            vals = np.where(mask, values.astype(float), np.nan)
            bad = mask & ~((vals >= 0) & (vals <= 1))
            if bad.any():
                i, c, r = np.argwhere(bad)[0]
                raise OscarInputError(f"probability {values[i, c, r]!r} at item {i}, condition {c}, repetition {r} "
                                      "is not in [0, 1]")
        conditions = tuple(conditions) if conditions is not None else tuple(f"cond{c}" for c in range(n_c))
        if len(conditions) != n_c:
            raise OscarInputError(f"{len(conditions)} condition names for {n_c} conditions")
        items = tuple(items) if items is not None else tuple(range(n_i))
        repetitions = tuple(repetitions) if repetitions is not None else tuple(range(n_r))
        report = AuditReport(source="<arrays>", n_input=int(mask.sum()), n_used=int(mask.sum()))
        return cls(kind=kind, values=vals, mask=mask, items=items, conditions=tuple(map(str, conditions)),
                   repetitions=repetitions, labels=tuple(labels), attribute=attribute, report=report)


def parse_labels(labels) -> tuple[str, ...]:
    """Ordered label set, most favourable first, from ``"good,fair,bad"`` or a sequence."""
    if isinstance(labels, str):
        labels = [x for x in labels.split(",")]
    out = tuple(str(x).strip() for x in labels)
    if len(out) < 2 or any(not x for x in out):
        raise OscarInputError(f"labels must list at least two non-empty names, most favourable first "
                              f"(e.g. good,fair,bad); got {list(out)}")
    lowered = [x.lower() for x in out]
    if len(set(lowered)) != len(out):
        raise OscarInputError(f"labels {list(out)} repeat a name (case-insensitive)")
    return out
