"""What the dashboard pages show, gathered from the runtime (blocking; call off the loop)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from croniter import croniter

from harness.observe.child_runs import ChildRun, child_runs, children_cost_usd
from harness.observe.network_trace import NetworkTrace, network_trace
from harness.observe.run_views import RunView, StepView, run_view, step_views
from harness.observe.step_details import StepDetail, money, run_cost, step_detail
from harness.observe.usage_report import UsageTotal, totals
from harness.records.stores import redis_records
from harness.runtime.functions import CronTrigger
from harness.runtime.instance import Runtime
from harness.runtime.previews import event_preview
from harness.runtime.sessions import session_of
from harness.web.dashboard.folding import attempts, summary
from harness.web.dashboard.timeline import Timeline, timeline

TERMINAL = frozenset({"completed", "failed", "cancelled"})


@dataclass(frozen=True)
class RunPage:
    """One run with its trigger (a bounded, redacted preview), its true number of tries, its
    reply or error in a line (`folding.summary`), its steps, their waterfall and details, its
    cost, the runs it started and what they spent ("": its output does not say), and for a
    network run its shared state and router decisions."""

    run: RunView
    session: str
    parent: str
    trigger: str
    steps: list[StepView]
    details: dict[str, StepDetail]
    tokens: int
    cost: str
    children: list[ChildRun]
    children_cost: str = ""
    network: NetworkTrace | None = None
    attempts: int = 0
    summary: str = ""
    timeline: Timeline | None = None

    @property
    def live(self) -> bool:
        """True while the run can still change."""
        return self.run.status not in TERMINAL


def run_page(runtime: Runtime, run_id: str) -> RunPage | None:
    """The page of run `run_id`, or None when it is unknown or expired."""
    record = runtime.ledger.run(run_id)
    if record is None:
        return None
    journal = runtime.ledger.journal(run_id)
    view = run_view(record)
    details = {key: step_detail(key, entry) for key, entry in journal.items()}
    tokens, cost = run_cost(list(details.values()))
    children = child_runs(runtime, run_id)
    spent = children_cost_usd(record.result)
    steps = step_views(view, journal)
    step_tries = max((step.attempts for step in steps), default=0)
    return RunPage(
        run=view,
        session=session_of(record.event),
        parent=record.parent.run_id if record.parent else "",
        trigger=event_preview(record.event),
        steps=steps,
        details=details,
        tokens=tokens,
        cost=money(cost),
        children=children,
        children_cost="" if spent is None else money(spent),
        network=network_trace(record, journal, children),
        attempts=attempts(record, step_tries),
        summary=summary(record) if not record.error else "",
        timeline=timeline(view, steps, children, runtime.now_ms()),
    )


def usage_by_day(runtime: Runtime, days: int = 14) -> list[UsageTotal]:
    """Tokens and cost per UTC day for the last `days` days, oldest first."""
    today = datetime.fromtimestamp(runtime.clock(), UTC).date()
    return totals(redis_records(runtime).usage.rows(today - timedelta(days=days - 1), today), "day")


@dataclass(frozen=True)
class FunctionRow:
    """A registered function: its triggers and, for cron ones, the next tick (UTC)."""

    id: str
    triggers: str
    next_cron: str


def functions(runtime: Runtime) -> list[FunctionRow]:
    """The functions in the trigger table, by id."""
    now = datetime.fromtimestamp(runtime.clock(), UTC)
    rows = []
    for spec in sorted(runtime.triggers.specs(), key=lambda s: s.id):
        names, ticks = [], []
        for trigger in spec.triggers:
            if isinstance(trigger, CronTrigger):
                names.append(f"cron {trigger.expression} ({trigger.tz})")
                local = now.astimezone(ZoneInfo(trigger.tz))
                ticks.append(croniter(trigger.expression, local).get_next(datetime))
            else:
                names.append(f"event {trigger.name}")
        next_cron = min(ticks).strftime("%Y-%m-%d %H:%M UTC") if ticks else ""
        rows.append(FunctionRow(spec.id, ", ".join(names), next_cron))
    return rows
