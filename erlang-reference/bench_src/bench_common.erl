%%% bench_common: the command line and output contract shared by every workload.
%%%
%%% Implements the contract of WORKLOADS.md ("Seed workloads: one definition, one command-line
%%% and output contract"):
%%%
%%%     bench BENCH key=value ...
%%%
%%% prints exactly one JSON object on one line on stdout and exits 0 (check ok) or 1 (check
%%% failed). Unknown workload, unknown key, malformed `key=value` or a bad value: one line on
%%% stderr, nothing on stdout, exit 2. Diagnostics go to stderr only.
%%%
%%% A workload module exports
%%%   params()   -> [{Key :: atom(), Type, Default}]
%%%                 Type = pos_int | {range, Lo, Hi} | {enum, [atom()]} | name
%%%                 (name: 1 to 255 of A-Z a-z 0-9 _ - . @, as a binary: a node or a cookie)
%%%   validate(Params :: map()) -> ok | {error, Msg}   (optional, cross-parameter checks)
%%%   run(Params :: map()) -> #{seconds := float(), ops := pos_integer(),
%%%                             check := ok | string(),
%%%                             extra => [{atom(), json()}], note => string()}
%%% `threads=N` is accepted for every workload and handled here.
%%%
%%% A service instead of a measurement (echo-server) exports serve(Params) ->
%%% {ok, [{Key, json()}]} | {error, Msg} in place of run/1: once it is serving, the line
%%% {"bench":..,"impl":"erlang",Fields..,"threads":N,..} is printed, stdin is read until it
%%% closes, and the exit code is 0 (3 if it cannot serve).
-module(bench_common).

-export([main/1]).
%% Helpers for the workload modules.
-export([seconds/2, expect/3, vm_rss/0, process_room/2, round_to/2,
         start_distribution/2, fail/2]).

-define(EXIT_CHECK_FAILED, 1).
-define(EXIT_USAGE, 2).

