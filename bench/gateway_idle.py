"""Benchmark of an idle fleet's Redis traffic: how many commands per second a fleet that has
nothing to do sends its Redis, by command, with the model gateway on (`MODEL_CALLS=gateway`).

- **Fleet:** `python -m harness.cli up` in a fresh project folder with default settings and
  `MODEL_CALLS=gateway` (plus `--env`), on a Redis of this benchmark's own (an embedded
  `redis-server`, `REDIS_URL`), so that its command counters see the fleet alone.
- **Measured:** after the fleet is ready and `--settle` seconds more (start-up's own traffic
  ends), Redis's counters are reset, and read again `--window` seconds later
  (`INFO commandstats`). A script's own commands are counted under their names too: the
  round trips are the scripts called (`evalsha`) and the other commands.

Usage: python -m bench.gateway_idle [--window 20] [--settle 5] [--env NAME=VALUE ...]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from bench.fleet_up import harness_up
from harness.fleet.embedded_redis import EmbeddedRedis
from tests.fakes.model_server import ModelServer

SCRIPT_COMMANDS = {
    "zrangebyscore", "lpop", "llen", "zcount", "del", "lpush", "ltrim", "hmget", "hget",
    "hset", "zadd", "zrem", "hincrby", "exists", "zscore", "expire",
}  # fmt: skip
"""Commands the engine's scripts run (also counted by Redis): shown apart from round trips."""


def idle_commands(window: float, settle: float, extra_env: dict[str, str]) -> dict[str, float]:
    """Commands per second, by command, a ready idle fleet sends its Redis over `window`
    seconds."""
    import redis

    with (
        tempfile.TemporaryDirectory() as folder,
        EmbeddedRedis(Path(folder) / "redis", persist=False) as server,
        ModelServer() as model,
    ):
        env = {"MODEL_CALLS": "gateway", "REDIS_URL": server.url, **extra_env}
        project = Path(folder) / "project"
        project.mkdir()
        with harness_up(model, env, project):
            time.sleep(settle)
            client = redis.Redis.from_url(server.url, decode_responses=True)
            client.config_resetstat()
            time.sleep(window)
            stats = client.info("commandstats")
            client.close()
    per_s = {name.removeprefix("cmdstat_"): s["calls"] / window for name, s in stats.items()}
    per_s.pop("info", None)
    per_s.pop("config|resetstat", None)
    return per_s


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--window", type=float, default=20.0, help="seconds counted")
    parser.add_argument("--settle", type=float, default=5.0, help="seconds after ready")
    parser.add_argument("--env", action="append", default=[], metavar="NAME=VALUE")
    args = parser.parse_args()
    extra = dict(item.split("=", 1) for item in args.env)
    per_s = idle_commands(args.window, args.settle, extra)
    trips = {k: v for k, v in per_s.items() if k not in SCRIPT_COMMANDS}
    print(f"round trips/s: {sum(trips.values()):.1f}")
    for name, rate in sorted(trips.items(), key=lambda item: -item[1]):
        print(f"  {name:24} {rate:8.2f}/s")
    inside = {k: v for k, v in per_s.items() if k in SCRIPT_COMMANDS}
    print(f"inside scripts/s: {sum(inside.values()):.1f}")


if __name__ == "__main__":
    main()
