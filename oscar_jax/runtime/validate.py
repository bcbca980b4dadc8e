"""Shared argument checks with messages that name the value and the fix."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

__all__ = [
    "OscarDataWarning",
    "OscarInputError",
    "check_ci_prob",
    "check_choice",
    "check_positive_int",
    "resolve_name",
]


class OscarInputError(ValueError):
    """Bad user input, detected before any computation.

    A ``ValueError`` subclass so callers can catch either; the CLI turns it into a
    one-line message and exit status 2.
    """


class OscarDataWarning(UserWarning):
    """Input that is valid but probably not what the user meant (e.g. names differing only in case)."""


def check_ci_prob(ci_prob: float) -> float:
    """Return ``ci_prob`` as a float after checking 0 < ci_prob < 1."""
    try:
        value = float(ci_prob)
    except (TypeError, ValueError):
        raise OscarInputError(f"ci_prob must be a number in (0, 1), got {ci_prob!r}") from None
    if not 0.0 < value < 1.0:
        raise OscarInputError(f"ci_prob must lie strictly between 0 and 1, got {value}; e.g. 0.95")
    return value


def check_choice(name: str, value: str, choices: Iterable[str]) -> str:
    """Return ``value`` if it is one of ``choices``, else raise naming them."""
    choices = list(choices)
    if value not in choices:
        raise OscarInputError(f"Requested {name} {value!r} but it must be one of {choices}")
    return value


def check_positive_int(name: str, value, minimum: int = 1) -> int:
    """Return ``value`` as an int ≥ ``minimum``."""
    try:
        as_int = int(value)
    except (TypeError, ValueError):
        raise OscarInputError(f"{name} must be an integer ≥ {minimum}, got {value!r}") from None
    if as_int != value or as_int < minimum:
        raise OscarInputError(f"{name} must be an integer ≥ {minimum}, got {value!r}")
    return as_int


def resolve_name(kind: str, name: str, available: Sequence[str]) -> str:
    """Match ``name`` against ``available`` exactly, else as a unique case-insensitive substring.

    Judge names in released data often carry provider prefixes and suffixes
    ("Qwen/Qwen3-235B-A22B-Instruct-2507-tput"); a user who types the model's name
    ("Qwen3-235B-A22B-Instruct-2507") should get that judge, and an ambiguous or
    absent name must be an error that lists the choices, never a silent default.
    """
    if name in available:
        return name
    lowered = name.lower()
    hits = [a for a in available if lowered in a.lower()]
    if len(hits) == 1:
        return hits[0]
    shown = ", ".join(repr(a) for a in available[:30])
    more = "" if len(available) <= 30 else f", … ({len(available)} in all)"
    if not hits:
        raise OscarInputError(f"{kind} {name!r} is not in the data; available: {shown}{more}")
    raise OscarInputError(
        f"{kind} {name!r} is ambiguous: it matches {hits}; pass the exact name"
    )
