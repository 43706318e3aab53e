-- CALL_SETTLE: record an offloaded call's outcome once and resume the run waiting on it
-- (`CallBoard.settle`). Refused, writing nothing, when the outcome is already recorded or
-- the token is not the call's latest lease (a gateway presumed dead answering late).
-- ARGV: prefix, call_id, token, outcome_json, now_ms,
--       kick_template ("" to return the kicks; else they are pushed onto the broker here)
-- Returns {1, kicks...} recorded, {0} refused.
-- #include prelude.lua
local call, now = ARGV[2], tonumber(ARGV[5])
local ck = P .. ':call:' .. call
local c = redis.call('HMGET', ck, 'run', 'token', 'outcome', 'service')
if (not c[1]) or c[2] ~= ARGV[3] or c[3] then return {0} end
redis.call('HSET', ck, 'outcome', ARGV[4], 'settled', now)
redis.call('HDEL', ck, 'request')  -- never needed again; it may be large (images)
redis.call('ZREM', P .. ':calls:' .. c[4] .. ':leases', call)
local id = c[1]
local run = redis.call('HMGET', rk(id), 'status', 'wake_call')
if run[1] == 'waiting' and run[2] == call then
  SETTLED_CALL = call  -- its run leaving the wait is no news to the gateways (CALL_STOPS)
  make_ready(id, now)
  kick(id, now)
end
if (ARGV[6] or '') ~= '' then
  push_kicks(ARGV[6])
  return {1}
end
return {1, unpack(kicks)}
