"""Names of every Redis key the runtime uses, in one place.

Everything lives under one prefix (`HARNESS_KEY_PREFIX`, default `harness`), so that several
deployments can share a Redis and `redis-cli --scan --pattern 'harness:*'` shows all of ours.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Keys:
    """Key names under a prefix. Lua scripts build per-run keys from the same prefix."""

    prefix: str = "harness"

    @property
    def functions(self) -> str:
        """Hash: function id -> JSON spec (the trigger table)."""
        return f"{self.prefix}:functions"

    @property
    def functions_version(self) -> str:
        """Counter bumped on every change of the trigger table, for cheap cache checks."""
        return f"{self.prefix}:functions:version"

    def call(self, call_id: str) -> str:
        """Hash: an offloaded call (`harness.runtime.calls`): its run, step, request, lease
        token and, once settled, its outcome."""
        return f"{self.prefix}:call:{call_id}"

    def calls(self, service: str) -> str:
        """List: the calls of `service` offered to the gateways, in arrival order."""
        return f"{self.prefix}:calls:{service}"

    def call_leases(self, service: str) -> str:
        """Sorted set: the calls of `service` gateways hold, by when their lease runs out."""
        return f"{self.prefix}:calls:{service}:leases"

    def call_wake(self, service: str) -> str:
        """List: wake tokens for `service`'s gateways, one pushed per call offered (capped),
        none while nothing is offered; a gateway waits on it (`AsyncCallBoard.wait`)."""
        return f"{self.prefix}:calls:{service}:wake"

    @property
    def call_stops(self) -> str:
        """Counter: runs that stopped waiting on an offloaded call other than by its outcome
        (cancelled, timed out), bumped by the run scripts (`index_status` in `prelude.lua`);
        a gateway checks its calls when it moves (`ModelGateway._tick`)."""
        return f"{self.prefix}:call-stops"

    def call_gateways(self, service: str) -> str:
        """Sorted set: the gateways serving `service`, by their last beat (ms); one that has
        not beaten within `calls.GATEWAY_TTL_S` is gone (`CallBoard.beat`)."""
        return f"{self.prefix}:calls:{service}:gateways"

    @property
    def events(self) -> str:
        """Capped stream of every accepted event."""
        return f"{self.prefix}:events"

    @property
    def replication_mark(self) -> str:
        """String written before a WAIT that must cover earlier writes (see `replication`)."""
        return f"{self.prefix}:replication-mark"

    @property
    def runs(self) -> str:
        """Sorted set of run ids by creation time, for listing."""
        return f"{self.prefix}:runs"

    def runs_of_function(self, function_id: str) -> str:
        """Sorted set of one function's run ids by creation time (written by the scripts)."""
        return f"{self.prefix}:runs:fn:{function_id}"

    def runs_of_session(self, session_key: str) -> str:
        """Sorted set of one chat session's run ids by creation time."""
        return f"{self.prefix}:runs:session:{session_key}"

    def runs_of_parent(self, run_id: str) -> str:
        """Sorted set of the ids of the runs `run_id` started (`step.invoke`), by creation."""
        return f"{self.prefix}:runs:parent:{run_id}"

    def runs_in_status(self, status: str) -> str:
        """Sorted set of the ids of runs now in `status`, by creation time."""
        return f"{self.prefix}:runs:status:{status}"

    @property
    def run_indexes(self) -> str:
        """Set: names of the function, session and parent run indexes, for the trim."""
        return f"{self.prefix}:runs:indexes"

    @property
    def run_indexes_built(self) -> str:
        """String, set once every run older than the indexes has been indexed."""
        return f"{self.prefix}:runs:indexes:built"

    @property
    def ready(self) -> str:
        """Sorted set of queued runs by the time they were last kicked."""
        return f"{self.prefix}:q:ready"

    @property
    def leases(self) -> str:
        """Sorted set of running runs by lease expiry."""
        return f"{self.prefix}:q:leases"

    @property
    def timers(self) -> str:
        """Sorted set of suspended runs by wake-up time."""
        return f"{self.prefix}:q:timers"

    @property
    def presence(self) -> str:
        """Sorted set of live fleet processes by their last heartbeat (ms)."""
        return f"{self.prefix}:presence"

    @property
    def presence_info(self) -> str:
        """Hash: fleet process id -> JSON of its role and queues."""
        return f"{self.prefix}:presence:info"

    def function_source(self, source: str) -> str:
        """Set: ids of the functions one source (e.g. the sidecar's files) registered."""
        return f"{self.prefix}:functions:source:{source}"

    @property
    def function_origins(self) -> str:
        """Hash: function id -> JSON origin (source, file) of functions registered by a source."""
        return f"{self.prefix}:functions:origins"

    def load_errors(self, source: str) -> str:
        """String: JSON list of the load errors of a source's last registration."""
        return f"{self.prefix}:functions:errors:{source}"

    def declarations(self, source: str) -> str:
        """String: JSON list of what a source's last registration declared besides functions
        (`function_sources.Declaration`: the networks of the sidecar's files)."""
        return f"{self.prefix}:functions:declarations:{source}"

    def function_failures(self, source: str) -> str:
        """List: JSON records of the latest failed runs of a source's functions, newest first."""
        return f"{self.prefix}:functions:failures:{source}"

    def run(self, run_id: str) -> str:
        """Hash: the run's ledger record."""
        return f"{self.prefix}:run:{run_id}"

    def journal(self, run_id: str) -> str:
        """Hash: step key -> JSON record of the step's outcome."""
        return f"{self.prefix}:run:{run_id}:steps"

    def inbox(self, run_id: str) -> str:
        """List: ids of runs whose events were handed to this run (steer mode)."""
        return f"{self.prefix}:run:{run_id}:inbox"

    def waiters(self, event_name: str) -> str:
        """Hash: run id -> JSON waiter, for runs that began `wait_for_event` on this event name
        before waiters were indexed (see `waiter_paths`)."""
        return f"{self.prefix}:waiters:{event_name}"

    def waiter_paths(self, event_name: str) -> str:
        """Hash: match path (`*` for none) -> how many runs wait for this event name with it.
        The runs wait in `<prefix>:waiting:<event name>:<bucket>` (`harness.runtime.waiters`)."""
        return f"{self.prefix}:waitpaths:{event_name}"

    def cron_last(self, function_id: str, index: int) -> str:
        """The last cron tick (ms) handled for one cron trigger of a function."""
        return f"{self.prefix}:cron:{function_id}:{index}:last"

    def cron_missed(self, function_id: str) -> str:
        """Sorted set of missed ticks (ms) of a function, for `harness runs` and alerts."""
        return f"{self.prefix}:cron:{function_id}:missed"

    def scheduler_heartbeat(self) -> str:
        """Hash: scheduler id -> last loop time, to show which schedulers are alive."""
        return f"{self.prefix}:schedulers"

    def reply_chunks(self, reply_id: str) -> str:
        """Hash: chunk index -> platform message id, for the chunks of one reply posted so far."""
        return f"{self.prefix}:reply:{reply_id}:chunks"

    def draft(self, run_id: str) -> str:
        """Hash: where one run's streamed draft is (`message_id`) and until when the platform
        wants it left alone (`quiet_until_ms`)."""
        return f"{self.prefix}:draft:{run_id}"

    def reply_begun(self, reply_id: str) -> str:
        """String: set by the first attempt to deliver one reply, before it posts anything."""
        return f"{self.prefix}:reply:{reply_id}:begun"

    @property
    def metrics_runs(self) -> str:
        """Hash: `<function id>\t<started|completed|failed|cancelled>` -> runs (the scripts)."""
        return f"{self.prefix}:metrics:runs"

    @property
    def metrics_reaper(self) -> str:
        """Hash: `lease_expiries`, `kicks_resent` -> how often the reaper did each (reap.lua)."""
        return f"{self.prefix}:metrics:reaper"

    @property
    def metrics_steps(self) -> str:
        """Hash: `<function id>\t<bucket index|sum_ms|count>` -> committed steps' durations."""
        return f"{self.prefix}:metrics:steps"

    @property
    def metrics_tokens(self) -> str:
        """Hash: `<model>\t<in|out|cr|cw|calls>` -> model tokens (and calls) since ever."""
        return f"{self.prefix}:metrics:tokens"

    def undelivered(self) -> str:
        """Hash: original reply id -> an undelivered reply (JSON), until it is redelivered."""
        return f"{self.prefix}:undelivered"

    def undelivered_of(self, channel: str, chat_id: str) -> str:
        """Set: the ids of one chat's undelivered replies (an index of `undelivered`)."""
        return f"{self.prefix}:undelivered:chat:{channel}:{chat_id}"

    def undelivered_indexed(self) -> str:
        """String, set once every undelivered reply kept before `undelivered_of` existed has
        been indexed by chat."""
        return f"{self.prefix}:undelivered:indexed"

    def listener_cursor(self, name: str) -> str:
        """String: where a listener (a polling channel) resumes, e.g. Telegram's update offset."""
        return f"{self.prefix}:{name}:offset"

    def progress(self, session_key: str) -> str:
        """Pub/sub channel: live progress of one chat session's runs."""
        return f"{self.prefix}:progress:{session_key}"

    def progress_pattern(self) -> str:
        """Pub/sub glob matching every session's progress channel (the prefix escaped)."""
        prefix = "".join(f"\\{c}" if c in "*?[]\\" else c for c in self.prefix)
        return f"{prefix}:progress:*"

    def file_lock(self, name: str) -> str:
        """String: the Redis lock on a shared file, `name` its path under the shared root
        (`harness.runtime.file_locks`)."""
        return f"{self.prefix}:lock:file:{name}"
