-- retain.lua KEYS[1]=state hash ARGV: ttl_ms
-- After the message left the PEL: set __terminal and the retention TTL,
-- once. An absent hash stays absent; a retained one keeps its TTL.
local key = KEYS[1]
local n = redis.pcall('HLEN', key)
if relay_is_err(n) then
	return n
end
if n == 0 then
	return { 'absent', 0, 0, '' }
end
if redis.call('HSETNX', key, '__terminal', '1') == 0 then
	return { 'already', 0, 0, '' }
end
redis.call('PEXPIRE', key, ARGV[1])
return { 'recorded', 0, 0, '' }
