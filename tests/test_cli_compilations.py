"""The CLI's reporting path stays a handful of compiled programs (counted, never timed).

Each eager ``jax.numpy`` call on a new shape is its own XLA compilation. Before issue 16
``oscar fit`` compiled 91 programs per invocation (the leaderboard's delta method alone
~40), which was most of its wall clock. These tests run whole commands in fresh
processes (``benchmarks/cli_probe.py``) and bound the number of compilations, so the
reporting path cannot drift back into dozens of eager programs. With the persistent
caches on, a second process must not trace any model function again.

The per-command processes run with oscar_jax's caches off (every model function is traced
and lowered, nothing is loaded from ``exported/``) but share a plain JAX compilation cache
for this module: a compilation served from it is still one ``backend_compile`` event with
the same program name, so the counts are those of a cold process, while the three ``fit``
commands, which compile the same programs, pay XLA's compiler once instead of three times.
The processes' output is discarded, so XLA's backend optimisations are off in them
(``FAST_COMPILE``): they change neither which programs are compiled nor how many.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import ARENA_EXAMPLE, FAST_COMPILE

ROOT = Path(__file__).resolve().parent.parent
DATA = ARENA_EXAMPLE
PROBE = ROOT / "benchmarks" / "cli_probe.py"

# One program per result: the fit core (its starts drawn inside it), covariances, board
# scores + SEs, target SEs, targets. The bootstrap adds its weights, key, batched fit, draw
# targets and the cluster scores at θ̂ that give every replicate its one-step start
# (oscar_jax.infer.starts.one_step_starts); compare one batched fit and one held-out loss per
# model. On this small file `fit` also fits the smaller model for its small-data advice
# (oscar_jax.fit.small_data_advice), so each of its programs is compiled once per model.
BOUNDS = {
    "fit json": (["fit", str(DATA), "--format", "json"], 10),
    "fit table": (["fit", str(DATA), "--format", "table"], 10),
    "fit elo anchored": (["fit", str(DATA), "--scale", "elo", "--anchor", "gpt-4", "--format", "json"], 10),
    # + the draw targets (an unanchored board reads them; oscar_jax.results.boards)
    "bootstrap": (["bootstrap", str(DATA), "--replicates", "20", "--format", "json"], 9),
    "compare": (["compare", str(DATA), "--models", "j,j+p", "--folds", "3", "--format", "json"], 7),
    # the fit's core and covariances, target SEs, then the plan's target gradients and the
    # information factors of every candidate judgment (one vmapped program)
    "plan": (["plan", str(DATA), "--model", "j+p", "--budget", "50", "--format", "json"], 6),
}


def _probe(args, cache, tmp_path, xla_cache=None) -> dict:
    env = dict(os.environ, OSCAR_JAX_CACHE_DIR=str(cache), PYTHONPATH=str(ROOT))
    env["XLA_FLAGS"] = (env.get("XLA_FLAGS", "") + " " + FAST_COMPILE).strip()
    env.pop("JAX_COMPILATION_CACHE_DIR", None)
    if xla_cache is not None:
        # JAX's own cache only: oscar_jax.runtime.cache then leaves JAX's settings alone and
        # its exported-program cache stays off (tests/test_program_cache.py checks both).
        env.update(JAX_COMPILATION_CACHE_DIR=str(xla_cache), JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="0")
    stats = tmp_path / "stats.json"
    proc = subprocess.run([sys.executable, str(PROBE), str(stats)] + args, env=env, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(stats.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def xla_cache(tmp_path_factory):
    return tmp_path_factory.mktemp("xla_cache")


@pytest.mark.parametrize("name", list(BOUNDS))
def test_each_command_compiles_a_handful_of_programs(name, tmp_path, xla_cache):
    args, bound = BOUNDS[name]
    stats = _probe(args, "off", tmp_path, xla_cache)
    assert "call" not in stats["traced"], stats["traced"]  # nothing came from oscar_jax's program cache
    assert 1 <= stats["compilations"] <= bound, sorted(stats["compiled"].items())
    assert len(stats["compiled"]) <= 9, stats["compiled"]  # a handful of distinct programs
    # No eager primitive programs (jit(add), jit(stage), …): every compiled program is one
    # of the package's own functions.
    eager = {n for n in stats["compiled"] if n in {"jit(convert_element_type)", "jit(stage)", "jit(add)",
                                                   "jit(multiply)", "jit(broadcast_in_dim)", "jit(_normal)",
                                                   "jit(_argmax)"}}
    assert not eager, stats["compiled"]


def test_second_process_traces_no_model_function(tmp_path):
    cache = tmp_path / "cache"
    args = BOUNDS["fit json"][0]
    first = _probe(args, cache, tmp_path)
    second = _probe(args, cache, tmp_path)
    assert any(n != "call" for n in first["traced"])  # the first process traced the model functions
    # The second loads their executables (oscar_jax.runtime.executables): it traces and
    # compiles nothing at all.
    assert not second["traced"] and second["compilations"] == 0, second
    assert (cache / "exported").is_dir() and any((cache / "exported").iterdir())
    assert any((cache / "compiled").iterdir())


def test_second_sweep_process_traces_no_program_and_imports_no_special_functions(tmp_path):
    """A warm sweep loads its simulator and evaluators without working out their argument
    shapes (tracing the simulator, 0.15 s a program, imports ``jax.scipy.stats``) and reads its
    t quantiles from the cache folder (``scipy.special``: 0.17 CPU-s)."""
    cache = tmp_path / "cache"
    args = ["simulate", "--n", "200", "--reps", "3", "--methods", "j", "--format", "json"]
    first = _probe(args, cache, tmp_path)
    second = _probe(args, cache, tmp_path)
    assert "jax.scipy.stats" in first["imported"] and "scipy.special" in first["imported"]  # (control)
    assert not {n for n in second["traced"] if "sweep" in n or "simulate" in n}, second["traced"]
    assert not {n for n in second["compiled"] if "sweep" in n or "keys" in n}, second["compiled"]
    assert "jax.scipy.stats" not in second["imported"] and "scipy.special" not in second["imported"], second
