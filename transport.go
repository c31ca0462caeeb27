package main

import (
	"bytes"
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// version is set at release time with -ldflags "-X main.version=…".
var version = ""

// bridgeVersion is the release version, else the module version from the
// build information.
func bridgeVersion() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "devel"
}

// config is the resolved NetBox configuration of serve and scan.
type config struct {
	base         string // scheme://host[:port][/prefix], no trailing slash
	origin       string // scheme://host:port, case-folded, for link checks
	prefix       string // path prefix of base, "" or "/netbox"
	auth         string // Authorization header value, "" for none
	authFrom     string // where the token came from, as in NETBOX_TOKEN
	timeout      time.Duration
	insecure     bool
	insecureFrom string // the setting that turned verification off
	assumedHTTPS bool   // NETBOX_URL had no scheme
	branch       string // the NetBox branch every call works in (SPEC §16), "" for none
}

// describeToken names the token a request carries, its scheme and where it
// came from, never the token: auth is a call's own Authorization, from
// "per-call" or "http", or "" for the configured one.
func (c *config) describeToken(auth, from string) string {
	switch {
	case auth == "":
		from = c.authFrom
	case from == "http":
		from = "the HTTP caller's Authorization"
	default:
		from = "the call's token argument"
	}
	auth = cmp.Or(auth, c.auth)
	if auth == "" {
		return "no token"
	}
	kind := "v2 token (Bearer scheme)"
	if strings.HasPrefix(auth, "Token ") {
		kind = "v1 token (Token scheme)"
	}
	if from == "" {
		return "the " + kind
	}
	return fmt.Sprintf("the %s from %s", kind, from)
}

// defaultTimeout is the per-request timeout when nothing sets one.
const defaultTimeout = 30 * time.Second

// normalizeURL checks NETBOX_URL and splits it into base, origin and prefix.
func normalizeURL(raw string) (base, origin, prefix string, err error) {
	if hasControl(raw) || strings.Contains(raw, " ") {
		return "", "", "", errors.New("contains a control character or space")
	}
	if !strings.Contains(raw, "://") {
		// "host:8000" and "[::1]:8000" are hosts; "ftp:x" is a scheme.
		if scheme, rest, ok := strings.Cut(raw, ":"); ok && raw[0] != '[' && strings.Trim(strings.SplitN(rest, "/", 2)[0], "0123456789") != "" && !strings.Contains(scheme, ".") {
			return "", "", "", fmt.Errorf("scheme %s is not http or https", quote(scheme))
		}
		raw = "https://" + raw
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return "", "", "", errors.New("is not a URL")
	case u.Scheme != "http" && u.Scheme != "https":
		return "", "", "", fmt.Errorf("scheme %s is not http or https", quote(u.Scheme))
	case u.User != nil:
		return "", "", "", errors.New("must not contain credentials; set NETBOX_TOKEN instead")
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || strings.Contains(raw, "#"):
		return "", "", "", errors.New("must not have a query or fragment")
	case u.Host == "" || u.Opaque != "":
		return "", "", "", errors.New("has no host")
	case strings.Contains(u.EscapedPath(), "%") || strings.Contains(raw, "%"):
		return "", "", "", errors.New("must not contain percent-encoding")
	}
	prefix = strings.TrimRight(u.Path, "/")
	if prefix != "" && badSegment(prefix[1:]) {
		return "", "", "", errors.New("path prefix has an empty, . or .. segment")
	}
	if origin, err = originOf(u.Scheme, u.Host); err != nil {
		return "", "", "", err
	}
	return u.Scheme + "://" + u.Host + prefix, origin, prefix, nil
}

// originOf normalizes scheme and authority to scheme://host:port.
func originOf(scheme, authority string) (string, error) {
	scheme = strings.ToLower(scheme)
	port := map[string]string{"http": "80", "https": "443"}[scheme]
	if port == "" {
		return "", fmt.Errorf("scheme %s is not http or https", quote(scheme))
	}
	host := authority
	if i := strings.LastIndexByte(authority, ':'); i >= 0 && !strings.Contains(authority[i:], "]") {
		host, port = authority[:i], authority[i+1:]
		if port == "" || strings.Trim(port, "0123456789") != "" {
			return "", fmt.Errorf("port %s is not a number", quote(port))
		}
		port = strings.TrimLeft(port, "0")
	}
	if host == "" {
		return "", errors.New("no host")
	}
	return scheme + "://" + strings.ToLower(host) + ":" + port, nil
}

