"""The agent's memory: what it keeps between conversations and how that is distilled.

Daily logs and `MEMORY.md` (`notes`), the `remember` tool that appends to them (`remember`),
which memory a conversation sees (`scope`), saving notes before compaction drops them
(`flush`), the versions of `MEMORY.md` (`history`), and the periodic distilling of the logs
into it (`distill`, `heartbeat`).
"""
