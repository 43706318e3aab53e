"""Approvals: which tool calls wait for a person's yes, asking for it, and reading the answer.

The policy (`policy`, `allowlist`) decides which calls need a yes; the gate (`gate`, `hook`)
asks and waits without holding a worker; the answer comes from a button or a typed reply
(`text`, `deferral`), a session-wide yes counts only for who gave it (`grants`), and a settled
request says what was decided (`lines`).
"""
