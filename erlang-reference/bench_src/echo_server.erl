%%% echo_server: the Erlang twin of otter's `echo-server` (WORKLOADS.md "echo", issue 25).
%%%
%%%     bench echo-server port=P mode=passive|active threads=N
%%%
%%% A TCP echo server on 127.0.0.1:P (port=0: any free port): a listen socket with
%%% {reuseaddr,true}, {nodelay,true}, binary mode and a backlog of 1024 (otter's), and one
%%% acceptor process that accepts in a loop and hands each connection to a process of its
%%% own (gen_tcp:controlling_process/2, so the socket closes with that process, as otter's
%%% closes with its owner). The connection's process echoes what arrives until the peer
%%% closes:
%%%   - mode=passive: {active,false} and gen_tcp:recv(S, 0), then gen_tcp:send/2;
%%%   - mode=active: {active,once}: a {tcp,S,Data} message, sent back, then asked again.
%%%
%%% Not a measurement: bench_common prints the line
%%%   {"bench":"echo-server","impl":"erlang","port":P,"mode":M,"threads":N,...}
%%% once the socket listens, then reads stdin until it closes (io:get_line/2 returning eof)
%%% and exits 0. The load is otter-bench's echo-load, the same for every server.
%%% threads=N sets schedulers_online as for every workload (the suite also pins the whole
%%% emulator to one core with taskset).
-module(echo_server).

-export([params/0, serve/1]).

params() ->
    [{port, {range, 0, 65535}, 0},
     {mode, {enum, [passive, active]}, passive}].

%% Listens and starts the acceptor; returns the fields of the line, or why it cannot listen.
serve(#{port := Port, mode := Mode}) ->
    Opts = [binary, {packet, raw}, {active, false}, {reuseaddr, true}, {nodelay, true},
            {backlog, 1024}, {ip, {127, 0, 0, 1}}],
    case gen_tcp:listen(Port, Opts) of
        {ok, Listen} ->
            {ok, Bound} = inet:port(Listen),
            _ = spawn(fun() -> accept_loop(Listen, Mode) end),
            {ok, [{port, Bound}, {mode, Mode},
                  {params, {obj, [{port, Bound}, {mode, Mode}]}}]};
        {error, Why} ->
            {error, io_lib:format("cannot listen on 127.0.0.1:~w: ~w", [Port, Why])}
    end.

accept_loop(Listen, Mode) ->
    case gen_tcp:accept(Listen) of
        {ok, S} ->
            Pid = spawn(fun() -> receive go -> conn(S, Mode) end end),
            case gen_tcp:controlling_process(S, Pid) of
                ok -> Pid ! go;
                {error, _} -> exit(Pid, kill), gen_tcp:close(S)
            end,
            accept_loop(Listen, Mode);
        {error, closed} ->
            ok;
        {error, Why} ->
            %% Out of descriptors, say: said on stderr, retried after a pause.
            io:format(standard_error, "echo-server: accept: ~w~n", [Why]),
            timer:sleep(10),
            accept_loop(Listen, Mode)
    end.

conn(S, passive) ->
    case gen_tcp:recv(S, 0) of
        {ok, Data} ->
            case gen_tcp:send(S, Data) of
                ok -> conn(S, passive);
                {error, _} -> gen_tcp:close(S)
            end;
        {error, _} ->
            gen_tcp:close(S)
    end;
conn(S, active) ->
    ok = inet:setopts(S, [{active, once}]),
    active_loop(S).

active_loop(S) ->
    receive
        {tcp, S, Data} ->
            case gen_tcp:send(S, Data) of
                ok ->
                    ok = inet:setopts(S, [{active, once}]),
                    active_loop(S);
                {error, _} ->
                    gen_tcp:close(S)
            end;
        {tcp_closed, S} ->
            ok;
        {tcp_error, S, _} ->
            gen_tcp:close(S)
    end.
