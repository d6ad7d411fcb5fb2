%%% pingpong: round-trip latency between two processes.
%%%
%%% Seed: WORKLOADS.md "pingpong" (the "a hop between processes must be a few nanoseconds"
%%% question of SEEDS.md #4, and the call layer of SEEDS.md #5): process A sends ping to B,
%%% B replies pong, A waits for it; r round trips.
%%%
%%% Params: r (1000000) round trips; style (raw):
%%%   raw    - plain messages: A sends {ping, self()}, B replies `pong`;
%%%   server - B is pingpong_server, a gen_server, and A does gen_server:call(B, ping).
%%% ops = r; ns_per_op = nanoseconds per round trip. A is the benchmark process itself.
%%%
%%% Timed: from the first ping until the r-th pong is received (B is started just before).
%%%
%%% Check: r pongs received.
-module(pingpong).

-export([params/0, run/1]).

params() ->
    [{r, pos_int, 1000000},
     {style, {enum, [raw, server]}, raw}].

run(#{r := R, style := Style}) ->
    B = start(Style),
    T0 = erlang:monotonic_time(),
    Pongs = ping(Style, B, R, 0),
    T1 = erlang:monotonic_time(),
    stop(Style, B),
    Seconds = bench_common:seconds(T0, T1),
    #{seconds => Seconds,
      ops => R,
      check => bench_common:expect(pongs, Pongs, R),
      extra => [{ns_per_op, bench_common:round_to(Seconds * 1.0e9 / R, 2)}]}.

start(raw) -> spawn_link(fun pong/0);
start(server) -> {ok, B} = pingpong_server:start_link(), B.

stop(raw, B) -> B ! stop;
stop(server, B) -> pingpong_server:stop(B).

%% Process B, style=raw.
pong() ->
    receive
        {ping, From} ->
            From ! pong,
            pong();
        stop ->
            ok
    end.

%% Process A.
ping(_Style, _B, 0, Pongs) ->
    Pongs;
ping(raw, B, R, Pongs) ->
    B ! {ping, self()},
    receive
        pong -> ping(raw, B, R - 1, Pongs + 1)
    end;
ping(server, B, R, Pongs) ->
    case pingpong_server:ping(B) of
        pong -> ping(server, B, R - 1, Pongs + 1);
        _ -> ping(server, B, R - 1, Pongs)
    end.
