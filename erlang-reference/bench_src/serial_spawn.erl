%%% serial_spawn: the `spawn` workload.
%%%
%%% Seed: "How fast can Erlang create processes?" (2006; SEEDS.md #3, WORKLOADS.md "spawn"):
%%% serial_spawn(M), 1,000,000 processes in M chains, each process spawning the next of its
%%% chain and then exiting. The seed also ran c = 10 and c = 100.
%%%
%%% Params: n (1000000) processes in all, c (1) chains; c must not exceed n. When c does not
%%% divide n, the first n rem c chains get one process more, so exactly n processes are made.
%%% ops = n.
%%%
%%% style (chain): chain is the seed's; loop is one process (the coordinator) spawning all n
%%% in a loop, each of which adds one to a shared counter (atomics) and exits, the one that
%%% brings it to n sending {done, N} (c is ignored).
%%%
%%% Timed: from spawning the first chain head (or the loop's first process) until the
%%% coordinator has all c `done` messages (loop: the one).
%%%
%%% Check: c `done` messages arrive (and no more), and the process counts they carry add up to n:
%%% each process passes on how many processes its chain has made so far.
-module(serial_spawn).

-export([params/0, validate/1, run/1]).

params() ->
    [{n, pos_int, 1000000},
     {c, pos_int, 1},
     {style, {enum, [chain, loop]}, chain}].

validate(#{n := N, c := C}) when C > N ->
    {error, io_lib:format("c=~w exceeds n=~w (every chain needs a process)", [C, N])};
validate(#{c := C}) ->
    %% At most about two processes per chain are alive at once.
    bench_common:process_room(c, 2 * C).

run(#{n := N, style := loop}) ->
    Coordinator = self(),
    Made = atomics:new(1, []),
    T0 = erlang:monotonic_time(),
    spawn_loop(Coordinator, Made, N, N),
    K = receive {done, Done} -> Done end,
    T1 = erlang:monotonic_time(),
    Extra = receive {done, _} -> extra_done after 0 -> none end,
    Check = case Extra of
                extra_done -> "more than one done message";
                none -> bench_common:expect(processes, K, N)
            end,
    #{seconds => bench_common:seconds(T0, T1), ops => N, check => Check};
run(#{n := N, c := C}) ->
    Coordinator = self(),
    T0 = erlang:monotonic_time(),
    start_chains(Coordinator, N div C, N rem C, C),
    Made = wait_dones(C, 0),
    T1 = erlang:monotonic_time(),
    Extra = receive {done, _} -> extra_done after 0 -> none end,
    Check = case {Extra, Made} of
                {extra_done, _} -> "more than c done messages";
                {none, _} -> bench_common:expect(processes, Made, N)
            end,
    Result = #{seconds => bench_common:seconds(T0, T1), ops => N, check => Check},
    case N rem C of
        0 -> Result;
        R -> Result#{note => io_lib:format("n rem c = ~w: ~w chains of ~w, ~w of ~w",
                                           [R, R, N div C + 1, C - R, N div C])}
    end.

start_chains(_Coordinator, _Len, _Longer, 0) ->
    ok;
start_chains(Coordinator, Len, Longer, K) ->
    ChainLen = case Longer > 0 of
                   true -> Len + 1;
                   false -> Len
               end,
    spawn(fun() -> chain(Coordinator, ChainLen - 1, 1) end),
    start_chains(Coordinator, Len, Longer - 1, K - 1).

%% Left: processes of this chain still to create; Made: created so far, this one included.
chain(Coordinator, 0, Made) ->
    Coordinator ! {done, Made};
chain(Coordinator, Left, Made) ->
    spawn(fun() -> chain(Coordinator, Left - 1, Made + 1) end).

wait_dones(0, Made) ->
    Made;
wait_dones(K, Made) ->
    receive
        {done, M} -> wait_dones(K - 1, Made + M)
    end.

%% Spawns Left more processes; each adds one to Made, the one that brings it to N reports.
spawn_loop(_Coordinator, _Made, _N, 0) ->
    ok;
spawn_loop(Coordinator, Made, N, Left) ->
    spawn(fun() ->
                  case atomics:add_get(Made, 1, 1) of
                      N -> Coordinator ! {done, N};
                      _ -> ok
                  end
          end),
    spawn_loop(Coordinator, Made, N, Left - 1).
