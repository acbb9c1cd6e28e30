"""Packaging: one installed namespace, ``vectree``, for both regular and editable installs.

The regular install is checked for real: the wheel is built from the working tree, installed into
a fresh virtual environment, and ``vectree --help`` runs from a folder outside the repository (so
nothing can be imported from the checkout by accident).  Dependencies come from the test's own
environment through a ``.pth`` file instead of a second download of torch and Dagster.
"""

from __future__ import annotations

import importlib.metadata
import os
import site
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def _tracked_package_files() -> set[str]:
    """Files git tracks under ``vectree/`` (the symlinked rooms at the top are the same files)."""
    out = subprocess.run(["git", "ls-files", "vectree"], cwd=REPO, capture_output=True, text=True, check=True)
    return {line for line in out.stdout.splitlines() if line and "__pycache__" not in line}


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out), str(REPO)],
        check=True, capture_output=True, text=True,
    )
    (whl,) = out.glob("vectree-*.whl")
    return whl


@pytest.mark.slow
def test_wheel_holds_only_the_vectree_namespace_and_every_package_file(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    top = {n.split("/", 1)[0] for n in names}
    assert {t for t in top if not t.endswith(".dist-info")} == {"vectree"}, top
    # every tracked file of the package (code, model weights, web assets) travels in the wheel
    missing = sorted(f for f in _tracked_package_files() if f not in set(names) and not f.endswith(".pyc"))
    assert not missing, f"package files not in the wheel (add them to package-data): {missing[:10]}"


@pytest.mark.slow
def test_wheel_installs_into_a_fresh_venv_and_runs(wheel, tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    py = venv / "bin" / "python"
    # the wheel's dependencies are already installed here: reuse them instead of downloading again
    purelib = Path(subprocess.check_output([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], text=True).strip())
    deps = [p for p in site.getsitepackages() if Path(p).exists()]
    (purelib / "_deps_from_test_env.pth").write_text("\n".join(deps) + "\n")
    before = {p.name for p in purelib.iterdir()}
    subprocess.run([str(py), "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--ignore-installed", str(wheel)], check=True)
    added = {p.name for p in purelib.iterdir()} - before
    assert {n for n in added if not n.endswith(".dist-info")} == {"vectree"}, added
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    run = subprocess.run([str(venv / "bin" / "vectree"), "--help"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    assert "ingest" in run.stdout and "ask" in run.stdout
    where = subprocess.check_output([str(py), "-c", "import vectree.retrieval.store as s; print(s.__file__)"], cwd=tmp_path, env=env, text=True)
    assert where.startswith(str(purelib)), where


def test_the_installed_distribution_names_one_top_level_package():
    """The install this suite runs under (editable in ``make test``) adds only ``vectree`` names."""
    purelib = sysconfig.get_paths()["purelib"]
    (dist,) = [d for d in importlib.metadata.distributions(path=[purelib]) if d.metadata["Name"] == "vectree"]
    tops = {str(f).split("/", 1)[0] for f in dist.files or []}
    tops = {t for t in tops if not t.endswith(".dist-info") and t not in ("..", "__pycache__")}
    # editable: a .pth and a finder module named after the project; regular: the package itself
    assert tops and all(t == "vectree" or t.startswith("__editable__") and "vectree" in t for t in tops), tops


def test_the_rooms_at_the_top_are_views_of_the_one_package():
    for room in ("retrieval", "agent", "assets", "pipelines", "service", "evaluation"):
        link = REPO / room
        assert link.is_symlink() and link.resolve() == (REPO / "vectree" / room).resolve(), room
