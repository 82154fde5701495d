-- mark_exhausted.lua KEYS[1]=state hash ARGV: field attempt token
-- [timeline_entry [outcomes_key maxlen message_id]]
-- Twin of relay__inv_decide_exhausted(); a repeat for the same claim is
-- "recorded" without a write. The attempt's timeline entry goes in the
-- same HSET (R-3).
local key, field = KEYS[1], ARGV[1]
local attempt, token = tonumber(ARGV[2]), ARGV[3]
local early, s, old = relay_load(key, field, ARGV[4] and attempt > 1)
if early then
	return early
end
if s.attempt == attempt and s.token == token then
	if s.kind == 'exhausted' then
		return relay_reply('recorded', s)
	end
	if s.kind == 'running' then
		local entry, bad = relay_tl_arg(ARGV[4])
		if bad then
			return bad
		end
		relay_hset_tl(key, field, 'exhausted:' .. relay_fmt(attempt) ..
			':' .. token, old, entry)
		redis.call('PERSIST', key)
		relay_outcome(ARGV[5], ARGV[6], ARGV[7], field, entry)
		return { 'recorded', attempt, 0, token }
	end
end
return relay_reply('stale', s)
