"""The approval policy: which tool calls wait for a person, and how a request reads."""

from __future__ import annotations

import pytest

from harness.agent.approvals.policy import ApprovalPolicy, summarize_call


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("bash", {"command": "rm -rf ~"}),
        ("write", {"path": "functions/send_mail.py", "content": "x"}),
        ("edit", {"path": "./functions/../functions/a.py", "edits": []}),
        ("delegate_scheduled_task", {"task": "email the customer"}),
    ],
    ids=["bash", "write-functions", "edit-functions", "scheduled"],
)
def test_policy_risky_asks_for_shell_functions_and_scheduled_work(
    tool: str, arguments: dict[str, object]
) -> None:
    # Given the default policy / When a risky call comes / Then it must wait for a person
    assert ApprovalPolicy(mode="risky").needs_approval(tool, arguments), f"{tool} should ask"


@pytest.mark.parametrize(
    "path",
    [".git/config", ".git", "vendor/lib/.git/config", ".home/.gitconfig", ".home/.npmrc"],
)
def test_policy_risky_asks_for_a_write_of_config_a_program_runs_commands_from(path: str) -> None:
    # Given the default policy (a repository's .git/config, or a dotfile in the sandbox's HOME,
    # names commands that git, npm or a shell run, even under an exact allowlist entry)
    policy = ApprovalPolicy(mode="risky", allow=("git status",))
    # When the agent writes or edits such a file (or a `.git` gitdir file)
    # Then it must wait for a person
    assert policy.needs_approval("write", {"path": path, "content": "x"}), path
    assert policy.needs_approval("edit", {"path": path, "edits": []}), path


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("read", {"path": ".git/config"}),
        ("write", {"path": ".gitignore", "content": "x"}),
        ("write", {"path": "notes/.github/home.md", "content": "x"}),
        ("read", {"path": "functions/a.py"}),
        ("write", {"path": "notes/functions.md", "content": "x"}),
        ("web_fetch", {"url": "https://example.com"}),
    ],
    ids=["read-git", "write-gitignore", "write-dotted", "read", "write-elsewhere", "fetch"],
)
def test_policy_risky_lets_harmless_calls_run(tool: str, arguments: dict[str, object]) -> None:
    assert not ApprovalPolicy(mode="risky").needs_approval(tool, arguments), f"{tool} asked"


def test_policy_off_never_asks_and_all_always_asks() -> None:
    assert not ApprovalPolicy(mode="off").needs_approval("bash", {"command": "rm -rf /"})
    assert ApprovalPolicy(mode="all").needs_approval("read", {"path": "a.md"})


def test_policy_allowlist_matches_exact_commands_and_patterns() -> None:
    # Given AGENT_APPROVAL_ALLOW="ls *, git status"
    policy = ApprovalPolicy.from_settings("risky", "ls *, git status,")
    # Then those run without asking, and anything else asks
    assert not policy.needs_approval("bash", {"command": "git status"})
    assert not policy.needs_approval("bash", {"command": "ls -la notes"})
    assert policy.needs_approval("bash", {"command": "git push"})


@pytest.mark.parametrize("command", ["ls; rm -rf ~", "ls && curl x | sh", "ls > x", "ls $(rm a)"])
def test_policy_allowlist_pattern_never_lets_a_chained_command_through(command: str) -> None:
    policy = ApprovalPolicy.from_settings("risky", "ls *")
    assert policy.needs_approval("bash", {"command": command}), f"{command!r} slipped through"


def test_policy_session_grant_skips_asking_for_that_tool_only() -> None:
    policy = ApprovalPolicy(mode="risky")
    assert not policy.needs_approval("bash", {"command": "make"}, granted=["bash"])
    assert policy.needs_approval("write", {"path": "functions/a.py"}, granted=["bash"])


def test_summary_shows_the_change_and_is_truncated() -> None:
    # Given an edit and a very long command
    edit = summarize_call(
        "edit", {"path": "functions/a.py", "edits": [{"old_text": "x = 1", "new_text": "x = 2"}]}
    )
    long = summarize_call("bash", {"command": "echo " + "a" * 5000})
    # Then the edit shows path, old and new, and the long one is cut with a note
    assert edit == "edit functions/a.py\n- x = 1\n+ x = 2"
    assert len(long) <= 1500 and long.endswith("(truncated)")


def test_policy_risky_asks_for_a_tool_that_declares_itself_risky() -> None:
    # Given an MCP tool from a server not marked safe (Tool.risky) / Then risky mode asks
    policy = ApprovalPolicy(mode="risky")
    assert policy.needs_approval("github__create_issue", {}, risky=True)
    assert not policy.needs_approval("github__list_issues", {}, risky=False)


@pytest.mark.parametrize("command", ["git -c core.pager=sh log", "find . -exec id {} +"])
def test_policy_allowlist_wildcard_over_a_runner_still_asks(command: str) -> None:
    # Given AGENT_APPROVAL_ALLOW="git *,find *" / When git or find is given an exec option
    policy = ApprovalPolicy.from_settings("risky", "git *,find *")
    # Then it asks
    assert policy.needs_approval("bash", {"command": command}), f"{command!r} slipped through"


def test_policy_tainted_turn_asks_for_an_allowlisted_or_granted_risky_call() -> None:
    # Given `ls *` allowlisted and bash granted for the session
    policy = ApprovalPolicy.from_settings("risky", "ls *")
    ls = {"command": "ls -la"}
    assert not policy.needs_approval("bash", ls)
    assert not policy.needs_approval("bash", {"command": "make"}, granted=["bash"])
    # When the turn has read outside content / Then both ask
    assert policy.needs_approval("bash", ls, tainted=True)
    assert policy.needs_approval("bash", {"command": "make"}, granted=["bash"], tainted=True)


def test_policy_tainted_turn_changes_nothing_for_harmless_calls_or_in_off_mode() -> None:
    # Given a tainted turn
    # Then a granted harmless call in `all` mode, a harmless call in `risky` mode and
    # anything in `off` mode run as before
    assert not ApprovalPolicy(mode="all").needs_approval(
        "read", {"path": "a.md"}, granted=["read"], tainted=True
    )
    assert not ApprovalPolicy(mode="risky").needs_approval("web_fetch", {}, tainted=True)
    off = ApprovalPolicy.from_settings("off", "ls *")
    assert not off.needs_approval("bash", {"command": "rm -rf ~"}, tainted=True)
