"""Records in, one canonical validated frame out: file readers, the canonical columns and their
checks, the input formats of the ecosystem (FastChat/Arena, arena-hard, Xu et al., AlpacaEval),
response lengths, model families and record filters."""
