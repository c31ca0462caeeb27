package main

import (
	"bytes"
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"sync/atomic"
	"time"
)

// Transport errors that callers tell apart.
var (
	errTooLarge    = errors.New("body exceeds its size limit")
	errBudget      = errors.New("discovery bodies exceed the scan's aggregate limit")
	errRedirect    = errors.New("redirects are never followed")
	errNotReadable = errors.New("body could not be read")
)

// client is the one HTTP client of the bridge (SPEC §8): every discovery and
// target request goes through do. It never follows redirects, keeps no cache,
// bounds every body while it streams, and only ever talks to base.
type client struct {
	*config
	http      *http.Client
	userAgent string
}

// environmentProxy picks the proxy for HTTPS requests; tests replace it.
var environmentProxy = http.ProxyFromEnvironment

func newClient(cfg *config) *client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = scanConcurrency
	tr.MaxResponseHeaderBytes = 64 << 10 // the default, 10 MiB, is no bound with 16 in flight
	tr.Proxy = func(r *http.Request) (*url.URL, error) {
		if r.URL.Scheme != "https" {
			return nil, nil // a plain-HTTP proxy would see the token
		}
		return environmentProxy(r)
	}
	if cfg.insecure {
		tr.TLSClientConfig = &tls.Config{InsecureSkipVerify: true}
	}
	return &client{
		http: &http.Client{
			Transport:     tr,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
		config:    cfg,
		userAgent: "netbox-plugin-bridge/" + bridgeVersion(),
	}
}

// request is one bounded request to the configured NetBox.
type request struct {
	method string
	path   string        // base-relative, starting with /api/
	query  string        // encoded, without '?'
	body   []byte        // JSON body, nil for none
	header http.Header   // caller headers of this call
	auth   string        // per-call Authorization, overrides the configured one
	limit  int           // body size limit
	budget *atomic.Int64 // aggregate discovery bytes left, nil for targets
}

// response is a response whose body was read within its limit.
type response struct {
	status int
	header http.Header
	body   []byte
}

// transportError is a failed request, with whether any byte of it may have
// reached the server: the write-outcome boundary of SPEC §9.
type transportError struct {
	err  error
	sent bool
	resp *response // status and headers when the failure came after them
}

func (e *transportError) Error() string { return e.err.Error() }
func (e *transportError) Unwrap() error { return e.err }

// do sends one request and reads its body within req.limit.
func (c *client) do(ctx context.Context, req request) (*response, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	var sent atomic.Bool
	trace := &httptrace.ClientTrace{
		WroteHeaderField: func(string, []string) { sent.Store(true) },
		WroteHeaders:     func() { sent.Store(true) },
	}
	ctx = httptrace.WithClientTrace(ctx, trace)
	url := c.base + req.path
	if req.query != "" {
		url += "?" + req.query
	}
	var body io.Reader
	if req.body != nil {
		body = bytes.NewReader(req.body)
	}
	hr, err := http.NewRequestWithContext(ctx, req.method, url, body)
	if err != nil {
		return nil, &transportError{err: fmt.Errorf("bad request URL: %w", err)}
	}
	// Without GetBody, Go's transport cannot rewind the body, so it never
	// resends a write: not after an HTTP/2 reset or GOAWAY, not on a dead
	// kept-alive connection (SPEC §11: on the wire at most once).
	hr.GetBody = nil
	for name, values := range req.header {
		hr.Header[name] = values
	}
	hr.Header.Set("Accept", "application/json")
	hr.Header.Set("User-Agent", c.userAgent)
	if auth := cmp.Or(req.auth, c.auth); auth != "" {
		hr.Header.Set("Authorization", auth)
	}
	if req.body != nil {
		hr.Header.Set("Content-Type", "application/json")
	}
	hr.Header.Set("Cache-Control", "no-cache")
	resp, err := c.http.Do(hr)
	if err != nil {
		return nil, &transportError{err: describeNetError(ctx, err, c.timeout), sent: sent.Load()}
	}
	defer resp.Body.Close()
	r := &response{status: resp.StatusCode, header: resp.Header}
	fail := func(err error) error { return &transportError{err: err, sent: true, resp: r} }
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		return r, fail(fmt.Errorf("%w: HTTP %d to %s", errRedirect, resp.StatusCode, quote(clip(resp.Header.Get("Location"), 120))))
	}
	if req.method == http.MethodHead {
		return r, nil
	}
	if resp.ContentLength > int64(req.limit) {
		return r, fail(fmt.Errorf("%w: Content-Length %d is more than %d bytes", errTooLarge, resp.ContentLength, req.limit))
	}
	r.body, err = readBounded(resp.Body, req.limit, resp.ContentLength, req.budget)
	if err != nil {
		if !errors.Is(err, errTooLarge) && !errors.Is(err, errBudget) {
			err = fmt.Errorf("%w: %v", errNotReadable, describeNetError(ctx, err, c.timeout))
		}
		return r, fail(err)
	}
	return r, nil
}

// readBounded reads r to its end, stopping after limit+1 bytes, and draws
// every byte it reads from b when b is not nil. size is the expected
// length, or -1.
func readBounded(r io.Reader, limit int, size int64, b *atomic.Int64) ([]byte, error) {
	initial := 4 << 10
	if size >= 0 {
		initial = int(size) + 1 // room to see the end without growing
	}
	buf := make([]byte, 0, min(limit+1, initial))
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := r.Read(buf[len(buf):min(cap(buf), limit+1)])
		buf = buf[:len(buf)+n]
		if b != nil && b.Add(-int64(n)) < 0 {
			return nil, errBudget
		}
		if len(buf) > limit {
			return nil, fmt.Errorf("%w: more than %d bytes", errTooLarge, limit)
		}
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// describeNetError names a timeout as one, without the URL's query.
func describeNetError(ctx context.Context, err error, timeout time.Duration) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("timed out after %v", timeout)
	}
	var ue interface{ Unwrap() error }
	if errors.As(err, &ue) {
		if inner := ue.Unwrap(); inner != nil {
			return inner
		}
	}
	return err
}

// clip shortens hostile text to n bytes for a message.
func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
