%%% pingpong_server: process B of pingpong.erl as a gen_server (`style=server`):
%%% a gen_server:call(B, ping) is answered with `pong`.
-module(pingpong_server).
-behaviour(gen_server).

%% API
-export([start_link/0, ping/1, stop/1]).
%% gen_server callbacks
-export([init/1, handle_call/3, handle_cast/2]).

start_link() ->
    gen_server:start_link(?MODULE, [], []).

ping(Server) ->
    gen_server:call(Server, ping, infinity).

stop(Server) ->
    gen_server:stop(Server).

init([]) ->
    {ok, no_state}.

handle_call(ping, _From, State) ->
    {reply, pong, State}.

handle_cast(_Ignored, State) ->
    {noreply, State}.
