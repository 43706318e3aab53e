"""`harness runs`: recent runs, one run's timeline (`runs show`), `runs cancel`, `runs fork`
(alias `rerun`), `runs replay` (a determinism check), and `runs redeliver` for a reply that
delivery gave up on (marked `undelivered` in the list).

Run ids are printed in full, on a terminal (a table that never cuts the id column) and off
one (plain aligned columns, for grep and awk). `show` and `cancel` take any unique prefix of
a run id. `--json` prints the same data for machines.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict
from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Any

import typer

from harness.commands.exit_codes import FAILED
from harness.commands.follow import FollowTimeoutError, exit_code, follow_run, outcome_lines
from harness.commands.output import JsonOption, emit_json, print_rows
from harness.commands.progress import waiting
from harness.errors import RunNotFoundError
from harness.fleet_functions import function_modules
from harness.observe.child_runs import child_runs, children_cost_usd
from harness.observe.run_filters import RunFilter, find_runs
from harness.observe.run_views import RunView, StepView, resolve_run_id, run_view, step_views
from harness.records.stores import redis_records
from harness.redaction import redact_json
from harness.runtime import Runtime, get_runtime
from harness.runtime.durations import parse_duration
from harness.runtime.kicker import kick_all
from harness.runtime.ledger import RunRecord
from harness.runtime.module_loader import load_function_modules
from harness.runtime.previews import event_preview, preview
from harness.settings import get_settings

if TYPE_CHECKING:
    from harness.observe.step_details import StepDetail

# `runs` (the list) is the command people run most: what only `show`, `fork`, `replay` and
# `redeliver` need (the model prices, the fork and replay checks) is imported by those.

STRUCTURED_CHARS = 2000  # of a tool's structured result, shown by `runs show`

runs_app = typer.Typer(help="Recent runs and their steps.", invoke_without_command=True)


def local_time(ms: int) -> str:
    """`ms` since the epoch as local time `YYYY-MM-DD HH:MM:SS`; empty for 0."""
    if not ms:
        return ""
    return datetime.fromtimestamp(ms / 1000).astimezone().strftime("%Y-%m-%d %H:%M:%S")


def duration(ms: int | None) -> str:
    """`ms` as `850ms`, `12.3s`, `4m05s` or `2h03m`; empty for None."""
    if ms is None:
        return ""
    if ms < 1000:
        return f"{ms}ms"
    seconds = ms / 1000
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, secs = divmod(int(seconds), 60)
    if minutes < 60:
        return f"{minutes}m{secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


def _run_json(record: RunRecord) -> dict[str, Any]:
    """The run's record for `--json`, every string in it (the trigger event, the result, the
    error) redacted like the logs."""
    redacted: dict[str, Any] = redact_json(record.model_dump(mode="json"))
    return redacted


@runs_app.callback()
def runs(
    ctx: typer.Context,
    limit: Annotated[int, typer.Option(help="How many runs.")] = 20,
    function: Annotated[str, typer.Option(help="Only runs of this function.")] = "",
    session: Annotated[str, typer.Option(help="Only runs of this chat session key.")] = "",
    status: Annotated[str, typer.Option(help="Only runs in this status (failed, ...).")] = "",
    since: Annotated[str, typer.Option(help="Only runs created within this (1h, 2d).")] = "",
    as_json: JsonOption = False,
) -> None:
    """List recent runs, newest first, with full ids."""
    if ctx.invoked_subcommand is not None:
        return
    rt = get_runtime()
    since_ms = rt.now_ms() - int(parse_duration(since) * 1000) if since else 0
    wanted = RunFilter(function=function, session=session, status=status, since_ms=since_ms)
    records = find_runs(rt, wanted, limit)
    undelivered = {reply.run_id for reply in redis_records(rt).undelivered.all()}
    if as_json:
        emit_json([_run_json(r) for r in records])
        return
    views = [run_view(r) for r in records]
    rows = [
        [
            v.id, v.function_id, v.status + (" undelivered" if v.id in undelivered else ""),
            str(v.attempt), local_time(v.created_ms),
            duration(v.ended_ms - v.started_ms if v.ended_ms and v.started_ms else None),
            v.error.splitlines()[0][:60] if v.error else "",
        ]
        for v in views
    ]  # fmt: skip
    print_rows(["run", "function", "status", "attempt", "created", "took", "error"], rows, 1)


def _header(run: RunView) -> list[str]:
    queued = run.started_ms - run.created_ms if run.started_ms and run.created_ms else None
    ran = run.ended_ms - run.started_ms if run.ended_ms and run.started_ms else None
    lines = [
        f"run       {run.id}",
        f"function  {run.function_id}",
        f"status    {run.status}",
        f"attempts  {run.attempt}",
        f"created   {local_time(run.created_ms)}",
        f"started   {local_time(run.started_ms)}"
        + (f"  (after {duration(queued)})" if queued is not None else ""),
        f"ended     {local_time(run.ended_ms)}"
        + (f"  (took {duration(ran)})" if ran is not None else ""),
    ]
    if run.error:
        lines.append(f"error     {run.error}")
    return lines


def _network_state(record: RunRecord, journal: dict[str, dict[str, Any]]) -> str:
    """A network run's shared state after its latest agent (its "state" steps), previewed and
    redacted; "" for any other run, or before its first agent ended."""
    from harness.observe.network_trace import network_trace

    trace = network_trace(record, journal)
    if trace is None or not trace.agents:
        return ""
    return f"{preview(trace.state)}  (after {trace.agents} agent(s))"


def _journal_fields(entry: dict[str, Any]) -> dict[str, Any]:
    """A journal entry without its full value (`v`, unredacted, for replay only), its texts
    (input preview, error) redacted; a tool's structured result (`structured`) kept."""
    fields: dict[str, Any] = redact_json({k: v for k, v in entry.items() if k != "v"})
    structured = _structured(entry)
    if structured is not None:
        fields["structured"] = structured
    return fields


