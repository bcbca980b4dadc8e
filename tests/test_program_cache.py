"""Programs stored by oscar_jax.runtime.jit give bit-identical results, and stale files are harmless."""

from __future__ import annotations

import os
import subprocess
from concurrent.futures import Future
import sys
from pathlib import Path

import jax
import numpy as np
import pytest

import oscar_jax as oj
from oscar_jax.runtime import cache, jit
from oscar_jax.runtime.batching import compile_ahead
from oscar_jax.report.leaderboard import arena_leaderboard
from oscar_jax.infer.starts import start_points
from oscar_jax.infer.weights import replicate_key

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def program_folder(tmp_path, monkeypatch):
    # Point only the program cache at a temporary folder; JAX's own compile cache stays off.
    monkeypatch.setitem(cache._state, "dir", tmp_path)
    jit.forget()
    yield tmp_path / "exported"
    jit.forget()


# The seeded draws and the draw-based leaderboard are stored programs too.
_DRAW_PROGRAMS = {"_bootstrap_weights", "_permutation", "_replicate_key", "_draw_starts", "_targets_of_draws"}


def _everything(result):
    board = arena_leaderboard(result, scale="elo", anchor="cand1")
    draws = result.theta + 0.01 * np.arange(4.0)[:, None]
    by_draws = arena_leaderboard(result, ci="bootstrap", draws=draws, anchor="cand1")
    return [result.theta, result.covariance("sandwich"), result.covariance("model"), result.scores,
            result.leaderboard().select_dtypes("number").to_numpy(),
            result.judges().select_dtypes("number").to_numpy(dtype=float), board[["score", "score_lo", "score_hi"]].to_numpy(),
            by_draws[["score", "score_lo", "score_hi"]].to_numpy(), oj.bootstrap_weights(7, result.design.n_clusters, 5),
            oj.prompt_folds(result.design, 3, seed=2), replicate_key(4, 2),
            start_points(result.layout, 3, jax.random.PRNGKey(5))]


def _same_bits(a, b):
    for x, y in zip(a, b):
        x, y = np.asarray(x), np.asarray(y)
        assert x.shape == y.shape
        assert np.array_equal(x.astype(float), y.astype(float), equal_nan=True)


def test_stored_programs_are_bit_identical_to_plain_jit(program_folder, monkeypatch):
    design = oj.simulate_design(seed=3, n_prompts=150)
    monkeypatch.setitem(cache._state, "dir", None)
    plain = _everything(oj.fit(design, "oscar", seed=1))          # plain jax.jit
    monkeypatch.setitem(cache._state, "dir", program_folder.parent)
    exported = _everything(oj.fit(design, "oscar", seed=1))       # traced, exported, stored
    files = sorted(program_folder.iterdir())
    assert any(f.name.startswith("fit_core_seeded-") for f in files) and len(files) >= 5
    jit.forget()                                          # as a new process would
    traced = []
    jax.monitoring.register_event_duration_secs_listener(
        lambda event, d, **kw: traced.append(kw.get("fun_name")) if event.endswith("jaxpr_trace_duration") else None)
    loaded = _everything(oj.fit(design, "oscar", seed=1))
    assert not ({"fit_core_seeded", "fit_core", "covariances"} | _DRAW_PROGRAMS) & set(traced)
    assert {f.name.split("-")[0] for f in files} >= _DRAW_PROGRAMS
    _same_bits(plain, exported)
    _same_bits(plain, loaded)


def _compiles_and_results(design):
    count = []
    listener = lambda event, d, **kw: count.append(event) if event.endswith("backend_compile_duration") else None  # noqa: E731
    jax.monitoring.register_event_duration_secs_listener(listener)
    try:
        out = _everything(oj.fit(design, "oscar", seed=1))
    finally:
        from jax._src import monitoring

        monitoring.unregister_event_duration_listener(listener)
    return len(count), out


