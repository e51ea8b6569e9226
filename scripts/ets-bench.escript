#!/usr/bin/env escript
%% -*- erlang -*-
%%
%% The ETS side of the embedded comparison (scripts/bench-embedded-vs-ets.sh), in the shape of
%% the classic ETS benchmarks ("etsb"): one public set table created with read_concurrency and
%% write_concurrency, filled with N rows {I, I}; then, for each update ratio U, ROUNDS rounds
%% in which P processes each do L operations on random keys, U of every 1000 of them updates
%% (ets:insert of an existing key), the rest lookups (ets:lookup, which copies the row out).
%% Each round prints its Mops/s; each ratio ends with a summary line: best, median, average.
%%
%% usage: escript scripts/ets-bench.escript [n=1000000] [p=2] [l=1000000]
%%            [updates=0,1,50,100] [rounds=3] [fill=1] [progress=5]
%%   n         rows (keys 1..n)
%%   p         processes doing the rounds
%%   l         operations per process per round
%%   updates   update ratios to run in turn, each per 1000 operations
%%   rounds    timed rounds per ratio (after one untimed warm-up round of lookups)
%%   fill      processes filling the table, each a contiguous range of keys (1: one
%%             inserter, as the classic benchmarks fill)
%%   progress  seconds between fill progress lines
%%
%% Keys are drawn exactly as `strata bench embedded` draws them (crates/bench/src/workloads/
%% embedded.rs): a xorshift32 stream per process and round, the key `x rem n + 1`, and the
%% updates spread evenly by an accumulator (U added per operation; an update when it reaches
%% 1000). So both sides look up the same keys in the same order. Every lookup must find its
%% row, or the run fails.
-mode(compile).

main(Args) ->
    Opts = parse(Args, #{n => 1000000, p => 2, l => 1000000, updates => [0, 1, 50, 100],
                         rounds => 3, fill => 1, progress => 5}),
    #{n := N, p := P, l := L, rounds := Rounds, fill := F} = Opts,
    (N >= 1 andalso N =< 16#FFFFFFFF andalso P >= 1 andalso L >= 1 andalso Rounds >= 1
     andalso F >= 1) orelse usage("n must be 1..2^32-1; p, l, rounds and fill at least 1"),
    lists:all(fun(U) -> U >= 0 andalso U =< 1000 end, maps:get(updates, Opts))
        orelse usage("each update ratio must be 0..1000"),
    io:format("# ets-bench: n=~b p=~b l=~b rounds=~b fill=~b schedulers=~b otp=~s~n",
              [N, P, L, Rounds, F, erlang:system_info(schedulers_online),
               erlang:system_info(otp_release)]),
    Rss0 = rss_bytes(),
    T = ets:new(bench, [set, public, {read_concurrency, true}, {write_concurrency, true}]),
    Secs = fill(T, N, F, maps:get(progress, Opts)),
    Rss1 = rss_bytes(),
    Words = ets:info(T, memory),
    Bytes = Words * erlang:system_info(wordsize),
    io:format("# fill: ~b rows in ~.3f s (~.2f Mins/s, ~b process~s), ets:info memory "
              "~.1f MiB (~.1f bytes/row), RSS +~.1f MiB (~.1f bytes/row)~n",
              [N, Secs, N / Secs / 1.0e6, F, plural(F), Bytes / 1048576, Bytes / N,
               (Rss1 - Rss0) / 1048576, (Rss1 - Rss0) / N]),
    %% Warm-up: one untimed round of lookups.
    case run_round(T, Opts, 0, 0) of
        {_, 0} -> ok;
        {_, Missed} -> fail("~b lookups missed after the fill", [Missed])
    end,
    lists:foreach(fun(U) -> ratio(T, Opts, U) end, maps:get(updates, Opts)).

