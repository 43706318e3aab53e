"""The fleet's processes: starting them, keeping them alive, and stopping them with their trees.

`harness up` (`supervisor`) plans the fleet, then becomes a slim process (`up`) that runs the
processes in the foreground (`supervision`, `process_manager`, `process_tree`) and says when
they are ready (`readiness`); it restarts non-essential ones (`restarts`), starts a Redis when
there is none (`embedded_redis`), records running fleets so the CLI finds them from any folder
(`fleets`), and freezes start-up memory in long-running servers (`heap`).
"""
