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
local KICKED = P .. ':q:kicked'
local KICK_CHECK_MS, KICK_BACKOFF_CAP_MS = 3000, 60000
local kicks = {}

-- how long to wait before looking again at a kick sent `tries` times over
local function backoff(tries) return math.min(KICK_CHECK_MS * 2 ^ tries, KICK_BACKOFF_CAP_MS) end

-- Send (through the caller) a kick for run `id`, unless one is already outstanding: each run
-- has at most one kick in flight. The kick gets the next sequence number of its queue and is
-- tracked in KICKED until a worker takes it (CLAIM) or the reaper finds it lost (REAP).
local function send_kick(id, now, tries)
  local r = rk(id)
  local q = redis.call('HGET', r, 'queue') or 'harness'
  local seq = redis.call('INCR', P .. ':kick:sent:' .. q)
  redis.call('HSET', r, 'kick_seq', seq, 'kick_tries', tries)
  redis.call('ZADD', KICKED, now + backoff(tries), id)
  table.insert(kicks, id)
  table.insert(kicks, q)
  table.insert(kicks, seq)
end

-- true when a kick was sent (none was outstanding)
local function kick(id, now)
  if redis.call('ZSCORE', KICKED, id) then return false end
  send_kick(id, now, 0)
  return true
end

-- Put the kicks collected so far straight onto their queues' lists on the broker (this same
-- Redis), instead of returning them for the caller to send. `template` is the JSON list of
-- the broker's message for a kick split at its blanks: literal text, then a blank's name
-- (ID, a message id; RUN; SEQ; QUEUE, JSON-escaped), and so on (see
-- `harness.runtime.kicker.Kicker.script_template`).
local function push_kicks(template)
  local parts = cjson.decode(template)
  for i = 1, #kicks, 3 do
    local id, q, seq = kicks[i], kicks[i + 1], tostring(kicks[i + 2])
    local fill = {
      ID = string.sub(cjson.encode(P .. ':' .. id .. ':' .. q .. ':' .. seq), 2, -2),
      RUN = id, SEQ = seq, QUEUE = string.sub(cjson.encode(q), 2, -2),
    }
    local msg = {}
    for j, part in ipairs(parts) do
      if j % 2 == 1 then msg[j] = part else msg[j] = fill[part] end
    end
    redis.call('LPUSH', q, table.concat(msg))
  end
end

-- '"s":<ms>,"t":<ms>,': when a suspended step of run `id` began (its wake_since) and ended
local function stamps(id, now)
  local since = redis.call('HGET', rk(id), 'wake_since')
  if not since or since == '' then since = now end
  return '"s":' .. since .. ',"t":' .. now .. ','
end

-- Waiters (runs in `wait_for_event`) are indexed by event name and match value: the hash
-- waiting:<name>:<bucket> holds the run ids, where the bucket is '<path>=<JSON value>' or '*'
-- (any event of the name), and waitpaths:<name> counts the waiters per path, so a publisher
-- looks only at the buckets its event falls in.
local function waiter_key(name, bucket) return P .. ':waiting:' .. name .. ':' .. bucket end

local function bucket_path(bucket)
  if bucket == '*' then return '*' end
  return string.match(bucket, '^([^=]*)=')
end

local function add_waiter(id, name, bucket)
  redis.call('HSET', waiter_key(name, bucket), id, 1)
  redis.call('HINCRBY', P .. ':waitpaths:' .. name, bucket_path(bucket), 1)
  redis.call('HSET', rk(id), 'wait_event', name, 'wait_bucket', bucket)
end

-- Take run `id` off the waiters of the event it waits for; true when it was on them.
local function drop_waiter(id)
  local r = rk(id)
  local name = redis.call('HGET', r, 'wait_event')
  if not name then return false end
  local bucket = redis.call('HGET', r, 'wait_bucket')
  if not bucket or bucket == '' then  -- waiting since before waiters were indexed
    return redis.call('HDEL', P .. ':waiters:' .. name, id) == 1
  end
  if redis.call('HDEL', waiter_key(name, bucket), id) == 0 then return false end
  local paths = P .. ':waitpaths:' .. name
  local path = bucket_path(bucket)
  if redis.call('HINCRBY', paths, path, -1) <= 0 then redis.call('HDEL', paths, path) end
  return true
