-- complete_ack.lua KEYS[1]=state hash KEYS[2]=stream
-- ARGV: field attempt token group id ttl_ms [timeline_entry
-- [outcomes_key maxlen]] (the message id is ARGV[5])
-- The success tail of a message in one step: what mark_complete, XACK
-- and retain do one after the other. The engine sends it only for the
-- message's last invocation when every other one is already "ok".
-- Guarantees kept: no observer and no crash sees the message
-- acknowledged without its state "ok" (the script runs atomically and
-- its writes replicate and persist as one unit); retention only after
-- the XACK succeeded (an XACK error is returned with the field written
-- "ok", any TTL removed, and no retention); a stale or retained claim
-- writes nothing and acknowledges nothing (the mark_complete decision,
-- twin of relay__inv_decide_complete()). The calls are ordered for cost:
-- the XACK first, then one HSET of "ok" with the retention marker and
-- the TTL (4 calls on success instead of 6). The attempt's timeline
-- entry goes in the HSET of "ok" (R-3).
local key, stream, field = KEYS[1], KEYS[2], ARGV[1]
local attempt, token = tonumber(ARGV[2]), ARGV[3]
local stop, s, old = relay_claim(key, field, attempt, token,
	ARGV[7] and attempt > 1)
if stop then
	return stop
end
local entry, bad = relay_tl_arg(ARGV[7])
if bad then
	return bad
end
local n = redis.pcall('XACK', stream, ARGV[4], ARGV[5])
if relay_is_err(n) then
	relay_hset_tl(key, field, 'ok', old, entry)
	redis.call('PERSIST', key)
	relay_outcome(ARGV[8], ARGV[9], ARGV[5], field, entry)
	return n
end
relay_hset_tl(key, field, 'ok', old, entry, '__terminal', '1')
redis.call('PEXPIRE', key, ARGV[6])
relay_outcome(ARGV[8], ARGV[9], ARGV[5], field, entry)
return relay_reply('recorded', s)
