%%% memory: the cost of an idle process.
%%%
%%% Seed: WORKLOADS.md "memory" (the "spawn must be as cheap as allocating a small object"
%%% question behind SEEDS.md #3): spawn p processes, each blocked waiting for a message, and
%%% measure what they cost.
%%%
%%% Params: p (100000) processes. ops = p.
%%%
%%% Measured: VmRSS of the emulator (/proc/self/status) before spawning and once all p processes
%%% are alive and blocked: each child sends `ready` to the parent just before it blocks in
%%% `receive`, and the parent waits for p readies. bytes_per_process = RSS delta / p. Also
%%% beam_bytes_per_process = delta of erlang:memory(processes) / p (the emulator's own account,
%%% which includes the parent's list of p pids, 16 bytes a process).
%%%
%%% Timed: from the first spawn until the p-th `ready` has arrived.
%%%
%%% Check: then every child is monitored (after the measurement, so monitors are not counted)
%%% and told to stop; all p must end normally ('DOWN' with reason normal).
-module(memory).

-export([params/0, validate/1, run/1]).

params() ->
    [{p, pos_int, 100000}].

validate(#{p := P}) ->
    bench_common:process_room(p, P).

run(#{p := P}) ->
    Parent = self(),
    erlang:garbage_collect(),
    Rss0 = bench_common:vm_rss(),
    Beam0 = erlang:memory(processes),
    T0 = erlang:monotonic_time(),
    Pids = spawn_idle(Parent, P, []),
    ok = wait_ready(P),
    T1 = erlang:monotonic_time(),
    Rss1 = bench_common:vm_rss(),
    Beam1 = erlang:memory(processes),
    lists:foreach(fun(Pid) ->
                          erlang:monitor(process, Pid),
                          Pid ! stop
                  end, Pids),
    Ended = wait_down(P, 0),
    BeamPerProcess = bench_common:round_to((Beam1 - Beam0) / P, 1),
    {RssFields, RssCheck} =
        case {Rss0, Rss1} of
            {{ok, R0}, {ok, R1}} ->
                {[{bytes_per_process, bench_common:round_to((R1 - R0) / P, 1)},
                  {rss_before_bytes, R0},
                  {rss_after_bytes, R1}], ok};
            {{error, Why}, _} -> {[{bytes_per_process, null}], Why};
            {_, {error, Why}} -> {[{bytes_per_process, null}], Why}
        end,
    Check = case bench_common:expect(ended_normally, Ended, P) of
                ok -> RssCheck;
                Failed -> Failed
            end,
    #{seconds => bench_common:seconds(T0, T1),
      ops => P,
      check => Check,
      extra => RssFields ++ [{beam_bytes_per_process, BeamPerProcess}]}.

spawn_idle(_Parent, 0, Acc) ->
    Acc;
spawn_idle(Parent, N, Acc) ->
    Pid = spawn(fun() ->
                        Parent ! ready,
                        receive stop -> ok end
                end),
    spawn_idle(Parent, N - 1, [Pid | Acc]).

wait_ready(0) ->
    ok;
wait_ready(N) ->
    receive
        ready -> wait_ready(N - 1)
    end.

%% Counts the children that ended normally; waits for all p 'DOWN's.
wait_down(0, Normal) ->
    Normal;
wait_down(N, Normal) ->
    receive
        {'DOWN', _Ref, process, _Pid, normal} -> wait_down(N - 1, Normal + 1);
        {'DOWN', _Ref, process, _Pid, _Other} -> wait_down(N - 1, Normal)
    end.
