package main

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"errors"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
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
	t.Cleanup(func() { ln.Close() })
	var requests atomic.Int32
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
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
			}()
		}
	}()
	return "https://" + ln.Addr().String(), &requests
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
