-- prelude.lua - shared by every transition script (prepended at build time
-- by embed.py). Mirrors relay_inv_state_parse() in librelay/inv/inv.c: the
-- grammar is strict, and anything unparseable counts as absent.
local function relay_num(s, max)
	if not s or #s == 0 or #s > 18 or not string.match(s, '^%d+$') then
		return nil
	end
	local n = tonumber(s)
	if max and (n < 1 or n > max) then
		return nil
	end
	return n
end

local function relay_token_ok(t)
	return t and #t == 32 and string.match(t, '^[0-9a-f]+$') ~= nil
end

local function relay_parse(v)
	local s = { kind = 'absent', attempt = 0, deadline = 0, token = '',
		    dlq = false }
	if not v then
		return s
	end
	if v == 'ok' then
		s.kind = 'ok'
		return s
	end
	local k, dl, at, tok = string.match(v, '^([a-z_]+):(%d+):(%d+):([^:]*)$')
	if k == 'running' or k == 'next_attempt_at' then
		local d, a = relay_num(dl), relay_num(at, 1000000)
		if d and a and relay_token_ok(tok) then
			s.kind = (k == 'running') and 'running' or 'backoff'
			s.deadline, s.attempt, s.token = d, a, tok
			return s
		end
	else
		local a2, t2, tail = string.match(v, '^exhausted:(%d+):([^:]*)(.*)$')
		local a = relay_num(a2, 1000000)
		if a and relay_token_ok(t2) and (tail == '' or tail == ':dlq') then
			s.kind, s.attempt, s.token = 'exhausted', a, t2
			s.dlq = (tail == ':dlq')
			return s
		end
	end
	s.kind = 'invalid'
	return s
end

local function relay_fmt(n)
	return string.format('%.0f', n)
end

local function relay_reply(result, s)
	return { result, s.attempt, s.deadline, s.token }
end

-- The try_start decision on the parsed state @s (twin of
-- relay__inv_decide_try_start()): the reply, and the field's new value
-- when it claims (nil when nothing is to be written). A field that is
-- terminal, or a claim or backoff whose deadline is ahead, is answered as
-- it is; otherwise (absent, unparseable or expired) the next attempt is
-- claimed until now + min(timeout, 5 min). It never exhausts by itself.
local function relay_try_start(s, now, timeout, token)
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
	local n = { attempt = attempt + 1, deadline = now + timeout,
		    token = token }
	return relay_reply('claimed', n), 'running:' ..
		relay_fmt(n.deadline) .. ':' .. relay_fmt(n.attempt) .. ':' ..
		token
end

local function relay_is_err(r)
	return type(r) == 'table' and r.err ~= nil
end

-- Read the retention marker and the given fields of the state hash in one
-- HMGET. Returns a reply for the script to send back at once (a Redis
-- error, or "retained": every transition is inert after retain), or nil
-- and the HMGET array (element 1 the marker, then the fields in order).
local function relay_live(key, ...)
	local r = redis.pcall('HMGET', key, '__terminal', ...)
	if relay_is_err(r) then
		return r
	end
	if r[1] then
		return { 'retained', 0, 0, '' }
	end
	return nil, r
end

-- relay_live() for one invocation field, parsed; with @tl also the
-- field's timeline (R-3 __timeline:<field>) as a third value.
local function relay_load(key, field, tl)
	local stop, r
	if tl then
		stop, r = relay_live(key, field, '__timeline:' .. field)
	else
		stop, r = relay_live(key, field)
	end
	if stop then
		return stop
	end
	return nil, relay_parse(r[2]), r[3]
end

-- relay_load() of @field, then the claim check every finishing transition
-- makes: a reply to send back at once (retained, an error, or "stale" when
-- the field is not the running claim @attempt/@token), or nil, the
-- parsed state and (with @tl) the field's timeline.
local function relay_claim(key, field, attempt, token, tl)
	local stop, s, old = relay_load(key, field, tl)
	if stop then
		return stop
	end
	if s.kind ~= 'running' or s.attempt ~= attempt or s.token ~= token then
		return relay_reply('stale', s)
	end
	return nil, s, old
end

-- The attempt timeline (twin of relay__tl_push() in
-- librelay/inv/timeline.c): @old with @entry appended, the oldest
-- entries dropped so that 16 are kept. The scripts read @old only for
-- an attempt after the first: attempt 1 has no earlier entry, so its
-- entry replaces whatever the field held (one field less to read on the
-- common path).
local function relay_tl_push(old, entry)
	if not old or old == '' then
		return entry
	end
	local n = 1
	for _ in string.gmatch(old, '\n') do
		n = n + 1
	end
	while n >= 16 do
		old = string.sub(old, string.find(old, '\n', 1, true) + 1)
		n = n - 1
	end
	return old .. '\n' .. entry
end

-- The optional timeline entry argument @v: nil when absent or empty;
-- an error reply (second value) when it is 1024 bytes or longer or holds
-- a line end. Checked only by a script about to write.
local function relay_tl_arg(v)
	if not v or v == '' then
		return nil
	end
	if #v >= 1024 or string.find(v, '\n', 1, true) then
		return nil, redis.error_reply('ERR relay: bad script arguments')
	end
	return v
end

-- HSET @key @field @value, with the timeline of @field (@old the
-- stored one) with @entry appended when there is one, and the extra
-- pair @f2 @v2 when given: one call.
local function relay_hset_tl(key, field, value, old, entry, f2, v2)
	if entry then
		if f2 then
			return redis.call('HSET', key, field, value,
				'__timeline:' .. field,
				relay_tl_push(old, entry), f2, v2)
		end
		return redis.call('HSET', key, field, value,
			'__timeline:' .. field, relay_tl_push(old, entry))
	end
	if f2 then
		return redis.call('HSET', key, field, value, f2, v2)
	end
	return redis.call('HSET', key, field, value)
end

-- The attempt's outcome on the outcome stream @okey (doc/redis-layout.md
-- R-10; ARGV after the timeline entry: the stream key, its approximate
-- length bound, the message id): one XADD MAXLEN ~ in the same script,
-- only while a follower holds the lease @okey:tail (relayctl tail sets
-- it for 15 s and renews it), nothing when @okey is absent or empty. An
-- error (a key of another type) is ignored: the state is written already
-- and must stay so.
local function relay_outcome(okey, maxlen, id, field, entry)
	if entry and okey and okey ~= '' and
	   redis.call('EXISTS', okey .. ':tail') == 1 then
		redis.pcall('XADD', okey, 'MAXLEN', '~', maxlen, '*', 'id', id,
			'inv', field, 'tl', entry)
	end
end
