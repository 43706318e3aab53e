-- Make a set of specs the whole set of functions of one source (the sidecar's files), with its
-- load errors and its other declarations (networks), atomically: ids the source no longer
-- declares leave the trigger table in the same instant the new set arrives (`harness.runtime.function_sources.replace_source`).
-- KEYS: functions hash, version counter, source set, origins hash, errors string,
--       declarations string
-- ARGV: {id: spec json}, {id: origin json}, errors json, declarations json
local specs = cjson.decode(ARGV[1])
local origins = cjson.decode(ARGV[2])
for _, id in ipairs(redis.call('SMEMBERS', KEYS[3])) do
  if specs[id] == nil then
    redis.call('HDEL', KEYS[1], id)
    redis.call('HDEL', KEYS[4], id)
  end
end
redis.call('DEL', KEYS[3])
for id, spec in pairs(specs) do
  redis.call('HSET', KEYS[1], id, spec)
  redis.call('HSET', KEYS[4], id, origins[id])
  redis.call('SADD', KEYS[3], id)
end
redis.call('SET', KEYS[5], ARGV[3])
redis.call('SET', KEYS[6], ARGV[4])
redis.call('INCR', KEYS[2])
return 1
