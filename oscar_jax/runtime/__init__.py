"""Plumbing every layer stands on: float64, BLAS threads, XLA flags and XLA's CPU pool set
before JAX loads (``x64``); where compiled programs persist (``cache``) and the jit that stores traced ones
(``jit``); checks of what the user gives, atomic writes and the error and warning classes
(``validate``); batches on host threads (``batching``), devices (``sharding``), processes
(``multiprocess``), progress lines (``progress``). Nothing here knows the model."""
