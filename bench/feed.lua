-- bench/feed.lua: the reference news feed workload for wrk, one closed-loop user per connection.
-- Run with -t N -c N (one connection per thread, so each thread's Lua state is one sequential user).
-- A broadcaster loops: create BATCH participants; befriend each distinct (inviter, invitee) pair among them
-- (3 inviters, MIN..MAX invitees); each invitee posts POSTS outbound items (subject 5 words, story 150 words,
-- words drawn from a 40,000-word dictionary, as the reference tester's numbers). A searcher loops over
-- single-word searches. Environment: SEARCH_SHARE [0.1], BATCH [10], MIN_FRIENDS [2], MAX_FRIENDS [3],
-- POSTS [10], SUBJECT_WORDS [5], STORY_WORDS [150], FORM [0] (1 = form-encoded bodies).

local threads = {}
local counter = 0

function setup(thread)
  counter = counter + 1
  thread:set("tid", counter)
  table.insert(threads, thread)
end

local function env(name, default)
  local v = os.getenv(name)
  if v == nil or v == "" then return default end
  return tonumber(v) or v
end

function init(args)
  local share = env("SEARCH_SHARE", 0.1)
  batch = env("BATCH", 10)
  min_friends = env("MIN_FRIENDS", 2)
  max_friends = env("MAX_FRIENDS", 3)
  posts_per = env("POSTS", 10)
  subject_words = env("SUBJECT_WORDS", 5)
  story_words = env("STORY_WORDS", 150)
  form = env("FORM", 0) == 1
  math.randomseed(tid * 7919 + os.time())
  -- roles as the reference: each user is a searcher with probability SEARCH_SHARE (spread evenly by thread)
  searcher = (tid % math.max(1, math.floor(1 / math.max(share, 1e-9) + 0.5))) == 0 and share > 0
  posts, participants, friends, searches, failures = 0, 0, 0, 0, 0
  queue, ids, pending = {}, {}, nil
end

local function words(n)
  local t = {}
  for i = 1, n do t[i] = tostring(math.random(0, 39999)) end
  return table.concat(t, " ")
end

local function body(fields)
  if form then
    local t = {}
    for k, v in pairs(fields) do t[#t + 1] = k .. "=" .. v:gsub("/", "%%2F"):gsub(" ", "+") end
    return table.concat(t, "&"), "application/x-www-form-urlencoded"
  end
  local t = {}
  for k, v in pairs(fields) do t[#t + 1] = string.format("%q:%q", k, v) end
  return "{" .. table.concat(t, ",") .. "}", "application/json"
end

local function post(path, fields, kind)
  local b, ct = body(fields)
  return { path = path, body = b, ct = ct, kind = kind }
end

-- plan the next broadcaster phase once the previous one's responses are in
local function plan()
  if #ids < batch then
    queue[#queue + 1] = post("/participant", { name = "user " .. math.random(0, 999999) }, "participant")
    return
  end
  local inviters, invitees = {}, {}
  for i = 1, math.floor(batch / 4 + 0.5) do inviters[#inviters + 1] = ids[math.random(#ids)] end
  for i = 1, min_friends + math.random(0, max_friends - min_friends) do invitees[#invitees + 1] = ids[math.random(#ids)] end
  local seen = {}
  for _, a in ipairs(inviters) do
    for _, b in ipairs(invitees) do
      local key = a .. ":" .. b
      if a ~= b and not seen[key] then
        seen[key] = true
        queue[#queue + 1] = post("/participant/" .. a .. "/friends",
          { from = "/participant/" .. a, to = "/participant/" .. b }, "friends")
      end
    end
  end
  for _, b in ipairs(invitees) do
    for i = 1, posts_per do
      queue[#queue + 1] = post("/participant/" .. b .. "/outbound",
        { from = "/participant/" .. b, occurred = "2026-11-22", subject = words(subject_words),
          story = words(story_words) }, "outbound")
    end
  end
  ids = {}
end

function request()
  if searcher then
    pending = "search"
    return wrk.format("GET", "/outbound?keywords=" .. math.random(0, 39999))
  end
  if #queue == 0 then plan() end
  local r = table.remove(queue, 1)
  pending = r.kind
  return wrk.format("POST", r.path, { ["Content-Type"] = r.ct }, r.body)
end

function response(status, headers, body)
  if status ~= 200 then failures = failures + 1; return end
  if pending == "participant" then
    participants = participants + 1
    local id = body:match('"id":(%d+)')
    if id then ids[#ids + 1] = id end
  elseif pending == "friends" then friends = friends + 1
  elseif pending == "outbound" then posts = posts + 1
  elseif pending == "search" then searches = searches + 1 end
end

function done(summary, latency, requests)
  local p, pa, f, s, fl = 0, 0, 0, 0, 0
  for _, t in ipairs(threads) do
    p = p + t:get("posts"); pa = pa + t:get("participants"); f = f + t:get("friends")
    s = s + t:get("searches"); fl = fl + t:get("failures")
  end
  local secs = summary.duration / 1e6
  io.write(string.format("WRKFEED seconds=%.3f posts=%d participants=%d friends=%d searches=%d failures=%d errors=%d p50_ms=%.3f p99_ms=%.3f p999_ms=%.3f max_ms=%.3f requests=%d\n",
    secs, p, pa, f, s, fl, summary.errors.status + summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout,
    latency:percentile(50) / 1000, latency:percentile(99) / 1000, latency:percentile(99.9) / 1000, latency.max / 1000,
    summary.requests))
end