// authorization renders a token as its header: v2 tokens (nbt_…) as Bearer,
// others as Token. The token itself never appears in the error.
func authorization(token string) (string, error) {
	if scheme, _, found := strings.Cut(token, " "); found && (strings.EqualFold(scheme, "Token") || strings.EqualFold(scheme, "Bearer")) {
		return "", fmt.Errorf("the token starts with %s: set it without the prefix, which the bridge adds (Bearer for nbt_ tokens, Token for v1)", quote(scheme+" "))
	}
	if hasControl(token) || strings.Contains(token, " ") {
		return "", errors.New("the token contains a control character, space, CR, LF or NUL; set it without them")
	}
	if key, secret, _ := strings.Cut(strings.TrimPrefix(token, "nbt_"), "."); strings.HasPrefix(token, "nbt_") {
		if key == "" || secret == "" {
			return "", errors.New("a v2 token is nbt_<key>.<secret>; set the whole token, or NETBOX_TOKEN_KEY and NETBOX_TOKEN_SECRET")
		}
		return "Bearer " + token, nil
	}
	return "Token " + token, nil
}

// Transport errors that callers tell apart.
var (
	errTooLarge = errors.New("body exceeds its size limit")
	errBudget   = errors.New("discovery bodies exceed the scan's aggregate limit")
	errBusy     = errors.New("the bridge holds as many bodies in memory as it may at once, for the moment")
)

// requestsInFlight is how many requests one scan keeps in flight at most.
const requestsInFlight = 16

// callsInFlight bounds the tool calls the HTTP front runs at once (SPEC
// §14). Each has at most three requests in flight (root, manifest, branch)
// and one full scan at a time has requestsInFlight: the client keeps a
// connection for each, so a busy service reuses them instead of dialing.
const (
	callsInFlight   = 64
	connectionsKept = 3*callsInFlight + requestsInFlight
)

// client is the one HTTP client of the bridge (SPEC §8): every discovery and
// target request goes through do. It never follows redirects, keeps no cache,
// bounds every body while it streams, and only ever talks to base.
type client struct {
	*config
	http      *http.Client
	userAgent string
	answered  atomic.Bool // NetBox has answered at base: a failure is not its scheme's
	// observe, when set, learns the end of each request: its status (0 for
	// none), the bytes of its body and its duration, for logs and metrics.
	observe func(req request, status, size int, took time.Duration)
}

// environmentProxy picks the proxy for HTTPS requests; tests replace it.
var environmentProxy = http.ProxyFromEnvironment

func newClient(cfg *config) *client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns, tr.MaxIdleConnsPerHost = connectionsKept, connectionsKept
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
	method    string
	path      string        // base-relative, starting with /api/
	query     string        // encoded, without '?'
	body      []byte        // JSON body, nil for none
	header    http.Header   // caller headers of this call
	auth      string        // per-call Authorization, overrides the configured one
	anon      bool          // no Authorization at all (check --plugin's permission probe)
	limit     int           // body size limit
	allowance *atomic.Int64 // a scan's aggregate discovery bytes left, nil for targets
	held      *budget       // the process budget the body is charged to; nil: netboxBodies
}

// response is a response whose body was read within its limit. Its body
// holds a share of the process's budget (netboxBodies, unless the request
// named its own) until release is called.
type response struct {
	status  int
	header  http.Header
	body    []byte
	release func()
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

// do sends one request and reads its body within req.limit. On success the
// caller releases the response once it has used the body.
func (c *client) do(ctx context.Context, req request) (answer *response, err error) {
	if c.observe != nil {
		defer func(start time.Time) {
			status, size := 0, 0
			if answer != nil {
				status, size = answer.status, len(answer.body)
			}
			c.observe(req, status, size, time.Since(start))
		}(time.Now())
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	// Go's transport traces the first header field (Host on HTTP/1.1, the
	// pseudo-header :authority on HTTP/2) before any byte of the request
	// leaves the buffer it is encoded into: until then nothing was sent.
	var sent atomic.Bool
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		WroteHeaderField: func(string, []string) { sent.Store(true) },
	})
	target := c.base + req.path
	if req.query != "" {
		target += "?" + req.query
	}
	var payload io.Reader
	if req.body != nil {
		payload = bytes.NewReader(req.body)
	}
	hr, err := http.NewRequestWithContext(ctx, req.method, target, payload)
	if err != nil {
		return nil, &transportError{err: fmt.Errorf("bad request URL: %w", err)}
	}
	// Without GetBody, Go's transport cannot rewind the body, so it never
	// resends a write: not after an HTTP/2 reset or GOAWAY, not on a dead
	// kept-alive connection (SPEC §11: on the wire at most once).
	hr.GetBody = nil
	maps.Copy(hr.Header, req.header)
	hr.Header.Set("Accept", "application/json")
	hr.Header.Set("User-Agent", c.userAgent)
	if auth := cmp.Or(req.auth, c.auth); auth != "" && !req.anon {
		hr.Header.Set("Authorization", auth)
	}
	if req.body != nil {
		hr.Header.Set("Content-Type", "application/json")
	}
	hr.Header.Set("Cache-Control", "no-cache")
	resp, err := c.http.Do(hr)
	if err != nil {
		return nil, &transportError{err: c.describeNetError(ctx, err), sent: sent.Load()}
	}
	defer resp.Body.Close()
	c.answered.Store(true)
	r := &response{status: resp.StatusCode, header: resp.Header, release: func() {}}
	fail := func(err error) error { return &transportError{err: err, sent: true, resp: r} }
	switch {
	case resp.StatusCode >= 300 && resp.StatusCode < 400:
		return r, fail(fmt.Errorf("redirects are never followed: HTTP %d to %s", resp.StatusCode, quote(clip(resp.Header.Get("Location"), 120))))
	case req.method == http.MethodHead:
		return r, nil
	case resp.ContentLength > int64(req.limit):
		return r, fail(fmt.Errorf("%w: Content-Length %d is more than %d bytes", errTooLarge, resp.ContentLength, req.limit))
	}
	bodies := cmp.Or(req.held, netboxBodies)
	body, held, err := readBounded(resp.Body, req.limit, bodies, req.allowance)
	if err != nil {
		if !errors.Is(err, errTooLarge) && !errors.Is(err, errBudget) && !errors.Is(err, errBusy) {
			err = fmt.Errorf("body could not be read: %v", c.describeNetError(ctx, err))
		}
		return r, fail(err)
	}
	r.body, r.release = body, sync.OnceFunc(func() { bodies.give(held) })
	return r, nil
}

