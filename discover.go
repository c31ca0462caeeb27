package main

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Limits of one discovery scan (SPEC §3). Any of them fails the whole scan.
const (
	scanRootLimit    = 128
	scanToolLimit    = 512
	scanRequestLimit = 257
	scanByteLimit    = 2 << 20
)

// scanDeadline bounds one whole scan; tests shorten it.
var scanDeadline = 30 * time.Second

// fullScans lets one full scan run at a time (SPEC §11). A full scan holds
// up to 2 MiB of descriptors while it runs: with two at once, 32 concurrent
// full scans of a maximal catalog peaked at up to 72 MiB of RSS, with one at
// 51 MiB (TestServeMemoryBounded). The others wait, cancellable, in arrival
// order, as a channel serves its senders.
var fullScans = make(chan struct{}, 1)

// installedPlugins is NetBox's superuser listing, not a plugin.
const installedPlugins = "installed-plugins"

// callOptions are the per-call settings that apply to every request of a
// tool call or scan.
type callOptions struct {
	auth     string // Authorization for this call, "" for the configured one
	authFrom string // where auth came from: "per-call" or "http"
	remote   string // the HTTP caller's address
	peer     string // the HTTP peer, when a trusted proxy forwarded the caller
	header   http.Header
	progress func(done, total int)
}

// catalogTool is a discovered tool.
type catalogTool struct {
	plugin      string
	tool        *tool
	requestPath string // base-relative
}

func (t catalogTool) qualifiedName() string { return t.plugin + "." + t.tool.name }

// scanProblem is one plugin's discovery problem in a full scan.
type scanProblem struct {
	Plugin string `json:"plugin"`
	Code   string `json:"code"`
	Error  string `json:"error"`
}

// catalog is the result of a scan: tools by qualified name, problems by
// plugin; plugin names the plugin of a selected-plugin scan.
type catalog struct {
	plugin   string
	tools    []catalogTool
	problems []scanProblem
	rendered struct { // its result document, rendered once for every call that shares the scan
		sync.Once
		doc []byte
	}
}

// bridgeError is the one error type of discovery and dispatch: a SPEC §9
// code, a message that says what to do, and on which side of the write
// boundary the failure happened.
type bridgeError struct {
	Code       string          `json:"code"`
	Message    string          `json:"message"`
	Plugin     string          `json:"plugin,omitempty"`
	Tool       string          `json:"tool,omitempty"`
	Dispatched bool            `json:"dispatched"`
	Outcome    string          `json:"outcome,omitempty"`
	Status     int             `json:"status,omitempty"`
	Body       json.RawMessage `json:"body,omitempty"`
	cause      error
}

func (e *bridgeError) Error() string { return e.Message }
func (e *bridgeError) Unwrap() error { return e.cause }

// scanLimitError ends the whole scan (SPEC §3 limits, fail closed).
type scanLimitError struct{ msg string }

func (e *scanLimitError) Error() string { return e.msg }

// httpStatusError is a discovery document that was not 200 OK.
type httpStatusError struct {
	path   string // base-relative
	url    string // as requested
	status int
	detail string // the DRF detail and a hint, or ""
}

func (e *httpStatusError) Error() string {
	return fmt.Sprintf("GET %s: HTTP %d%s", e.url, e.status, e.detail)
}

// Discovery failures that callers tell apart.
var (
	errNotAdvertised = errors.New("the plugin root does not advertise an MCP manifest")
	errOtherPlugin   = errors.New("declares plugin")
)

// discoveryError assigns a discovery failure its SPEC §9 code.
func discoveryError(slug string, err error) *bridgeError {
	be := &bridgeError{Code: "discovery_failed", Message: err.Error(), Plugin: slug, cause: err}
	switch hs, _ := errors.AsType[*httpStatusError](err); {
	case errors.Is(err, errNotAdvertised):
		be.Code, be.Message = "not_advertised", fmt.Sprintf("plugin %s: %v", quote(slug), err)
	case hs != nil && hs.status == http.StatusNotFound && hs.path == "/api/plugins/"+slug+"/":
		be.Code, be.Message = "plugin_not_found", fmt.Sprintf("NetBox has no API root for plugin %s (%v)", quote(slug), err)
	}
	return be
}