end

-- Write a journal record. Every write bumps the run's journal version (`jver`) and names its
-- key (`jlast`), so a worker that kept the journal when the run suspended can resume it with
-- only what changed since (see CLAIM).
local function jset(id, key, rec, only_new)
  if only_new then
    if redis.call('HSETNX', jk(id), key, rec) == 0 then return end
  else
    redis.call('HSET', jk(id), key, rec)
  end
  redis.call('HINCRBY', rk(id), 'jver', 1)
  redis.call('HSET', rk(id), 'jlast', key)
end

-- Runs are indexed by function, chat session, status and parent run: sorted sets of run ids
-- scored by creation time (runs:fn:<id>, runs:session:<key>, runs:status:<status>,
-- runs:parent:<run id>), so a filtered listing or a run's sub-runs read only the runs that
-- match. runs:indexes names the function, session and parent indexes, for the retention trim.
-- Every status write goes through index_status first.
local function index_status(id, new)
  local r = rk(id)
  local old = redis.call('HGET', r, 'status')
  if old == new then return end
  local created = redis.call('HGET', r, 'created_at')
  if not created then return end
  if old then redis.call('ZREM', P .. ':runs:status:' .. old, id) end
  redis.call('ZADD', P .. ':runs:status:' .. new, created, id)
end

local function index_in(key, id, now)
  redis.call('ZADD', key, now, id)
  redis.call('SADD', P .. ':runs:indexes', key)
end

local function index_new_run(run, now)
  index_in(P .. ':runs:fn:' .. run.function_id, run.id, now)
  redis.call('ZADD', P .. ':runs:status:queued', now, run.id)
  if run.session and run.session ~= '' then
    index_in(P .. ':runs:session:' .. run.session, run.id, now)
  end
  if run.parent and run.parent ~= '' then
    index_in(P .. ':runs:parent:' .. cjson.decode(run.parent).run_id, run.id, now)
  end
end

local function make_ready(id, now)
  index_status(id, 'queued')
  redis.call('HSET', rk(id), 'status', 'queued', 'updated_at', now)
  redis.call('ZADD', READY, now, id)
end

-- A run in a wait that a steering message may end (`wait_for_event(wake_on_inbox=True)`)
-- resumes when one is handed to it: the wait step is recorded as ended by the inbox.
local function wake_for_inbox(id, now)
  local r = rk(id)
  if redis.call('HGET', r, 'status') ~= 'waiting' or redis.call('HGET', r, 'wake_inbox') ~= '1' then
    return
  end
  if redis.call('HGET', r, 'wake_kind') ~= 'wait' or not drop_waiter(id) then return end
  local step = redis.call('HGET', r, 'wake_step')
  jset(id, step, '{' .. stamps(id, now) .. '"k":"wait","v":null,"inbox":true}', true)
  redis.call('ZREM', TIMERS, id)
  make_ready(id, now)
  kick(id, now)
end

