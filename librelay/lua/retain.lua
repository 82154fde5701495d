-- retain.lua KEYS[1]=state hash ARGV: ttl_ms
-- After the message left the PEL: set __terminal and the retention TTL,
-- once. An absent hash stays absent; a retained one keeps its TTL.
local key = KEYS[1]
if redis.call('EXISTS', key) == 0 then
	return { 'absent', 0, 0, '' }
end
local r = redis.pcall('HEXISTS', key, '__terminal')
if relay_is_err(r) then
	return r
end
if r == 1 then
	return { 'already', 0, 0, '' }
end
redis.call('HSET', key, '__terminal', '1')
redis.call('PEXPIRE', key, ARGV[1])
return { 'recorded', 0, 0, '' }