// discovery is the state one scan shares across its concurrent requests.
type discovery struct {
	c         *client
	opts      callOptions
	allowance atomic.Int64 // aggregate body bytes left
	requests  atomic.Int32 // requests made
	inFlight  chan struct{}
	stop      context.CancelCauseFunc
}

// newDiscovery starts a scan: its context ends at the scan deadline, or at
// once when a limit breaks, which stops every request still outstanding.
func (c *client) newDiscovery(ctx context.Context, opts callOptions) (*discovery, context.Context, context.CancelFunc) {
	ctx, stop := context.WithCancelCause(ctx)
	ctx, cancel := context.WithTimeoutCause(ctx, scanDeadline, &scanLimitError{fmt.Sprintf("the scan took longer than %v", scanDeadline)})
	d := &discovery{c: c, opts: opts, inFlight: make(chan struct{}, requestsInFlight), stop: stop}
	d.allowance.Store(scanByteLimit)
	return d, ctx, func() { cancel(); stop(nil) }
}

// fail ends the scan with a broken limit.
func (d *discovery) fail(msg string) error {
	err := &scanLimitError{msg}
	d.stop(err)
	return err
}

// ended is why the scan's context ended: a broken limit, the deadline, or
// the caller's cancellation.
func ended(ctx context.Context) error {
	if limit, ok := errors.AsType[*scanLimitError](context.Cause(ctx)); ok {
		return limit
	}
	return &scanLimitError{"the scan was cancelled"}
}

// fetch GETs one discovery document (its path may carry a query) within
// the scan's limits and, when the status is 200, hands its body to use
// before releasing it.
func (d *discovery) fetch(ctx context.Context, path string, limit int, use func([]byte) error) error {
	if d.requests.Add(1) > scanRequestLimit {
		return d.fail(fmt.Sprintf("the scan needs more than %d discovery requests", scanRequestLimit))
	}
	select {
	case d.inFlight <- struct{}{}:
	case <-ctx.Done():
		return ended(ctx)
	}
	path, query, _ := strings.Cut(path, "?")
	resp, err := d.c.do(ctx, request{method: http.MethodGet, path: path, query: query, header: d.opts.header,
		auth: d.opts.auth, limit: limit, allowance: &d.allowance})
	<-d.inFlight
	switch {
	case ctx.Err() != nil:
		return ended(ctx)
	case errors.Is(err, errBudget):
		return d.fail(fmt.Sprintf("GET %s: %v (%d bytes)", path, errBudget, scanByteLimit))
	case err != nil:
		return fmt.Errorf("GET %s: %w", d.c.base+path, err)
	}
	defer resp.release()
	if resp.status != http.StatusOK {
		body, _ := decode(resp.body, instanceLimits)
		e := &httpStatusError{path, d.c.base + path, resp.status, detail(body)}
		switch refused := resp.status == http.StatusUnauthorized || resp.status == http.StatusForbidden; { // what to do about the token
		case refused && d.opts.auth == "" && d.c.auth == "":
			e.detail += "; no token was sent: set NETBOX_TOKEN (or NETBOX_TOKEN_KEY and NETBOX_TOKEN_SECRET, or a netbox-sdk profile)"
		case refused && path == branchesPath: // the lookup, not the plugin's reads (SPEC §16)
			e.detail += "; NetBox refused " + d.c.describeToken(d.opts.auth, d.opts.authFrom) + " a view of its branches: a human must grant it NetBox's view permission on branches (netbox_branching.view_branch), or set another token"
		case refused:
			e.detail += "; NetBox refused " + d.c.describeToken(d.opts.auth, d.opts.authFrom) + ": check that it is valid, active and allowed to read plugins, or set another"
		case resp.status == http.StatusNotFound && path == "/api/plugins/":
			e.detail += "; is NETBOX_URL the NetBox base URL, without /api, and with the path prefix NetBox is served under?"
		case resp.status == http.StatusNotFound && path == branchesPath:
			e.detail += "; is the NetBox Branching plugin installed?"
		}
		return e
	}
	return use(resp.body)
}

