-- New submissions through ODK Central's API, as pyodk's submissions.create sends them: the
-- instance XML as the body (application/xml) with the collector's bearer token, every request a
-- new instanceID.
-- Env: PROJECT (the organization's projectId), FORM_ID, TOKEN, INSTANCE (an instance file whose
-- instanceID is __ID__), RUN_TAG, PHASE, OUT_DIR (see common.lua). Expected: all 200.
local c = require "common"
function setup(thread) c.setup(thread) end
function init(args)
   c.init_thread()
   local instance = c.read_file(c.env("INSTANCE"))
   c.before, c.after = instance:match("^(.-)__ID__(.*)$")
   c.head = "POST /v1/projects/" .. c.env("PROJECT") .. "/forms/" .. c.env("FORM_ID") .. "/submissions HTTP/1.1\r\nHost: " ..
      wrk.host .. ":" .. wrk.port .. "\r\nAuthorization: Bearer " .. c.token .. "\r\nContent-Type: application/xml\r\nContent-Length: "
end
function request()
   local id = "uuid:" .. c.unique("ce")
   return c.head .. (#c.before + #id + #c.after) .. "\r\n\r\n" .. c.before .. id .. c.after
end
function response(status, headers, body) counts[status] = (counts[status] or 0) + 1 end
function done(summary, latency, requests) c.done(summary, latency, requests) end
