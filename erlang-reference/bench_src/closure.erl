%%% closure: message versus function.
%%%
%%% Seed: "My shocking Erlang discovery" (R14B01, 2 cores; SEEDS.md #1, WORKLOADS.md "closure"):
%%% 10,000,000 increments of a counter held by a process (fire-and-forget `X ! go`) took 39.7 s,
%%% the same state carried by a chain of closures 2.4 s. The figure of merit is the ratio
%%% message/closure of ns_per_op; run both styles.
%%%
%%% Params: n (10000000) increments; style (message):
%%%   message - a counter process; the driver sends n `go` messages fire-and-forget, then
%%%             {stop, self()}; the process replies with its count and the driver waits for it;
%%%   closure - each call of the closure returns the next closure, holding count + 1; after n
%%%             calls the count is read from the last one.
%%% ops = n; ns_per_op = seconds * 1e9 / n.
%%%
%%% Timed: message - from the first `go` until the count arrives back (the counter process is
%%% spawned just before); closure - from the first call until the count is read.
%%%
%%% Check: the count read at the end equals n.
-module(closure).

-export([params/0, run/1]).

params() ->
    [{n, pos_int, 10000000},
     {style, {enum, [message, closure]}, message}].

run(#{n := N, style := Style}) ->
    {Seconds, Count} = run(Style, N),
    #{seconds => Seconds,
      ops => N,
      check => bench_common:expect(count, Count, N),
      extra => [{ns_per_op, bench_common:round_to(Seconds * 1.0e9 / N, 2)}]}.

run(message, N) ->
    Counter = spawn_link(fun() -> counter(0) end),
    T0 = erlang:monotonic_time(),
    send_go(Counter, N),
    Counter ! {stop, self()},
    Count = receive
                {count, Counter, C} -> C
            end,
    T1 = erlang:monotonic_time(),
    {bench_common:seconds(T0, T1), Count};
run(closure, N) ->
    T0 = erlang:monotonic_time(),
    Count = call_n(make_counter(0), N),
    T1 = erlang:monotonic_time(),
    {bench_common:seconds(T0, T1), Count}.

%%%=====================================================================
%%% style=message
%%%=====================================================================

counter(Count) ->
    receive
        go ->
            counter(Count + 1);
        {stop, From} ->
            From ! {count, self(), Count}
    end.

send_go(_Counter, 0) ->
    ok;
send_go(Counter, N) ->
    Counter ! go,
    send_go(Counter, N - 1).

%%%=====================================================================
%%% style=closure
%%%=====================================================================

%% A counter as a closure: `go` returns the next closure, `read` the count it holds.
make_counter(Count) ->
    fun(go) -> make_counter(Count + 1);
       (read) -> Count
    end.

call_n(Counter, 0) ->
    Counter(read);
call_n(Counter, N) ->
    call_n(Counter(go), N - 1).
