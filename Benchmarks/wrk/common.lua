-- Shared by the wrk scripts (found through LUA_PATH="Benchmarks/wrk/?.lua;;").
--
-- Configuration comes from the environment (run.sh exports it):
--   ORG, VERSION, HASH          the organization, survey version and its contentHash
--   TOKEN                       the collector's bearer token (submissions, reads, uploads)
--   REVIEWER_TOKEN              the reviewer's token (mix: review steps)
--   FIXTURES                    directory with answers.json
--   OUT_DIR, PHASE, RUN_TAG     where to write per-thread id files; tag that makes ids unique per run
--   IDS_FILE                    (reads, mix) a file of seeded response ids, one per line
--
-- Each thread keeps a counter of statuses and writes, in response(), one line per 2xx answer
-- that created or showed a stored row:  "<kind> <id> <revision-or-size>"  (kind: response,
-- upload). run.sh checks after kill -9 that every line is in the database.
-- done() prints one RESULT line that run.sh parses.

local M = {}

local threads = {}
local next_id = 0

function M.setup(thread)
   next_id = next_id + 1
   thread:set("tid", next_id)
   table.insert(threads, thread)
end

function M.env(name, default)
   local v = os.getenv(name)
   if v == nil or v == "" then
      if default ~= nil then return default end
      error("environment variable " .. name .. " is required")
   end
   return v
end

function M.read_file(path)
   local f = assert(io.open(path, "rb"))
   local s = f:read("*a")
   f:close()
   return (s:gsub("%s+$", ""))
end

function M.read_lines(path)
   local t = {}
   for line in io.lines(path) do
      if line ~= "" then t[#t + 1] = line end
   end
   return t
end

-- Per-thread state; call from init().
function M.init_thread()
   M.org = M.env("ORG")
   M.version = M.env("VERSION")
   M.hash = M.env("HASH")
   M.token = M.env("TOKEN")
   M.tag = M.env("RUN_TAG")
   M.phase = M.env("PHASE")
   M.counter = 0
   counts = {}        -- global, so the main state can read it with thread:get("counts")
   M.out = assert(io.open(M.env("OUT_DIR") .. "/" .. M.phase .. "-" .. tid .. ".ids", "a"))
   M.answers = M.read_file(M.env("FIXTURES") .. "/answers.json")
end

-- A unique client id: a scrambled counter first (phones send random UUIDs, so their ids land
-- all over the (org_id, client_submission_id) index, not at its end), then run tag, phase,
-- thread id and the counter itself, which make it unique.
function M.unique(prefix)
   M.counter = M.counter + 1
   local scramble = (M.counter * 2654435761 + tid * 40503) % 4294967296
   return string.format("%08x-%s-%s-%s-%d-%d", scramble, prefix, M.tag, M.phase, tid, M.counter)
end

-- A request as raw bytes. wrk.format() builds a header table per request; on this 2-core machine
-- every microsecond wrk spends is taken from the server, so requests are concatenated once.
function M.raw(method, path, headers, body)
   local s = method .. " " .. path .. " HTTP/1.1\r\nHost: " .. wrk.host .. ":" .. wrk.port .. "\r\n" .. headers
   if body then
      return s .. "Content-Length: " .. #body .. "\r\n\r\n" .. body
   end
   return s .. "\r\n"
end

function M.auth(token)
   return "Authorization: Bearer " .. (token or M.token) .. "\r\n"
end

-- A ~1.5 KB submission body, built like a phone app would (the canonical answers, as sent).
function M.submission_body(csid, version, hash)
   return '{"answers":' .. M.answers .. ',"capturedAt":"2025-06-01T08:00:00Z","clientSubmissionId":"' .. csid ..
      '","contentHash":"' .. (hash or M.hash) .. '","surveyVersionId":"' .. (version or M.version) .. '"}'
end

function M.submit_request(csid)
   if not M.submit_head then
      M.submit_head = "POST /v1/orgs/" .. M.org .. "/responses HTTP/1.1\r\nHost: " .. wrk.host .. ":" .. wrk.port .. "\r\n" ..
         M.auth() .. "Content-Type: application/json\r\nContent-Length: "
      M.body_a = '{"answers":' .. M.answers .. ',"capturedAt":"2025-06-01T08:00:00Z","clientSubmissionId":"'
      M.body_b = '","contentHash":"' .. M.hash .. '","surveyVersionId":"' .. M.version .. '"}'
   end
   return M.submit_head .. (#M.body_a + #csid + #M.body_b) .. "\r\n\r\n" .. M.body_a .. csid .. M.body_b
end

-- Counts every status; records the stored rows a 2xx answer proves exist.
function M.response(status, headers, body)
   counts[status] = (counts[status] or 0) + 1
   if status >= 200 and status < 300 and body then
      local rid = body:match('"responseId":"([^"]+)"')
      if rid then
         local rev = body:match('"revision":(%d+)') or "1"
         M.out:write("response ", rid, " ", rev, "\n")
         return
      end
      local uid = body:match('"clientUploadId":"([^"]+)"')
      if uid then
         M.out:write("upload ", uid, " ", body:match('"size":(%d+)') or "0", "\n")
      end
   end
end

-- One machine-readable line (run.sh parses it) and a short human one.
function M.done(summary, latency, requests)
   local total = {}
   for _, t in ipairs(threads) do
      local c = t:get("counts")
      if c then
         for k, v in pairs(c) do total[k] = (total[k] or 0) + v end
      end
   end
   local keys = {}
   for k in pairs(total) do keys[#keys + 1] = k end
   table.sort(keys)
   local parts, s2xx = {}, 0
   for _, k in ipairs(keys) do
      parts[#parts + 1] = k .. ":" .. total[k]
      if k >= 200 and k < 300 then s2xx = s2xx + total[k] end
   end
   local secs = summary.duration / 1e6
   local e = summary.errors
   io.write(string.format(
      "RESULT phase=%s requests=%d seconds=%.3f rps=%.1f ok=%d ok_rps=%.1f p50_ms=%.2f p90_ms=%.2f p99_ms=%.2f max_ms=%.2f " ..
      "errors_connect=%d errors_read=%d errors_write=%d errors_timeout=%d bytes=%d statuses=%s\n",
      os.getenv("PHASE") or "?", summary.requests, secs, summary.requests / secs, s2xx, s2xx / secs,
      latency:percentile(50) / 1000, latency:percentile(90) / 1000, latency:percentile(99) / 1000, latency.max / 1000,
      e.connect, e.read, e.write, e.timeout, summary.bytes, table.concat(parts, ",")))
end

return M
