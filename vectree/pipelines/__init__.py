"""Dagster wiring only: definitions, jobs, schedules, sensors, resources."""
