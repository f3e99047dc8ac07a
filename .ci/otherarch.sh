#!/usr/bin/env bash
# Runs the tests of the packages that walk the stack by frame pointers
# (internal/callsite's assembly, and state, prompt and effects above it) on
# arm64 under qemu user emulation, and with -tags purego, where
# runtime.Callers does the walk's work. Debian's qemu-user-static is
# installed with apt-get when qemu-aarch64-static is missing.
set -euo pipefail

log() { echo "otherarch.sh: $*" >&2; }

pkgs=(internal/callsite state prompt effects)

qemu="$(command -v qemu-aarch64-static || true)"
if [ -z "$qemu" ]; then
	if [ "$(id -u)" != 0 ]; then
		log "qemu-aarch64-static is not installed and installing it needs root"
		exit 1
	fi
	log "installing qemu-user-static with apt-get"
	export DEBIAN_FRONTEND=noninteractive
	if ! apt-get install -y -q --no-install-recommends qemu-user-static >&2 </dev/null; then
		apt-get update -q >&2 </dev/null
		apt-get install -y -q --no-install-recommends qemu-user-static >&2 </dev/null
	fi
	qemu="$(command -v qemu-aarch64-static)"
fi

bin="$(mktemp -d)"
trap 'rm -rf "$bin"' EXIT
for p in "${pkgs[@]}"; do
	GOARCH=arm64 go vet "./$p"
	GOARCH=arm64 go test -c -o "$bin/${p//\//_}.test" "./$p"
	# A test binary runs in its package's directory, as go test runs it.
	(cd "$p" && "$qemu" "$bin/${p//\//_}.test" -test.count=1 >"$bin/out" 2>&1) || { cat "$bin/out"; exit 1; }
	if grep -q -- '--- SKIP' "$bin/out"; then cat "$bin/out"; log "$p skipped tests on arm64"; exit 1; fi
	echo "ok   arm64 $p"
done
go vet -tags purego "${pkgs[@]/#/./}"
go test -count=1 -tags purego "${pkgs[@]/#/./}"
