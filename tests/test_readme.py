"""The README is true: its quick start runs as written, its automation table matches the code,
and the Makefile targets it describes say what it says they say."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import dagster as dg
import pytest

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text()


def section(title: str) -> str:
    start = README.index(f"\n## {title}\n")
    end = README.find("\n## ", start + 1)
    return README[start:end if end > 0 else None]


def bash_blocks(text: str) -> list[str]:
    return re.findall(r"```bash\n(.*?)```", text, flags=re.S)


def quick_start_commands() -> list[str]:
    lines = [line.strip() for block in bash_blocks(section("Quick start")) for line in block.splitlines()]
    return [line for line in lines if line and not line.startswith("#")]


def test_the_quick_start_is_vectree_commands_only():
    commands = quick_start_commands()
    assert commands[0].startswith("vectree demo")
    for c in commands:
        word = shlex.split(c, comments=True)[0]
        assert word in ("vectree", "export"), f"the quick-start test cannot run {c!r}"


# what each quick-start command must print (a command not listed here fails the test: the README
# must not gain a command nobody checks)
EXPECT = {
    "vectree demo": ["wrote 8 demo papers", "8 papers, ", "demo store:", ".vectree-demo", "Ask your own"],
    "export": [],
    "vectree papers": ["calendar-ageing-nmc811-", "helix212-dataset-"],
    "vectree tree": ["✓", "Calendar Ageing", "sections,"],
    "vectree page": ["helix212-dataset-", "p.3"],
    "vectree search": ["Calendar Ageing", "calendar-ageing-nmc811-"],
    "vectree ask": ["A:", "✓ helix212-dataset-", "offline agent"],
}


def test_quick_start_runs_as_written_in_a_fresh_directory(tmp_path):
    commands = quick_start_commands()
    work = tmp_path / "clone"
    work.mkdir()
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    # `vectree` on PATH is this checkout's CLI, as `source .venv/bin/activate` would give
    shim = bin_dir / "vectree"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m vectree.cli "$@"\n')
    shim.chmod(0o755)
    script = ["set -e"]
    for i, c in enumerate(commands):
        script += [f"echo '@@@ {i}'", c]
    env = {k: v for k, v in os.environ.items() if not k.startswith("VECTREE_")}
    env.update(PATH=f"{bin_dir}{os.pathsep}{env['PATH']}", PYTHONPATH=str(REPO), COLUMNS="120")
    proc = subprocess.run(["bash", "-c", "\n".join(script)], cwd=work, env=env, capture_output=True, text=True,
                          timeout=1500)
    assert proc.returncode == 0, f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    outputs = dict(re.findall(r"@@@ (\d+)\n(.*?)(?=@@@ \d+\n|\Z)", proc.stdout, flags=re.S))
    assert len(outputs) == len(commands)
    for i, c in enumerate(commands):
        key = next((k for k in EXPECT if c.startswith(k)), None)
        assert key is not None, f"no expectation for the README command {c!r}"
        flat = " ".join(outputs[str(i)].split())
        for fragment in EXPECT[key]:
            assert fragment in flat, f"{c!r} did not print {fragment!r}:\n{outputs[str(i)][-2000:]}"
    # the demo went to its own store, not to the default store of the user's papers
    assert (work / ".vectree-demo" / "docs.parquet").exists()
    assert not (work / ".vectree").exists()
    assert "Loading weights" not in proc.stderr  # progress bars stay silent without --verbose


def automation_table() -> dict[str, dict[str, str]]:
    rows = {}
    for line in section("The Dagster UI").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 4 and cells[0].startswith("`"):
            rows[cells[0].strip("`")] = {"kind": cells[1], "when": cells[2], "default": cells[3]}
    return rows


def test_the_automation_table_matches_the_code():
    from vectree.pipelines.definitions import defs

    table = automation_table()
    code = {s.name: s for s in defs.sensors} | {s.name: s for s in defs.schedules}
    assert set(table) == set(code)
    for name, row in table.items():
        status = code[name].default_status
        running = status in (dg.DefaultSensorStatus.RUNNING, dg.DefaultScheduleStatus.RUNNING)
        assert row["default"] == ("running" if running else "stopped"), name
        if isinstance(code[name], dg.ScheduleDefinition):
            assert f"`{code[name].cron_schedule}` {code[name].execution_timezone}" in row["when"], name
        elif name == "corpus_sensor":
            assert f"every {code[name].minimum_interval_seconds} s" in row["when"]


def test_make_ui_prints_the_url_before_starting_dagster():
    out = subprocess.run(["make", "-n", "ui", "UI_PORT=3123"], cwd=REPO, capture_output=True, text=True).stdout
    lines = out.splitlines()
    url = next(i for i, line in enumerate(lines) if "http://127.0.0.1:3123" in line)
    start = next(i for i, line in enumerate(lines) if "dagster dev" in line)
    assert lines[url].startswith("echo") and url < start
    assert "-p 3123" in lines[start] and "-h 127.0.0.1" in lines[start]


def test_make_demo_says_where_its_store_is():
    out = subprocess.run(["make", "-n", "demo"], cwd=REPO, capture_output=True, text=True).stdout
    [say] = [line for line in out.splitlines() if line.startswith("echo") and "demo store" in line]
    assert ".vectree-demo" in say
    assert "vectree demo --store .vectree-demo" in out


@pytest.mark.parametrize("shot", re.findall(r"!\[[^\]]*\]\(([^)]+)\)", README))
def test_every_image_the_readme_shows_exists(shot):
    assert (REPO / shot).is_file(), shot
