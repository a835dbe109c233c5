#!/usr/bin/env bash
# Careful Resume with unmodified third-party QUIC clients (`make interop-clients`).
#
# Starts cr-server and cr-relay (20 Mbit/s, 300 ms RTT) on free loopback
# ports, then has each client download 2 MiB twice over HTTP/3, each time over
# a new connection, keeping only what the client library itself keeps between
# connections (NEW_TOKEN tokens, TLS session tickets):
#
#   quic-go  scripts/interop/quicgo/ (pinned in go.mod/go.sum, from the Go module proxy)
#   aioquic  scripts/interop/aioquic_client.py (pinned in requirements.txt, from PyPI,
#            into the venv target/interop-venv)
#
# Prints per client the two download times, the speed-up and the server's
# verdict on the second connection; fails unless, for every client, the
# first connection came without a token and the second presented one and
# Careful Resume engaged (cr-server's connection line says `cr=engaged` and
# its qlog has the jump into the Unvalidated phase).
#
# Usage: scripts/interop/run.sh [quicgo] [aioquic]     (default: both)
# Logs, qlogs and the Go binary go to target/interop-clients/.
# Needs the Go toolchain (PATH or /usr/local/go/bin), python3 with venv, and
# the first time the registries; it only ever ends the processes it started.
set -euo pipefail

cd "$(dirname "$0")/../.."
ROOT=$PWD
OUT=$ROOT/target/interop-clients
VENV=$ROOT/target/interop-venv
SIZE=2097152 # 2 MiB: long enough for slow start to matter at this path's BDP
RATE=20mbit
RTT=300ms
CLIENT_TIMEOUT=120 # seconds, for one client's two downloads
REPORT_TIMEOUT=30  # seconds, for the server to report a client's connections

CLIENTS=("$@")
[[ ${#CLIENTS[@]} -gt 0 ]] || CLIENTS=(quicgo aioquic)

PIDS=()
cleanup() {
	local pid
	for pid in "${PIDS[@]}"; do
		kill "$pid" 2>/dev/null || true
	done
	for pid in "${PIDS[@]}"; do
		wait "$pid" 2>/dev/null || true
	done
}
trap cleanup EXIT
trap 'exit 130' INT TERM

say() { printf 'interop-clients: %s\n' "$*" >&2; }
die() {
	say "$*"
	exit 1
}

rm -rf "$OUT"
mkdir -p "$OUT/qlog"

# --- build -------------------------------------------------------------------
say "building cr-server and cr-relay (release)"
timeout 3600 "${CARGO:-cargo}" build --release -p cr-apps

for client in "${CLIENTS[@]}"; do
	case $client in
	quicgo)
		GO=$(command -v go || echo /usr/local/go/bin/go)
		[[ -x $GO ]] || die "no Go toolchain (looked in PATH and /usr/local/go/bin)"
		say "building the quic-go client ($("$GO" version))"
		(cd scripts/interop/quicgo &&
			GOFLAGS=-mod=readonly GOTOOLCHAIN=local timeout 600 "$GO" build -o "$OUT/quicgo-client" .)
		;;
	aioquic)
		stamp=$VENV/.requirements
		if ! cmp -s scripts/interop/requirements.txt "$stamp" 2>/dev/null; then
			say "installing aioquic into $VENV"
			rm -rf "$VENV"
			timeout 300 python3 -m venv "$VENV"
			timeout 600 "$VENV/bin/pip" install --quiet --disable-pip-version-check \
				-r scripts/interop/requirements.txt
			cp scripts/interop/requirements.txt "$stamp"
		fi
		;;
	*) die "unknown client '$client' (quicgo, aioquic)" ;;
	esac
done

