-- Token refresh: POST /v1/token. Refresh tokens rotate on every use and a reuse after the grace window
-- revokes the family (docs/protocol/tokens.md#token-rules), so each thread keeps a queue: a request takes the oldest token,
-- its answer's new token goes to the back. The pool file holds fresh sessions (4 per connection per
-- thread); each thread takes every nthreads-th line.
-- args: <refresh token file> <threads> <api key> [<pause ms, read by refresh_paced.lua>]
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

function response(status, headers, body)
  local token = status == 200 and body:match('"refresh_token"%s*:%s*"([^"]+)"')
  if token then push(tokens, token) else note_error(status, body) end
end
