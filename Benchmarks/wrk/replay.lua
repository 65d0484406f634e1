-- Replays: the same bodies again and again. Each thread cycles over REPLAY_SET (default 16)
-- clientSubmissionIds; the first request of each is accepted (201), every later one is a replay
-- answered 200 with Idempotent-Replayed from the stored receipt.
local c = require "common"
local set
function setup(thread) c.setup(thread) end
function init(args)
   c.init_thread()
   set = tonumber(c.env("REPLAY_SET", "16"))
   bodies = {}
   for k = 1, set do
      bodies[k] = c.submit_request(string.format("rpl-%s-%d-%d", c.tag, tid, k))
   end
   n = 0
end
function request()
   n = n + 1
   return bodies[(n - 1) % set + 1]
end
function response(status, headers, body) c.response(status, headers, body) end
function done(summary, latency, requests) c.done(summary, latency, requests) end
