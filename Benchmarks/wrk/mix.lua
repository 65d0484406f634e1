-- The mix: 70 % new submissions, 20 % reads of stored responses, 10 % review steps.
--
-- Review steps run on pre-seeded responses in state "submitted" at revision 1 (REVIEW_IDS_FILE),
-- split between threads so no two threads touch the same one. A thread alternates:
--   startReview on its next fresh response   (expectedRevision 1 -> in_review, revision 2)
--   approve on the response it started LAG steps before  (expectedRevision 2 -> approved, 3)
-- wrk cannot tie an answer to the request it answers, so the approve is sent blind: it answers
-- 409 (1021 stale revision / 1020 invalid transition) when its startReview was not yet
-- committed. Those 409s are expected and reported apart.
local c = require "common"
local reads, reviews, started, approved, lag
function setup(thread) c.setup(thread) end
function init(args)
   c.init_thread()
   math.randomseed(tid * 104729)
   reads = c.read_lines(c.env("IDS_FILE"))
   local all = c.read_lines(c.env("REVIEW_IDS_FILE"))
   local nthreads = tonumber(c.env("THREADS", "2"))
   reviews = {}
   for k = tid, #all, nthreads do reviews[#reviews + 1] = all[k] end
   started = 0
   approved = 0
   lag = tonumber(c.env("REVIEW_LAG", "16"))
   step = 0
   reviewer = c.auth(c.env("REVIEWER_TOKEN")) .. "Content-Type: application/json\r\n"
   collector = c.auth()
end
local function review()
   step = step + 1
   local path = function(id) return "/v1/orgs/" .. c.org .. "/responses/" .. id .. "/review" end
   local can_start = started < #reviews
   -- An approve follows its startReview LAG steps later; once every response is started, the
   -- last LAG are approved too, and then the review share goes to reads and submissions
   -- (re-approving an approved response would only count 409s).
   local can_approve = approved < started - lag or (not can_start and approved < started)
   if can_start and (step % 2 == 1 or not can_approve) then
      started = started + 1
      return c.raw("POST", path(reviews[started]), reviewer, '{"action":"startReview","expectedRevision":1}')
   end
   if can_approve then
      approved = approved + 1
      return c.raw("POST", path(reviews[approved]), reviewer, '{"action":"approve","expectedRevision":2}')
   end
   return nil
end
function request()
   local r = math.random(100)
   if r <= 10 then
      local req = review()
      if req then return req end
   end
   if r <= 30 then
      return c.raw("GET", "/v1/orgs/" .. c.org .. "/responses/" .. reads[math.random(#reads)], collector)
   end
   return c.submit_request(c.unique("mix"))
end
function response(status, headers, body) c.response(status, headers, body) end
function done(summary, latency, requests) c.done(summary, latency, requests) end
