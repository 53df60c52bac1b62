-- The token service's JWKS (served from memory). args: <path>
dofile(os.getenv("BENCH_LUA_DIR") .. "/common.lua")

function init(args) path = args[1] end

function request() return wrk.format("GET", path) end

function response(status, headers, body)
  if status ~= 200 then note_error(status, body) end
end