// detail renders the DRF {"detail": …} of an error body, if it has one.
func detail(body value) string {
	if d, ok := body.get("detail"); ok && d.kind == kindString {
		return ": " + quote(clip(d.s, clipLimit))
	}
	return ""
}

// scanFlight is one full scan and the calls that wait for it (SPEC §11):
// calls with the same credential and caller headers share it, coalesced,
// not cached. It runs until it ends or the last of them gives up.
type scanFlight struct {
	done     chan struct{} // closed once cat and err are set
	cat      *catalog
	err      error
	stop     context.CancelFunc
	watchers map[*callOptions]func(done, total int) // the waiting calls and their progress, under the flights lock
}

// flights are the full scans under way, by the client and who asks.
var flights = struct {
	sync.Mutex
	m map[flightKey]*scanFlight
}{m: map[flightKey]*scanFlight{}}

type flightKey struct {
	c   *client
	who string // the credential, its source and the caller headers
}

// scanAll discovers every participating plugin (SPEC §3), or waits for an
// identical scan under way.
func (c *client) scanAll(ctx context.Context, opts callOptions) (*catalog, error) {
	var who strings.Builder
	who.WriteString(cmp.Or(opts.auth, c.auth) + "\n" + opts.authFrom + "\n")
	opts.header.Write(&who) // in sorted order
	key := flightKey{c, who.String()}
	flights.Lock()
	f := flights.m[key]
	if f == nil {
		fctx, stop := context.WithCancel(context.WithoutCancel(ctx))
		f = &scanFlight{done: make(chan struct{}), stop: stop, watchers: map[*callOptions]func(int, int){}}
		flights.m[key] = f
		shared := opts
		shared.progress = f.report
		go func() {
			f.cat, f.err = c.scan(fctx, shared)
			f.leave(key, nil)
			close(f.done)
		}()
	}
	f.watchers[&opts] = opts.progress
	flights.Unlock()
	select {
	case <-f.done:
		return f.cat, f.err
	case <-ctx.Done():
		f.leave(key, &opts)
		return nil, discoveryError("", &scanLimitError{"the scan was cancelled"})
	}
}

// leave forgets a call that gave up, or with nil the whole flight once it
// ended; the last call to give up stops the scan.
func (f *scanFlight) leave(key flightKey, call *callOptions) {
	flights.Lock()
	defer flights.Unlock()
	delete(f.watchers, call)
	if call == nil || len(f.watchers) == 0 {
		f.stop()
		if flights.m[key] == f {
			delete(flights.m, key)
		}
	}
}

// report tells every waiting call how far the scan is; each call's progress
// returns at once.
func (f *scanFlight) report(done, total int) {
	flights.Lock()
	defer flights.Unlock()
	for _, progress := range f.watchers {
		if progress != nil {
			progress(done, total)
		}
	}
}

// scan is one full scan: the plugin list, then the roots and manifests
// concurrently. One plugin's problem hides nothing else; a broken limit
// fails the whole scan.
func (c *client) scan(ctx context.Context, opts callOptions) (*catalog, error) {
	select {
	case fullScans <- struct{}{}:
		defer func() { <-fullScans }()
	case <-ctx.Done():
		return nil, discoveryError("", &scanLimitError{"the scan was cancelled while it waited for another to finish"})
	}
	d, ctx, cancel := c.newDiscovery(ctx, opts)
	defer cancel()
	cat := &catalog{}
	var slugs []string
	err := d.fetch(ctx, "/api/plugins/", rootLimits.bytes, func(body []byte) (err error) {
		slugs, cat.problems, err = c.pluginSlugs(body)
		return err
	})
	if err != nil {
		return nil, discoveryError("", err)
	}
	var mu sync.Mutex // guards cat while the workers fill it
	var wg sync.WaitGroup
	var next, done atomic.Int32
	// A few workers take the plugins in turn: a goroutine's stack grows
	// while it parses a manifest, so 128 fresh ones would each pay for that.
	// Twice the requests in flight keep every slot busy while some parse.
	// Each slug adds at most one problem, so the stable sort by plugin
	// leaves them in the same order whichever worker finishes first.
	for range min(len(slugs), 2*requestsInFlight) {
		wg.Go(func() {
			for i := int(next.Add(1)) - 1; i < len(slugs); i = int(next.Add(1)) - 1 {
				var m *manifest
				err := d.advertises(ctx, slugs[i])
				if err == nil {
					m, err = d.manifest(ctx, slugs[i], true) // descriptors only: its tools are never dispatched
				}
				mu.Lock()
				switch {
				case err == nil:
					cat.add(slugs[i], m)
				case !errors.Is(err, errNotAdvertised):
					be := discoveryError(slugs[i], err)
					cat.problems = append(cat.problems, scanProblem{slugs[i], be.Code, be.Message})
				}
				mu.Unlock()
				opts.progress(int(done.Add(1)), len(slugs))
			}
		})
	}
	wg.Wait()
	if ctx.Err() != nil {
		return nil, discoveryError("", ended(ctx))
	}
	if len(cat.tools) > scanToolLimit {
		return nil, discoveryError("", fmt.Errorf("the plugins advertise %d tools, more than %d", len(cat.tools), scanToolLimit))
	}
	cat.sort()
	return cat, nil
}

