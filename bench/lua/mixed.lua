-- The mixed workload: 80% refresh, 10% lookup, 5% password sign-in, 5% anonymous sign-up, over many
-- tenants. args: <refresh file> <id token file> <credentials file> <tenant file> <threads> <api key>
dofile(os.getenv("BENCH_LUA_DIR") .. "/common.lua")

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
  math.randomseed(1000 + id)
end

function request()
  local roll = math.random(100)
  if roll <= 80 then
    local token = pop(tokens) or "exhausted-pool"
    return wrk.format("POST", "/v1/token?key=" .. key, { ["Content-Type"] = "application/x-www-form-urlencoded" },
      "grant_type=refresh_token&refresh_token=" .. token)
  elseif roll <= 90 then
    return wrk.format("POST", "/v1/accounts:lookup?key=" .. key, { ["Content-Type"] = "application/json" },
      '{"idToken":"' .. id_tokens[math.random(#id_tokens)] .. '"}')
  elseif roll <= 95 then
    return wrk.format("POST", "/v1/accounts:signInWithPassword?key=" .. key,
      { ["Content-Type"] = "application/json" }, accounts[math.random(#accounts)])
  else
    return wrk.format("POST", "/v1/accounts:signUp?key=" .. key, { ["Content-Type"] = "application/json" },
      '{"returnSecureToken":true,"tenantId":"' .. tenants[math.random(#tenants)] .. '"}')
  end
end

function response(status, headers, body)
  if status ~= 200 then note_error(status, body); return end
  -- A refresh answer carries the rotated token (snake case); sign-in and sign-up answers use
  -- camelCase refreshToken: both feed the refresh queue.
  local token = body:match('"refresh_token"%s*:%s*"([^"]+)"') or body:match('"refreshToken"%s*:%s*"([^"]+)"')
  if token then push(tokens, token) end
end
