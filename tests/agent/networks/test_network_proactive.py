"""A network started with a `reply` speaks into the chat outside its turn: its answer joins
the chat's transcript (`harness.agent.proactive`)."""

from __future__ import annotations

from tests.agent.networks.conftest import NetworkRig


def test_a_networks_answer_to_a_chat_is_kept_in_its_transcript(network: NetworkRig) -> None:
    # Given a network run answering chat-1 (here: a network that does not exist)
    network.start("nowhere", "triage the inbox")
    # Then what it said to the chat is in the chat's session, once, marked as the network's
    kept = [line for line in network.agent.session_lines("chat-1") if line.get("proactive")]
    assert len(kept) == 1 and kept[0]["source"] == "network", kept
    assert kept[0]["message"]["text"] == network.agent.replies()[-1]
