%%% forkjoin: the `forkjoin` workload, a process tree that sums its leaves.
%%%
%%% WORKLOADS.md "forkjoin" (otter's issue 39, item 8): fib(N) as processes. A process for
%%% K =< 2 sends 1 to its parent and ends; otherwise it spawns two children, for K-1 and then
%%% K-2, receives their two numbers, sends the sum to its parent and ends. The obvious
%%% Erlang program: the BEAM runs the tree in whatever order its run queues give.
%%%
%%% Params: n (27). ops = processes spawned, 2*fib(n)-1 (392,835 for n = 27).
%%%
%%% Timed: from the root's spawn until the root's answer reaches the coordinator.
%%%
%%% Check: the answer equals fib(n). Extra: peak_rss_bytes, VmHWM of the emulator's OS
%%% process (/proc/self/status) after the run: its high-water mark, the emulator's own
%%% memory included.
-module(forkjoin).

-export([params/0, validate/1, run/1]).

params() ->
    [{n, {range, 1, 40}, 27}].

validate(#{n := N}) ->
    %% A breadth-first walk may hold most of the tree alive at once.
    bench_common:process_room(n, 2 * fib(N) - 1).

run(#{n := N}) ->
    Self = self(),
    T0 = erlang:monotonic_time(),
    spawn(fun() -> node(Self, N) end),
    Answer = receive A -> A end,
    T1 = erlang:monotonic_time(),
    Check = bench_common:expect(answer, Answer, fib(N)),
    {Check1, Extra} = case vm_hwm() of
                          {ok, B} -> {Check, [{peak_rss_bytes, B}]};
                          {error, Why} when Check =:= ok -> {Why, [{peak_rss_bytes, null}]};
                          {error, _} -> {Check, [{peak_rss_bytes, null}]}
                      end,
    #{seconds => bench_common:seconds(T0, T1), ops => 2 * fib(N) - 1, check => Check1,
      extra => Extra}.

node(Parent, K) when K =< 2 ->
    Parent ! 1;
node(Parent, K) ->
    Self = self(),
    spawn(fun() -> node(Self, K - 1) end),
    spawn(fun() -> node(Self, K - 2) end),
    receive A -> receive B -> Parent ! A + B end end.

fib(N) -> fib(N, 1, 1).

fib(N, A, _B) when N =< 2 -> A;
fib(N, A, B) -> fib(N - 1, A + B, A).

vm_hwm() ->
    case file:read_file("/proc/self/status") of
        {ok, Status} ->
            case re:run(Status, "^VmHWM:\\s*(\\d+)\\s*kB", [multiline, {capture, [1], list}]) of
                {match, [Kb]} -> {ok, list_to_integer(Kb) * 1024};
                nomatch -> {error, "no VmHWM in /proc/self/status"}
            end;
        {error, Why} ->
            {error, lists:flatten(io_lib:format("cannot read /proc/self/status: ~p", [Why]))}
    end.
