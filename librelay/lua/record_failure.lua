-- record_failure.lua KEYS[1]=state hash
-- ARGV: field attempt token now_ms backoff_ms
-- Twin of relay__inv_decide_failure(): only the current running claim.
local key, field = KEYS[1], ARGV[1]
local attempt, token = tonumber(ARGV[2]), ARGV[3]
local stop, s = relay_claim(key, field, attempt, token)
if stop then
	return stop
end
s.deadline = tonumber(ARGV[4]) + tonumber(ARGV[5])
redis.call('HSET', key, field, 'next_attempt_at:' .. relay_fmt(s.deadline) ..
	':' .. relay_fmt(s.attempt) .. ':' .. token)
redis.call('PERSIST', key)
return relay_reply('recorded', s)
