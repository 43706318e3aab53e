"""The built wheel carries what a non-editable install needs: the shipped skills, the
workspace template's files (and no developer's workspace), and `py.typed`; unpacked, the
package reads them from inside itself. Builds with `pip wheel` (fetches the build backend)."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = "harness/_shipped"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(out), str(ROOT)],
        check=True, capture_output=True, timeout=240,
    )  # fmt: skip
    (built,) = out.glob("*.whl")
    return built


def test_wheel_holds_the_shipped_skills_template_and_py_typed(wheel: Path) -> None:
    # Given the built wheel
    names = set(zipfile.ZipFile(wheel).namelist())
    # Then every tracked skill and template file is inside the package, and both packages
    # are marked typed
    skills = {f"{SHIPPED}/skills/{p.name}" for p in (ROOT / "skills").glob("*.md")}
    assert skills and skills <= names, sorted(skills - names)
    for template in ("SOUL.md", "USER.md", "MEMORY.md", "functions/example_ping.py"):
        assert f"{SHIPPED}/workspace/{template}" in names, template
    assert {"harness/py.typed", "channels/py.typed"} <= names
    # And nothing from a developer's own workspace (daily memory, sessions) or its .gitignore
    stray = [n for n in names if n.startswith(f"{SHIPPED}/workspace/") and (
        "/memory/" in n or "/sessions/" in n or n.endswith(".gitignore"))]  # fmt: skip
    assert not stray, stray
    assert not any(n.startswith(("workspace/", "skills/")) for n in names)


def test_unpacked_wheel_reads_the_shipped_folders_from_its_package(
    wheel: Path, tmp_path: Path
) -> None:
    # Given the wheel unpacked where no repository is beside it
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    probe = (
        "from harness.agent.workspace import default_shipped_skills, default_template\n"
        "print(default_template()); print(default_shipped_skills())"
    )
    # When the package says where its template and skills are
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=tmp_path, capture_output=True, text=True, check=True,
        env={**os.environ, "PYTHONPATH": str(site)},
    )  # fmt: skip
    # Then both are inside the unpacked package
    template, skills = done.stdout.split()
    assert Path(template) == site / SHIPPED / "workspace", done.stdout
    assert Path(skills) == site / SHIPPED / "skills", done.stdout
    assert (Path(template) / "SOUL.md").is_file()
