-- dlq_persist.lua KEYS[1]=state hash KEYS[2]=DLQ stream
-- ARGV: field attempt token name value [name value ...]
-- Append one DLQ entry and upgrade the marker in one step. Decide first,
-- XADD second (a wrong-type DLQ key fails here, before any write), mark
-- last. field "" = placeholder (__dlq_placeholder). An invocation's
-- entry gets the invocation's attempt timeline (R-3) as field timeline,
-- before trace (which stays last) when there is one.
local key, dlq, field = KEYS[1], KEYS[2], ARGV[1]
local attempt, token = tonumber(ARGV[2]), ARGV[3]
local marker = field
if field == '' then
	marker = '__dlq_placeholder'
end
local stop, r = relay_live(key, marker, '__timeline:' .. field)
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
local args = { unpack(ARGV, 4) }
if field ~= '' and r[3] and r[3] ~= '' then
	local n = #args
	if n >= 2 and args[n - 1] == 'trace' then
		args[n + 2], args[n + 1] = args[n], args[n - 1]
		args[n - 1], args[n] = 'timeline', r[3]
	else
		args[n + 1], args[n + 2] = 'timeline', r[3]
	end
end
local id = redis.pcall('XADD', dlq, '*', unpack(args))
if relay_is_err(id) then
	return id
end
redis.call('HSET', key, marker, value)
redis.call('PERSIST', key)
return { 'written', 0, 0, id }
