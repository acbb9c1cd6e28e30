"""The import-linter contracts in ``pyproject.toml`` (layers, independence, evaluation on top, the
demo beside the product, no cycles) hold, and they do fail on a back arrow.

Both run ``lint-imports`` in a fresh interpreter with the checkout first on the path, so the graph
is the one of this source tree (an installed copy of vectree cannot mask a broken contract).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LINT = "import sys; from importlinter.cli import lint_imports_command; sys.exit(lint_imports_command())"


def _lint_imports(root: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run(
        [sys.executable, "-c", LINT, "--no-cache", "--no-logo"],
        cwd=root, env=env, capture_output=True, text=True, timeout=300,
    )


def test_import_contracts_hold():
    res = _lint_imports(ROOT)
    out = res.stdout + res.stderr
    assert res.returncode == 0, f"lint-imports found a broken contract:\n{out}"
    assert "0 broken" in out
    # every contract in pyproject.toml was checked (a renamed root package would check nothing)
    n_contracts = (ROOT / "pyproject.toml").read_text().count("[[tool.importlinter.contracts]]")
    assert n_contracts >= 6
    assert f"Contracts: {n_contracts} kept, 0 broken." in out


def test_a_back_import_breaks_the_contracts(tmp_path):
    """A copy of the tree where the store imports the agent: the layers and no-cycles contracts
    name that import and lint-imports fails."""
    shutil.copytree(ROOT / "vectree", tmp_path / "vectree", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    store = tmp_path / "vectree" / "retrieval" / "store.py"
    store.write_text(store.read_text() + "\nimport vectree.agent.tools  # a deliberate back arrow\n")
    res = _lint_imports(tmp_path)
    out = res.stdout + res.stderr
    assert res.returncode == 1, out
    assert "vectree.retrieval is not allowed to import vectree.agent" in out
    assert "vectree.retrieval.store -> vectree.agent.tools" in out
    assert "No import cycles between sibling modules or packages, at any depth BROKEN" in out
