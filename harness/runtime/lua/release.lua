-- RELEASE: a stopping worker hands a run back: queued and kicked again at once, its lease
-- gone (so the old execution's writes are refused) (`Ledger.release`).
-- ARGV: prefix, run_id, epoch, now_ms
-- Returns {1, kicks...} released, {0} fenced out.
-- #include prelude.lua
local id, now = ARGV[2], tonumber(ARGV[4])
if not fenced(id, ARGV[3]) then return {0} end
redis.call('HSET', rk(id), 'owner', '', 'lease_until', 0)
redis.call('ZREM', LEASES, id)
release_slots(id)
make_ready(id, now)
kick(id, now)
return {1, unpack(kicks)}
