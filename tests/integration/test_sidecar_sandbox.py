"""The sidecar's child inside bubblewrap: it still runs functions, and sees no more than it
should of the host."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.tools.sandbox import sandbox_mode
from tests.integration.conftest import ROOT
from tests.integration.sidecar_fleet import SidecarFleet

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(sandbox_mode("bwrap") != "bwrap", reason="bubblewrap cannot run here"),
]

PEEK = """
import os
from pathlib import Path

from harness.runtime import event, function


@function(id="peek", trigger=event("test/peek"))
def peek(ctx):
    return {{
        "project": Path("{root}/pyproject.toml").exists(),
        "home": Path(os.path.expanduser("~root")).joinpath(".bashrc").exists(),
        "secrets": sorted(k for k in os.environ if k.endswith(("_API_KEY", "_TOKEN"))),
        "workspace": Path("{workspace}/functions/peek.py").exists(),
    }}
"""


def test_sandboxed_sidecar_runs_functions_that_cannot_see_the_project(
    redis_url: str, tmp_path: Path
) -> None:
    # Given a sidecar whose children run in bubblewrap, and a secret in its environment
    fleet = SidecarFleet(
        redis_url=redis_url,
        workspace=tmp_path / "ws",
        extra_env={"SIDECAR_SANDBOX": "bwrap", "OPENAI_API_KEY": "sk-test-not-for-functions"},
    )
    fleet.functions.mkdir(parents=True)
    fleet.start("sidecar", "sidecar")
    try:
        # When a function that looks around is loaded and runs
        fleet.write("peek.py", PEEK.format(root=ROOT, workspace=fleet.workspace))
        fleet.wait_registered("peek")
        seen = fleet.result_of("test/peek", {})

        # Then it sees its workspace, but not the project folder, the home or any secret
        assert seen == {"project": False, "home": False, "secrets": [], "workspace": True}
    finally:
        fleet.stop()
