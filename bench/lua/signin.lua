-- Password sign-in: POST /v1/accounts:signInWithPassword over a pool of accounts.
-- args: <credentials file: tenant<TAB>email<TAB>password> <threads> <api key>
dofile(os.getenv("BENCH_LUA_DIR") .. "/common.lua")

function init(args)
  accounts = {}
  for _, line in ipairs(read_share(args[1], tonumber(args[2]))) do
    local tenant, email, password = line:match("([^\t]+)\t([^\t]+)\t([^\t]+)")
    accounts[#accounts + 1] = string.format(
      '{"tenantId":"%s","email":"%s","password":"%s","returnSecureToken":true}', tenant, email, password)
  end
  path = "/v1/accounts:signInWithPassword?key=" .. args[3]
  i = 0
end

function request()
  i = i % #accounts + 1
  return wrk.format("POST", path, { ["Content-Type"] = "application/json" }, accounts[i])
end

function response(status, headers, body)
  if status ~= 200 then note_error(status, body) end
end
