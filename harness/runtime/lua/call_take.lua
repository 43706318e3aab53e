-- CALL_TAKE: a gateway takes up to `limit` calls of a service under a lease
-- (`CallBoard.take`): first those whose lease ran out (their gateway died), then new ones in
-- the order they were offered. Each take bumps the call's token, so an answer from an earlier
-- lease is refused. A call whose run no longer waits on it (cancelled, ended), that has its
-- outcome, or that another gateway holds, is passed over (and dropped from the queue). Leaves
-- the service's wake list with a token exactly while calls are left to take.
-- ARGV: prefix, service, owner, now_ms, lease_ms, limit
-- Returns a flat list: call_id, token, request_json, ...
local P = ARGV[1]
local offered = P .. ':calls:' .. ARGV[2]
local leases = offered .. ':leases'
local now, lease, limit = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
local out = {}
local taken = 0

local function take(call)
  local ck = P .. ':call:' .. call
  local c = redis.call('HMGET', ck, 'run', 'outcome')
  local run = c[1] and redis.call('HMGET', P .. ':run:' .. c[1], 'status', 'wake_call') or {}
  if (not c[1]) or c[2] or run[1] ~= 'waiting' or run[2] ~= call then
    redis.call('ZREM', leases, call)
    return
  end
  local held = tonumber(redis.call('ZSCORE', leases, call))
  if held and held > now then return end  -- a live lease: offered twice, taken already
  local token = redis.call('HINCRBY', ck, 'token', 1)
  redis.call('HSET', ck, 'owner', ARGV[3], 'taken', now)
  redis.call('ZADD', leases, now + lease, call)
  table.insert(out, call)
  table.insert(out, tostring(token))
  table.insert(out, redis.call('HGET', ck, 'request'))
  taken = taken + 1
end

for _, call in ipairs(redis.call('ZRANGEBYSCORE', leases, '-inf', now, 'LIMIT', 0, limit)) do
  take(call)
end
while taken < limit do
  local call = redis.call('LPOP', offered)
  if not call then break end
  take(call)
end
-- Wake tokens stand for calls left to take: none once nothing is due (so an idle gateway is
-- not woken for nothing), at least one while some are (another gateway with room takes them).
local wake = offered .. ':wake'
if redis.call('LLEN', offered) + redis.call('ZCOUNT', leases, '-inf', now) == 0 then
  redis.call('DEL', wake)
elseif redis.call('LLEN', wake) == 0 then
  redis.call('LPUSH', wake, '1')
end
return out
