"""Run one ``oscar`` command in this process and report what JAX did: compilations, traces, time.

``python benchmarks/cli_probe.py STATS.json fit DATA --format json`` runs
``oscar_jax.cli.main.main`` on the arguments after the first, discards the command's stdout,
and writes to STATS.json: the exit status, the seconds spent importing and running,
the number of XLA compilations (``backend_compile`` events, whether the program then came
from the persistent cache or not), persistent-cache hits, traces (``jaxpr_trace``
events), the programs compiled by name and which of the modules in ``HEAVY`` were
imported. The compilation count per invocation is the robust before → after number of
``bench_cli.py`` and of ``tests/test_cli_compilations.py``: unlike wall time it does not
depend on the machine's load.
"""

from __future__ import annotations

import time

_T0 = time.perf_counter()

import collections  # noqa: E402
import contextlib  # noqa: E402
import io  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402


# Modules a command may load only where it uses them (issue 36: a light start).
HEAVY = ("scipy.special", "scipy.stats", "jax.scipy.stats", "matplotlib", "numpyro", "arviz")


def probe(argv: list[str]) -> dict:
    """Run ``oscar <argv>`` in this process; return the counters (see the module docstring)."""
    import jax
    import jax.monitoring as monitoring

    compiles: collections.Counter = collections.Counter()
    traces: collections.Counter = collections.Counter()
    events: collections.Counter = collections.Counter()
    seconds: collections.Counter = collections.Counter()

    def on_duration(event, duration, **kw):
        seconds[event] += duration
        if event == "/jax/core/compile/backend_compile_duration":
            compiles[str(kw.get("fun_name", "?"))] += 1
        elif event == "/jax/core/compile/jaxpr_trace_duration":
            traces[str(kw.get("fun_name", "?"))] += 1

    monitoring.register_event_duration_secs_listener(on_duration)
    monitoring.register_event_listener(lambda event, **kw: events.update([event]))
    t_import = time.perf_counter()
    from oscar_jax.cli.main import main

    t_run = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):
        code = main(argv)
    t_end = time.perf_counter()
    del jax
    return {
        "argv": argv, "exit": int(code or 0),
        "import_s": t_run - _T0, "oscar_import_s": t_run - t_import, "run_s": t_end - t_run,
        "compilations": sum(compiles.values()), "traces": sum(traces.values()),
        "cache_hits": events.get("/jax/compilation_cache/cache_hits", 0),
        "compiled": dict(compiles.most_common()), "traced": dict(traces.most_common()),
        "seconds": {k.rsplit("/", 1)[-1]: round(v, 4) for k, v in seconds.items()},
        "imported": [m for m in HEAVY if m in sys.modules],
    }


if __name__ == "__main__":
    out = probe(sys.argv[2:])
    with open(sys.argv[1], "w", encoding="utf-8") as fh:
        json.dump(out, fh, indent=1)
    sys.exit(out["exit"])
