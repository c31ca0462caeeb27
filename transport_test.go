package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// testCertificate is a self-signed certificate for 127.0.0.1 and localhost.
func testCertificate(t testing.TB) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// ---- hostile bodies (SPEC §8, §11) ----

// docBounds are the SPEC bounds of one kind of document.
type docBounds struct{ bytes, depth, values int }

var (
	rootBounds     = docBounds{1 << 20, 24, 12000}   // §3: the plugin list and plugin roots
	manifestBounds = docBounds{256 << 10, 24, 12000} // §3: manifests
	targetBounds   = docBounds{256 << 10, 32, 10000} // §5: target bodies
)

func (b docBounds) limits() limits { return limits(b) }

// errHarness is a hostile server that could not do its part, so the case
// proves nothing.
var errHarness = errors.New("the hostile server could not do its part")

// hostileBody is one way a hostile NetBox answers instead of doc, the
// document it would have served: serve writes it (elsewhere is a URL on
// another origin that serves doc), and the bridge must refuse it with an
// error containing want(the document's bounds). It is shared by the
// transport test below and the MCP-level TestHostileNetBox.
type hostileBody struct {
	name    string
	serve   func(w http.ResponseWriter, r *http.Request, doc, elsewhere string) error
	want    func(docBounds) string
	endless bool // the server cannot finish: socket buffers hold less than it sends
}

// withMember puts a raw member first in the JSON object doc.
func withMember(doc, member string) string { return "{" + member + ", " + strings.TrimSpace(doc)[1:] }

// firstMember is the first member of the JSON object doc, as raw text.
func firstMember(doc string) string {
	dec := json.NewDecoder(strings.NewReader(doc))
	dec.Token()
	key, _ := dec.Token()
	var val json.RawMessage
	dec.Decode(&val)
	k, _ := json.Marshal(key)
	return string(k) + ": " + string(val)
}

// gzipSpaces is one gzip member of 1 MiB of spaces: 1024 of them are a
// 1 GiB bomb of white space after a valid document.
var gzipSpaces = sync.OnceValue(func() []byte {
	var b bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
	zw.Write(bytes.Repeat([]byte(" "), 1<<20))
	zw.Close()
	return b.Bytes()
})

// spaces writes white space after a document until n chunks are written
// or the client hangs up.
func spaces(w io.Writer, n int) error {
	chunk := bytes.Repeat([]byte(" "), 16<<10)
	for range n {
		if _, err := w.Write(chunk); err != nil {
			return err
		}
	}
	return nil
}

// rawMember is a hostile body that is doc with one more member.
func rawMember(name, member string, want func(docBounds) string) hostileBody {
	return hostileBody{name: name, want: want, serve: func(w http.ResponseWriter, r *http.Request, doc, _ string) error {
		writeJSON(w, http.StatusOK, withMember(doc, member), false)
		return nil
	}}
}

func fixed(s string) func(docBounds) string { return func(docBounds) string { return s } }

