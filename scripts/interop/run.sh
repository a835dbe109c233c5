#!/usr/bin/env bash
# Careful Resume with unmodified third-party QUIC clients (`make interop-clients`).
#
# Starts cr-server and cr-relay (20 Mbit/s, 300 ms RTT) on free loopback
# ports, then has each client download 2 MiB three times over HTTP/3, each
# time over a new connection, keeping only what the client library itself
# keeps between connections (NEW_TOKEN tokens, TLS session tickets):
#
#   1. first: no token, no ticket;
#   2. resumed, 1-RTT: the GET is sent once the handshake has completed;
#   3. resumed, 0-RTT: the GET is sent at once, in 0-RTT packets under the
#      kept ticket (quic-go: http3.MethodGet0RTT; aioquic: connect(...,
#      wait_connected=False)), which cr-server answers at once (0.5-RTT) once
#      its guard has recorded the first flight as new.
#
#   quic-go  scripts/interop/quicgo/ (pinned in go.mod/go.sum, from the Go module proxy)
#   aioquic  scripts/interop/aioquic_client.py (pinned in requirements.txt, from PyPI,
#            into the venv target/interop-venv)
#
# Prints per client the three download times and, for the resumed ones, the
# server's verdict (cr= and early-data=); fails unless, for every client, the
# first connection came without a token, both resumed ones presented one and
# Careful Resume engaged (cr-server's connection line says `cr=engaged` and
# its qlog has the jump into the Unvalidated phase), and the 0-RTT one's line
# says `early-data=accepted` and its qlog has the request (stream 0) arriving
# in a 0-RTT packet. Server lines are matched to downloads by the original
# destination connection ID each client prints.
#
# Usage: scripts/interop/run.sh [quicgo] [aioquic]     (default: both)
# INTEROP_SIZE=5120 scripts/interop/run.sh downloads that many bytes instead
# (to see 0-RTT save a round trip on a small object; the check then fails,
# rightly: a first connection that small saves no capacity to resume).
# INTEROP_SERVER_ARGS="--pace" passes more flags to cr-server (split on
# spaces), to try its options with the same clients.
# Logs, qlogs and the Go binary go to target/interop-clients/.
# Needs the Go toolchain (PATH or /usr/local/go/bin), python3 with venv, and
# the first time the registries; it only ever ends the processes it started.
set -euo pipefail

cd "$(dirname "$0")/../.."
ROOT=$PWD
OUT=$ROOT/target/interop-clients
VENV=$ROOT/target/interop-venv
SIZE=${INTEROP_SIZE:-2097152} # 2 MiB: long enough for slow start to matter at this path's BDP
RATE=20mbit
RTT=300ms
CLIENT_TIMEOUT=120 # seconds, for one client's three downloads
REPORT_TIMEOUT=30  # seconds, for the server to report a client's connections

