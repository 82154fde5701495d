-- claim_classification.lua KEYS[1]=state hash
-- The message's classification is counted once across redeliveries.
local key = KEYS[1]
local r = redis.pcall('HMGET', key, '__terminal', '__classification')
if relay_is_err(r) then
	return r
end
if r[1] then
	return { 'retained', 0, 0, '' }
end
if r[2] then
	return { 'already', 0, 0, '' }
end
redis.call('HSET', key, '__classification', '1')
redis.call('PERSIST', key)
return { 'claimed', 0, 0, '' }
