"""Runtime configuration: one :class:`Settings` object, the only place that reads the environment.

Every knob of vectree is a field of :class:`Settings` (a ``pydantic-settings`` model).  Values
come from, highest priority first:

1. arguments given in code (``load_settings(store_root=...)``, the CLI's ``--store``);
2. environment variables: ``VECTREE_<FIELD>`` (``VECTREE_MAX_PAGES``), except the OpenAI pair,
   which keep their standard names ``OPENAI_BASE_URL`` and ``OPENAI_API_KEY``;
3. the TOML file named by ``VECTREE_CONFIG`` (keys are the field names: ``max_pages = 800``);
4. the defaults below, which work offline on a fresh machine.

The edges build it once (the ``vectree`` command group, ``create_app``, the MCP server, the
Dagster resources, the eval runner) and pass it down; library functions that take a setting as
an argument fall back to :func:`load_settings` when called without one.  Nothing else in the
package reads ``os.environ`` (``tests/test_settings.py`` checks that).

The README's configuration table is generated from the field descriptions
(:func:`settings_table`, ``vectree config --markdown``) and a test keeps the two in step.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, SecretStr, ValidationError, field_validator
from pydantic_settings import BaseSettings, NoDecode, PydanticBaseSettingsSource, SettingsConfigDict, TomlConfigSettingsSource

ENV_PREFIX = "VECTREE_"
CONFIG_ENV = "VECTREE_CONFIG"
DEFAULT_STORE = ".vectree"
DEFAULT_MAX_PAGES = 1500
# a store root with a scheme (``s3://bucket/prefix``, ``gs://...``, ``file:///...``) lives on object storage
STORE_URI_RE = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
# ../shared/data next to the repository checkout (the workplace layout)
DEFAULT_SHARED_DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"


class SettingsError(ValueError):
    """The configuration is invalid; the message names each bad variable and what it must be."""


def set_offline_model_env() -> None:
    """Make Hugging Face libraries fail fast instead of waiting on a network that is not there.

    The one place that writes these defaults (an explicit value in the environment wins)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def set_dagster_env() -> None:
    """Keep Dagster from phoning home (there is no network; an explicit value wins)."""
    os.environ.setdefault("DAGSTER_DISABLE_TELEMETRY", "1")


def as_store_root(value: Any) -> Any:
    """A store root as the settings hold it: an object-store URI stays a string (without a trailing
    ``/``), anything else given as a string becomes a ``Path``."""
    if isinstance(value, str) and STORE_URI_RE.match(value.strip()):
        return value.strip().rstrip("/")
    return Path(value) if isinstance(value, str) else value


def _env(name: str, *, alias: str) -> str:
    """The environment variable of a field whose name is not ``VECTREE_<FIELD>``; code and the
    config file still use the field name (``populate_by_name``), and only ``alias`` is read from
    the environment (an unprefixed ``STORE_ROOT`` is not)."""
    return alias


