"""The Celery seam: the app, the one task (`harness.kick`) and the kicker that sends it.

Celery only carries kicks. Acks stay early on purpose: the run ledger, not the broker,
decides who runs what, and the scheduler re-kicks whatever a dead worker dropped. A worker
takes a kick only when a thread is free to run it (`worker_disable_prefetch`), so a kick is
either in the broker or being handled, and the broker's backlog tells the scheduler whether
an outstanding kick can still arrive. Its threads are `harness.runtime.worker_pool`'s, which
wake the consumer as each task ends so a freed thread reads the next kick at once. Its Redis
transports are `harness.runtime.broker_transport`'s, which let the consumer reconnect after
Redis goes away with a channel still open.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import uuid
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qsl, quote, urlsplit

from celery import Celery
from celery.signals import worker_shutting_down
from kombu.entity import Exchange, Queue
from redis.asyncio import BlockingConnectionPool
from redis.asyncio import Redis as AsyncRedis

from harness.errors import BusUnavailableError, ConfigurationError
from harness.runtime import broker_transport
from harness.runtime.bus_errors import redis_errors
from harness.runtime.executor import advance
from harness.runtime.functions import DEFAULT_QUEUE, WORKER_QUEUES
from harness.runtime.instance import Runtime
from harness.runtime.kicker import KICK_TASK, Kick
from harness.runtime.leases import hand_back
from harness.runtime.worker_pool import POOL

log = logging.getLogger(__name__)


def _queue(name: str) -> Queue:
    """Queue `name` as Celery declares a queue it was not told of: a direct exchange of the
    same name, routed by it (how the kicks' messages name their queue, `kick_template`)."""
    return Queue(name, Exchange(name, "direct"), routing_key=name)  # type: ignore[no-untyped-call]


broker_transport.install()
app = Celery("harness")
app.conf.update(
    task_serializer="json",
    accept_content=["json"],
    task_ignore_result=True,
    task_acks_late=False,
    # Celery 6's default, set now: after a lost broker connection it cancels the running
    # tasks that ack late, which a kick never is (above), so it cancels nothing here; left
    # unset, every reconnect prints a deprecation notice of ten lines into the worker's log
    worker_cancel_long_running_tasks_on_connection_loss=True,
    worker_prefetch_multiplier=1,
    worker_disable_prefetch=True,
    broker_connection_retry_on_startup=True,
    worker_hijack_root_logger=False,
    task_default_queue=DEFAULT_QUEUE,
    # What a worker told no queues (`-Q`) consumes: the runs' queue and the replies' delivery
    # (`celery -A ... worker` too), each as Celery would make it (a direct exchange of its name)
    task_queues=[_queue(name) for name in WORKER_QUEUES],
    # Celery's thread pool, waking the consumer when a task ends (see the module). Set here,
    # not on the command line, which names only Celery's own pools.
    worker_pool=POOL,
)


_runtime_provider: Callable[[], Runtime] | None = None
_redis_url = ""  # the broker as redis-py names it (`configure`), for `kick_async`'s pool


def kombu_url(url: str) -> str:
    """`url` as kombu names it: redis-py's `unix:///path.sock?db=N&password=P` (a Redis
    reached over a UNIX socket) becomes `redis+socket://[:P@]/path.sock?virtual_host=N`;
    any other URL is returned as it is."""
    parts = urlsplit(url)
    if parts.scheme != "unix":
        return url
    query = dict(parse_qsl(parts.query))
    user = parts.username or query.get("username") or ""
    password = parts.password or query.get("password") or ""
    auth = f"{quote(user, safe='')}:{quote(password, safe='')}@" if user or password else ""
    db = query.get("db", "0")
    return f"redis+socket://{auth}{parts.path}" + (f"?virtual_host={db}" if db != "0" else "")


def configure(
    broker_url: str,
    runtime_provider: Callable[[], Runtime] | None = None,
    transport_options: dict[str, Any] | None = None,
    use_ssl: dict[str, Any] | None = None,
) -> Celery:
    """Point the app at a broker, named as redis-py names it (a `unix://` socket URL is
    translated for kombu: `kombu_url`). Call before sending or consuming.

    A consuming process also passes `runtime_provider`, the runtime its kick task advances
    runs in (`harness.runtime.assembly` passes `get_runtime`); senders need none.
    `transport_options` are kombu's (Sentinel's `master_name`); None clears them. kombu's
    acknowledgement emulation is always off: it writes each kick to an unacked hash and index
    when it is read and deletes it when it is acked, two more round trips per kick, to restore
    it after an hour (its visibility timeout). Kicks are acked as they start, and the
    scheduler re-kicks a lost one within seconds (module docstring). `use_ssl`
    is Celery's `broker_use_ssl` (the `ssl_*` options of TLS to a Sentinel-named master);
    None turns it off (a `rediss://` URL carries its own).
    """
    global _runtime_provider, _redis_url
    _redis_url = broker_url
    app.conf.broker_url = kombu_url(broker_url)
    app.conf.broker_transport_options = {"ack_emulation": False, **(transport_options or {})}
    app.conf.broker_use_ssl = use_ssl or False
    if runtime_provider is not None:
        _runtime_provider = runtime_provider
    return app


@app.task(name=KICK_TASK, ignore_result=True)  # type: ignore[untyped-decorator]
def kick(run_id: str, seq: int = 0) -> str:
    """Advance one run in this worker. Duplicates and stale kicks are no-ops. `seq` is the
    kick's number in its queue (absent in kicks sent before kicks were numbered).

    Redis failing meanwhile (down, restarting) is one warning line, not a traceback: the run
    keeps its state in Redis and the reaper kicks it again once Redis is back (the task's
    message is already acknowledged, so raising would retry nothing either).

    Raises `ConfigurationError` when `configure` was given no runtime provider."""
    if _runtime_provider is None:
        raise ConfigurationError("the kick task has no runtime: call configure(url, provider)")
    try:
        with redis_errors("advance the run"):
            return advance(_runtime_provider(), run_id, seq)
    except BusUnavailableError as exc:
        log.warning(
            "run %s: Redis failed while advancing it (%s); the reaper kicks it again",
            run_id, type(exc.__cause__ or exc).__name__,
        )  # fmt: skip
        return REDIS_FAILED


REDIS_FAILED = "redis-failed"
"""What the kick task returns when Redis failed while it advanced the run."""


def _missing_queue(exc: Exception) -> bool:
    """kombu's answer for a queue with no messages (its lists are deleted when empty)."""
    return type(exc).__name__ == "ChannelError" or getattr(exc, "code", None) == 404


def _push_front(kick: Kick) -> bool:
    """RPUSH `kick` onto its queue's list through the broker connection's Redis client;
    False when the broker is not Redis (kombu's channel has no such client)."""
    with app.connection_or_acquire() as conn:
        client = getattr(conn.default_channel, "client", None)
        if client is None or not hasattr(client, "rpush"):
            return False
        client.rpush(kick.queue, kick_message(kick))
        return True


def kick_message(kick: Kick) -> bytes:
    """The `harness.kick` task message for `kick` as kombu's Redis transport puts it on the
    queue's list: `kick_template()` filled in, as the runtime's scripts fill it."""
    return fill_template(kick_template(), str(uuid.uuid4()), kick).encode()


def kick_template() -> str:
    """The `harness.kick` task message with `@ID@`, `@RUN@`, `@SEQ@` and `@QUEUE@` to fill in:
    task protocol 2, a JSON body left unencoded (kombu reads a body without `body_encoding` as
    it is), the queue's direct exchange."""
    message = app.amqp.as_task_v2("@ID@", KICK_TASK, args=["@RUN@", _SEQ_MARK])
    body = json.dumps(message.body, separators=(",", ":"))
    headers = {**message.headers, "argsrepr": "['@RUN@', @SEQ@]"}
    properties = {
        **message.properties,
        "delivery_mode": 2,
        "delivery_info": {"exchange": "@QUEUE@", "routing_key": "@QUEUE@"},
        "priority": 0,
        "delivery_tag": "@ID@",
    }
    envelope = {
        "body": body,
        "content-encoding": "utf-8",
        "content-type": "application/json",
        "headers": headers,
        "properties": properties,
    }
    text = json.dumps(envelope, separators=(",", ":"))
    if text.count(str(_SEQ_MARK)) != 1:
        raise AssertionError("the kick message changed shape: its sequence number is not unique")
    return text.replace(str(_SEQ_MARK), "@SEQ@")


_SEQ_MARK = 918_273_645_546_372_819  # a number no other field of the message holds


def fill_template(template: str, message_id: str, kick: Kick) -> str:
    """`template` (see `kick_template`) for `kick`, filled in as the Lua scripts fill it."""
    queue = json.dumps(kick.queue)[1:-1]
    return (
        template.replace("@ID@", json.dumps(message_id)[1:-1])
        .replace("@RUN@", kick.run_id)
        .replace("@SEQ@", str(kick.seq))
        .replace("@QUEUE@", queue)
    )


@worker_shutting_down.connect  # type: ignore[untyped-decorator]
def _hand_back_runs(**_: object) -> None:
    """A worker told to stop (SIGTERM, SIGINT) hands the runs it executes back at once, so
    other workers resume them now rather than when their leases expire."""
    if _runtime_provider is not None:
        hand_back(_runtime_provider())


class CeleryKicker:
    """Sends kicks as Celery messages to the run's queue.

    `kick_async` writes the message straight onto the broker's list for the queue with an
    async Redis client (the broker is the runtime's Redis), as kombu's Redis transport would,
    so an event loop never waits on kombu's blocking client; with another broker it sends
    through kombu in a thread. `broker_factory` builds that client when the broker URL alone
    cannot (Sentinel); it is called once, on the first async kick.
    """

    def __init__(
        self,
        broker_factory: Callable[[], AsyncRedis] | None = None,
        *,
        in_script: bool = False,
    ) -> None:
        self._broker: AsyncRedis | None = None
        self._broker_factory = broker_factory
        self._in_script = in_script
        self._template = ""

    def script_template(self) -> str:
        """The kick message for the runtime's scripts to push, when this kicker was built
        `in_script` (its broker is the runtime's Redis); else ""."""
        if self._in_script and not self._template:
            self._template = json.dumps(re.split(r"@(ID|RUN|SEQ|QUEUE)@", kick_template()))
        return self._template

    def kick(self, kick: Kick) -> None:
        """Publish one kick. Broker errors are logged, not raised: the reaper re-kicks.

        A `front` kick is pushed onto the end of the queue's list that kombu's Redis transport
        pops from (it pushes with LPUSH and consumes with BRPOP), so the next free worker
        thread takes it; with a broker other than Redis it is sent like any other."""
        try:
            if kick.front and _push_front(kick):
                return
            app.send_task(KICK_TASK, args=[kick.run_id, kick.seq], queue=kick.queue)
        except Exception as exc:  # kombu raises several unrelated types on broker trouble
            log.warning(
                "could not send kick for run %s (%s); the reaper will retry", kick.run_id, exc
            )

    async def kick_async(self, kick: Kick) -> None:
        """`kick` without blocking the event loop. Broker errors are logged, not raised."""
        url = _redis_url
        if self._broker is None and self._broker_factory is not None:
            self._broker = self._broker_factory()
        elif self._broker is None and url.startswith(("redis://", "rediss://", "unix://")):
            pool = BlockingConnectionPool.from_url(url, max_connections=64, timeout=10)
            self._broker = AsyncRedis(connection_pool=pool)
        if self._broker is None:
            await asyncio.to_thread(self.kick, kick)
            return
        try:
            if kick.front:
                await self._broker.rpush(kick.queue, kick_message(kick))
            else:
                await self._broker.lpush(kick.queue, kick_message(kick))
        except Exception as exc:  # redis raises several types on broker trouble
            log.warning(
                "could not send kick for run %s (%s); the reaper will retry", kick.run_id, exc
            )

    async def aclose(self) -> None:
        """Close the async broker client, if one was opened. Idempotent."""
        broker, self._broker = self._broker, None
        if broker is not None:
            await broker.aclose(close_connection_pool=True)

    def backlog(self, queue: str) -> int | None:
        """Messages waiting in `queue` on the broker; 0 when it has none; None when the
        broker cannot be asked."""
        try:
            with app.connection_or_acquire() as conn:
                try:
                    return int(conn.default_channel.queue_declare(queue=queue, passive=True)[1])
                except Exception as exc:
                    # Answered here, inside the block: an error leaving it discards the pooled
                    # connection, and the next look opens two new ones. An idle queue is a
                    # missing one (kombu deletes empty lists), so the scheduler's look every
                    # second opened 2 connections per queue on an idle fleet.
                    if _missing_queue(exc):
                        return 0
                    raise
        except Exception as exc:  # kombu raises several unrelated types on broker trouble
            log.debug("could not read the backlog of queue %s: %s", queue, exc)
            return None
