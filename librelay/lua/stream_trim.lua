-- stream_trim.lua KEYS[1]=a stream ARGV: cutoff_ms limit mode
-- Retention in one atomic step (REDIS_STREAM_RETENTION and
-- REDIS_DLQ_RETENTION). The bound is "<cutoff_ms>-0"; in mode "groups"
-- it is lowered, for every consumer group on the stream, to the group's
-- oldest pending id and to its last-delivered id + 1, so nothing a group
-- still holds or has not read yet is ever below it. Mode "age" (the DLQ)
-- uses the age cutoff alone. Then XTRIM MINID ~ bound LIMIT limit: the
-- "~" removes only whole macro nodes entirely below the bound, so never
-- more than the exact bound; limit 0 only observes (no XTRIM). In mode
-- "age" the trim is then made exact: what "~" left below the bound (the
-- entries of the node that straddles it, or more when "~" stopped at the
-- limit) is removed too, at most limit entries per call in all, with an
-- exact XTRIM MINID (no "~") up to the last of them.
-- Reply: { trimmed, length, bound, first entry id or "",
--          oldest pending id over all groups or "", number of groups }.
-- Decimal strings (no leading zeros) compared as numbers of any size:
-- stream ids are two unsigned 64-bit integers, beyond a Lua double.
local function ncmp(a, b)
	if #a ~= #b then
		return #a < #b and -1 or 1
	end
	if a == b then
		return 0
	end
	return a < b and -1 or 1
end

local function idcmp(a, b)
	local am, as = string.match(a, '^(%d+)-(%d+)$')
	local bm, bs = string.match(b, '^(%d+)-(%d+)$')
	local c = ncmp(am, bm)
	if c ~= 0 then
		return c
	end
	return ncmp(as, bs)
end

-- A decimal string plus one.
local function dinc(s)
	local i = #s
	while i > 0 and string.sub(s, i, i) == '9' do
		i = i - 1
	end
	if i == 0 then
		return '1' .. string.rep('0', #s)
	end
	return string.sub(s, 1, i - 1) .. string.char(string.byte(s, i) + 1) ..
		string.rep('0', #s - i)
end

-- The id right after @id.
local function id_next(id)
	local ms, seq = string.match(id, '^(%d+)-(%d+)$')
	if seq == '18446744073709551615' then
		return dinc(ms) .. '-0'
	end
	return ms .. '-' .. dinc(seq)
end

if redis.replicate_commands then
	redis.replicate_commands()
end
local key = KEYS[1]
local limit = tonumber(ARGV[2])
local mode = ARGV[3]
if not string.match(ARGV[1], '^%d+$') or #ARGV[1] > 15 or not limit or
   limit < 0 or (mode ~= 'groups' and mode ~= 'age') then
	return redis.error_reply('ERR relay: bad script arguments')
end
local ty = redis.call('TYPE', key)['ok']
if ty == 'none' then
	return { 0, 0, '', '', '', 0 }
end
if ty ~= 'stream' then
	return redis.error_reply('WRONGTYPE Operation against a key ' ..
				 'holding the wrong kind of value')
end
local bound = string.format('%.0f', tonumber(ARGV[1])) .. '-0'
local oldest = ''
local ngroups = 0
if mode == 'groups' then
	local groups = redis.call('XINFO', 'GROUPS', key)
	ngroups = #groups
	for _, g in ipairs(groups) do
		local f = {}
		for i = 1, #g, 2 do
			f[g[i]] = g[i + 1]
		end
		local nxt = id_next(f['last-delivered-id'])
		if idcmp(nxt, bound) < 0 then
			bound = nxt
		end
		if f['pending'] > 0 then
			local p = redis.call('XPENDING', key, f['name'])
			if p[2] then
				if idcmp(p[2], bound) < 0 then
					bound = p[2]
				end
				if oldest == '' or idcmp(p[2], oldest) < 0 then
					oldest = p[2]
				end
			end
		end
	end
end
local trimmed = 0
if limit > 0 then
	trimmed = redis.call('XTRIM', key, 'MINID', '~', bound, 'LIMIT',
			     limit)
end
if mode == 'age' and trimmed < limit and bound ~= '0-0' then
	-- The oldest entries still below the bound, up to what the limit
	-- leaves; XTRIM MINID without "~" removes exactly those.
	local left = redis.call('XRANGE', key, '-', '(' .. bound, 'COUNT',
				limit - trimmed)
	if #left > 0 then
		local cut = bound
		if #left == limit - trimmed then
			cut = id_next(left[#left][1])
		end
		trimmed = trimmed + redis.call('XTRIM', key, 'MINID', cut)
	end
end
local first = redis.call('XRANGE', key, '-', '+', 'COUNT', 1)
return { trimmed, redis.call('XLEN', key), bound,
	 first[1] and first[1][1] or '', oldest, ngroups }
