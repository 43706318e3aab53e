-- PUBLISH: record an event once and start what it triggers, in one round trip, only if the
-- publisher's plan is current (`Ledger.accept_event`).
-- ARGV: prefix, event_id, event_json, now_ms, dedupe_ttl_s, stream_maxlen, event_name,
--       runs_json [{id, function_id, queue, singleton, mode, slots, parent, session}],
--       buckets_json [waiter buckets the event falls in], legacy_waiters_json [run ids],
--       functions_version, waiter_paths_json, kick_template, legacy_checked ('1'),
--       keep_queue (with a kick_template: the kicks on it are returned, not pushed)
-- Returns {1, kicks...} accepted, {0} duplicate, {2, version} stale trigger table,
-- {3, paths_json} stale waiter paths, {4} unindexed waiters to match first.
-- #include prelude.lua
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
  return {1, unpack(push_kicks(ARGV[13], ARGV[15]))}
end
return {1, unpack(kicks)}