var hostileBodies = []hostileBody{
	{name: "4 GiB Content-Length", endless: true, serve: func(w http.ResponseWriter, r *http.Request, doc, _ string) error {
		w.Header().Set("Content-Length", strconv.FormatInt(4<<30, 10))
		if _, err := io.WriteString(w, doc); err != nil {
			return err
		}
		return spaces(w, (4<<30)/(16<<10))
	}, want: func(b docBounds) string {
		return fmt.Sprintf("Content-Length 4294967296 is more than %d bytes", b.bytes)
	}},
	{name: "1 GiB gzip bomb", serve: func(w http.ResponseWriter, r *http.Request, doc, _ string) error {
		if !strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
			return fmt.Errorf("%w: the client did not ask for gzip, so it would not decode the bomb", errHarness)
		}
		w.Header().Set("Content-Encoding", "gzip")
		w.Header().Set("Content-Type", "application/json")
		zw := gzip.NewWriter(w)
		io.WriteString(zw, doc)
		if err := zw.Close(); err != nil {
			return err
		}
		for range 1024 {
			if _, err := w.Write(gzipSpaces()); err != nil {
				return err
			}
		}
		return nil
	}, want: func(b docBounds) string { return fmt.Sprintf("more than %d bytes", b.bytes) }},
	{name: "endless chunked body", endless: true, serve: func(w http.ResponseWriter, r *http.Request, doc, _ string) error {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, doc)
		w.(http.Flusher).Flush() // no Content-Length: chunked
		return spaces(w, 1<<21)  // 32 GiB: endless for the test
	}, want: func(b docBounds) string { return fmt.Sprintf("more than %d bytes", b.bytes) }},
	{name: "stalled body", serve: func(w http.ResponseWriter, r *http.Request, doc, _ string) error {
		w.Header().Set("Content-Length", strconv.Itoa(len(doc)))
		io.WriteString(w, doc[:len(doc)/2])
		w.(http.Flusher).Flush()
		if !untilCancelled(r) {
			return fmt.Errorf("%w: the client never gave up on a stalled body", errHarness)
		}
		return nil
	}, want: fixed("body could not be read: timed out after")},
	{name: "body cut short of its Content-Length", serve: func(w http.ResponseWriter, r *http.Request, doc, _ string) error {
		w.Header().Set("Content-Length", strconv.Itoa(len(doc)+1000))
		io.WriteString(w, doc)
		w.(http.Flusher).Flush()
		conn, _, err := w.(http.Hijacker).Hijack()
		if err != nil {
			return fmt.Errorf("%w: %v", errHarness, err)
		}
		return conn.Close()
	}, want: fixed("body could not be read: unexpected EOF")},
	rawMember("10,000-deep nesting", `"deep": `+nested(10000), func(b docBounds) string { return fmt.Sprintf("nesting deeper than %d", b.depth) }),
	rawMember("100,000 values", `"many": `+zeros(100000), func(b docBounds) string { return fmt.Sprintf("more than %d values", b.values) }),
	{name: "duplicate key", serve: func(w http.ResponseWriter, r *http.Request, doc, _ string) error {
		writeJSON(w, http.StatusOK, withMember(doc, firstMember(doc)), false) // the same member twice
		return nil
	}, want: fixed("duplicate key")},
	rawMember("5,000-digit number", `"n": `+strings.Repeat("9", 5000), fixed("number token longer than 1000 characters")),
	rawMember("number beyond the double range", `"n": 1e400`, fixed("number outside the double range")),
	rawMember("NaN", `"n": NaN`, fixed("invalid value")),
	rawMember("invalid UTF-8", "\"s\": \"\xc3\x28\"", fixed("invalid UTF-8")),
	rawMember("lone surrogate", `"s": "\ud800"`, fixed("lone surrogate escape")),
	{name: "byte order mark", serve: func(w http.ResponseWriter, r *http.Request, doc, _ string) error {
		writeJSON(w, http.StatusOK, "\xEF\xBB\xBF"+doc, false)
		return nil
	}, want: fixed("byte order mark")},
	{name: "trailing data", serve: func(w http.ResponseWriter, r *http.Request, doc, _ string) error {
		writeJSON(w, http.StatusOK, doc+" "+doc, false)
		return nil
	}, want: fixed("unexpected data after the top-level value")},
	{name: "302 to another origin", serve: func(w http.ResponseWriter, r *http.Request, doc, elsewhere string) error {
		http.Redirect(w, r, elsewhere, http.StatusFound)
		return nil
	}, want: fixed("redirects are never followed: HTTP 302")},
	{name: "307 within the origin", serve: func(w http.ResponseWriter, r *http.Request, doc, _ string) error {
		http.Redirect(w, r, r.URL.Path+"moved/", http.StatusTemporaryRedirect)
		return nil
	}, want: fixed("redirects are never followed: HTTP 307")},
	{name: "304 Not Modified", serve: func(w http.ResponseWriter, r *http.Request, doc, _ string) error {
		w.WriteHeader(http.StatusNotModified)
		return nil
	}, want: fixed("redirects are never followed: HTTP 304")},
}

