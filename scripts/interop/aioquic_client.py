"""A tiny, unmodified aioquic HTTP/3 client for the Careful Resume interop
check (scripts/interop/run.sh).

It downloads one URL N times, each over a new QUIC connection (and a new UDP
socket), keeping between connections what aioquic hands the application: the
newest NEW_TOKEN token (``token_handler``, presented through
``QuicConfiguration.token``) and the newest TLS session ticket
(``session_ticket_handler``, presented through
``QuicConfiguration.session_ticket``). One line per download:

    download=1 bytes=2097152 seconds=2.953 token=none new_tokens=3 request=1rtt early_data=none odcid=6fe6b83a69452029

``request`` says when the GET was sent: ``1rtt`` once the handshake completed
(``connect()`` waits for it, the default), ``0rtt`` at once, before the
handshake completes (``connect(..., wait_connected=False)``, for the
downloads listed in ``--early-data``), which puts it in 0-RTT packets when
the kept session ticket allows early data. ``early_data`` is aioquic's view
of the connection (``tls.early_data_accepted``, from the server's
EncryptedExtensions): ``accepted``, ``rejected`` (offered, as aioquic does
whenever its ticket allows it, and refused) or ``none`` (not offered: no
ticket). aioquic offers early data with any such ticket, so a ``1rtt``
download's connection may have its HTTP/3 control streams accepted in 0-RTT
while its request waits for the handshake. ``odcid`` is the connection's
original destination connection ID, as cr-server's connection line names it.
"""

import argparse
import asyncio
import ssl
import sys
import time
from urllib.parse import urlparse

from aioquic.asyncio.client import connect
from aioquic.asyncio.protocol import QuicConnectionProtocol
from aioquic.h3.connection import H3_ALPN, H3Connection
from aioquic.h3.events import DataReceived, HeadersReceived
from aioquic.quic.configuration import QuicConfiguration
from aioquic.quic.events import QuicEvent


class H3Client(QuicConnectionProtocol):
    """One GET at a time over HTTP/3; counts the body's bytes."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._http = H3Connection(self._quic)
        self._done = None
        self._status = None
        self._bytes = 0

    async def get(self, authority: str, path: str) -> int:
        stream_id = self._quic.get_next_available_stream_id()
        self._http.send_headers(
            stream_id,
            [
                (b":method", b"GET"),
                (b":scheme", b"https"),
                (b":authority", authority.encode()),
                (b":path", path.encode()),
                (b"user-agent", b"aioquic-interop"),
            ],
            end_stream=True,
        )
        self._done = asyncio.get_running_loop().create_future()
        self.transmit()
        await self._done
        if self._status != b"200":
            raise RuntimeError(f"status {self._status!r}")
        return self._bytes

    def quic_event_received(self, event: QuicEvent) -> None:
        for h3_event in self._http.handle_event(event):
            if isinstance(h3_event, HeadersReceived):
                self._status = dict(h3_event.headers).get(b":status")
            elif isinstance(h3_event, DataReceived):
                self._bytes += len(h3_event.data)
            if (
                isinstance(h3_event, (HeadersReceived, DataReceived))
                and h3_event.stream_ended
                and self._done is not None
                and not self._done.done()
            ):
                self._done.set_result(None)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("url", help="e.g. https://127.0.0.1:4434/2097152")
    parser.add_argument("-n", type=int, default=2, help="downloads, each a new connection")
    parser.add_argument("--ca", help="PEM root to trust (default: no verification)")
    parser.add_argument(
        "--linger",
        type=float,
        default=1.0,
        help="seconds to keep a connection open after the body, for late NEW_TOKEN frames",
    )
    parser.add_argument("--timeout", type=float, default=30.0, help="bound on each download")
    parser.add_argument(
        "--early-data",
        default="",
        metavar="N[,N...]",
        help="downloads (numbered from 1) whose GET is sent before the handshake completes, "
        "in 0-RTT when the kept ticket allows it, e.g. 3",
    )
    args = parser.parse_args()
    try:
        early = {int(f) for f in args.early_data.split(",") if f.strip()}
    except ValueError:
        parser.error(f"--early-data: not a list of download numbers: {args.early_data!r}")
    if any(not 1 <= k <= args.n for k in early):
        parser.error(f"--early-data: download numbers are 1..{args.n}")

    url = urlparse(args.url)
    host, port = url.hostname, url.port or 443
    tokens = []  # every NEW_TOKEN received, in order
    ticket = None

    def save_ticket(t) -> None:
        nonlocal ticket
        ticket = t

    for i in range(1, args.n + 1):
        config = QuicConfiguration(is_client=True, alpn_protocols=H3_ALPN)
        if args.ca:
            config.load_verify_locations(args.ca)
        else:
            config.verify_mode = ssl.CERT_NONE
        # What a client keeps from its earlier connection: the newest token
        # and session ticket.
        presented = bool(tokens)
        if tokens:
            config.token = tokens[-1]
        config.session_ticket = ticket
        received_before = len(tokens)
        zero_rtt = i in early

        start = time.monotonic()
        async with connect(
            host,
            port,
            configuration=config,
            create_protocol=H3Client,
            session_ticket_handler=save_ticket,
            token_handler=tokens.append,
            wait_connected=not zero_rtt,
        ) as client:
            body = await asyncio.wait_for(
                client.get(url.netloc, url.path or "/"), timeout=args.timeout
            )
            seconds = time.monotonic() - start
            # No public accessors for these in aioquic.
            odcid = client._quic._original_destination_connection_id.hex()
            tls = client._quic.tls
            if tls.early_data_accepted:
                early_data = "accepted"
            elif tls.session_ticket is not None and tls.session_ticket.max_early_data_size is not None:
                early_data = "rejected"
            else:
                early_data = "none"
            await asyncio.sleep(args.linger)
        print(
            f"download={i} bytes={body} seconds={seconds:.3f} "
            f"token={'presented' if presented else 'none'} "
            f"new_tokens={len(tokens) - received_before} "
            f"request={'0rtt' if zero_rtt else '1rtt'} early_data={early_data} odcid={odcid}",
            flush=True,
        )


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except Exception as e:  # noqa: BLE001 - one line for the script's log
        print(f"aioquic-client: {type(e).__name__}: {e}", file=sys.stderr)
        sys.exit(1)
