/*
 * The Redis scripts of the lock store (dav.locks.ts). Every script works on one user's four keys:
 *   KEYS[1] hash   token -> lock (JSON)
 *   KEYS[2] zset   token, scored by expiry (epoch ms): the user's active locks, oldest expiry first
 *   KEYS[3] zset   "<path>\0<token>" of exclusive locks, all scored 0, so ordered by path
 *   KEYS[4] zset   the same for shared locks
 * A path key never holds a NUL (names exclude control characters), so the locks rooted at `p` are
 * the members in [p\0, p\1) and the locks below `p` those in [p/, p0). Every lookup is a range of
 * these indexes: none reads all of a user's locks. Each script first drops the expired locks, so
 * the indexes hold active locks only and their sizes are the counts the limits apply to.
 */
const PRELUDE = `
local function purge(now)
  local expired = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now)
  for _, token in ipairs(expired) do
    local raw = redis.call('HGET', KEYS[1], token)
    if raw then
      local l = cjson.decode(raw)
      redis.call('ZREM', l.scope == 'exclusive' and KEYS[3] or KEYS[4], l.path .. '\\0' .. token)
      redis.call('HDEL', KEYS[1], token)
    end
    redis.call('ZREM', KEYS[2], token)
  end
end
local function rootedAt(key, p)
  local out = {}
  for _, m in ipairs(redis.call('ZRANGEBYLEX', key, '[' .. p .. '\\0', '(' .. p .. '\\1')) do
    out[#out + 1] = string.sub(m, #p + 2)
  end
  return out
end
local function below(key, p, limit)
  local members
  if limit then
    members = redis.call('ZRANGEBYLEX', key, '[' .. p .. '/', '(' .. p .. '0', 'LIMIT', 0, limit)
  else
    members = redis.call('ZRANGEBYLEX', key, '[' .. p .. '/', '(' .. p .. '0')
  end
  local out = {}
  for _, m in ipairs(members) do
    local nul = string.find(m, '\\0', 1, true)
    out[#out + 1] = string.sub(m, nul + 1)
  end
  return out
end
-- The path and each of its ancestors, the root ('') first.
local function lineage(p)
  local out = { '' }
  local i = 2
  while true do
    local slash = string.find(p, '/', i, true)
    if not slash then break end
    out[#out + 1] = string.sub(p, 1, slash - 1)
    i = slash + 1
  end
  if p ~= '' then out[#out + 1] = p end
  return out
end
local function keepAlive(ttl)
  for i = 1, 4 do
    if redis.call('PTTL', KEYS[i]) < ttl then redis.call('PEXPIRE', KEYS[i], ttl) end
  end
end
`;

/**
 * ARGV: now, then pairs (kind, path): `c` the locks covering the path (rooted there, or above it
 * with depth infinity), `r` the locks rooted at the path, `w` the locks strictly below it.
 * Returns the locks found (JSON), each once.
 */
export const LOOKUP = `${PRELUDE}
purge(tonumber(ARGV[1]))
local seen, out = {}, {}
local function add(token, keep)
  if seen[token] then return end
  local raw = redis.call('HGET', KEYS[1], token)
  if raw and (keep == nil or keep(raw)) then
    seen[token] = true
    out[#out + 1] = raw
  end
end
local deep = function(raw) return cjson.decode(raw).depth == 'infinity' end
for i = 2, #ARGV, 2 do
  local kind, p = ARGV[i], ARGV[i + 1]
  for _, key in ipairs({ KEYS[3], KEYS[4] }) do
    if kind == 'c' then
      for _, a in ipairs(lineage(p)) do
        for _, t in ipairs(rootedAt(key, a)) do add(t, a ~= p and deep or nil) end
      end
    elseif kind == 'r' then
      for _, t in ipairs(rootedAt(key, p)) do add(t) end
    else
      for _, t in ipairs(below(key, p)) do add(t) end
    end
  end
end
return out
`;

/**
 * Grants a lock unless a limit or an active lock is in the way (RFC 4918 6.1: an exclusive lock
 * conflicts with any other on an overlapping path, shared locks with exclusive ones only), in one
 * script so two gateways cannot both grant. ARGV: now, token, path, depth, scope, lock (JSON),
 * expiresAt, most locks per resource, most locks per user, keys' lifetime (ms).
 * Returns {'ok'}, {'user-limit'}, {'resource-limit'} or {'conflict', lock}.
 */
export const GRANT = `${PRELUDE}
local now, token, path, depth, scope = tonumber(ARGV[1]), ARGV[2], ARGV[3], ARGV[4], ARGV[5]
purge(now)
if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[9]) then return { 'user-limit' } end
local here = redis.call('ZLEXCOUNT', KEYS[3], '[' .. path .. '\\0', '(' .. path .. '\\1')
  + redis.call('ZLEXCOUNT', KEYS[4], '[' .. path .. '\\0', '(' .. path .. '\\1')
if here >= tonumber(ARGV[8]) then return { 'resource-limit' } end
local keys = scope == 'exclusive' and { KEYS[3], KEYS[4] } or { KEYS[3] }
for _, key in ipairs(keys) do
  for _, a in ipairs(lineage(path)) do
    for _, t in ipairs(rootedAt(key, a)) do
      local raw = redis.call('HGET', KEYS[1], t)
      if raw and (a == path or cjson.decode(raw).depth == 'infinity') then return { 'conflict', raw } end
    end
  end
  if depth == 'infinity' then
    local t = below(key, path, 1)[1]
    if t then return { 'conflict', redis.call('HGET', KEYS[1], t) } end
  end
end
redis.call('HSET', KEYS[1], token, ARGV[6])
redis.call('ZADD', KEYS[2], ARGV[7], token)
redis.call('ZADD', scope == 'exclusive' and KEYS[3] or KEYS[4], 0, path .. '\\0' .. token)
keepAlive(tonumber(ARGV[10]))
return { 'ok' }
`;

/** Restarts an active lock's timeout. ARGV: now, token, lock (JSON), expiresAt, keys' lifetime. Returns 1, or 0 when it is gone. */
export const REFRESH = `${PRELUDE}
purge(tonumber(ARGV[1]))
if redis.call('HEXISTS', KEYS[1], ARGV[2]) == 0 then return 0 end
redis.call('HSET', KEYS[1], ARGV[2], ARGV[3])
redis.call('ZADD', KEYS[2], ARGV[4], ARGV[2])
keepAlive(tonumber(ARGV[5]))
return 1
`;

/**
 * Removes locks. ARGV: now, then pairs (kind, value): `t` the lock with that token, `w` the locks
 * rooted at the path or below it. Returns how many were removed.
 */
export const REMOVE = `${PRELUDE}
purge(tonumber(ARGV[1]))
local removed = 0
local function drop(token)
  local raw = redis.call('HGET', KEYS[1], token)
  if not raw then return end
  local l = cjson.decode(raw)
  redis.call('ZREM', l.scope == 'exclusive' and KEYS[3] or KEYS[4], l.path .. '\\0' .. token)
  redis.call('ZREM', KEYS[2], token)
  redis.call('HDEL', KEYS[1], token)
  removed = removed + 1
end
for i = 2, #ARGV, 2 do
  local kind, v = ARGV[i], ARGV[i + 1]
  if kind == 't' then
    drop(v)
  else
    for _, key in ipairs({ KEYS[3], KEYS[4] }) do
      for _, t in ipairs(rootedAt(key, v)) do drop(t) end
      for _, t in ipairs(below(key, v)) do drop(t) end
    end
  end
end
return removed
`;