// pluginSlugs reads the plugin list: label → link. Each link only names a
// slug (SPEC §3); a bad entry, or a slug listed twice with different links,
// is a problem of its own. Every entry but NetBox's own listing counts
// against scanRootLimit, valid or not, before any becomes a problem: a
// hostile list fails the scan instead of turning into thousands of them.
func (c *client) pluginSlugs(body []byte) ([]string, []scanProblem, error) {
	list, err := decode(body, rootLimits)
	roots := slices.DeleteFunc(list.obj, func(m member) bool { return m.key == installedPlugins }) // list is this call's own
	switch {
	case err != nil:
		return nil, nil, fmt.Errorf("GET /api/plugins/: %w", err)
	case list.kind != kindObject:
		return nil, nil, errors.New("GET /api/plugins/: the plugin list is not an object")
	case len(roots) > scanRootLimit:
		return nil, nil, fmt.Errorf("NetBox lists %d plugin roots, more than %d", len(roots), scanRootLimit)
	}
	links := map[string]string{} // slug → its link, "" once it is a problem
	var slugs []string
	var ps []scanProblem
	for _, m := range roots {
		slug, err := c.pluginRoot(m.val)
		prev, listed := links[slug]
		switch {
		case err != nil:
			ps = append(ps, scanProblem{clip(m.key, clipLimit), "discovery_failed", fmt.Sprintf("plugin list entry %s: %v", quote(m.key), err)})
		case !listed:
			links[slug] = m.val.s
			slugs = append(slugs, slug)
		case prev != "" && prev != m.val.s:
			ps = append(ps, scanProblem{slug, "discovery_failed", fmt.Sprintf("plugin %s is listed twice with different links", quote(slug))})
			links[slug] = ""
		}
	}
	return slices.DeleteFunc(slugs, func(s string) bool { return links[s] == "" }), ps, nil
}

func (cat *catalog) add(slug string, m *manifest) {
	for _, t := range m.tools {
		cat.tools = append(cat.tools, catalogTool{slug, t, "/api/plugins/" + slug + "/" + t.path})
	}
}

func (cat *catalog) sort() {
	// By qualified name without building the names: slugs and tool names
	// are at most 64 bytes.
	slices.SortFunc(cat.tools, func(a, b catalogTool) int {
		var x, y [160]byte
		return bytes.Compare(append(append(append(x[:0], a.plugin...), '.'), a.tool.name...),
			append(append(append(y[:0], b.plugin...), '.'), b.tool.name...))
	})
	slices.SortStableFunc(cat.problems, func(a, b scanProblem) int { return strings.Compare(a.Plugin, b.Plugin) })
}

// advertises fetches the root of slug and reads its mcp member: nil when it
// advertises the manifest of slug, errNotAdvertised when the plugin does not
// participate (no member, or null).
func (d *discovery) advertises(ctx context.Context, slug string) error {
	path := "/api/plugins/" + slug + "/"
	return d.fetch(ctx, path, rootLimits.bytes, func(body []byte) error {
		return remember("root "+slug+" at "+d.c.origin+d.c.prefix, body, 2*len(body), func() error { return d.c.advertisement(slug, path, body) })
	})
}

