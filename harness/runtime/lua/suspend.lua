-- SUSPEND: park a run (sleep, wait for an event, invoke, retry) and release its lease
-- (`Ledger.suspend`). A wait already resolved is not parked.
-- ARGV: prefix, run_id, epoch, now_ms, wake_at_ms ('' for none), kind, step_key,
--       wait_event, waiter_bucket, status, count_attempt ('1' adds one to the run's attempts),
--       wake_inbox ('1': a wait that an event handed to the run's inbox also ends),
--       watched run id ('' for none: a wait that this run's end resolves, `wait_for_run`)
-- Returns {1, journal_version} parked, {2, 0} already resolved, {0, 0} fenced out.
-- #include prelude.lua
local id, now, kind, key = ARGV[2], tonumber(ARGV[4]), ARGV[6], ARGV[7]
local r = rk(id)
if not fenced(id, ARGV[3]) then return {0, 0} end
if (kind == 'wait' or kind == 'invoke') and redis.call('HEXISTS', jk(id), key) == 1 then
  return {2, 0}
end
-- a wait a steering message may end: one already handed over ends it at once
if kind == 'wait' and ARGV[12] == '1' and redis.call('LLEN', ik(id)) > 0 then
  jset(id, key, '{"s":' .. now .. ',"t":' .. now .. ',"k":"wait","v":null,"inbox":true}', true)
  return {2, 0}
end
-- a watch on a run that has ended (or expired) ends at once; else that run's end wakes it
local watched = ARGV[13] or ''
if kind == 'wait' and watched ~= '' then
  local ws = redis.call('HGET', rk(watched), 'status')
  if (not ws) or TERMINAL[ws] then
    jset(id, key, '{"s":' .. now .. ',"t":' .. now .. ',"k":"wait","v":null,"ended":true}', true)
    return {2, 0}
  end
  redis.call('HSET', wk(watched), id, key)
  if ARGV[5] ~= '' then  -- outlive the wait, so an unwoken entry does not stay forever
    local ttl = math.ceil((tonumber(ARGV[5]) - now) / 1000) + 3600
    if redis.call('TTL', wk(watched)) < ttl then redis.call('EXPIRE', wk(watched), ttl) end
  end
end
redis.call('HSET', r, 'wake_inbox', ARGV[12])
if kind == 'wait' and ARGV[8] ~= '' then
  add_waiter(id, ARGV[8], ARGV[9])
elseif kind == 'wait' then
  redis.call('HDEL', r, 'wait_event', 'wait_bucket')  -- waits for no event this time
end
if ARGV[5] ~= '' then redis.call('ZADD', TIMERS, tonumber(ARGV[5]), id) end
if ARGV[11] == '1' then redis.call('HINCRBY', r, 'attempt', 1) end
index_status(id, ARGV[10])
redis.call('HSET', r, 'status', ARGV[10], 'wake_kind', kind, 'wake_step', key, 'owner', '',
  'lease_until', 0, 'updated_at', now, 'wake_since', now)
redis.call('ZREM', LEASES, id)
release_slots(id)
return {1, tonumber(redis.call('HGET', r, 'jver')) or 0}
