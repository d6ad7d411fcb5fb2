%%% latency: round trips, each timed on its own, while the runtime is loaded.
%%%
%%% Seed: WORKLOADS.md "latency - round trips while the runtime is loaded" (issue 24): a
%%% runtime is judged by its tail latency as much as by its throughput. The BEAM preempts a
%%% process after 4,000 reductions, so its tail should stay short under any load.
%%%
%%% Params: r (100000) timed round trips; b (1000) background processes; w (5, at most
%%% 1000000) microseconds of computing per background message; hog (0 or 1, default 0).
%%%
%%%   - The background: a ring of b processes with Tokens = b div 2 tokens in flight (at
%%%     least one: b = 1 is a process passing one token to itself), spread evenly round the
%%%     ring. Each member loops: receive a token, compute for about w us, pass it on.
%%%     "Compute" is a busy loop on erlang:monotonic_time(nanosecond) until w us have passed,
%%%     not a sleep; otter's twin spins on Instant::now() the same way.
%%%   - hog=1: one more process computes until the measurement ends: a loop reading a stop
%%%     flag in an `atomics` array (no message, no receive), which A sets when the timed part
%%%     is over. The BEAM preempts it like any process. Like otter's, it yields once
%%%     (erlang:yield/0, counted in hog_yields) if no round trip completes for 50 ms + 4*b*w;
%%%     otter cannot preempt its hog and needs that valve, the BEAM never gets there.
%%%   - The pair: A (the benchmark process) sends {ping, A} to B, B replies pong; A times
%%%     each round trip with erlang:monotonic_time() and keeps the r samples in a list.
%%%
%%% Before the timed part A makes untimed round trips until the background has delivered
%%% at least one message per token and (hog=1) the hog is running.
%%%
%%% ops = r; ns_per_op = the timed part over r (the mean round trip). Extra fields: p50_us,
%%% p99_us, p999_us, max_us (nearest rank of the sorted samples, in us, 2 decimals),
%%% background_msgs_per_s (messages the background received during the timed part over its
%%% seconds; counted with a `counters` array), background_msgs, tokens, warmup_round_trips,
%%% and with hog=1 hog_yields (in the timed part) and hog_yields_warmup.
%%%
%%% Timed: from the first timed ping until the r-th pong.
%%%
%%% Check: r pongs and B answered every ping (warm-up included); the background delivered at
%%% least Tokens messages in a timed part of at least 100 ms (a shorter one can fall
%%% inside a spell in which the OS runs neither scheduler of the ring); every token comes back exactly once when the
%%% ring is told to stop, and the tokens' hop counts add up to the messages the ring counted;
%%% with hog=1, the hog ran through the timed part and stopped on the flag.
-module(latency).

-export([params/0, validate/1, run/1]).

%% atomics slots
-define(STOP, 1).
-define(HOG, 2).        %% 0 not started, 1 running, 2 stopped
-define(PROGRESS, 3).
-define(YIELDS, 4).
-define(STALL_NS, 50000000).
%% The shortest timed part in which a background that received fewer messages than
%% it has tokens counts as starved (see Check).
-define(STARVED_AFTER_S, 0.1).

params() ->
    [{r, pos_int, 100000},
     {b, pos_int, 1000},
     {w, {range, 1, 1000000}, 5},
     {hog, {range, 0, 1}, 0}].

