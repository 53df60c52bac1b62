-- The mixed workload: per request, at random, 80% refresh, 10% lookup, 5% password sign-in, 5% anonymous
-- sign-up, over many tenants; or other weights (the "alone" run: 80,10,0,0). Figures per operation
-- (common.lua): run it with one connection per wrk thread. A refused sign-in (503) is counted, not
-- retried later: these clients are a closed loop and do not honour Retry-After.
-- args: <refresh file> <id token file> <credentials file> <tenant file> <threads> <api key>
--       [<weights refresh,lookup,signin,signup; default 80,10,5,5>]
dofile(os.getenv("BENCH_LUA_DIR") .. "/common.lua")
per_op = true

function init(args)
  local n = tonumber(args[5])
  tokens = queue(read_share(args[1], n))
  id_tokens = read_share(args[2], n)
  accounts = {}
  for _, line in ipairs(read_share(args[3], n)) do
    local tenant, email, password = line:match("([^\t]+)\t([^\t]+)\t([^\t]+)")
    accounts[#accounts + 1] = string.format(
      '{"tenantId":"%s","email":"%s","password":"%s","returnSecureToken":true}', tenant, email, password)
  end
  tenants = read_share(args[4], n)
  key = args[6]
  local w = {}
  for v in string.gmatch(args[7] or "80,10,5,5", "%d+") do w[#w + 1] = tonumber(v) end
  -- cumulative bounds: refresh, lookup, sign-in, sign-up
  bounds = { w[1], w[1] + w[2], w[1] + w[2] + w[3], w[1] + w[2] + w[3] + w[4] }
  math.randomseed(1000 + id)
  track_ops()
end

function request()
  local roll = math.random(bounds[4])
  local req, op
  if roll <= bounds[1] then
    local token = pop(tokens) or "exhausted-pool"
    req, op = wrk.format("POST", "/v1/token?key=" .. key,
      { ["Content-Type"] = "application/x-www-form-urlencoded" }, "grant_type=refresh_token&refresh_token=" .. token),
      "refresh"
  elseif roll <= bounds[2] then
    req, op = wrk.format("POST", "/v1/accounts:lookup?key=" .. key, { ["Content-Type"] = "application/json" },
      '{"idToken":"' .. id_tokens[math.random(#id_tokens)] .. '"}'), "lookup"
  elseif roll <= bounds[3] then
    req, op = wrk.format("POST", "/v1/accounts:signInWithPassword?key=" .. key,
      { ["Content-Type"] = "application/json" }, accounts[math.random(#accounts)]), "signin"
  else
    req, op = wrk.format("POST", "/v1/accounts:signUp?key=" .. key, { ["Content-Type"] = "application/json" },
      '{"returnSecureToken":true,"tenantId":"' .. tenants[math.random(#tenants)] .. '"}'), "signup"
  end
  op_begin(op)
  return req
end

function response(status, headers, body)
  local op, retry = op_end(status, headers)
  if status ~= 200 then
    if not (op == "signin" and status == 503 and retry) then note_error(status, body) end
    return
  end
  -- A refresh answer carries the rotated token (snake case); sign-in and sign-up answers use
  -- camelCase refreshToken: both feed the refresh queue.
  local token = body:match('"refresh_token"%s*:%s*"([^"]+)"') or body:match('"refreshToken"%s*:%s*"([^"]+)"')
  if token then push(tokens, token) end
end
