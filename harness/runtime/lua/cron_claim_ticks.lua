-- Claim the due ticks of one cron trigger by compare-and-set on the last tick handled, so only
-- one of several schedulers publishes them (`harness.runtime.cron_ticks`).
-- KEYS: the trigger's last-tick key
-- ARGV: the last tick read (ms), the newest due tick (ms)
-- Returns 1 when claimed, 0 when another scheduler moved the value first.
local cur = redis.call('GET', KEYS[1])
if (cur or '') ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[2])
return 1
