-- schedule_publish.lua KEYS[1]=relay:<stream>:schedule:<occurrence_id>
-- marker, KEYS[2]=the source stream, optional KEYS[3]=the pre-cluster
-- marker relay:schedule:<occurrence_id> (single node only); ARGV ttl_ms
-- envelope
-- Publish one schedule occurrence at most once (doc/redis-layout.md R-7): the
-- marker decides, and the XADD happens in the same script, so a crash can
-- never leave a marker without its stream entry (or the reverse). With
-- KEYS[3] an occurrence an older version published counts too, and the
-- old name is written as well, so an older version still running during
-- an upgrade sees this one.
local ttl = relay_num(ARGV[1])
if not ttl or ttl < 1 or not ARGV[2] then
	return redis.error_reply('ERR relay: bad script arguments')
end
for i = 1, #KEYS do
	if i ~= 2 then
		local seen = redis.pcall('EXISTS', KEYS[i])
		if relay_is_err(seen) then
			return seen
		end
		if seen == 1 then
			return { 'duplicate', 0, 0, '' }
		end
	end
end
local id = redis.pcall('XADD', KEYS[2], '*', 'event', ARGV[2])
if relay_is_err(id) then
	return id
end
redis.call('SET', KEYS[1], '1', 'PX', relay_fmt(ttl))
if KEYS[3] then
	redis.call('SET', KEYS[3], '1', 'PX', relay_fmt(ttl))
end
return { 'published', 0, 0, id }
