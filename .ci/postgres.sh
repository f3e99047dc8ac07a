#!/usr/bin/env bash
# Makes a local PostgreSQL 15 server available on loopback for the tests of
# session/postgres, and hands out its URL.
#
#   source .ci/postgres.sh          # exports REPROMPT_PG_URL
#   eval "$(bash .ci/postgres.sh)"  # the same from a script that runs it
#   bash .ci/postgres.sh --stop     # stops the server this script started
#
# The server lives in $REPROMPT_PG_DIR (default /tmp/reprompt-pg), listens on
# 127.0.0.1:$REPROMPT_PG_PORT (default 54329, or the next free port) and on a
# Unix socket in that directory, trusts local connections, and runs with
# fsync off: it is for tests only. Debian's postgresql-15 is installed with
# apt-get when its binaries are missing (without creating or starting the
# distribution's own cluster). Running the script again reuses a server
# that is already up, so it is idempotent and fast. It stops nothing but
# its own server, and only with --stop.
#
# Diagnostics go to stderr; stdout carries only the export line.

_reprompt_pg() {
	local base="${REPROMPT_PG_DIR:-/tmp/reprompt-pg}"
	local port="${REPROMPT_PG_PORT:-54329}"
	local bindir="" user="" data="$base/data"

	_rpg_log() { echo "postgres.sh: $*" >&2; }

	# 1. Binaries.
	for d in /usr/lib/postgresql/15/bin "$(pg_config --bindir 2>/dev/null)"; do
		if [ -n "$d" ] && [ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ]; then
			bindir="$d"
			break
		fi
	done
	if [ -z "$bindir" ]; then
		if [ "$(id -u)" != 0 ]; then
			_rpg_log "PostgreSQL 15 is not installed and installing it needs root"
			return 1
		fi
		_rpg_log "installing postgresql-15 with apt-get"
		# Keep the package from creating and starting its own cluster.
		mkdir -p /etc/postgresql-common/createcluster.d
		echo "create_main_cluster = false" >/etc/postgresql-common/createcluster.d/reprompt-ci.conf
		export DEBIAN_FRONTEND=noninteractive
		if ! apt-get install -y -q --no-install-recommends postgresql-15 >&2 </dev/null; then
			apt-get update -q >&2 </dev/null || return 1
			apt-get install -y -q --no-install-recommends postgresql-15 >&2 </dev/null || return 1
		fi
		bindir=/usr/lib/postgresql/15/bin
	fi

	# 2. Who runs the server: initdb and postgres refuse root.
	local -a as=()
	if [ "$(id -u)" = 0 ]; then
		if id postgres >/dev/null 2>&1; then
			user=postgres
		else
			user=reprompt-pg
			id "$user" >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin "$user" || return 1
		fi
		if command -v runuser >/dev/null 2>&1; then
			as=(runuser -u "$user" --)
		else
			as=(su -s /bin/sh "$user" -c '"$0" "$@"')
		fi
	fi

	# 3. Reuse a server this script already started.
	if [ -f "$base/port" ] && [ -f "$data/postmaster.pid" ]; then
		local oldport
		oldport="$(cat "$base/port")"
		if "$bindir/pg_isready" -q -h 127.0.0.1 -p "$oldport" -t 2; then
			if [ "${1:-}" = --stop ]; then
				"${as[@]}" "$bindir/pg_ctl" -D "$data" -m fast -w stop >&2
				return $?
			fi
			_rpg_log "reusing the server on port $oldport"
			REPROMPT_PG_URL="postgres://postgres@127.0.0.1:$oldport/postgres?sslmode=disable"
			return 0
		fi
		# A stale directory: a server of ours that is no longer running.
		"${as[@]}" "$bindir/pg_ctl" -D "$data" -m immediate stop >/dev/null 2>&1 || true
	fi
	if [ "${1:-}" = --stop ]; then
		_rpg_log "no server of ours is running"
		return 0
	fi

	# 4. A fresh cluster.
	rm -rf "$base"
	mkdir -p "$base" || return 1
	chmod 700 "$base"
	[ -n "$user" ] && chown "$user" "$base"
	_rpg_log "initdb in $data"
	"${as[@]}" "$bindir/initdb" -D "$data" -U postgres -A trust -E UTF8 --locale=C.UTF-8 --no-sync >"$base/initdb.log" 2>&1 ||
		"${as[@]}" "$bindir/initdb" -D "$data" -U postgres -A trust -E UTF8 --locale=C --no-sync >"$base/initdb.log" 2>&1 || {
		_rpg_log "initdb failed:"
		cat "$base/initdb.log" >&2
		return 1
	}

	# 5. A free port on loopback, then start and wait until it accepts connections.
	local tries=0
	while (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do
		port=$((port + 1))
		tries=$((tries + 1))
		if [ "$tries" -gt 50 ]; then
			_rpg_log "no free port found"
			return 1
		fi
	done
	echo "$port" >"$base/port"
	_rpg_log "starting PostgreSQL on 127.0.0.1:$port"
	if ! "${as[@]}" "$bindir/pg_ctl" -D "$data" -l "$base/server.log" -w -t 60 \
		-o "-k $base -h 127.0.0.1 -p $port -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200" \
		start >&2; then
		_rpg_log "the server did not start:"
		cat "$base/server.log" >&2
		return 1
	fi
	local i
	for i in $(seq 1 60); do
		"$bindir/pg_isready" -q -h 127.0.0.1 -p "$port" -t 1 && break
		sleep 0.5
	done
	if ! "$bindir/pg_isready" -q -h 127.0.0.1 -p "$port"; then
		_rpg_log "the server does not accept connections"
		return 1
	fi
	REPROMPT_PG_URL="postgres://postgres@127.0.0.1:$port/postgres?sslmode=disable"
}

if [ "${BASH_SOURCE[0]}" != "$0" ]; then
	# Sourced: export into the caller's shell; never exit it.
	if _reprompt_pg "$@"; then
		export REPROMPT_PG_URL
		echo "postgres.sh: REPROMPT_PG_URL=$REPROMPT_PG_URL" >&2
	else
		echo "postgres.sh: no PostgreSQL available; the PostgreSQL tests will skip" >&2
	fi
	unset -f _reprompt_pg _rpg_log
else
	set -uo pipefail
	_reprompt_pg "$@" || exit 1
	if [ "${1:-}" != --stop ]; then
		echo "export REPROMPT_PG_URL='$REPROMPT_PG_URL'"
	fi
fi
