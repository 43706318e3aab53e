-- FINISH: end a run under its fence, record its result in a waiting parent's journal and wake
-- it (not a detached child's parent), wake the runs watching it (`wait_for_run`), and pass its
-- singleton lock on (`Ledger.finish`).
-- ARGV: prefix, run_id, epoch, now_ms, status, result_json, error, retention_s,
--       kick_template ("" to return the kicks; else they are pushed onto the broker here),
--       keep_queue (with a kick_template: the kicks on it are returned, not pushed)
-- Returns {1, kicks...} finished, {0} fenced out.
-- #include prelude.lua
local id, now, status, result, err = ARGV[2], tonumber(ARGV[4]), ARGV[5], ARGV[6], ARGV[7]
local r = rk(id)
if not fenced(id, ARGV[3]) then return {0} end
index_status(id, status)
redis.call('HSET', r, 'status', status, 'result', result, 'error', err, 'ended_at', now,
  'owner', '', 'lease_until', 0, 'updated_at', now)
redis.call('ZREM', LEASES, id); redis.call('ZREM', READY, id); redis.call('ZREM', TIMERS, id)
release_slots(id)
local parent = redis.call('HGET', r, 'parent')
local p = (parent and parent ~= '') and cjson.decode(parent) or nil
-- a detached child (`Step.start`) is listed under its parent but wakes nothing there
if p and not p.detached then
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
-- a watcher still parked at the step it registered is woken; one that moved on is not
local watchers = redis.call('HGETALL', wk(id))
for i = 1, #watchers, 2 do
  local w, step = watchers[i], watchers[i + 1]
  local wr = rk(w)
  if redis.call('HGET', wr, 'status') == 'waiting' and redis.call('HGET', wr, 'wake_kind') == 'wait'
    and redis.call('HGET', wr, 'wake_step') == step then
    drop_waiter(w)
    jset(w, step, '{' .. stamps(w, now) .. '"k":"wait","v":null,"ended":true}', true)
    redis.call('ZREM', TIMERS, w)
    make_ready(w, now)
    kick(w, now)
  end
end
redis.call('DEL', wk(id))
release_singleton(id, now)
local keep = tonumber(ARGV[8])
redis.call('EXPIRE', r, keep); redis.call('EXPIRE', jk(id), keep)
if (ARGV[9] or '') ~= '' then
  return {1, unpack(push_kicks(ARGV[9], ARGV[10]))}
end
return {1, unpack(kicks)}
