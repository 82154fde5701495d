-- try_start.lua KEYS[1]=state hash ARGV: field now_ms timeout_ms token
-- Twin of relay__inv_decide_try_start(). Never exhausts by itself.
local key, field = KEYS[1], ARGV[1]
local now, timeout, token = tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4]
local early, s = relay_load(key, field)
if early then
	return early
end
if s.kind == 'ok' then
	return relay_reply('ok', s)
end
if s.kind == 'exhausted' then
	return relay_reply(s.dlq and 'exhausted_dlq' or 'exhausted', s)
end
local attempt = 0
if s.kind == 'running' or s.kind == 'backoff' then
	if s.deadline > now then
		return relay_reply(s.kind, s)
	end
	attempt = s.attempt
end
if timeout <= 0 or timeout > 300000 then
	timeout = 300000
end
local n = { attempt = attempt + 1, deadline = now + timeout, token = token }
redis.call('HSET', key, field, 'running:' .. relay_fmt(n.deadline) .. ':' ..
	relay_fmt(n.attempt) .. ':' .. token)
redis.call('PERSIST', key)
return relay_reply('claimed', n)
