-- accounts:lookup by ID token. args: <id token file> <threads> <api key>
dofile(os.getenv("BENCH_LUA_DIR") .. "/common.lua")

function init(args)
  tokens = read_share(args[1], tonumber(args[2]))
  path = "/v1/accounts:lookup?key=" .. args[3]
  i = 0
end

function request()
  i = i % #tokens + 1
  return wrk.format("POST", path, { ["Content-Type"] = "application/json" }, '{"idToken":"' .. tokens[i] .. '"}')
end

function response(status, headers, body)
  if status ~= 200 then note_error(status, body) end
end