validate(#{b := B, hog := Hog}) ->
    bench_common:process_room(b, B + 1 + Hog).

run(#{r := R, b := B, w := W, hog := Hog}) ->
    A = self(),
    Tokens = max(1, B div 2),
    Flags = atomics:new(4, []),
    Delivered = counters:new(1, [write_concurrency]),
    WorkNs = W * 1000,
    StallNs = ?STALL_NS + 4 * B * WorkNs,
    Ring = build(B, undefined, A, Flags, Delivered, WorkNs, []),
    lists:last(Ring) ! {next, hd(Ring)},
    Pong = spawn_link(fun() -> pong(0) end),
    _ = Hog =:= 1 andalso spawn_link(fun() -> hog(Flags, StallNs) end),
    RingT = list_to_tuple(Ring),
    _ = [element(Id * B div Tokens + 1, RingT) ! {token, Id, 0}
         || Id <- lists:seq(0, Tokens - 1)],
    Warmup = warmup(Pong, Flags, Delivered, Tokens, Hog, 0),

    D0 = counters:get(Delivered, 1),
    Y0 = atomics:get(Flags, ?YIELDS),
    T0 = erlang:monotonic_time(),
    {Samples, Pongs} = timed(Pong, Flags, R, [], 0),
    T1 = erlang:monotonic_time(),
    Background = counters:get(Delivered, 1) - D0,
    HogAtEnd = atomics:get(Flags, ?HOG),
    Y1 = atomics:get(Flags, ?YIELDS),
    atomics:put(Flags, ?STOP, 1),

    {Back, Twice, Hops} = collect(Tokens, #{}, 0, 0),
    _ = [P ! stop || P <- Ring],
    Pong ! {stop, A},
    Pings = receive {pings, N} -> N end,
    HogEnd = wait_hog(Hog, Flags, 10000),
    Total = counters:get(Delivered, 1),

    Seconds = bench_common:seconds(T0, T1),
    Check =
        if Pongs =/= R -> bench_common:expect(pongs, Pongs, R);
           Pings =/= Warmup + R -> bench_common:expect("B's pings", Pings, Warmup + R);
           Hog =:= 1, HogAtEnd =/= 1; Hog =:= 1, HogEnd =/= 2 ->
                lists:flatten(io_lib:format("the hog was not running through the timed part "
                                            "(state ~w, then ~w)", [HogAtEnd, HogEnd]));
           Background < Tokens, Seconds >= ?STARVED_AFTER_S ->
                lists:flatten(io_lib:format(
                  "the background received ~w messages in the timed part, fewer than its "
                  "~w tokens", [Background, Tokens]));
           Twice > 0; map_size(Back) =/= Tokens ->
                lists:flatten(io_lib:format("tokens: ~w came back twice, ~w never",
                                            [Twice, Tokens - map_size(Back)]));
           Hops =/= Total ->
                lists:flatten(io_lib:format("the tokens made ~w hops, the ring counted ~w "
                                            "messages", [Hops, Total]));
           true -> ok
        end,
    Sorted = list_to_tuple(lists:sort(Samples)),
    Us = fun(Native) ->
                 Ns = erlang:convert_time_unit(Native, native, nanosecond),
                 bench_common:round_to(Ns / 1000, 2)
         end,
    Pct = fun(PerMille) ->
                  Rank = max(1, (R * PerMille + 999) div 1000),
                  Us(element(Rank, Sorted))
          end,
    #{seconds => Seconds,
      ops => R,
      check => Check,
      extra => [{ns_per_op, bench_common:round_to(Seconds * 1.0e9 / R, 2)},
                {p50_us, Pct(500)},
                {p99_us, Pct(990)},
                {p999_us, Pct(999)},
                {max_us, Us(element(R, Sorted))},
                {background_msgs_per_s,
                 bench_common:round_to(Background / max(Seconds, 1.0e-9), 1)},
                {background_msgs, Background},
                {tokens, Tokens},
                {warmup_round_trips, Warmup}]
               ++ case Hog of
                      1 -> [{hog_yields, Y1 - Y0}, {hog_yields_warmup, Y0}];
                      0 -> []
                  end}.

%% The ring, built backwards: each new member is handed the one created before it; the first
%% one created (the last of the ring) learns the first by {next, Pid}. Returns the members in
%% ring order.
build(0, _Prev, _A, _Flags, _Delivered, _WorkNs, Acc) ->
    Acc;
build(N, Prev, A, Flags, Delivered, WorkNs, Acc) ->
    P = spawn_link(fun() -> member(Prev, A, Flags, Delivered, WorkNs) end),
    build(N - 1, P, A, Flags, Delivered, WorkNs, [P | Acc]).

%% A background member: receives a token, computes for WorkNs, passes it on; once the stop
%% flag is set, gives the tokens it receives back to A instead.
member(Next, A, Flags, Delivered, WorkNs) ->
    receive
        {next, P} ->
            member(P, A, Flags, Delivered, WorkNs);
        {token, Id, Hops} ->
            counters:add(Delivered, 1, 1),
            compute(WorkNs),
            case atomics:get(Flags, ?STOP) of
                0 when Next =/= undefined -> Next ! {token, Id, Hops + 1};
                _ -> A ! {token_back, Id, Hops + 1}
            end,
            member(Next, A, Flags, Delivered, WorkNs);
        stop ->
            ok
    end.

%% Busy for Ns nanoseconds: reads the monotonic clock until they have passed.
compute(Ns) ->
    spin(erlang:monotonic_time(nanosecond) + Ns).

spin(End) ->
    case erlang:monotonic_time(nanosecond) < End of
        true -> spin(End);
        false -> ok
    end.

%% B.
pong(Pings) ->
    receive
        {ping, From} ->
            From ! pong,
            pong(Pings + 1);
        {stop, From} ->
            From ! {pings, Pings}
    end.

%% The hog: computes until the stop flag is set; if no round trip has completed for StallNs,
%% it yields once (counted) and goes on.
hog(Flags, StallNs) ->
    atomics:put(Flags, ?HOG, 1),
    hog(Flags, StallNs, 1, atomics:get(Flags, ?PROGRESS), erlang:monotonic_time(nanosecond)).

hog(Flags, StallNs, I, Seen, Since) ->
    case atomics:get(Flags, ?STOP) of
        1 ->
            atomics:put(Flags, ?HOG, 2);
        0 when I band 4095 =:= 0 ->
            case atomics:get(Flags, ?PROGRESS) of
                Seen ->
                    Now = erlang:monotonic_time(nanosecond),
                    case Now - Since > StallNs of
                        true ->
                            atomics:add(Flags, ?YIELDS, 1),
                            erlang:yield(),
                            hog(Flags, StallNs, I + 1, Seen, erlang:monotonic_time(nanosecond));
                        false ->
                            hog(Flags, StallNs, I + 1, Seen, Since)
                    end;
                Progress ->
                    hog(Flags, StallNs, I + 1, Progress, erlang:monotonic_time(nanosecond))
            end;
        0 ->
            hog(Flags, StallNs, I + 1, Seen, Since)
    end.

%% Untimed round trips until the background is going and the hog runs; returns how many.
warmup(Pong, Flags, Delivered, Tokens, Hog, N) ->
    Going = counters:get(Delivered, 1) >= Tokens,
    HogOn = Hog =:= 0 orelse atomics:get(Flags, ?HOG) =/= 0,
    case N > 0 andalso Going andalso HogOn of
        true ->
            N;
        false ->
            Pong ! {ping, self()},
            receive pong -> ok end,
            atomics:add(Flags, ?PROGRESS, 1),
            warmup(Pong, Flags, Delivered, Tokens, Hog, N + 1)
    end.

%% The timed round trips: {Samples (native time units), Pongs}.
timed(_Pong, _Flags, 0, Acc, Pongs) ->
    {Acc, Pongs};
timed(Pong, Flags, N, Acc, Pongs) ->
    T = erlang:monotonic_time(),
    Pong ! {ping, self()},
    receive pong -> ok end,
    D = erlang:monotonic_time() - T,
    atomics:add(Flags, ?PROGRESS, 1),
    timed(Pong, Flags, N - 1, [D | Acc], Pongs + 1).

%% Every token back: {Ids seen (a map), how many came back twice, their hops in all}.
collect(0, Seen, Twice, Hops) ->
    {Seen, Twice, Hops};
collect(N, Seen, Twice, Hops) ->
    receive
        {token_back, Id, H} ->
            case is_map_key(Id, Seen) of
                true -> collect(N - 1, Seen, Twice + 1, Hops + H);
                false -> collect(N - 1, Seen#{Id => true}, Twice, Hops + H)
            end
    end.

%% The hog's state once it has seen the stop flag (waits up to TimeoutMs for it).
wait_hog(0, _Flags, _TimeoutMs) ->
    2;
wait_hog(1, Flags, TimeoutMs) ->
    case atomics:get(Flags, ?HOG) of
        1 when TimeoutMs > 0 ->
            timer:sleep(1),
            wait_hog(1, Flags, TimeoutMs - 1);
        State ->
            State
    end.
