-- CALL_WAITING: whether a service's offloaded calls are being served (`calls_waiting`): how
-- many are due and in flight, when the oldest due one was parked, and how many gateways beat.
-- Read-only (a gateway's beat forgets those long gone: `CallBoard.beat`).
-- ARGV: prefix, service, now_ms, scan (offered calls looked at for the oldest), beat_ttl_ms
-- Returns {due, in_flight, oldest parked ms (-1: none due), live gateways}.
local P = ARGV[1]
local offered = P .. ':calls:' .. ARGV[2]
local leases = offered .. ':leases'
local gateways = offered .. ':gateways'
local now, scan, ttl = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local oldest = -1

-- A call a take would make: its run still waits on it, it has no outcome, no live lease.
local function consider(call)
  local c = redis.call('HMGET', P .. ':call:' .. call, 'run', 'outcome', 'created')
  if (not c[1]) or c[2] then return end
  local run = redis.call('HMGET', P .. ':run:' .. c[1], 'status', 'wake_call')
  if run[1] ~= 'waiting' or run[2] ~= call then return end
  local held = tonumber(redis.call('ZSCORE', leases, call))
  if held and held > now then return end
  local created = tonumber(c[3]) or now
  if oldest < 0 or created < oldest then oldest = created end
end

for _, call in ipairs(redis.call('LRANGE', offered, 0, scan - 1)) do consider(call) end
for _, call in ipairs(redis.call('ZRANGEBYSCORE', leases, '-inf', now, 'LIMIT', 0, scan)) do
  consider(call)
end
return {
  redis.call('LLEN', offered) + redis.call('ZCOUNT', leases, '-inf', now),
  redis.call('ZCOUNT', leases, '(' .. now, '+inf'),
  oldest,
  redis.call('ZCOUNT', gateways, now - ttl, '+inf'),
}
