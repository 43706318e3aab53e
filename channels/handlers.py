"""The channels' functions on the bus, gathered for workers to load (`channels.handlers`).

Each function finds its channel in `channels.registry` by the event's `channel` field, so none
knows a platform. Events of channels that are not registered (the terminal `cli`, the HTTP API)
are skipped: their clients read replies from the events stream.

    agent.reply.ready       -> send-reply              post the chunks once each, then complete
    agent.file.ready        -> send-reply              post a file the agent sends, once, in
                                                       order with the chat's replies
    function.failed         -> global-failure-handler  "Sorry - something went wrong", once
    function.cancelled      -> reconsider-notice       "Got your new message - reconsidering."
    agent.approval.requested -> ask-approval           the request, with buttons
    agent.approval.given    -> answer-approval         first allowed answer wins (see approvals)
    agent.approval.closed   -> close-approval          the request shows it expired / was cancelled
    function.cancelled      -> cancel-approval         a cancelled turn's request is closed

`acknowledge-message` is registered too, triggered by nothing: a run of it parked before the
acknowledgement became part of the turn (`channels.acknowledge`) finishes when it wakes.
"""

from __future__ import annotations

from channels.acknowledge import acknowledge_message
from channels.approvals import answer_approval, ask_approval, cancel_approval, close_approval
from channels.delivery import send_reply
from channels.notices import reconsider_notice, tell_user_about_failure

FUNCTIONS = (
    acknowledge_message,
    send_reply,
    tell_user_about_failure,
    reconsider_notice,
    ask_approval,
    answer_approval,
    close_approval,
    cancel_approval,
)
"""Every channel function, for tests that register them on their own registry."""
