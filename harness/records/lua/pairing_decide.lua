-- Approve or deny a pairing code, at most once: the code is spent whatever the answer, and an
-- expired code grants nothing (`AccessStore`).
-- KEYS: codes hash, approved hash, denied hash, pending-code key prefix
-- ARGV: code, now_ms, 'approve' or 'deny'
-- Returns the code's record (JSON), or false when it is unknown, spent or expired.
local raw = redis.call('HGET', KEYS[1], ARGV[1])
if not raw then return false end
local code = cjson.decode(raw)
redis.call('HDEL', KEYS[1], ARGV[1])
redis.call('DEL', KEYS[4] .. code.subject)
if tonumber(code.expires_ms) < tonumber(ARGV[2]) then return false end
if ARGV[3] == 'approve' then
  local grant = {label = code.label, approved_ms = tonumber(ARGV[2]), via = 'code ' .. ARGV[1]}
  redis.call('HSET', KEYS[2], code.subject, cjson.encode(grant))
  redis.call('HDEL', KEYS[3], code.subject)
else
  redis.call('HSET', KEYS[3], code.subject, cjson.encode({ms = tonumber(ARGV[2])}))
end
return raw
