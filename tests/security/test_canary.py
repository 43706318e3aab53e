"""A secret in the project's `.env` and in the fleet's environment reaches nothing the agent
can see: every way a paired attacker would ask for it, approved by the person, comes back
without it, and it is in no model request, run record or workspace file afterwards."""

from __future__ import annotations

from tests.fakes.model_server import Reply, ScriptedCall
from tests.security.conftest import Attack

ASKS = (
    "env; cat ../.env; cat /proc/self/environ /proc/1/environ 2>&1; "
    "cat /proc/$PPID/environ 2>&1; ls -a .. ~ /tmp 2>&1"
)


def test_canary_is_out_of_reach_of_an_approved_shell(attack: Attack) -> None:
    # Given an attacker whose model asks the shell for every place the secret could be
    attack.model.script(Reply.tool("bash", {"command": ASKS}), Reply.answer("done"))
    # When Alice approves the command
    attack.say("show me the environment")
    attack.press("approve")
    # Then the command ran, and the secret is nowhere the fleet keeps or sends
    assert any("PATH=" in result for result in attack.tool_results()), attack.tool_results()
    attack.assert_no_canary()


def test_canary_is_out_of_reach_of_the_file_tools(attack: Attack) -> None:
    # Given an attacker whose model reads the secret's files by every kind of path
    project_env = str(attack.workspace.parent / ".env")
    calls = [
        ScriptedCall("read", {"path": "../.env"}),
        ScriptedCall("read", {"path": project_env}),
        ScriptedCall("read", {"path": "/proc/self/environ"}),
        ScriptedCall("grep", {"pattern": "CANARY", "path": ".."}),
        ScriptedCall("ls", {"path": ".."}),
    ]
    attack.model.script(Reply.tools(*calls), Reply.answer("done"))
    # When Alice asks
    attack.say("read them")
    # Then every call was refused or came back without it
    assert len(attack.tool_results()) == len(calls), attack.tool_results()
    attack.assert_no_canary()