// allocatedDuring reports the bytes allocated while fn runs. Total
// allocation bounds the peak heap growth, so it needs no sampling.
func allocatedDuring(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestHostileBodies sends every hostile body to the transport, as a target
// body: each ends in its error, in bounded time and memory, and the server
// finds the client gone. It measures memory, so it does not run in
// parallel with other tests.
func TestHostileBodies(t *testing.T) {
	const doc = `{"count": 2, "results": []}`
	var elsewhereHits atomic.Int32
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		elsewhereHits.Add(1)
		writeJSON(w, http.StatusOK, doc, false)
	}))
	t.Cleanup(elsewhere.Close)
	var passed int
	for _, h := range hostileBodies {
		t.Run(h.name, func(t *testing.T) {
			served := make(chan error, 1)
			var hits atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if hits.Add(1) > 1 {
					writeJSON(w, http.StatusOK, doc, false) // a followed redirect
					return
				}
				served <- h.serve(w, r, doc, elsewhere.URL+"/moved/")
			}))
			defer srv.Close()
			c := rawClient(t, srv.URL, time.Second)
			var err error
			start := time.Now()
			alloc := allocatedDuring(func() {
				var resp *response
				resp, err = c.do(context.Background(), request{method: http.MethodGet, path: "/api/plugins/inv/search/", limit: targetBounds.bytes})
				if err == nil {
					_, err = decode(resp.body, targetBounds.limits())
					resp.release()
				}
			})
			elapsed := time.Since(start)
			if want := h.want(targetBounds); err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("error %v, want one containing %q", err, want)
			}
			if alloc >= 32<<20 || elapsed > 5*time.Second || hits.Load() != 1 {
				t.Errorf("allocated %d KiB in %v and %d requests, want under 32 MiB, 5 s and 1 request", alloc>>10, elapsed, hits.Load())
			}
			select {
			case werr := <-served:
				// A 1 GiB bomb is about 1 MB compressed, which loopback
				// buffers may take whole; the endless bodies cannot finish.
				if errors.Is(werr, errHarness) || h.endless && werr == nil {
					t.Errorf("server: %v", werr)
				}
			case <-time.After(10 * time.Second):
				t.Errorf("the server is still writing")
			}
			if !t.Failed() {
				passed++
			}
			t.Logf("hostile body: %s: %v, %d KiB allocated", h.name, err, alloc>>10)
		})
	}
	if elsewhereHits.Load() != 0 {
		t.Errorf("a redirect to another origin was followed %d times", elsewhereHits.Load())
	}
	t.Logf("hostile: %d of %d hostile bodies refused by the transport and the strict decoder", passed, len(hostileBodies))
}

// HTTP/2 frame types and flags (RFC 9113 §6) that the bare server uses.
const (
	h2Data, h2Headers, h2RSTStream, h2Settings, h2GoAway = 0x0, 0x1, 0x3, 0x4, 0x7
	h2EndStream, h2Ack, h2EndHeaders                     = 0x1, 0x1, 0x4
	h2ProtocolError, h2RefusedStream                     = 0x1, 0x7
)

func writeFrame(w io.Writer, typ, flags byte, stream uint32, payload []byte) error {
	hdr := []byte{byte(len(payload) >> 16), byte(len(payload) >> 8), byte(len(payload)), typ, flags, 0, 0, 0, 0}
	binary.BigEndian.PutUint32(hdr[5:], stream)
	_, err := w.Write(append(hdr, payload...))
	return err
}

// serveBareH2 is an HTTP/2 server over TLS written frame by frame, so that
// it can do what Go's own server never does: answer the first request, once
// it has read it to its end, with fail (a reset or a GOAWAY). Later requests
// get 201 and {"id":1}. It returns its URL and the number of requests it
// has read.
func serveBareH2(t *testing.T, fail func(w io.Writer, stream uint32)) (string, *atomic.Int32) {
	cfg := &tls.Config{Certificates: []tls.Certificate{testCertificate(t)}, NextProtos: []string{"h2"}}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	var requests atomic.Int32
	serveConns(t, ln, func(conn net.Conn) {
		defer conn.Close()
		r := bufio.NewReader(conn)
		if _, err := io.ReadFull(r, make([]byte, len("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"))); err != nil {
			return
		}
		writeFrame(conn, h2Settings, 0, 0, nil)
		hdr := make([]byte, 9)
		for {
			if _, err := io.ReadFull(r, hdr); err != nil {
				return
			}
			payload := make([]byte, int(hdr[0])<<16|int(hdr[1])<<8|int(hdr[2]))
			if _, err := io.ReadFull(r, payload); err != nil {
				return
			}
			typ, flags, stream := hdr[3], hdr[4], binary.BigEndian.Uint32(hdr[5:])&0x7fffffff
			switch {
			case typ == h2Settings && flags&h2Ack == 0:
				writeFrame(conn, h2Settings, h2Ack, 0, nil)
				continue
			case (typ == h2Headers || typ == h2Data) && flags&h2EndStream != 0: // the request was read to its end
			default:
				continue
			}
			if requests.Add(1) == 1 {
				fail(conn, stream)
				continue
			}
			// :status 201, a literal without indexing of static name 8.
			writeFrame(conn, h2Headers, h2EndHeaders, stream, []byte{0x08, 3, '2', '0', '1'})
			writeFrame(conn, h2Data, h2EndStream, stream, []byte(`{"id":1}`))
		}
	})
	return "https://" + ln.Addr().String(), &requests
}

