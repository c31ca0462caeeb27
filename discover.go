package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
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
	scanConcurrency  = 16 // requests in flight
)

// scanDeadline bounds one whole scan; tests shorten it.
var scanDeadline = 30 * time.Second

// installedPlugins is NetBox's superuser listing, not a plugin.
const installedPlugins = "installed-plugins"

// callOptions are the per-call settings that apply to every request of a
// tool call or scan.
type callOptions struct {
	auth     string      // Authorization for this call, "" for the configured one
	header   http.Header // caller headers
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

// catalog is the result of a scan: tools by qualified name, problems by plugin.
type catalog struct {
	tools    []catalogTool
	problems []scanProblem
}

// scan is the state one discovery shares across its concurrent requests.
type scan struct {
	c        *client
	opts     callOptions
	budget   atomic.Int64 // aggregate body bytes left
	requests atomic.Int32 // requests made
	inFlight chan struct{}
	deadline context.Context
}

func (c *client) newScan(ctx context.Context, opts callOptions) (*scan, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(ctx, scanDeadline)
	s := &scan{c: c, opts: opts, deadline: ctx, inFlight: make(chan struct{}, scanConcurrency)}
	s.budget.Store(scanByteLimit)
	return s, cancel
}

// scanLimitError ends the whole scan (SPEC §3 limits, fail closed).
type scanLimitError struct{ msg string }

func (e *scanLimitError) Error() string { return e.msg }

// get fetches one discovery document and decodes it within lim.
func (s *scan) get(path string, lim limits) (value, error) {
	data, err := s.fetch(path, lim.bytes)
	if err != nil {
		return value{}, err
	}
	v, err := decode(data, lim)
	if err != nil {
		return value{}, fmt.Errorf("GET %s: %w", path, err)
	}
	return v, nil
}

// fetch GETs one discovery document within the scan's limits and returns
// its body when the status is 200.
func (s *scan) fetch(path string, limit int) ([]byte, error) {
	if s.requests.Add(1) > scanRequestLimit {
		return nil, &scanLimitError{fmt.Sprintf("the scan needs more than %d discovery requests", scanRequestLimit)}
	}
	select {
	case s.inFlight <- struct{}{}:
	case <-s.deadline.Done():
		return nil, s.deadlineError()
	}
	resp, err := s.c.do(s.deadline, request{method: http.MethodGet, path: path, header: s.opts.header,
		auth: s.opts.auth, limit: limit, budget: &s.budget})
	<-s.inFlight
	switch {
	case s.deadline.Err() != nil:
		return nil, s.deadlineError()
	case errors.Is(err, errBudget):
		return nil, &scanLimitError{fmt.Sprintf("GET %s: %v (%d bytes)", path, errBudget, scanByteLimit)}
	case err != nil:
		return nil, fmt.Errorf("GET %s: %w", path, err)
	case resp.status != http.StatusOK:
		body, _ := decode(resp.body, instanceLimits)
		return nil, &httpStatusError{path, resp.status, detail(body)}
	}
	return resp.body, nil
}

func (s *scan) deadlineError() error {
	if errors.Is(s.deadline.Err(), context.Canceled) {
		return &scanLimitError{"the scan was cancelled"}
	}
	return &scanLimitError{fmt.Sprintf("the scan took longer than %v", scanDeadline)}
}

// httpStatusError is a discovery document that was not 200 OK.
type httpStatusError struct {
	path   string
	status int
	detail string
}

func (e *httpStatusError) Error() string {
	return fmt.Sprintf("GET %s: HTTP %d%s", e.path, e.status, e.detail)
}

// detail renders the DRF {"detail": …} of an error body, if it has one.
func detail(body value) string {
	if d, ok := body.get("detail"); ok && d.kind == kindString {
		return ": " + quote(clip(d.s, clipLimit))
	}
	return ""
}

// scanAll discovers every participating plugin. One plugin's problem hides
// nothing else; a broken limit fails the whole scan.
func (c *client) scanAll(ctx context.Context, opts callOptions) (*catalog, error) {
	s, cancel := c.newScan(ctx, opts)
	defer cancel()
	list, err := s.get("/api/plugins/", rootLimits)
	if err != nil {
		return nil, discoveryError("", err)
	}
	if list.kind != kindObject {
		return nil, &bridgeError{Code: "discovery_failed", Message: "GET /api/plugins/: the plugin list is not an object"}
	}
	cat := &catalog{}
	links := map[string]string{} // slug → root path
	var slugs []string
	for _, m := range list.obj {
		if m.key == installedPlugins {
			continue
		}
		slug, err := c.pluginRoot(m.val)
		if err != nil {
			cat.problems = append(cat.problems, scanProblem{m.key, "discovery_failed", fmt.Sprintf("plugin list entry %s: %v", quote(m.key), err)})
			continue
		}
		if prev, dup := links[slug]; dup {
			if prev != "" && prev != m.val.s { // "" is already excluded and reported
				cat.problems = append(cat.problems, scanProblem{slug, "discovery_failed", fmt.Sprintf("plugin %s is listed twice with different links", quote(slug))})
				links[slug] = "" // excluded
			}
			continue
		}
		links[slug] = m.val.s
		slugs = append(slugs, slug)
	}
	slugs = slices.DeleteFunc(slugs, func(s string) bool { return links[s] == "" })
	if len(slugs) > scanRootLimit {
		return nil, &bridgeError{Code: "discovery_failed", Message: fmt.Sprintf("NetBox lists %d plugin roots, more than %d", len(slugs), scanRootLimit)}
	}
	results := make([]pluginResult, len(slugs))
	var wg sync.WaitGroup
	var mu sync.Mutex
	done := 0
	for i, slug := range slugs {
		wg.Go(func() {
			results[i] = s.plugin(slug)
			if opts.progress != nil {
				mu.Lock()
				done++
				opts.progress(done, len(slugs))
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	total := 0
	for _, r := range results {
		var limit *scanLimitError
		if errors.As(r.err, &limit) {
			return nil, discoveryError("", r.err)
		}
		switch {
		case r.err != nil:
			be := discoveryError(r.slug, r.err)
			cat.problems = append(cat.problems, scanProblem{r.slug, be.Code, be.Message})
		case r.manifest != nil:
			total += len(r.manifest.tools)
			cat.add(r.slug, r.manifest)
		}
	}
	if total > scanToolLimit {
		return nil, &bridgeError{Code: "discovery_failed", Message: fmt.Sprintf("the plugins advertise %d tools, more than %d", total, scanToolLimit)}
	}
	cat.sort()
	return cat, nil
}

func (cat *catalog) add(slug string, m *manifest) {
	for _, t := range m.tools {
		cat.tools = append(cat.tools, catalogTool{slug, t, "/api/plugins/" + slug + "/" + t.path})
	}
}

func (cat *catalog) sort() {
	slices.SortFunc(cat.tools, func(a, b catalogTool) int { return strings.Compare(a.qualifiedName(), b.qualifiedName()) })
	slices.SortStableFunc(cat.problems, func(a, b scanProblem) int { return strings.Compare(a.Plugin, b.Plugin) })
}

// pluginResult is the outcome of one plugin's discovery: a manifest, nothing
// (the plugin does not participate), or an error.
type pluginResult struct {
	slug     string
	manifest *manifest
	err      error
}

// plugin fetches one plugin root and, if it advertises, its manifest.
func (s *scan) plugin(slug string) pluginResult {
	advertised, err := s.advertises(slug)
	if err != nil || !advertised {
		return pluginResult{slug, nil, err}
	}
	m, err := s.manifest(slug)
	return pluginResult{slug, m, err}
}

// advertises fetches the root of slug and reads its mcp member.
func (s *scan) advertises(slug string) (bool, error) {
	root, err := s.get("/api/plugins/"+slug+"/", rootLimits)
	if err != nil {
		return false, err
	}
	return s.c.advertisement(root, slug)
}

// errNotAdvertised is a plugin root without an mcp member.
var errNotAdvertised = errors.New("the plugin root does not advertise an MCP manifest")

// scanOne discovers the selected plugin and fails closed on any problem. It
// fetches the root and the manifest concurrently: one round trip.
func (c *client) scanOne(ctx context.Context, slug string, opts callOptions) (*catalog, error) {
	if !slugPattern.MatchString(slug) {
		return nil, &bridgeError{Code: "invalid_request", Message: fmt.Sprintf("plugin %s is not a plugin slug (%s)", quote(slug), slugPattern)}
	}
	s, cancel := c.newScan(ctx, opts)
	defer cancel()
	var m *manifest
	var merr error
	var wg sync.WaitGroup
	wg.Go(func() { m, merr = s.manifest(slug) })
	advertised, err := s.advertises(slug)
	if err == nil && !advertised {
		err = errNotAdvertised
	}
	wg.Wait()
	if err == nil {
		err = merr
	}
	if err != nil {
		return nil, discoveryError(slug, err)
	}
	cat := &catalog{}
	cat.add(slug, m)
	cat.sort()
	return cat, nil
}

// discoveryError maps a discovery failure to its SPEC §9 code.
func discoveryError(slug string, err error) *bridgeError {
	be := &bridgeError{Code: "discovery_failed", Message: err.Error(), Plugin: slug, cause: err}
	var hs *httpStatusError
	switch {
	case errors.As(err, &be):
		return be
	case errors.Is(err, errNotAdvertised):
		be.Code = "not_advertised"
		be.Message = fmt.Sprintf("plugin %s: %v", quote(slug), err)
	case errors.As(err, &hs) && hs.status == http.StatusNotFound && slug != "" && hs.path == "/api/plugins/"+slug+"/":
		be.Code = "plugin_not_found"
		be.Message = fmt.Sprintf("NetBox has no API root for plugin %s (%v)", quote(slug), err)
	}
	return be
}

// manifest fetches and checks the manifest of slug.
func (s *scan) manifest(slug string) (*manifest, error) {
	path := "/api/plugins/" + slug + "/mcp/"
	data, err := s.fetch(path, manifestLimits.bytes)
	if err != nil {
		return nil, err
	}
	m, ps := parseManifest(data)
	if len(ps) > 0 {
		msg := ps[0].Error()
		if len(ps) > 1 {
			msg += fmt.Sprintf(" (and %d more problems; 'netbox-plugin-bridge check' lists them)", len(ps)-1)
		}
		return nil, fmt.Errorf("manifest %s: %s", path, msg)
	}
	if m.plugin != slug {
		return nil, fmt.Errorf("manifest %s declares plugin %s, not %s", path, quote(m.plugin), quote(slug))
	}
	return m, nil
}

// pluginRoot checks one link of the plugin list and returns its slug.
func (c *client) pluginRoot(link value) (string, error) {
	if link.kind != kindString {
		return "", errors.New("the link is not a string")
	}
	path, err := c.resolveLink(link.s)
	if err != nil {
		return "", err
	}
	slug, ok := strings.CutPrefix(path, "/api/plugins/")
	slug, ok2 := strings.CutSuffix(slug, "/")
	if !ok || !ok2 || !slugPattern.MatchString(slug) {
		return "", fmt.Errorf("link %s is not a plugin API root /api/plugins/<slug>/", quote(clip(link.s, clipLimit)))
	}
	return slug, nil
}

// advertisement reads the mcp member of a plugin root. It reports false
// when the plugin does not participate (no member, or null).
func (c *client) advertisement(root value, slug string) (bool, error) {
	if root.kind != kindObject {
		return false, fmt.Errorf("GET /api/plugins/%s/: the plugin root is not an object", slug)
	}
	ad, found := root.get("mcp")
	if !found || ad.kind == kindNull {
		return false, nil
	}
	bad := func(format string, args ...any) (bool, error) {
		return false, fmt.Errorf("plugin %s: invalid mcp advertisement: "+format, append([]any{quote(slug)}, args...)...)
	}
	if ad.kind != kindObject || len(ad.obj) != 2 {
		return bad(`must be exactly {"schema_version": "1", "manifest": "<link>"}`)
	}
	version, _ := ad.get("schema_version")
	link, _ := ad.get("manifest")
	if version.kind != kindString || version.s != "1" || link.kind != kindString {
		return bad(`must be exactly {"schema_version": "1", "manifest": "<link>"}`)
	}
	path, err := c.resolveLink(link.s)
	if err != nil {
		return bad("%v", err)
	}
	if want := "/api/plugins/" + slug + "/mcp/"; path != want {
		return bad("manifest link %s is not %s", quote(clip(link.s, clipLimit)), want)
	}
	return true, nil
}

// resolveLink checks a link that NetBox returned (absolute or root-relative)
// and returns its base-relative path (SPEC §3): same origin, no escapes,
// credentials, query or fragment, normalized, the configured prefix stripped.
func (c *client) resolveLink(link string) (string, error) {
	shown := quote(clip(link, clipLimit))
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
		if strings.Contains(authority, "@") {
			return "", fmt.Errorf("link %s carries credentials", shown)
		}
		origin, err := originOf(scheme, authority)
		if err != nil {
			return "", fmt.Errorf("link %s: %v", shown, err)
		}
		if origin != c.origin {
			return "", fmt.Errorf("link %s has origin %s, but NetBox is configured as %s; behind a reverse proxy, "+
				"check that it forwards X-Forwarded-Proto and Host", shown, clip(origin, clipLimit), c.origin)
		}
		path = "/" + p
	}
	switch {
	case strings.HasPrefix(path, "//"):
		return "", fmt.Errorf("link %s has an empty segment", shown)
	case !strings.HasPrefix(path, "/"):
		return "", fmt.Errorf("link %s is neither absolute nor root-relative", shown)
	}
	if c.prefix != "" && strings.HasPrefix(path, c.prefix+"/api/") {
		path = path[len(c.prefix):]
	}
	if !strings.HasPrefix(path, "/api/") || !strings.HasSuffix(path, "/") {
		return "", fmt.Errorf("link %s is not a normalized /api/…/ path", shown)
	}
	if badSegment(path[1 : len(path)-1]) {
		return "", fmt.Errorf("link %s has an empty, . or .. segment", shown)
	}
	return path, nil
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
