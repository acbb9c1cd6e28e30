"""The settings object: environment, config file, validation, the README table, and the rule
that nothing but ``vectree.retrieval.config`` reads the environment."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from vectree.retrieval.config import (
    TABLE_END, TABLE_START, Settings, SettingsError, env_name, load_settings, replace_table, settings_table,
)

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def clean_env(monkeypatch):
    """No setting from the machine leaks into these tests."""
    for name in Settings.model_fields:
        monkeypatch.delenv(env_name(name), raising=False)
    monkeypatch.delenv("VECTREE_CONFIG", raising=False)
    return monkeypatch


def test_defaults_work_with_nothing_set(clean_env):
    s = load_settings()
    assert s.store_root == Path(".vectree") and s.corpus_dirs == () and s.max_pages == 1500
    assert not s.llm_configured and s.llm_key is None and s.token is None
    assert (s.search_fusion, s.search_dense_weight, s.blas_threads, s.eval_threads) == ("weighted", 0.8, 1, 1)


def test_settings_from_the_environment(clean_env, tmp_path):
    clean_env.setenv("VECTREE_STORE", str(tmp_path / "store"))
    clean_env.setenv("VECTREE_CORPUS", f"{tmp_path / 'a'}:{tmp_path / 'b'}")
    clean_env.setenv("VECTREE_MAX_PAGES", "30")
    clean_env.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    clean_env.setenv("OPENAI_API_KEY", "sk-test")
    clean_env.setenv("VECTREE_LLM_TIMEOUT", "2.5")
    clean_env.setenv("VECTREE_SEARCH_FUSION", "rrf")
    clean_env.setenv("VECTREE_API_TOKEN", "t0k")
    clean_env.setenv("VECTREE_SPROUT_MODEL", str(tmp_path / "model"))
    clean_env.setenv("VECTREE_EVAL_THREADS", "2")
    clean_env.setenv("VECTREE_EMBED_MODEL", "")  # empty means unset, as before the settings object
    clean_env.setenv("STORE_ROOT", "/not/read")  # only the prefixed name is read
    s = load_settings()
    assert s.store_root == tmp_path / "store"
    assert s.corpus_dirs == (tmp_path / "a", tmp_path / "b")
    assert s.max_pages == 30 and s.llm_timeout == 2.5 and s.search_fusion == "rrf" and s.eval_threads == 2
    assert s.llm_configured and s.llm_base_url == "http://127.0.0.1:9/v1" and s.llm_key == "sk-test"
    assert s.token == "t0k" and s.sprout_model == tmp_path / "model" and s.embed_model is None
    # an explicit store (the CLI's --store) wins over VECTREE_STORE; other fields by name
    assert load_settings(tmp_path / "other").store_root == tmp_path / "other"
    assert load_settings(max_pages=7).max_pages == 7
    # secrets are masked when shown
    shown = s.effective()
    assert shown["OPENAI_API_KEY"] == "****" and shown["VECTREE_API_TOKEN"] == "****"
    assert "sk-test" not in repr(s) and "t0k" not in repr(s)


def test_settings_from_a_config_file_below_the_environment(clean_env, tmp_path):
    cfg = tmp_path / "vectree.toml"
    cfg.write_text(f'store_root = "{tmp_path / "from-file"}"\nmax_pages = 800\nllm_model = "file-model"\n'
                   f'corpus_dirs = ["{tmp_path / "c"}"]\nsearch_dense_weight = 0.6\n')
    clean_env.setenv("VECTREE_CONFIG", str(cfg))
    s = load_settings()
    assert s.store_root == tmp_path / "from-file" and s.max_pages == 800 and s.llm_model == "file-model"
    assert s.corpus_dirs == (tmp_path / "c",) and s.search_dense_weight == 0.6
    clean_env.setenv("VECTREE_MAX_PAGES", "5")  # the environment wins over the file
    assert load_settings().max_pages == 5
    clean_env.setenv("VECTREE_CONFIG", str(tmp_path / "missing.toml"))
    with pytest.raises(SettingsError, match=r"VECTREE_CONFIG=.*missing\.toml.*no such file"):
        load_settings()


def test_a_bad_value_is_one_readable_line(clean_env):
    clean_env.setenv("VECTREE_MAX_PAGES", "abc")
    with pytest.raises(SettingsError) as info:
        load_settings()
    msg = str(info.value)
    assert "\n" not in msg and "Traceback" not in msg
    assert re.search(r"VECTREE_MAX_PAGES must be a valid integer.*got 'abc'", msg), msg
    clean_env.delenv("VECTREE_MAX_PAGES")
    clean_env.setenv("VECTREE_SEARCH_FUSION", "max")
    clean_env.setenv("VECTREE_SEARCH_DENSE_WEIGHT", "1.5")
    clean_env.setenv("OPENAI_API_KEY", "sk-secret")
    clean_env.setenv("VECTREE_LLM_MAX_RETRIES", "-1")
    msg = str(pytest.raises(SettingsError, load_settings).value)
    assert "VECTREE_SEARCH_FUSION must be 'rrf' or 'weighted', got 'max'" in msg
    assert "VECTREE_SEARCH_DENSE_WEIGHT must be less than or equal to 1" in msg
    assert "VECTREE_LLM_MAX_RETRIES must be greater than or equal to 0" in msg
    assert "sk-secret" not in msg


def test_the_cli_reports_a_bad_setting_in_one_line(clean_env, tmp_path):
    from vectree.cli import main

    clean_env.setenv("VECTREE_MAX_PAGES", "abc")
    result = CliRunner().invoke(main, ["status", "--store", str(tmp_path / "s")])
    assert result.exit_code == 1
    assert result.output.strip().splitlines() == [
        "Error: invalid configuration: VECTREE_MAX_PAGES must be a valid integer, "
        "unable to parse string as an integer, got 'abc'"]


def test_vectree_config_shows_the_effective_settings(clean_env, tmp_path):
    from vectree.cli import main

    clean_env.setenv("OPENAI_API_KEY", "sk-hidden")
    clean_env.setenv("VECTREE_MAX_PAGES", "42")
    result = CliRunner().invoke(main, ["config", "--json"])
    assert result.exit_code == 0, result.output
    import json

    shown = json.loads(result.output)
    assert shown["VECTREE_MAX_PAGES"] == 42 and shown["OPENAI_API_KEY"] == "****"
    assert "sk-hidden" not in result.output
    assert set(shown) == {env_name(n) for n in Settings.model_fields}
    md = CliRunner().invoke(main, ["config", "--markdown"])
    assert md.exit_code == 0 and md.output == settings_table()


def test_readme_table_is_generated_from_the_model():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert TABLE_START in readme and TABLE_END in readme
    assert replace_table(readme) == readme, (
        "README's configuration table differs from the Settings model: run "
        "`vectree config --write-readme README.md`")
    # every setting has a row and a description
    for name, info in Settings.model_fields.items():
        assert info.description, f"Settings.{name} has no description"
        assert f"| `{env_name(name)}` | `{name}` |" in readme


def test_replace_table_rewrites_only_between_the_markers():
    text = f"intro\n{TABLE_START}\nold table\n{TABLE_END}\noutro\n"
    out = replace_table(text, "| new |\n")
    assert out == f"intro\n{TABLE_START}\n| new |\n{TABLE_END}\noutro\n"
    with pytest.raises(ValueError, match="markers"):
        replace_table("no markers here")


# `os.environ[...] = ` / setdefault of process-wide flags are allowed in the settings module only;
# reading any variable anywhere else is what this test forbids
_ENV_READ = re.compile(r"os\.environ|getenv\(|environ\.get|from os import .*environ")


def test_no_module_but_the_settings_reads_the_environment():
    allowed = {REPO / "vectree" / "retrieval" / "config.py"}
    offenders = []
    for folder in ("vectree", "benchmarks"):
        for path in sorted((REPO / folder).rglob("*.py")):
            if path in allowed:
                continue
            for no, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if _ENV_READ.search(line):
                    offenders.append(f"{path.relative_to(REPO)}:{no}: {line.strip()}")
    assert offenders == [], "read the setting from vectree.retrieval.config.Settings instead:\n" + "\n".join(offenders)


def test_the_llm_resource_carries_the_settings(clean_env):
    from vectree.assets.llm_resource import LLMResource

    assert LLMResource.from_settings(load_settings()).client() is None  # no endpoint: offline
    s = load_settings(llm_base_url="http://127.0.0.1:9/v1", llm_api_key="k", llm_model="m", llm_timeout=3,
                      llm_max_retries=0, llm_context_tokens=4000)
    res = LLMResource.from_settings(s)
    client = res.client()
    assert (client.base_url, client.api_key, client.model, client.timeout, client.max_retries) == (
        "http://127.0.0.1:9/v1", "k", "m", 3.0, 0)
    assert res.context_tokens == 4000
    # the openai client itself carries the retry policy (no second retry loop of ours)
    assert client._client.max_retries == 0 and client._client.timeout == 3.0


def test_setting_defaults_match_the_library_defaults():
    from vectree.retrieval.llm import DEFAULT_MAX_RETRIES, DEFAULT_TIMEOUT
    from vectree.retrieval.search.index import DEFAULT_DENSE_WEIGHT, DEFAULT_FUSION
    from vectree.retrieval.trees.llm_extract import DEFAULT_CONTEXT_TOKENS

    fields = Settings.model_fields
    assert fields["search_fusion"].default == DEFAULT_FUSION
    assert fields["search_dense_weight"].default == DEFAULT_DENSE_WEIGHT
    assert fields["llm_context_tokens"].default == DEFAULT_CONTEXT_TOKENS
    assert (fields["llm_timeout"].default, fields["llm_max_retries"].default) == (DEFAULT_TIMEOUT, DEFAULT_MAX_RETRIES)
