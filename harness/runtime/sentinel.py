"""Reaching Redis through Sentinel: the master's address is asked of the Sentinels, never fixed.

`REDIS_SENTINELS` (`host:port,host:port`) and `REDIS_SENTINEL_MASTER` name a monitored master.
Every client built here (the runtime's sync and async clients, the kicker's broker client,
and Celery's broker through kombu's `sentinel://` transport) asks the Sentinels where the
master is before it connects, and again after a connection to it fails, so after a failover
the next attempt reaches the promoted replica. What callers see during the failover itself is
the ordinary connection error, handled like any Redis outage (503 + Retry-After at the web,
retries in workers and the scheduler).

`REDIS_SENTINEL_TLS` puts every one of those connections under TLS: to the Sentinels
(`sentinel_kwargs`) and to the master (redis-py's `ssl=True`; kombu's `broker_use_ssl`), with
the certificates verified against `REDIS_SENTINEL_TLS_CA_CERTS` or the system's trust store.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import redis
import redis.asyncio.sentinel
import redis.sentinel
from redis.asyncio import BlockingConnectionPool
from redis.asyncio import Redis as AsyncRedis

from harness.errors import ConfigurationError
from harness.runtime.bus_errors import redis_errors
from harness.runtime.settings import EngineSettings

SOCKET_TIMEOUT_S = 5.0
"""Connect and read timeout towards the Sentinels, so a dead one costs seconds, not forever."""


@dataclass(frozen=True)
class TlsOptions:
    """How to reach TLS Sentinels and servers: whose certificates to trust (None: the system's
    store), the client certificate and key to show (None: none), whether to check host names.
    Servers' certificates are always verified."""

    ca_certs: str | None = None
    certfile: str | None = None
    keyfile: str | None = None
    check_hostname: bool = True

    def ssl_kwargs(self) -> dict[str, Any]:
        """redis-py's `ssl_*` connection arguments (also kombu's `broker_use_ssl` for Redis)."""
        options: dict[str, Any] = {
            "ssl_cert_reqs": "required",
            "ssl_check_hostname": self.check_hostname,
        }
        for name, value in (
            ("ssl_ca_certs", self.ca_certs),
            ("ssl_certfile", self.certfile),
            ("ssl_keyfile", self.keyfile),
        ):
            if value is not None:
                options[name] = value
        return options


@dataclass(frozen=True)
class SentinelTarget:
    """A master monitored by Sentinels, and the passwords to reach both. Building clients from
    it never touches the network."""

    sentinels: tuple[tuple[str, int], ...]
    master: str
    password: str | None = None
    sentinel_password: str | None = None
    tls: TlsOptions | None = None

    def describe(self) -> str:
        """`sentinel://host:port,host:port/master`, without passwords."""
        hosts = ",".join(f"{_host(host)}:{port}" for host, port in self.sentinels)
        return f"sentinel://{hosts}/{self.master}"

    def _sentinel_kwargs(self) -> dict[str, Any]:
        options: dict[str, Any] = {"socket_timeout": SOCKET_TIMEOUT_S}
        if self.sentinel_password:
            options["password"] = self.sentinel_password
        return {**options, **self._tls_kwargs()}

    def _tls_kwargs(self) -> dict[str, Any]:
        """redis-py's arguments for TLS (`ssl=True` and the `ssl_*` options), or none."""
        return {"ssl": True, **self.tls.ssl_kwargs()} if self.tls is not None else {}

    def sync_client(self) -> redis.Redis:
        """A blocking client of the current master (decoded strings)."""
        manager = redis.sentinel.Sentinel(  # type: ignore[no-untyped-call, unused-ignore]
            list(self.sentinels), sentinel_kwargs=self._sentinel_kwargs(),
            password=self.password, socket_connect_timeout=5, health_check_interval=30,
            **self._tls_kwargs(),
        )  # fmt: skip
        client: redis.Redis = manager.master_for(  # type: ignore[no-untyped-call, unused-ignore]
            self.master, connection_pool_class=_SentinelPool, decode_responses=True
        )
        return client

    def async_client(self, max_connections: int, timeout: float) -> AsyncRedis:
        """An async client of the current master whose pool holds at most `max_connections`;
        a request beyond them waits up to `timeout` seconds for one, as `async_pool` does."""
        manager = redis.asyncio.sentinel.Sentinel(  # type: ignore[no-untyped-call, unused-ignore]
            list(self.sentinels), sentinel_kwargs=self._sentinel_kwargs(),
            password=self.password, socket_connect_timeout=5, health_check_interval=30,
            **self._tls_kwargs(),
        )  # fmt: skip
        client: AsyncRedis = manager.master_for(
            self.master, connection_pool_class=_BlockingSentinelPool, decode_responses=True,
            max_connections=max_connections, timeout=timeout,
        )  # fmt: skip
        return client

    def broker_url(self) -> str:
        """Celery's broker URL for kombu's Sentinel transport: one `sentinel://` per Sentinel,
        the master's password in each (kombu reads it from there)."""
        auth = f":{quote(self.password, safe='')}@" if self.password else ""
        return ";".join(f"sentinel://{auth}{_host(host)}:{port}/0" for host, port in self.sentinels)

    def broker_options(self) -> dict[str, Any]:
        """Celery's `broker_transport_options` for that URL: the master's name, and how to
        reach the Sentinels (their password and TLS)."""
        return {"master_name": self.master, "sentinel_kwargs": self._sentinel_kwargs()}

    def broker_use_ssl(self) -> dict[str, Any] | None:
        """Celery's `broker_use_ssl` for that URL: the `ssl_*` options of the connections to
        the master (kombu then uses its Sentinel-managed TLS connection), or None without TLS."""
        return self.tls.ssl_kwargs() if self.tls is not None else None

    def master_address(self) -> tuple[str, int]:
        """Where the Sentinels say the master is now. Raises `BusUnavailableError` when no
        Sentinel answers or none knows the master."""
        manager = redis.sentinel.Sentinel(  # type: ignore[no-untyped-call, unused-ignore]
            list(self.sentinels), sentinel_kwargs=self._sentinel_kwargs()
        )
        try:  # MasterNotFoundError is a RedisError
            with redis_errors(f"find master {self.master!r} through the Sentinels"):
                host, port = manager.discover_master(self.master)  # type: ignore[no-untyped-call, unused-ignore]
        finally:
            for sentinel in manager.sentinels:
                sentinel.close()
        return str(host), int(port)


