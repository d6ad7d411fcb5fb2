%%% overload: producers faster than their consumer.
%%%
%%% Seed: WORKLOADS.md "overload - producers faster than their consumer" (issue 41): what
%%% a flood costs the consumer's throughput and the node's memory. Erlang never bounds a
%%% mailbox, so this twin has no bound: its row shows what an unbounded queue costs.
%%%
%%% Params: p (4) producer processes; w (10, at most 1000000) us of computing per message
%%% at the consumer (a busy loop on erlang:monotonic_time(nanosecond), as in latency);
%%% seconds (5); bound (only 0: accepted so that otter's command lines with bound=0 run
%%% here unchanged); pw (1, at most 1000000) us each producer computes before each
%%% message (0: as fast as it can; the default of 1 keeps an unbounded flood within the
%%% suite's memory budget, as otter's); send (try | await: accepted so that otter's
%%% command lines run here unchanged; Erlang's `!` is the one send, and never waits).
%%%
%%%   - A producer loops until the stop flag (an `atomics` slot): compute pw us, then
%%%     Consumer ! {item, From, Seq, SentNs}. The BEAM preempts it; no yield is needed.
%%%   - The consumer receives, checks Seq against the producer's last one, records the
%%%     queueing delay, computes w us and counts (in an `atomics` slot). Once the stop
%%%     flag is set it drains what is left without computing.
%%%
%%% ops = messages the consumer handled (computed) during the timed part. Extra fields as
%%% otter's: sent, accepted, refused (always 0), backlog_at_stop, max_queue,
%%% peak_rss_kb (VmHWM), p99_queue_us, ideal_msgs_per_s, bound.
%%%
%%% Timed: from the producers' spawn until the stop flag, `seconds` later.
%%%
%%% Check: the consumer handled exactly the sent messages, each producer's in order and
%%% none twice; every producer reported once.
-module(overload).

-export([params/0, validate/1, run/1]).

-define(STOP, 1).
-define(HANDLED, 2).
-define(MAX_SAMPLES, 10000000).

params() ->
    [{p, pos_int, 4},
     {w, {range, 1, 1000000}, 10},
     {seconds, pos_int, 5},
     {bound, {range, 0, 0}, 0},
     {pw, {range, 0, 1000000}, 1},
     {send, {enum, ['try', await]}, 'try'}].

validate(#{p := P}) ->
    bench_common:process_room(p, P + 2).

run(#{p := P, w := W, seconds := Secs, pw := PW}) ->
    Root = self(),
    Flags = atomics:new(2, []),
    Start = erlang:monotonic_time(nanosecond),
    Cap = min(?MAX_SAMPLES, Secs * 1000000 div W),
    Consumer = spawn_link(fun() ->
                                  consume(Flags, W * 1000, Start, Cap, #{}, 0, 0, 0, 0, [],
                                          0, false)
                          end),
    T0 = erlang:monotonic_time(),
    _ = [spawn_link(fun() -> produce(I, Consumer, Root, Flags, PW * 1000, Start, 0) end)
         || I <- lists:seq(0, P - 1)],
    timer:sleep(Secs * 1000),
    atomics:put(Flags, ?STOP, 1),
    T1 = erlang:monotonic_time(),
    Handled = atomics:get(Flags, ?HANDLED),
    Accepted = collect(P, #{}),
    Sent = lists:sum(maps:values(Accepted)),
    Consumer ! {stop, Root},
    {Next, OutOfOrder, Total, MaxQueue, Delays} =
        receive {consumed, N, O, T, M, D} -> {N, O, T, M, D} end,
    Rss = peak_rss_kb(),
    NonZero = maps:filter(fun(_, V) -> V > 0 end, Accepted),
    Check =
        if map_size(Accepted) =/= P ->
                bench_common:expect("producers reporting", map_size(Accepted), P);
           OutOfOrder > 0 ->
                lists:flatten(io_lib:format("~w items out of order or repeated",
                                            [OutOfOrder]));
           Next =/= NonZero ->
                lists:flatten(io_lib:format("the consumer handled ~w items, the producers "
                                            "sent ~w", [Total, Sent]));
           true -> ok
        end,
    Seconds = bench_common:seconds(T0, T1),
    P99 = case lists:sort(Delays) of
              [] -> [];
              Sorted ->
                  N99 = length(Sorted),
                  Rank = max(1, (N99 * 990 + 999) div 1000),
                  [{p99_queue_us, bench_common:round_to(lists:nth(Rank, Sorted) / 1000, 2)}]
          end,
    #{seconds => Seconds,
      ops => max(Handled, 1),
      check => Check,
      extra => [{sent, Sent},
                {accepted, Sent},
                {refused, 0},
                {backlog_at_stop, max(0, Sent - Handled)},
                {max_queue, MaxQueue}]
               ++ [{peak_rss_kb, Kb} || {ok, Kb} <- [Rss]]
               ++ P99
               ++ [{ideal_msgs_per_s, bench_common:round_to(1.0e6 / W, 1)},
                   {bound, 0}]}.

collect(0, Acc) ->
    Acc;
collect(N, Acc) ->
    receive
        {produced, From, Sent} -> collect(N - 1, Acc#{From => Sent})
    end.

produce(From, Consumer, Root, Flags, PWNs, Start, Seq) ->
    case atomics:get(Flags, ?STOP) of
        1 ->
            Root ! {produced, From, Seq};
        0 ->
            compute(PWNs),
            Consumer ! {item, From, Seq, erlang:monotonic_time(nanosecond) - Start},
            produce(From, Consumer, Root, Flags, PWNs, Start, Seq + 1)
    end.

consume(Flags, WNs, Start, Cap, Next, OutOfOrder, Total, MaxQueue, Handled, Delays, NDelays,
        Stopped) ->
    {message_queue_len, Len} = process_info(self(), message_queue_len),
    MaxQueue1 = max(MaxQueue, Len),
    receive
        {item, From, Seq, SentNs} ->
            {Next1, OutOfOrder1} =
                case maps:get(From, Next, 0) of
                    Seq -> {Next#{From => Seq + 1}, OutOfOrder};
                    _ -> {Next, OutOfOrder + 1}
                end,
            Stopped1 = Stopped orelse atomics:get(Flags, ?STOP) =:= 1,
            case Stopped1 of
                true ->
                    consume(Flags, WNs, Start, Cap, Next1, OutOfOrder1, Total + 1, MaxQueue1,
                            Handled, Delays, NDelays, true);
                false ->
                    {Delays1, NDelays1} =
                        case NDelays < Cap of
                            true ->
                                Now = erlang:monotonic_time(nanosecond) - Start,
                                {[Now - SentNs | Delays], NDelays + 1};
                            false -> {Delays, NDelays}
                        end,
                    compute(WNs),
                    atomics:put(Flags, ?HANDLED, Handled + 1),
                    consume(Flags, WNs, Start, Cap, Next1, OutOfOrder1, Total + 1, MaxQueue1,
                            Handled + 1, Delays1, NDelays1, false)
            end;
        {stop, Root} ->
            Root ! {consumed, Next, OutOfOrder, Total, MaxQueue1, Delays}
    end.

%% Busy for Ns nanoseconds: reads the monotonic clock until they have passed.
compute(0) ->
    ok;
compute(Ns) ->
    spin(erlang:monotonic_time(nanosecond) + Ns).

spin(End) ->
    case erlang:monotonic_time(nanosecond) < End of
        true -> spin(End);
        false -> ok
    end.

peak_rss_kb() ->
    case file:read_file("/proc/self/status") of
        {ok, Status} ->
            case re:run(Status, "^VmHWM:\\s*(\\d+)\\s*kB",
                        [multiline, {capture, [1], list}]) of
                {match, [Kb]} -> {ok, list_to_integer(Kb)};
                nomatch -> error
            end;
        {error, _} -> error
    end.
