#!/usr/bin/env bash
# Makes @copilotkit/aimock, a mock server of LLM APIs nobody here wrote
# (it speaks Anthropic's Messages API, streamed or not), available to the
# tests of providers/anthropic, and hands out the path of its llmock
# executable (the server scripted with fixture files).
#
#   source .ci/aimock.sh          # exports REPROMPT_AIMOCK
#   eval "$(bash .ci/aimock.sh)"  # the same from a script that runs it
#
# The package is installed with npm into a cache outside the clone,
# ${REPROMPT_CACHE:-$HOME/.cache/reprompt}/npm, and only when it is not
# there yet, so a second run does no network access. The version is pinned
# by AIMOCK_VERSION below. The tests start the server themselves, on a free
# loopback port, with their own rules: this script starts nothing.
#
# Diagnostics go to stderr; stdout carries only the export line.

AIMOCK_VERSION="${AIMOCK_VERSION:-1.43.0}"

_reprompt_aimock() {
	local cache="${REPROMPT_CACHE:-$HOME/.cache/reprompt}/npm"
	local prefix="$cache/aimock-$AIMOCK_VERSION"
	local bin="$prefix/node_modules/.bin/llmock"

	_ram_log() { echo "aimock.sh: $*" >&2; }

	if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
		_ram_log "node and npm are needed to install @copilotkit/aimock"
		return 1
	fi
	if [ ! -x "$bin" ]; then
		_ram_log "installing @copilotkit/aimock@$AIMOCK_VERSION into $prefix"
		mkdir -p "$prefix" || return 1
		# A package.json of our own keeps npm from walking up into a
		# project it might find above the cache directory.
		[ -f "$prefix/package.json" ] || echo '{"private":true}' >"$prefix/package.json"
		if ! npm install --prefix "$prefix" --no-audit --no-fund --loglevel=error \
			"@copilotkit/aimock@$AIMOCK_VERSION" >&2 </dev/null; then
			_ram_log "npm install failed"
			return 1
		fi
		if [ ! -x "$bin" ]; then
			_ram_log "the package installed no llmock executable at $bin"
			return 1
		fi
	fi
	REPROMPT_AIMOCK="$bin"
}

if [ "${BASH_SOURCE[0]}" != "$0" ]; then
	# Sourced: export into the caller's shell; never exit it.
	if _reprompt_aimock "$@"; then
		export REPROMPT_AIMOCK
		echo "aimock.sh: REPROMPT_AIMOCK=$REPROMPT_AIMOCK" >&2
	else
		echo "aimock.sh: no aimock available; the aimock tests will skip" >&2
	fi
	unset -f _reprompt_aimock _ram_log
else
	set -uo pipefail
	_reprompt_aimock "$@" || exit 1
	echo "export REPROMPT_AIMOCK='$REPROMPT_AIMOCK'"
fi
