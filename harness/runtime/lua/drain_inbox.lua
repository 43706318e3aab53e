-- DRAIN_INBOX: move the events handed to a run's inbox (steer mode) into its journal under
-- one step key, once; the handed-over runs complete as merged (`Ledger.drain_inbox`).
-- ARGV: prefix, run_id, epoch, step_key, now_ms
-- Returns {1, record} (the existing record on replay), {0} when fenced out.
-- #include prelude.lua
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
