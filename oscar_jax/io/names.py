"""Names as one spelling: Unicode normalisation, look-alike refusal and visible display.

Candidate and judge names are text the user typed, copied from model cards, or produced by
scripts; two spellings of one name must not become two candidates, and a name must not
print as something else. Three rules, applied to the *distinct* names only (a handful per
million records), so they cost nothing per record:

* every name is stripped and normalised to NFC once (:func:`normal_names`): ``café`` typed
  with a combining accent (NFD) and with a precomposed ``é`` (NFC) is one name;
* two names that still differ, but only by invisible format or control characters
  (``m1`` and ``m1`` + zero-width space) or only under NFKC compatibility folding
  (``ｍ１`` in fullwidth letters), are refused (:func:`refuse_lookalikes`): the data do
  not say whether they are one candidate or two, so the user must say;
* every invisible, control or direction-changing character is shown escaped (``\\u202e``)
  wherever a name is printed (:func:`visible`: the text tables and the HTML report), so
  ``good\\u202egnp.exe`` cannot display as ``goodexe.png``.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence

import math
from typing import TYPE_CHECKING

import numpy as np

from ..runtime.validate import OscarInputError

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["id_text", "is_text", "lookalike_key", "normal_names", "numbers", "prompt_key", "refuse_lookalikes",
           "visible"]

# Unicode categories that print as nothing or change what prints around them: controls
# (Cc), format characters such as ZWSP, ZWJ, BOM and the bidi overrides (Cf), line and
# paragraph separators (Zl, Zp), unassigned and private-use code points (Cn, Co).
_HIDDEN = frozenset({"Cc", "Cf", "Zl", "Zp", "Cn", "Co", "Cs"})


def _hidden(ch: str) -> bool:
    return unicodedata.category(ch) in _HIDDEN or (ch.isspace() and ch != " ")


def visible(text) -> str:
    """``text`` with every invisible or direction-changing character written as an escape.

    Tabs and newlines become ``\\t`` and ``\\n``; any other such character ``\\uXXXX``
    (``\\UXXXXXXXX`` beyond the BMP). Printable text, accents and non-Latin scripts
    are left as they are.

    >>> visible("good\\u202egnp.exe")
    'good\\\\u202egnp.exe'
    """
    text = str(text)
    if text.isprintable():
        return text
    out = []
    for ch in text:
        if not _hidden(ch):
            out.append(ch)
        elif ch in "\t\n\r":
            out.append({"\t": "\\t", "\n": "\\n", "\r": "\\r"}[ch])
        else:
            out.append(f"\\u{ord(ch):04x}" if ord(ch) <= 0xFFFF else f"\\U{ord(ch):08x}")
    return "".join(out)


def normal_names(names: Sequence[str]) -> list[str]:
    """Each name stripped of surrounding white space and normalised to NFC."""
    return [unicodedata.normalize("NFC", str(n).strip()) for n in names]


def lookalike_key(name: str) -> str:
    """What a name looks like: NFKC-folded with invisible format and control characters removed."""
    folded = unicodedata.normalize("NFKC", str(name))
    return "".join(ch for ch in folded if unicodedata.category(ch) not in _HIDDEN).strip()


def refuse_lookalikes(kind: str, names: Sequence[str], first_rows: Sequence[int] | None = None,
                      where: str = "") -> None:
    """Raise when two distinct (normalised) names look alike.

    Parameters
    ----------
    kind
        What the names are ("candidate", "judge"), for the message.
    names
        The distinct names, already normalised by :func:`normal_names`.
    first_rows
        The 0-based record where each name first occurs (the message counts from 1).
    where
        The column(s) the names come from, for the message.
    """
    groups: dict[str, list[int]] = {}
    for i, name in enumerate(names):
        groups.setdefault(lookalike_key(name), []).append(i)
    for members in groups.values():
        if len(members) < 2:
            continue
        rows = np.asarray(first_rows) if first_rows is not None else None
        if rows is not None:
            members = sorted(members, key=lambda i: int(rows[i]))
        spelled = "; ".join(f"'{visible(names[i])}'" + ("" if rows is None else f" (first at row {int(rows[i]) + 1})")
                            for i in members[:4])
        column = f" in {where}" if where else ""
        raise OscarInputError(
            f"{kind} names{column} differ only by invisible characters or compatibility forms: {spelled}; they "
            f"display alike but would be fitted as different {kind}s — spell them alike in the data (or rename one "
            "visibly) and run again")


# ---------------------------------------------------------------------------------------
# Ids as text, numbers as numbers
# ---------------------------------------------------------------------------------------

def prompt_key(value):
    """One id as text: lists such as ["file.jsonl", 444] become "file.jsonl#444"; a typed
    number (Parquet, JSON, a DataFrame) its digits, an integral float without ".0"."""
    if isinstance(value, (list, tuple, np.ndarray)):
        return "#".join(str(prompt_key(v)) for v in value)
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return value if isinstance(value, str) else str(value)


def is_text(col: pd.Series) -> bool:
    """True for pandas' string dtypes (what every text reader returns)."""
    import pandas as pd  # (the names' own rules, which the text tables use, run without it)

    return isinstance(col.dtype, pd.StringDtype)


def id_text(col: pd.Series) -> pd.Series:
    """An id or name column as text, exactly as written; a missing value stays missing.

    The text readers read every column as text, so this only converts typed sources
    (Parquet, JSON numbers, a DataFrame): one :func:`prompt_key` per *distinct* value.
    """
    import pandas as pd

    if is_text(col):
        return col
    try:
        codes, uniques = pd.factorize(col, use_na_sentinel=True)
    except TypeError:  # unhashable values (JSON lists): convert each record
        return pd.Series(pd.array([None if _missing(v) else prompt_key(v) for v in col], dtype="str"), index=col.index)
    texts = pd.array([prompt_key(u) for u in uniques], dtype="str")
    return pd.Series(texts.take(codes, allow_fill=True), index=col.index)


def _missing(value) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def numbers(col: pd.Series) -> np.ndarray:
    """A numeric column as float64, NaN where a value is not a number (the caller names it).

    Text columns are parsed by Arrow in one pass; pandas' per-value parser is the fallback
    when Arrow refuses a value (so that value reads as NaN and is reported, not raised)."""
    if col.dtype.kind in "fiu":
        return col.to_numpy(dtype=float)
    if is_text(col):
        import pyarrow as pa
        import pyarrow.compute as pc

        try:
            # Chunk by chunk into one array: the whole column cast at once, then copied out, held
            # it twice (160 MB at 10⁷ records).
            out, at = np.empty(len(col)), 0
            data = pa.chunked_array(pa.array(col.array))
            for chunk in data.chunks:
                out[at:at + len(chunk)] = pc.cast(chunk, pa.float64()).to_numpy(zero_copy_only=False)
                at += len(chunk)
            return out
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, TypeError):
            pass
    import pandas as pd

    return pd.to_numeric(col, errors="coerce").to_numpy(dtype=float)
