"""`conforms`: what `isinstance` says about a runtime-checkable protocol, decided once per
class."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from channels.base import RecoveringChannel, RefreshingChannel, recovering, refreshing
from channels.drafts import DraftingChannel, drafting
from channels.telegram.channel import TelegramChannel
from harness.protocol_checks import conforms
from tests.channels.conftest import telegram_settings
from tests.fakes.telegram_api import FakeTelegramApi


@runtime_checkable
class _Greeter(Protocol):
    """A protocol with a data member: `isinstance` looks its members up at every call."""

    greeting: str

    def greet(self) -> str: ...


class _Friendly:
    greeting = "hello"

    def greet(self) -> str:
        return self.greeting


class _Silent:
    pass


def test_conforms_answers_as_isinstance_and_once_per_class() -> None:
    # Given a class with the protocol's member and one without
    # Then conforms says what isinstance says
    assert conforms(_Friendly(), _Greeter) and isinstance(_Friendly(), _Greeter)
    assert not conforms(_Silent(), _Greeter) and not isinstance(_Silent(), _Greeter)
    # And the answer is the class's, remembered: a member taken away later is not looked up
    # again (a class's instances all have the same members)
    del _Friendly.greeting
    assert not isinstance(_Friendly(), _Greeter)
    assert conforms(_Friendly(), _Greeter)


def test_the_channel_checks_say_what_isinstance_says(telegram_api: FakeTelegramApi) -> None:
    # Given the Telegram channel, which drafts, repeats its typing, and cannot find what it
    # posted
    channel = TelegramChannel(telegram_settings(telegram_api))
    # Then each check agrees with the protocol's isinstance, and None drafts nothing
    assert drafting(channel) is isinstance(channel, DraftingChannel) is True
    assert refreshing(channel) is isinstance(channel, RefreshingChannel) is True
    assert recovering(channel) is isinstance(channel, RecoveringChannel)
    assert drafting(None) is False