-- A run asked to stop while it sleeps or waits (a wait for a person's answer can last half an
-- hour) is queued again at once: its next step boundary raises the cancellation.
local function wake_to_stop(id, now)
  local st = redis.call('HGET', rk(id), 'status')
  if st ~= 'sleeping' and st ~= 'waiting' then return end
  if redis.call('HGET', rk(id), 'wake_kind') == 'wait' then drop_waiter(id) end
  redis.call('ZREM', TIMERS, id)
  make_ready(id, now)
  kick(id, now)
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
    index_status(id, 'pending')
    redis.call('HSET', r, 'status', 'pending', 'updated_at', now)
    redis.call('ZREM', READY, id)
    local nxt = redis.call('LPOP', fifo)
    redis.call('SET', lock, nxt)
    make_ready(nxt, now)
    kick(nxt, now)
    return 'pending'
  end
  redis.call('ZREM', READY, id)
  local mode = redis.call('HGET', r, 'mode')
  if mode == 'steer' then
    redis.call('RPUSH', ik(holder), id)
    index_status(id, 'steered')
    redis.call('HSET', r, 'status', 'steered', 'steered_into', holder, 'updated_at', now)
    wake_for_inbox(holder, now)
    return 'steered'
  end
  redis.call('RPUSH', fifo, id)
  index_status(id, 'pending')
  redis.call('HSET', r, 'status', 'pending', 'updated_at', now)
  if mode == 'cancel' then
    redis.call('HSET', rk(holder), 'cancel', id)
    wake_to_stop(holder, now)
  end
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
    index_status(left[i], 'pending')
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
  kick(nxt, now)
  local mode = redis.call('HGET', rk(id), 'mode')
  if mode == 'steer' or mode == 'cancel' then
    -- the new holder takes every later event as steering, so they are seen, in order, at once
    for _, r in ipairs(redis.call('LRANGE', fifo, 0, -1)) do
      redis.call('RPUSH', ik(nxt), r)
      index_status(r, 'steered')
      redis.call('HSET', rk(r), 'status', 'steered', 'steered_into', nxt)
    end
    redis.call('DEL', fifo)
  end
end
"""

# ARGV: prefix, event_id, event_json, now_ms, dedupe_ttl_s, stream_maxlen, event_name,
#       runs_json [{id, function_id, queue, singleton, mode, slots, parent, session}],
#       buckets_json [waiter buckets the event falls in], legacy_waiters_json [run ids]
PUBLISH = (
    PRELUDE
    + r"""
local eid, ev, now, name = ARGV[2], ARGV[3], tonumber(ARGV[4]), ARGV[7]
-- The caller planned the runs and the waiter buckets from what it last read (ARGV[11]: the
-- trigger table's version; ARGV[12]: the match paths of the name's waiters). If either is out
-- of date, nothing is done and the caller plans again with what this returns: so a publish is
-- one round trip, and the plan is checked atomically with the write.
if (redis.call('GET', P .. ':functions:version') or '') ~= ARGV[11] then
  return {2, redis.call('GET', P .. ':functions:version') or ''}
end
local planned = {}
for _, path in ipairs(cjson.decode(ARGV[12])) do planned[path] = true end
local paths = redis.call('HKEYS', P .. ':waitpaths:' .. name)
for _, path in ipairs(paths) do
  if not planned[path] then return {3, cjson.encode(paths)} end
end
if ARGV[14] ~= '1' and redis.call('EXISTS', P .. ':waiters:' .. name) == 1 then
  return {4}  -- waiters recorded before they were indexed: the caller matches them (ARGV[10])
end
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
    index_new_run(run, now)
    if route(run.id, now) == 'own' then
      redis.call('ZADD', READY, now, run.id)
      kick(run.id, now)
    end
  end
end
local function wake(id)
  local step = redis.call('HGET', rk(id), 'wake_step')
  jset(id, step, '{' .. stamps(id, now) .. '"k":"wait","v":' .. ev .. '}', true)
  redis.call('ZREM', TIMERS, id)
  make_ready(id, now)
  kick(id, now)
end
for _, bucket in ipairs(cjson.decode(ARGV[9])) do
  for _, id in ipairs(redis.call('HKEYS', waiter_key(name, bucket))) do
    if drop_waiter(id) then wake(id) end
  end
end
for _, id in ipairs(cjson.decode(ARGV[10])) do
  if redis.call('HDEL', P .. ':waiters:' .. name, id) == 1 then wake(id) end
end
if ARGV[13] ~= '' then
  push_kicks(ARGV[13])
  return {1}
end
return {1, unpack(kicks)}
"""
)

# ARGV: prefix, run_id, owner, now_ms, ttl_ms, throttle_ms, kick_seq (0: not from a kick),
#       journal_version (of the claimant's copy of the journal; -1: none)
#       kick_template ("" to return the kicks; else they are pushed onto the broker here)
CLAIM = (
    PRELUDE
    + r"""