// readBounded reads r to its end, stopping after limit+1 bytes. The
// buffer's memory is charged to process as it grows, never for what was
// only declared; on success the caller gives back held, on failure it is
// given back already. Each byte read is drawn from scan, a scan's
// aggregate allowance, when it is not nil.
func readBounded(r io.Reader, limit int, process *budget, scan *atomic.Int64) (body []byte, held int64, err error) {
	var buf []byte // what it holds of process is always cap(buf)
	defer func() {
		if err != nil {
			process.give(int64(cap(buf)))
		}
	}()
	for {
		if len(buf) == cap(buf) {
			grown := make([]byte, 0, min(max(2*cap(buf), 4<<10), limit+1))
			if !process.take(int64(cap(grown) - cap(buf))) {
				return nil, 0, errBusy
			}
			buf = append(grown, buf...)
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		switch {
		case scan != nil && scan.Add(-int64(n)) < 0:
			return nil, 0, errBudget
		case len(buf) > limit:
			return nil, 0, fmt.Errorf("%w: more than %d bytes", errTooLarge, limit)
		case err == io.EOF:
			return buf, int64(cap(buf)), nil
		case err != nil:
			return nil, 0, err
		}
	}
}

// describeNetError names a timeout as one, drops the URL that Go's errors
// repeat, and says what to set for the usual TLS mistakes: a scheme only
// while NetBox has never answered at base (SPEC §9, advice where the
// evidence points).
func (c *client) describeNetError(ctx context.Context, err error) error {
	if ue, ok := errors.AsType[*url.Error](err); ok {
		err = ue.Err
	}
	_, authority := errors.AsType[x509.UnknownAuthorityError](err)
	_, record := errors.AsType[tls.RecordHeaderError](err)
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return fmt.Errorf("timed out after %v", c.timeout)
	case authority:
		return fmt.Errorf("%w; if NetBox's certificate comes from a private CA, set SSL_CERT_FILE to that CA's certificate (NETBOX_SSL_VERIFY=0 only as a last resort)", err)
	case c.assumedHTTPS && (record || strings.Contains(err.Error(), "HTTP response to HTTPS client")):
		return fmt.Errorf("%w; NETBOX_URL has no scheme, so https:// was assumed: if NetBox speaks plain HTTP, set NETBOX_URL=http://…", err)
	case strings.HasPrefix(c.base, "http://") && !c.answered.Load() && (errors.Is(err, syscall.ECONNRESET) || errors.Is(err, io.EOF) || strings.Contains(err.Error(), "malformed HTTP")):
		return fmt.Errorf("%w; NetBox may speak TLS there: try NETBOX_URL=https://…", err)
	}
	return err
}

// netboxBodies bounds the NetBox bodies the process holds at once (SPEC
// §11): every body is charged as its bytes arrive and released once used,
// so a NetBox that drips its bodies holds only what has arrived.
var netboxBodies = newBudget(8 << 20)

// budget is a count of bytes that may be held at once, process-wide. take
// never waits: a read that finds the budget spent fails at once, so no
// holder ever waits for more while it holds, and the budget cannot deadlock.
type budget struct {
	size int64
	left atomic.Int64
}

func newBudget(n int64) *budget {
	b := &budget{size: n}
	b.left.Store(n)
	return b
}

func (b *budget) take(n int64) bool {
	if b.left.Add(-n) >= 0 {
		return true
	}
	b.left.Add(n)
	return false
}

func (b *budget) give(n int64) { b.left.Add(n) }
