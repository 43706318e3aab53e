"""The product's records, kept apart from the engine (`harness.runtime`): approval requests
and grants, pairing, reply deliveries, drafts, undelivered replies, listener cursors.

Each module holds one store: a `Protocol` stating its contract, a Redis implementation built
on the engine's seam (its client, key names, Lua loading and error mapping) and an in-memory
twin with the same answers, for tests. The engine imports nothing from here.
"""
