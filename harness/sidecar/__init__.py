"""The sidecar: loads the agent's own functions from `workspace/functions` and runs them.

    supervisor.py   `harness sidecar`: watches the folder, validates, replaces the child
    executor.py     the child: trusted, holds the bus; registers and runs on the sidecar queue
    host.py         the function host: imports the files, holds no credential, sandboxed
    host_context.py the `ctx` a handler gets in the host: each step sent to the executor
    host_link.py    the executor's end of the host: start, load, replace
    forwarding.py   the executor's handler: runs the host's, serves its steps with the real ctx
    wire.py         the messages between executor and host; faults.py, exceptions across it
    admission.py    the executor's own check of what the host says it loaded
    publish_policy.py  which events a function may not publish (the fleet's own)
    loader.py       importing the folder file by file into a `LoadReport`
    validate.py     the same load in a fresh interpreter with a timeout (sidecar and tools)
    environment.py  the processes' environments (no secrets; the host not even the bus),
                    limits
    sandbox.py      the OS sandbox of the processes that import functions/ (bwrap or
                    Landlock), and whether functions may run at all; sandbox_start.py, how
                    Python starts inside Landlock
    builtins.py     the functions every child registers: heartbeat, failure recorder
    notes.py        load errors and failed runs, as the agent and the CLI read them

Kept free of imports so that `harness.settings` can import `harness.sidecar.settings` cheaply.
"""
