-- A sign-in storm beside refreshes and lookups (issue 26, isolation). One connection per wrk thread
-- (-t C -c C); a thread's role comes from its id: the first <sign-in threads> threads sign in with
-- passwords, the others pick refresh or lookup 50/50 per request. With 0 sign-in threads it is the
-- refresh/lookup load alone, for comparison.
-- The sign-in clients behave like well-behaved SDK clients: after a 503 they wait its Retry-After
-- (seconds; 1 s when the answer has none or it is not a number), ±20% at random so that retries do
-- not synchronise, before their connection's next request (wrk's delay(), called before each
-- request; with one connection per thread it pauses just that connection). The wait is not part of
-- any latency. Refresh tokens rotate: each refresh thread keeps a queue, as refresh.lua does.
-- args: <refresh file> <id token file> <credentials file> <sign-in threads> <threads> <api key>
dofile(os.getenv("BENCH_LUA_DIR") .. "/common.lua")
per_op = true

function init(args)
  local signin_threads, n = tonumber(args[4]), tonumber(args[5])
  key = args[6]
  wait_ms = 0
  math.randomseed(2000 + id)
  if id < signin_threads then
    role = "signin"
    accounts = {}
    for line in io.lines(args[3]) do
      local tenant, email, password = line:match("([^\t]+)\t([^\t]+)\t([^\t]+)")
      accounts[#accounts + 1] = string.format(
        '{"tenantId":"%s","email":"%s","password":"%s","returnSecureToken":true}', tenant, email, password)
    end
    i = id  -- round-robin over every account, each thread starting at its own
  else
    role = "refresh-lookup"
    local share, index = n - signin_threads, id - signin_threads
    tokens = queue(read_share(args[1], share, index))
    id_tokens = read_share(args[2], share, index)
  end
  track_ops()
end

function delay()
  local ms = wait_ms
  wait_ms = 0
  return ms
end

function request()
  local req, op
  if role == "signin" then
    i = i % #accounts + 1
    req, op = wrk.format("POST", "/v1/accounts:signInWithPassword?key=" .. key,
      { ["Content-Type"] = "application/json" }, accounts[i]), "signin"
  elseif math.random(2) == 1 then
    local token = pop(tokens) or "exhausted-pool"
    req, op = wrk.format("POST", "/v1/token?key=" .. key,
      { ["Content-Type"] = "application/x-www-form-urlencoded" }, "grant_type=refresh_token&refresh_token=" .. token),
      "refresh"
  else
    req, op = wrk.format("POST", "/v1/accounts:lookup?key=" .. key, { ["Content-Type"] = "application/json" },
      '{"idToken":"' .. id_tokens[math.random(#id_tokens)] .. '"}'), "lookup"
  end
  op_begin(op)
  return req
end

function response(status, headers, body)
  local op, retry = op_end(status, headers)
  if op == "signin" then
    if status == 503 then
      local seconds = tonumber(retry or "") or 1
      wait_ms = math.floor(seconds * 1000 * (0.8 + 0.4 * math.random()))
      if not retry then note_error(status, body) end
    elseif status ~= 200 then
      note_error(status, body)
    end
  elseif status ~= 200 then
    note_error(status, body)
  elseif op == "refresh" then
    local token = body:match('"refresh_token"%s*:%s*"([^"]+)"')
    if token then push(tokens, token) end
  end
end
