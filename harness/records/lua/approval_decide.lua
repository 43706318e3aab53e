-- Answer (or expire) an approval request: the first answer counts. Of two clicks, or of a
-- click and the timeout, exactly one changes the record; every later attempt is told what
-- happened instead. Only a listed approver may answer (or, with others = 'allowed', an allowed
-- group member); a request whose run has ended counts as expired (`ApprovalStore`).
-- KEYS: the request's hash, the run hash prefix
-- ARGV: state (approved, denied, session, expired), subject, now_ms, by (display name),
--       other_allowed ('1'), for_nobody ('1': the harness decides, the request was not shown),
--       override ('1': the operator answers from the console over the approvers, recorded
--       as "<by>, overriding <approvers>")
-- Returns {outcome, state, by, at, subject}.
if redis.call('EXISTS', KEYS[1]) == 0 then return {'unknown', '', '', '', ''} end
local state = redis.call('HGET', KEYS[1], 'state')
local by = redis.call('HGET', KEYS[1], 'by') or ''
local at = redis.call('HGET', KEYS[1], 'at') or ''
local who = redis.call('HGET', KEYS[1], 'who') or ''
if state ~= 'pending' then
  if state == 'expired' then return {'expired', state, by, at, who} end
  return {'answered', state, by, at, who}
end
local run = redis.call('HGET', KEYS[1], 'run')
if run and ARGV[1] ~= 'expired' then
  local status = redis.call('HGET', KEYS[2] .. run, 'status')
  if (not status) or status == 'completed' or status == 'failed' or status == 'cancelled' then
    redis.call('HSET', KEYS[1], 'state', 'expired', 'at', ARGV[3])
    return {'expired', 'expired', '', ARGV[3], ''}
  end
end
if ARGV[1] == 'expired' then
  redis.call('HSET', KEYS[1], 'state', 'expired', 'at', ARGV[3])
  return {'recorded', 'expired', '', ARGV[3], ''}
end
local approvers = cjson.decode(redis.call('HGET', KEYS[1], 'approvers'))
local label = ARGV[4]
if #approvers > 0 and ARGV[7] == '1' then
  label = label .. ', overriding ' .. table.concat(approvers, ', ')
-- ARGV[6] == '1': the harness decides for nobody (the request could not be shown)
elseif #approvers > 0 and ARGV[6] ~= '1' then
  local ok = false
  for _, who in ipairs(approvers) do if who == ARGV[2] then ok = true end end
  -- in a group with AGENT_APPROVAL_GROUP_ANSWER=allowed, any allowed member may answer too
  if redis.call('HGET', KEYS[1], 'others') == 'allowed' and ARGV[5] == '1' then ok = true end
  if not ok then return {'forbidden', state, by, at, who} end
end
redis.call('HSET', KEYS[1], 'state', ARGV[1], 'by', label, 'at', ARGV[3], 'who', ARGV[2])
return {'recorded', ARGV[1], label, ARGV[3], ARGV[2]}