def _structured(entry: dict[str, Any]) -> Any:
    """The structured part of a tool step's result (redacted), or None when it has none."""
    value = entry.get("v")
    if not isinstance(value, dict) or value.get("structured") is None:
        return None
    return redact_json(value["structured"])


def _tokens(detail: StepDetail | None) -> list[str]:
    from harness.observe.step_details import money

    if detail is None or detail.usage is None:
        return ["", ""]
    u = detail.usage
    text = f"{u.input_tokens}+{u.cache_read_tokens}c/{u.output_tokens}"
    return [f"{u.model} {text}", money(u.cost_usd)]


def _step_rows(steps: Sequence[StepView], details: dict[str, StepDetail]) -> list[list[str]]:
    return [
        [
            s.key,
            s.kind,
            s.status,
            str(s.attempts),
            duration(s.duration_ms),
            local_time(s.started_ms),
            *_tokens(details.get(s.key)),
        ]
        for s in steps
    ]  # fmt: skip


@runs_app.command("show")
def runs_show(
    run_id: Annotated[str, typer.Argument(help="The run's id, or any unique prefix of it.")],
    as_json: JsonOption = False,
    follow: Annotated[
        bool,
        typer.Option(
            "--follow",
            "-f",
            help="Print steps as they happen until the run ends; exit 0 if "
            "it completed, 1 otherwise (with --json: wait, then print the ended run).",
        ),
    ] = False,
) -> None:
    """Show one run: its header, then its steps in the order they ran."""
    from harness.observe.step_details import money, run_cost, step_detail

    rt = get_runtime()
    full_id = resolve_run_id(rt, run_id)
    if follow:
        ended = _follow(rt, full_id, quiet=as_json, timeout_s=None)
        if not as_json:
            raise typer.Exit(exit_code(ended))
    record = rt.ledger.run(full_id)
    if record is None:
        raise RunNotFoundError(f"run {full_id} has just expired")
    view = run_view(record)
    journal = rt.ledger.journal(full_id)
    steps = step_views(view, journal)
    details = {key: step_detail(key, entry) for key, entry in journal.items()}
    children = child_runs(rt, full_id)
    if as_json:
        extra = {k: d.model_dump(mode="json", exclude={"key"}) for k, d in details.items()}
        ordered = [
            {"key": s.key, **_journal_fields(journal.get(s.key, {"k": s.kind})),
             "status": s.status, "attempts": s.attempts, **extra.get(s.key, {})}
            for s in steps
        ]  # fmt: skip
        newest_first = [asdict(child) for child in reversed(children)]
        shown = {"run": _run_json(record), "trigger": event_preview(record.event), "steps": ordered,
                 "children": newest_first}  # fmt: skip
        emit_json(shown)
        if follow:
            raise typer.Exit(exit_code(record))
        return
    for line in _header(view):
        typer.echo(line)
    typer.echo(f"trigger   {event_preview(record.event)}")
    shared = _network_state(record, journal)
    if shared:
        typer.echo(f"state     {shared}")
    tokens, cost = run_cost(list(details.values()))
    if tokens:
        typer.echo(f"tokens    {tokens}  cost {money(cost)}")
    spent = children_cost_usd(record.result)
    if spent is not None:
        typer.echo(f"children  cost {money(spent)} (the child runs' model calls)")
    if steps:
        typer.echo("")
        header = ["step", "kind", "status", "attempts", "duration", "started", "model", "cost"]
        print_rows(header, _step_rows(steps, details), 1)
    for key, entry in journal.items():
        structured = _structured(entry)
        if structured is not None:
            text = json.dumps(structured, ensure_ascii=False)
            typer.echo(f"\n{key} structured: {text[:STRUCTURED_CHARS]}")
    failed = [d for d in details.values() if d.error]
    for detail in failed:
        typer.echo(f"\n{detail.key} error: {detail.error}")
    if children:
        typer.echo("")
        rows = [[c.id, c.function_id, c.status, c.started_by] for c in children]
        print_rows(["child run", "function", "status", "started by"], rows, 1)


