%%% counting: the CountingActor.
%%%
%%% Seed: "Scala Actor v Erlang gen_server Performance" (2011, 4 cores; SEEDS.md #5,
%%% WORKLOADS.md "counting"): 3,000,000 Count(100) messages to one counting process, then a
%%% synchronous GetAndReset that must return 300,000,000. The seed reported bare receive
%%% 2.8M msg/s and gen_server 1.8M msg/s.
%%%
%%% Params: msgs (3000000) Count(100) messages, split evenly over senders (1) processes (the
%%% first msgs rem senders senders send one more); receivers (1, the seed) counting processes:
%%% number the messages 0..msgs-1 in sender order (sender 0's first, then sender 1's...);
%%% message G goes to counter G rem receivers, so each sender sends round-robin (the fan-out
%%% case of otter's issue 24: each send goes to another process than the one before); style
%%% (raw):
%%%   raw    - the plainest receive loop: {count, K} adds K; {get_and_reset, From, Ref} replies
%%%            {Ref, Count} and goes on with 0;
%%%   server - counting_server, a gen_server: gen_server:cast for Count, gen_server:call for
%%%            GetAndReset.
%%% ops = msgs.
%%%
%%% Timed: from the first send (the senders are spawned beforehand and wait for `go`) until the
%%% reply to the final GetAndReset. Each sender tells the coordinator when it has sent its share;
%%% then the coordinator calls GetAndReset on each counter in turn, summing its replies, until
%%% that sum reaches 100 times the messages sent to it.
%%%
%%% Check: each counter's sum is exactly 100 times the messages sent to it (so the total is
%%% 100*msgs: every message arrived exactly once), reached within 1000 GetAndReset calls a
%%% counter.
-module(counting).

-export([params/0, validate/1, run/1]).

-define(K, 100).
-define(MAX_CALLS, 1000).

params() ->
    [{msgs, pos_int, 3000000},
     {senders, pos_int, 1},
     {receivers, pos_int, 1},
     {style, {enum, [raw, server]}, raw}].

validate(#{senders := S, receivers := R}) ->
    bench_common:process_room('senders+receivers', S + R).

run(#{msgs := Msgs, senders := S, receivers := R, style := Style}) ->
    Counters = list_to_tuple([start_counter(Style) || _ <- lists:seq(1, R)]),
    Senders = start_senders(Style, Counters, Msgs, S),
    T0 = erlang:monotonic_time(),
    lists:foreach(fun(Sender) -> Sender ! go end, Senders),
    ok = wait_sent(Senders),
    {Calls, Check} = collect_all(Style, Counters, Msgs, 1, 0, ok),
    T1 = erlang:monotonic_time(),
    [stop_counter(Style, C) || C <- tuple_to_list(Counters)],
    #{seconds => bench_common:seconds(T0, T1),
      ops => Msgs,
      check => Check,
      extra => [{get_and_reset_calls, Calls}]}.

%%%=====================================================================
%%% Senders and coordinator
%%%=====================================================================

%% Sender I (0-based) sends Share (+1 for the first Msgs rem S), the first of them numbered
%% I*Share + min(I, Longer) in the global order, to counter number rem R.
start_senders(Style, Counters, Msgs, S) ->
    Share = Msgs div S,
    Longer = Msgs rem S,
    R = tuple_size(Counters),
    Coordinator = self(),
    [begin
         Mine = Share + case I < Longer of true -> 1; false -> 0 end,
         First = (I * Share + min(I, Longer)) rem R,
         spawn_link(fun() ->
                            receive go -> ok end,
                            send(Style, Counters, First, Mine),
                            Coordinator ! {sent, self()}
                    end)
     end || I <- lists:seq(0, S - 1)].

%% With one counter, the seed's plain loop; else round-robin from counter First (0-based).
send(raw, {Counter}, _First, N) -> send_raw(Counter, N);
send(server, {Counter}, _First, N) -> send_cast(Counter, N);
send(Style, Counters, First, N) -> fan_out(Style, Counters, tuple_size(Counters), First + 1, N).

send_raw(_Counter, 0) ->
    ok;
send_raw(Counter, N) ->
    Counter ! {count, ?K},
    send_raw(Counter, N - 1).

send_cast(_Counter, 0) ->
    ok;
send_cast(Counter, N) ->
    counting_server:count(Counter, ?K),
    send_cast(Counter, N - 1).

%% J is the 1-based index of the next counter.
fan_out(_Style, _Counters, _R, _J, 0) ->
    ok;
fan_out(Style, Counters, R, J, N) when J > R ->
    fan_out(Style, Counters, R, 1, N);
fan_out(raw, Counters, R, J, N) ->
    element(J, Counters) ! {count, ?K},
    fan_out(raw, Counters, R, J + 1, N - 1);
fan_out(server, Counters, R, J, N) ->
    counting_server:count(element(J, Counters), ?K),
    fan_out(server, Counters, R, J + 1, N - 1).

wait_sent([]) ->
    ok;
wait_sent([Sender | Rest]) ->
    receive
        {sent, Sender} -> wait_sent(Rest)
    end.

%% Collects from each counter J (1-based) in turn; returns the calls made and the check of
%% the first counter whose sum is wrong (ok if none).
collect_all(_Style, Counters, _Msgs, J, Calls, Check) when J > tuple_size(Counters) ->
    {Calls, Check};
collect_all(Style, Counters, Msgs, J, Calls0, Check0) ->
    R = tuple_size(Counters),
    Target = ?K * (Msgs div R + case J - 1 < Msgs rem R of true -> 1; false -> 0 end),
    {Sum, Calls} = collect(Style, element(J, Counters), Target, 0, 0),
    Check = if
                Check0 =/= ok -> Check0;
                Sum =:= Target -> ok;
                Sum > Target ->
                    lists:flatten(io_lib:format("counter ~w: sum ~w exceeds ~w",
                                                [J - 1, Sum, Target]));
                true ->
                    lists:flatten(io_lib:format("counter ~w: sum ~w short of ~w after ~w calls",
                                                [J - 1, Sum, Target, Calls]))
            end,
    collect_all(Style, Counters, Msgs, J + 1, Calls0 + Calls, Check).

%% GetAndReset until the sum reaches the target, exceeds it, or MAX_CALLS calls were made.
collect(_Style, _Counter, Target, Sum, Calls) when Sum >= Target; Calls >= ?MAX_CALLS ->
    {Sum, Calls};
collect(Style, Counter, Target, Sum, Calls) ->
    collect(Style, Counter, Target, Sum + get_and_reset(Style, Counter), Calls + 1).

%%%=====================================================================
%%% The counting process, both styles
%%%=====================================================================

start_counter(raw) -> spawn_link(fun() -> counter(0) end);
start_counter(server) -> {ok, Pid} = counting_server:start_link(), Pid.

get_and_reset(raw, Counter) ->
    Ref = make_ref(),
    Counter ! {get_and_reset, self(), Ref},
    receive
        {Ref, Count} -> Count
    end;
get_and_reset(server, Counter) ->
    counting_server:get_and_reset(Counter).

stop_counter(raw, Counter) -> Counter ! stop;
stop_counter(server, Counter) -> counting_server:stop(Counter).

counter(Count) ->
    receive
        {count, K} ->
            counter(Count + K);
        {get_and_reset, From, Ref} ->
            From ! {Ref, Count},
            counter(0);
        stop ->
            ok
    end.
