-- mark_exhausted.lua KEYS[1]=state hash ARGV: field attempt token
-- Twin of relay__inv_decide_exhausted(); a repeat for the same claim is
-- "recorded" without a write.
local key, field = KEYS[1], ARGV[1]
local attempt, token = tonumber(ARGV[2]), ARGV[3]
local early, s = relay_load(key, field)
if early then
	return early
end
if s.attempt == attempt and s.token == token then
	if s.kind == 'exhausted' then
		return relay_reply('recorded', s)
	end
	if s.kind == 'running' then
		redis.call('HSET', key, field, 'exhausted:' ..
			relay_fmt(attempt) .. ':' .. token)
		redis.call('PERSIST', key)
		return { 'recorded', attempt, 0, token }
	end
end
return relay_reply('stale', s)
