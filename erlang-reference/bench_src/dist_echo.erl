%%% dist_echo: the Erlang twin of otter's `dist-echo` (WORKLOADS.md "dist").
%%%
%%%     bench dist-echo name=NAME [cookie=C]
%%%
%%% The escript becomes the hidden distributed node NAME (shortnames: NAME@<short host>, or
%%% NAME as given if it has an @; bench_common:start_distribution/2) and registers as echo a
%%% process that answers every {From, Msg} with From ! {echo, Msg}; anything else is said on
%%% stderr and dropped.
%%%
%%% Not a measurement: bench_common prints the line
%%%   {"bench":"dist-echo","impl":"erlang","node":"NAME@host","ready":true,"threads":N,...}
%%% once echo is registered, then reads stdin until it closes and exits 0. The client is
%%% dist-pingpong (either implementation).
-module(dist_echo).

-export([params/0, validate/1, serve/1]).

params() ->
    [{name, name, <<>>},
     {cookie, name, <<"otterbench">>}].

validate(#{name := <<>>}) ->
    {error, "name= is required: the node's name, alive or alive@host"};
validate(_) ->
    ok.

serve(#{name := Name, cookie := Cookie}) ->
    bench_common:start_distribution(binary_to_atom(Name), Cookie),
    true = register(echo, spawn(fun loop/0)),
    {ok, [{node, node()}, {ready, true},
          {params, {obj, [{name, node()}, {cookie, Cookie}]}}]}.

loop() ->
    receive
        {From, Msg} when is_pid(From) ->
            From ! {echo, Msg};
        Other ->
            io:format(standard_error, "dist-echo: dropped (not {Pid, Msg}): ~0P~n", [Other, 8])
    end,
    loop().
