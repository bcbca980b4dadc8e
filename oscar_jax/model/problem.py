"""One estimation problem: data, requested model, fitted model and parameter layout.

Every estimator (the point fit, the batched refits and the bootstrap, held-out
comparison, the Bayesian fit) starts from the same set-up: read the data into a
:class:`~oscar_jax.model.design.Design`, parse the model, drop the terms the data cannot
support (with a note that says so) and lay out θ. :func:`prepare` is the one place that
does it; estimators take the :class:`Problem` it returns, so one bootstrap resolves its
model once rather than once per layer.
"""

from __future__ import annotations

from typing import NamedTuple

from ..io.data import load_judgments
from .design import Design, build_design
from .params import Layout
from .spec import ModelSpec, parse_model
from ..runtime.validate import OscarInputError

__all__ = ["Problem", "as_design", "prepare"]


def as_design(data, *, schema=None, reference_judge=None, family_map=None, covariates=(),
              bothbad="tie", encoding=None, responses=None, turn=1, missing_responses="error") -> Design:
    """A Design from a Design (returned as is), a path, a DataFrame or records.

    ``responses``, ``turn`` and ``missing_responses`` join response lengths (see
    :func:`~oscar_jax.io.data.load_judgments`); ``encoding`` is the
    text encoding of CSV/TSV/JSON files.
    """
    if isinstance(data, Design):
        if reference_judge is not None or family_map is not None or covariates or responses is not None:
            raise OscarInputError(
                "reference_judge, family_map, covariates and responses are fixed when the design is built; "
                "pass them to build_design() instead"
            )
        return data
    frame, report = load_judgments(data, schema=schema, bothbad=bothbad, keep_columns=tuple(covariates or ()),
                                   encoding=encoding, responses=responses, turn=turn, missing_responses=missing_responses)
    return build_design(frame, reference_judge=reference_judge, family_map=family_map,
                        covariates=covariates, report=report)


class Problem(NamedTuple):
    """A model on a design, resolved once.

    Attributes
    ----------
    design
        The data.
    spec
        The model as requested (with its ridge λ).
    effective_spec
        The model actually fitted: ``spec`` less the terms the data cannot support.
    layout
        The parameter layout of ``effective_spec`` on ``design``.
    dropped
        One note per term the data cannot support (``notes`` adds the design's own first).
    """

    design: Design
    spec: ModelSpec
    effective_spec: ModelSpec
    layout: Layout
    dropped: tuple[str, ...]

    @property
    def notes(self) -> tuple[str, ...]:
        """The design's notes (loader), then one per dropped term."""
        return tuple(self.design.notes) + self.dropped


def prepare(data, model: str | ModelSpec = "oscar", *, ridge: float | None = None, schema: str | None = None,
            reference_judge: str | None = None, family_map=None, covariates=(), bothbad: str = "tie",
            encoding: str | None = None, responses=None, turn: int = 1, missing_responses: str = "error") -> Problem:
    """Resolve ``model`` on ``data``: the set-up every estimator shares.

    ``data`` is a Design, a path, a DataFrame or records; ``ridge`` (None: the model's λ)
    overrides the penalty; the other keywords are those of :func:`as_design`.
    """
    design = as_design(data, schema=schema, reference_judge=reference_judge, family_map=family_map,
                       covariates=covariates, bothbad=bothbad, encoding=encoding, responses=responses, turn=turn,
                       missing_responses=missing_responses)
    spec = parse_model(model, ridge)
    eff, dropped = design.effective_spec(spec)
    return Problem(design=design, spec=spec, effective_spec=eff, layout=design.layout(eff),
                   dropped=tuple(dropped))
