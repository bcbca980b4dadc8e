"""Which judgments to buy next: judge-aware adaptive design (``oscar plan``).

From a fit, choose the batch of judgments — (prompt, candidate in slot A, candidate in
slot B, judge) — that most reduces the expected uncertainty of a target per unit cost:

* ``top1``     the expected probability that the reported leader is wrong (the union bound
               over its rivals of a wrong sign of the gap h_ℓj after the batch);
* ``ranking``  the expected number of discordant pairs (1 − Kendall τ, up to a factor);
* ``pairs:A,B[;C,D…]``  the variance of the chosen pairs' logit gaps h (interval widths);
* ``judges``   Σ_k Var(log κ_k) + Var(D_k): the judges' sensitivities and position effects.

Each candidate judgment's expected Fisher information comes from the package's one
predictor at θ̂ (:mod:`oscar_jax.infer.judgment_info`, vmapped over every (pair, order,
judge)); the batch is built greedily with rank-one updates of the expected cluster
sandwich (:mod:`oscar_jax.infer.batch_design`), so it is not N copies of one pair: each
pick lowers the value of the next similar one. Display order is part of the choice:
both orders of every pair are candidates, and an order that would leave a judge's
position effect confounded with the scores adds little information, so judges whose D
is poorly determined get the order that separates it. New judgments are counted as new
prompt clusters (docs/plan.md states the approximation); they are placed on the least
used prompts of the user's pool, or on new prompt ids ``new-1``, ``new-2``, … to be filled in.
"""

from __future__ import annotations

import heapq
from typing import NamedTuple

import numpy as np
import pandas as pd

from .fit import fit
from .infer.batch_design import Allocation, Criterion, greedy_allocation
from .infer.judgment_info import information_factors_jit, plan_targets_jit
from .io.pool import Pool, read_pool
from .model.params import Layout
from .model.plan_request import EXPLORE, Target, check_budget, check_explore, check_model, parse_costs, parse_target
from .model.problem import Problem, prepare
from .model.spec import ModelSpec
from .results.fit import FitResult
from .results.plan import PlanResult, plan_summary
from .runtime.validate import OscarInputError, check_positive_int, check_seed, resolve_name

__all__ = ["Candidates", "allocate", "candidate_judgments", "place_judgments", "plan", "spread_over_prompts"]


class Candidates(NamedTuple):
    """Candidate judgments (N_c): slot-A and slot-B candidate, judge, covariates z = (L, F, X…),
    cost of one judgment and how many may be chosen (inf: any number)."""

    a: np.ndarray
    b: np.ndarray
    k: np.ndarray
    z: np.ndarray
    cost: np.ndarray
    available: np.ndarray


def _length_effects(design, terms) -> np.ndarray:
    """(C,) m with L ≈ m_a − m_b: weighted least squares on the observed length contrasts, Σ m = 0
    (zero without a length term). A planned judgment's responses are not yet measured; its L is
    predicted. Normal equations by cell sums: (XᵀWX + 11ᵀ) m = XᵀWL, X the ±1 incidence."""
    c = design.n_cand
    if "len" not in terms:
        return np.zeros(c)
    arr = design.arrays
    a, b, w, L = (np.asarray(x) for x in (arr.a, arr.b, arr.stats[:, 0], arr.z[:, 0]))
    gram = np.diag(np.bincount(a, w, c) + np.bincount(b, w, c))
    np.add.at(gram, (a, b), -w)
    np.add.at(gram, (b, a), -w)
    rhs = np.bincount(a, w * L, c) - np.bincount(b, w * L, c)
    return np.linalg.solve(gram + 1.0, rhs)


def candidate_judgments(design, layout: Layout, terms, judge_cost: np.ndarray, pool_cells=None) -> Candidates:
    """Every (ordered pair, judge) — or the cells of a judgment pool, ``pool_cells`` = (a, b, k, count) —
    with covariates predicted for a judgment not yet made (L from :func:`_length_effects`, F from
    the families, user covariates 0)."""
    c, kn = design.n_cand, design.n_judge
    if pool_cells is None:
        a, b, k = np.meshgrid(np.arange(c), np.arange(c), np.arange(kn), indexing="ij")
        keep = (a != b).ravel()
        a, b, k = a.ravel()[keep], b.ravel()[keep], k.ravel()[keep]
        avail = np.full(a.shape, np.inf)
    else:
        a, b, k, avail = (np.asarray(x) for x in pool_cells)
    m = _length_effects(design, terms)
    cf, jf = np.asarray(design.candidate_family), np.asarray(design.judge_family)
    fam = (cf[a] == jf[k]).astype(float) - (cf[b] == jf[k]).astype(float)
    z = np.column_stack([m[a] - m[b], fam, np.zeros((len(a), layout.n_cov))])
    return Candidates(a=a.astype(np.int32), b=b.astype(np.int32), k=k.astype(np.int32), z=z,
                      cost=np.asarray(judge_cost, float)[k], available=avail.astype(float))


