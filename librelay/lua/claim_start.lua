-- claim_start.lua KEYS[1]=state hash ARGV: field now_ms timeout_ms token
-- claim_classification (no pin) and try_start of @field in one step, for
-- a message whose first matched invocation has a concurrency slot when it
-- is delivered. The reply is try_start's (twin of
-- relay__inv_decide_try_start()) with the classification's result
-- (claimed|already) as a fifth element. Guarantees kept: the
-- classification is written in the same step as the claim; a retained
-- hash answers retained for both and writes nothing.
local key, field = KEYS[1], ARGV[1]
local now, timeout, token = tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4]
local stop, r = relay_live(key, '__classification', field)
if stop then
	if relay_is_err(stop) then
		return stop
	end
	return { 'retained', 0, 0, '', 'retained' }
end
local class = r[2] and 'already' or 'claimed'
local w = {}
if class == 'claimed' then
	w = { '__classification', '1' }
end
local out, v = relay_try_start(relay_parse(r[3]), now, timeout, token)
if v then
	w[#w + 1] = field
	w[#w + 1] = v
end
if #w > 0 then
	redis.call('HSET', key, unpack(w))
	redis.call('PERSIST', key)
end
out[5] = class
return out
