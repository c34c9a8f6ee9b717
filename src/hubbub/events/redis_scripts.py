"""The Lua scripts of the Redis event bus (``redis_bus.py``, whose docstring lists the
keys they use): each does in one round trip, atomically, what several commands did."""

from __future__ import annotations

# Append one event to each of several queues (KEYS: the hash and event list of each, in
# pairs; ARGV: the most a queue may hold, in bytes, then each queue's event body without
# its id, which the script splices in); a queue deleted meanwhile is skipped. One call
# for a whole fan-out: a send to 1,000 subscribers was 1,000 calls. Replies with the
# hashes of the queues the event would have taken past the bound; they get no event, and
# the caller removes them.
PUSH = """
local limit = tonumber(ARGV[1])
local over = {}
for i = 2, #ARGV do
  local queue, events = KEYS[2 * i - 3], KEYS[2 * i - 2]
  if redis.call('EXISTS', queue) == 1 then
    local id = redis.call('HINCRBY', queue, 'next_id', 1) - 1
    local body = ARGV[i]
    local event
    if body == '{}' then
      event = '{"id":' .. id .. '}'
    else
      event = '{"id":' .. id .. ',' .. string.sub(body, 2)
    end
    local held = tonumber(redis.call('HGET', queue, 'bytes') or '0')
    if held + #event > limit then
      over[#over + 1] = queue
    else
      redis.call('HINCRBY', queue, 'bytes', #event)
      redis.call('RPUSH', events, event)
    end
  end
end
return over
"""

# A poll's one round trip (KEYS: the queue's hash, its event list, the expiry index;
# ARGV: the acknowledged event id or '', the queue's new expiry, the queue id, the wake-up
# channel or '' for a poll that will not wait, its announcement, the digest of the
# credentials the queue is to vouch for or '', and the oldest time their proof may have):
# check, before anything else, that the queue still vouches for the caller; drop the
# events acknowledged, keep the queue alive, for a poll that may wait take a new
# generation (a newer poll ends the older ones, on any worker) and announce it, and read
# the events. Replies {-3} when the queue does not vouch for the credentials (nothing
# changed: ask the database), {-2} for a missing queue, {-1} when the client is behind
# what was pruned, else {0, generation, events}. A re-armed poll made five round trips
# before, the credentials' check one of them. (The digests compared are SHA-256 of the
# credentials, so the comparison's timing tells nothing usable about a key.)
POLL = """
if ARGV[6] ~= '' then
  local proof = redis.call('HGET', KEYS[1], 'cred')
  if not proof then return {-3} end
  local colon = string.find(proof, ':', 1, true)
  if string.sub(proof, colon + 1) ~= ARGV[6] then return {-3} end
  if tonumber(string.sub(proof, 1, colon - 1)) <= tonumber(ARGV[7]) then return {-3} end
end
if redis.call('EXISTS', KEYS[1]) == 0 then return {-2} end
if ARGV[1] ~= '' then
  local last = tonumber(ARGV[1])
  local pruned = tonumber(redis.call('HGET', KEYS[1], 'pruned') or '-1')
  if last < pruned then return {-1} end
  while true do
    local head = redis.call('LINDEX', KEYS[2], 0)
    if not head then break end
    local id = tonumber(string.match(head, '^{"id":(%-?%d+)'))
    if id == nil or id > last then break end
    redis.call('LPOP', KEYS[2])
    redis.call('HINCRBY', KEYS[1], 'bytes', -#head)
  end
  if last > pruned then redis.call('HSET', KEYS[1], 'pruned', last) end
end
redis.call('ZADD', KEYS[3], 'XX', ARGV[2], ARGV[3])
local generation = 0
if ARGV[4] ~= '' then
  generation = redis.call('HINCRBY', KEYS[1], 'generation', 1)
  redis.call('PUBLISH', ARGV[4], ARGV[5])
end
return {0, generation, redis.call('LRANGE', KEYS[2], 0, -1)}
"""


# Read the woken queues this process holds polls on, in one call (KEYS: the expiry
# index, then each queue's hash and event list; ARGV: each queue's id and new expiry):
# each queue's poll generation and events, or an empty reply for a deleted queue. A
# message to 1,000 subscribers woke 1,000 polls that each read their queue in a round
# trip of their own and then renewed its expiry in another.
READ_WOKEN = """
local out = {}
for i = 1, (#KEYS - 1) / 2 do
  local generation = redis.call('HGET', KEYS[2 * i], 'generation')
  if generation then
    redis.call('ZADD', KEYS[1], 'XX', ARGV[2 * i], ARGV[2 * i - 1])
    out[i] = {generation, redis.call('LRANGE', KEYS[2 * i + 1], 0, -1)}
  else
    out[i] = {}
  end
end
return out
"""

# The members of several sets in one call (KEYS: the sets), as one list per set: a send
# to 1,000 subscribers looked up their queues with 1,000 SMEMBERS, each packed and parsed
# by the client on its own.
MEMBERS = """
local out = {}
for i = 1, #KEYS do
  out[i] = redis.call('SMEMBERS', KEYS[i])
end
return out
"""

# Remember credentials only on a queue that still exists (HSET would re-create it).
REMEMBER = """
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('HSET', KEYS[1], 'cred', ARGV[1])
return 1
"""
