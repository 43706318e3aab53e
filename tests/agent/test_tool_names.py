"""The tool names `harness agents` lists without importing the tools
(`harness.agent.tool_names`) are those of the registries the fleet builds, in the same order,
under every setting that changes them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from harness.agent.tool_names import fleet_tool_names, subagent_tool_names
from harness.agent.tool_sets import fleet_tools, subagent_tools
from harness.settings import Settings
from harness.tools.builtin import builtin_tools
from harness.tools.catalog import BUILTIN_NAMES, ToolSettings


def _settings(tmp_path: Path, **values: Any) -> Settings:
    return Settings(_env_file=None, agent_workspace=tmp_path / "workspace", **values)  # type: ignore[call-arg]


@pytest.mark.parametrize("shell", [False, True])
@pytest.mark.parametrize("sidecar", [False, True])
def test_listed_names_are_the_built_registries_names(
    tmp_path: Path, shell: bool, sidecar: bool
) -> None:
    # Given settings with and without the shell and the sidecar
    settings = _settings(tmp_path, agent_allow_shell=shell, sidecar_enabled=sidecar)
    # When the names are listed without building the tools, and the registries are built
    listed = (fleet_tool_names(settings), subagent_tool_names(settings))
    built = (fleet_tools(settings).names(), subagent_tools(settings).names())
    # Then they are the same names in the same order
    assert listed == built, f"harness.agent.tool_names lists {listed}, the fleet builds {built}"


@pytest.mark.parametrize("shell", [False, True])
def test_builtin_names_are_the_builtin_tools(shell: bool) -> None:
    # Given the built-in tools made with and without the shell
    made = [tool.name for tool in builtin_tools(ToolSettings(allow_shell=shell))]
    # Then BUILTIN_NAMES names them in order, bash last where the shell is allowed
    assert made == [*BUILTIN_NAMES, *(["bash"] if shell else [])], made
