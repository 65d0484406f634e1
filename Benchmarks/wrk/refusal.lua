-- 1001 refusals: new submissions to an organization whose subscription has expired
-- (ORG/TOKEN/VERSION/HASH point at that organization). Expected: all 402 with errorCode 1001;
-- nothing is written, so nothing is recorded.
local c = require "common"
function setup(thread) c.setup(thread) end
function init(args) c.init_thread() end
function request() return c.submit_request(c.unique("exp")) end
function response(status, headers, body)
   if status == 402 and body and not body:find('"errorCode":1001', 1, true) then status = 4020 end  -- 402 without 1001: counted apart
   c.response(status, headers, body)
end
function done(summary, latency, requests) c.done(summary, latency, requests) end
