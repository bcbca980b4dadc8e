"""Read a table of records (file, DataFrame or list of dicts) into a raw DataFrame.

Formats: CSV/TSV (optionally gzipped), JSON (an array of records, an object holding one,
or an object keyed by record id; optionally gzipped), JSON lines (optionally gzipped) and
Parquet. Every read failure is an :class:`OscarInputError` naming the file and the fix; no
column is interpreted here, beyond the CSV numbers named below.

Text is read as text: every CSV/TSV column is a string column exactly as written (``001``,
``1e3``, ``NA`` and ``True`` stay those strings), and JSON numbers keep their digits, so an
id never passes through a float (``007`` and ``7`` stay two models, ``2`` never becomes
``2.0``). The columns that hold numbers (outcome, weight, lengths, covariates) are parsed
where they are used (:func:`oscar_jax.io.names.numbers`), except that Arrow's CSV reader
parses ``len_a``, ``len_b`` and ``weight``, which hold numbers in every convention. CSV and
TSV files in UTF-8 are parsed by Arrow's columnar reader; other encodings, and files Arrow
refuses, by pandas', whose messages name the line.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pandas as pd

from ..runtime.validate import OscarInputError, data_file_suffix

__all__ = ["read_table", "refuse_duplicate_columns"]


def _text(path: Path, encoding: str) -> str:
    if path.suffix.lower() == ".gz":
        import gzip

        _check_gzip(path)
        with gzip.open(path, "rt", encoding=encoding) as fh:
            return fh.read()
    return path.read_text(encoding=encoding)


def _check_gzip(path: Path) -> None:
    with open(path, "rb") as fh:
        head = fh.read(2)
    if head != b"\x1f\x8b":
        raise OscarInputError(
            f"{str(path)!r} ends in .gz but is not gzip-compressed (it starts with {head!r}); if it is plain "
            f"text, rename it without .gz (e.g. {path.with_suffix('').name!r}), or compress it with gzip")


def refuse_duplicate_columns(names, source: str) -> None:
    """Raise when two columns have one name once surrounding spaces are removed."""
    seen: dict[str, int] = {}
    for i, name in enumerate(names):
        key = str(name).strip()
        if key in seen:
            j = seen[key]
            raise OscarInputError(
                f"{source}: columns {j + 1} ({str(names[j])!r}) and {i + 1} ({str(name)!r}) have the same name "
                f"{key!r}; a column must be named once — rename or delete one of them")
        seen[key] = i


def _header(path: Path, sep: str, encoding: str) -> list[str]:
    if path.suffix.lower() == ".gz":
        import gzip

        _check_gzip(path)
        opener = gzip.open(path, "rt", encoding=encoding, newline="")
    else:
        opener = open(path, encoding=encoding, newline="")
    with opener as fh:
        names = next(csv.reader(fh, delimiter=sep), [])
    if names:
        names[0] = names[0].lstrip("\ufeff")
    return names


# Columns that only ever hold numbers in every input convention: Arrow parses them as it reads
# (at 10⁷ records a column of text is ~23 bytes a record against 8, and its numbers a copy
# more). A value Arrow cannot parse sends the file to pandas' reader as text, where the
# column's check names the row.
NUMBER_COLUMNS = ("len_a", "len_b", "weight")


def _read_csv(path: Path, sep: str, encoding: str) -> pd.DataFrame:
    """Every column as text, exactly as written (the :data:`NUMBER_COLUMNS` as numbers); an
    empty cell is missing."""
    names = _header(path, sep, encoding)
    refuse_duplicate_columns(names, repr(str(path)))
    if names and encoding.lower().replace("_", "-") in ("utf-8", "utf8", "utf-8-sig"):
        import pyarrow as pa
        import pyarrow.csv as pcsv

        try:
            table = pcsv.read_csv(
                path,
                # 16 MiB blocks: a few chunks per column (later hash passes walk each chunk), still parallel.
                read_options=pcsv.ReadOptions(column_names=names, skip_rows=1, block_size=1 << 24),
                parse_options=pcsv.ParseOptions(delimiter=sep, newlines_in_values=True),
                convert_options=pcsv.ConvertOptions(
                    column_types={n: pa.float64() if n.strip() in NUMBER_COLUMNS else pa.string() for n in names},
                    null_values=[""], strings_can_be_null=True, quoted_strings_can_be_null=True))
            return table.to_pandas()
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            pass  # pandas reads it again below and names the line that is wrong
    return pd.read_csv(path, sep=sep, dtype=str, keep_default_na=False, na_values=[""], encoding=encoding)


def _read_jsonl(path: Path, encoding: str) -> pd.DataFrame:
    rows = []
    for number, line in enumerate(_text(path, encoding).splitlines(), start=1):
        if not line.strip():
            continue
        try:
            rows.append(_loads(line))
        except json.JSONDecodeError as exc:
            raise OscarInputError(
                f"{str(path)!r} line {number}: not valid JSON ({exc.msg} at column {exc.colno}); a JSON-lines "
                "file needs one complete record per line — the file may be truncated: re-export it or remove "
                "that line"
            ) from None
    return pd.DataFrame(rows)


# The columns that hold ids or names in some input convention (oscar_jax.io.schemas): read as
# text by Arrow's JSON reader, which refuses a file where one holds a JSON number.
ID_COLUMNS = ("prompt", "question_id", "uid", "task", "instruction", "candidate_a", "candidate_b", "model_a",
              "model_b", "model", "baseline", "left", "right", "label", "generator_1", "generator_2", "judge",
              "judge_model", "worker", "annotator")


def _read_jsonl_columnar(path: Path, encoding: str) -> pd.DataFrame:
    """JSON lines through Arrow's columnar reader when every id is a JSON string (the usual
    export); otherwise (a numeric id, a nested record, a bad line) line by line, where a
    number keeps its digits and a bad line is named."""
    if encoding.lower().replace("_", "-") in ("utf-8", "utf8"):
        import pyarrow as pa
        import pyarrow.json as pj

        try:
            with (pa.input_stream(str(path), compression="detect")) as stream:
                head = stream.read(1 << 16).decode("utf-8", errors="replace").lstrip("\ufeff \t\r\n")
            keys = json.loads(head.splitlines()[0]) if head else None
        except (ValueError, OSError, pa.ArrowException, IndexError):
            keys = None
        if isinstance(keys, dict) and not any(isinstance(v, (dict, list)) for v in keys.values()):
            schema = pa.schema([(c, pa.string()) for c in keys if c in ID_COLUMNS])
            try:
                table = pj.read_json(pa.input_stream(str(path), compression="detect"), parse_options=pj.ParseOptions(
                    explicit_schema=schema, unexpected_field_behavior="infer", newlines_in_values=False))
                if all(t in (pa.string(), pa.int64(), pa.float64(), pa.bool_(), pa.null())
                       for t in table.schema.types):
                    return table.to_pandas()
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
                pass
    return _read_jsonl(path, encoding)


def _looks_like_json(path: Path, encoding: str) -> bool:
    try:
        if path.suffix.lower() == ".gz":
            import gzip

            _check_gzip(path)
            with gzip.open(path, "rt", encoding=encoding) as fh:
                head = fh.read(4096)
        else:
            with open(path, encoding=encoding) as fh:
                head = fh.read(4096)
    except (UnicodeDecodeError, OSError, EOFError):
        return False
    head = head.lstrip("\ufeff \t\r\n")
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
            frame = _read_csv(path, ",", enc)
        elif suffix in (".tsv", ".tsv.gz"):
            frame = _read_csv(path, "\t", enc)
        elif suffix in (".parquet", ".pq"):
            frame = pd.read_parquet(path)
        elif suffix in (".jsonl", ".ndjson", ".jsonl.gz"):
            frame = _read_jsonl_columnar(path, enc)
        else:  # ".json" or ".json.gz" (data_file_suffix admits no other)
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
    except (OSError, EOFError) as exc:  # a damaged or truncated gzip stream, an unreadable file
        raise OscarInputError(f"could not read {str(path)!r}: {exc}; if it is compressed, check that it is "
                              "complete (gzip -t), or re-export it") from None
    return frame, str(path)


def _loads(text: str):
    # A JSON number keeps its digits as text (an id "007" or 1e3 is not a float); the
    # columns that hold numbers parse them where they are used.
    return json.loads(text, parse_int=str, parse_float=str)


def _read_json(path: Path, encoding: str = "utf-8") -> pd.DataFrame:
    text = _text(path, encoding)
    try:
        obj = _loads(text)
    except json.JSONDecodeError:
        # Many "json" dumps are really JSON lines.
        return _read_jsonl(path, encoding)
    if isinstance(obj, list):
        return pd.DataFrame(obj)
    if isinstance(obj, dict):
        for key in ("records", "data", "judgments", "battles"):
            if isinstance(obj.get(key), list):
                return pd.DataFrame(obj[key])
        if obj and all(isinstance(v, dict) for v in obj.values()):
            # An object keyed by record id: {"r1": {...}, "r2": {...}}; the records are its values.
            return pd.DataFrame(list(obj.values()))
        try:
            return pd.DataFrame(obj)
        except ValueError:
            pass
    raise OscarInputError(
        f"{str(path)!r}: expected a JSON array of records (or an object with a 'records' array)"
    )
