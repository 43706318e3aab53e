"""The `harness` sub-commands that are loaded when used (`harness.commands.lazy`), in the order
`harness --help` lists them after those `harness/cli.py` defines, and the help panels.

Each entry's help line is the first paragraph of its command's docstring, on one line:
tests/cli/test_lazy_commands.py fails when one drifts. A new command module goes here (or is
registered in cli.py as before, loaded with the app: slower `--help`, same behaviour).
"""

from __future__ import annotations

from harness.commands.lazy import LazyCommand

FLEET = "Run the fleet"
TALK = "Talk to the agent"
INSPECT = "Inspect"
SET_UP = "Set up"

LAZY = (
    LazyCommand(
        "poll",
        "harness.commands.setup:poll",
        FLEET,
        "Receive a channel's messages without a public URL (Telegram getUpdates with "
        "TELEGRAM_MODE=polling, Slack Socket Mode with SLACK_APP_TOKEN) until Ctrl-C.",
    ),
    LazyCommand(
        "sidecar",
        "harness.commands.functions:sidecar",
        FLEET,
        "Load and run the agent's functions from workspace/functions, reloading on change "
        "(SIDECAR_ENABLED=false: idle).",
    ),
    LazyCommand(
        "gateway",
        "harness.commands.gateway:gateway",
        FLEET,
        "Make the model calls that runs park on (MODEL_CALLS=gateway), in a process of its "
        "own, until Ctrl-C; run workers beside it with `--no-gateway`.",
    ),
    LazyCommand(
        "health",
        "harness.commands.health:health",
        FLEET,
        "Exit 0 when this host's PROCESS is alive (its liveness file was touched within "
        "HEALTH_MAX_AGE), 1 when not: an exec probe for Kubernetes or compose. `--json`: "
        '`{"process", "alive", "file", "max_age_s"}` (the exit code is the same).',
    ),
    LazyCommand(
        "functions",
        "harness.commands.functions:functions",
        INSPECT,
        "Every registered function (source, triggers, next cron, last run) and every file of "
        "workspace/functions that failed to load.",
    ),
    LazyCommand(
        "agents",
        "harness.commands.agents:agents",
        INSPECT,
        "Every agent (the default one and those of workspace/agents: model, tools, turn "
        "limit, bindings), the chats bound to networks, and every agent file that failed to "
        "load. Starts no MCP server; exits 0 even when some files are wrong (they are listed).",
    ),
    LazyCommand(
        "networks",
        "harness.commands.networks:networks",
        INSPECT,
        "Every network of the workspace (agents, router, state keys, iteration limit) and "
        "every network file that failed to load.",
    ),
    LazyCommand(
        "usage",
        "harness.commands.usage:usage",
        INSPECT,
        'Tokens and cost per day (or --by session / model). Cost is "unknown" when a model '
        "has no price (add one with MODEL_PRICES).",
    ),
    LazyCommand(
        "eval",
        "harness.commands.eval:eval_command",
        INSPECT,
        "Run eval suites through the agent's real turn and grade them; exit 1 when a case "
        "failed. Without a model key: one line, exit 0.",
    ),
    LazyCommand(
        "doctor",
        "harness.commands.doctor:doctor",
        INSPECT,
        "Check the setup: Python, Redis, workers, the model, channels, secrets, the "
        'workspace. Exits 1 if any check fails. `--json`: `{"ok", "failed": [names], '
        '"checks": [{"name", "status" (ok, warn, fail), "detail", "fix"}]}`, same exit code.',
    ),
    LazyCommand(
        "init",
        "harness.commands.init:init",
        SET_UP,
        "Write `.env` (mode 0600): the model provider and its key, checked with one cheap "
        "call, a generated HARNESS_API_KEY, and optional Telegram / Slack tokens.",
    ),
    LazyCommand(
        "setup",
        "harness.commands.setup:setup",
        SET_UP,
        "Register the bot with a chat platform (webhook, app manifest).",
        command_class="SetupCommand",
    ),
    LazyCommand(
        "completion",
        "harness.commands.completion:completion",
        SET_UP,
        'Print the completion script for SHELL (bash: `eval "$(harness completion bash)"` '
        "in ~/.bashrc; see docs/cli.md for zsh, fish and PowerShell).",
    ),
    LazyCommand("runs", "harness.commands.runs:runs_app", INSPECT, "Recent runs and their steps."),
    LazyCommand(
        "budget",
        "harness.commands.budget:budget_app",
        INSPECT,
        "Daily budgets: today's spend per person, chat and agent, and raising a limit.",
    ),
    LazyCommand("events", "harness.cli:events_app", INSPECT, "The events stream."),
    LazyCommand(
        "mcp",
        "harness.commands.mcp:mcp_app",
        INSPECT,
        "MCP servers configured in the operator's mcp.json (MCP_CONFIG, outside the workspace).",
    ),
    LazyCommand(
        "pair",
        "harness.commands.pair:pair_app",
        SET_UP,
        "Let people talk to the bot: pairing codes and approvals.",
    ),
    LazyCommand(
        "memory",
        "harness.commands.memory:memory_app",
        INSPECT,
        "Long-term memory: MEMORY.md's versions, restore, distil now.",
    ),
    LazyCommand(
        "knowledge",
        "harness.commands.knowledge:knowledge_app",
        INSPECT,
        "The user's documents for the agent's search: add, list, reindex.",
    ),
)
