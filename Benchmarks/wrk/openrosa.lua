-- New submissions through the OpenRosa door, as ODK Collect sends them: multipart/form-data with
-- one xml_submission_file part, every request a new instanceID.
-- Env: ORG, TOKEN (the collector's app token), INSTANCE (an instance file whose instanceID is
-- __ID__), RUN_TAG, PHASE, OUT_DIR (see common.lua). Expected: all 201.
local c = require "common"
function setup(thread) c.setup(thread) end
function init(args)
   c.init_thread()
   local instance = c.read_file(c.env("INSTANCE"))
   local boundary = "----CollectBoundary7MA4YWxkTrZu0gW"
   local before, after = instance:match("^(.-)__ID__(.*)$")
   c.part_a = "--" .. boundary .. "\r\nContent-Disposition: form-data; name=\"xml_submission_file\"; filename=\"instance.xml\"\r\n" ..
      "Content-Type: text/xml\r\n\r\n" .. before
   c.part_b = after .. "\r\n--" .. boundary .. "--\r\n"
   c.head = "POST /v1/key/" .. c.token .. "/orgs/" .. c.org .. "/submission?deviceID=collect:bench HTTP/1.1\r\nHost: " ..
      wrk.host .. ":" .. wrk.port .. "\r\nX-OpenRosa-Version: 1.0\r\nContent-Type: multipart/form-data; boundary=" .. boundary ..
      "\r\nContent-Length: "
end
function request()
   local id = "uuid:" .. c.unique("or")
   return c.head .. (#c.part_a + #id + #c.part_b) .. "\r\n\r\n" .. c.part_a .. id .. c.part_b
end
function response(status, headers, body) counts[status] = (counts[status] or 0) + 1 end
function done(summary, latency, requests) c.done(summary, latency, requests) end
