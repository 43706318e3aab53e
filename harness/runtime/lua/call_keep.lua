-- CALL_KEEP: a gateway renews the leases of the calls it is making and learns which to
-- abort (`CallBoard.keep`), in one round trip per tick for all of them. A lease_ms of 0 hands
-- the calls back (due at once) and pushes a wake token for the other gateways.
-- ARGV: prefix, service, now_ms, lease_ms, then call_id, token pairs
-- Returns one code per call: 1 go on (lease renewed), 0 the lease is another gateway's now or
-- the call is settled (stop, record nothing), 2 the run no longer waits on it (cancelled or
-- ended: stop; the call is dropped).
local P = ARGV[1]
local leases = P .. ':calls:' .. ARGV[2] .. ':leases'
local now, lease = tonumber(ARGV[3]), tonumber(ARGV[4])
local out = {}
local handed = false
for i = 5, #ARGV - 1, 2 do
  local call, token = ARGV[i], ARGV[i + 1]
  local c = redis.call('HMGET', P .. ':call:' .. call, 'run', 'token', 'outcome')
  local run = c[1] and redis.call('HMGET', P .. ':run:' .. c[1], 'status', 'wake_call', 'cancel')
    or {}
  if (not c[1]) or c[2] ~= token or c[3] then
    table.insert(out, 0)
  elseif run[1] ~= 'waiting' or run[2] ~= call or (run[3] and run[3] ~= '') then
    redis.call('ZREM', leases, call)
    table.insert(out, 2)
  else
    redis.call('ZADD', leases, now + lease, call)
    table.insert(out, 1)
    handed = handed or lease == 0
  end
end
if handed then  -- handed back: due at once, so wake a gateway that waits for calls
  redis.call('LPUSH', P .. ':calls:' .. ARGV[2] .. ':wake', '1')
end
return out
