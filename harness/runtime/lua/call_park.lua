-- CALL_PARK: park a run on an offloaded call (`CallBoard.park`): record the call's request
-- once, queue it for a gateway, and release the run's lease, as SUSPEND does for a sleep.
-- Nothing is parked when the call's outcome is already recorded.
-- ARGV: prefix, run_id, epoch, now_ms, step_key, call_id, service, request_json, keep_s
-- Returns {1, journal_version} parked, {2, 0} the outcome is there, {0, 0} fenced out.
-- #include prelude.lua
local id, now, key, call, service = ARGV[2], tonumber(ARGV[4]), ARGV[5], ARGV[6], ARGV[7]
local r = rk(id)
if not fenced(id, ARGV[3]) then return {0, 0} end
local ck = P .. ':call:' .. call
if redis.call('HEXISTS', ck, 'outcome') == 1 then return {2, 0} end
if redis.call('EXISTS', ck) == 0 then
  redis.call('HSET', ck, 'run', id, 'step', key, 'service', service, 'request', ARGV[8],
    'token', 0, 'created', now)
  redis.call('EXPIRE', ck, tonumber(ARGV[9]))
end
-- offered in arrival order; one a gateway holds keeps its lease, one dropped is offered again.
-- Each offer also pushes a wake token (capped: a token wakes one waiting gateway, and one
-- gateway takes many calls per wake), so a gateway waiting on the list takes it at once.
if not redis.call('ZSCORE', P .. ':calls:' .. service .. ':leases', call) then
  redis.call('RPUSH', P .. ':calls:' .. service, call)
  local wake = P .. ':calls:' .. service .. ':wake'
  redis.call('LPUSH', wake, '1')
  redis.call('LTRIM', wake, 0, 31)
end
index_status(id, 'waiting')
redis.call('HSET', r, 'status', 'waiting', 'wake_kind', 'call', 'wake_step', key,
  'wake_call', call, 'wake_inbox', '0', 'owner', '', 'lease_until', 0, 'updated_at', now,
  'wake_since', now)
redis.call('ZREM', LEASES, id)
release_slots(id)
return {1, tonumber(redis.call('HGET', r, 'jver')) or 0}
