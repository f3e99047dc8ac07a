#!/usr/bin/env bash
# Makes @dwmkerr/mock-llm, an OpenAI-compatible mock server nobody here
# wrote, available to the tests of providers/openai, and hands out the
# path of its executable.
#
#   source .ci/mockllm.sh          # exports REPROMPT_MOCKLLM
#   eval "$(bash .ci/mockllm.sh)"  # the same from a script that runs it
#
# The package is installed with npm into a cache outside the clone,
# ${REPROMPT_CACHE:-$HOME/.cache/reprompt}/npm, and only when it is not
# there yet, so a second run does no network access. The version is pinned
# by MOCKLLM_VERSION below. The tests start the server themselves, on a free
# loopback port, with their own rules: this script starts nothing.
#
# Diagnostics go to stderr; stdout carries only the export line.

MOCKLLM_VERSION="${MOCKLLM_VERSION:-0.1.29}"

_reprompt_mockllm() {
	local cache="${REPROMPT_CACHE:-$HOME/.cache/reprompt}/npm"
	local prefix="$cache/mock-llm-$MOCKLLM_VERSION"
	local bin="$prefix/node_modules/.bin/mock-llm"

	_rml_log() { echo "mockllm.sh: $*" >&2; }

	if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
		_rml_log "node and npm are needed to install @dwmkerr/mock-llm"
		return 1
	fi
	if [ ! -x "$bin" ]; then
		_rml_log "installing @dwmkerr/mock-llm@$MOCKLLM_VERSION into $prefix"
		mkdir -p "$prefix" || return 1
		# A package.json of our own keeps npm from walking up into a
		# project it might find above the cache directory.
		[ -f "$prefix/package.json" ] || echo '{"private":true}' >"$prefix/package.json"
		if ! npm install --prefix "$prefix" --no-audit --no-fund --loglevel=error \
			"@dwmkerr/mock-llm@$MOCKLLM_VERSION" >&2 </dev/null; then
			_rml_log "npm install failed"
			return 1
		fi
		if [ ! -x "$bin" ]; then
			_rml_log "the package installed no mock-llm executable at $bin"
			return 1
		fi
	fi
	REPROMPT_MOCKLLM="$bin"
}

if [ "${BASH_SOURCE[0]}" != "$0" ]; then
	# Sourced: export into the caller's shell; never exit it.
	if _reprompt_mockllm "$@"; then
		export REPROMPT_MOCKLLM
		echo "mockllm.sh: REPROMPT_MOCKLLM=$REPROMPT_MOCKLLM" >&2
	else
		echo "mockllm.sh: no mock-llm available; the mock-llm tests will skip" >&2
	fi
	unset -f _reprompt_mockllm _rml_log
else
	set -uo pipefail
	_reprompt_mockllm "$@" || exit 1
	echo "export REPROMPT_MOCKLLM='$REPROMPT_MOCKLLM'"
fi
