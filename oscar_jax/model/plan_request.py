"""What a plan is asked for (``oscar plan``'s options): target, judge costs, budget, model, random share.

Checked before the data are read and before the numeric stack loads, so a mistyped
option costs the user no JAX start-up (tests/test_light_start.py); :func:`oscar_jax.plan`
and the CLI check with the same functions. Candidate names in a ``pairs`` target and judge
names in the costs are resolved later, against the data.
"""

from __future__ import annotations

import math
from typing import NamedTuple

from ..runtime.validate import OscarInputError
from .spec import ModelSpec, parse_model

__all__ = ["EXPLORE", "OUTPUT_SUFFIXES", "TARGET_HELP", "Target", "check_budget", "check_explore", "check_model",
           "parse_costs", "parse_target"]

# Share of each batch spent at random (uniformly over pairs, orders and judges, per unit
# cost). A purely greedy design starves the judges it finds least informative; their γ and
# biases then stay in the small-sample regime where Wald intervals undercover, and q_ij
# depends on every judge through γ̄. In the Appendix G simulation, 0.2 kept the cluster
# sandwich's coverage near 95 % at no visible cost in top-1 or τ (benchmarks/results/plan_simulation.md).
EXPLORE = 0.2
OUTPUT_SUFFIXES = (".csv", ".jsonl")  # the batch file: the package's own input schema
TARGET_HELP = "top1, ranking, judges or pairs:A,B (several pairs: 'pairs:A,B;C,D')"


class Target(NamedTuple):
    kind: str
    pairs: tuple = ()   # ((name A, name B), …) for kind "pairs"


def parse_target(text) -> Target:
    """``top1`` | ``ranking`` | ``judges`` | ``pairs:A,B[;C,D…]`` (names resolved later, against the data)."""
    if isinstance(text, Target):
        return text
    raw = str(text).strip()
    if raw.lower() in ("top1", "ranking", "judges"):
        return Target(raw.lower())
    if raw.lower().startswith("pairs:"):
        pairs = []
        for part in raw[len("pairs:"):].split(";"):
            names = [n.strip() for n in part.split(",")]
            if len(names) != 2 or not all(names):
                raise OscarInputError(f"target {raw!r}: {part!r} is not a pair A,B; write pairs:A,B (several: "
                                      "'pairs:A,B;C,D', quoted in the shell)")
            pairs.append(tuple(names))
        return Target("pairs", tuple(pairs))
    raise OscarInputError(f"target {raw!r} is not one of {TARGET_HELP}")


def parse_costs(costs) -> dict[str, float]:
    """Judge costs from ``"NAME=COST,NAME=COST"`` or a dict; each cost a positive finite number."""
    if costs is None:
        return {}
    if isinstance(costs, str):
        pairs = {}
        for item in (x.strip() for x in costs.split(",")):
            if not item:
                continue
            name, sep, value = item.rpartition("=")
            if not sep or not name.strip():
                raise OscarInputError(f"--judges entry {item!r} is not NAME=COST; e.g. --judges gpt-4=10,llama-3=1")
            pairs[name.strip()] = value.strip()
        costs = pairs
    out = {}
    for name, value in dict(costs).items():
        try:
            cost = float(value)
        except (TypeError, ValueError):
            raise OscarInputError(f"cost of judge {name!r} is {value!r}, not a number; e.g. {name}=10") from None
        if not (math.isfinite(cost) and cost > 0):
            raise OscarInputError(f"cost of judge {name!r} is {value!r}; costs must be positive and finite "
                                  "(leave a judge out by giving a judgment pool without it)")
        out[str(name)] = cost
    return out


def check_budget(budget) -> float:
    try:
        value = float(budget)
    except (TypeError, ValueError):
        raise OscarInputError(f"budget must be a positive number (judgments, or cost units with judge costs), "
                              f"got {budget!r}") from None
    if not (math.isfinite(value) and value > 0):
        raise OscarInputError(f"budget must be a positive finite number, got {budget!r}; e.g. --budget 2000")
    return value


def check_model(model) -> ModelSpec:
    """The model to plan with (default OSCAR): any fractional-tie model."""
    spec = parse_model("oscar" if model is None else model)
    if spec.ties == "davidson":
        raise OscarInputError(f"model {spec.name!r}: plan supports the fractional-tie models (j…, bt…, oscar); a "
                              "Davidson judgment's information has rank two — plan with the same terms and "
                              "fractional ties")
    return spec


def check_explore(explore) -> float:
    try:
        value = float(explore)
    except (TypeError, ValueError):
        raise OscarInputError(f"explore must be a share in [0, 1), got {explore!r}; e.g. 0.2") from None
    if not 0.0 <= value < 1.0:
        raise OscarInputError(f"explore must be a share in [0, 1), got {explore!r}; e.g. 0.2 (0: purely greedy)")
    return value
