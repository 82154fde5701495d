-- claim_classification.lua KEYS[1]=state hash [ARGV pin]
-- The message's classification is counted once across redeliveries.
-- A schedule occurrence passes its admission pin (handler, timeout and
-- retries at first admission): stored once, never overwritten, and the
-- stored value is returned as the 4th element.
local key = KEYS[1]
local pin = ARGV[1]
local stop, r = relay_live(key, '__classification', '__schedule')
if stop then
	return stop
end
local p = r[3] or ''
if pin and pin ~= '' and not r[3] then
	redis.call('HSET', key, '__schedule', pin)
	redis.call('PERSIST', key)
	p = pin
end
if r[2] then
	return { 'already', 0, 0, p }
end
redis.call('HSET', key, '__classification', '1')
redis.call('PERSIST', key)
return { 'claimed', 0, 0, p }
