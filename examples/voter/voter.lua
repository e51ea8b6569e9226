#!lua name=voter
--[[
VoltDB's "voter" benchmark as a Redis 7 function library (FUNCTION LOAD format).

Load it with:   redis-cli FUNCTION LOAD REPLACE "$(cat examples/voter/voter.lua)"
`strata bench voter` loads it, initializes the tables and calls `vote` from many clients.

Tables (VoltDB schema -> Redis keys, all passed as KEYS so the functions declare what
they touch):
  contestants                         voter:contestants  hash  number -> name
  area_code_state                     voter:area_state   hash  area code -> state
  votes (phone, state, contestant)    voter:votes        list  "phone:state:contestant"
  v_votes_by_phone_number             voter:by_phone     hash  phone -> votes
  v_votes_by_contestant_number_state  voter:by_cs        hash  "contestant:state" -> votes

A function runs atomically, so the insert and the two materialized views change together,
as VoltDB's stored procedure does.
]]

-- Return codes of Vote, as in VoltDB's voter.
local VOTE_SUCCESSFUL = 0
local ERR_INVALID_CONTESTANT = 1
local ERR_VOTER_OVER_VOTE_LIMIT = 2

-- US area codes and their states: a table of our own for the area-code lookup.
local AREA_CODES = [[
205:AL 251:AL 256:AL 334:AL 907:AK 480:AZ 520:AZ 602:AZ 623:AZ 928:AZ 479:AR 501:AR 870:AR
209:CA 213:CA 310:CA 323:CA 408:CA 415:CA 510:CA 530:CA 559:CA 562:CA 619:CA 626:CA 650:CA
661:CA 707:CA 714:CA 760:CA 805:CA 818:CA 831:CA 858:CA 909:CA 916:CA 925:CA 949:CA 951:CA
303:CO 719:CO 720:CO 970:CO 203:CT 860:CT 202:DC 302:DE 239:FL 305:FL 321:FL 352:FL 386:FL
407:FL 561:FL 727:FL 754:FL 772:FL 786:FL 813:FL 850:FL 863:FL 904:FL 941:FL 954:FL 229:GA
404:GA 470:GA 478:GA 678:GA 706:GA 762:GA 770:GA 912:GA 808:HI 319:IA 515:IA 563:IA 641:IA
712:IA 208:ID 217:IL 224:IL 309:IL 312:IL 618:IL 630:IL 708:IL 773:IL 815:IL 847:IL 219:IN
260:IN 317:IN 574:IN 765:IN 812:IN 316:KS 620:KS 785:KS 913:KS 270:KY 502:KY 606:KY 859:KY
225:LA 318:LA 337:LA 504:LA 985:LA 339:MA 351:MA 413:MA 508:MA 617:MA 774:MA 781:MA 857:MA
978:MA 240:MD 301:MD 410:MD 443:MD 207:ME 231:MI 248:MI 269:MI 313:MI 517:MI 586:MI 616:MI
734:MI 810:MI 906:MI 989:MI 218:MN 320:MN 507:MN 612:MN 651:MN 763:MN 952:MN 314:MO 417:MO
573:MO 636:MO 660:MO 816:MO 228:MS 601:MS 662:MS 406:MT 252:NC 336:NC 704:NC 828:NC 910:NC
919:NC 980:NC 701:ND 308:NE 402:NE 603:NH 201:NJ 609:NJ 732:NJ 856:NJ 908:NJ 973:NJ 505:NM
575:NM 702:NV 775:NV 212:NY 315:NY 347:NY 516:NY 518:NY 585:NY 607:NY 631:NY 646:NY 716:NY
718:NY 845:NY 914:NY 917:NY 216:OH 234:OH 330:OH 419:OH 440:OH 513:OH 614:OH 740:OH 937:OH
405:OK 580:OK 918:OK 503:OR 541:OR 971:OR 215:PA 267:PA 412:PA 484:PA 570:PA 610:PA 717:PA
724:PA 814:PA 401:RI 803:SC 843:SC 864:SC 605:SD 423:TN 615:TN 731:TN 865:TN 901:TN 931:TN
210:TX 214:TX 254:TX 281:TX 325:TX 361:TX 409:TX 430:TX 432:TX 469:TX 512:TX 713:TX 806:TX
817:TX 830:TX 832:TX 903:TX 915:TX 936:TX 940:TX 956:TX 972:TX 979:TX 435:UT 801:UT 276:VA
434:VA 540:VA 571:VA 703:VA 757:VA 804:VA 802:VT 206:WA 253:WA 360:WA 425:WA 509:WA 262:WI
414:WI 608:WI 715:WI 920:WI 304:WV 307:WY
]]

