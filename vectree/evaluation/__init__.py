"""Evaluation: benchmark loaders (:mod:`vectree.evaluation.datasets`) and the sentence-level scorer
(:mod:`vectree.evaluation.sentences`) that every system is measured with.

Nothing here imports a retrieval system: a system hands the scorer the character spans of the
units it returned, so the same rule counts every system's output.
"""
