"""Thin Dagster asset functions, one module per pipeline stage; the work happens in ``retrieval``."""
