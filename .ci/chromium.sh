#!/usr/bin/env bash
# Makes a headless Chromium available for the browser tests of the step
# viewer (internal/browsertest), and hands out its path.
#
#   eval "$(bash .ci/chromium.sh)"  # exports REPROMPT_CHROMIUM
#
# Debian's chromium package is installed with apt-get when /usr/bin/chromium
# is missing (REPROMPT_CHROMIUM, when set to an executable, is used as is).
# The browser is a system package, not a file of the clone.
#
# Diagnostics go to stderr; stdout carries only the export line.
set -euo pipefail

log() { echo "chromium.sh: $*" >&2; }

bin="${REPROMPT_CHROMIUM:-/usr/bin/chromium}"
if [ ! -x "$bin" ]; then
	if [ "$(id -u)" != 0 ]; then
		log "Chromium is not installed at $bin and installing it needs root"
		exit 1
	fi
	log "installing chromium with apt-get"
	export DEBIAN_FRONTEND=noninteractive
	if ! apt-get install -y -q --no-install-recommends chromium >&2 </dev/null; then
		apt-get update -q >&2 </dev/null
		apt-get install -y -q --no-install-recommends chromium >&2 </dev/null
	fi
	bin=/usr/bin/chromium
fi
log "$("$bin" --version 2>/dev/null | head -1)"
printf 'export REPROMPT_CHROMIUM=%q\n' "$bin"