def target_rows(kind: str, pairs, values, grads, mask, layout: Layout) -> tuple[Criterion, list]:
    """The criterion of a target (:mod:`oscar_jax.infer.batch_design`) and its rows' keys:
    ("h", i, j), ("log_kappa", k) or ("D", k)."""
    h, gh = np.asarray(values.h), np.asarray(grads.h)
    if kind in ("top1", "ranking", "pairs"):
        if kind == "top1":
            lead = int(np.argmax(np.asarray(values.x)))  # (a JAX array's own argmax would compile a program)
            keys = [("h", lead, j) for j in range(layout.n_cand) if j != lead]
        elif kind == "ranking":
            keys = [("h", i, j) for i in range(layout.n_cand) for j in range(i + 1, layout.n_cand)]
        else:
            keys = [("h", i, j) for i, j in pairs]
        g = np.stack([gh[i, j] for _, i, j in keys])
        est = np.asarray([h[i, j] for _, i, j in keys])
        return Criterion(g, "variance" if kind == "pairs" else "sign", est, np.ones(len(keys))), keys
    keys = [("log_kappa", k) for k in range(layout.n_judge)]
    if "pos" in layout.theta_blocks:
        pos = np.asarray(mask)[layout.theta_blocks["pos"]] > 0
        keys += [("D", k) for k in range(layout.n_judge) if pos[k]]
    g = np.stack([np.asarray(getattr(grads, name))[k] for name, k in keys])
    est = np.asarray([np.asarray(getattr(values, name))[k] for name, k in keys])
    return Criterion(g, "variance", est, np.ones(len(keys))), keys


def allocate(theta, mask, hess, cov, layout: Layout, candidates: Candidates, target: Target, pair_index, budget: float,
             seed: int, explore: float = None) -> tuple[Allocation, Criterion, list, tuple]:
    """Array-level plan: (allocation, criterion, row keys, (target values, gradients)) at θ̂.

    ``pair_index``: ((i, j), …) candidate indices of a ``pairs`` target. This is what
    :func:`plan` runs after it has fitted and resolved names; simulation and replay
    studies call it on their own fits.
    """
    values, grads = plan_targets_jit(np.asarray(theta, float), layout)
    factors = np.asarray(information_factors_jit(np.asarray(theta, float), candidates.a, candidates.b, candidates.k,
                                                 np.asarray(candidates.z, float), layout=layout))
    crit, keys = target_rows(target.kind, pair_index, values, grads, mask, layout)
    rng = np.random.default_rng([int(seed), 40])
    alloc = greedy_allocation(factors, candidates.cost, candidates.available, hess, cov, mask, crit, budget, rng=rng,
                              explore=EXPLORE if explore is None else explore)
    return alloc, crit, keys, (values, grads)


def place_judgments(order, cand_of_row, row_prompt, usage: dict, rng: np.random.Generator) -> np.ndarray:
    """Rows of a pool to take, one per planned judgment, in plan order.

    ``order``: candidate index of each planned judgment; ``cand_of_row``/``row_prompt``: the
    candidate and prompt of each pool row. Each judgment takes a row of its candidate on
    the least used prompt (records already there plus the batch so far; ties at random),
    so the batch spreads over prompts and stays close to the new-cluster approximation.
    """
    rows_of: dict[int, list[int]] = {}
    for r in rng.permutation(len(cand_of_row)):
        rows_of.setdefault(int(cand_of_row[r]), []).append(int(r))
    taken = []
    for c in order:
        rows = rows_of[int(c)]
        best = min(range(len(rows)), key=lambda i: usage.get(row_prompt[rows[i]], 0))
        r = rows.pop(best)
        usage[row_prompt[r]] = usage.get(row_prompt[r], 0) + 1
        taken.append(r)
    return np.asarray(taken, dtype=np.int64)


