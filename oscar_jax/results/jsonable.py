"""JSON-safe values: numpy scalars to Python, NaN/inf to null (strict JSON has no NaN)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["clean", "finite_or_none", "json_default", "records", "to_json"]


def clean(x):
    """A table cell as JSON: finite floats as float, NaN/inf as None, numpy ints/bools as Python."""
    if isinstance(x, (float, np.floating)):
        return None if not math.isfinite(float(x)) else float(x)
    if isinstance(x, np.integer):
        return int(x)
    if isinstance(x, np.bool_):
        return bool(x)
    return x


def finite_or_none(x) -> float | None:
    """``float(x)``, or None when it is NaN or infinite."""
    x = float(x)
    return x if math.isfinite(x) else None


def records(frame: pd.DataFrame) -> list[dict]:
    """The rows of ``frame`` as JSON-safe dicts (:func:`clean` on every cell)."""
    return [{k: clean(v) for k, v in row.items()} for row in frame.to_dict(orient="records")]


def json_default(obj):
    """``json.dumps(default=...)`` for numpy scalars and arrays and paths."""
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
