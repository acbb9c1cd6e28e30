"""Dagster wiring only: definitions, jobs, schedules, sensors, and the in-process refresh/ingest.

It imports the assets (and their store resource, ``vectree.assets.resources``); nothing in
``assets`` imports it back.
"""
