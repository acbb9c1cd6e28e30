"""Fast commands: model-free commands import no model, Dagster or index library, and the model
libraries' progress bars stay silent unless --verbose.  Each command runs as its own process,
as a user runs it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests import pdfmaker

REPO = Path(__file__).resolve().parents[1]
# what a model-free command must not load: each costs from a tenth of a second (pyarrow.dataset)
# to several seconds (torch, the embedding model)
HEAVY = ("torch", "transformers", "sentence_transformers", "dagster", "lancedb", "tantivy", "fitz", "pymupdf",
         "pandas", "pyarrow.dataset", "vectree.evaluation", "vectree.pipelines", "vectree.agent", "threadpoolctl")

PROBE = """
import json, sys
from vectree.cli import main
try:
    main(sys.argv[1:], standalone_mode=False)
finally:
    heavy = sorted({m for m in sys.modules for h in %r if m == h or m.startswith(h + ".")})
    print("\\nHEAVY=" + json.dumps(heavy))
""" % (HEAVY,)


QUIETING = ("HF_HUB_DISABLE_PROGRESS_BARS", "TRANSFORMERS_VERBOSITY", "TRANSFORMERS_NO_ADVISORY_WARNINGS")


def _env():
    # a user's shell, not this test process (where run_ingest has already quietened the libraries)
    env = {k: v for k, v in os.environ.items() if k not in QUIETING}
    return {**env, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""), "COLUMNS": "120"}


@pytest.fixture(scope="module")
def one_paper_store(tmp_path_factory):
    from vectree.cli import run_ingest

    tmp = tmp_path_factory.mktemp("startup")
    (tmp / "corpus").mkdir()
    pdfmaker.write_paper(tmp / "corpus" / "glacier.pdf", "Glacier Melt Dynamics in Alpine Basins", pdfmaker.GOOD_SECTIONS)
    store, report, _ = run_ingest([str(tmp / "corpus")], str(tmp / "store"), quiet=True)
    assert not report.failed_runs
    return store


@pytest.mark.parametrize("argv", [["--help"], ["papers"], ["status"], ["sources"], ["tree", "glac"],
                                  ["page", "glac", "1"], ["papers", "list"]])
def test_model_free_commands_load_no_model_dagster_or_index_library(one_paper_store, argv):
    if argv != ["--help"]:
        argv = [*argv, "--store", str(one_paper_store.root)]
    proc = subprocess.run([sys.executable, "-c", PROBE, *argv], capture_output=True, text=True, env=_env(),
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    heavy = json.loads(proc.stdout.rsplit("HEAVY=", 1)[1])
    assert heavy == [], f"vectree {' '.join(argv)} imported {heavy}"
    if argv[0] in ("tree", "page"):
        assert "Glacier Melt Dynamics" in proc.stdout


def _search(store, *flags):
    return subprocess.run([sys.executable, "-m", "vectree.cli", *flags, "search", "glacier melt", "--store",
                           str(store.root)], capture_output=True, text=True, env=_env(), timeout=300)


def test_model_progress_bars_are_silent_unless_verbose(one_paper_store):
    quiet = _search(one_paper_store)
    assert quiet.returncode == 0, quiet.stderr
    assert "Glacier Melt Dynamics" in quiet.stdout
    assert "Loading weights" not in quiet.stderr and "it/s" not in quiet.stderr, quiet.stderr
    verbose = _search(one_paper_store, "--verbose")
    assert verbose.returncode == 0, verbose.stderr
    # the same process with --verbose shows the library's bar: the silence above is ours
    assert "Loading weights" in verbose.stderr


def test_bench_cli_prints_a_table_beside_python(one_paper_store):
    proc = subprocess.run([sys.executable, str(REPO / "benchmarks" / "bench_cli.py"), "--store",
                           str(one_paper_store.root), "--runs", "1", "--only", "model-free", "--markdown"],
                          capture_output=True, text=True, env=_env(), timeout=300)
    assert proc.returncode == 0, proc.stderr
    lines = [line for line in proc.stdout.splitlines() if line.startswith("| ")]
    assert lines[0].startswith("| kind | command |")
    commands = [line.split("|")[2].strip() for line in lines[1:]]
    assert commands[0] == "`python -c pass`" and "`vectree papers`" in commands and "`vectree status`" in commands
    for line in lines[1:]:
        assert float(line.split("|")[5]) > 0  # CPU seconds measured
