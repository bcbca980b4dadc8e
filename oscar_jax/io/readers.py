"""Read a table of records (file, DataFrame or list of dicts) into a raw DataFrame.

Formats: CSV/TSV (optionally gzipped), JSON (an array of records or an object holding
one), JSON lines (optionally gzipped) and Parquet. Every read failure is an
:class:`OscarInputError` naming the file and the fix; no column is interpreted here.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from ..runtime.validate import OscarInputError, data_file_suffix

__all__ = ["read_table"]


def _text(path: Path, encoding: str) -> str:
    if path.suffix.lower() == ".gz":
        import gzip

        with gzip.open(path, "rt", encoding=encoding) as fh:
            return fh.read()
    return path.read_text(encoding=encoding)


def _read_jsonl(path: Path, encoding: str) -> pd.DataFrame:
    rows = []
    for number, line in enumerate(_text(path, encoding).splitlines(), start=1):
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError as exc:
            raise OscarInputError(
                f"{str(path)!r} line {number}: not valid JSON ({exc.msg} at column {exc.colno}); a JSON-lines "
                "file needs one complete record per line — the file may be truncated: re-export it or remove "
                "that line"
            ) from None
    return pd.DataFrame(rows)


def _looks_like_json(path: Path, encoding: str) -> bool:
    try:
        head = _text(path, encoding)[:4096].lstrip("\ufeff \t\r\n")
    except (UnicodeDecodeError, OSError):
        return False
    return head[:1] in ("[", "{")


def read_table(source, encoding: str | None = None) -> tuple[pd.DataFrame, str]:
    """Read a DataFrame, CSV/TSV, JSON (array or object of arrays), JSONL or Parquet file.

    ``encoding`` is the text encoding of CSV/TSV/JSON files (default UTF-8).
    Returns the raw frame and a printable source name.
    """
    enc = encoding or "utf-8"
    if isinstance(source, pd.DataFrame):
        return source.copy(), "<DataFrame>"
    if isinstance(source, (list, tuple)) and (not source or isinstance(source[0], dict)):
        return pd.DataFrame(list(source)), "<records>"
    path = Path(source)
    suffix = data_file_suffix(path)
    try:
        if suffix in (".csv", ".csv.gz", ".tsv", ".tsv.gz") and _looks_like_json(path, enc):
            raise OscarInputError(
                f"{str(path)!r} has a {suffix} suffix but holds JSON; rename it to .json (an array of "
                "records) or .jsonl (one record per line)"
            )
        if suffix in (".csv", ".csv.gz"):
            frame = pd.read_csv(path, keep_default_na=False, na_values=[""], encoding=enc)
        elif suffix in (".tsv", ".tsv.gz"):
            frame = pd.read_csv(path, sep="\t", keep_default_na=False, na_values=[""], encoding=enc)
        elif suffix in (".parquet", ".pq"):
            frame = pd.read_parquet(path)
        elif suffix in (".jsonl", ".ndjson", ".jsonl.gz"):
            frame = _read_jsonl(path, enc)
        else:  # ".json" (data_file_suffix admits no other)
            frame = _read_json(path, enc)
    except OscarInputError:
        raise
    except UnicodeDecodeError as exc:
        raise OscarInputError(
            f"cannot read {str(path)!r} as {enc}: byte 0x{exc.object[exc.start]:02x} at position {exc.start} is "
            f"not valid {exc.encoding}; if the file was saved in another encoding, name it with --encoding "
            "(e.g. --encoding cp1252, latin-1 or utf-16; Python: load_judgments(..., encoding=...))"
        ) from None
    except LookupError:
        raise OscarInputError(f"unknown text encoding {enc!r}; e.g. utf-8, cp1252, latin-1, utf-16") from None
    except ImportError as exc:
        raise OscarInputError(f"reading {str(path)!r} needs an optional package: {exc}; "
                              "for Parquet, pip install pyarrow") from None
    except (ValueError, json.JSONDecodeError) as exc:
        raise OscarInputError(f"could not parse {str(path)!r}: {exc}") from None
    return frame, str(path)


def _read_json(path: Path, encoding: str = "utf-8") -> pd.DataFrame:
    text = path.read_text(encoding=encoding)
    try:
        obj = json.loads(text)
    except json.JSONDecodeError:
        # Many "json" dumps are really JSON lines.
        return _read_jsonl(path, encoding)
    if isinstance(obj, list):
        return pd.DataFrame(obj)
    if isinstance(obj, dict):
        for key in ("records", "data", "judgments", "battles"):
            if isinstance(obj.get(key), list):
                return pd.DataFrame(obj[key])
        try:
            return pd.DataFrame(obj)
        except ValueError:
            pass
    raise OscarInputError(
        f"{str(path)!r}: expected a JSON array of records (or an object with a 'records' array)"
    )

