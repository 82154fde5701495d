-- mark_complete.lua KEYS[1]=state hash ARGV: field attempt token
-- Twin of relay__inv_decide_complete(): never overwrites exhausted.
local key, field = KEYS[1], ARGV[1]
local attempt, token = tonumber(ARGV[2]), ARGV[3]
local stop, s = relay_claim(key, field, attempt, token)
if stop then
	return stop
end
redis.call('HSET', key, field, 'ok')
redis.call('PERSIST', key)
return relay_reply('recorded', s)
