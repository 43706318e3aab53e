"""The fleet's processes: starting them, keeping them alive, and stopping them with their trees.

`harness up` (`supervisor`) runs the processes in the foreground (`process_manager`,
`process_tree`), restarts non-essential ones (`restarts`), starts a Redis when there is none
(`embedded_redis`), records running fleets so the CLI finds them from any folder (`fleets`),
and freezes start-up memory in long-running servers (`heap`).
"""
