"""Model families for the self-preference (family) contrast F (method section 1).

``fam(name)`` maps a lower-cased model name, organization prefix kept, to a family.
The paper's exact table is unpublished, so this default is ours; it is deliberately
explicit and easy to override: pass a ``dict`` (exact names, case-insensitive) or a
callable to :func:`family_of` / ``build_design(family_map=...)``. Unmatched names form
their own singleton family, so they never share a family with anything by accident.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

__all__ = ["DEFAULT_FAMILY_RULES", "family_of", "family_function"]

# (family, regex on the lower-cased full name). Order matters: first match wins.
# An optional "org/" prefix is allowed before the model stem, so "meta-llama/Llama-4-…",
# "Qwen/Qwen3-…" and "arize-ai/qwen-2-…" all resolve by their stem, while
# "deepcogito/cogito-v2-preview-llama-…" (a stem that does not start with llama) does not.
DEFAULT_FAMILY_RULES: tuple[tuple[str, str], ...] = (
    ("llama", r"^(meta-llama/|meta/)|^([^/]+/)?llama"),
    ("openai", r"^openai/|^([^/]+/)?(gpt-|chatgpt|o1-|o3-|o4-)"),
    ("anthropic", r"^anthropic/|^([^/]+/)?claude"),
    ("google", r"^google/|^([^/]+/)?(gemma|gemini|palm|bard)"),
    ("mistral", r"^mistralai/|^([^/]+/)?(mistral|mixtral|ministral|codestral)"),
    ("qwen", r"^qwen/|^([^/]+/)?(qwen|qwq)"),
    ("deepseek", r"^deepseek-ai/|^([^/]+/)?deepseek"),
    ("moonshot", r"^moonshotai/|^([^/]+/)?(kimi|moonshot)"),
    ("zhipu", r"^(zai-org|thudm|zhipuai)/|^([^/]+/)?(glm|chatglm)"),
)

_COMPILED = tuple((fam, re.compile(rx)) for fam, rx in DEFAULT_FAMILY_RULES)


def family_of(name: str) -> str:
    """Default family of a model name.

    Examples
    --------
    >>> family_of("openai/gpt-oss-120b"), family_of("gpt4all-13b-snoozy")
    ('openai', 'gpt4all-13b-snoozy')
    """
    lowered = str(name).strip().lower()
    for fam, rx in _COMPILED:
        if rx.search(lowered):
            return fam
    return lowered


def family_function(family_map: Mapping[str, str] | Callable[[str], str] | None) -> Callable[[str], str]:
    """Turn a user override into a name → family function.

    A mapping is matched on lower-cased names and falls back to the default rules for
    names it does not list, so a user can correct one entry without retyping the table.
    """
    if family_map is None:
        return family_of
    if callable(family_map):
        return family_map
    if isinstance(family_map, Mapping):
        lowered = {str(k).strip().lower(): str(v) for k, v in family_map.items()}
        return lambda name: lowered.get(str(name).strip().lower(), family_of(name))
    raise TypeError(
        f"family_map must be a dict or a callable, got {type(family_map).__name__}"
    )