class Settings(BaseSettings):
    """Every setting of vectree.  Build it with :func:`load_settings`."""

    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX, case_sensitive=False, extra="ignore", frozen=True, populate_by_name=True,
        validate_default=True,
    )

    # a folder (a Path) or an object-store URI kept as written (a str): Path("s3://b/p") would be "s3:/b/p"
    store_root: Path | str = Field(
        Path(DEFAULT_STORE), validation_alias=_env("store_root", alias="VECTREE_STORE"),
        description="store root: a folder, or an object-store URI such as `s3://bucket/prefix` (credentials and "
                    "endpoint from the standard `AWS_*` variables); `--store` overrides it")
    store_cache: Path = Field(
        Path.home() / ".cache" / "vectree" / "stores",
        description="where a store on object storage keeps its local copy: the working store of a refresh and the "
                    "published snapshots it reads (safe to delete)")
    store_poll_seconds: float = Field(
        2.0, ge=0.0, description="how often a reader of a store on object storage looks for a newly published "
                                 "snapshot (at most one pointer read per interval)")
    corpus_dirs: Annotated[tuple[Path, ...], NoDecode] = Field(
        (), validation_alias=_env("corpus_dirs", alias="VECTREE_CORPUS"),
        description="extra corpus folders the sensor and schedules watch (`os.pathsep`-separated: `:` on Linux)")
    sensor_interval: int = Field(
        60, ge=1, description="seconds between two looks of `corpus_sensor` at the corpus folders under the Dagster "
                              "daemon (`corpus_after_papers` looks every 30 s, or this when shorter)")
    max_pages: int = Field(DEFAULT_MAX_PAGES, ge=1, description="longer PDFs are skipped with a reason")
    executor: Literal["in_process", "multiprocess", "celery"] = Field(
        "in_process", description="how a refresh runs the per-paper and corpus steps: `in_process` (one process), "
                                  "`multiprocess` (Dagster's multiprocess executor, `workers` processes) or `celery` "
                                  "(dagster-celery workers on other machines; README, \"Running on a cluster\")")
    workers: int = Field(
        2, ge=1, description="parallel paper batches (and processes of the multiprocess executor) when `executor` "
                             "is not `in_process`")
    batch_size: int = Field(
        256, ge=1, description="papers per `paper_job` run: each run materialises a contiguous range of paper "
                               "partitions, so the model loads once per batch, not once per paper")
    celery_broker: str = Field(
        "redis://127.0.0.1:6379/0", description="the Celery broker URL of the `celery` executor (workers must use the same)")
    celery_backend: str = Field(
        "redis://127.0.0.1:6379/1", description="the Celery result backend URL of the `celery` executor")
    embed_model: str | None = Field(
        None, description="sentence-transformers model name or local path; unset: the bundled all-MiniLM-L6-v2")
    llm_base_url: str | None = Field(
        None, validation_alias=_env("llm_base_url", alias="OPENAI_BASE_URL"),
        description="an OpenAI-compatible endpoint (OpenAI, vLLM, llama.cpp, Ollama); unset means offline")
    llm_api_key: SecretStr | None = Field(
        None, validation_alias=_env("llm_api_key", alias="OPENAI_API_KEY"), description="key for that endpoint")
    llm_model: str = Field("gpt-4o-mini", description="model name at that endpoint")
    llm_timeout: float = Field(60.0, gt=0, description="seconds per LLM request attempt")
    llm_max_retries: int = Field(
        3, ge=0, description="retries after the first attempt (timeouts, dropped connections, 408/409/429, 5xx; "
                             "the `openai` client's backoff, honouring `Retry-After`)")
    llm_context_tokens: int = Field(16000, ge=1000, description="context size the tree extractor windows page text into")
    search_fusion: Literal["rrf", "weighted"] = Field(
        "weighted", description="Layer 0 fusion of BM25 and dense hits (`rrf` or `weighted`), chosen on PubMedQA")
    search_dense_weight: float = Field(0.8, ge=0.0, le=1.0, description="dense share of the `weighted` fusion")
    vector_index_min_rows: int = Field(
        5000, ge=256, description="Layer 0 entries from which the dense table gets an IVF-PQ index (below: exact "
                                  "flat scan); measured recall@10 in the README's cost-growth section")
    vector_nprobes: int = Field(
        24, ge=1, description="IVF partitions a Layer 0 dense query visits once the table has an IVF-PQ index")
    vector_refine_factor: int = Field(
        10, ge=1, description="IVF-PQ candidates re-ranked with the exact vectors, as a multiple of those asked for")
    api_token: SecretStr | None = Field(
        None, description="bearer token the HTTP service requires on every route but `/health`; unset: no token")
    max_body_bytes: int = Field(1_000_000, ge=1024, description="largest request body the HTTP service reads (larger: 413)")
    training_data: Path | None = Field(
        None, description="where `vectree sprout train` finds HotpotQA and QASPER; unset: `VECTREE_SHARED_DATA`")
    blas_threads: int = Field(
        1, ge=0, description="BLAS threads in query processes (`retrieval/threads.py`); `0` leaves numpy's default")
    cross_encoder: Path | None = Field(
        None, description="local cross-encoder for the `reranked-dense-rag` eval baseline")
    sprout_model: Path | None = Field(
        None, description="SproutRAG model folder the eval's sprout systems use; unset: the store's published model")
    sprout_default_model: str | None = Field(
        None, description="the SproutRAG model a store that chose none uses: unset = the packaged default, `none` = no model, or a folder")
    service_url: str | None = Field(
        None, description="a running `vectree serve` that `vectree ask` and `search` send questions to (the model loads once); unset: in-process")
    reranker: str = Field(
        "default", description="the trained reranker + reader: `default` (the shipped model), `off`, or a model folder")
    query_adapter: bool = Field(
        True, description="map query vectors with the reader's trained query adapter before within-paper ranking; `false` only for the ablation")
    reader_backend: Literal["auto", "onnx", "torch"] = Field(
        "auto", description="how the reranker + reader runs at query time: `onnx` (ONNX Runtime, the model exported "
        "once into `model_cache`: `vectree ask` p50 321-337 ms against 406-456 ms with torch on 2 cores, the same answers), `torch`, or `auto` (ONNX Runtime "
        "when it is installed and the export works, else torch); training always uses torch")
    model_cache: Path = Field(
        Path.home() / ".cache" / "vectree" / "onnx",
        description="where query-time copies of models are kept (the reader's ONNX export, ~90 MB a model; safe to delete)")
    rerank_threads: int = Field(
        2, ge=1, description="torch threads of the reranker at query time (one query at a time holds the model: on 2 cores "
        "Layer-0 search with reranking p50 214 ms with 2, 356 ms with 1; `benchmarks/bench_layer0_latency.py`)")
    reader_base: Path | None = Field(
        None, description="folder with the MiniLM base weights the reader's adapters sit on; unset: the packaged model")
    eval_pubmedqa_split: Literal["all", "train", "dev", "test"] = Field(
        "test", description="PubMedQA questions `vectree eval` asks: the reader's held-back `test` split by default")
    eval_threads: int = Field(1, ge=1, description="torch threads during `vectree eval` (latency on a shared machine)")
    eval_cache: Path = Field(Path.home() / ".cache" / "vectree-eval",
                             description="embedding cache of `vectree eval` (safe to delete)")
    shared_data: Path = Field(DEFAULT_SHARED_DATA,
                              description="the workplace's benchmark data, read by the benchmarks, the tests and SproutRAG training")

    @field_validator("store_root", mode="before")
    @classmethod
    def _store_uri_or_path(cls, value: Any) -> Any:
        return as_store_root(value)

    @field_validator("corpus_dirs", mode="before")
    @classmethod
    def _split_paths(cls, value: Any) -> Any:
        if isinstance(value, str):
            return tuple(p for p in value.split(os.pathsep) if p)
        return value

    @field_validator("embed_model", "llm_base_url", "llm_api_key", "api_token", "training_data", "cross_encoder",
                     "sprout_model", "reader_base", "service_url", mode="before")
    @classmethod
    def _empty_is_unset(cls, value: Any) -> Any:
        # `export OPENAI_BASE_URL=` means "not configured", as it did before the settings object
        return None if isinstance(value, str) and not value.strip() else value

    @classmethod
    def settings_customise_sources(cls, settings_cls, init_settings, env_settings, dotenv_settings,
                                   file_secret_settings) -> tuple[PydanticBaseSettingsSource, ...]:
        sources: list[PydanticBaseSettingsSource] = [init_settings, env_settings]
        path = os.environ.get(CONFIG_ENV)
        if path:
            if not Path(path).is_file():
                raise SettingsError(f"{CONFIG_ENV}={path!r}: no such file")
            sources.append(TomlConfigSettingsSource(settings_cls, toml_file=Path(path)))
        return tuple(sources)

    # ---- derived values ---------------------------------------------------------------------
    @property
    def llm_configured(self) -> bool:
        return bool(self.llm_base_url)

    @property
    def llm_key(self) -> str | None:
        return self.llm_api_key.get_secret_value() if self.llm_api_key else None

    @property
    def token(self) -> str | None:
        return self.api_token.get_secret_value() if self.api_token else None

    @property
    def training_data_dir(self) -> Path:
        return self.training_data or self.shared_data

    def effective(self) -> dict[str, Any]:
        """Every setting as ``{env var: value}``, secrets masked (for ``vectree config``)."""
        out: dict[str, Any] = {}
        for name, info in type(self).model_fields.items():
            value = getattr(self, name)
            if isinstance(value, SecretStr):
                value = "****"
            elif isinstance(value, tuple):
                value = os.pathsep.join(str(v) for v in value) or None
            elif isinstance(value, Path):
                value = str(value)
            out[env_name(name)] = value
        return out


