"""Exact-swap position calibration: conditional logistic regression with a Jeffreys penalty.

Section 6.2 and Appendix D.2 of the paper. An *exact-swap group* m is a set of n_m
judgments by one judge of the same two responses to the same prompt, seen in both
display orders. Choose one of the two responses; Z_mt = 1 if judgment t selected it and
o_mt = +1 / −1 if it was shown first / second. The working model is

    logit P(Z_mt = 1) = α_m + β_k o_mt,

with a free group intercept α_m (the judge's baseline preference for the chosen
response). Conditioning on T_m = Σ_t Z_mt removes α_m (D.2):

    P_β(Z_m = z | T_m, o_m) = exp(β S_m(z)) / Σ_{y ∈ {0,1}^n, Σy = T_m} exp(β S_m(y)),
    S_m(z) = Σ_t o_mt z_t.

The normalizer is the elementary symmetric polynomial e_T of the values exp(β o_t),
computed by the recursion e_j ← e_j + w_t e_{j−1} in log space (:func:`log_esp`), not by
enumerating the C(n, T) configurations. Groups with T = 0 or T = n (the same response
always selected) — or whose configurations all have the same S — carry no information
and contribute exactly 0. Per judge the estimate maximizes

    ℓ_k(β) + ½ log I_k(β),   I_k(β) = −ℓ_k''(β) = Σ_m Var_β(S_m | T_m, o_m)

(the Jeffreys / Firth penalty), which is finite even under conditional separation
(a judge that always selects the same slot): ℓ_k ≤ 0 and I_k → 0 as |β| → ∞.

The core (:mod:`oscar_jax.infer.swap_core`: ``judge_loglik``, ``judge_information``,
``swap_fit_core``) is pure and jit-able; it takes padded group arrays (``SwapArrays``)
and vmaps over simulated datasets of the same shape. :func:`find_swap_groups` finds the groups in a
canonical frame, :func:`calibrate_positions` is the user-facing estimator and
:func:`simulate_swaps` / :func:`simulate_swap_frame` generate swap data with known β_k.

Responses are identified by **candidate** unless response-id columns are given: the
Xu et al. (2026) releases carry no response texts, so two judgments of the same
candidate pair on the same prompt by the same judge are taken to concern the same two
responses. (The Xu MT-Bench, UltraFeedback and Chatbot Arena releases contain no
exact-swap groups at all; the paper's In-House analysis matched response texts, so
group counts from candidate identity can differ from its 7,114 groups.)

Example
-------
>>> from oscar_jax.swaps import simulate_swaps, calibrate_positions
>>> table = simulate_swaps(0, beta=[-1.0, 0.5, 2.0], n_groups=300, group_size=4)
>>> cal = calibrate_positions(table)  # doctest: +SKIP
>>> cal.table()[["judge", "beta", "se", "D"]]  # doctest: +SKIP
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache, partial

import numpy as np
import pandas as pd

from .model.links import net_preference, sigmoid
from .infer.swap_core import DEFAULT_BOUND, DEFAULT_GRID, SwapArrays, SwapFitCore, swap_fit_core
from .runtime.lazy_jax import jax, jnp
from .runtime.validate import OscarInputError, check_positive_int

__all__ = [
    "SWAP_COLUMNS",
    "SwapCalibration",
    "calibrate_positions",
    "find_swap_groups",
    "pack_groups",
    "simulate_swap_arrays",
    "simulate_swap_frame",
    "simulate_swaps",
    "swap_average_frame",
]

SWAP_COLUMNS = ("judge", "group", "z", "o")


@lru_cache(maxsize=32)
def _fit_jit(n_judge: int, bound: float, grid: int, max_iter: int, xtol: float):
    return jax.jit(partial(swap_fit_core, n_judge=n_judge, bound=bound, grid=grid, max_iter=max_iter, xtol=xtol))


# --------------------------------------------------------------------------------------
# Tables of groups
# --------------------------------------------------------------------------------------

def _check_table(table: pd.DataFrame):
    if not isinstance(table, pd.DataFrame):
        raise OscarInputError("swap groups must be a DataFrame with columns judge, group, z, o")
    missing = [c for c in SWAP_COLUMNS if c not in table.columns]
    if missing:
        raise OscarInputError(f"swap-group table lacks column(s) {missing}; it needs {list(SWAP_COLUMNS)}")
    z = table["z"].to_numpy(dtype=float)
    o = table["o"].to_numpy(dtype=float)
    bad = ~np.isin(z, (0.0, 1.0))
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise OscarInputError(f"column 'z' record {row}: value {z[row]!r}; z must be 0 or 1 (drop ties first)")
    if not np.all(np.isfinite(o)):
        raise OscarInputError("column 'o' has non-finite values; o is +1 (chosen response first) or −1")
    judges_per_group = table.groupby("group", sort=False)["judge"].nunique()
    if (judges_per_group > 1).any():
        g = judges_per_group.index[int(np.flatnonzero((judges_per_group > 1).to_numpy())[0])]
        raise OscarInputError(f"swap group {g!r} mixes judges; a group belongs to one judge")


def pack_groups(table: pd.DataFrame, judges=None, *, bucket: bool = False) -> tuple[SwapArrays, tuple[str, ...], tuple]:
    """Padded arrays from a table with columns judge, group, z, o (one row per judgment).

    Returns (SwapArrays, judge names (K,), group ids (M,)). ``judges`` fixes the judge
    order (e.g. a design's judges, so the result lines up with its β_pos); judges in
    ``judges`` without groups get no information (β = NaN). ``bucket`` pads the number
    of groups to a power of two (≥ 64) with empty groups (no records, no information), so
    tables of similar size share one compiled program.
    """
    _check_table(table)
    if judges is None:
        judges = tuple(sorted(pd.unique(table["judge"].astype(str))))
    judges = tuple(str(j) for j in judges)
    index = {j: i for i, j in enumerate(judges)}
    unknown = sorted(set(table["judge"].astype(str)) - set(index))
    if unknown:
        raise OscarInputError(f"swap groups name judge(s) {unknown[:3]} that are not among the given judges")
    codes, ids = pd.factorize(table["group"], sort=False)
    m = len(ids)
    if m == 0:
        raise OscarInputError("no exact-swap groups (need the same judge, prompt and responses in both orders)")
    order = np.argsort(codes, kind="stable")
    codes_s = codes[order]
    pos = np.arange(len(order)) - np.searchsorted(codes_s, codes_s, side="left")
    n_max = int(pos.max()) + 1
    rows = max(64, 1 << (m - 1).bit_length()) if bucket else m
    z = np.zeros((rows, n_max))
    o = np.zeros((rows, n_max))
    mask = np.zeros((rows, n_max), dtype=bool)
    z[codes_s, pos] = table["z"].to_numpy(dtype=float)[order]
    o[codes_s, pos] = table["o"].to_numpy(dtype=float)[order]
    mask[codes_s, pos] = True
    judge = np.zeros(rows, dtype=np.int32)
    judge[codes_s] = [index[str(j)] for j in table["judge"].to_numpy()[order]]
    arrays = SwapArrays(jnp.asarray(z), jnp.asarray(o), jnp.asarray(mask), jnp.asarray(judge))
    return arrays, judges, tuple(ids)


def find_swap_groups(frame: pd.DataFrame, *, responses: tuple[str, str] | None = None) -> pd.DataFrame:
    """Exact-swap groups of a canonical frame (:func:`oscar_jax.load_judgments`).

    A group is one judge, one prompt and one unordered pair of responses with **both**
    display orders present. Responses are the candidates unless ``responses`` names two
    columns of ``frame`` holding response ids of slots A and B (the Xu releases have no
    texts, so there the candidate stands for its response). Ties (Y = ½) carry no binary
    choice and are dropped; a group that loses one of its orders by this is not a group.

    Returns one row per judgment in a group: judge, group (int id), z (1 if the chosen
    response — the one whose id sorts first — was selected), o (+1 if it was shown
    first), prompt, chosen, other (response ids), chosen_candidate, other_candidate,
    record (row of ``frame``). ``attrs`` holds the counts
    ``ties_dropped``, ``n_groups``, ``n_records`` and ``n_prompts``.
    """
    for col in ("prompt", "candidate_a", "candidate_b", "judge", "outcome"):
        if col not in frame.columns:
            raise OscarInputError(f"find_swap_groups() needs a canonical frame; column {col!r} is missing")
    if "weight" in frame.columns and not np.allclose(frame["weight"].to_numpy(dtype=float), 1.0):
        raise OscarInputError("exact-swap calibration counts judgments; the frame has record weights ≠ 1")
    if responses is None:
        ra, rb = frame["candidate_a"].astype(str), frame["candidate_b"].astype(str)
    else:
        for col in responses:
            if col not in frame.columns:
                raise OscarInputError(f"response-id column {col!r} is not in the frame")
        ra, rb = frame[responses[0]].astype(str), frame[responses[1]].astype(str)
    y = frame["outcome"].to_numpy(dtype=float)
    binary = np.isin(y, (0.0, 1.0))
    a_first = (ra <= rb).to_numpy()
    chosen = np.where(a_first, ra, rb)
    other = np.where(a_first, rb, ra)
    o = np.where(a_first, 1.0, -1.0)
    z = np.where(o > 0, y, 1.0 - y)
    cand_a, cand_b = frame["candidate_a"].to_numpy(), frame["candidate_b"].to_numpy()
    work = pd.DataFrame({"judge": frame["judge"].astype(str).to_numpy(), "prompt": frame["prompt"].to_numpy(),
                         "chosen": chosen, "other": other, "z": z, "o": o, "record": np.arange(len(frame)),
                         "chosen_candidate": np.where(a_first, cand_a, cand_b),
                         "other_candidate": np.where(a_first, cand_b, cand_a)})
    work = work[binary & (chosen != other)]
    keys = ["judge", "prompt", "chosen", "other"]
    orders = work.groupby(keys, sort=False)["o"].agg(["min", "max"])
    both = orders[(orders["min"] < 0) & (orders["max"] > 0)]
    out = work.merge(both.reset_index()[keys], on=keys, how="inner")
    out["group"] = pd.factorize(pd.MultiIndex.from_frame(out[keys]))[0]
    out = out[["judge", "group", "z", "o", "prompt", "chosen", "other", "chosen_candidate", "other_candidate",
               "record"]].sort_values(
        ["group", "record"], kind="stable").reset_index(drop=True)
    out.attrs.update(ties_dropped=int((~binary).sum()), n_groups=int(out["group"].nunique()),
                     n_records=int(len(out)), n_prompts=int(out["prompt"].nunique()))
    return out


# --------------------------------------------------------------------------------------
# Estimator
# --------------------------------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class SwapCalibration:
    """Per-judge exact-swap position effects (Appendix D.2).

    ``beta`` (K,) maximizes ℓ_k + ½ log I_k; ``se`` = I_k(β̂)^{-1/2}; ``D`` = tanh(β/2).
    ``separated`` marks judges whose unpenalized estimate would be infinite.
    """

    judges: tuple[str, ...]
    core: SwapFitCore

    @property
    def beta(self) -> np.ndarray:
        return np.asarray(self.core.beta)

    @property
    def se(self) -> np.ndarray:
        info = np.asarray(self.core.info)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(info > 0, 1.0 / np.sqrt(info), np.nan)

    @property
    def D(self) -> np.ndarray:
        return net_preference(self.beta)

    def beta_for(self, judges, fill: float = 0.0) -> np.ndarray:
        """β̂ in the order of ``judges`` (e.g. a design's), ``fill`` where a judge has none."""
        idx = {j: i for i, j in enumerate(self.judges)}
        out = np.full(len(judges), fill, dtype=float)
        for i, j in enumerate(judges):
            if j in idx and np.isfinite(self.beta[idx[j]]):
                out[i] = self.beta[idx[j]]
        return out

    def table(self) -> pd.DataFrame:
        c = self.core
        return pd.DataFrame({
            "judge": list(self.judges), "groups": np.asarray(c.n_groups).astype(int),
            "informative": np.asarray(c.n_informative).astype(int), "beta": self.beta, "se": self.se,
            "D": self.D, "separated": np.asarray(c.separated), "converged": np.asarray(c.converged),
            "at_bound": np.asarray(c.at_bound),
        })


def calibrate_positions(groups, *, judges=None, bound: float = DEFAULT_BOUND, grid: int = DEFAULT_GRID,
                        max_iter: int = 64, xtol: float = 1e-12) -> SwapCalibration:
    """Per-judge position effects from exact-swap groups (conditional logistic + Jeffreys).

    Parameters
    ----------
    groups
        A table with columns judge, group, z, o (:func:`find_swap_groups`,
        :func:`simulate_swaps`) or ``(SwapArrays, judge names)``.
    judges
        Judge order of the result (default: sorted names in the table).
    bound, grid
        The search interval [−bound, bound] and the grid that brackets the maximum.
    max_iter, xtol
        Bisection steps and the final bracket width.

    Returns
    -------
    SwapCalibration
    """
    grid = check_positive_int("grid", grid, minimum=3)
    max_iter = check_positive_int("max_iter", max_iter)
    if not float(bound) > 0:
        raise OscarInputError(f"bound must be > 0, got {bound}")
    if isinstance(groups, tuple) and len(groups) == 2 and isinstance(groups[0], SwapArrays):
        arrays, names = groups[0], tuple(groups[1])
    else:
        arrays, names, _ = pack_groups(groups, judges, bucket=True)
    core = _fit_jit(len(names), float(bound), int(grid), int(max_iter), float(xtol))(arrays)
    return SwapCalibration(judges=names, core=jax.tree_util.tree_map(np.asarray, core))


# --------------------------------------------------------------------------------------
# Simulation and swap-and-average
# --------------------------------------------------------------------------------------

def simulate_swap_arrays(key, beta, *, n_groups: int, group_size: int, alpha_sd: float = 1.0) -> SwapArrays:
    """Swap groups with known β_k under the working model (pure; vmappable over keys).

    Each of the K judges gets ``n_groups`` groups of ``group_size`` judgments; the first
    half of a group shows the chosen response first (o = +1), the rest second (o = −1);
    α_m ~ N(0, alpha_sd²) and Z ~ Bernoulli(σ(α_m + β_k o)).
    """
    beta = jnp.asarray(beta, dtype=jnp.float64)
    k = beta.shape[0]
    m = k * n_groups
    judge = jnp.repeat(jnp.arange(k, dtype=jnp.int32), n_groups)
    o_row = jnp.where(jnp.arange(group_size) < (group_size + 1) // 2, 1.0, -1.0)
    o = jnp.broadcast_to(o_row, (m, group_size))
    k_a, k_u = jax.random.split(key)
    alpha = alpha_sd * jax.random.normal(k_a, (m,))
    p = jax.nn.sigmoid(alpha[:, None] + beta[judge][:, None] * o)
    z = (jax.random.uniform(k_u, (m, group_size)) < p).astype(jnp.float64)
    return SwapArrays(z, o, jnp.ones((m, group_size), dtype=bool), judge)


def simulate_swaps(seed: int, beta, *, n_groups: int = 200, group_size: int = 4, alpha_sd: float = 1.0,
                   judges=None) -> pd.DataFrame:
    """:func:`simulate_swap_arrays` as a table with columns judge, group, z, o."""
    n_groups = check_positive_int("n_groups", n_groups)
    group_size = check_positive_int("group_size", group_size, minimum=2)
    beta = np.asarray(beta, dtype=float)
    names = list(judges) if judges is not None else [f"judge{i}" for i in range(len(beta))]
    if len(names) != len(beta):
        raise OscarInputError(f"{len(names)} judge names for {len(beta)} position effects")
    arr = simulate_swap_arrays(jax.random.PRNGKey(int(seed)), beta, n_groups=n_groups, group_size=group_size,
                               alpha_sd=alpha_sd)
    m = arr.z.shape[0]
    judge = np.repeat(np.asarray(arr.judge), group_size)
    return pd.DataFrame({"judge": np.asarray(names, dtype=object)[judge],
                         "group": np.repeat(np.arange(m), group_size),
                         "z": np.asarray(arr.z).ravel(), "o": np.asarray(arr.o).ravel()})


def simulate_swap_frame(seed: int, beta, *, gamma=None, n_cand: int = 6, repeats: int = 1,
                        judges=None, candidates=None) -> pd.DataFrame:
    """A canonical frame in which every judge sees every candidate pair in both orders.

    One prompt per unordered candidate pair (as in the paper's In-House data); each judge
    judges it ``repeats`` times in each order with η = γ_k (s_a − s_b) + β_k, scores s
    equally spaced on [−1, 1] (best = last candidate). Verdicts are binary.
    """
    n_cand = check_positive_int("n_cand", n_cand, minimum=2)
    repeats = check_positive_int("repeats", repeats)
    beta = np.asarray(beta, dtype=float)
    k = len(beta)
    gamma = np.ones(k) if gamma is None else np.asarray(gamma, dtype=float)
    judges = list(judges) if judges is not None else [f"judge{i}" for i in range(k)]
    cands = list(candidates) if candidates is not None else [f"model{i}" for i in range(n_cand)]
    s = np.linspace(-1.0, 1.0, n_cand)
    rows = []
    for i in range(n_cand):
        for j in range(i + 1, n_cand):
            for kk in range(k):
                for _ in range(repeats):
                    rows += [(f"q{i}-{j}", i, j, kk), (f"q{i}-{j}", j, i, kk)]
    prompt, a, b, kj = (np.array(x) for x in zip(*rows))
    eta = gamma[kj] * (s[a] - s[b]) + beta[kj]
    u = np.asarray(jax.random.uniform(jax.random.PRNGKey(int(seed)), (len(rows),)))
    y = (u < sigmoid(eta)).astype(float)
    return pd.DataFrame({"prompt": prompt, "candidate_a": np.asarray(cands, dtype=object)[a],
                         "candidate_b": np.asarray(cands, dtype=object)[b],
                         "judge": np.asarray(judges, dtype=object)[kj], "outcome": y, "tie_kind": "",
                         "weight": 1.0})


def swap_average_frame(frame: pd.DataFrame, groups: pd.DataFrame) -> pd.DataFrame:
    """The SwapAvg input (Appendix C.3, D.4): each exact-swap group → one averaged record.

    A group's records are replaced by one record (chosen response's candidate in slot A,
    the other in slot B) whose outcome is the order-averaged preference
    ½{mean Z | o = +1 + mean Z | o = −1} and whose weight is the group's size; records
    outside groups (including ties dropped by :func:`find_swap_groups`) are kept as they
    are. Fitting J to the result is swap-and-average.
    """
    need = ("group", "z", "o", "record", "chosen_candidate", "other_candidate")
    if any(c not in groups.columns for c in need):
        raise OscarInputError("swap_average_frame() needs the table of find_swap_groups()")
    g = groups.assign(first=groups["o"] > 0)
    means = g.groupby(["group", "first"])["z"].mean().unstack("first")
    avg = 0.5 * (means[True] + means[False])
    head = g.drop_duplicates("group").set_index("group")
    new = frame.iloc[head["record"].to_numpy()].reset_index(drop=True).copy()
    new["candidate_a"] = head["chosen_candidate"].to_numpy()
    new["candidate_b"] = head["other_candidate"].to_numpy()
    new["outcome"] = avg.loc[head.index].to_numpy()
    new["tie_kind"] = ""
    new["weight"] = g.groupby("group").size().loc[head.index].to_numpy().astype(float)
    keep = np.ones(len(frame), dtype=bool)
    keep[groups["record"].to_numpy()] = False
    return pd.concat([frame.loc[keep], new], ignore_index=True)
