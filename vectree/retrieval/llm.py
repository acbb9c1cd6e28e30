"""A small client for OpenAI-compatible chat-completion endpoints (OpenAI, vLLM, llama.cpp's
server, Ollama), built on the ``openai`` package.

It sits in the library (below the tree extractor and the agent, which both use it).  What it adds
to the raw client:

* configuration from the settings object (:class:`vectree.retrieval.config.Settings`:
  ``OPENAI_BASE_URL``, ``OPENAI_API_KEY``, ``VECTREE_LLM_MODEL``, ``VECTREE_LLM_TIMEOUT`` seconds
  per attempt, ``VECTREE_LLM_MAX_RETRIES``);
* retries are the ``openai`` client's own (``max_retries``): timeouts, dropped connections, HTTP
  408/409/429 and 5xx, exponential backoff with jitter (0.5 s doubling, at most 8 s), honouring
  ``Retry-After``; this module only counts the attempts (``retries_taken``) and words the error;
* typed errors that say what to fix: :class:`LLMUnavailable` (unreachable, timing out or
  overloaded after the retries), :class:`LLMAuthError` (key refused), :class:`LLMResponseError`
  (request refused, or a reply that cannot be used);
* a plain result (:class:`ChatResult`) with the text, the tool calls and the usage, and
  :meth:`ChatResult.assistant_message` to append to the conversation (what a ReAct loop needs).

Example::

    llm = LLMClient.from_settings(load_settings())
    reply = llm.chat([{"role": "user", "content": "Say hi"}])
    reply.content
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import openai

DEFAULT_TIMEOUT = 60.0
DEFAULT_MAX_RETRIES = 3
# the statuses the openai client retries (besides 5xx); after its retries they mean "unavailable"
_RETRIED_STATUS = {408, 409, 429}


class LLMError(RuntimeError):
    """Base class of the client's errors."""


class LLMUnavailable(LLMError):
    """The endpoint could not be reached, timed out, or stayed overloaded (429/5xx) after retries."""


class LLMAuthError(LLMError):
    """The endpoint refused the API key (HTTP 401/403)."""


class LLMResponseError(LLMError):
    """The endpoint refused the request (another 4xx) or sent a reply that cannot be used."""

    def __init__(self, message: str, *, status_code: int | None = None, body: Any = None):
        super().__init__(message)
        self.status_code = status_code
        self.body = body


@dataclass(frozen=True)
class ToolCall:
    """One function call the model asked for."""

    id: str
    name: str
    arguments: str  # JSON text, as the model wrote it

    def parsed_arguments(self) -> dict[str, Any]:
        """The arguments as a dict; :class:`LLMResponseError` when they are not a JSON object."""
        try:
            value = json.loads(self.arguments or "{}")
        except json.JSONDecodeError as exc:
            raise LLMResponseError(f"tool call {self.name!r} has malformed JSON arguments: {exc}") from exc
        if not isinstance(value, dict):
            raise LLMResponseError(f"tool call {self.name!r} arguments are {type(value).__name__}, not an object")
        return value

    def as_message_part(self) -> dict[str, Any]:
        return {"id": self.id, "type": "function", "function": {"name": self.name, "arguments": self.arguments}}


@dataclass
class ChatResult:
    """One chat completion, reduced to what callers use."""

    content: str | None
    tool_calls: list[ToolCall] = field(default_factory=list)
    finish_reason: str | None = None
    model: str | None = None
    usage: dict[str, int] = field(default_factory=dict)
    attempts: int = 1
    seconds: float = 0.0

    def assistant_message(self) -> dict[str, Any]:
        """The reply as a message to append to the conversation before tool results."""
        msg: dict[str, Any] = {"role": "assistant", "content": self.content or ""}
        if self.tool_calls:
            msg["tool_calls"] = [t.as_message_part() for t in self.tool_calls]
        return msg


def _error_message(exc: Exception) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        err = body.get("error", body)
        if isinstance(err, dict) and err.get("message"):
            return str(err["message"])
        if isinstance(err, str):
            return err
    return str(getattr(exc, "message", None) or exc)


