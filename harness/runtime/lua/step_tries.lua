-- STEP TRIES: the most tries any step of each run took, read where the journals are, for the
-- runs whose hash has no `step_tries` yet (`RunIndex.step_tries`; COMMIT keeps that field).
-- KEYS: the journal hash of each run
-- Returns one integer per key: the largest `n` among its entries (0: no step recorded an `n`).
-- Reading here spares the caller every step's value, which can be large (a model's answer).
local out = {}
for i, key in ipairs(KEYS) do
  local most = 0
  for _, raw in ipairs(redis.call('HVALS', key)) do
    local ok, entry = pcall(cjson.decode, raw)
    if ok and type(entry) == 'table' and type(entry.n) == 'number' and entry.n > most then
      most = entry.n
    end
  end
  out[i] = most
end
return out
