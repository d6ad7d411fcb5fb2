%%% counting: the CountingActor.
%%%
%%% Seed: "Scala Actor v Erlang gen_server Performance" (2011, 4 cores; SEEDS.md #5,
%%% WORKLOADS.md "counting"): 3,000,000 Count(100) messages to one counting process, then a
%%% synchronous GetAndReset that must return 300,000,000. The seed reported bare receive
%%% 2.8M msg/s and gen_server 1.8M msg/s.
%%%
%%% Params: msgs (3000000) Count(100) messages, split evenly over senders (1) processes (the
%%% first msgs rem senders senders send one more); style (raw):
%%%   raw    - the plainest receive loop: {count, K} adds K; {get_and_reset, From, Ref} replies
%%%            {Ref, Count} and goes on with 0;
%%%   server - counting_server, a gen_server: gen_server:cast for Count, gen_server:call for
%%%            GetAndReset.
%%% ops = msgs.
%%%
%%% Timed: from the first send (the senders are spawned beforehand and wait for `go`) until the
%%% reply to the final GetAndReset. Each sender tells the coordinator when it has sent its share;
%%% then the coordinator calls GetAndReset, summing the replies, until the sum reaches 100*msgs.
%%%
%%% Check: the sum is exactly 100*msgs, reached within 1000 GetAndReset calls.
-module(counting).

-export([params/0, run/1]).

-define(K, 100).
-define(MAX_CALLS, 1000).

params() ->
    [{msgs, pos_int, 3000000},
     {senders, pos_int, 1},
     {style, {enum, [raw, server]}, raw}].

run(#{msgs := Msgs, senders := S, style := Style}) ->
    Counter = start_counter(Style),
    Senders = start_senders(Style, Counter, Msgs div S, Msgs rem S, S, []),
    Target = ?K * Msgs,
    T0 = erlang:monotonic_time(),
    lists:foreach(fun(Sender) -> Sender ! go end, Senders),
    ok = wait_sent(Senders),
    {Sum, Calls} = collect(Style, Counter, Target, 0, 0),
    T1 = erlang:monotonic_time(),
    stop_counter(Style, Counter),
    Check = if
                Sum =:= Target ->
                    ok;
                Sum > Target ->
                    lists:flatten(io_lib:format("sum ~w exceeds ~w", [Sum, Target]));
                true ->
                    lists:flatten(io_lib:format("sum ~w short of ~w after ~w calls",
                                                [Sum, Target, Calls]))
            end,
    #{seconds => bench_common:seconds(T0, T1),
      ops => Msgs,
      check => Check,
      extra => [{get_and_reset_calls, Calls}]}.

%%%=====================================================================
%%% Senders and coordinator
%%%=====================================================================

start_senders(_Style, _Counter, _Share, _Longer, 0, Acc) ->
    Acc;
start_senders(Style, Counter, Share, Longer, K, Acc) ->
    Mine = case Longer > 0 of
               true -> Share + 1;
               false -> Share
           end,
    Coordinator = self(),
    Sender = spawn_link(fun() ->
                                receive go -> ok end,
                                send(Style, Counter, Mine),
                                Coordinator ! {sent, self()}
                        end),
    start_senders(Style, Counter, Share, Longer - 1, K - 1, [Sender | Acc]).

send(raw, Counter, N) -> send_raw(Counter, N);
send(server, Counter, N) -> send_cast(Counter, N).

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

wait_sent([]) ->
    ok;
wait_sent([Sender | Rest]) ->
    receive
        {sent, Sender} -> wait_sent(Rest)
    end.

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
