-- Anonymous sign-up: POST /v1/accounts:signUp. args: <api key> <tenant id>
dofile(os.getenv("BENCH_LUA_DIR") .. "/common.lua")

function init(args)
  path = "/v1/accounts:signUp?key=" .. args[1]
  body = '{"returnSecureToken":true,"tenantId":"' .. args[2] .. '"}'
end

function request()
  return wrk.format("POST", path, { ["Content-Type"] = "application/json" }, body)
end

function response(status, headers, body)
  if status ~= 200 then note_error(status, body) end
end
