"""Immutable results of the estimators (fit, bootstrap) and the one schema that turns every result
into tables and JSON: boards on a scale, checks and interval status, intervals and ranks from draws."""
