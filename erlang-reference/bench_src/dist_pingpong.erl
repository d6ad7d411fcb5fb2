%%% dist_pingpong: the Erlang twin of otter's `dist-pingpong` (WORKLOADS.md "dist").
%%%
%%%     bench dist-pingpong peer=NODE r=R size=S [cookie=C]
%%%
%%% The escript becomes a hidden distributed node at run time, erlbench_<os pid>@<short host>
%%% (bench_common:start_distribution/2: net_kernel:start/2 with shortnames, the cookie set,
%%% `epmd -daemon` started first if no epmd answers), connects to Peer, and one process runs
%%% round trips to the process registered as echo there: it sends {self(), Bin} by name
%%% ({echo, Peer} ! ..., every round trip), Bin an S-byte binary, and waits for {echo, Bin}.
%%% 1000 untimed round trips of warm-up, then R timed, as otter's.
%%%
%%% ops = R; ns_per_op = a round trip. Extra fields: peer, node, warmup.
%%% Check: every reply arrived (each within 10 s) and equals the binary sent. A peer that
%%% cannot be reached (or a node that cannot start) is exit 3, one line on stderr.
-module(dist_pingpong).

-export([params/0, validate/1, run/1]).

-define(WARMUP, 1000).
-define(REPLY_WAIT_MS, 10000).

params() ->
    [{peer, name, <<>>},
     {r, pos_int, 10000},
     {size, {range, 1, 64 bsl 20}, 64},
     {cookie, name, <<"otterbench">>}].

validate(#{peer := <<>>}) ->
    {error, "peer= is required: the echo node, alive@host"};
validate(#{peer := Peer}) ->
    case binary:split(Peer, <<"@">>, [global]) of
        [A, H] when A =/= <<>>, H =/= <<>> -> ok;
        _ -> {error, io_lib:format("peer=~ts is not a node name alive@host", [Peer])}
    end.

run(#{peer := PeerBin, r := R, size := Size, cookie := Cookie}) ->
    Name = list_to_atom("erlbench_" ++ os:getpid()),
    bench_common:start_distribution(Name, Cookie),
    Peer = binary_to_atom(PeerBin),
    case net_kernel:connect_node(Peer) of
        true -> ok;
        _ -> bench_common:fail("dist-pingpong: cannot connect to ~ts", [PeerBin])
    end,
    Bin = binary:part(binary:copy(<<"0123456789abcdef">>, Size div 16 + 1), 0, Size),
    Result = case trips(Peer, Bin, ?WARMUP, 1) of
                 ok ->
                     T0 = erlang:monotonic_time(),
                     Timed = trips(Peer, Bin, R, ?WARMUP + 1),
                     T1 = erlang:monotonic_time(),
                     {Timed, bench_common:seconds(T0, T1)};
                 Failed ->
                     {Failed, 1.0e-9}
             end,
    {Check, Seconds} = Result,
    #{seconds => Seconds,
      ops => R,
      check => Check,
      extra => [{ns_per_op, bench_common:round_to(Seconds * 1.0e9 / R, 2)},
                {peer, PeerBin},
                {node, node()},
                {warmup, ?WARMUP}]}.

%% N round trips, the first of them the I-th of the run: ok, or why not.
trips(_Peer, _Bin, 0, _I) ->
    ok;
trips(Peer, Bin, N, I) ->
    {echo, Peer} ! {self(), Bin},
    receive
        {echo, Got} when Got =:= Bin ->
            trips(Peer, Bin, N - 1, I + 1);
        {echo, Got} when is_binary(Got) ->
            lists:flatten(io_lib:format("round trip ~w: the reply's binary (~w bytes) differs "
                                        "from the ~w sent", [I, byte_size(Got), byte_size(Bin)]));
        Other ->
            lists:flatten(io_lib:format("round trip ~w: not {echo, Bin}: ~0P", [I, Other, 8]))
    after ?REPLY_WAIT_MS ->
            lists:flatten(io_lib:format("round trip ~w: no reply within ~w s",
                                        [I, ?REPLY_WAIT_MS div 1000]))
    end.
