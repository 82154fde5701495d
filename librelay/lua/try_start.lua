-- try_start.lua KEYS[1]=state hash ARGV: field now_ms timeout_ms token
-- Twin of relay__inv_decide_try_start() (relay_try_start() in the
-- prelude). Never exhausts by itself.
local key, field = KEYS[1], ARGV[1]
local now, timeout, token = tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4]
local early, s = relay_load(key, field)
if early then
	return early
end
local out, v = relay_try_start(s, now, timeout, token)
if v then
	redis.call('HSET', key, field, v)
	redis.call('PERSIST', key)
end
return out