CLIENTS=("$@")
[[ ${#CLIENTS[@]} -gt 0 ]] || CLIENTS=(quicgo aioquic)
[[ $SIZE =~ ^[0-9]+$ ]] || { echo "interop-clients: INTEROP_SIZE must be a number of bytes" >&2; exit 2; }

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

read -r -a SERVER_ARGS <<<"${INTEROP_SERVER_ARGS:-}"
timeout 1800 target/release/cr-server --listen "$SERVER" --cert certs/cert.pem \
	--key certs/key.pem --token-key "$OUT/token.key" --qlog-dir "$OUT/qlog" \
	"${SERVER_ARGS[@]}" >"$OUT/server.log" 2>&1 &
PIDS+=($!)
wait_for_line "$!" "$OUT/server.log" "listening on" cr-server

timeout 1800 target/release/cr-relay --listen "$RELAY" --server "$SERVER" \
	--rate "$RATE" --rtt "$RTT" >"$OUT/relay.log" 2>&1 &
PIDS+=($!)
wait_for_line "$!" "$OUT/relay.log" "^cr-relay: $RELAY ->" cr-relay

say "cr-server on $SERVER, cr-relay on $RELAY ($RATE, rtt $RTT); logs in ${OUT#"$ROOT"/}"

# --- clients -----------------------------------------------------------------
URL=https://$RELAY/$SIZE

# Three downloads, each over a new connection; the third's GET goes in 0-RTT.
run_client() { # client -> its output on stdout
	case $1 in
	quicgo) timeout "$CLIENT_TIMEOUT" "$OUT/quicgo-client" -url "$URL" -n 3 -early-data 3 \
		-ca certs/cert.pem ;;
	aioquic) timeout "$CLIENT_TIMEOUT" "$VENV/bin/python" scripts/interop/aioquic_client.py \
		"$URL" -n 3 --early-data 3 --ca certs/cert.pem ;;
	esac
}

reports() { grep '^peer=' "$OUT/server.log" || true; }

# The value of key=VALUE in a line.
field() { sed -n "s/.*\b$1=\([^ ]*\).*/\1/p" <<<"$2"; }

# The server's verdict on a connection line: "cr=... early-data=...".
verdict_of() {
	local cr early
	cr=$(sed -n 's/.* cr=\(engaged\|off\|not engaged\).*/\1/p' <<<"$1")
	early=$(field early-data "$1")
	echo "cr=${cr:-?} early-data=${early:--}"
}

# What is wrong with a resumed connection's server line ($1), empty if
# nothing; with $2 = 0rtt, also that its request came as accepted early data.
check_resumed() {
	local line=$1 qlog
	qlog=$OUT/qlog/server-$(field id "$line").sqlog
	if [[ $(field token "$line") != valid ]]; then
		echo "token $(field token "$line"), not valid"
	elif ! grep -q ' cr=engaged ' <<<"$line"; then
		echo "Careful Resume did not engage: $(sed -n 's/.* cr=\(.*\) requests=.*/\1/p' <<<"$line")"
	elif ! grep -q '"new":"unvalidated"' "$qlog" 2>/dev/null; then
		echo "the server's line says engaged but its qlog has no jump"
	elif [[ $2 == 0rtt && $(field early-data "$line") != accepted ]]; then
		echo "early data not accepted: early-data=$(field early-data "$line")"
	elif [[ $2 == 0rtt ]] && ! grep 'packet_received' "$qlog" | grep '"packet_type":"0RTT"' |
		grep -q '"frame_type":"stream","stream_id":0,'; then
		echo "early data accepted but the request (stream 0) did not come in 0-RTT"
	fi
}

failed=0
SUMMARY=()
DETAILS=()
for client in "${CLIENTS[@]}"; do
	name=$([[ $client == quicgo ]] && echo quic-go || echo aioquic)
	say "$name: downloading $SIZE B three times through the relay (first, resumed 1-RTT, resumed 0-RTT)"
	if ! run_client "$client" >"$OUT/$client.log" 2>&1; then
		cat "$OUT/$client.log" >&2
		say "$name: FAILED (client error or timeout)"
		failed=1
		SUMMARY+=("$(printf '%-8s %8s %8s %8s %8s  %s' "$name" - - - - "client failed, see ${OUT#"$ROOT"/}/$client.log")")
		continue
	fi
	sed "s/^/  $name: /" "$OUT/$client.log" >&2
	secs=() odcids=() lines=()
	for k in 1 2 3; do
		dl=$(grep "^download=$k " "$OUT/$client.log" || true)
		secs[k]=$(field seconds "$dl")
		odcids[k]=$(field odcid "$dl")
	done

	# The server reports a connection when it ends: wait for all three.
	for ((i = 0; i < REPORT_TIMEOUT * 10; i++)); do
		missing=0
		for k in 1 2 3; do
			reports | grep -q " odcid=${odcids[k]:-none} " || missing=1
		done
		((missing == 0)) && break
		sleep 0.1
	done
	for k in 1 2 3; do
		lines[k]=$(reports | grep " odcid=${odcids[k]:-none} " | head -1 || true)
		[[ -n ${lines[k]} ]] && printf '  server (download %s): %s\n' "$k" "${lines[k]}" >&2
	done

	verdict=
	for k in 1 2 3; do
		[[ -n ${lines[k]} ]] || verdict="server did not report download $k's connection (odcid ${odcids[k]:-?})"
	done
	if [[ -z $verdict && $(field token "${lines[1]}") != none ]]; then
		verdict="first connection already had a token"
	fi
	if [[ -z $verdict ]]; then
		why=$(check_resumed "${lines[2]}" 1rtt)
		[[ -z $why ]] || verdict="resumed 1-RTT: $why"
	fi
	if [[ -z $verdict ]]; then
		why=$(check_resumed "${lines[3]}" 0rtt)
		[[ -z $why ]] || verdict="resumed 0-RTT: $why"
	fi
	server="1-RTT $(verdict_of "${lines[2]}"); 0-RTT $(verdict_of "${lines[3]}")"
	if [[ -n $verdict ]]; then
		verdict="FAILED: $verdict"
		failed=1
	else
		verdict="ok"
	fi
	saved=$(awk -v a="${secs[2]}" -v b="${secs[3]}" 'BEGIN { if (a > 0 && b > 0) printf "%+.3fs", a - b; else print "-" }')
	SUMMARY+=("$(printf '%-8s %7ss %7ss %7ss %8s  %s: %s' "$name" "${secs[1]:--}" "${secs[2]:--}" "${secs[3]:--}" "$saved" "$verdict" "$server")")
	for k in 2 3; do
		[[ -n ${lines[k]} ]] && DETAILS+=("$(printf '%-8s %s: cr=%s' "$name" "$([[ $k == 2 ]] && echo 1-RTT || echo 0-RTT)" \
			"$(sed -n 's/.* cr=\(.*\) requests=.*/\1/p' <<<"${lines[k]}")")")
	done
done

echo
echo "Careful Resume interop: $SIZE B three times, $RATE, rtt $RTT (client-side seconds, connection start to last byte;"
echo "first: no token; 1-RTT, 0-RTT: resumed, the request sent after the handshake, in 0-RTT; saved: 1-RTT minus 0-RTT)"
printf '%-8s %8s %8s %8s %8s  %s\n' client first "1-RTT" "0-RTT" "saved" "resumed connections, on the server"
printf '%s\n' "${SUMMARY[@]}"
if ((${#DETAILS[@]} > 0)); then
	printf '%s\n' "${DETAILS[@]}"
fi
exit "$failed"
