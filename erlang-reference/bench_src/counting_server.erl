%%% counting_server: the CountingActor as a gen_server (the `style=server` side of counting.erl).
%%%
%%% Seed: "Scala Actor v Erlang gen_server Performance" (2011; SEEDS.md #5): Count(K) is a
%%% cast that adds K, GetAndReset a call that replies with the count and sets it to 0.
-module(counting_server).
-behaviour(gen_server).

%% API
-export([start_link/0, count/2, get_and_reset/1, stop/1]).
%% gen_server callbacks
-export([init/1, handle_call/3, handle_cast/2, handle_info/2]).

%%%=====================================================================
%%% API
%%%=====================================================================

start_link() ->
    gen_server:start_link(?MODULE, [], []).

count(Server, K) ->
    gen_server:cast(Server, {count, K}).

get_and_reset(Server) ->
    gen_server:call(Server, get_and_reset, infinity).

stop(Server) ->
    gen_server:stop(Server).

%%%=====================================================================
%%% gen_server callbacks
%%%=====================================================================

init([]) ->
    {ok, 0}.

handle_call(get_and_reset, _From, Count) ->
    {reply, Count, 0}.

handle_cast({count, K}, Count) ->
    {noreply, Count + K}.

handle_info(_Unexpected, Count) ->
    {noreply, Count}.