@runs_app.command("fork")
def runs_fork(
    run_id: Annotated[str, typer.Argument(help="The run's id, or any unique prefix of it.")],
    from_step: Annotated[
        str, typer.Option("--from", help="Reuse the journal up to this step (e.g. tool:0).")
    ] = "",
    wait: Annotated[
        bool,
        typer.Option(
            "--wait",
            help="Wait for the new run's end and print its output; exit 0 if it "
            "completed, 1 otherwise.",
        ),
    ] = False,
    follow: Annotated[
        bool, typer.Option("--follow", help="Like --wait, printing its steps as they happen.")
    ] = False,
    timeout: Annotated[
        float | None, typer.Option(min=0, help="With --wait/--follow: give up after SECONDS.")
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Start a new run of the same function on the same event data; with --from, the steps
    that ended before STEP are replayed from the old run's journal instead of run again.
    `--json`: `{"run_id": new run, "forked_from": old run}`, and with --wait/--follow also
    `"status"`, `"result"` (redacted) and `"error"` of its end."""
    from harness.observe.fork import fork

    rt = get_runtime()
    record = _finished_record(rt, run_id)
    new_id = fork(rt, record, from_step)
    if not as_json:
        typer.echo(f"started run {new_id}")
    if not (wait or follow):
        if as_json:
            emit_json({"run_id": new_id, "forked_from": record.id})
        return
    ended = _follow(rt, new_id, quiet=not follow or as_json, timeout_s=timeout)
    if as_json:
        emit_json({"run_id": new_id, "forked_from": record.id, "status": ended.status,
                   "result": redact_json(ended.result), "error": ended.error})  # fmt: skip
    else:
        for line in outcome_lines(ended):
            typer.echo(line)
    raise typer.Exit(exit_code(ended))


def _follow(rt: Runtime, run_id: str, *, quiet: bool, timeout_s: float | None) -> RunRecord:
    """The ended run `run_id`, its steps printed as they happen unless `quiet` (then a
    spinner shows on a terminal's stderr). Exits 1 with one line on stderr at the deadline."""
    try:
        if not quiet:
            return follow_run(rt, run_id, typer.echo, timeout_s=timeout_s)
        with waiting(f"waiting for run {run_id}"):
            return follow_run(rt, run_id, None, timeout_s=timeout_s)
    except FollowTimeoutError as exc:
        typer.echo(f"error: {exc} after {timeout_s:g}s", err=True)
        raise typer.Exit(FAILED) from exc


runs_app.command("rerun", help="The same as `runs fork` (its former name).")(runs_fork)


@runs_app.command("replay")
def runs_replay(
    run_id: Annotated[str, typer.Argument(help="The run's id, or any unique prefix of it.")],
    functions: Annotated[
        list[str] | None,
        typer.Option("--functions", help="Also load these function modules (comma-separated)."),
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Run a finished run's code again here, every step answered from its journal (no model
    or tool call, nothing written), and check its output is identical: exit 0 if so, else
    print the diff or the first step where the code went another way, and exit 1."""
    from harness.observe.replay_check import check_replay

    rt = get_runtime()
    record = _finished_record(rt, run_id)
    if rt.registry.get(record.function_id) is None:
        extra = [m for item in functions or [] for m in item.split(",") if m]
        load_function_modules(function_modules(get_settings(), extra))
    verdict = check_replay(rt, record)
    if as_json:
        emit_json(verdict.as_json())
    elif verdict.identical:
        typer.echo(f"identical ({verdict.steps} steps replayed from the journal)")
    else:
        if verdict.first_difference:
            typer.echo(f"first differing step: {verdict.first_difference} ({verdict.reason})")
        for line in verdict.diff:
            typer.echo(line)
    if not verdict.identical:
        raise typer.Exit(code=FAILED)


def _finished_record(rt: Runtime, run_id: str) -> RunRecord:
    full_id = resolve_run_id(rt, run_id)
    record = rt.ledger.run(full_id)
    if record is None:
        raise RunNotFoundError(f"run {full_id} has just expired")
    return record


@runs_app.command("cancel")
def runs_cancel(
    run_id: Annotated[str, typer.Argument(help="The run's id, or any unique prefix of it.")],
    as_json: JsonOption = False,
) -> None:
    """Ask a live run to stop at its next step boundary. `--json`: `{"run_id": ...,
    "cancelling": true}`."""
    rt = get_runtime()
    full_id = resolve_run_id(rt, run_id)
    live, kicks = rt.ledger.request_cancel(full_id, "cancelled from the command line", rt.now_ms())
    kick_all(rt.kicker, kicks)
    if not live:
        raise RunNotFoundError(f"run {full_id} is not live (it has already ended)")
    if as_json:
        emit_json({"run_id": full_id, "cancelling": True})
        return
    typer.echo(f"run {full_id} will stop at its next step")


@runs_app.command("redeliver")
def runs_redeliver(
    run_id: Annotated[str, typer.Argument(help="The send-reply run that gave up, or a prefix.")],
    as_json: JsonOption = False,
) -> None:
    """Deliver again a reply that `send-reply` gave up on (listed as `failed undelivered`).
    Chunks that were posted before are not posted twice. `--json`: `{"run_id", "reply_id",
    "event_id"}`."""
    from harness.records.redelivery import redeliver

    rt = get_runtime()
    full_id = resolve_run_id(rt, run_id)
    undelivered = redis_records(rt).undelivered.all()
    kept = [reply for reply in undelivered if reply.run_id == full_id]
    if not kept:
        raise RunNotFoundError(f"run {full_id} has no undelivered reply")
    event_id = redeliver(rt, kept[0])
    if as_json:
        emit_json({"run_id": full_id, "reply_id": kept[0].reply_id, "event_id": event_id})
        return
    typer.echo(f"reply {kept[0].reply_id} published again as {event_id}")
