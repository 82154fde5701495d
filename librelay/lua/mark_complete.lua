-- mark_complete.lua KEYS[1]=state hash ARGV: field attempt token
-- Twin of relay__inv_decide_complete(): never overwrites exhausted.
local key, field = KEYS[1], ARGV[1]
local attempt, token = tonumber(ARGV[2]), ARGV[3]
local r = redis.pcall('HMGET', key, '__terminal', field)
if relay_is_err(r) then
	return r
end
if r[1] then
	return { 'retained', 0, 0, '' }
end
local s = relay_parse(r[2])
if s.kind ~= 'running' or s.attempt ~= attempt or s.token ~= token then
	return relay_reply('stale', s)
end
redis.call('HSET', key, field, 'ok')
redis.call('PERSIST', key)
return relay_reply('recorded', s)