def _pool_cells(pool: Pool, design):
    """(a, b, k, count) per distinct judgment of a judgment pool, and each pool row's cell."""
    cand, judges = list(design.candidates), list(design.judges)
    ci, ji = {n: i for i, n in enumerate(cand)}, {n: i for i, n in enumerate(judges)}
    frame = pool.judgments
    for col, table, kind in (("candidate_a", ci, "candidate"), ("candidate_b", ci, "candidate"), ("judge", ji, "judge")):
        unknown = ~frame[col].isin(list(table)).to_numpy()
        if unknown.any():
            row = int(np.flatnonzero(unknown)[0])
            raise OscarInputError(f"prompt pool {pool.source}: column {col!r} row {row + 1}: {kind} "
                                  f"{frame[col].iloc[row]!r} is not in the data; a plan can only use the data's "
                                  f"{kind}s (its parameters are fitted); remove such rows")
    key = np.stack([frame["candidate_a"].map(ci), frame["candidate_b"].map(ci), frame["judge"].map(ji)], axis=1)
    cells, row_cell, counts = np.unique(key, axis=0, return_inverse=True, return_counts=True)
    return (cells[:, 0], cells[:, 1], cells[:, 2], counts), row_cell.ravel()


def _new_prompt_ids(n: int, taken) -> list[str]:
    taken = set(map(str, taken))
    prefix = "new-"
    while any(p.startswith(prefix) for p in taken):
        prefix = "plan-" + prefix
    return [f"{prefix}{i + 1}" for i in range(n)]


def _fitted(data, seed: int, ci_prob: float) -> FitResult:
    """The fit a plan starts from: ``data`` itself when it is a FitResult (the one call into the estimators)."""
    if isinstance(data, FitResult):
        return data
    return fit(data, seed=seed, ci_prob=ci_prob, warn=False)


