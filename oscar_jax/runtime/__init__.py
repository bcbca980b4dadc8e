"""Plumbing every layer stands on: float64 and thread settings (``x64``), argument checks and
the input error (``validate``), compiled-program caches, batches on host threads, devices and
processes, progress lines, output folders. Nothing here knows the model."""
