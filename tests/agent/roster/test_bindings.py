"""Which agent answers a message: `AGENT_BINDINGS`, the agents' `bindings:`, and their order."""

from __future__ import annotations

from typing import Any

import pytest

from harness.agent.networks import Networks, NetworkSpec
from harness.agent.networks.spec import SequenceRouter
from harness.agent.roster import DEFAULT_AGENT, AgentSpec, Binding, Roster
from harness.agent.roster.bindings import (
    OPERATOR,
    Bound,
    Target,
    describe,
    file_bindings,
    overlaps,
    parse_bindings,
    target_for,
)
from harness.events import MessageReceived


def _message(
    channel: str = "slack", chat: str = "C1", sender: str = "U1", team: str | None = None
) -> MessageReceived:
    meta: dict[str, Any] = {"team_id": team} if team else {}
    return MessageReceived.model_validate(
        {
            "message": "hi",
            "session_key": f"{channel}:{chat}",
            "channel": channel,
            "sender": {"id": sender},
            "destination": {"chat_id": chat},
            "channel_meta": meta,
        }
    )


def _roster(**bindings: list[dict[str, str]]) -> Roster:
    agents = {
        name: AgentSpec(
            name=name,
            description=f"The {name}.",
            bindings=tuple(Binding.model_validate(b) for b in found),
            path=f"agents/{name}/AGENT.md",
        )
        for name, found in bindings.items()
    }
    return Roster(agents=agents)


def _answerer(message: MessageReceived, roster: Roster, operator: tuple[Bound, ...]) -> str:
    """Who answers `message`, as a binding writes it (`coder`, `network:triage`)."""
    return str(target_for(message, roster, operator))


def test_parse_bindings_reads_every_form_of_the_grammar() -> None:
    # Given one entry of each form, with spaces, a new line and `*` for any chat
    text = "telegram=coder, slack:C0123 = researcher,\nslack:*:U777=triage, slack@T9:C1:U2=main"
    # When parsed
    bound = parse_bindings(text)
    # Then each names its fields and its agent, and reads back the same
    assert [(describe(b.binding), str(b.target)) for b in bound] == [
        ("telegram", "coder"),
        ("slack:C0123", "researcher"),
        ("slack:*:U777", "triage"),
        ("slack@T9:C1:U2", DEFAULT_AGENT),
    ]
    assert bound[2].binding == Binding(channel="slack", sender="U777")
    assert all(b.source == OPERATOR for b in bound)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("slack:C1", "is not channel"),
        ("=coder", "is not channel"),
        ("slack:C1=Coder", "not an agent's name"),
        ("slack:C1=a, slack:C1=b", "bound twice"),
        (":C1=coder", "channel"),
        ("slack:C1=network:", "not a network's name"),
        ("slack:C1=network:Triage", "not a network's name"),
        ("slack:C1=netwrk:triage", "nor network:<name>"),
        ("slack:C1=triage, slack:C1=network:triage", "bound twice"),
    ],
)
def test_parse_bindings_names_the_entry_that_is_wrong(text: str, expected: str) -> None:
    # Given a text with a bad entry
    # When parsed
    with pytest.raises(ValueError, match=expected) as raised:
        parse_bindings(text)
    # Then the error is one line
    assert "\n" not in str(raised.value)


def test_parse_bindings_of_nothing_binds_nothing() -> None:
    assert parse_bindings("") == ()
    assert parse_bindings(" , ") == ()


def test_target_for_picks_the_most_specific_binding() -> None:
    # Given the channel, one chat, and one sender in it bound to three agents
    roster = _roster(
        anyone=[{"channel": "slack"}],
        room=[{"channel": "slack", "chat_id": "C1"}],
        person=[{"channel": "slack", "chat_id": "C1", "sender": "U7"}],
    )
    # When messages arrive from each
    # Then the binding naming the most fields wins
    assert _answerer(_message(chat="C1", sender="U7"), roster, ()) == "person"
    assert _answerer(_message(chat="C1", sender="U1"), roster, ()) == "room"
    assert _answerer(_message(chat="C2"), roster, ()) == "anyone"
    assert _answerer(_message(channel="telegram"), roster, ()) == DEFAULT_AGENT


def test_target_for_prefers_the_operator_at_equal_specificity() -> None:
    # Given a file and AGENT_BINDINGS binding the same chat to different agents
    roster = _roster(coder=[{"channel": "slack", "chat_id": "C1"}])
    operator = parse_bindings("slack:C1=researcher")
    # When a message arrives there
    # Then the operator's agent answers
    assert _answerer(_message(chat="C1"), roster, operator) == "researcher"


