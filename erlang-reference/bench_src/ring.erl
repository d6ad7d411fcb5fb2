%%% ring: Armstrong's ring.
%%%
%%% Seed: Programming Erlang, exercise 8.11 (the ring), as measured in "Erlang vs. Stackless vs.
%%% multitask: the Ring Benchmark Showdown" (2007, R11B-5; SEEDS.md #4, WORKLOADS.md "ring").
%%% The seed's grid is n and m each in 100, 1000, 10000.
%%%
%%% Params: n (1000) processes in the ring, m (1000) times round it. ops = n*m sends.
%%% The ring is the running process (the starter) plus n-1 spawned relays, each knowing the next.
%%%
%%% Timed: creating the ring, all m rounds until the token is back at the starter, and telling
%%% every process to exit: `stop` goes round the ring once, each relay forwards it and returns;
%%% the clock stops when `stop` is back at the starter.
%%%
%%% Check: the token carries the number of sends it has made; at the end it must equal n*m.
-module(ring).

-export([params/0, validate/1, run/1]).

params() ->
    [{n, pos_int, 1000},
     {m, pos_int, 1000}].

validate(#{n := N}) ->
    bench_common:process_room(n, N).

run(#{n := N, m := M}) ->
    T0 = erlang:monotonic_time(),
    First = build(N - 1, self()),
    Hops = rounds(First, M, 0),
    First ! stop,
    receive stop -> ok end,
    T1 = erlang:monotonic_time(),
    #{seconds => bench_common:seconds(T0, T1),
      ops => N * M,
      check => bench_common:expect(hops, Hops, N * M)}.

%% Build the ring backwards: each new relay forwards to the one created before it, and the
%% first one created forwards to the starter. Returns the starter's successor (with n = 1 that
%% is the starter itself).
build(0, Next) ->
    Next;
build(K, Next) ->
    build(K - 1, spawn(fun() -> relay(Next) end)).

relay(Next) ->
    receive
        {token, Hops} ->
            Next ! {token, Hops + 1},
            relay(Next);
        stop ->
            Next ! stop
    end.

%% The starter's side: send the token on, wait for it to come back, M times.
rounds(_First, 0, Hops) ->
    Hops;
rounds(First, M, Hops) ->
    First ! {token, Hops + 1},
    receive
        {token, Back} -> rounds(First, M - 1, Back)
    end.
