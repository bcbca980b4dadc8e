"""Rendering for people and programs: 80-column tables, JSON and CSV."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

__all__ = ["fmt_ci", "json_default", "render_table", "shorten", "to_json", "write_tables"]


def shorten(name: str, width: int) -> str:
    """Fit a long model name in ``width`` characters, keeping its informative end."""
    name = str(name)
    if len(name) <= width:
        return name
    if "/" in name:  # drop the organisation prefix first
        name = name.split("/", 1)[1]
        if len(name) <= width:
            return name
    return name[: width - 1] + "…"


def fmt_ci(lo: float, hi: float, digits: int = 2) -> str:
    if not (np.isfinite(lo) and np.isfinite(hi)):
        return "–"
    return f"[{lo:.{digits}f}, {hi:.{digits}f}]"


def render_table(frame: pd.DataFrame, columns: Sequence[tuple[str, str, str]], width: int = 80,
                 name_col: str | None = None) -> str:
    """Render ``frame`` as fixed-width text.

    ``columns`` = (column, header, format spec or "" for str). The ``name_col`` column is
    shortened so the table fits in ``width`` characters.
    """
    cells = []
    for col, _, spec in columns:
        values = []
        for v in frame[col].tolist():
            if isinstance(v, str) or spec == "":
                # Control characters in names (a newline) would break the row: show them escaped.
                values.append("–" if v is None or (isinstance(v, float) and math.isnan(v))
                              else str(v).replace("\r", "\\r").replace("\n", "\\n").replace("\t", "\\t"))
            elif v is None or (isinstance(v, float) and not math.isfinite(v)):
                values.append("–")
            else:
                values.append(format(v, spec))
        cells.append(values)
    widths = [max([len(h)] + [len(x) for x in vals]) for (_, h, _), vals in zip(columns, cells)]
    total = sum(widths) + 2 * (len(widths) - 1)
    if name_col is not None and total > width:
        idx = [c for c, _, _ in columns].index(name_col)
        room = max(10, widths[idx] - (total - width))
        cells[idx] = [shorten(x, room) for x in cells[idx]]
        widths[idx] = max(len(columns[idx][1]), max((len(x) for x in cells[idx]), default=0))
    lines = []
    header = []
    for (_, h, spec), w in zip(columns, widths):
        header.append(h.ljust(w) if spec == "" else h.rjust(w))
    lines.append("  ".join(header).rstrip())
    lines.append("  ".join("-" * w for w in widths))
    for r in range(len(frame)):
        row = []
        for (_, _, spec), w, vals in zip(columns, widths, cells):
            row.append(vals[r].ljust(w) if spec == "" else vals[r].rjust(w))
        lines.append("  ".join(row).rstrip())
    return "\n".join(lines)


def json_default(obj):
    if isinstance(obj, (np.integer,)):
        return int(obj)
    if isinstance(obj, (np.floating,)):
        return None if not np.isfinite(obj) else float(obj)
    if isinstance(obj, np.bool_):
        return bool(obj)
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, Path):
        return str(obj)
    raise TypeError(f"not JSON serialisable: {type(obj).__name__}")


def _nan_to_none(obj):
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, dict):
        return {k: _nan_to_none(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_nan_to_none(v) for v in obj]
    return obj


def to_json(obj, indent: int | None = 2) -> str:
    """JSON with NaN/inf as null (strict JSON has no NaN)."""
    return json.dumps(_nan_to_none(obj), default=json_default, indent=indent, allow_nan=False)


def write_tables(out_dir: str | Path, tables: dict[str, pd.DataFrame], payload: dict | None = None) -> list[Path]:
    """Write each table as CSV (and ``payload`` as result.json) under ``out_dir``."""
    from .outputs import atomic_write, atomic_write_text

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, frame in tables.items():
        path = out / f"{name}.csv"
        atomic_write(path, lambda tmp, frame=frame: frame.to_csv(tmp, index=False))
        written.append(path)
    if payload is not None:
        path = out / "result.json"
        atomic_write_text(path, to_json(payload) + "\n")
        written.append(path)
    return written