def test_target_for_prefers_a_more_specific_file_binding_over_the_operator() -> None:
    # Given the operator binding the channel, a file binding one chat of it
    roster = _roster(coder=[{"channel": "slack", "chat_id": "C1"}])
    operator = parse_bindings("slack=researcher")
    # Then the file's, more specific, wins in that chat only
    assert _answerer(_message(chat="C1"), roster, operator) == "coder"
    assert _answerer(_message(chat="C2"), roster, operator) == "researcher"


def test_target_for_breaks_ties_between_files_by_agent_name_and_overlaps_says_so() -> None:
    # Given two files binding the same chat
    roster = _roster(zed=[{"channel": "slack"}], alpha=[{"channel": "slack"}])
    from_files = file_bindings(roster)
    # Then the agent whose name sorts first answers, and the tie is reported
    assert _answerer(_message(), roster, ()) == "alpha"
    [warning] = overlaps(from_files)
    assert "alpha" in warning and "zed" in warning


def test_overlaps_ignores_bindings_that_cannot_meet() -> None:
    # Given two chats of one channel, and an operator binding over a file's
    roster = _roster(
        a=[{"channel": "slack", "chat_id": "C1"}], b=[{"channel": "slack", "chat_id": "C2"}]
    )
    files = file_bindings(roster)
    operator = parse_bindings("slack:C1=c")
    # Then no tie is reported
    assert overlaps([*files, *operator]) == []


def test_target_for_matches_a_slack_workspace_by_its_team_id() -> None:
    # Given one Slack workspace bound to an agent
    operator = parse_bindings("slack@T1=ops")
    # Then its messages go there, another workspace's (or one without a team) do not
    assert _answerer(_message(team="T1"), Roster(), operator) == "ops"
    assert _answerer(_message(team="T2"), Roster(), operator) == DEFAULT_AGENT
    assert _answerer(_message(), Roster(), operator) == DEFAULT_AGENT


def test_target_for_returns_a_bound_name_the_roster_lacks() -> None:
    # Given the operator binding a chat to an agent with no file
    operator = parse_bindings("slack=ghost")
    # Then the name comes back (the handler falls back to the default agent)
    assert _answerer(_message(), Roster(), operator) == "ghost"


def _networks(**bindings: list[dict[str, str]]) -> Networks:
    specs = {
        name: NetworkSpec(
            name=name,
            description=f"The {name} network.",
            agents=("coder",),
            router=SequenceRouter(kind="sequence", order=("coder",)),
            bindings=tuple(Binding.model_validate(b) for b in found),
            path=f"networks/{name}.md",
        )
        for name, found in bindings.items()
    }
    return Networks(networks=specs)


def test_parse_bindings_reads_a_network_target() -> None:
    # Given an entry binding a chat to a network, and one to an agent
    bound = parse_bindings("slack:C1=network:triage, slack:C2=triage")
    # Then the first names the network, the second the agent of the same name, each reading
    # back as written
    assert [b.target for b in bound] == [Target("triage", "network"), Target("triage")]
    assert [str(b) for b in bound] == ["slack:C1=network:triage", "slack:C2=triage"]
    assert Target.parse("network:triage") == bound[0].target


def test_target_for_finds_a_network_bound_by_its_file() -> None:
    # Given a network file binding one chat, and an agent file binding the whole channel
    roster = _roster(coder=[{"channel": "slack"}])
    networks = _networks(triage=[{"channel": "slack", "chat_id": "C1"}])
    # Then that chat goes to the network (more specific), the others to the agent
    assert target_for(_message(chat="C1"), roster, (), networks) == Target("triage", "network")
    assert target_for(_message(chat="C2"), roster, (), networks) == Target("coder")
    # and without the networks given, no network is bound
    assert target_for(_message(chat="C1"), roster, ()) == Target("coder")


def test_target_for_prefers_the_operator_over_a_network_file_at_equal_specificity() -> None:
    # Given a network file and AGENT_BINDINGS binding the same chat
    networks = _networks(triage=[{"channel": "slack", "chat_id": "C1"}])
    operator = parse_bindings("slack:C1=coder, slack:C2=network:triage")
    # Then the operator's target answers in each
    assert target_for(_message(chat="C1"), Roster(), operator, networks) == Target("coder")
    assert target_for(_message(chat="C2"), Roster(), operator, networks).is_network


def test_overlaps_reports_a_tie_between_an_agent_file_and_a_network_file() -> None:
    # Given an agent file and a network file binding the same channel
    roster = _roster(coder=[{"channel": "slack"}])
    networks = _networks(triage=[{"channel": "slack"}])
    # Then the tie is reported, naming the network as written
    [warning] = overlaps(file_bindings(roster, networks))
    assert "slack=network:triage (networks/triage.md)" in warning, warning