def plan(data, model: str | ModelSpec | None = None, *, budget, target="top1", costs=None, prompts=None, seed: int = 0,
         explore: float = EXPLORE, ci_prob: float = 0.95, draws: int = 20_000, **setup) -> PlanResult:
    """Choose the next batch of judgments to buy.

    Parameters
    ----------
    data
        A :class:`~oscar_jax.results.fit.FitResult` to plan from, or anything
        :func:`~oscar_jax.fit` takes (a path, frame, records, Design or prepared Problem).
    model
        The model to fit and plan with (default ``"oscar"``, or a Problem's own; any
        fractional-tie model); a FitResult's own model when ``data`` is one.
    budget
        Total cost of the batch: a number of judgments when every judge costs 1.
    target
        ``"top1"``, ``"ranking"``, ``"judges"`` or ``"pairs:A,B[;C,D…]"`` (see the module docstring).
    costs
        Cost per judgment by judge, ``{"name": cost}`` or ``"NAME=COST,…"``; unnamed judges cost 1.
    prompts
        Where new judgments go: None (new prompt ids ``new-1``, … for you to fill), a pool of
        prompt ids (file with a ``prompt``/``question_id`` column, or a list), or a judgment
        pool (``prompt, candidate_a, candidate_b, judge``: only those judgments, each at most as
        often as listed); see :mod:`oscar_jax.io.pool`.
    seed
        Seed of the fit's second start, of the random share, tie-breaking and prompt
        placement, and of the Monte Carlo estimate of P(correct top-1): the plan is
        deterministic given it.
    explore
        Share of the budget spent at random, uniformly over pairs, orders and judges per unit
        cost (default :data:`EXPLORE` = 0.2), so that no judge's or candidate's parameters are
        starved — the greedy takes these judgments into account. 0: purely greedy.
    draws
        Monte Carlo draws for P(correct top-1).
    **setup
        The set-up keywords of :func:`~oscar_jax.prepare` (``ridge``, ``reference_judge``,
        ``family_map``, ``covariates`` and the reading keywords), as for :func:`~oscar_jax.fit`;
        not with a FitResult, which is set up already.

    Returns
    -------
    PlanResult
        ``batch`` (a frame in the package's input schema, outcome blank, in plan order:
        the most valuable judgments first), ``summary`` and ``to_dict()``; ``write(path)``.

    Examples
    --------
    >>> from oscar_jax import plan, simulate_design
    >>> p = plan(simulate_design(seed=0, n_prompts=200), budget=100, target="top1")
    >>> p.batch.columns.tolist()
    ['prompt', 'candidate_a', 'candidate_b', 'judge', 'outcome']
    """
    budget = check_budget(budget)
    explore = check_explore(explore)
    target = parse_target(target)
    costs = parse_costs(costs)
    seed = check_seed("seed", seed)
    draws = check_positive_int("draws", draws, minimum=100)
    from_fit = isinstance(data, FitResult)
    if from_fit:
        spec = check_model(data.spec if model is None else model)
        if spec.structure() != data.spec.structure():
            raise OscarInputError(f"model {model!r}: a plan from a fit uses the fit's model ({data.spec.name}); "
                                  "leave model out or fit the data with it first")
        if setup:
            raise OscarInputError(f"{sorted(setup)} are fixed when the fit is made; a plan from a fit takes none")
    else:
        check_model(data.spec if isinstance(data, Problem) and model is None else model)  # before the data are read
    pool = None if prompts is None else read_pool(prompts)
    problem = None if from_fit else prepare(data, model, **setup)  # the one set-up path (fit reuses it)
    design = data.design if from_fit else problem.design
    names, judge_names = list(design.candidates), list(design.judges)
    pair_index = tuple((names.index(resolve_name("candidate", a, names)), names.index(resolve_name("candidate", b, names)))
                       for a, b in target.pairs)
    if any(i == j for i, j in pair_index):
        raise OscarInputError(f"target {target}: a pair needs two different candidates")
    target = target._replace(pairs=tuple((names[i], names[j]) for i, j in pair_index))
    judge_cost = np.ones(design.n_judge)
    for name, cost in costs.items():
        judge_cost[judge_names.index(resolve_name("judge", name, judge_names))] = cost
    cells, row_cell = (None, None) if pool is None or pool.judgments is None else _pool_cells(pool, design)
    result = _fitted(data if from_fit else problem, seed, ci_prob)
    layout = result.layout
    if result.cov is None:
        raise OscarInputError("the fit failed the B.3 curvature check, so it has no covariance to plan from; "
                              "add a small random design first (every pair, several judges, both orders)")
    cand = candidate_judgments(design, layout, result.effective_spec.terms, judge_cost, cells)
    if budget < cand.cost.min():
        raise OscarInputError(f"budget {budget:g} is below the cheapest judgment's cost {cand.cost.min():g}; raise --budget")
    core = result.core
    alloc, crit, keys, (values, grads) = allocate(core.theta, core.mask, core.hess, result.cov.cluster, layout, cand,
                                                  target, pair_index, budget, seed, explore)
    rng = np.random.default_rng([seed, 41])
    order = alloc.sequence
    usage = pd.Series(np.asarray(design.prompts, dtype=object)[design.record_cluster]).value_counts().to_dict()
    if pool is None:
        prompt = _new_prompt_ids(len(order), design.prompts)
    elif pool.judgments is None:
        prompt = spread_over_prompts(order, pool.prompts, usage, rng)
    else:
        rows = place_judgments(order, row_cell, pool.judgments["prompt"].to_numpy(), usage, rng)
        prompt = list(pool.judgments["prompt"].to_numpy()[rows])
    batch = pd.DataFrame({"prompt": prompt, "candidate_a": [names[i] for i in cand.a[order]],
                          "candidate_b": [names[i] for i in cand.b[order]],
                          "judge": [design.judges[i] for i in cand.k[order]], "outcome": ""})
    summary = plan_summary(result, target, cand, alloc, crit, keys, values, grads, budget,
                           rng=np.random.default_rng([seed, 42]), draws=draws, pool=pool)
    return PlanResult(batch=batch, summary=summary, fit=result)


def spread_over_prompts(order, prompts, usage: dict, rng: np.random.Generator) -> list:
    """A prompt for each planned judgment: the least used (records already there plus the
    batch so far; ties at random), never the same judgment twice on one prompt while
    another prompt is free of it."""
    prompts = list(prompts)
    heap = [(usage.get(p, 0), int(r), i) for i, (p, r) in enumerate(zip(prompts, rng.permutation(len(prompts))))]
    heapq.heapify(heap)
    seen: set = set()
    out = []
    for c in (int(x) for x in order):
        held = []
        while heap and (c, heap[0][2]) in seen:
            held.append(heapq.heappop(heap))
        count, r, i = heapq.heappop(heap) if heap else held.pop(0)
        seen.add((c, i))
        out.append(prompts[i])
        for item in held + [(count + 1, r, i)]:
            heapq.heappush(heap, item)
    return out