class _SentinelPool(redis.sentinel.SentinelConnectionPool):
    """Sentinel's pool whose `disconnect` (closing the client) also closes the connections
    to the Sentinels themselves, which redis-py leaves open."""

    def disconnect(self, inuse_connections: bool = True) -> None:
        super().disconnect(inuse_connections)
        for sentinel in self.sentinel_manager.sentinels:
            sentinel.close()


class _BlockingSentinelPool(redis.asyncio.sentinel.SentinelConnectionPool, BlockingConnectionPool):
    """Sentinel's pool with `BlockingConnectionPool`'s bound: the Sentinel pool finds the
    master, the blocking pool makes the 65th concurrent request wait instead of failing.
    Its `disconnect` also closes the connections to the Sentinels, as `_SentinelPool`'s."""

    async def disconnect(self, inuse_connections: bool = True) -> None:
        await super().disconnect(inuse_connections)
        for sentinel in self.sentinel_manager.sentinels:
            await sentinel.aclose()


def sentinel_target(settings: EngineSettings) -> SentinelTarget | None:
    """The Sentinel setup `settings` name, or None when `REDIS_SENTINELS` is unset.

    Raises `ConfigurationError` (one line) for a malformed list or a missing master name."""
    listed = [item.strip() for item in settings.redis_sentinels.split(",") if item.strip()]
    if not listed:
        return None
    if not settings.redis_sentinel_master.strip():
        raise ConfigurationError(
            "REDIS_SENTINELS is set but REDIS_SENTINEL_MASTER is not: name the monitored "
            "master, e.g. REDIS_SENTINEL_MASTER=mymaster"
        )
    password = settings.redis_password
    sentinel_password = settings.redis_sentinel_password
    return SentinelTarget(
        sentinels=tuple(_address(item) for item in listed),
        master=settings.redis_sentinel_master.strip(),
        password=password.get_secret_value() if password else None,
        sentinel_password=sentinel_password.get_secret_value() if sentinel_password else None,
        tls=_tls_options(settings),
    )


def _tls_options(settings: EngineSettings) -> TlsOptions | None:
    """The TLS options `settings` name, None when `REDIS_SENTINEL_TLS` is off. Raises
    `ConfigurationError` for certificate settings without TLS, or a certificate without key."""
    files = {
        "REDIS_SENTINEL_TLS_CA_CERTS": settings.redis_sentinel_tls_ca_certs,
        "REDIS_SENTINEL_TLS_CERTFILE": settings.redis_sentinel_tls_certfile,
        "REDIS_SENTINEL_TLS_KEYFILE": settings.redis_sentinel_tls_keyfile,
    }
    if not settings.redis_sentinel_tls:
        named = [name for name, value in files.items() if value is not None]
        if named:
            raise ConfigurationError(
                f"{', '.join(named)} set but REDIS_SENTINEL_TLS is not: set "
                "REDIS_SENTINEL_TLS=true to reach the Sentinels and Redis over TLS"
            )
        return None
    certfile, keyfile = settings.redis_sentinel_tls_certfile, settings.redis_sentinel_tls_keyfile
    if (certfile is None) != (keyfile is None):
        raise ConfigurationError(
            "REDIS_SENTINEL_TLS_CERTFILE and REDIS_SENTINEL_TLS_KEYFILE go together: "
            "set both for a client certificate, or neither"
        )
    ca_certs = settings.redis_sentinel_tls_ca_certs
    return TlsOptions(
        ca_certs=str(ca_certs) if ca_certs is not None else None,
        certfile=str(certfile) if certfile is not None else None,
        keyfile=str(keyfile) if keyfile is not None else None,
        check_hostname=settings.redis_sentinel_tls_check_hostname,
    )


def _host(host: str) -> str:
    """`host` as it goes in a URL: an IPv6 address in brackets."""
    return f"[{host}]" if ":" in host else host


def _address(item: str) -> tuple[str, int]:
    host, _, port = item.rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ConfigurationError(
            f"REDIS_SENTINELS: {item!r} is not host:port "
            "(e.g. REDIS_SENTINELS=10.0.0.1:26379,10.0.0.2:26379)"
        )
    return host.strip("[]"), int(port)
