"""The reading agent: the seven tools, the offline navigator and the ReAct agent.

The LLM client it drives lives below it, in :mod:`vectree.retrieval.llm` (the tree extractor
uses it too).  Importing this package imports nothing heavy.
"""
