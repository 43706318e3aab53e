"""The sidecar: loads the agent's own functions from `workspace/functions` and runs them.

    supervisor.py   `harness sidecar`: watches the folder, validates, replaces the child
    child.py        the child process: loads the files fresh, registers, runs on its queue
    loader.py       importing the folder file by file into a `LoadReport`
    validate.py     the same load in a fresh interpreter with a timeout (sidecar and tools)
    environment.py  the child's environment (no secrets), limits, and the sandbox seam
    builtins.py     the functions every child registers: heartbeat, failure recorder
    notes.py        load errors and failed runs, as the agent and the CLI read them

Kept free of imports so that `harness.settings` can import `harness.sidecar.settings` cheaply.
"""
