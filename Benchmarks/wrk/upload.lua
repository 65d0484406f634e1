-- 1 MB uploads: PUT /uploads/{clientUploadId} with a unique id and unique bytes (a JPEG
-- signature, then the id, then filler up to UPLOAD_BYTES, default 1 MiB), so content-addressed
-- storage cannot deduplicate them. Expected: all 201.
local c = require "common"
local size, filler
function setup(thread) c.setup(thread) end
function init(args)
   c.init_thread()
   size = tonumber(c.env("UPLOAD_BYTES", "1048576"))
   filler = string.rep("\0", size)
   headers = c.auth() .. "Content-Type: image/jpeg\r\nSurvey-Version-Id: " .. c.version ..
      "\r\nQuestion-Id: " .. c.env("UPLOAD_QUESTION", "photo") .. "\r\n"
end
-- The request is built in one concatenation, with the filler for each head length cut once:
-- building it as body, then request, copied 3 MiB per upload and wrk spent ~2 ms of CPU on each,
-- on the cores the server runs on. The bytes sent are the same.
local fillers = {}
function request()
   local id = c.unique("upl")
   local head = "\255\216\255\224" .. id .. "\n"
   local n = size - #head
   local fill = fillers[n]
   if not fill then fill = filler:sub(1, n); fillers[n] = fill end
   return "PUT /v1/orgs/" .. c.org .. "/uploads/" .. id .. " HTTP/1.1\r\nHost: " .. wrk.host .. ":" .. wrk.port ..
      "\r\n" .. headers .. "Content-Length: " .. size .. "\r\n\r\n" .. head .. fill
end
function response(status, headers, body) c.response(status, headers, body) end
function done(summary, latency, requests) c.done(summary, latency, requests) end
