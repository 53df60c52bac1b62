-- Token refresh at a fixed rate: refresh.lua plus wrk's delay(), which pauses each connection for
-- <pause ms> between an answer and its next request (scripts/bench computes the pause from the
-- target rate: connections / rate, less the latency a calibration run measured).
-- args: as refresh.lua, with the pause as the fourth.
dofile(os.getenv("BENCH_LUA_DIR") .. "/refresh.lua")

function delay() return pause end
