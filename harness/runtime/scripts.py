"""The Lua scripts that change run state. Each runs atomically inside Redis.

Every script takes the key prefix as ARGV[1] and builds per-run key names from it (so the
runtime needs a single Redis, not a cluster). Scripts that a running worker calls take the
run's epoch (its fencing token) and refuse to act when it is not the current one: a worker
that lost its lease can never write to a run that someone else now owns.

Statuses: queued, pending (behind a singleton holder), running, sleeping, waiting,
steered (handed to the holder's inbox), and the terminal completed, failed, cancelled.
"""

from __future__ import annotations

PRELUDE = r"""
local P = ARGV[1]
local function rk(id) return P .. ':run:' .. id end
local function jk(id) return P .. ':run:' .. id .. ':steps' end
local function ik(id) return P .. ':run:' .. id .. ':inbox' end
local READY = P .. ':q:ready'
local LEASES = P .. ':q:leases'
local TIMERS = P .. ':q:timers'
local TERMINAL = {completed = true, failed = true, cancelled = true, steered = true}
local kicks = {}

local function kick(id)
  table.insert(kicks, id)
  table.insert(kicks, redis.call('HGET', rk(id), 'queue') or 'harness')
end

-- '"s":<ms>,"t":<ms>,': when a suspended step of run `id` began (its wake_since) and ended
local function stamps(id, now)
  local since = redis.call('HGET', rk(id), 'wake_since')
  if not since or since == '' then since = now end
  return '"s":' .. since .. ',"t":' .. now .. ','
end

local function make_ready(id, now)
  redis.call('HSET', rk(id), 'status', 'queued', 'updated_at', now)
  redis.call('ZADD', READY, now, id)
end

local function slots_of(id)
  local slots = redis.call('HGET', rk(id), 'slots')
  if slots and slots ~= '' then return cjson.decode(slots) end
  return {}
end

local function release_slots(id)
  for _, s in ipairs(slots_of(id)) do redis.call('ZREM', P .. ':slot:' .. s[1], id) end
end

local function fenced(id, epoch)
  local r = rk(id)
  return redis.call('HGET', r, 'epoch') == epoch and redis.call('HGET', r, 'status') == 'running'
end

-- Decide, in arrival order, whether run `id` may hold its singleton key now.
-- Returns 'own' (it holds the key), 'pending' (it waits in line) or 'steered' (handed to the
-- holder's inbox). Called when a run is created, so the line is the order events arrived in.
local function route(id, now)
  local r = rk(id)
  local sk = redis.call('HGET', r, 'singleton')
  if not sk or sk == '' then return 'own' end
  local lock = P .. ':sk:' .. sk
  local fifo = lock .. ':fifo'
  local holder = redis.call('GET', lock)
  if holder == id then return 'own' end
  if holder then
    local hs = redis.call('HGET', rk(holder), 'status')
    if (not hs) or TERMINAL[hs] then
      holder = false
      redis.call('DEL', lock)
    end
  end
  if not holder then
    if redis.call('LLEN', fifo) == 0 then
      redis.call('SET', lock, id)
      return 'own'
    end
    -- a line waits behind a holder that vanished: join it at the back and move it on
    redis.call('RPUSH', fifo, id)
    redis.call('HSET', r, 'status', 'pending', 'updated_at', now)
    redis.call('ZREM', READY, id)
    local nxt = redis.call('LPOP', fifo)
    redis.call('SET', lock, nxt)
    make_ready(nxt, now)
    kick(nxt)
    return 'pending'
  end
  redis.call('ZREM', READY, id)
  local mode = redis.call('HGET', r, 'mode')
  if mode == 'steer' then
    redis.call('RPUSH', ik(holder), id)
    redis.call('HSET', r, 'status', 'steered', 'steered_into', holder, 'updated_at', now)
    return 'steered'
  end
  redis.call('RPUSH', fifo, id)
  redis.call('HSET', r, 'status', 'pending', 'updated_at', now)
  if mode == 'cancel' then redis.call('HSET', rk(holder), 'cancel', id) end
  return 'pending'
end

-- Give the singleton lock that `id` holds to the next run in line, if any.
local function release_singleton(id, now)
  local sk = redis.call('HGET', rk(id), 'singleton')
  if not sk or sk == '' then return end
  local lock = P .. ':sk:' .. sk
  if redis.call('GET', lock) ~= id then return end
  local fifo = lock .. ':fifo'
  -- events handed to this run but never taken go back to the front of the line, in order
  local left = redis.call('LRANGE', ik(id), 0, -1)
  for i = #left, 1, -1 do
    redis.call('LPUSH', fifo, left[i])
    redis.call('HSET', rk(left[i]), 'status', 'pending', 'steered_into', '')
  end
  redis.call('DEL', ik(id))
  local nxt = redis.call('LPOP', fifo)
  while nxt and redis.call('EXISTS', rk(nxt)) == 0 do nxt = redis.call('LPOP', fifo) end
  if not nxt then
    redis.call('DEL', lock)
    return
  end
  redis.call('SET', lock, nxt)
  make_ready(nxt, now)
  kick(nxt)
  local mode = redis.call('HGET', rk(id), 'mode')
  if mode == 'steer' or mode == 'cancel' then
    -- the new holder takes every later event as steering, so they are seen, in order, at once
    for _, r in ipairs(redis.call('LRANGE', fifo, 0, -1)) do
      redis.call('RPUSH', ik(nxt), r)
      redis.call('HSET', rk(r), 'status', 'steered', 'steered_into', nxt)
    end
    redis.call('DEL', fifo)
  end
end
"""