local id, owner, now, ttl = ARGV[2], ARGV[3], tonumber(ARGV[4]), tonumber(ARGV[5])
local r = rk(id)
-- this kick is taken: the run's kick is no longer outstanding, and its queue has delivered
-- every kick up to this one's sequence number (the reaper's test for a lost kick)
redis.call('ZREM', KICKED, id)
local seq = tonumber(ARGV[7]) or 0
local st = redis.call('HGET', r, 'status')
if seq > 0 and st then
  local taken = P .. ':kick:taken:' .. (redis.call('HGET', r, 'queue') or 'harness')
  if seq > (tonumber(redis.call('GET', taken)) or 0) then redis.call('SET', taken, seq) end
end
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
  if res ~= 'own' then
    if (ARGV[9] or '') ~= '' then
      push_kicks(ARGV[9])
      return {res, ''}
    end
    return {res, '', unpack(kicks)}
  end
end

local slots = slots_of(id)
for _, s in ipairs(slots) do
  local z = P .. ':slot:' .. s[1]
  redis.call('ZREMRANGEBYSCORE', z, '-inf', now)
  if (not redis.call('ZSCORE', z, id)) and redis.call('ZCARD', z) >= tonumber(s[2]) then
    redis.call('ZREM', READY, id)
    redis.call('ZADD', TIMERS, now + tonumber(ARGV[6]), id)
    index_status(id, 'sleeping')
    redis.call('HSET', r, 'status', 'sleeping', 'wake_kind', 'throttle', 'updated_at', now)
    return {'throttled'}
  end
end
for _, s in ipairs(slots) do redis.call('ZADD', P .. ':slot:' .. s[1], now + ttl, id) end

local epoch = redis.call('HINCRBY', r, 'epoch', 1)
index_status(id, 'running')
redis.call('HSET', r, 'status', 'running', 'owner', owner, 'lease_until', now + ttl,
  'updated_at', now)
redis.call('HSETNX', r, 'started_at', now)
redis.call('ZREM', READY, id)
redis.call('ZADD', LEASES, now + ttl, id)
-- The journal: nothing when the claimant's copy is current ('same'), the one record written
-- since its copy ('delta'), else all of it ('full'); a resume does not read its whole history.
local have, jver = tonumber(ARGV[8]) or -1, tonumber(redis.call('HGET', r, 'jver')) or 0
local mode, journal = 'full', nil
if have == jver then
  mode, journal = 'same', {}
elseif have >= 0 and have + 1 == jver then
  local last = redis.call('HGET', r, 'jlast')
  mode, journal = 'delta', {last, redis.call('HGET', jk(id), last)}
else
  journal = redis.call('HGETALL', jk(id))
end
return {'ok', tostring(epoch), redis.call('HGET', r, 'function_id'), redis.call('HGET', r, 'event'),
  redis.call('HGET', r, 'attempt'), redis.call('HGET', r, 'cancel') or '', journal, mode, jver}
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
# Every new step runs this, so it is written out without the prelude (whose definitions Redis
# would run on every call) and reads the fence and the cancel request in one HMGET: what
# `fenced` and `jset` do, in three commands instead of six. Returns nil when fenced out, else
# the run's cancel request ('' for none): one bulk reply, cheaper to read than a list.
COMMIT = r"""
local r = ARGV[1] .. ':run:' .. ARGV[2]
local run = redis.call('HMGET', r, 'epoch', 'status', 'cancel', 'jver')
if run[1] ~= ARGV[3] or run[2] ~= 'running' then return false end
redis.call('HSET', r .. ':steps', ARGV[4], ARGV[5])
redis.call('HSET', r, 'jver', (tonumber(run[4]) or 0) + 1, 'jlast', ARGV[4])
return run[3] or ''
"""

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
    index_status(rid, 'completed')
    redis.call('HSET', rk(rid), 'status', 'completed', 'ended_at', now, 'updated_at', now,
      'result', cjson.encode({merged_into = id}))
  end