// serveConns closes ln when the test ends, and hands each connection it
// accepts to handle in a goroutine of its own.
func serveConns(t testing.TB, ln net.Listener, handle func(net.Conn)) {
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go handle(conn)
		}
	}()
}

func resetStream(code uint32) func(io.Writer, uint32) {
	return func(w io.Writer, stream uint32) {
		writeFrame(w, h2RSTStream, 0, stream, binary.BigEndian.AppendUint32(nil, code))
	}
}

// goAway tells the client that no stream was processed, which Go's client
// takes as leave to resend every request of the connection elsewhere.
func goAway(w io.Writer, _ uint32) {
	writeFrame(w, h2GoAway, 0, 0, make([]byte, 8))
	w.(net.Conn).Close()
}

// TestWriteNotReplayedAfterHTTP2Reset: SPEC §11, a write is put on the wire
// at most once on HTTP/2, whatever the server answers after reading it; the
// call then answers outcome_unknown. Go's client resends a read (no body,
// no effect): one reset read costs exactly one more request.
func TestWriteNotReplayedAfterHTTP2Reset(t *testing.T) {
	t.Parallel()
	write := catalogTool{plugin: "p", tool: &tool{name: "run", method: http.MethodPost, effect: "write"}, requestPath: "/api/plugins/p/run/"}
	for name, fail := range map[string]func(io.Writer, uint32){
		"RST_STREAM PROTOCOL_ERROR": resetStream(h2ProtocolError),
		"RST_STREAM REFUSED_STREAM": resetStream(h2RefusedStream),
		"GOAWAY":                    goAway,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			url, requests := serveBareH2(t, fail)
			c := rawClient(t, url, 5*time.Second, insecureTLS)
			req := request{method: http.MethodPost, path: write.requestPath, body: []byte(`{"scope":"all"}`), limit: specInstanceBytes}
			resp, err := c.do(context.Background(), req)
			if n := requests.Load(); n != 1 {
				t.Errorf("the write was put on the wire %d times, want 1", n)
			}
			var te *transportError
			if !errors.As(err, &te) || !te.sent {
				t.Fatalf("do: %v, want a transport error after sending", err)
			}
			_, err = responseDocument(write, resp, err)
			if be := asBridgeError(t, err); be.Code != "outcome_unknown" || !be.Dispatched || be.Outcome != "unknown" {
				t.Errorf("call answer %+v, want outcome_unknown", be)
			}

			url, requests = serveBareH2(t, fail)
			c = rawClient(t, url, 5*time.Second, insecureTLS)
			if resp, err := c.do(context.Background(), listRequest(specListBytes)); err != nil || resp.status != 201 || requests.Load() != 2 {
				t.Errorf("read: %v after %d requests, want 201 after 2", err, requests.Load())
			}
		})
	}
}

// TestWriteNotReplayedOnDeadConnection: SPEC §11 on HTTP/1.1. A server
// closes a pooled connection after reading a write; with an Idempotency-Key
// header Go's client would send the write again on a new connection.
func TestWriteNotReplayedOnDeadConnection(t *testing.T) {
	t.Parallel()
	var writes atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			writeJSON(w, http.StatusOK, "{}", false)
			return
		}
		io.Copy(io.Discard, r.Body)
		if writes.Add(1) == 1 {
			conn, _, _ := w.(http.Hijacker).Hijack()
			conn.Close()
			return
		}
		writeJSON(w, http.StatusCreated, `{"id":1}`, false)
	}))
	t.Cleanup(srv.Close)
	c := rawClient(t, srv.URL, 5*time.Second)
	if _, err := c.do(context.Background(), listRequest(specListBytes)); err != nil { // pools the connection
		t.Fatal(err)
	}
	for _, name := range []string{"Idempotency-Key", "X-Idempotency-Key"} {
		writes.Store(0)
		req := request{method: http.MethodPost, path: "/api/plugins/p/run/", body: []byte(`{}`), limit: specInstanceBytes,
			header: http.Header{name: {"k1"}}}
		_, err := c.do(context.Background(), req)
		var te *transportError
		if n := writes.Load(); n != 1 || !errors.As(err, &te) || !te.sent {
			t.Errorf("%s: the write was put on the wire %d times (%v), want once and an error after sending", name, n, err)
		}
		c.do(context.Background(), listRequest(specListBytes)) // pool a connection again
	}
}

