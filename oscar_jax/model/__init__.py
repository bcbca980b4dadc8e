"""What the model is: its terms (``spec``), the parameter layout (``params``), the link functions
(``links``), the one predictor and likelihood (``likelihood``), the integer-coded design
(``design``) and ``prepare`` (``problem``), the only set-up path from a frame to a fit."""
