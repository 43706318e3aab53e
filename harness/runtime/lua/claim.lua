-- CLAIM: take a run's lease (its epoch + 1), or say why not (`Ledger.claim`). A kick is
-- consumed whatever the outcome, so each run has at most one outstanding.
-- ARGV: prefix, run_id, owner, now_ms, ttl_ms, throttle_ms, kick_seq (0: not from a kick),
--       journal_version (of the claimant's copy of the journal; -1: none),
--       kick_template ("" to return the kicks; else they are pushed onto the broker here)
-- #include prelude.lua
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
  redis.call('HGET', r, 'attempt'), redis.call('HGET', r, 'cancel') or '', journal, mode, jver,
  redis.call('HGET', r, 'started_at')}
