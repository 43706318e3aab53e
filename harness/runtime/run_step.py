"""The `step.run` family: a function's result recorded once per run, retried when it raises.

`RunSteps` is the part of the step API (`harness.runtime.steps.Step`) that runs the caller's
own code: `run` for one call, `run_all` for independent calls at once (their threads in
`harness.runtime.step_batch`). It decides what is recorded for a result or a failure, and
when a failure is tried again (`harness.runtime.retries`).
"""

from __future__ import annotations

import functools
import json
import traceback
from collections.abc import Callable, Sequence
from typing import Any, NoReturn, TypeVar, cast

from harness.errors import NonRetriableError, StepFailedError, StepResultError
from harness.observe.tracing import StepSpan
from harness.redaction import redact
from harness.runtime import log_context
from harness.runtime.previews import step_preview, usage_of
from harness.runtime.retries import backoff_seconds, retry_after, within_retry_budget
from harness.runtime.run_state import RunState, Suspended
from harness.runtime.step_batch import Ran, run_concurrently
from harness.runtime.step_counters import step_counts
from harness.runtime.step_observers import CommittedStep, notify

T = TypeVar("T")
_MAX_ERROR_CHARS = 2000
MAX_TRACEBACK_CHARS = 8000
"""The most of a failure's traceback a journal entry keeps (its last lines: where it raised)."""


