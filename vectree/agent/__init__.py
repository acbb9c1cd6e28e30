"""The reading agent and its LLM client.

``vectree.agent.llm`` is the one place that talks to an OpenAI-compatible endpoint (OpenAI, vLLM,
llama.cpp's server, Ollama): chat completions with tool calls and structured output, retries with
backoff, and typed errors.  Importing this package imports nothing heavy.
"""