// TestBudgetNeverWaits: SPEC §11, a body budget is charged as bytes
// arrive and never makes a holder wait: a take that does not fit fails at
// once, and what is given back can be taken again.
func TestBudgetNeverWaits(t *testing.T) {
	t.Parallel()
	b := newBudget(10)
	if !b.take(6) || !b.take(4) {
		t.Fatal("takes within the budget failed")
	}
	start := time.Now()
	if b.take(1) {
		t.Fatal("a take past the budget passed")
	}
	if d := time.Since(start); d > 100*time.Millisecond {
		t.Errorf("a take past the budget waited %v", d)
	}
	b.give(6)
	if !b.take(5) || b.take(2) || !b.take(1) {
		t.Error("the budget does not count what was given back")
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 1000 {
				if b.take(3) {
					b.give(3)
				}
			}
		})
	}
	wg.Wait()
	if b.left.Load() != 0 {
		t.Errorf("%d left after balanced takes and gives, want 0", b.left.Load())
	}
}

// TestTLSMistakesSayWhatToSet: an unknown CA names SSL_CERT_FILE; https
// assumed for a scheme-less URL in front of plain HTTP says so (issue 10).
func TestTLSMistakesSayWhatToSet(t *testing.T) {
	t.Parallel()
	tlsSrv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { writeJSON(w, 200, "{}", false) }))
	t.Cleanup(tlsSrv.Close)
	_, err := rawClient(t, tlsSrv.URL, 5*time.Second).do(context.Background(), listRequest(specListBytes))
	if err == nil || !strings.Contains(err.Error(), "certificate") || !strings.Contains(err.Error(), "set SSL_CERT_FILE") ||
		!strings.Contains(err.Error(), "NETBOX_SSL_VERIFY=0 only as a last resort") {
		t.Errorf("unknown CA: %v", err)
	}
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { writeJSON(w, 200, "{}", false) }))
	t.Cleanup(plain.Close)
	cfg, err := loadConfig(&options{}, testEnv(t.TempDir(), map[string]string{"NETBOX_URL": strings.TrimPrefix(plain.URL, "http://")}))
	if err != nil || !cfg.assumedHTTPS {
		t.Fatalf("scheme-less URL: %v %+v", err, cfg)
	}
	_, err = testClient(t, cfg).do(context.Background(), listRequest(specListBytes))
	if err == nil || !strings.Contains(err.Error(), "https:// was assumed") || !strings.Contains(err.Error(), "NETBOX_URL=http://") {
		t.Errorf("https assumed in front of plain HTTP: %v", err)
	}
	// http:// in front of a port that speaks only TLS, and drops what is not
	// a handshake: the reset or the TLS alert says that NetBox may speak TLS
	// there (issue 19).
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			tls.Server(conn, tlsSrv.TLS).Handshake()
			conn.Close()
		}
	}()
	_, err = rawClient(t, "http://"+ln.Addr().String(), 5*time.Second).do(context.Background(), listRequest(specListBytes))
	if err == nil || !strings.Contains(err.Error(), "NetBox may speak TLS there: try NETBOX_URL=https://") {
		t.Errorf("http:// in front of TLS: %v", err)
	}
	// A plain-HTTP NetBox that has answered, then drops a connection: the
	// evidence says it speaks HTTP, so no advice to switch (SPEC §9, issue 28).
	var answered atomic.Bool
	dropping := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if answered.Swap(true) {
			conn, _, _ := http.NewResponseController(w).Hijack()
			conn.Close()
			return
		}
		writeJSON(w, 200, "{}", false)
	}))
	t.Cleanup(dropping.Close)
	c := rawClient(t, dropping.URL, 5*time.Second)
	if _, err := c.do(context.Background(), listRequest(specListBytes)); err != nil {
		t.Fatal(err)
	}
	c.http.CloseIdleConnections() // a new connection: the evidence is the answer, not the connection
	_, err = c.do(context.Background(), listRequest(specListBytes))
	if err == nil || strings.Contains(err.Error(), "https") || strings.Contains(err.Error(), "TLS") {
		t.Errorf("a plain-HTTP NetBox that answered before, then dropped a connection: %v; want no advice about TLS", err)
	}
}