def test_programs_compiled_ahead_are_the_ones_called_bit_for_bit(program_folder):
    # The CLI compiles the report programs on a worker thread while the fit compiles
    # (compile_ahead): the call must use that executable (no second compilation), and the
    # executable is the one the plain path compiles (same bits).
    from oscar_jax.infer.sandwich import covariances_program

    design = oj.simulate_design(seed=6, n_prompts=150)
    n_plain, plain = _compiles_and_results(design)
    jit.forget()
    with compile_ahead():
        n_ahead, ahead = _compiles_and_results(design)
    _same_bits(plain, ahead)
    assert n_ahead == n_plain
    prepared = covariances_program(design.n_cells)
    assert any(isinstance(p, jax.stages.Compiled) for p in prepared._programs.values()), prepared.__name__
    # Outside the block, prepare is a no-op: the library does not compile what it may not call.
    jit.forget()
    oj.fit(design, "oscar", seed=1)
    assert not covariances_program(design.n_cells)._programs


def _double(x):
    return 2.0 * x


def _fails_to_trace(x):
    raise ValueError("cannot trace this")


def test_a_prepared_program_that_does_not_fit_the_call_is_not_used(program_folder):
    twice, broken = jit.persistent_jit(_double), jit.persistent_jit(_fails_to_trace)
    with compile_ahead():
        twice.prepare(jax.ShapeDtypeStruct((3,), np.float32))  # other argument types: another program
        broken.prepare(np.ones(3))                               # the worker's trace fails
        np.testing.assert_array_equal(twice(np.arange(3.0)), [0.0, 2.0, 4.0])
        assert np.asarray(twice(np.arange(3.0))).dtype == np.float64
        with pytest.raises(ValueError, match="cannot trace this"):  # the call's own error, not a hang or None
            broken(np.ones(3))
    # Outside the block prepare does nothing.
    before = dict(twice._programs)
    twice.prepare(jax.ShapeDtypeStruct((4,), np.float64))
    assert twice._programs == before and sum(isinstance(p, Future) for p in before.values()) == 1


def test_corrupt_or_foreign_files_are_replaced(program_folder):
    design = oj.simulate_design(seed=4, n_prompts=120)
    ref = oj.fit(design, "j+p").theta
    for f in program_folder.iterdir():
        f.write_bytes(b"not a program")
    jit.forget()
    again = oj.fit(design, "j+p").theta
    assert np.array_equal(ref, again)
    core = [f for f in program_folder.iterdir() if f.name.startswith("fit_core_seeded-")]
    assert core and all(f.read_bytes() != b"not a program" for f in core)


