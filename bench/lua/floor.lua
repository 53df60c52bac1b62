-- The floor service (tessera-floor): POST /hash, one Firebase-scrypt hash and one statement each.
-- args: <path>
dofile(os.getenv("BENCH_LUA_DIR") .. "/common.lua")

function init(args) path = args[1] end

function request()
  return wrk.format("POST", path, { ["Content-Type"] = "text/plain" }, "correct horse battery staple")
end

function response(status, headers, body)
  if status ~= 200 then note_error(status, body) end
end
