-- dlq_persist.lua KEYS[1]=state hash KEYS[2]=DLQ stream
-- ARGV: field attempt token name value [name value ...]
-- Append one DLQ entry and upgrade the marker in one step. Decide first,
-- XADD second (a wrong-type DLQ key fails here, before any write), mark
-- last. field "" = placeholder (__dlq_placeholder).
local key, dlq, field = KEYS[1], KEYS[2], ARGV[1]
local attempt, token = tonumber(ARGV[2]), ARGV[3]
local marker = field
if field == '' then
	marker = '__dlq_placeholder'
end
local stop, r = relay_live(key, marker)
if stop then
	return stop
end
local value = '1'
if field == '' then
	if r[2] then
		return { 'already', 0, 0, '' }
	end
else
	local s = relay_parse(r[2])
	if s.kind ~= 'exhausted' or s.attempt ~= attempt or s.token ~= token then
		return { 'stale', 0, 0, '' }
	end
	if s.dlq then
		return { 'already', 0, 0, '' }
	end
	value = 'exhausted:' .. relay_fmt(attempt) .. ':' .. token .. ':dlq'
end
local id = redis.pcall('XADD', dlq, '*', unpack(ARGV, 4))
if relay_is_err(id) then
	return id
end
redis.call('HSET', key, marker, value)
redis.call('PERSIST', key)
return { 'written', 0, 0, id }