-- initialize(KEYS: contestants, area_state; ARGS: contestant names...)
-- Fills the contestants and the area code -> state table; returns the contestant count.
-- Like VoltDB's Initialize, an already initialized database is left as it is.
local function initialize(keys, args)
  local contestants, area_state = keys[1], keys[2]
  if redis.call('EXISTS', contestants) == 1 then
    return redis.call('HLEN', contestants)
  end
  for i, name in ipairs(args) do
    redis.call('HSET', contestants, tostring(i), name)
  end
  for code, state in string.gmatch(AREA_CODES, '(%d+):(%a+)') do
    redis.call('HSET', area_state, code, state)
  end
  return #args
end

-- vote(KEYS: contestants, by_phone, area_state, votes, by_cs;
--      ARGS: phone number, contestant number, max votes per phone number)
-- Three reads, one insert, two view updates, atomically.
local function vote(keys, args)
  local contestants, by_phone, area_state, votes, by_cs =
    keys[1], keys[2], keys[3], keys[4], keys[5]
  local phone, contestant = args[1], args[2]
  local max_votes = tonumber(args[3])
  if max_votes == nil then
    return redis.error_reply('ERR max votes must be a number')
  end
  -- 1. The contestant exists.
  if redis.call('HEXISTS', contestants, contestant) == 0 then
    return ERR_INVALID_CONTESTANT
  end
  -- 2. The phone number has votes left (the votes-per-phone view).
  local cast = tonumber(redis.call('HGET', by_phone, phone) or '0')
  if cast >= max_votes then
    return ERR_VOTER_OVER_VOTE_LIMIT
  end
  -- 3. The state of the phone number's area code ("XX" when unknown, as in VoltDB).
  local state = redis.call('HGET', area_state, string.sub(phone, 1, 3)) or 'XX'
  -- 4. Insert the vote, and maintain both views.
  redis.call('RPUSH', votes, phone .. ':' .. state .. ':' .. contestant)
  redis.call('HINCRBY', by_phone, phone, 1)
  redis.call('HINCRBY', by_cs, contestant .. ':' .. state, 1)
  return VOTE_SUCCESSFUL
end

-- results(KEYS: contestants, by_phone, votes, by_cs)
-- For "check writes": {votes inserted, sum of the per-phone view, sum of the
-- per-contestant-and-state view, most votes of one phone number, then per contestant:
-- number, name, votes}.
local function results(keys, args)
  local contestants, by_phone, votes, by_cs = keys[1], keys[2], keys[3], keys[4]
  local per_contestant = {}
  local sum_cs = 0
  local cs = redis.call('HGETALL', by_cs)
  for i = 1, #cs, 2 do
    local c = string.match(cs[i], '^(%d+):')
    local n = tonumber(cs[i + 1])
    per_contestant[c] = (per_contestant[c] or 0) + n
    sum_cs = sum_cs + n
  end
  local sum_phone, most = 0, 0
  for _, v in ipairs(redis.call('HVALS', by_phone)) do
    local n = tonumber(v)
    sum_phone = sum_phone + n
    if n > most then most = n end
  end
  local out = { redis.call('LLEN', votes), sum_phone, sum_cs, most }
  local names = redis.call('HGETALL', contestants)
  for i = 1, #names, 2 do
    table.insert(out, names[i])
    table.insert(out, names[i + 1])
    table.insert(out, per_contestant[names[i]] or 0)
  end
  return out
end

redis.register_function('initialize', initialize)
redis.register_function('vote', vote)
redis.register_function{ function_name = 'results', callback = results, flags = { 'no-writes' } }
