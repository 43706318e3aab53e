-- The shared definitions of the run scripts, composed in front of every script that names it
-- (`-- #include prelude.lua`; see `harness/runtime/scripts.py`). Each script runs atomically
-- inside Redis.
--
-- Every script takes the key prefix as ARGV[1] and builds per-run key names from it (so the
-- runtime needs a single Redis, not a cluster). Scripts that a running worker calls take the
-- run's epoch (its fencing token) and refuse to act when it is not the current one: a worker
-- that lost its lease can never write to a run that someone else now owns.
--
-- Statuses: queued, pending (behind a singleton holder), running, sleeping, waiting,
-- steered (handed to the holder's inbox), and the terminal completed, failed, cancelled.
local P = ARGV[1]
local function rk(id) return P .. ':run:' .. id end
local function jk(id) return P .. ':run:' .. id .. ':steps' end
local function ik(id) return P .. ':run:' .. id .. ':inbox' end
local READY = P .. ':q:ready'
local LEASES = P .. ':q:leases'
local TIMERS = P .. ':q:timers'
local TERMINAL = {completed = true, failed = true, cancelled = true, steered = true}
local KICKED = P .. ':q:kicked'
-- Fleet-wide counters for `/metrics` (`harness.runtime.fleet_metrics`), kept by the scripts so
-- every web process reports the same numbers: runs started and finished per function
-- ('<function id>\t<started|completed|failed|cancelled>'), and the reaper's recoveries.
local METRICS_RUNS = P .. ':metrics:runs'
local METRICS_REAPER = P .. ':metrics:reaper'
local FINISHED = {completed = true, failed = true, cancelled = true}
local KICK_CHECK_MS, KICK_BACKOFF_CAP_MS = 3000, 60000
-- Counts the runs that stopped waiting on an offloaded call other than by its outcome
-- (cancelled, timed out): gateways read it every tick and renew their calls, learning which
-- to abort, only when it moved (`ModelGateway._tick`). CALL_SETTLE names the call it
-- settles in SETTLED_CALL, whose run leaving its wait is no news to a gateway.
local CALL_STOPS = P .. ':call-stops'
local SETTLED_CALL = nil
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
-- `harness.runtime.kicker.Kicker.script_template`). Kicks on queue `keep` (nil or '' for
-- none) are not pushed but returned, as the kicks list is, for the caller to hold.
local function push_kicks(template, keep)
  local parts  -- the template decoded, once a kick is pushed (none when all are kept)
  local kept = {}
  for i = 1, #kicks, 3 do
    local id, q, seq = kicks[i], kicks[i + 1], tostring(kicks[i + 2])
    if keep and keep ~= '' and q == keep then
      table.insert(kept, id); table.insert(kept, q); table.insert(kept, kicks[i + 2])
    else
      parts = parts or cjson.decode(template)
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
  return kept
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

-- Runs in `wait_for_run` are kept per watched run: the hash run:<id>:watchers maps each
-- watcher's run id to the step it waits at. The watched run's FINISH wakes them, and SUSPEND
-- resolves a watch on a run that has already ended at once: the check and the registration are
-- one script, so no ending falls between them.
local function wk(id) return P .. ':run:' .. id .. ':watchers' end

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
  if old == 'waiting' and redis.call('HGET', r, 'wake_kind') == 'call'
      and redis.call('HGET', r, 'wake_call') ~= SETTLED_CALL then
    redis.call('INCR', CALL_STOPS)
  end
  redis.call('ZADD', P .. ':runs:status:' .. new, created, id)
  if FINISHED[new] then
    local fn = redis.call('HGET', r, 'function_id') or ''
    redis.call('HINCRBY', METRICS_RUNS, fn .. '\t' .. new, 1)
  end
end

local function index_in(key, id, now)
  redis.call('ZADD', key, now, id)
  redis.call('SADD', P .. ':runs:indexes', key)
end

local function index_new_run(run, now)
  index_in(P .. ':runs:fn:' .. run.function_id, run.id, now)
  redis.call('HINCRBY', METRICS_RUNS, run.function_id .. '\t' .. 'started', 1)
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
