"""Model specification: which terms enter η, whether γ is learned, which tie model.

The variants of Table E1 are presets of one small frozen dataclass. Fields that change
the compiled graph (terms, learn_gamma, ties) form :meth:`ModelSpec.structure`, the
static argument of every jitted core; numbers that only change values (ridge, bounds)
are traced, so changing them does not recompile.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..runtime.validate import OscarInputError

__all__ = ["ModelSpec", "Structure", "parse_model", "PRESETS", "TERM_ORDER"]

# B.2: within each judge, columns are considered in this order.
TERM_ORDER = ("pos", "len", "fam", "cov")
_TERM_LETTERS = {"p": "pos", "l": "len", "f": "fam", "c": "cov"}
_LABEL = {"pos": "P", "len": "L", "fam": "F", "cov": "C"}


@dataclass(frozen=True)
class Structure:
    """The part of a spec that shapes the compiled computation (hashable, static)."""

    terms: tuple[str, ...]
    learn_gamma: bool
    ties: str  # "fractional" | "davidson"

    @property
    def davidson(self) -> bool:
        return self.ties == "davidson"

    @property
    def plain_bt(self) -> bool:
        """γ ≡ 1, no bias terms, fractional ties: fitted and reported in host numpy
        (:mod:`oscar_jax.infer.plain_bt`), so its design stays in host memory."""
        return not self.terms and not self.learn_gamma and not self.davidson


@dataclass(frozen=True)
class ModelSpec:
    """A member of the OSCAR model family (method section 2, Table E1).

    Parameters
    ----------
    terms
        Judge-specific bias terms, a subset of ``("pos", "len", "fam", "cov")`` kept in
        that order; ``cov`` means the user-supplied record covariates of the design.
    learn_gamma
        Learn judge sensitivities γ_k = exp(v_k) (reference judge fixed at 1); if False,
        γ ≡ 1 (the BT and Davidson baselines).
    ties
        ``"fractional"``: ties scored as ½ in the Bernoulli log loss (quasi-likelihood);
        ``"davidson"``: (P(A), P(B), P(tie)) = softmax(η/2, −η/2, τ_k).
    ridge
        λ in (λ/2)‖θ‖² on every free coordinate, not rescaled by N (0.05 in the paper).
    v_bound
        |v_k| ≤ v_bound (15 in the paper).
    name
        Display name (e.g. ``"J+P"``); derived from the terms when omitted.
    """

    terms: tuple[str, ...] = ("pos", "len", "fam")
    learn_gamma: bool = True
    ties: str = "fractional"
    ridge: float = 0.05
    v_bound: float = 15.0
    name: str = ""

    def __post_init__(self):
        bad = [t for t in self.terms if t not in TERM_ORDER]
        if bad:
            raise OscarInputError(f"unknown model term(s) {bad}; terms must be among {list(TERM_ORDER)}")
        ordered = tuple(t for t in TERM_ORDER if t in self.terms)
        object.__setattr__(self, "terms", ordered)
        if self.ties not in ("fractional", "davidson"):
            raise OscarInputError(f"ties must be 'fractional' or 'davidson', got {self.ties!r}")
        if not (self.ridge >= 0.0):
            raise OscarInputError(f"ridge must be ≥ 0, got {self.ridge}")
        if not (self.v_bound > 0.0):
            raise OscarInputError(f"v_bound must be > 0, got {self.v_bound}")
        if not self.name:
            object.__setattr__(self, "name", self._default_name())

    def _default_name(self) -> str:
        base = "J" if self.learn_gamma else ("Davidson" if self.ties == "davidson" else "BT")
        if self.learn_gamma and self.ties == "fractional" and set(self.terms) >= {"pos", "len", "fam"}:
            extra = "+C" if "cov" in self.terms else ""
            return "OSCAR" + extra
        if not self.terms:
            return base
        if not self.learn_gamma and set(self.terms) >= {"pos", "len", "fam"}:
            return base + "+PLF" + ("+C" if "cov" in self.terms else "")
        return base + "+" + "+".join(_LABEL[t] for t in self.terms)

    def structure(self) -> Structure:
        return Structure(self.terms, self.learn_gamma, self.ties)

    def without(self, term: str, note_name: bool = False) -> "ModelSpec":
        """The same spec with one term removed (name kept unless ``note_name``)."""
        terms = tuple(t for t in self.terms if t != term)
        return replace(self, terms=terms, name=self.name if not note_name else "")

    def with_terms(self, terms) -> "ModelSpec":
        return replace(self, terms=tuple(terms), name="")


PRESETS: dict[str, ModelSpec] = {
    "j": ModelSpec(terms=(), name="J"),
    "j+p": ModelSpec(terms=("pos",), name="J+P"),
    "j+l": ModelSpec(terms=("len",), name="J+L"),
    "j+f": ModelSpec(terms=("fam",), name="J+F"),
    "bt": ModelSpec(terms=(), learn_gamma=False, name="BT"),
    "bt+plf": ModelSpec(terms=("pos", "len", "fam"), learn_gamma=False, name="BT+PLF"),
    "davidson+plf": ModelSpec(terms=("pos", "len", "fam"), learn_gamma=False, ties="davidson", name="Davidson+PLF"),
    "oscar": ModelSpec(terms=("pos", "len", "fam"), name="OSCAR"),
}


def parse_model(model: str | ModelSpec, ridge: float | None = None) -> ModelSpec:
    """Parse a model string such as ``"oscar"``, ``"j+p"``, ``"bt+plf"`` or ``"j+p+l"``.

    Grammar: a base (``j`` learned γ; ``bt`` γ ≡ 1; ``davidson`` γ ≡ 1 with Davidson
    ties; ``oscar`` = ``j+plf``) followed by ``+`` and term letters ``p`` (position),
    ``l`` (length), ``f`` (family), ``c`` (user covariates), either one group (``plf``)
    or one letter per group (``p+l``). ``oscar+c`` adds user covariates to OSCAR.
    """
    if isinstance(model, ModelSpec):
        spec = model
    else:
        text = str(model).strip().lower().replace(" ", "")
        if text in PRESETS:
            spec = PRESETS[text]
        else:
            parts = text.split("+")
            base, groups = parts[0], parts[1:]
            bases = {"j": (True, "fractional", ()), "bt": (False, "fractional", ()),
                     "davidson": (False, "davidson", ()), "oscar": (True, "fractional", ("pos", "len", "fam"))}
            if base not in bases or not all(groups) :
                raise OscarInputError(
                    f"unknown model {model!r}; use one of {sorted(PRESETS)} or a base "
                    "(j, bt, davidson, oscar) plus '+' and term letters p, l, f, c (e.g. 'j+p+l')"
                )
            learn, ties, terms = bases[base]
            terms = list(terms)
            for g in groups:
                for ch in g:
                    if ch not in _TERM_LETTERS:
                        raise OscarInputError(
                            f"unknown term letter {ch!r} in model {model!r}; letters are p (position), "
                            "l (length), f (family), c (user covariates)"
                        )
                    terms.append(_TERM_LETTERS[ch])
            spec = ModelSpec(terms=tuple(dict.fromkeys(terms)), learn_gamma=learn, ties=ties)
    if ridge is not None:
        spec = replace(spec, ridge=float(ridge))
    return spec
