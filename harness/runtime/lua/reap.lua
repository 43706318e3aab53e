-- REAP: fire due timers, recover runs whose owner stopped renewing, and re-send lost kicks
-- (`Ledger.reap`, run by the scheduler).
-- ARGV: prefix, now_ms, ttl_ms, limit, idle_queues_json [queues whose broker holds no kick]
-- Returns the kicks, '!', then the (run_id, queue) pairs to kick at the front of their queue.
-- #include prelude.lua
local now, ttl, limit = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local idle = {}
for _, q in ipairs(cjson.decode(ARGV[5])) do idle[q] = true end
for _, id in ipairs(redis.call('ZRANGEBYSCORE', TIMERS, '-inf', now, 'LIMIT', 0, limit)) do
  redis.call('ZREM', TIMERS, id)
  local r = rk(id)
  local st = redis.call('HGET', r, 'status')
  if st == 'sleeping' or st == 'waiting' then
    local kind = redis.call('HGET', r, 'wake_kind')
    local step = redis.call('HGET', r, 'wake_step')
    if kind == 'sleep' then
      jset(id, step, '{' .. stamps(id, now) .. '"k":"sleep","v":null}', true)
    elseif kind == 'wait' then
      drop_waiter(id)
      jset(id, step, '{' .. stamps(id, now) .. '"k":"wait","v":null}', true)
    elseif kind == 'invoke' then
      jset(id, step, '{' .. stamps(id, now)
        .. '"k":"invoke","e":"the invoked function did not finish in time","final":true}', true)
    end
    make_ready(id, now)
    kick(id, now)
  end
end
-- Runs whose owner stopped renewing (it died): each gets its tracked kick and, since a person
-- may be waiting on it mid-turn, an untracked one for the front of its queue (returned after
-- the '!'), so it is taken before the backlog of new work; look again after ttl. Only when
-- the tracked kick is new: a run nobody took yet is not pushed ahead again every ttl.
local front = {}
for _, id in ipairs(redis.call('ZRANGEBYSCORE', LEASES, '-inf', now, 'LIMIT', 0, limit)) do
  redis.call('ZADD', LEASES, now + ttl, id)
  redis.call('HINCRBY', METRICS_REAPER, 'lease_expiries', 1)
  if kick(id, now) then
    table.insert(front, id)
    table.insert(front, redis.call('HGET', rk(id), 'queue') or 'harness')
  end
end
-- Outstanding kicks due for a look. A kick is lost when its queue has delivered a later one
-- (the taken sequence passed it) or the broker holds no kick for the queue at all; then it is
-- sent again, with a doubled wait before the next look. A kick still queued behind others (the
-- workers are busy) is left alone: re-sending it would only lengthen the queue.
for _, id in ipairs(redis.call('ZRANGEBYSCORE', KICKED, '-inf', now, 'LIMIT', 0, limit)) do
  local r = rk(id)
  local st = redis.call('HGET', r, 'status')
  local awaiting = st == 'queued'
    or (st == 'running' and (tonumber(redis.call('HGET', r, 'lease_until')) or 0) <= now)
  if not awaiting then
    redis.call('ZREM', KICKED, id)
  else
    local q = redis.call('HGET', r, 'queue') or 'harness'
    local seq = tonumber(redis.call('HGET', r, 'kick_seq')) or 0
    local taken = tonumber(redis.call('GET', P .. ':kick:taken:' .. q)) or 0
    local tries = tonumber(redis.call('HGET', r, 'kick_tries')) or 0
    if idle[q] or taken >= seq then
      send_kick(id, now, tries + 1)
      redis.call('HINCRBY', METRICS_REAPER, 'kicks_resent', 1)
    else
      redis.call('ZADD', KICKED, now + backoff(tries), id)
    end
  end
end
-- a queued run without a tracked kick (one queued before kicks were tracked) gets one
local untracked = redis.call('ZRANGEBYSCORE', READY, '-inf', now - KICK_CHECK_MS, 'LIMIT', 0, limit)
for _, id in ipairs(untracked) do kick(id, now) end
table.insert(kicks, '!')
for _, v in ipairs(front) do table.insert(kicks, v) end
return kicks