# --- server and relay ----------------------------------------------------------
# Two free UDP ports on loopback (the kernel's choice; a clash is caught below).
read -r SERVER_PORT RELAY_PORT < <(python3 -c '
import socket
socks = [socket.socket(socket.AF_INET, socket.SOCK_DGRAM) for _ in range(2)]
for s in socks:
    s.bind(("127.0.0.1", 0))
print(*(s.getsockname()[1] for s in socks))
')
SERVER=127.0.0.1:$SERVER_PORT
RELAY=127.0.0.1:$RELAY_PORT

# Waits until a process's log has a line matching a pattern.
wait_for_line() { # pid log pattern what
	local i
	for ((i = 0; i < 100; i++)); do
		grep -q -- "$3" "$2" 2>/dev/null && return 0
		kill -0 "$1" 2>/dev/null || { cat "$2" >&2; die "$4 exited"; }
		sleep 0.1
	done
	cat "$2" >&2
	die "$4 did not start within 10 s"
}

timeout 1800 target/release/cr-server --listen "$SERVER" --cert certs/cert.pem \
	--key certs/key.pem --token-key "$OUT/token.key" --qlog-dir "$OUT/qlog" \
	>"$OUT/server.log" 2>&1 &
PIDS+=($!)
wait_for_line "$!" "$OUT/server.log" "listening on" cr-server

timeout 1800 target/release/cr-relay --listen "$RELAY" --server "$SERVER" \
	--rate "$RATE" --rtt "$RTT" >"$OUT/relay.log" 2>&1 &
PIDS+=($!)
wait_for_line "$!" "$OUT/relay.log" "^cr-relay: $RELAY ->" cr-relay

say "cr-server on $SERVER, cr-relay on $RELAY ($RATE, rtt $RTT); logs in ${OUT#"$ROOT"/}"

# --- clients -----------------------------------------------------------------
URL=https://$RELAY/$SIZE

run_client() { # client -> its output on stdout
	case $1 in
	quicgo) timeout "$CLIENT_TIMEOUT" "$OUT/quicgo-client" -url "$URL" -n 2 -ca certs/cert.pem ;;
	aioquic) timeout "$CLIENT_TIMEOUT" "$VENV/bin/python" scripts/interop/aioquic_client.py \
		"$URL" -n 2 --ca certs/cert.pem ;;
	esac
}

reports() { grep '^peer=' "$OUT/server.log" || true; }

# The value of key=VALUE in a line.
field() { sed -n "s/.*\b$1=\([^ ]*\).*/\1/p" <<<"$2"; }

failed=0
SUMMARY=()
for client in "${CLIENTS[@]}"; do
	name=$([[ $client == quicgo ]] && echo quic-go || echo aioquic)
	before=$(reports | wc -l)
	say "$name: downloading $SIZE B twice through the relay"
	if ! run_client "$client" >"$OUT/$client.log" 2>&1; then
		cat "$OUT/$client.log" >&2
		say "$name: FAILED (client error or timeout)"
		failed=1
		SUMMARY+=("$(printf '%-8s %8s %8s %8s  %s' "$name" - - - "client failed, see ${OUT#"$ROOT"/}/$client.log")")
		continue
	fi
	sed "s/^/  $name: /" "$OUT/$client.log" >&2
	first_s=$(field seconds "$(grep '^download=1 ' "$OUT/$client.log")")
	second_s=$(field seconds "$(grep '^download=2 ' "$OUT/$client.log")")

	# The server reports a connection when it ends: wait for both.
	for ((i = 0; i < REPORT_TIMEOUT * 10; i++)); do
		(($(reports | wc -l) >= before + 2)) && break
		sleep 0.1
	done
	mapfile -t lines < <(reports | tail -n +"$((before + 1))")
	first_line=$(printf '%s\n' "${lines[@]}" | grep ' token=none ' | head -1 || true)
	second_line=$(printf '%s\n' "${lines[@]}" | grep -v ' token=none ' | head -1 || true)
	printf '%s\n' "${lines[@]}" | sed "s/^/  server: /" >&2

	verdict=
	if ((${#lines[@]} < 2)); then
		verdict="server reported ${#lines[@]} of 2 connections"
	elif [[ -z $first_line ]]; then
		verdict="first connection already had a token"
	elif [[ -z $second_line ]]; then
		verdict="second connection presented no token"
	elif [[ $(field token "$second_line") != valid ]]; then
		verdict="second connection's token did not validate"
	elif ! grep -q ' cr=engaged ' <<<"$second_line"; then
		verdict="Careful Resume did not engage: $(sed -n 's/.* cr=\(.*\) requests=.*/\1/p' <<<"$second_line")"
	elif ! grep -q '"new":"unvalidated"' "$OUT/qlog/server-$(field id "$second_line").sqlog" 2>/dev/null; then
		verdict="the server's line says engaged but its qlog has no jump"
	fi
	if [[ -z $verdict ]]; then
		verdict="resumed: $(sed -n 's/.* cr=\(engaged ([^)]*)\).*/\1/p' <<<"$second_line")"
	else
		verdict="FAILED: $verdict"
		failed=1
	fi
	speedup=$(awk -v a="$first_s" -v b="$second_s" 'BEGIN { if (b > 0) printf "%.2fx", a / b; else print "-" }')
	SUMMARY+=("$(printf '%-8s %7ss %7ss %8s  %s' "$name" "$first_s" "$second_s" "$speedup" "$verdict")")
done

echo
echo "Careful Resume interop: $SIZE B twice, $RATE, rtt $RTT (client-side seconds, handshake to last byte)"
printf '%-8s %8s %8s %8s  %s\n' client first second speed-up "second connection, on the server"
printf '%s\n' "${SUMMARY[@]}"
exit "$failed"