# ARGV: prefix, event_id, event_json, now_ms, dedupe_ttl_s, stream_maxlen, event_name,
#       runs_json [{id, function_id, queue, singleton, mode, slots, parent}], waiters_json [ids]
PUBLISH = (
    PRELUDE
    + r"""
local eid, ev, now, name = ARGV[2], ARGV[3], tonumber(ARGV[4]), ARGV[7]
if not redis.call('SET', P .. ':evt:' .. eid, now, 'NX', 'EX', tonumber(ARGV[5])) then
  return {0}
end
redis.call('XADD', P .. ':events', 'MAXLEN', '~', tonumber(ARGV[6]), '*',
  'id', eid, 'name', name, 'event', ev)
for _, run in ipairs(cjson.decode(ARGV[8])) do
  local r = rk(run.id)
  if redis.call('EXISTS', r) == 0 then
    redis.call('HSET', r, 'function_id', run.function_id, 'event', ev, 'status', 'queued',
      'epoch', 0, 'attempt', 0, 'owner', '', 'lease_until', 0, 'created_at', now,
      'updated_at', now, 'queue', run.queue, 'singleton', run.singleton, 'mode', run.mode,
      'slots', run.slots, 'parent', run.parent, 'cancel', '')
    redis.call('ZADD', P .. ':runs', now, run.id)
    if route(run.id, now) == 'own' then
      redis.call('ZADD', READY, now, run.id)
      kick(run.id)
    end
  end
end
for _, id in ipairs(cjson.decode(ARGV[9])) do
  if redis.call('HDEL', P .. ':waiters:' .. name, id) == 1 then
    local step = redis.call('HGET', rk(id), 'wake_step')
    redis.call('HSETNX', jk(id), step, '{' .. stamps(id, now) .. '"k":"wait","v":' .. ev .. '}')
    redis.call('ZREM', TIMERS, id)
    make_ready(id, now)
    kick(id)
  end
end
return {1, unpack(kicks)}
"""
)