@dataclass
class LLMClient:
    """Chat completions against one OpenAI-compatible endpoint and model.

    ``timeout`` is per attempt; ``max_retries`` counts the attempts after the first; both are
    handed to the ``openai`` client, which does the retrying (see the module docstring).
    """

    base_url: str
    api_key: str | None = None
    model: str = "gpt-4o-mini"
    timeout: float = DEFAULT_TIMEOUT
    max_retries: int = DEFAULT_MAX_RETRIES
    _client: Any = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        if not self.base_url:
            raise ValueError("LLMClient needs a base_url (set OPENAI_BASE_URL)")
        if self.max_retries < 0:
            raise ValueError("max_retries must be >= 0")
        # local servers take any key; the openai package insists on one
        self._client = openai.OpenAI(
            base_url=self.base_url, api_key=self.api_key or "not-needed", timeout=self.timeout,
            max_retries=self.max_retries,
        )

    @classmethod
    def from_settings(cls, settings=None, **overrides: Any) -> "LLMClient":
        """A client for the configured endpoint; ``ValueError`` when ``OPENAI_BASE_URL`` is unset.

        ``settings``: the edge's :class:`~vectree.retrieval.config.Settings` (default: the
        environment's)."""
        if settings is None:
            from vectree.retrieval.config import load_settings

            settings = load_settings()
        if not settings.llm_base_url:
            raise ValueError("no LLM endpoint configured: set OPENAI_BASE_URL (and OPENAI_API_KEY, VECTREE_LLM_MODEL)")
        kwargs: dict[str, Any] = {
            "base_url": settings.llm_base_url,
            "api_key": settings.llm_key,
            "model": settings.llm_model,
            "timeout": settings.llm_timeout,
            "max_retries": settings.llm_max_retries,
        }
        kwargs.update(overrides)
        return cls(**kwargs)

    def describe(self) -> str:
        return f"model {self.model!r} at {self.base_url}"

    def chat(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        tools: Sequence[Mapping[str, Any]] | None = None,
        tool_choice: str | Mapping[str, Any] | None = None,
        response_format: Mapping[str, Any] | None = None,
        temperature: float | None = 0.0,
        max_tokens: int | None = None,
        timeout: float | None = None,
        extra_body: Mapping[str, Any] | None = None,
    ) -> ChatResult:
        """One chat completion, retried on transient failures by the ``openai`` client.

        ``tools`` are OpenAI function-tool specs; ``response_format`` is passed through
        (``{"type": "json_schema", ...}`` or ``{"type": "json_object"}``).  Raises
        :class:`LLMUnavailable`, :class:`LLMAuthError` or :class:`LLMResponseError`.
        """
        params: dict[str, Any] = {"model": self.model, "messages": list(messages)}
        if tools:
            params["tools"] = list(tools)
            if tool_choice is not None:
                params["tool_choice"] = tool_choice
        if response_format is not None:
            params["response_format"] = dict(response_format)
        if temperature is not None:
            params["temperature"] = temperature
        if max_tokens is not None:
            params["max_tokens"] = max_tokens
        if extra_body:
            params["extra_body"] = dict(extra_body)
        if timeout is not None:
            params["timeout"] = timeout
        started = time.perf_counter()
        try:
            # the raw response carries retries_taken, the attempt count behind ChatResult.attempts
            raw = self._client.chat.completions.with_raw_response.create(**params)
            completion = raw.parse()
        except (openai.AuthenticationError, openai.PermissionDeniedError) as exc:
            raise LLMAuthError(
                f"{self.base_url} refused the API key (HTTP {exc.status_code}): {_error_message(exc)}. "
                "Check OPENAI_API_KEY."
            ) from exc
        except (openai.APITimeoutError, openai.APIConnectionError) as exc:
            raise self._unavailable(exc) from exc
        except openai.APIStatusError as exc:
            if exc.status_code in _RETRIED_STATUS or exc.status_code >= 500:
                raise self._unavailable(exc) from exc  # the client retried it max_retries times
            hint = f" (is {self.model!r} served there?)" if exc.status_code == 404 else ""
            raise LLMResponseError(
                f"{self.base_url} refused the request (HTTP {exc.status_code}){hint}: {_error_message(exc)}",
                status_code=exc.status_code, body=getattr(exc, "body", None),
            ) from exc
        except (openai.APIResponseValidationError, json.JSONDecodeError, ValueError) as exc:
            raise LLMResponseError(f"{self.base_url} sent a malformed response: {exc}") from exc
        return self._result(completion, raw.retries_taken + 1, time.perf_counter() - started)

    def _unavailable(self, exc: Exception) -> LLMUnavailable:
        # a transient failure reaches us only once the client's retries are spent
        attempts = self.max_retries + 1
        tries = f"{attempts} attempt{'s' if attempts != 1 else ''}"
        if isinstance(exc, openai.APITimeoutError):
            msg = f"{self.base_url} did not answer within {self.timeout:g}s ({tries})"
        elif isinstance(exc, openai.APIConnectionError):
            msg = (f"cannot reach the LLM endpoint {self.base_url} ({tries}): {str(exc).rstrip('.')}. "
                   "Is the server running? (OPENAI_BASE_URL)")
        elif isinstance(exc, openai.APIStatusError) and exc.status_code == 429:
            msg = f"{self.base_url} kept rate-limiting the requests (HTTP 429, {tries}): {_error_message(exc)}"
        else:
            msg = f"{self.base_url} failed with HTTP {getattr(exc, 'status_code', '?')} ({tries}): {_error_message(exc)}"
        return LLMUnavailable(msg)

    def _result(self, completion: Any, attempts: int, seconds: float) -> ChatResult:
        choices = getattr(completion, "choices", None)
        if isinstance(completion, (str, bytes)) or not choices:
            raise LLMResponseError(f"{self.base_url} sent a reply without choices: {str(completion)[:200]!r}")
        choice = choices[0]
        message = choice.message
        calls = []
        for tc in getattr(message, "tool_calls", None) or []:
            fn = getattr(tc, "function", None)
            if fn is None:
                continue
            calls.append(ToolCall(id=tc.id or f"call_{len(calls)}", name=fn.name, arguments=fn.arguments or "{}"))
        usage = {}
        if getattr(completion, "usage", None) is not None:
            for k in ("prompt_tokens", "completion_tokens", "total_tokens"):
                v = getattr(completion.usage, k, None)
                if isinstance(v, int):
                    usage[k] = v
        return ChatResult(
            content=message.content, tool_calls=calls, finish_reason=choice.finish_reason,
            model=getattr(completion, "model", None), usage=usage, attempts=attempts, seconds=seconds,
        )
