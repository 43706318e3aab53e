-- COMMIT: write one step's journal record under the run's fence (`Ledger.commit_step`), and
-- add the step to the fleet's `/metrics` counters with it.
-- ARGV: prefix, run_id, epoch, step_key, record_json, the step's tries ('0' for a step that
--   is not tried: a send), then optionally the counters
--   (`harness.runtime.step_counters.step_counts`): function id ('' for none), duration
--   bucket, milliseconds; then for a model call the model and (slot, increment) pairs.
-- The run hash's `step_tries` keeps the most tries one step of the run took, so the run list
-- reads one field per run instead of decoding every step of every run it shows
-- (`RunIndex.step_tries`); it rides on the HSET the journal version needs anyway.
-- Every new step runs this, so it is written out without the prelude (whose definitions Redis
-- would run on every call) and reads the fence and the cancel request in one HMGET: what
-- `fenced` and `jset` do, in three commands instead of six. The counters ride along so that
-- committing a step is one round trip, and a step fenced out counts nothing; a plain step
-- sends them as three arguments, the fewest that measured cheapest. Returns nil when fenced
-- out, else the run's cancel request ('' for none): one bulk reply, cheaper to read than a
-- list.
local r = ARGV[1] .. ':run:' .. ARGV[2]
local run = redis.call('HMGET', r, 'epoch', 'status', 'cancel', 'jver', 'step_tries')
if run[1] ~= ARGV[3] or run[2] ~= 'running' then return false end
redis.call('HSET', r .. ':steps', ARGV[4], ARGV[5])
local version, tries = (tonumber(run[4]) or 0) + 1, tonumber(ARGV[6]) or 0
if tries > (tonumber(run[5]) or 0) then
  redis.call('HSET', r, 'jver', version, 'jlast', ARGV[4], 'step_tries', tries)
else
  redis.call('HSET', r, 'jver', version, 'jlast', ARGV[4])
end
if ARGV[7] and ARGV[7] ~= '' then
  local steps, fn = ARGV[1] .. ':metrics:steps', ARGV[7] .. '\t'
  redis.call('HINCRBY', steps, fn .. ARGV[8], 1)
  redis.call('HINCRBY', steps, fn .. 'sum_ms', ARGV[9])
end
if ARGV[10] then
  local tokens, model = ARGV[1] .. ':metrics:tokens', ARGV[10] .. '\t'
  for i = 11, #ARGV - 1, 2 do redis.call('HINCRBY', tokens, model .. ARGV[i], ARGV[i + 1]) end
end
return run[3] or ''