%% BENCH name -> module. `spawn` lives in serial_spawn.erl (the seed's function name), so the
%% module cannot be confused with the spawn/1 BIF.
workloads() ->
    [{"ring", ring},
     {"spawn", serial_spawn},
     {"counting", counting},
     {"mailbox", mailbox},
     {"closure", closure},
     {"memory", memory},
     {"pingpong", pingpong},
     {"forkjoin", forkjoin},
     {"latency", latency},
     {"echo-server", echo_server},
     {"dist-pingpong", dist_pingpong},
     {"dist-echo", dist_echo},
     {"overload", overload}].

%%%=====================================================================
%%% Entry point
%%%=====================================================================

main(Args) ->
    try run_main(Args) of
        Code -> halt(Code)
    catch
        throw:{usage, Msg} ->
            io:format(standard_error, "bench: ~ts~n", [Msg]),
            halt(?EXIT_USAGE)
    end.

run_main([Help]) when Help =:= "-h"; Help =:= "--help"; Help =:= "help" ->
    io:format(standard_error, "~ts~n", [usage()]),
    0;
run_main([]) ->
    usage_error("missing workload; " ++ usage());
run_main([Bench | KVs]) ->
    Mod = case lists:keyfind(Bench, 1, workloads()) of
              {_, M} -> M;
              false -> usage_error(io_lib:format("unknown workload '~ts'; ~ts", [Bench, usage()]))
          end,
    Spec = Mod:params(),
    MaxThreads = erlang:system_info(schedulers),
    {Params, Threads} = parse_args(Bench, Spec, MaxThreads, KVs),
    case erlang:function_exported(Mod, validate, 1) andalso Mod:validate(Params) of
        {error, Why} -> usage_error(io_lib:format("~ts: ~ts", [Bench, Why]));
        _ -> ok
    end,
    _ = erlang:system_flag(schedulers_online, Threads),
    case erlang:function_exported(Mod, serve, 1) of
        true -> serve(Bench, Mod, Params, Threads);
        false -> measure(Bench, Mod, Spec, Params, Threads)
    end.

measure(Bench, Mod, Spec, Params, Threads) ->
    Result = run_isolated(Mod, Params),
    #{seconds := Seconds, ops := Ops, check := Check} = Result,
    Line = report(Bench, Spec, Params, Threads, Seconds, Ops, Check, Result),
    io:put_chars(standard_io, [Line, $\n]),
    case Check of
        ok -> 0;
        _ -> ?EXIT_CHECK_FAILED
    end.

%% A service: serve, print its line, then wait for stdin to close.
serve(Bench, Mod, Params, Threads) ->
    case Mod:serve(Params) of
        {ok, Fields} ->
            Line = json({obj, [{bench, list_to_binary(Bench)}, {impl, <<"erlang">>}]
                         ++ Fields
                         ++ [{threads, Threads},
                             {otp, list_to_binary(erlang:system_info(otp_release))}]
                         ++ versions()}),
            io:put_chars(standard_io, [Line, $\n]),
            wait_for_eof(),
            0;
        {error, Why} ->
            io:format(standard_error, "bench: ~ts: ~ts~n", [Bench, Why]),
            3
    end.

wait_for_eof() ->
    case io:get_line(standard_io, "") of
        eof -> ok;
        {error, _} -> ok;
        _ -> wait_for_eof()
    end.

usage() ->
    Names = [N || {N, _} <- workloads()],
    "usage: bench BENCH [key=value ...] [threads=N]; BENCH is one of "
        ++ lists:join(", ", Names).

-spec usage_error(iodata()) -> no_return().
usage_error(Msg) ->
    throw({usage, lists:flatten(io_lib:format("~ts", [Msg]))}).

%% Run the workload in a fresh process: an empty mailbox and a small heap, whatever the
%% escript's own process has been doing. A crash is reported on stderr and exits 3.
run_isolated(Mod, Params) ->
    {Pid, Ref} = spawn_monitor(fun() -> exit({result, Mod:run(Params)}) end),
    receive
        {'DOWN', Ref, process, Pid, {result, Result}} ->
            Result;
        {'DOWN', Ref, process, Pid, Reason} ->
            io:format(standard_error, "bench: ~w crashed: ~W~n", [Mod, Reason, 40]),
            halt(3)
    end.

%%%=====================================================================
%%% Arguments
%%%=====================================================================

parse_args(Bench, Spec, MaxThreads, KVs) ->
    Keys = [atom_to_list(K) || {K, _, _} <- Spec] ++ ["threads"],
    Given = lists:foldl(fun(KV, Acc) -> parse_kv(Bench, Keys, KV, Acc) end, #{}, KVs),
    Params = maps:from_list(
               [{K, case maps:find(atom_to_list(K), Given) of
                        {ok, Raw} -> parse_value(Bench, K, Type, Raw);
                        error -> Default
                    end} || {K, Type, Default} <- Spec]),
    Threads = case maps:find("threads", Given) of
                  {ok, Raw} -> parse_value(Bench, threads, {range, 1, MaxThreads}, Raw);
                  error -> MaxThreads
              end,
    {Params, Threads}.

parse_kv(Bench, Keys, KV, Acc) ->
    case string:split(KV, "=") of
        [Key, Value] when Key =/= "" ->
            case lists:member(Key, Keys) of
                false ->
                    usage_error(io_lib:format("~ts: unknown key '~ts' (known: ~ts)",
                                              [Bench, Key, lists:join(", ", Keys)]));
                true when is_map_key(Key, Acc) ->
                    usage_error(io_lib:format("~ts: key '~ts' given twice", [Bench, Key]));
                true ->
                    Acc#{Key => Value}
            end;
        _ ->
            usage_error(io_lib:format("~ts: malformed argument '~ts' (expected key=value)",
                                      [Bench, KV]))
    end.

parse_value(Bench, Key, pos_int, Raw) ->
    case to_int(Raw) of
        {ok, I} when I >= 1 -> I;
        _ -> bad_value(Bench, Key, Raw, "a positive integer")
    end;
parse_value(Bench, Key, {range, Lo, Hi}, Raw) ->
    case to_int(Raw) of
        {ok, I} when I >= Lo, I =< Hi -> I;
        _ -> bad_value(Bench, Key, Raw, io_lib:format("an integer in ~w..~w", [Lo, Hi]))
    end;
parse_value(Bench, Key, name, Raw) ->
    Ok = fun(C) -> (C >= $a andalso C =< $z) orelse (C >= $A andalso C =< $Z)
                       orelse (C >= $0 andalso C =< $9) orelse lists:member(C, "_-.@") end,
    case Raw =/= "" andalso length(Raw) =< 255 andalso lists:all(Ok, Raw) of
        true -> list_to_binary(Raw);
        false -> bad_value(Bench, Key, Raw, "1 to 255 of the characters A-Z a-z 0-9 _ - . @")
    end;
parse_value(Bench, Key, {enum, Choices}, Raw) ->
    case [C || C <- Choices, atom_to_list(C) =:= Raw] of
        [C] -> C;
        [] -> bad_value(Bench, Key, Raw,
                        ["one of " | lists:join(", ", [atom_to_list(C) || C <- Choices])])
    end.

bad_value(Bench, Key, Raw, Expected) ->
    usage_error(io_lib:format("~ts: bad value for ~w: '~ts' (expected ~ts)",
                              [Bench, Key, Raw, Expected])).

%% Plain decimal digits only: no sign, no exponent, no separators.
to_int(Raw) when Raw =/= "" ->
    case lists:all(fun(C) -> C >= $0 andalso C =< $9 end, Raw) of
        true -> {ok, list_to_integer(Raw)};
        false -> error
    end;
to_int(_) ->
    error.

%%%=====================================================================
%%% Report: one JSON line
%%%=====================================================================

report(Bench, Spec, Params, Threads, Seconds0, Ops, Check, Result) ->
    %% Guard against a zero interval on absurdly small runs (monotonic time is in ns).
    Seconds = max(Seconds0, 1.0e-9),
    Extra = maps:get(extra, Result, []),
    Note = case maps:find(note, Result) of
               {ok, N} -> [{note, unicode:characters_to_binary(N)}];
               error -> []
           end,
    Fields =
        [{bench, list_to_binary(Bench)},
         {impl, <<"erlang">>},
         {params, {obj, [{K, maps:get(K, Params)} || {K, _, _} <- Spec]}},
         {seconds, round_to(Seconds, 9)},
         {ops, Ops},
         {ops_per_s, round_to(Ops / Seconds, 1)}]
        ++ Extra
        ++ [{check, check_text(Check)},
            {threads, Threads},
            {otp, list_to_binary(erlang:system_info(otp_release))}]
        ++ versions()
        ++ Note,
    json({obj, Fields}).

check_text(ok) -> <<"ok">>;
check_text(Why) -> unicode:characters_to_binary(Why).

versions() ->
    Rel = erlang:system_info(otp_release),
    File = filename:join([code:root_dir(), "releases", Rel, "OTP_VERSION"]),
    Otp = case file:read_file(File) of
              {ok, Bin} -> [{otp_version, string:trim(Bin)}];
              {error, _} -> []
          end,
    Otp ++ [{erts, list_to_binary(erlang:system_info(version))},
            {emu_flavor, atom_to_binary(erlang:system_info(emu_flavor))}].

%% A minimal JSON encoder for what we print: objects are {obj, [{Key, Value}]}, strings are
%% binaries, atoms become strings (except true/false/null), numbers are numbers.
json({obj, KVs}) ->
    ["{", lists:join(",", [[json_string(atom_to_binary(K)), ":", json(V)] || {K, V} <- KVs]), "}"];
json(I) when is_integer(I) -> integer_to_list(I);
json(F) when is_float(F) -> json_float(F);
json(true) -> "true";
json(false) -> "false";
json(null) -> "null";
json(A) when is_atom(A) -> json_string(atom_to_binary(A));
json(B) when is_binary(B) -> json_string(B).

%% The shortest text that reads back as F, but never in exponent form (0.000107 rather than
%% 1.07e-4): callers round to at most 9 decimals first.
json_float(F) ->
    Short = float_to_list(F, [short]),
    case lists:member($e, Short) of
        false -> Short;
        true -> float_to_list(F, [{decimals, 9}, compact])
    end.

json_string(Bin) ->
    [$", [escape(C) || C <- unicode:characters_to_list(Bin)], $"].

escape($") -> "\\\"";
escape($\\) -> "\\\\";
escape($\n) -> "\\n";
escape($\r) -> "\\r";
escape($\t) -> "\\t";
escape(C) when C < 16#20 -> io_lib:format("\\u~4.16.0b", [C]);
escape(C) -> unicode:characters_to_binary([C]).

%%%=====================================================================
%%% Helpers for workloads
%%%=====================================================================

%% Seconds between two erlang:monotonic_time() readings (native unit, ns resolution here).
seconds(T0, T1) ->
    erlang:convert_time_unit(T1 - T0, native, nanosecond) / 1.0e9.

%% ok if Got =:= Want, otherwise a short reason for the `check` field.
expect(_What, Want, Want) -> ok;
expect(What, Got, Want) ->
    lists:flatten(io_lib:format("~s: got ~p, want ~p", [What, Got, Want])).

round_to(F, Decimals) ->
    Scale = math:pow(10, Decimals),
    round(F * Scale) / Scale.

%% VmRSS of this OS process in bytes, from /proc/self/status (Linux).
vm_rss() ->
    case file:read_file("/proc/self/status") of
        {ok, Status} ->
            case re:run(Status, "^VmRSS:\\s*(\\d+)\\s*kB", [multiline, {capture, [1], list}]) of
                {match, [Kb]} -> {ok, list_to_integer(Kb) * 1024};
                nomatch -> {error, "no VmRSS in /proc/self/status"}
            end;
        {error, Why} ->
            {error, lists:flatten(io_lib:format("cannot read /proc/self/status: ~p", [Why]))}
    end.

%% Makes this emulator the hidden distributed node Name (shortnames) with cookie Cookie (a
%% binary); starts `epmd -daemon` first if no epmd answers, and waits (5 s at most) until one
%% does. A node that cannot start is exit 3, one line on stderr.
start_distribution(Name, Cookie) ->
    case net_adm:names() of
        {ok, _} -> ok;
        {error, _} -> _ = os:cmd("epmd -daemon"), wait_for_epmd(50)
    end,
    case net_kernel:start(Name, #{name_domain => shortnames, hidden => true}) of
        {ok, _} -> ok;
        {error, Why} -> fail("cannot start the node ~w: ~0P", [Name, Why, 12])
    end,
    true = erlang:set_cookie(binary_to_atom(Cookie)),
    ok.

wait_for_epmd(0) ->
    fail("epmd does not answer (started with epmd -daemon)", []);
wait_for_epmd(N) ->
    case net_adm:names() of
        {ok, _} -> ok;
        {error, _} -> timer:sleep(100), wait_for_epmd(N - 1)
    end.

%% One line on stderr, exit 3.
-spec fail(string(), list()) -> no_return().
fail(Format, Args) ->
    io:format(standard_error, "bench: " ++ Format ++ "~n", Args),
    halt(3).

%% ok if Needed more processes fit under the emulator's process limit (with a little room for
%% the runtime's own), otherwise {error, Msg} naming the parameter.
process_room(Key, Needed) ->
    Limit = erlang:system_info(process_limit),
    Free = Limit - erlang:system_info(process_count) - 16,
    case Needed =< Free of
        true -> ok;
        false -> {error, io_lib:format("~w=~w needs more processes than the limit "
                                       "(~w, set by +P in the escript)", [Key, Needed, Limit])}
    end.
