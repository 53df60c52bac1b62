-- Shared by the scenario scripts (loaded with dofile): thread numbering, reading a pool file into a
-- thread's share, the one-line JSON summary scripts/bench parses and, for the scripts that set
-- `per_op = true` (mixed.lua, storm.lua), figures per operation.
local ffi = require("ffi")
local threads = {}
local next_id = 0

function setup(thread)
  thread:set("id", next_id)
  next_id = next_id + 1
  threads[#threads + 1] = thread
end

-- Lines of `path` that belong to this thread: every nthreads-th, starting at `index` (default: the
-- thread's id). When the file has fewer lines than there are threads, a thread without a share gets
-- line index % lines (pools of refresh tokens, which must not be shared, are always large enough).
function read_share(path, nthreads, index)
  index = index or id
  local share, all = {}, {}
  local i = 0
  for line in io.lines(path) do
    if (i % nthreads) == index then share[#share + 1] = line end
    all[#all + 1] = line
    i = i + 1
  end
  if #share == 0 and #all > 0 then share[1] = all[index % #all + 1] end
  return share
end

-- A FIFO of strings with explicit head and tail (the length operator is undefined with holes).
function queue(items)
  local q = { items = {}, head = 1, tail = 0 }
  for _, item in ipairs(items) do q.tail = q.tail + 1; q.items[q.tail] = item end
  return q
end

function pop(q)
  if q.head > q.tail then return nil end
  local item = q.items[q.head]
  q.items[q.head] = nil
  q.head = q.head + 1
  return item
end

function push(q, item)
  q.tail = q.tail + 1
  q.items[q.tail] = item
end

-- The value of a response header, by its lower-case name (wrk passes the names as the server sent them).
function header(headers, name)
  for k, v in pairs(headers) do
    if string.lower(k) == name then return v end
  end
  return nil
end

function note_error(status, body)
  failures = (failures or 0) + 1
  if failures <= 2 then io.stderr:write("BENCH_ERROR " .. status .. " " .. string.sub(body, 1, 300) .. "\n") end
end

-- ------------------------------------------------------------------------------------------------
-- Figures per operation. wrk keeps one latency histogram per run; a script that mixes operations
-- times each request itself. It must run with one connection per wrk thread (-t C -c C): then, in a
-- thread, request() and response() strictly alternate. request() calls op_begin(name) just before it
-- returns the request; response() calls op_end(status, headers) first. The clock is
-- clock_gettime(CLOCK_MONOTONIC) through LuaJIT's ffi. A request() that follows a request() without a
-- response() means the connection failed (wrk reconnected and asked for a new request): the earlier
-- request counts as `lost` for its operation, except in thread 0, where wrk calls request() once
-- before the run to check the script (script_verify_request) and never sends that request. The
-- request still out when the run stops is reported
-- with its age. Answers slower than BENCH_TIMEOUT_S (wrk's --timeout, which wrk counts as timeout
-- errors and leaves out of its histogram) are kept here and counted as `slow`.
pcall(ffi.cdef, "typedef struct { long tv_sec; long tv_nsec; } bench_timespec_t; " ..
  "int clock_gettime(int clk_id, bench_timespec_t *tp);")
local clock_ts = ffi.new("bench_timespec_t")
local CLOCK_MONOTONIC = 1

function now_us()
  ffi.C.clock_gettime(CLOCK_MONOTONIC, clock_ts)
  return tonumber(clock_ts.tv_sec) * 1000000 + math.floor(tonumber(clock_ts.tv_nsec) / 1000)
end

local op_data = {}
local current_op, current_start = nil, 0
local begun = 0

local function op_entry(op)
  local d = op_data[op]
  if not d then
    d = { lat = {}, latok = {}, lat503 = {}, status = {}, retry_after = 0, lost = 0 }
    op_data[op] = d
  end
  return d
end

function op_begin(op)
  begun = begun + 1
  if current_op and not (id == 0 and begun == 2) then local d = op_entry(current_op); d.lost = d.lost + 1 end
  current_op, current_start = op, now_us()
end

-- Records the answer to the request in flight; returns its operation and, for a 503, the value of
-- its Retry-After header (nil when it has none).
function op_end(status, headers)
  local now = now_us()
  local op = current_op
  if not op then return nil, nil end
  current_op = nil
  local d = op_entry(op)
  local us = now - current_start
  d.lat[#d.lat + 1] = us
  d.status[status] = (d.status[status] or 0) + 1
  if status >= 200 and status < 300 then d.latok[#d.latok + 1] = us end
  local retry = nil
  if status == 503 then
    d.lat503[#d.lat503 + 1] = us
    retry = header(headers, "retry-after")
    if retry then d.retry_after = d.retry_after + 1 end
  end
  return op, retry
end

-- A thread's figures as one string. wrk 4.1.0's thread:get copies a table between Lua states with a
-- bug (script_copy_value pops a copied table off the source stack: a nested table makes it panic with
-- "invalid key to 'next'", a flat one leaves the thread's stack one slot short), so done() asks for a
-- string: the global `bench_ops`, which a metatable on the thread's globals computes when asked.
local function serialize_ops()
  local out = {}
  for op, d in pairs(op_data) do
    local pending = (current_op == op) and (now_us() - current_start) or -1
    out[#out + 1] = string.format("op %s %d %d %d", op, d.lost, d.retry_after, pending)
    out[#out + 1] = "lat " .. op .. " " .. table.concat(d.lat, ",")
    out[#out + 1] = "latok " .. op .. " " .. table.concat(d.latok, ",")
    out[#out + 1] = "lat503 " .. op .. " " .. table.concat(d.lat503, ",")
    local st = {}
    for code, n in pairs(d.status) do st[#st + 1] = code .. "=" .. n end
    out[#out + 1] = "status " .. op .. " " .. table.concat(st, ",")
  end
  if current_op and not op_data[current_op] then  -- the first request of its operation, unanswered
    out[#out + 1] = string.format("op %s 0 0 %d", current_op, now_us() - current_start)
  end
  return table.concat(out, "\n")
end

-- Called by the per-operation scripts from init().
function track_ops()
  setmetatable(_G, { __index = function(_, key) if key == "bench_ops" then return serialize_ops() end end })
end

local function percentile(sorted, p)
  if #sorted == 0 then return 0 end
  return sorted[math.max(1, math.ceil(p / 100 * #sorted))]
end

local function numbers(list, into)
  for v in string.gmatch(list, "%d+") do into[#into + 1] = tonumber(v) end
end

local function op_json(d, seconds, timeout_us)
  table.sort(d.lat)
  table.sort(d.latok)
  table.sort(d.lat503)
  local n, ok, sum, slow = #d.lat, 0, 0, 0
  for _, v in ipairs(d.lat) do
    sum = sum + v
    if v > timeout_us then slow = slow + 1 end
  end
  local st = {}
  for code, count in pairs(d.status) do
    st[#st + 1] = string.format('"%d":%d', code, count)
    if code >= 200 and code < 300 then ok = ok + count end
  end
  local ms = function(us) return us / 1000 end
  local timeouts = slow + d.pending_over
  return string.format(
    '{"answers":%d,"throughput":%.2f,"ok":%d,"ok_throughput":%.2f,"p50_ms":%.3f,"p95_ms":%.3f,' ..
    '"p99_ms":%.3f,"max_ms":%.3f,"mean_ms":%.3f,"ok_p50_ms":%.3f,"ok_p99_ms":%.3f,"status":{%s},' ..
    '"s503":%d,"s503_retry_after":%d,' ..
    '"s503_p50_ms":%.3f,"s503_p99_ms":%.3f,"s503_max_ms":%.3f,"lost":%d,"slow":%d,' ..
    '"unanswered_at_end":%d,"unanswered_max_age_ms":%.3f,"timeouts":%d}',
    n, n / seconds, ok, ok / seconds, ms(percentile(d.lat, 50)), ms(percentile(d.lat, 95)),
    ms(percentile(d.lat, 99)), ms(d.lat[n] or 0), n > 0 and ms(sum / n) or 0, ms(percentile(d.latok, 50)),
    ms(percentile(d.latok, 99)), table.concat(st, ","),
    #d.lat503, d.retry_after, ms(percentile(d.lat503, 50)), ms(percentile(d.lat503, 99)),
    ms(d.lat503[#d.lat503] or 0), d.lost, slow, d.pending, ms(d.pending_max), timeouts)
end

-- The per-operation line: BENCH_OPS {"duration_us":…,"threads":…,"ops":{"<op>":{…},…,"all":{…}}}.
local function print_ops(summary)
  local timeout_us = (tonumber(os.getenv("BENCH_TIMEOUT_S") or "10") or 10) * 1000000
  local ops, all = {}, { lat = {}, latok = {}, lat503 = {}, status = {}, retry_after = 0, lost = 0, pending = 0,
    pending_max = 0, pending_over = 0 }
  local function entry(op)
    if not ops[op] then
      ops[op] = { lat = {}, latok = {}, lat503 = {}, status = {}, retry_after = 0, lost = 0, pending = 0, pending_max = 0,
        pending_over = 0 }
    end
    return ops[op]
  end
  for _, thread in ipairs(threads) do
    local text = thread:get("bench_ops") or ""
    for line in string.gmatch(text, "[^\n]+") do
      local kind, op, rest = string.match(line, "^(%S+) (%S+) ?(.*)$")
      local d = entry(op)
      if kind == "op" then
        local lost, retry, pending = string.match(rest, "^(%-?%d+) (%-?%d+) (%-?%d+)$")
        lost, retry, pending = tonumber(lost), tonumber(retry), tonumber(pending)
        d.lost, d.retry_after = d.lost + lost, d.retry_after + retry
        all.lost, all.retry_after = all.lost + lost, all.retry_after + retry
        if pending >= 0 then
          for _, x in ipairs({ d, all }) do
            x.pending = x.pending + 1
            x.pending_max = math.max(x.pending_max, pending)
            if pending > timeout_us then x.pending_over = x.pending_over + 1 end
          end
        end
      elseif kind == "lat" then
        numbers(rest, d.lat); numbers(rest, all.lat)
      elseif kind == "latok" then
        numbers(rest, d.latok); numbers(rest, all.latok)
      elseif kind == "lat503" then
        numbers(rest, d.lat503); numbers(rest, all.lat503)
      elseif kind == "status" then
        for code, count in string.gmatch(rest, "(%d+)=(%d+)") do
          code, count = tonumber(code), tonumber(count)
          d.status[code] = (d.status[code] or 0) + count
          all.status[code] = (all.status[code] or 0) + count
        end
      end
    end
  end
  local seconds = summary.duration / 1e6
  local parts = {}
  for op, d in pairs(ops) do parts[#parts + 1] = string.format('"%s":%s', op, op_json(d, seconds, timeout_us)) end
  parts[#parts + 1] = '"all":' .. op_json(all, seconds, timeout_us)
  io.write(string.format('BENCH_OPS {"duration_us":%d,"threads":%d,"timeout_ms":%d,"ops":{%s}}\n',
    summary.duration, #threads, timeout_us / 1000, table.concat(parts, ",")))
end

-- One machine-readable line for scripts/bench: requests, duration, throughput, errors (non-2xx/3xx
-- answers, as wrk counts them, and socket errors: connect, read, write, timeout), latency in ms.
-- wrk's histogram is corrected for coordinated omission before done() sees it (stats_correct: for each
-- answer slower than twice the mean interval between a connection's requests, synthetic samples are
-- added), so its percentiles are not those of the answers alone; BENCH_OPS's are.
function done(summary, latency, requests)
  if per_op then print_ops(summary) end
  local e = summary.errors
  io.write(string.format(
    'BENCH_JSON {"requests":%d,"duration_us":%d,"throughput":%.1f,"status_errors":%d,"socket_errors":%d,' ..
    '"socket_error_kinds":{"connect":%d,"read":%d,"write":%d,"timeout":%d},' ..
    '"p50_ms":%.3f,"p95_ms":%.3f,"p99_ms":%.3f,"max_ms":%.3f,"mean_ms":%.3f}\n',
    summary.requests, summary.duration, summary.requests / (summary.duration / 1e6), e.status,
    e.connect + e.read + e.write + e.timeout, e.connect, e.read, e.write, e.timeout,
    latency:percentile(50) / 1000, latency:percentile(95) / 1000, latency:percentile(99) / 1000,
    latency.max / 1000, latency.mean / 1000))
end
