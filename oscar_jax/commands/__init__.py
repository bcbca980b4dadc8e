"""Subcommands of the ``oscar`` CLI (one module each; see :mod:`oscar_jax.cli`)."""
