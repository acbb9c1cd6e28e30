"""Evaluation: benchmark loaders (:mod:`evaluation.datasets`) and the sentence-level scorer
(:mod:`evaluation.sentences`) that every system is measured with.

Nothing here imports a retrieval system: a system hands the scorer the character spans of the
units it returned, so the same rule counts every system's output.
"""
