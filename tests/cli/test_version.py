"""`harness --version` and `python -m harness`: the distribution's name and version, printed
without loading the command line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from harness.cli import app
from harness.version import DISTRIBUTION, installed_version

ROOT = Path(__file__).resolve().parents[2]


def test_version_option_prints_the_distribution_and_its_version() -> None:
    # Given the command line
    # When `harness --version` runs
    result = CliRunner().invoke(app, ["--version"])
    # Then it prints the distribution's name and version and exits 0
    assert result.exit_code == 0, result.output
    assert result.output.strip() == f"{DISTRIBUTION} {installed_version()}"


def test_python_m_harness_answers_version_without_loading_the_command_line() -> None:
    # Given `python -m harness --version` in a fresh interpreter
    probe = (
        "import sys; sys.argv = ['harness', '--version']\n"
        "from harness.__main__ import main; main()\n"
        "print('cli loaded' if 'harness.cli' in sys.modules else 'cli not loaded')"
    )
    # When it runs
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True
    )
    # Then it prints the version, and the command line (which imports every command) is not
    # loaded for it
    lines = done.stdout.splitlines()
    assert lines[0].startswith(f"{DISTRIBUTION} "), done.stdout
    assert lines[-1] == "cli not loaded", done.stdout


def test_python_m_harness_runs_the_command_line() -> None:
    # Given `python -m harness --help`
    done = subprocess.run(
        [sys.executable, "-m", "harness", "--help"], cwd=ROOT, capture_output=True, text=True
    )
    # Then it shows the commands
    assert done.returncode == 0, done.stderr
    assert "Run the fleet" in done.stdout, done.stdout