class RunSteps:
    """Steps that run a function of the handler's (see the module docstring)."""

    def __init__(self, state: RunState) -> None:
        self._s = state

    def run(self, step_id: str, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run `fn(*args, **kwargs)` once per run and return its JSON result.

        On replay the recorded result is returned without calling `fn`. An exception is
        retried with backoff up to the function's `retries`; then (or at once for
        `NonRetriableError`) `StepFailedError` is raised here, now and on every replay.
        A result that is not JSON-serialisable raises `StepResultError` (not retried).
        An exception with a `retry_for` attribute (seconds: a rate limit, an overloaded
        server) is retried past `retries` until that long after the step first failed.
        The value returned is the JSON round trip of `fn`'s result (tuples become lists),
        so the first execution and every replay see the same thing.
        """
        key = self._s.step_key(step_id)
        rec = self._s.recorded(key, "run")
        if rec is not None:
            if "v" in rec:
                return rec["v"]  # type: ignore[no-any-return]
            if rec.get("final"):
                raise StepFailedError(step_id, rec["e"])
        failures = int(rec.get("n", 0)) if rec else 0
        first_failed = int(rec.get("f", rec.get("s", 0))) if rec else 0
        self._s.check_stop()
        self._s.attempt = failures
        log_context.STEP.set(key)
        span = self._s.span.step(key, "run", failures + 1)
        outer, self._s.running = self._s.running, (key, failures)
        try:
            return self._run_once(key, step_id, span, (failures, first_failed), fn, args, kwargs)
        finally:
            self._s.running = outer
            span.end()

    def run_all(
        self, step_id: str, fn: Callable[..., T], calls: Sequence[tuple[Any, ...]], *, workers: int
    ) -> list[T | StepFailedError]:
        """`run(step_id, fn, *args)` for each `args` of `calls`, at most `workers` at once:
        the results in call order, a step that failed for good as its `StepFailedError`.

        The steps get the keys `run` called in this order would give them, all taken before
        any runs, so a journal written by sequential `run`s replays here and the other way
        round. Each result is recorded as soon as its call returns (a crash mid-batch loses
        only the calls still running). A failure to be retried is recorded, and parks the
        run, once the other calls have ended; calls that failed besides it run again on the
        resume. A result that cannot be stored as JSON fails its step for good."""
        keys = [self._s.step_key(step_id) for _ in calls]
        results: dict[int, T | StepFailedError] = {}
        todo: dict[int, tuple[int, int]] = {}  # index: failures so far, when the first began
        for index, key in enumerate(keys):
            rec = self._s.recorded(key, "run")
            if rec is not None and "v" in rec:
                results[index] = rec["v"]
            elif rec is not None and rec.get("final"):
                results[index] = StepFailedError(step_id, rec["e"])
            else:
                todo[index] = (
                    (int(rec.get("n", 0)), int(rec.get("f", rec.get("s", 0)))) if rec else (0, 0)
                )
        if not todo:
            return [results[i] for i in range(len(calls))]
        self._s.check_stop()
        order = list(todo)
        spans = {i: self._s.span.step(keys[i], "run", todo[i][0] + 1) for i in order}
        retry: list[tuple[int, Exception, int]] = []  # index, error, when it started

        def done(position: int, ran: Ran) -> None:
            index = order[position]
            key, failed, span = keys[index], todo[index], spans[index]
            try:
                if ran.error is None:
                    run = (failed[0], ran.started_ms)
                    results[index] = self._record(
                        key, step_id, span, run, ran.value, calls[index], {}
                    )
                elif self._final(ran.error, failed[0], failed[1] or ran.started_ms):
                    self._failed(key, step_id, ran.error, failed, ran.started_ms, span)
                else:
                    retry.append((index, ran.error, ran.started_ms))
                    return
            except (StepFailedError, StepResultError) as exc:
                results[index] = _as_failure(step_id, exc)
            span.end()

        self._s.batches += 1  # in flight until its last record (`leases.hand_back` waits)
        try:
            jobs = [functools.partial(_keyed, keys[i], fn, calls[i]) for i in order]
            now_ms = self._s.runtime.now_ms
            run_concurrently(jobs, workers=workers, now_ms=now_ms, done=done)
            for index, error, started in sorted(retry, key=lambda item: item[0]):
                try:  # parks the run (raises `Suspended`), unless the failure is final now
                    self._failed(keys[index], step_id, error, todo[index], started, spans[index])
                except StepFailedError as exc:
                    results[index] = exc
        finally:
            self._s.batches -= 1
            for span in spans.values():
                span.end()
        return [results[i] for i in range(len(calls))]

    def _run_once(
        self,
        key: str,
        step_id: str,
        span: StepSpan,
        failed: tuple[int, int],
        fn: Callable[..., T],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
    ) -> T:
        """`failed`: the failures so far and when the first began (ms; 0 for none)."""
        started = self._s.runtime.now_ms()
        try:
            value = fn(*args, **kwargs)
        except Exception as exc:
            self._failed(key, step_id, exc, failed, started, span)
        return self._record(key, step_id, span, (failed[0], started), value, args, kwargs)

    def _failed(
        self,
        key: str,
        step_id: str,
        exc: Exception,
        failed: tuple[int, int],
        started: int,
        span: StepSpan,
    ) -> NoReturn:
        """Record that the step's function raised `exc` (`failed`: the failures before this
        one, and when the first began; 0 for none) and raise, as `_fail` does."""
        failures, first_failed = failed
        first_failed = first_failed or started
        final = self._final(exc, failures, first_failed)
        self._fail(key, step_id, exc, (failures + 1, first_failed), started, span, final=final)

    def _final(self, exc: Exception, failures: int, first_failed: int) -> bool:
        """Whether the failure `exc`, after `failures` earlier ones, is not tried again."""
        if isinstance(exc, NonRetriableError):
            return True
        return failures >= self._s.spec.retries and not within_retry_budget(
            exc, first_failed, self._s.runtime.now_ms()
        )

    def _record(
        self,
        key: str,
        step_id: str,
        span: StepSpan,
        run: tuple[int, int],
        value: T,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
    ) -> T:
        """Record `value` as step `key`'s result (`run`: the failures before this try, and
        when it started) and return its JSON round trip."""
        failures, started = run
        ended = self._s.runtime.now_ms()
        stamps = f'"s":{started},"t":{ended},"n":{failures + 1}'
        try:
            encoded = json.dumps(value, separators=(",", ":"), allow_nan=False)
        except (TypeError, ValueError) as exc:
            message = (
                f"step {step_id!r} returned a {type(value).__name__}, which cannot be stored as "
                f"JSON ({exc}); return plain data: dict, list, str, int, float, bool or None"
            )
            span.failed(message, "StepResultError", final=True)
            self._s.commit(
                key,
                "{" + stamps + ',"k":"run","final":true,"e":' + json.dumps(message) + "}",
                tries=failures + 1,
            )
            raise StepResultError(message) from exc
        usage = usage_of(value)
        extra = step_preview(args, kwargs, usage) if self._s.runtime.record_previews else ""
        record = "{" + stamps + ',"k":"run","v":' + encoded + extra + "}"
        # The journal keeps its own copy of the value (the caller may change what it gets);
        # the previews are not parsed back, nothing in this execution reads them.
        entry = {"s": started, "t": ended, "n": failures + 1, "k": "run",
                 "v": json.loads(encoded)}  # fmt: skip
        s = self._s
        s.commit(key, record, entry, step_counts(s.spec.id, started, ended, usage), failures + 1)
        if usage is not None:
            span.model_call(cast(dict[str, Any], value), usage)
        if s.runtime.step_observers:  # most runtimes have none: no record built per step
            step = CommittedStep(s.run_id, s.spec.id, s.event, key, usage, ended, started)
            notify(s.runtime.step_observers, step)
        return json.loads(encoded)  # type: ignore[no-any-return]

    def _fail(
        self,
        key: str,
        step_id: str,
        exc: Exception,
        failed: tuple[int, int],
        started_ms: int,
        span: StepSpan,
        *,
        final: bool,
    ) -> NoReturn:
        """Record the failure (`failed`: failures counting this one, and when the first of
        them began); raise `StepFailedError` when `final`, else park the run for the retry."""
        failures, first_failed = failed
        text = _error_text(exc)
        span.failed(text, type(exc).__name__, final=final)
        record = {
            "k": "run",
            "e": text,
            "tb": traceback_text(exc),
            "n": failures,
            "f": first_failed,
            "s": started_ms,
            "t": self._s.runtime.now_ms(),
        }
        if final:
            self._s.commit(key, json.dumps({**record, "final": True}), tries=failures)
            raise StepFailedError(step_id, text) from exc
        self._s.commit(key, json.dumps(record), tries=failures)
        s = self._s
        delay = max(backoff_seconds(s.runtime.retry_backoff, failures), retry_after(exc))
        self._s.suspend(key, "retry", s.runtime.now_ms() + int(delay * 1000))
        raise Suspended()


def _error_text(exc: BaseException) -> str:
    return redact(f"{type(exc).__name__}: {exc}")[:_MAX_ERROR_CHARS]


def traceback_text(exc: BaseException) -> str:
    """`exc`'s formatted traceback, redacted, at most `MAX_TRACEBACK_CHARS` (the end kept: the
    frame that raised matters most). Stored with a step's failure (`tb`) for the dashboard.
    Never raises."""
    try:
        text = "".join(traceback.format_exception(exc))
    except Exception:  # a broken __str__ must not hide the failure itself
        text = f"{type(exc).__name__} (its traceback could not be formatted)"
    text = redact(text)
    if len(text) > MAX_TRACEBACK_CHARS:
        text = "...\n" + text[-(MAX_TRACEBACK_CHARS - 4) :]
    return text


def _keyed(key: str, fn: Callable[..., T], args: tuple[Any, ...]) -> T:
    """`fn(*args)`, its log lines marked with the step's key (in a batch's thread)."""
    log_context.STEP.set(key)
    return fn(*args)


def _as_failure(step_id: str, exc: StepFailedError | StepResultError) -> StepFailedError:
    return exc if isinstance(exc, StepFailedError) else StepFailedError(step_id, str(exc))
