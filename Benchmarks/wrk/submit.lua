-- New submissions: every request a new clientSubmissionId (run tag + thread id + counter).
-- Env: see common.lua. Expected: all 201.
local c = require "common"
function setup(thread) c.setup(thread) end
function init(args) c.init_thread() end
function request() return c.submit_request(c.unique("sub")) end
function response(status, headers, body) c.response(status, headers, body) end
function done(summary, latency, requests) c.done(summary, latency, requests) end
