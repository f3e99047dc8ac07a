#!/usr/bin/env bash
# Installs the MCP reference servers from npm that the tests of the mcp
# module run against (@modelcontextprotocol/server-everything and
# @modelcontextprotocol/server-filesystem, pinned), into a cache outside the
# clone, and hands out the directory of their executables.
#
#   eval "$(bash .ci/mcpservers.sh)"   # exports REPROMPT_MCP_SERVERS
#
# The cache is ${REPROMPT_CACHE:-$HOME/.cache/reprompt}/mcp-npm; a second
# run reuses it. Diagnostics go to stderr; stdout carries only the export.
set -euo pipefail
version=2026.8.31
dir="${REPROMPT_CACHE:-$HOME/.cache/reprompt}/mcp-npm"
bin="$dir/node_modules/.bin"
if [ ! -x "$bin/mcp-server-everything" ] || [ ! -x "$bin/mcp-server-filesystem" ] ||
	! grep -q "\"version\": \"$version\"" "$dir/node_modules/@modelcontextprotocol/server-everything/package.json" 2>/dev/null; then
	command -v npm >/dev/null || { echo "mcpservers.sh: npm is needed (apt-get install nodejs npm)" >&2; exit 1; }
	mkdir -p "$dir"
	[ -f "$dir/package.json" ] || echo '{"private":true}' >"$dir/package.json"
	echo "mcpservers.sh: installing the MCP reference servers $version into $dir" >&2
	(cd "$dir" && npm install --no-audit --no-fund --loglevel=error \
		"@modelcontextprotocol/server-everything@$version" \
		"@modelcontextprotocol/server-filesystem@$version" >&2)
fi
echo "export REPROMPT_MCP_SERVERS=$bin"
