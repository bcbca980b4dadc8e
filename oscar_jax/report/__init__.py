"""Everything a person or a program reads: text tables, boards on a scale (logit, Elo, win rate),
JSON and CSV, figures and the one-page HTML report. No statistics of its own."""
