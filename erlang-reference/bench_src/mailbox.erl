%%% mailbox: selective receive order.
%%%
%%% Seed: "Erlang process mailbox performance" (2010; SEEDS.md #2, WORKLOADS.md "mailbox"):
%%% 10,000 processes each send {self(), ok} to the parent, which waits for each pid in turn
%%% with selective receive. In reverse spawn order it took 1.37 s, in spawn order 83 ms: each
%%% receive rescans the messages it skipped, so the reverse order is O(k^2) on the BEAM.
%%%
%%% Params: k (10000) children; order (spawn): spawn | reverse, the order in which the parent
%%% takes the children's messages. ops = k.
%%%
%%% Timed: from the first spawn until the last child's message is taken, with
%%% `receive {Pid, ok} -> ok end` on each child's pid.
%%%
%%% Check: all k messages were taken and the parent's mailbox is empty afterwards.
-module(mailbox).

-export([params/0, validate/1, run/1]).

params() ->
    [{k, pos_int, 10000},
     {order, {enum, [spawn, reverse]}, spawn}].

validate(#{k := K}) ->
    bench_common:process_room(k, K).

run(#{k := K, order := Order}) ->
    Parent = self(),
    T0 = erlang:monotonic_time(),
    Newest = spawn_children(Parent, K, []),
    Pids = case Order of
               spawn -> lists:reverse(Newest);
               reverse -> Newest
           end,
    Taken = take(Pids, 0),
    T1 = erlang:monotonic_time(),
    {message_queue_len, Left} = process_info(self(), message_queue_len),
    Check = case {Taken, Left} of
                {K, 0} -> ok;
                {K, _} -> lists:flatten(io_lib:format("~w messages left over", [Left]));
                _ -> bench_common:expect(taken, Taken, K)
            end,
    #{seconds => bench_common:seconds(T0, T1), ops => K, check => Check}.

%% Returns the pids newest first, i.e. in reverse spawn order.
spawn_children(_Parent, 0, Acc) ->
    Acc;
spawn_children(Parent, N, Acc) ->
    Child = spawn(fun() -> Parent ! {self(), ok} end),
    spawn_children(Parent, N - 1, [Child | Acc]).

take([], Taken) ->
    Taken;
take([Pid | Rest], Taken) ->
    receive
        {Pid, ok} -> take(Rest, Taken + 1)
    end.
