-- CALL_TAKE: a gateway takes up to `limit` due calls of a service under a lease
-- (`CallBoard.take`). A call is due when it is new or its last lease ran out (its gateway
-- died): each take bumps the call's token, so an answer from an earlier lease is refused.
-- A call whose run no longer waits on it (cancelled, ended), or that has its outcome, is
-- dropped from the queue instead.
-- ARGV: prefix, service, owner, now_ms, lease_ms, limit
-- Returns a flat list: call_id, token, request_json, ...
local P = ARGV[1]
local due = P .. ':calls:' .. ARGV[2]
local now, lease = tonumber(ARGV[4]), tonumber(ARGV[5])
local out = {}
for _, call in ipairs(redis.call('ZRANGEBYSCORE', due, '-inf', now, 'LIMIT', 0, tonumber(ARGV[6]))) do
  local ck = P .. ':call:' .. call
  local c = redis.call('HMGET', ck, 'run', 'outcome')
  local run = c[1] and redis.call('HMGET', P .. ':run:' .. c[1], 'status', 'wake_call') or {}
  if (not c[1]) or c[2] or run[1] ~= 'waiting' or run[2] ~= call then
    redis.call('ZREM', due, call)
  else
    local token = redis.call('HINCRBY', ck, 'token', 1)
    redis.call('HSET', ck, 'owner', ARGV[3], 'taken', now)
    redis.call('ZADD', due, now + lease, call)
    table.insert(out, call)
    table.insert(out, tostring(token))
    table.insert(out, redis.call('HGET', ck, 'request'))
  end
end
return out