def env_name(field: str) -> str:
    """The environment variable of a :class:`Settings` field."""
    alias = Settings.model_fields[field].validation_alias
    return str(alias) if alias else ENV_PREFIX + field.upper()


def _describe_error(err: dict) -> str:
    loc = err.get("loc") or ()
    field = str(loc[0]) if loc else "?"
    name = env_name(field) if field in Settings.model_fields else field
    msg = err.get("msg", "invalid")
    for prefix in ("Value error, ", "Input should be "):
        if msg.startswith(prefix):
            msg = ("must be " if prefix.startswith("Input") else "") + msg[len(prefix):]
    value = err.get("input")
    shown = "****" if field in ("llm_api_key", "api_token") else repr(value)
    return f"{name} {msg}, got {shown}"


def load_settings(store_root: str | os.PathLike | None = None, **overrides: Any) -> Settings:
    """The settings from the environment and the ``VECTREE_CONFIG`` file.

    An explicit ``store_root`` (``--store``) wins over ``VECTREE_STORE``; ``overrides`` set other
    fields by name.  Bad values raise :class:`SettingsError` with one line per bad variable, e.g.
    ``VECTREE_MAX_PAGES must be a valid integer, unable to parse string as an integer, got 'abc'``.
    """
    if store_root:
        overrides["store_root"] = store_root  # a folder or an object-store URI (see _store_uri_or_path)
    try:
        return Settings(**overrides)
    except ValidationError as exc:
        raise SettingsError("invalid configuration: " + "; ".join(_describe_error(e) for e in exc.errors())) from None


