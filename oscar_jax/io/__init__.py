"""Records in, one canonical validated frame out: file readers, the canonical columns and their
checks, the registry of input conventions (FastChat/Arena, arena-hard, Xu et al., AlpacaEval,
evalica, crowd-kit and our own), response lengths, model families, record filters and the
example shipped with the package. Needs pandas, never JAX."""
