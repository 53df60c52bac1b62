-- Shared by the scenario scripts (loaded with dofile): thread numbering, reading a pool file into a
-- thread's share, and the one-line JSON summary scripts/bench parses.
local threads = {}
local next_id = 0

function setup(thread)
  thread:set("id", next_id)
  next_id = next_id + 1
  threads[#threads + 1] = thread
end

-- Lines of `path` that belong to this thread (every nthreads-th, starting at id).
function read_share(path, nthreads)
  local share = {}
  local i = 0
  for line in io.lines(path) do
    if (i % nthreads) == id then share[#share + 1] = line end
    i = i + 1
  end
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

function note_error(status, body)
  failures = (failures or 0) + 1
  if failures <= 2 then io.stderr:write("BENCH_ERROR " .. status .. " " .. string.sub(body, 1, 300) .. "\n") end
end

-- One machine-readable line for scripts/bench: requests, duration, throughput, errors (non-2xx/3xx
-- answers, as wrk counts them, and socket errors: connect, read, write, timeout), latency in ms.
function done(summary, latency, requests)
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