# ---- documentation ----------------------------------------------------------------------------
TABLE_START = "<!-- settings-table:start -->"
TABLE_END = "<!-- settings-table:end -->"


def _default_text(name: str, info) -> str:
    if name == "eval_cache":
        return "`~/.cache/vectree-eval`"
    if name == "store_cache":
        return "`~/.cache/vectree/stores`"
    if name == "model_cache":
        return "`~/.cache/vectree/onnx`"
    if name == "shared_data":
        return "`../shared/data`"
    value = info.default
    if value is None or value == ():
        return "unset"
    if name == "store_root":
        return f"`./{value}`"
    return f"`{value}`"


def settings_table() -> str:
    """The README's configuration table, one row per :class:`Settings` field (Markdown)."""
    rows = ["| variable | config-file key | default | meaning |", "|---|---|---|---|"]
    for name, info in Settings.model_fields.items():
        desc = (info.description or "").replace("|", "\\|")
        rows.append(f"| `{env_name(name)}` | `{name}` | {_default_text(name, info)} | {desc} |")
    return "\n".join(rows) + "\n"


def replace_table(text: str, table: str | None = None) -> str:
    """``text`` (the README) with the part between the settings-table markers replaced."""
    table = settings_table() if table is None else table
    start, end = text.find(TABLE_START), text.find(TABLE_END)
    if start < 0 or end < start:
        raise ValueError(f"the README has no {TABLE_START} ... {TABLE_END} markers")
    return text[: start + len(TABLE_START)] + "\n" + table + text[end:]


def quiet_model_libraries(verbose: bool = False) -> None:
    """Silence the progress bars and info logs of the model libraries ("Loading weights" bars from
    transformers, hub download bars) unless ``verbose``.  Must run before they are imported:
    transformers reads both variables at import time."""
    if verbose:
        return
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")
    if "transformers" in sys.modules:  # imported already (a test process): switch it off directly
        from transformers.utils import logging as hf_logging

        hf_logging.set_verbosity_error()
        hf_logging.disable_progress_bar()
