// A tiny, unmodified quic-go HTTP/3 client for the Careful Resume interop
// check (scripts/interop/run.sh): it downloads one URL -n times, each over a
// new QUIC connection (the http3.Transport and its UDP socket are closed
// between downloads), while keeping quic-go's own NEW_TOKEN store and the
// TLS session cache. Each connection is dialled with quic.DialAddrEarly (what
// http3.Transport does by default; here through its Dial hook, to keep the
// connection and ask it afterwards whether 0-RTT was accepted), so quic-go
// offers early data whenever the cache holds a ticket that allows it. It
// prints one line per download:
//
//	download=1 bytes=2097152 seconds=2.953 token=none new_tokens=3 request=1rtt early_data=none odcid=6fe6b83a69452029
//
// `token` says whether quic-go took a token from the store for that
// connection's Initial, `new_tokens` how many NEW_TOKEN frames it received.
// `request` says how the GET was sent: `0rtt` (http3.MethodGet0RTT, sent at
// once, in 0-RTT packets when a ticket allows it) for the downloads listed
// in -early-data, else `1rtt` (a plain GET, which http3 holds until the
// handshake completes). `early_data` is quic-go's view of the connection:
// `accepted` when the server took its 0-RTT data (which may be only HTTP/3's
// control streams, for a 1rtt request), `none` otherwise. `odcid` is the
// connection's original destination connection ID, as cr-server's
// connection line names it.
package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
	"github.com/quic-go/quic-go/qlogwriter"
)

// countingStore wraps quic-go's LRU token store only to count what goes in
// and out; the tokens and the choice among them are quic-go's.
type countingStore struct {
	inner quic.TokenStore
	mu    sync.Mutex
	puts  int
	pops  int
}

func (s *countingStore) Put(key string, token *quic.ClientToken) {
	s.mu.Lock()
	s.puts++
	s.mu.Unlock()
	s.inner.Put(key, token)
}

func (s *countingStore) Pop(key string) *quic.ClientToken {
	token := s.inner.Pop(key)
	if token != nil {
		s.mu.Lock()
		s.pops++
		s.mu.Unlock()
	}
	return token
}

func (s *countingStore) counts() (int, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.puts, s.pops
}

func main() {
	url := flag.String("url", "https://127.0.0.1:4434/2097152", "URL to download")
	n := flag.Int("n", 2, "number of downloads, each over a new connection")
	ca := flag.String("ca", "", "PEM file of the root to trust (default: skip verification)")
	linger := flag.Duration("linger", time.Second, "time to keep a connection open after the body, for late NEW_TOKEN frames")
	timeout := flag.Duration("timeout", 30*time.Second, "bound on each download")
	earlyList := flag.String("early-data", "", "comma-separated download numbers whose GET goes in 0-RTT (http3.MethodGet0RTT), e.g. 3")
	flag.Parse()
	early := map[int]bool{}
	for _, f := range strings.FieldsFunc(*earlyList, func(r rune) bool { return r == ',' }) {
		k, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || k < 1 || k > *n {
			fail("-early-data: %q is not a download number in 1..%d", f, *n)
		}
		early[k] = true
	}

	tlsConf := &tls.Config{ClientSessionCache: tls.NewLRUClientSessionCache(8)}
	if *ca == "" {
		tlsConf.InsecureSkipVerify = true
	} else {
		pem, err := os.ReadFile(*ca)
		if err != nil {
			fail("reading %s: %v", *ca, err)
		}
		roots := x509.NewCertPool()
		if !roots.AppendCertsFromPEM(pem) {
			fail("no certificate in %s", *ca)
		}
		tlsConf.RootCAs = roots
	}
	store := &countingStore{inner: quic.NewLRUTokenStore(4, 4)}
	quicConf := &quic.Config{TokenStore: store}

	for i := 1; i <= *n; i++ {
		putsBefore, popsBefore := store.counts()
		var (
			connMu sync.Mutex
			conn   *quic.Conn // the connection this download dialled
			odcid  = "-"      // its original destination connection ID
		)
		transport := &http3.Transport{
			TLSClientConfig: tlsConf,
			QUICConfig:      quicConf,
			Dial: func(ctx context.Context, addr string, tlsConf *tls.Config, conf *quic.Config) (*quic.Conn, error) {
				// A Tracer that records no trace, only to learn the original
				// destination connection ID (cr-server's line names it).
				conf = conf.Clone()
				conf.Tracer = func(_ context.Context, _ bool, id quic.ConnectionID) qlogwriter.Trace {
					connMu.Lock()
					odcid = id.String()
					connMu.Unlock()
					return nil
				}
				c, err := quic.DialAddrEarly(ctx, addr, tlsConf, conf)
				connMu.Lock()
				conn = c
				connMu.Unlock()
				return c, err
			},
		}
		method, request := http.MethodGet, "1rtt"
		if early[i] {
			method, request = http3.MethodGet0RTT, "0rtt"
		}
		bytes, seconds, err := download(transport, method, *url, *timeout)
		earlyData := "none"
		connMu.Lock()
		if conn != nil && conn.ConnectionState().Used0RTT {
			earlyData = "accepted"
		}
		connID := odcid
		connMu.Unlock()
		if err == nil {
			time.Sleep(*linger)
		}
		transport.Close()
		if err != nil {
			fail("download %d: %v", i, err)
		}
		puts, pops := store.counts()
		token := "none"
		if pops > popsBefore {
			token = "presented"
		}
		fmt.Printf("download=%d bytes=%d seconds=%.3f token=%s new_tokens=%d request=%s early_data=%s odcid=%s\n",
			i, bytes, seconds, token, puts-putsBefore, request, earlyData, connID)
	}
}

// download GETs url (method: http.MethodGet, or http3.MethodGet0RTT to send
// the request without waiting for the handshake) and reads the whole body:
// bytes and seconds from the request's start (handshake included) to the
// last byte.
func download(transport *http3.Transport, method, url string, timeout time.Duration) (int64, float64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, url, nil)
	if err != nil {
		return 0, 0, err
	}
	start := time.Now()
	resp, err := transport.RoundTrip(req)
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, 0, fmt.Errorf("status %s", resp.Status)
	}
	bytes, err := io.Copy(io.Discard, resp.Body)
	if err != nil {
		return bytes, 0, err
	}
	return bytes, time.Since(start).Seconds(), nil
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "quicgo-client: "+format+"\n", args...)
	os.Exit(1)
}
