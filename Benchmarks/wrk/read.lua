-- Reads: GET one stored response (the collector's own), chosen at random from IDS_FILE.
local c = require "common"
local ids
function setup(thread) c.setup(thread) end
function init(args)
   c.init_thread()
   ids = c.read_lines(c.env("IDS_FILE"))
   math.randomseed(tid * 7919)
   auth = c.auth()
end
function request()
   local id = ids[math.random(#ids)]
   return c.raw("GET", "/v1/orgs/" .. c.org .. "/responses/" .. id, auth)
end
function response(status, headers, body) c.response(status, headers, body) end
function done(summary, latency, requests) c.done(summary, latency, requests) end
