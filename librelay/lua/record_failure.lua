-- record_failure.lua KEYS[1]=state hash
-- ARGV: field attempt token now_ms backoff_ms [timeline_entry
-- [outcomes_key maxlen message_id]]
-- Twin of relay__inv_decide_failure(): only the current running claim.
-- The attempt's timeline entry goes in the same HSET (R-3).
local key, field = KEYS[1], ARGV[1]
local attempt, token = tonumber(ARGV[2]), ARGV[3]
local stop, s, old = relay_claim(key, field, attempt, token,
	ARGV[6] and attempt > 1)
if stop then
	return stop
end
local entry, bad = relay_tl_arg(ARGV[6])
if bad then
	return bad
end
s.deadline = tonumber(ARGV[4]) + tonumber(ARGV[5])
relay_hset_tl(key, field, 'next_attempt_at:' .. relay_fmt(s.deadline) ..
	':' .. relay_fmt(s.attempt) .. ':' .. token, old, entry)
redis.call('PERSIST', key)
relay_outcome(ARGV[7], ARGV[8], ARGV[9], field, entry)
return relay_reply('recorded', s)