end
redis.call('DEL', ik(id))
local rec = '{"s":' .. now .. ',"t":' .. now .. ',"k":"inbox","v":['
  .. table.concat(events, ',') .. ']}'
jset(id, key, rec, false)
return {1, rec}
"""
)

# ARGV: prefix, run_id, epoch, now_ms, wake_at_ms ('' for none), kind, step_key,
#       wait_event, waiter_bucket, status, count_attempt ('1' adds one to the run's attempts),
#       wake_inbox ('1': a wait that an event handed to the run's inbox also ends)
SUSPEND = (
    PRELUDE
    + r"""
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
redis.call('HSET', r, 'wake_inbox', ARGV[12])
if kind == 'wait' then add_waiter(id, ARGV[8], ARGV[9]) end
if ARGV[5] ~= '' then redis.call('ZADD', TIMERS, tonumber(ARGV[5]), id) end
if ARGV[11] == '1' then redis.call('HINCRBY', r, 'attempt', 1) end
index_status(id, ARGV[10])
redis.call('HSET', r, 'status', ARGV[10], 'wake_kind', kind, 'wake_step', key, 'owner', '',
  'lease_until', 0, 'updated_at', now, 'wake_since', now)
redis.call('ZREM', LEASES, id)
release_slots(id)
return {1, tonumber(redis.call('HGET', r, 'jver')) or 0}
"""
)

# ARGV: prefix, run_id, epoch, now_ms. A stopping worker hands a run back: queued and kicked
# again at once, its lease gone (so the old execution's writes are refused).
RELEASE = (
    PRELUDE
    + r"""
local id, now = ARGV[2], tonumber(ARGV[4])
if not fenced(id, ARGV[3]) then return {0} end
redis.call('HSET', rk(id), 'owner', '', 'lease_until', 0)
redis.call('ZREM', LEASES, id)
release_slots(id)
make_ready(id, now)
kick(id, now)
return {1, unpack(kicks)}
"""
)

# ARGV: prefix, run_id, epoch, now_ms, status, result_json, error, retention_s,
#       kick_template ("" to return the kicks; else they are pushed onto the broker here)
FINISH = (
    PRELUDE
    + r"""
local id, now, status, result, err = ARGV[2], tonumber(ARGV[4]), ARGV[5], ARGV[6], ARGV[7]
local r = rk(id)
if not fenced(id, ARGV[3]) then return {0} end
index_status(id, status)
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
  jset(p.run_id, p.step, rec, true)
  local pr = rk(p.run_id)
  local parked = redis.call('HGET', pr, 'status') == 'waiting'
  if parked and redis.call('HGET', pr, 'wake_step') == p.step then
    redis.call('ZREM', TIMERS, p.run_id)
    make_ready(p.run_id, now)
    kick(p.run_id, now)
  end
end
release_singleton(id, now)
local keep = tonumber(ARGV[8])
redis.call('EXPIRE', r, keep); redis.call('EXPIRE', jk(id), keep)
if (ARGV[9] or '') ~= '' then
  push_kicks(ARGV[9])
  return {1}
end
return {1, unpack(kicks)}
"""
)

# ARGV: prefix, now_ms, ttl_ms, limit, idle_queues_json [queues whose broker holds no kick]
REAP = (
    PRELUDE
    + r"""
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
"""
)

# ARGV: prefix, run_id, reason, now_ms. Asks a live run to stop at its next step boundary
# (a sleeping or waiting run is queued again for it, and its kick returned).
REQUEST_CANCEL = (
    PRELUDE
    + r"""
local r = rk(ARGV[2])
local st = redis.call('HGET', r, 'status')
if not st or TERMINAL[st] then return {0} end
redis.call('HSET', r, 'cancel', ARGV[3])
wake_to_stop(ARGV[2], tonumber(ARGV[4]))
return {1, unpack(kicks)}
"""
)
