"""Table rows as JSON-ready dicts: numpy scalars to Python, NaN and ±inf to None."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

__all__ = ["json_records", "json_value"]


def json_value(x):
    """A numpy scalar as its Python value; a non-finite float as None (strict JSON has no NaN)."""
    if isinstance(x, (float, np.floating)):
        return None if not math.isfinite(float(x)) else float(x)
    if isinstance(x, np.integer):
        return int(x)
    if isinstance(x, np.bool_):
        return bool(x)
    return x


def json_records(frame: pd.DataFrame) -> list[dict]:
    """One dict per row of ``frame``, every value through :func:`json_value`."""
    return [{k: json_value(v) for k, v in row.items()} for row in frame.to_dict(orient="records")]
