"""The seven progressive-disclosure tools: the public face of :mod:`vectree.agent.toolspec`
(the declarations: argument and result models, typed errors, the OpenAI schema) and
:mod:`vectree.agent.toolimpl` (the :class:`Toolbox` that implements them over a store).
Import from here; nothing is declared in this module."""

from .toolimpl import Toolbox, ToolResult, Trace, TraceStep, png_data_url
from .toolspec import (LAYER_OF, MAX_K, MAX_PAGE_CHARS, MAX_PAGES_PER_CALL, MIN_QUOTE_WORDS, TOOL_NAMES, TOOLS,
                       BadArgument, NotFound, ToolError, ToolSpec, Unavailable, openai_tools, validate_arguments)

__all__ = ["LAYER_OF", "MAX_K", "MAX_PAGE_CHARS", "MAX_PAGES_PER_CALL", "MIN_QUOTE_WORDS", "TOOL_NAMES", "TOOLS",
           "BadArgument", "NotFound", "ToolError", "ToolResult", "ToolSpec", "Toolbox", "Trace", "TraceStep",
           "Unavailable", "openai_tools", "png_data_url", "validate_arguments"]