def test_under_a_trace_the_plain_jit_runs(program_folder):
    # vmapping a persistent program traces it inside another transformation: no export.
    from oscar_jax.infer.sandwich import targets

    targets_jit = jit.persistent_jit(targets, static_argnames=("layout",))
    design = oj.simulate_design(seed=5, n_prompts=100)
    res = oj.fit(design, "j")
    scores = res.scores  # (the unbatched call exports its own program)
    before = set(program_folder.iterdir()) if program_folder.exists() else set()
    thetas = np.stack([res.theta, res.theta])
    out = jax.vmap(lambda th: targets_jit(th, res.layout).s)(thetas)
    closed = jax.jit(lambda: targets_jit(res.theta, res.layout).s)()  # concrete arguments, inside a trace
    np.testing.assert_allclose(np.asarray(closed), scores, rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(np.asarray(out)[0], scores, rtol=1e-13, atol=1e-15)  # batched: ulps apart
    after = set(program_folder.iterdir()) if program_folder.exists() else set()
    assert after == before


_SETTINGS = ("import os, jax; from oscar_jax.runtime import cache; print(jax.config.jax_compilation_cache_dir); "
             "print(jax.config.jax_persistent_cache_min_compile_time_secs); print(cache.cache_dir()); "
             "print(jax.config.jax_enable_x64, jax.numpy.ones(1).dtype); "
             "print([v for v in ('JAX_ENABLE_X64', 'JAX_COMPILATION_CACHE_DIR') if v in os.environ])")


def _cache_config(env_extra, jax_first: bool = True) -> list[str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("OSCAR_JAX_CACHE_DIR", "JAX_COMPILATION_CACHE_DIR", "JAX_ENABLE_X64",
                        "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS")}
    env.update(env_extra, PYTHONPATH=str(ROOT))
    # JAX imported before oscar_jax (configured through jax.config) or after it (through the
    # environment, which oscar_jax sets without importing JAX and puts back once JAX has read it).
    first = "import jax, oscar_jax; " if jax_first else "import oscar_jax, oscar_jax.fit; "
    out = subprocess.run([sys.executable, "-c", first + _SETTINGS], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return out.stdout.split("\n")[:5]


@pytest.mark.parametrize("jax_first", [True, False])
def test_python_api_uses_the_cli_cache_and_respects_off_and_user_settings(tmp_path, jax_first):
    ours = tmp_path / "ours"
    # (No variable set for JAX's import is left behind for child processes.)
    assert _cache_config({"OSCAR_JAX_CACHE_DIR": str(ours)}, jax_first) == [str(ours), "0.0", str(ours),
                                                                              "True float64", "[]"]
    assert ours.is_dir()
    assert _cache_config({"OSCAR_JAX_CACHE_DIR": "off"}, jax_first) == ["None", "1.0", "None", "True float64", "[]"]
    theirs = tmp_path / "theirs"
    # A cache the user configured for JAX stays theirs, with JAX's own thresholds.
    assert _cache_config({"JAX_COMPILATION_CACHE_DIR": str(theirs)}, jax_first) == [
        str(theirs), "1.0", "None", "True float64", "['JAX_COMPILATION_CACHE_DIR']"]


def test_variadic_functions_are_refused():
    # Their calls could not be keyed by parameter name and would never persist.
    with pytest.raises(TypeError, match=r"\*kw"):
        jit.persistent_jit(lambda x, **kw: x)
    with pytest.raises(TypeError, match=r"\*args"):
        jit.persistent_jit(lambda *args: args[0])


_LATER_PROCESS = """
import json, sys, jax, numpy as np, oscar_jax as oj
design = oj.simulate_design(seed=6, n_prompts=150)  # (the simulator's own programs are not stored)
events = []
counted = ("backend_compile_duration", "jaxpr_trace_duration")
jax.monitoring.register_event_duration_secs_listener(
    lambda event, d, **kw: events.append(kw.get("fun_name")) if event.endswith(counted) else None)
res = oj.fit(design, "oscar", seed=1)
boot = oj.bootstrap(design, "oscar", replicates=8, seed=2)
out = (res.theta, res.core.info, res.cov.cluster, res.cov.model, boot.batch.core.theta)
bits = [np.asarray(x, np.float64).tobytes().hex() for x in out]
print(json.dumps({"bits": bits, "events": len(events), "names": sorted(set(map(str, events)))}))
"""


def _later_process(cache_dir: Path) -> dict:
    import json

    env = {k: v for k, v in os.environ.items() if k not in ("JAX_COMPILATION_CACHE_DIR", "JAX_ENABLE_X64")}
    env.update(OSCAR_JAX_CACHE_DIR=str(cache_dir), PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, "-c", _LATER_PROCESS], env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_a_later_process_runs_the_stored_executables_bit_for_bit(tmp_path):
    # The first process compiles and stores each program's executable
    # (oscar_jax.runtime.executables); the next one loads them: it traces and compiles
    # nothing, and every estimate, covariance and bootstrap draw has the same bits.
    first = _later_process(tmp_path)
    assert first["events"] > 0 and any((tmp_path / "compiled").iterdir())
    # JAX's own cache holds no second copy of a stored program (its entries are named after
    # the module, which is named after the stored file).
    stems = {f.stem.replace("-", "_") for f in (tmp_path / "compiled").iterdir()}
    assert not [p.name for p in tmp_path.glob("jit_*-cache") if any(s in p.name for s in stems)]
    second = _later_process(tmp_path)
    assert second["events"] == 0, second["names"]
    assert second["bits"] == first["bits"]
    # An executable that cannot be loaded (a damaged or foreign file) is compiled again from
    # the exported program, with the same bits, and stored afresh: a fourth process loads
    # every program again. (An executable that JAX's own cache served lacks kernels on
    # XLA:CPU once serialized again — the next process failed with "Function … not found" —
    # which is why JAX's cache keeps no copy, and why one it serves all the same is compiled
    # once more under a second module name before it is stored.)
    for f in (tmp_path / "compiled").iterdir():
        f.write_bytes(b"not an executable")
    third = _later_process(tmp_path)
    assert third["events"] > 0 and third["bits"] == first["bits"]
    fourth = _later_process(tmp_path)
    assert fourth["events"] == 0, fourth["names"]
    assert fourth["bits"] == first["bits"]
