-- Token refresh: POST /v1/token. Refresh tokens rotate on every use (API.md A.2), so each thread keeps
-- a queue: a request takes the oldest token, its answer's new token goes to the back.
-- args: <refresh token file> <threads> <api key> [<pause ms per request, for paced runs>]
dofile(os.getenv("BENCH_LUA_DIR") .. "/common.lua")

function init(args)
  tokens = queue(read_share(args[1], tonumber(args[2])))
  path = "/v1/token?key=" .. args[3]
  pause = tonumber(args[4] or "0")
end

function request()
  local token = pop(tokens) or "exhausted-pool"
  return wrk.format("POST", path, { ["Content-Type"] = "application/x-www-form-urlencoded" },
    "grant_type=refresh_token&refresh_token=" .. token)
end

function delay() return pause end

function response(status, headers, body)
  local token = body:match('"refresh_token"%s*:%s*"([^"]+)"')
  if token then push(tokens, token) else note_error(status, body) end
end
