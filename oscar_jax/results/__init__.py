"""Immutable results of the estimators (fit, bootstrap) and the toolkit that turns them into
tables and JSON: intervals and ranks, JSON-ready values."""
