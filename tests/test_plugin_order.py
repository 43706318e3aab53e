"""The project's own plug-ins come first under its distribution name, `harness-agents`, as a
wheel installs it (and as `harness_agents`, as an installer may write it)."""

from __future__ import annotations

from pathlib import Path

from harness import plugins
from tests.fakes.installed_package import installed_package

GROUP = "harness.packaging-test"  # a group of its own: no real plug-in interferes


def test_entry_points_of_the_harness_agents_distribution_count_as_the_projects_own(
    tmp_path: Path,
) -> None:
    # Given the project installed as `harness_agents` and a third-party package whose name
    # sorts before it, each declaring one entry point
    own = {"zeta": "tests.test_plugin_order:GROUP"}
    theirs = {"alpha": "tests.test_plugin_order:GROUP"}
    with (
        installed_package(tmp_path / "own", "harness_agents", GROUP, own, lambda: None),
        installed_package(tmp_path / "other", "aaa-other", GROUP, theirs, lambda: None),
    ):
        # When the group's entry points are listed
        declared = [ep.name for ep in plugins.declared(GROUP)]
    # Then the project's own come first, once, then the other package's
    assert declared == ["zeta", "alpha"], declared
