-- COMMIT: write one step's journal record under the run's fence (`Ledger.commit_step`), and
-- add the step to the fleet's `/metrics` counters with it.
-- ARGV: prefix, run_id, epoch, step_key, record_json, then counter additions in threes:
--   hash name (`steps`, `tokens`: '<prefix>:metrics:<name>'), field, increment
--   (`harness.runtime.step_counters.step_counts`)
-- Every new step runs this, so it is written out without the prelude (whose definitions Redis
-- would run on every call) and reads the fence and the cancel request in one HMGET: what
-- `fenced` and `jset` do, in three commands instead of six. The counters ride along so that
-- committing a step is one round trip, and a step fenced out counts nothing. Returns nil when
-- fenced out, else the run's cancel request ('' for none): one bulk reply, cheaper to read
-- than a list.
local r = ARGV[1] .. ':run:' .. ARGV[2]
local run = redis.call('HMGET', r, 'epoch', 'status', 'cancel', 'jver')
if run[1] ~= ARGV[3] or run[2] ~= 'running' then return false end
redis.call('HSET', r .. ':steps', ARGV[4], ARGV[5])
redis.call('HSET', r, 'jver', (tonumber(run[4]) or 0) + 1, 'jlast', ARGV[4])
for i = 6, #ARGV - 2, 3 do
  redis.call('HINCRBY', ARGV[1] .. ':metrics:' .. ARGV[i], ARGV[i + 1], ARGV[i + 2])
end
return run[3] or ''
