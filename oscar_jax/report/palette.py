"""The one colour palette of every oscar_jax figure: Okabe & Ito (2008), "Color universal design".

Its eight colours stay distinguishable under the common colour-vision deficiencies.
``OKABE_ITO`` lists them in the published order (black first, for single-series plots);
``SERIES`` is the order for several series (methods, interval kinds), starting with the
colours that differ most; ``COLOURS`` names each. Diverging maps (win probabilities) use
matplotlib's ``RdBu``, readable in grey scale as distance from ½.
"""

from __future__ import annotations

__all__ = ["COLOURS", "GREY", "OKABE_ITO", "SERIES"]

OKABE_ITO = ("#000000", "#E69F00", "#56B4E9", "#009E73", "#F0E442", "#0072B2", "#D55E00", "#CC79A7")
COLOURS = {"black": OKABE_ITO[0], "orange": OKABE_ITO[1], "sky": OKABE_ITO[2], "green": OKABE_ITO[3],
           "yellow": OKABE_ITO[4], "blue": OKABE_ITO[5], "vermillion": OKABE_ITO[6], "purple": OKABE_ITO[7]}
GREY = "#7F7F7F"  # reference lines and secondary marks, outside the eight data colours
SERIES = tuple(COLOURS[c] for c in ("blue", "orange", "green", "vermillion", "purple", "sky", "yellow", "black"))
