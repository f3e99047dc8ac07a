#!/usr/bin/env bash
# Makes a local Temporal development server available on loopback for the
# end-to-end tests of the temporal module, and hands out its address.
#
#   eval "$(bash .ci/temporal.sh)"   # exports REPROMPT_TEMPORAL_ADDR
#   bash .ci/temporal.sh --stop      # stops the server this script started
#
# The Temporal CLI is built once with `go install` through the module proxy
# into $REPROMPT_CI_CACHE/temporal-cli-$version (default cache
# ~/.cache/reprompt-ci); the proxy serves the CLI's v1.1.1, v1.5.1 and
# v1.9.1, and v1.9.1's go.mod has a replace directive that `go install`
# refuses, so the version is v1.5.1 (Temporal server 1.29.1). The first build
# takes several minutes on 2 cores; later runs reuse the binary.
#
# The server (`temporal server start-dev --headless`, in memory) listens on
# 127.0.0.1:$REPROMPT_TEMPORAL_PORT (default 7233, or the next free port), with
# its HTTP API and metrics on free ports too. It lives in $REPROMPT_TEMPORAL_DIR
# (default /tmp/reprompt-temporal): pid, port and log. Running the script
# again reuses a server that is already up. It stops nothing but its own
# server, and only with --stop.
#
# Diagnostics go to stderr; stdout carries only the export line.
set -uo pipefail

version=v1.5.1
cache="${REPROMPT_CI_CACHE:-$HOME/.cache/reprompt-ci}"
bindir="$cache/temporal-cli-$version"
cli="$bindir/temporal"
base="${REPROMPT_TEMPORAL_DIR:-/tmp/reprompt-temporal}"
port="${REPROMPT_TEMPORAL_PORT:-7233}"

log() { echo "temporal.sh: $*" >&2; }

# answers PORT: the frontend accepts TCP connections and the CLI can reach
# the default namespace.
answers() {
	(exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null &&
		"$cli" operator namespace describe --address "127.0.0.1:$1" --namespace default >/dev/null 2>&1
}

running() { [ -f "$base/pid" ] && kill -0 "$(cat "$base/pid")" 2>/dev/null; }

if [ "${1:-}" = --stop ]; then
	if running; then
		pid="$(cat "$base/pid")"
		kill "$pid" 2>/dev/null
		for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
		kill -9 "$pid" 2>/dev/null || true
		log "stopped the server (pid $pid)"
	else
		log "no server of ours is running"
	fi
	rm -f "$base/pid"
	exit 0
fi

# 1. The CLI.
if [ ! -x "$cli" ]; then
	log "building the Temporal CLI $version into $bindir (several minutes the first time)"
	mkdir -p "$bindir"
	if ! GOBIN="$bindir" GOFLAGS=-mod=mod go install "github.com/temporalio/cli/cmd/temporal@$version" >&2; then
		log "building the Temporal CLI failed"
		exit 1
	fi
fi

# 2. Reuse a server this script already started.
if running && [ -f "$base/port" ] && answers "$(cat "$base/port")"; then
	log "reusing the server on port $(cat "$base/port")"
	echo "export REPROMPT_TEMPORAL_ADDR=127.0.0.1:$(cat "$base/port")"
	exit 0
fi
if running; then
	kill -9 "$(cat "$base/pid")" 2>/dev/null || true
fi

# 3. Free ports on loopback: the frontend, the HTTP API, metrics.
free() {
	local p=$1 tries=0
	while (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; do
		p=$((p + 1)); tries=$((tries + 1))
		[ "$tries" -gt 100 ] && return 1
	done
	echo "$p"
}
port="$(free "$port")" || { log "no free port found"; exit 1; }
http="$(free $((port + 1000)))" || { log "no free port found"; exit 1; }
metrics="$(free $((port + 2000)))" || { log "no free port found"; exit 1; }
[ "$http" = "$port" ] && http="$(free $((http + 1)))"

rm -rf "$base"
mkdir -p "$base"
echo "$port" >"$base/port"
log "starting the Temporal dev server on 127.0.0.1:$port"
nohup "$cli" server start-dev --headless --ip 127.0.0.1 --port "$port" --http-port "$http" \
	--metrics-port "$metrics" --log-level warn \
	--dynamic-config-value frontend.enableUpdateWorkflowExecution=true \
	--dynamic-config-value system.enableActivityEagerExecution=true \
	>"$base/server.log" 2>&1 </dev/null &
echo $! >"$base/pid"

for _ in $(seq 1 120); do
	if answers "$port"; then
		echo "export REPROMPT_TEMPORAL_ADDR=127.0.0.1:$port"
		exit 0
	fi
	running || break
	sleep 0.5
done
log "the server does not answer; its log:"
tail -n 40 "$base/server.log" >&2
exit 1
