-- Many keep-alive connections, slowly: each connection asks GET /healthz, then waits HOLD_MS
-- (default 1000 ms) before its next request, so the server holds CONNECTIONS open and mostly idle
-- keep-alive connections while run.sh samples its memory.
local c = require "common"
function setup(thread) c.setup(thread) end
function init(args)
   counts = {}
   hold = tonumber(os.getenv("HOLD_MS") or "1000")
end
function request() return c.raw("GET", "/healthz", "") end
function delay() return hold end
function response(status, headers, body) counts[status] = (counts[status] or 0) + 1 end
function done(summary, latency, requests) c.done(summary, latency, requests) end
