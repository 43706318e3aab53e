-- RENEW: extend the lease of a run this epoch still holds (`Ledger.renew`).
-- ARGV: prefix, run_id, epoch, now_ms, ttl_ms
-- Returns {1, cancel_request} while the lease is ours, {0, ''} when fenced out.
-- #include prelude.lua
local id, now, ttl = ARGV[2], tonumber(ARGV[4]), tonumber(ARGV[5])
if not fenced(id, ARGV[3]) then return {0, ''} end
redis.call('HSET', rk(id), 'lease_until', now + ttl)
redis.call('ZADD', LEASES, now + ttl, id)
for _, s in ipairs(slots_of(id)) do
  redis.call('ZADD', P .. ':slot:' .. s[1], 'XX', now + ttl, id)
end
return {1, redis.call('HGET', rk(id), 'cancel') or ''}
