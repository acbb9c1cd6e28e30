"""Thin Dagster asset functions, one module per pipeline stage; the work happens in ``retrieval``.

``resources.py`` holds the store resource the assets take (it lives here, not in ``pipelines``, because
assets may not import the wiring that loads them).
"""