// advertisement reads the plugin root of slug, at path, and its mcp member
// (SPEC §3): nil when it advertises the manifest of slug, errNotAdvertised
// when the plugin does not take part.
func (c *client) advertisement(slug, path string, body []byte) error {
	root, err := decode(body, rootLimits)
	ad, found := root.get("mcp") // a value that failed or is no object has no members
	version, _ := ad.get("schema_version")
	link, _ := ad.get("manifest")
	switch {
	case err != nil:
		return fmt.Errorf("GET %s: %w", path, err)
	case root.kind != kindObject:
		return fmt.Errorf("GET %s: the plugin root is not an object", path)
	case !found || ad.kind == kindNull:
		return errNotAdvertised
	case ad.kind != kindObject || len(ad.obj) != 2 || version.kind != kindString || version.s != "1" || link.kind != kindString:
		return fmt.Errorf(`plugin %s: invalid mcp advertisement: must be exactly {"schema_version": "1", "manifest": "<link>"}`, quote(slug))
	}
	linked, err := c.resolveLink(link.s, true)
	if err == nil && linked != path+"mcp/" {
		err = fmt.Errorf("manifest link %s is not %smcp/", quote(link.s), path)
	}
	if err != nil {
		return fmt.Errorf("plugin %s: invalid mcp advertisement: %v", quote(slug), err)
	}
	return nil
}

// scanOne discovers the selected plugin and fails closed on any problem.
func (c *client) scanOne(ctx context.Context, slug string, opts callOptions) (*catalog, error) {
	m, rootErr, manifestErr := c.fetchSelected(ctx, slug, opts)
	if err := cmp.Or(rootErr, manifestErr); err != nil {
		return nil, err
	}
	cat := &catalog{plugin: slug}
	cat.add(slug, m)
	cat.sort()
	return cat, nil
}

// fetchSelected fetches the root and the manifest of the selected plugin at
// once, one round trip (SPEC §3), and checks each: the manifest is used only
// when the root advertises exactly it.
func (c *client) fetchSelected(ctx context.Context, slug string, opts callOptions) (m *manifest, rootErr, manifestErr error) {
	if !slugPattern.MatchString(slug) {
		return nil, &bridgeError{Code: "invalid_request", Message: fmt.Sprintf("plugin %s is not a plugin slug (%s)", quote(slug), slugPattern)}, nil
	}
	d, ctx, cancel := c.newDiscovery(ctx, opts)
	defer cancel()
	var wg sync.WaitGroup
	wg.Go(func() { m, manifestErr = d.manifest(ctx, slug, false) })
	err := d.advertises(ctx, slug)
	if err != nil && !errors.Is(err, errNotAdvertised) {
		cancel() // the manifest is of no use now
	}
	wg.Wait()
	// A plugin that switches its bridge off may say why (Proxbox: 503).
	if hs, ok := errors.AsType[*httpStatusError](manifestErr); ok && errors.Is(err, errNotAdvertised) && hs.detail != "" {
		err = fmt.Errorf("%w; its manifest URL answered HTTP %d%s", errNotAdvertised, hs.status, hs.detail)
	}
	if err != nil {
		return nil, discoveryError(slug, err), nil
	}
	if manifestErr != nil {
		return nil, nil, discoveryError(slug, manifestErr)
	}
	return m, nil, nil
}

// manifestError is a manifest that breaks rules of SPEC §4 and §5, with
// every problem.
type manifestError struct {
	path string
	ps   problems
}

func (e *manifestError) Error() string {
	msg := fmt.Sprintf("manifest %s: %v", e.path, &e.ps[0])
	if len(e.ps) > 1 {
		msg += fmt.Sprintf(" (and %d more problems; 'netbox-plugin-bridge check' lists them)", len(e.ps)-1)
	}
	return msg
}

// parsedManifest is what parseManifest makes of a body: the manifest, or
// its problems.
type parsedManifest struct {
	m  *manifest
	ps problems
}

