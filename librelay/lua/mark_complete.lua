-- mark_complete.lua KEYS[1]=state hash ARGV: field attempt token
-- [timeline_entry [outcomes_key maxlen message_id]]
-- Twin of relay__inv_decide_complete(): never overwrites exhausted. The
-- attempt's timeline entry goes in the same HSET (R-3).
local key, field = KEYS[1], ARGV[1]
local attempt, token = tonumber(ARGV[2]), ARGV[3]
local stop, s, old = relay_claim(key, field, attempt, token,
	ARGV[4] and attempt > 1)
if stop then
	return stop
end
local entry, bad = relay_tl_arg(ARGV[4])
if bad then
	return bad
end
relay_hset_tl(key, field, 'ok', old, entry)
redis.call('PERSIST', key)
relay_outcome(ARGV[5], ARGV[6], ARGV[7], field, entry)
return relay_reply('recorded', s)
