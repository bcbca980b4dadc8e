"""One estimation problem: data, requested model, fitted model and parameter layout.

Every estimator (the point fit, the batched refits and the bootstrap, held-out
comparison, attenuation refits, human agreement, the Bayesian fit) starts from the same
set-up: read and select the records (:func:`~oscar_jax.io.data.load_judgments`), code them
into a :class:`~oscar_jax.model.design.Design`, parse the model, drop the terms the data
cannot support (with a note that says so) and lay out θ. :func:`prepare` is the one place
that does it, for the Python API and the CLI alike; every estimator takes its data as
anything :func:`prepare` takes (a prepared :class:`Problem` included) and passes its
set-up keywords on, so one bootstrap resolves its model once rather than once per layer.

The records are read and checked before the numeric stack is imported: a bad file costs
the user no JAX start-up.
"""

from __future__ import annotations

import inspect
import sys
from typing import TYPE_CHECKING, NamedTuple

from .spec import ModelSpec, parse_model
from ..runtime.validate import OscarInputError

if TYPE_CHECKING:  # annotations only: the design module loads the numeric stack
    from .design import Design
    from .params import Layout

__all__ = ["Problem", "as_design", "prepare"]

_DESIGN_KEYWORDS = ("reference_judge", "family_map", "covariates")


def _is_design(data) -> bool:
    module = sys.modules.get("oscar_jax.model.design")  # not loaded yet: data cannot be a Design
    return module is not None and isinstance(data, module.Design)


def _given(load: dict) -> list[str]:
    """The reading keywords in ``load`` that ask for something other than the default."""
    if not load:  # the usual call: no signature to read (a tenth of a plain-BT fit's time)
        return []
    from ..io.data import load_judgments

    params = inspect.signature(load_judgments).parameters
    allowed = [k for k in params if k not in ("source", "keep_columns")]  # covariates name the kept columns
    unknown = [k for k in load if k not in allowed]
    if unknown:
        raise TypeError(f"unexpected keyword argument(s) {unknown}; the set-up keywords are "
                        f"{[*_DESIGN_KEYWORDS, *allowed]}")
    def differs(value, default) -> bool:
        if default is None:
            return value is not None
        if isinstance(default, (tuple, bool)):  # filters=(), exclude_ties=False: empty or False is the default
            return bool(value)
        return value != default

    return [k for k, v in load.items() if differs(v, params[k].default)]


def as_design(data, *, reference_judge: str | None = None, family_map=None, covariates=(), device: bool = True,
              **load) -> Design:
    """The :class:`~oscar_jax.model.design.Design` of ``data``.

    ``data`` is a path, a DataFrame, records, :class:`~oscar_jax.io.data.Judgments` (what
    ``load_judgments`` returns), a Design (returned as is) or a :class:`Problem` (its
    design). ``reference_judge``, ``family_map`` and ``covariates`` are those of
    :func:`~oscar_jax.model.design.build_design`; ``**load`` the keywords of
    :func:`~oscar_jax.io.data.load_judgments` (``schema``, ``bothbad``, ``filters``,
    ``exclude_ties``, ``baseline``, ``strong_weight``, ``encoding``, ``responses``,
    ``turn``, ``missing_responses``).
    """
    from ..io.data import Judgments, load_judgments  # pandas: imported by the set-up, not by this module

    design_kw = dict(reference_judge=reference_judge, family_map=family_map, covariates=tuple(covariates or ()))
    if isinstance(data, Problem):
        data = data.design
    if _is_design(data) or isinstance(data, Judgments):
        fixed = _given(load) + ([k for k, v in design_kw.items() if v] if _is_design(data) else [])
        if fixed:
            what, where = ("design is built", "build_design") if _is_design(data) else ("judgments are read",
                                                                                         "load_judgments")
            raise OscarInputError(f"{', '.join(fixed)} are fixed when the {what}; pass them to {where}() instead")
        if _is_design(data):
            return data
        frame, report = data
        holder = [frame]
    else:
        judgments = load_judgments(data, keep_columns=design_kw["covariates"], **load)
        holder, report = [judgments.frame], judgments.report
        del judgments
    from .design import build_design_owning  # the numeric stack, once the records are known to be good

    # The frame read here is nobody else's: handed over, it is freed once the records are coded.
    return build_design_owning(holder, report=report, device=device, **design_kw)


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


def prepare(data, model: str | ModelSpec | None = None, *, ridge: float | None = None, **setup) -> Problem:
    """Resolve ``model`` on ``data``: the set-up every estimator shares.

    Parameters
    ----------
    data
        A path, DataFrame, records, :class:`~oscar_jax.io.data.Judgments`, Design or
        :class:`Problem`.
    model
        Model string or ModelSpec; default ``"oscar"``, or a Problem's own model.
    ridge
        λ of the penalty (default: the model's, 0.05).
    **setup
        The keywords of :func:`as_design`: ``reference_judge``, ``family_map``,
        ``covariates`` and the reading keywords of :func:`~oscar_jax.io.data.load_judgments`
        (``schema``, ``bothbad``, ``filters``, ``exclude_ties``, ``baseline``,
        ``strong_weight``, ``encoding``, ``responses``, ``turn``, ``missing_responses``).

    Examples
    --------
    >>> from oscar_jax import prepare, simulate_frame
    >>> problem = prepare(simulate_frame(seed=0, n_prompts=50), "j+p", exclude_ties=True)
    >>> problem.effective_spec.name
    'J+P'
    """
    if isinstance(data, Problem) and model is None and ridge is None and not setup:
        return data
    if model is None:
        model = data.spec if isinstance(data, Problem) else "oscar"
    spec = parse_model(model, ridge)  # a bad model string fails before the data are read
    # A plain-BT design stays in host memory: its fit compiles nothing (infer/plain_bt.py).
    design = as_design(data, device=not spec.structure().plain_bt, **setup)
    eff, dropped = design.effective_spec(spec)
    return Problem(design=design, spec=spec, effective_spec=eff, layout=design.layout(eff),
                   dropped=tuple(dropped))