// manifest fetches and checks the manifest of slug; light, for a full scan,
// without its compiled schemas. A body seen before costs a hash (memo).
func (d *discovery) manifest(ctx context.Context, slug string, light bool) (m *manifest, err error) {
	path := "/api/plugins/" + slug + "/mcp/"
	err = d.fetch(ctx, path, manifestLimits.bytes, func(body []byte) error {
		scope, charge := "manifest", 24*len(body) // a compiled schema of dense enums costs about 22 times its text
		if light {
			scope, charge = "manifest, light", 2*len(body)
		}
		parsed := remember(scope, body, charge, func() parsedManifest {
			m, ps := parseManifest(body)
			if light && m != nil {
				m = m.withoutSchemas()
			}
			return parsedManifest{m, ps}
		})
		if m = parsed.m; len(parsed.ps) > 0 {
			return &manifestError{path, parsed.ps}
		}
		if m.plugin != slug {
			return fmt.Errorf("manifest %s %w %s, not %s", path, errOtherPlugin, quote(m.plugin), quote(slug))
		}
		return nil
	})
	return m, err
}

// ---- the memo (SPEC §10) ----

// memo is what discovery computed from bodies it has seen, so that a body
// byte for byte the same as one before costs a hash, not a parse. Every
// body is still fetched: only the computation over identical bytes is
// shared. A value is keyed by the SHA-256 of its body and of what else it
// depends on, and is never changed once stored. The memo is bounded in
// entries and in what its values are charged (an estimate of the memory
// they hold): a full memo is emptied, so a NetBox that serves new bytes
// every time costs a parse every time, and no more memory. Its lock guards
// values and charged.
var memo = struct {
	sync.Mutex
	values  map[[sha256.Size]byte]any
	charged int
}{values: map[[sha256.Size]byte]any{}}

// The memo's bounds: with full manifests charged 24 times their bytes (a
// compiled schema of dense enums costs about 22), 8 MiB keeps any one
// plugin's manifest and the light manifests of a maximal catalog.
const (
	memoEntries = 512
	memoCharge  = 8 << 20
)

// remember returns compute's value for body in scope, computed only when
// the memo does not hold it; charge is what the value is charged.
func remember[T any](scope string, body []byte, charge int, compute func() T) T {
	h := sha256.New()
	h.Write([]byte(scope + "\x00"))
	h.Write(body)
	var key [sha256.Size]byte
	h.Sum(key[:0])
	memo.Lock()
	v, found := memo.values[key]
	memo.Unlock()
	if found {
		t, _ := v.(T) // a nil error is stored as nil
		return t
	}
	t := compute()
	memo.Lock()
	defer memo.Unlock()
	if len(memo.values) >= memoEntries || memo.charged+charge > memoCharge {
		clear(memo.values)
		memo.charged = 0
	}
	memo.values[key], memo.charged = t, memo.charged+charge
	return t
}

// pluginRoot checks one link of the plugin list and returns its slug. The
// link only names the slug: its origin is not checked, since the bridge
// requests the configured origin anyway.
func (c *client) pluginRoot(link value) (string, error) {
	if link.kind != kindString {
		return "", errors.New("the link is not a string")
	}
	path, err := c.resolveLink(link.s, false)
	if err != nil {
		return "", err
	}
	// path starts and ends with a slash, which slugPattern rejects: only
	// /api/plugins/<slug>/ leaves a slug once both are trimmed.
	slug := strings.TrimSuffix(strings.TrimPrefix(path, "/api/plugins/"), "/")
	if !slugPattern.MatchString(slug) {
		return "", fmt.Errorf("link %s is not a plugin API root /api/plugins/<slug>/", quote(link.s))
	}
	return slug, nil
}