# ARGV: prefix, run_id, owner, now_ms, ttl_ms, throttle_ms
CLAIM = (
    PRELUDE
    + r"""
local id, owner, now, ttl = ARGV[2], ARGV[3], tonumber(ARGV[4]), tonumber(ARGV[5])
local r = rk(id)
local st = redis.call('HGET', r, 'status')
if not st then
  redis.call('ZREM', READY, id); redis.call('ZREM', LEASES, id); redis.call('ZREM', TIMERS, id)
  return {'missing'}
end
if TERMINAL[st] then return {'terminal', st} end
if st == 'pending' then return {'pending'} end
if st == 'sleeping' or st == 'waiting' then return {'suspended'} end
if st == 'running' and tonumber(redis.call('HGET', r, 'lease_until')) > now then
  return {'busy'}
end

local sk = redis.call('HGET', r, 'singleton')
if sk and sk ~= '' and redis.call('GET', P .. ':sk:' .. sk) ~= id then
  -- normally settled when the run was created; this covers a lock that changed hands since
  local res = route(id, now)
  if res ~= 'own' then return {res, '', unpack(kicks)} end
end

local slots = slots_of(id)
for _, s in ipairs(slots) do
  local z = P .. ':slot:' .. s[1]
  redis.call('ZREMRANGEBYSCORE', z, '-inf', now)
  if (not redis.call('ZSCORE', z, id)) and redis.call('ZCARD', z) >= tonumber(s[2]) then
    redis.call('ZREM', READY, id)
    redis.call('ZADD', TIMERS, now + tonumber(ARGV[6]), id)
    redis.call('HSET', r, 'status', 'sleeping', 'wake_kind', 'throttle', 'updated_at', now)
    return {'throttled'}
  end
end
for _, s in ipairs(slots) do redis.call('ZADD', P .. ':slot:' .. s[1], now + ttl, id) end

local epoch = redis.call('HINCRBY', r, 'epoch', 1)
redis.call('HSET', r, 'status', 'running', 'owner', owner, 'lease_until', now + ttl,
  'updated_at', now)
redis.call('HSETNX', r, 'started_at', now)
redis.call('ZREM', READY, id)
redis.call('ZADD', LEASES, now + ttl, id)
return {'ok', tostring(epoch), redis.call('HGET', r, 'function_id'), redis.call('HGET', r, 'event'),
  redis.call('HGET', r, 'attempt'), redis.call('HGET', r, 'cancel') or '',
  redis.call('HGETALL', jk(id))}
"""
)

# ARGV: prefix, run_id, epoch, now_ms, ttl_ms
RENEW = (
    PRELUDE
    + r"""
local id, now, ttl = ARGV[2], tonumber(ARGV[4]), tonumber(ARGV[5])
if not fenced(id, ARGV[3]) then return {0, ''} end
redis.call('HSET', rk(id), 'lease_until', now + ttl)
redis.call('ZADD', LEASES, now + ttl, id)
for _, s in ipairs(slots_of(id)) do
  redis.call('ZADD', P .. ':slot:' .. s[1], 'XX', now + ttl, id)
end
return {1, redis.call('HGET', rk(id), 'cancel') or ''}
"""
)

# ARGV: prefix, run_id, epoch, step_key, record_json
COMMIT = (
    PRELUDE
    + r"""
local id = ARGV[2]
if not fenced(id, ARGV[3]) then return {0, ''} end
redis.call('HSET', jk(id), ARGV[4], ARGV[5])
return {1, redis.call('HGET', rk(id), 'cancel') or ''}
"""
)

# ARGV: prefix, run_id, epoch, step_key, now_ms
DRAIN_INBOX = (
    PRELUDE
    + r"""
local id, key, now = ARGV[2], ARGV[4], tonumber(ARGV[5])
if not fenced(id, ARGV[3]) then return {0} end
local existing = redis.call('HGET', jk(id), key)
if existing then return {1, existing} end
local events = {}
for _, rid in ipairs(redis.call('LRANGE', ik(id), 0, -1)) do
  local ev = redis.call('HGET', rk(rid), 'event')
  if ev then
    table.insert(events, ev)
    redis.call('HSET', rk(rid), 'status', 'completed', 'ended_at', now, 'updated_at', now,
      'result', cjson.encode({merged_into = id}))
  end
end
redis.call('DEL', ik(id))
local rec = '{"s":' .. now .. ',"t":' .. now .. ',"k":"inbox","v":['
  .. table.concat(events, ',') .. ']}'
redis.call('HSET', jk(id), key, rec)
return {1, rec}
"""
)

# ARGV: prefix, run_id, epoch, now_ms, wake_at_ms ('' for none), kind, step_key,
#       wait_event, waiter_json, status, count_attempt ('1' adds one to the run's attempts)
SUSPEND = (
    PRELUDE
    + r"""
local id, now, kind, key = ARGV[2], tonumber(ARGV[4]), ARGV[6], ARGV[7]
local r = rk(id)
if not fenced(id, ARGV[3]) then return 0 end
if (kind == 'wait' or kind == 'invoke') and redis.call('HEXISTS', jk(id), key) == 1 then
  return 2
end
if kind == 'wait' then
  redis.call('HSET', P .. ':waiters:' .. ARGV[8], id, ARGV[9])
  redis.call('HSET', r, 'wait_event', ARGV[8])
end
if ARGV[5] ~= '' then redis.call('ZADD', TIMERS, tonumber(ARGV[5]), id) end
if ARGV[11] == '1' then redis.call('HINCRBY', r, 'attempt', 1) end
redis.call('HSET', r, 'status', ARGV[10], 'wake_kind', kind, 'wake_step', key, 'owner', '',
  'lease_until', 0, 'updated_at', now, 'wake_since', now)
redis.call('ZREM', LEASES, id)
release_slots(id)
return 1
"""
)