%% Runs the rounds of one update ratio and prints them and their summary.
ratio(T, #{n := N, p := P, l := L, rounds := Rounds} = Opts, U) ->
    Rates = [begin
                 {Rate, Missed} = run_round(T, Opts, U, R),
                 Missed =:= 0 orelse fail("~b lookups missed in round ~b", [Missed, R]),
                 io:format("ets      updates/1000=~-4b round ~b: ~.2f Mops/s~n",
                           [U, R, Rate / 1.0e6]),
                 Rate
             end || R <- lists:seq(1, Rounds)],
    Sorted = lists:reverse(lists:sort(Rates)),
    Best = hd(Sorted),
    Median = lists:nth((Rounds + 1) div 2, Sorted),
    Avg = lists:sum(Rates) / Rounds,
    io:format("ets      ~-18s p=~b n=~b ops/round=~b  best=~.2f Mops/s  median=~.2f Mops/s  "
              "avg=~.2f Mops/s  (~b ops/s)~n",
              ["updates/1000=" ++ integer_to_list(U), P, N, P * L, Best / 1.0e6,
               Median / 1.0e6, Avg / 1.0e6, round(Best)]).

%% One round: P processes, started together, each doing L operations. Returns the ops/s over
%% the time from the start signal to the last process's end, and the lookups that missed.
run_round(T, #{n := N, p := P, l := L}, U, Round) ->
    Parent = self(),
    Pids = [spawn_link(fun() ->
                               X0 = seed(W, Round),
                               Parent ! {ready, self()},
                               receive go -> ok end,
                               Missed = ops(T, N, U, X0, 0, L, 0),
                               Parent ! {done, self(), Missed}
                       end) || W <- lists:seq(1, P)],
    [receive {ready, Pid} -> ok end || Pid <- Pids],
    Start = erlang:monotonic_time(),
    [Pid ! go || Pid <- Pids],
    Missed = lists:sum([receive {done, Pid, M} -> M end || Pid <- Pids]),
    Elapsed = erlang:convert_time_unit(erlang:monotonic_time() - Start, native, nanosecond),
    {P * L * 1.0e9 / max(Elapsed, 1), Missed}.

%% The operation loop: Left operations to go, X the xorshift state, Acc the update
%% accumulator. An update writes the row {K, Left}; a lookup copies the row out.
ops(_T, _N, _U, _X, _Acc, 0, Missed) ->
    Missed;
ops(T, N, U, X0, Acc0, Left, Missed) ->
    X = xorshift32(X0),
    K = X rem N + 1,
    Acc = Acc0 + U,
    if
        Acc >= 1000 ->
            ets:insert(T, {K, Left}),
            ops(T, N, U, X, Acc - 1000, Left - 1, Missed);
        true ->
            case ets:lookup(T, K) of
                [_] -> ops(T, N, U, X, Acc, Left - 1, Missed);
                [] -> ops(T, N, U, X, Acc, Left - 1, Missed + 1)
            end
    end.

xorshift32(X0) ->
    X1 = X0 bxor ((X0 bsl 13) band 16#FFFFFFFF),
    X2 = X1 bxor (X1 bsr 17),
    X2 bxor ((X2 bsl 5) band 16#FFFFFFFF).

%% Process W's seed for round R (never 0), as `strata bench embedded` seeds its threads.
seed(W, R) ->
    max(1, (W * 2654435761 + R * 40503 + 12345) band 16#FFFFFFFF).

%% Inserts {I, I} for I in 1..N from F processes, each a contiguous range, printing progress
%% every Progress seconds. Returns the seconds taken.
fill(T, N, F, Progress) ->
    Parent = self(),
    Start = erlang:monotonic_time(),
    Pids = [spawn_link(fun() ->
                               Lo = 1 + N * (W - 1) div F,
                               Hi = 1 + N * W div F,
                               fill_range(T, Lo, Hi, Parent),
                               Parent ! {filled, self()}
                       end) || W <- lists:seq(1, F)],
    fill_wait(length(Pids), 0, Start, Progress * 1000, Progress * 1000),
    erlang:convert_time_unit(erlang:monotonic_time() - Start, native, microsecond) / 1.0e6.

%% Inserts keys Lo..Hi-1, reporting every 65536 rows to the parent.
fill_range(_T, I, Hi, _Parent) when I >= Hi ->
    ok;
fill_range(T, I, Hi, Parent) ->
    ets:insert(T, {I, I}),
    case I band 16#FFFF of
        0 -> Parent ! {rows, 16#10000};
        _ -> ok
    end,
    fill_range(T, I + 1, Hi, Parent).

fill_wait(0, _Rows, _Start, _Next, _Every) ->
    ok;
fill_wait(Running, Rows, Start, Next, Every) ->
    Now = erlang:convert_time_unit(erlang:monotonic_time() - Start, native, millisecond),
    receive
        {rows, K} -> fill_wait(Running, Rows + K, Start, Next, Every);
        {filled, _} -> fill_wait(Running - 1, Rows, Start, Next, Every)
    after max(0, Next - Now) ->
        io:format("# fill: ~b rows after ~.1f s (~.2f Mins/s)~n",
                  [Rows, Next / 1000, Rows / Next / 1000]),
        fill_wait(Running, Rows, Start, Next + Every, Every)
    end.

%% VmRSS of this VM in bytes, 0 where /proc is not there.
rss_bytes() ->
    case file:read_file("/proc/self/status") of
        {ok, Status} ->
            case re:run(Status, "VmRSS:\\s+(\\d+) kB", [{capture, all_but_first, list}]) of
                {match, [Kb]} -> list_to_integer(Kb) * 1024;
                nomatch -> 0
            end;
        _ -> 0
    end.

parse([], Opts) ->
    Opts;
parse([Arg | Rest], Opts) ->
    case string:split(Arg, "=") of
        ["updates", V] -> parse(Rest, Opts#{updates => [int(S) || S <- string:lexemes(V, ",")]});
        [K, V] when K =:= "n"; K =:= "p"; K =:= "l"; K =:= "rounds"; K =:= "fill";
                    K =:= "progress" ->
            parse(Rest, Opts#{list_to_atom(K) => int(V)});
        _ -> usage("unknown argument " ++ Arg)
    end.

%% An integer, with an optional k or m suffix (1m = 1000000).
int(S) ->
    {Digits, Mult} = case lists:reverse(string:lowercase(S)) of
                         [$k | D] -> {lists:reverse(D), 1000};
                         [$m | D] -> {lists:reverse(D), 1000000};
                         _ -> {S, 1}
                     end,
    case string:to_integer(Digits) of
        {I, ""} -> I * Mult;
        _ -> usage("not an integer: " ++ S)
    end.

plural(1) -> "";
plural(_) -> "es".

usage(Why) ->
    io:format(standard_error, "ets-bench: ~s~nusage: escript scripts/ets-bench.escript "
              "[n=ROWS] [p=PROCS] [l=OPS] [updates=U,...] [rounds=R] [fill=PROCS] "
              "[progress=SECS]~n", [Why]),
    halt(2).

fail(Fmt, Args) ->
    io:format(standard_error, "ets-bench: " ++ Fmt ++ "~n", Args),
    halt(1).
