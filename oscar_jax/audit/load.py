"""Read a long table of matched counterfactual judgments into an :class:`AuditData`.

The table has one row per judgment:

============ ==========================================================================
column       meaning
============ ==========================================================================
item         id of the original input (hashable); the unit of pairing and resampling
attribute    optional: which attribute this row audits (one file may hold several)
condition    the counterfactual version (one may be the original, one a duplicated,
             unchanged baseline that measures the judge's own run-to-run noise)
repetition   optional run index (default: one run)
label        a categorical judgment from an ordered label set (default good > fair > bad)
prob         or a probability in [0, 1] (e.g. a fine-tuned model's pRel)
============ ==========================================================================

:func:`load_audit` validates the table and codes it into the arrays of
:class:`AuditData`. Nothing is dropped silently: rows of other attributes and items that
miss some condition are counted in the :class:`AuditReport` and handled as
``incomplete`` says.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..io.columns import blank, row_label, shown
from ..io.names import prompt_key
from ..io.readers import read_table
from ..runtime.validate import OscarInputError, check_choice, resolve_name
from .data import DEFAULT_LABELS, AuditData, AuditReport, parse_labels

__all__ = ["load_audit"]

_PROB_ALIASES = ("prob", "prel", "p_rel", "probability", "score")
_INCOMPLETE = ("drop", "keep", "error")
_SHOW = 5  # examples named in messages


def _column(frame: pd.DataFrame, name: str, what: str) -> pd.Series:
    col = frame[name]
    missing = blank(col)
    if missing.any():
        row = row_label(frame, int(np.flatnonzero(missing)[0]))  # 1-based, as the user counts
        raise OscarInputError(f"column {name!r} {row}: missing {what}; every row needs one "
                              f"({int(missing.sum())} rows lack it)")
    return col


def _key(value):
    # Prompt ids' key (lists joined, 3.0 → "3"), with surrounding space trimmed from text.
    return value.strip() if isinstance(value, str) else prompt_key(value)


def _sorted_unique(values: np.ndarray) -> list:
    uniq = list(dict.fromkeys(values.tolist()))
    try:
        return sorted(uniq, key=lambda v: float(v))
    except (TypeError, ValueError):
        return sorted(uniq, key=str)


def load_audit(source, *, attribute: str | None = None, labels=DEFAULT_LABELS, output: str = "auto",
               item_col: str = "item", condition_col: str = "condition", repetition_col: str = "repetition",
               attribute_col: str = "attribute", label_col: str = "label", prob_col: str | None = None,
               incomplete: str = "drop") -> AuditData:
    """Read and validate a long table of matched counterfactual judgments.

    Parameters
    ----------
    source
        A DataFrame, a list of dicts or a path (.csv, .tsv, .json, .jsonl, .parquet).
    attribute
        The attribute to audit. With an ``attribute_col`` column, rows of this value
        are used (required when the column holds several values; others are counted,
        not used). Without one, a column of this name holds the conditions when there is
        no ``condition_col`` (e.g. a column ``advertiser`` with ``Retailer A``, …).
    labels
        Ordered label set, most favourable first (``"good,fair,bad"`` or a sequence);
        matched case-insensitively. Bad DR is the share of the last label, Fair DR of
        the last two.
    output
        ``"label"``, ``"prob"`` or ``"auto"`` (the ``label_col`` column if present, else
        a probability column ``prob``/``prel``/``p_rel``/``probability``/``score``).
    item_col, condition_col, repetition_col, attribute_col, label_col, prob_col
        Column names. Without ``repetition_col`` every judgment is run 0 (noted).
    incomplete
        What to do with items missing a (condition, repetition) judgment that other
        items have: ``"drop"`` (default: remove the item everywhere, keeping the design
        balanced and exactly matched; counted), ``"keep"`` (analyses use what is
        observed; paired ones pair only what both conditions have) or ``"error"``.

    Returns
    -------
    AuditData

    Examples
    --------
    >>> rows = [{"item": i, "condition": c, "label": l}
    ...         for i, (la, lb) in enumerate([("good", "bad"), ("fair", "fair")])
    ...         for c, l in (("A", la), ("B", lb))]
    >>> data = load_audit(rows)
    >>> data.values[:, :, 0].tolist()     # codes: 0 = bad, 1 = fair, 2 = good
    [[2, 0], [1, 1]]
    """
    check_choice("incomplete", incomplete, _INCOMPLETE)
    check_choice("output", output, ("auto", "label", "prob"))
    raw, name = read_table(source)
    raw.columns = [str(c).strip() for c in raw.columns]
    report = AuditReport(source=name, n_input=len(raw), incomplete_policy=incomplete)
    if len(raw) == 0:
        raise OscarInputError(f"{name}: no rows (empty audit)")
    cols = list(raw.columns)
    if item_col not in cols:
        raise OscarInputError(f"missing the item column {item_col!r} (the id of the original query–ad pair or "
                              f"prompt shared by all its counterfactual versions); columns: {cols}")
    raw = raw.reset_index(drop=True)
    row_id = np.arange(1, len(raw) + 1)  # rows as the user counts them (1-based)
    # --- which attribute, which rows, which column holds the conditions
    cond_col = condition_col
    if attribute_col in cols:
        attrs = _column(raw, attribute_col, "attribute").map(_key)
        present = list(dict.fromkeys(attrs.tolist()))
        if attribute is None:
            if len(present) > 1:
                raise OscarInputError(f"column {attribute_col!r} holds several attributes {present}; "
                                      "choose one with attribute=... (CLI: --attribute)")
            attribute = present[0]
        else:
            attribute = resolve_name("attribute", str(attribute), present)
        keep = (attrs == attribute).to_numpy()
        report.n_other_attribute = int((~keep).sum())
        raw, row_id = raw.loc[keep].reset_index(drop=True), row_id[keep]
    elif attribute is not None and condition_col not in cols:
        if attribute not in cols:
            raise OscarInputError(f"no {attribute_col!r} or {condition_col!r} column and no column named "
                                  f"{attribute!r} to hold the conditions; columns: {cols}")
        cond_col = attribute
        report.notes.append(f"conditions read from column {attribute!r}")
    elif attribute is not None:
        report.notes.append(f"no {attribute_col!r} column: every row is taken to audit {attribute!r}")
    if cond_col not in cols:
        raise OscarInputError(f"missing the condition column {cond_col!r}; columns: {cols} "
                              "(or pass attribute=COLUMN when a column such as 'advertiser' holds the conditions)")

    # --- output kind
    if output == "auto":
        if label_col in cols:
            output = "label"
        else:
            found = [c for c in ([prob_col] if prob_col else []) + list(_PROB_ALIASES) if c and c in cols]
            if not found:
                raise OscarInputError(f"no label column {label_col!r} and no probability column "
                                      f"({', '.join(_PROB_ALIASES)}); columns: {cols}")
            output, prob_col = "prob", found[0]
    elif output == "prob":
        prob_col = prob_col or next((c for c in _PROB_ALIASES if c in cols), None)
        if prob_col is None or prob_col not in cols:
            raise OscarInputError(f"output='prob' but no probability column found; columns: {cols}")
    elif label_col not in cols:
        raise OscarInputError(f"output='label' but there is no column {label_col!r}; columns: {cols}")

    items = _column(raw, item_col, "item id").map(_key).to_numpy(dtype=object)
    conds = _column(raw, cond_col, "condition").map(_key).to_numpy(dtype=object)
    if repetition_col in raw.columns:
        reps = _column(raw, repetition_col, "repetition").map(_key).to_numpy(dtype=object)
    else:
        reps = np.full(len(raw), "0", dtype=object)
        report.notes.append(f"no {repetition_col!r} column: each (item, condition) is judged once "
                            "(run-to-run t-tests need ≥ 2 runs and are not available)")

    if output == "label":
        labels = parse_labels(labels)
        m = len(labels)
        code_of = {lab.lower(): m - 1 - j for j, lab in enumerate(labels)}
        text = raw[label_col].map(lambda v: v.strip().lower() if isinstance(v, str) else
                                  ("" if v is None or (isinstance(v, float) and np.isnan(v)) else str(_key(v)).lower()))
        codes = text.map(code_of)
        unknown = codes.isna().to_numpy()
        if unknown.any():
            pos = int(np.flatnonzero(unknown)[0])
            values_seen = sorted(set(raw[label_col][unknown].astype(str).tolist()))[:10]
            raise OscarInputError(
                f"column {label_col!r} row {int(row_id[pos])}: unknown label {shown(raw[label_col].iloc[pos])!r} "
                f"({int(unknown.sum())} rows; values {values_seen}); expected one of {list(labels)} — "
                "pass the ordered label set, most favourable first (CLI: --labels good,fair,bad)")
        vals = codes.to_numpy(dtype=np.int64)
    else:
        labels = ()
        nums = pd.to_numeric(raw[prob_col], errors="coerce").to_numpy(dtype=float)
        bad = ~np.isfinite(nums) | (nums < 0) | (nums > 1)
        if bad.any():
            pos = int(np.flatnonzero(bad)[0])
            hint = " (percentages? divide by 100)" if np.nanmax(np.where(np.isfinite(nums), nums, 0)) > 1 else ""
            raise OscarInputError(f"column {prob_col!r} row {int(row_id[pos])}: {shown(raw[prob_col].iloc[pos])!r} is not "
                                  f"a probability in [0, 1] ({int(bad.sum())} such rows){hint}")
        vals = nums

    key = pd.DataFrame({"i": items, "c": conds, "r": reps})
    dup = key.duplicated(keep=False).to_numpy()
    if dup.any():
        # The first duplicated row and the first other row with the same key (the first two
        # duplicated rows may belong to different pairs).
        first = int(np.flatnonzero(dup)[0])
        pos = np.flatnonzero((key == key.iloc[first]).all(axis=1).to_numpy())[:2]
        raise OscarInputError(
            f"rows {int(row_id[pos[0]])} and {int(row_id[pos[1]])} both judge item {items[pos[0]]!r} under condition "
            f"{conds[pos[0]]!r} in repetition {reps[pos[0]]!r} ({int(dup.sum())} duplicated rows); give each run "
            f"its own {repetition_col!r} value or remove the duplicates")

    cond_names = tuple(str(c) for c in dict.fromkeys(conds.tolist()))
    if len(cond_names) < 2:
        raise OscarInputError(f"only one condition ({cond_names[0]!r}) for attribute {attribute!r}; "
                              "an audit compares at least two")
    item_names = tuple(dict.fromkeys(items.tolist()))
    rep_names = tuple(_sorted_unique(reps))
    ii = pd.Index(item_names).get_indexer(items)
    cc = pd.Index(cond_names).get_indexer(conds)
    rr = pd.Index(rep_names).get_indexer(reps)
    shape = (len(item_names), len(cond_names), len(rep_names))
    mask = np.zeros(shape, bool)
    mask[ii, cc, rr] = True
    if output == "label":
        values = np.full(shape, -1, np.int32)
    else:
        values = np.full(shape, np.nan)
    values[ii, cc, rr] = vals

    # --- incomplete items: missing a (condition, repetition) cell that exists for others
    cell_exists = mask.any(axis=0)  # (C, R)
    missing = cell_exists[None] & ~mask
    inc = missing.any(axis=(1, 2))
    if inc.any():
        inc_idx = np.flatnonzero(inc)
        report.incomplete_items = {
            item_names[i]: sorted({cond_names[c] for c in np.flatnonzero(missing[i].any(axis=1))}) for i in inc_idx
        }
        examples = "; ".join(f"{k!r} lacks {v}" for k, v in list(report.incomplete_items.items())[:_SHOW])
        if incomplete == "error":
            raise OscarInputError(
                f"{len(inc_idx)} of {shape[0]} items lack a judgment under some condition/repetition "
                f"(e.g. {examples}); pass incomplete='drop' to remove them or 'keep' to use what is observed")
        if incomplete == "drop":
            keep = ~inc
            report.n_dropped_items = int(inc.sum())
            report.n_dropped_rows = int(mask[inc].sum())
            report.notes.append(f"dropped {len(inc_idx)} incomplete items ({report.n_dropped_rows} judgments) "
                                f"so every condition is judged on the same items; e.g. {examples}")
            values, mask = values[keep], mask[keep]
            item_names = tuple(item_names[i] for i in np.flatnonzero(keep))
            if not item_names:
                raise OscarInputError("no item is judged under every condition and repetition; "
                                      "pass incomplete='keep' to analyse what is observed")
        else:
            report.notes.append(f"kept {len(inc_idx)} incomplete items: per-condition measures use the judgments "
                                f"available and paired analyses pair only items judged in both; e.g. {examples}")
    empty = ~mask.any(axis=(0, 2))
    if empty.any():
        raise OscarInputError(f"condition(s) {[cond_names[c] for c in np.flatnonzero(empty)]} have no judgments left")
    report.n_used = int(mask.sum())
    return AuditData(kind=output, values=values, mask=mask, items=item_names, conditions=cond_names,
                     repetitions=rep_names, labels=tuple(labels), attribute=attribute, report=report)
