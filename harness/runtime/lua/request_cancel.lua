-- REQUEST_CANCEL: ask a live run to stop at its next step boundary; a sleeping or waiting run
-- is queued again for it (`Ledger.request_cancel`).
-- ARGV: prefix, run_id, reason, now_ms
-- Returns {1, kicks...} asked, {0} when the run is unknown or already ended.
-- #include prelude.lua
local r = rk(ARGV[2])
local st = redis.call('HGET', r, 'status')
if not st or TERMINAL[st] then return {0} end
redis.call('HSET', r, 'cancel', ARGV[3])
wake_to_stop(ARGV[2], tonumber(ARGV[4]))
return {1, unpack(kicks)}