// resolveLink checks a link that NetBox returned (absolute or root-relative)
// and returns its base-relative path (SPEC §3): same origin when sameOrigin,
// no escapes, credentials, query or fragment, normalized, the configured
// prefix stripped.
func (c *client) resolveLink(link string, sameOrigin bool) (string, error) {
	shown := quote(link)
	for i := 0; i < len(link); i++ {
		switch ch := link[i]; {
		case ch == '%' || ch == '\\':
			return "", fmt.Errorf("link %s contains %q", shown, ch)
		case ch == '?' || ch == '#':
			return "", fmt.Errorf("link %s has a query or fragment", shown)
		case ch < 0x21 || ch >= 0x7f:
			return "", fmt.Errorf("link %s contains a control, space or non-ASCII character", shown)
		}
	}
	path := link
	if scheme, rest, ok := strings.Cut(link, "://"); ok {
		authority, p, _ := strings.Cut(rest, "/")
		switch origin, err := originOf(scheme, authority); {
		case strings.Contains(authority, "@"):
			return "", fmt.Errorf("link %s carries credentials", shown)
		case err != nil:
			return "", fmt.Errorf("link %s: %v", shown, err)
		case sameOrigin && origin != c.origin:
			return "", fmt.Errorf("link %s has origin %s, but NetBox is configured as %s; behind a reverse proxy, "+
				"check that it forwards X-Forwarded-Proto and Host", shown, clip(origin, clipLimit), c.origin)
		}
		path = "/" + p
	}
	if c.prefix != "" && strings.HasPrefix(path, c.prefix+"/api/") {
		path = path[len(c.prefix):]
	}
	switch {
	case strings.HasPrefix(path, "//"):
		return "", fmt.Errorf("link %s has an empty segment", shown)
	case !strings.HasPrefix(path, "/"):
		return "", fmt.Errorf("link %s is neither absolute nor root-relative", shown)
	case !strings.HasPrefix(path, "/api/") || !strings.HasSuffix(path, "/"):
		return "", fmt.Errorf("link %s is not a normalized /api/…/ path", shown)
	case badSegment(path[1 : len(path)-1]):
		return "", fmt.Errorf("link %s has an empty, . or .. segment", shown)
	}
	return path, nil
}

// branchAndDiscover runs discover while it looks the configured branch up, so that
// the lookup costs no round trip (SPEC §16); with no branch configured it
// only runs discover.
func (c *client) branchAndDiscover(ctx context.Context, opts callOptions, discover func()) (schemaID string, err error) {
	var looked sync.WaitGroup
	if c.branch != "" {
		looked.Go(func() { schemaID, err = c.branchSchema(ctx, opts) })
	}
	discover()
	looked.Wait()
	return schemaID, err
}

// branchesPath is where NetBox Branching lists its branches (SPEC §16).
const branchesPath = "/api/plugins/branching/branches/"

// schemaIDPattern is the form of a branch's schema_id, sent as a header.
var schemaIDPattern = regexp.MustCompile(`^[a-z0-9]{1,64}$`)

// branchSchema looks the configured branch up by name and returns its
// schema_id, or branch_unavailable when it does not exist or is not ready.
func (c *client) branchSchema(ctx context.Context, opts callOptions) (string, error) {
	d, ctx, cancel := c.newDiscovery(ctx, opts)
	defer cancel()
	var id value
	err := d.fetch(ctx, branchesPath+"?"+url.Values{"name": {c.branch}}.Encode(), rootLimits.bytes, func(body []byte) error {
		doc, err := decode(body, rootLimits)
		results, _ := doc.get("results")
		i := slices.IndexFunc(results.arr, func(br value) bool { name, _ := br.get("name"); return name.s == c.branch })
		switch {
		case err != nil:
			return err
		case i < 0:
			return errors.New("NetBox has no branch of that name: create it in NetBox, or set another --branch (NETBOX_BRANCH)")
		}
		status, _ := results.arr[i].get("status")
		if v, ok := status.get("value"); ok { // a choice: {"value": "ready", "label": "Ready"}
			status = v
		}
		switch id, _ = results.arr[i].get("schema_id"); {
		case slices.Contains([]string{"merged", "reverted", "archived", "failed"}, status.s):
			return fmt.Errorf("it is %s and will never be ready again: a human must create or name another branch with --branch (NETBOX_BRANCH)", quote(status.s))
		case status.s != "ready":
			return fmt.Errorf("it is %s, not ready: wait until NetBox has finished with it (provisioning or syncing), then call again", quote(clip(status.s, 40)))
		case id.kind != kindString || !schemaIDPattern.MatchString(id.s):
			return errors.New("its schema_id is not a short lower-case identifier")
		}
		return nil
	})
	if err != nil {
		return "", &bridgeError{Code: "branch_unavailable", Message: fmt.Sprintf("NetBox branch %s: %v", quote(c.branch), err)}
	}
	return strings.Clone(id.s), nil
}