# ARGV: prefix, run_id, epoch, now_ms, status, result_json, error, retention_s
FINISH = (
    PRELUDE
    + r"""
local id, now, status, result, err = ARGV[2], tonumber(ARGV[4]), ARGV[5], ARGV[6], ARGV[7]
local r = rk(id)
if not fenced(id, ARGV[3]) then return {0} end
redis.call('HSET', r, 'status', status, 'result', result, 'error', err, 'ended_at', now,
  'owner', '', 'lease_until', 0, 'updated_at', now)
redis.call('ZREM', LEASES, id); redis.call('ZREM', READY, id); redis.call('ZREM', TIMERS, id)
release_slots(id)
local parent = redis.call('HGET', r, 'parent')
if parent and parent ~= '' then
  local p = cjson.decode(parent)
  local rec
  if status == 'completed' then
    rec = '{' .. stamps(p.run_id, now) .. '"k":"invoke","v":' .. result .. '}'
  else
    rec = '{' .. stamps(p.run_id, now) .. '"k":"invoke","final":true,"e":'
      .. cjson.encode(err ~= '' and err or status) .. '}'
  end
  redis.call('HSETNX', jk(p.run_id), p.step, rec)
  local pr = rk(p.run_id)
  local parked = redis.call('HGET', pr, 'status') == 'waiting'
  if parked and redis.call('HGET', pr, 'wake_step') == p.step then
    redis.call('ZREM', TIMERS, p.run_id)
    make_ready(p.run_id, now)
    kick(p.run_id)
  end
end
release_singleton(id, now)
local keep = tonumber(ARGV[8])
redis.call('EXPIRE', r, keep); redis.call('EXPIRE', jk(id), keep)
return {1, unpack(kicks)}
"""
)

# ARGV: prefix, now_ms, ttl_ms, stale_ms, limit
REAP = (
    PRELUDE
    + r"""
local now, ttl = tonumber(ARGV[2]), tonumber(ARGV[3])
local stale, limit = tonumber(ARGV[4]), tonumber(ARGV[5])
for _, id in ipairs(redis.call('ZRANGEBYSCORE', TIMERS, '-inf', now, 'LIMIT', 0, limit)) do
  redis.call('ZREM', TIMERS, id)
  local r = rk(id)
  local st = redis.call('HGET', r, 'status')
  if st == 'sleeping' or st == 'waiting' then
    local kind = redis.call('HGET', r, 'wake_kind')
    local step = redis.call('HGET', r, 'wake_step')
    if kind == 'sleep' then
      redis.call('HSETNX', jk(id), step, '{' .. stamps(id, now) .. '"k":"sleep","v":null}')
    elseif kind == 'wait' then
      redis.call('HDEL', P .. ':waiters:' .. redis.call('HGET', r, 'wait_event'), id)
      redis.call('HSETNX', jk(id), step, '{' .. stamps(id, now) .. '"k":"wait","v":null}')
    elseif kind == 'invoke' then
      redis.call('HSETNX', jk(id), step, '{' .. stamps(id, now)
        .. '"k":"invoke","e":"the invoked function did not finish in time","final":true}')
    end
    make_ready(id, now)
    kick(id)
  end
end
for _, id in ipairs(redis.call('ZRANGEBYSCORE', LEASES, '-inf', now, 'LIMIT', 0, limit)) do
  -- the owner stopped renewing: hand the run to whoever claims it next; look again after ttl
  redis.call('ZADD', LEASES, now + ttl, id)
  kick(id)
end
for _, id in ipairs(redis.call('ZRANGEBYSCORE', READY, '-inf', now - stale, 'LIMIT', 0, limit)) do
  redis.call('ZADD', READY, now, id)
  kick(id)
end
return kicks
"""
)

# ARGV: prefix, run_id, reason. Asks a live run to stop at its next step boundary.
REQUEST_CANCEL = (
    PRELUDE
    + r"""
local r = rk(ARGV[2])
local st = redis.call('HGET', r, 'status')
if not st or TERMINAL[st] then return 0 end
redis.call('HSET', r, 'cancel', ARGV[3])
return 1
"""
)
