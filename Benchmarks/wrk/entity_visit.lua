-- Submissions of the household visit form through the OpenRosa door, as ODK Collect sends them
-- (multipart/form-data, one xml_submission_file part), each naming an entity of a pre-created
-- list: MODE=update sends the instance as the form writes it (`update="1"`), so each updates its
-- entity; MODE=plain sends the same instance with `update="0"` (the form's update condition
-- false), so none writes an entity. The entities are taken in turn, each thread its own share
-- of them, and an update names the version the entity is at — its version when the run started
-- (IDS_FILE, read from the database just before) plus the updates this run sent it before — so
-- none waits and none is late: every update applies cleanly (what a phone does that downloaded
-- the list just before).
-- Env: ORG, TOKEN (the collector's app token), INSTANCE (an instance whose instanceID is __ID__,
-- its entity __ENTITY__, its version __BASE__, its branch __BRANCH__), IDS_FILE (the entities, one
-- "id version" a line), THREADS (wrk's -t), MODE, RUN_TAG. Expected: all 201.
local c = require "common"
function setup(thread) c.setup(thread) end

function init(args)
   counts = {}
   -- wrk calls the first thread's request() once before sending anything, to see what a request
   -- is (script_verify_request): that call makes no update, so it must not count as one.
   sent = (tid == 1) and -1 or 0
   -- This thread's share of the entities: every THREADS-th, from its own, with its version.
   local all, threads = c.read_lines(c.env("IDS_FILE")), tonumber(c.env("THREADS"))
   share, version = {}, {}
   for i = tid, #all, threads do
      local id, v = all[i]:match("^(%S+) (%d+)$")
      share[#share + 1] = id
      version[#version + 1] = tonumber(v)
   end
   -- The instance cut at its placeholders once; each request only joins the pieces.
   local instance = c.read_file(c.env("INSTANCE"))
   pieces, holes = {}, {}
   local at = 1
   while true do
      local s, e, name = instance:find("__(%u+)__", at)
      if not s then break end
      pieces[#pieces + 1] = instance:sub(at, s - 1)
      holes[#holes + 1] = name
      at = e + 1
   end
   tail = instance:sub(at)
   boundary = "----CollectBoundary7MA4YWxkTrZu0gW"
   part_head = "--" .. boundary .. "\r\nContent-Disposition: form-data; name=\"xml_submission_file\"; filename=\"instance.xml\"\r\n" ..
      "Content-Type: text/xml\r\n\r\n"
   part_tail = "\r\n--" .. boundary .. "--\r\n"
   head = "POST /v1/key/" .. c.env("TOKEN") .. "/orgs/" .. c.env("ORG") .. "/submission?deviceID=collect:bench HTTP/1.1\r\nHost: " ..
      wrk.host .. ":" .. wrk.port .. "\r\nX-OpenRosa-Version: 1.0\r\nContent-Type: multipart/form-data; boundary=" .. boundary ..
      "\r\nContent-Length: "
   tag = c.env("RUN_TAG")
end

function request()
   local g = sent
   sent = sent + 1
   if g < 0 then return head_for(verify_body()) end
   local k = (g % #share) + 1
   local values = {
      ID = string.format("uuid:%08x-%s-%d-%d", (g * 2654435761 + tid * 40503) % 4294967296, tag, tid, sent),
      ENTITY = share[k],
      BASE = tostring(version[k] + math.floor(g / #share)),
      BRANCH = string.format("%s-%d-%d", tag, tid, sent),
   }
   return head_for(body_of(values))
end

function body_of(values)
   local out = { part_head }
   for i, piece in ipairs(pieces) do
      out[#out + 1] = piece
      out[#out + 1] = values[holes[i]]
   end
   out[#out + 1] = tail
   out[#out + 1] = part_tail
   return table.concat(out)
end

-- What the verifying call gets: should it be sent after all, a plain submission (no entity written).
function verify_body()
   local body = body_of({ ID = string.format("uuid:verify-%s-%d", tag, tid), ENTITY = share[1], BASE = "1", BRANCH = "verify" })
   return (body:gsub('update="1"', 'update="0"'))
end

function head_for(body) return head .. #body .. "\r\n\r\n" .. body end

function response(status, headers, body) counts[status] = (counts[status] or 0) + 1 end

function done(summary, latency, requests) c.done(summary, latency, requests) end
