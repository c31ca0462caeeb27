package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"
)

// ---- the SPEC's numbers ----

// The bounds of SPEC §3 and §5, written here from the SPEC, never read from
// the implementation's variables: they are the tests' oracle.
const (
	specListBytes     = 1 << 20   // §3: the plugin list and each plugin root
	specManifestBytes = 256 << 10 // §3: one manifest
	specInstanceBytes = 256 << 10 // §5: arguments and target bodies
	specScanBytes     = 2 << 20   // §3: discovery bodies of one scan, in aggregate
	specScanRoots     = 128       // §3: plugin roots of one scan
	specScanTools     = 512       // §3: tools of one scan
	specScanRequests  = 257       // §3: discovery requests of one scan
	specManifestTools = 64        // §3, §4: tools of one manifest
	specSchemaValues  = 2048      // §5: values of one schema
	specClip          = 200       // §4: characters of hostile input a message may echo
	specInFlight      = 16        // §3: discovery requests in flight
)

// ---- a fake NetBox, shared by every test that needs one ----

// fakeToken is the v1 token the fake NetBox accepts by default.
const fakeToken = "0123456789abcdef0123456789abcdef0fake0000"

// fakeNetBox is an httptest server that answers like NetBox: DRF-shaped JSON
// documents, the 403 bodies of the real NetBox for a missing or wrong token
// ("Authentication credentials were not provided.", "Invalid v1 token",
// "Invalid v2 token"), its X-Request-ID and API-Version headers, and an HTML
// 404 page for unknown paths. Documents are templates in which {base}
// becomes the configured base URL (origin and prefix) and {url} the origin.
type fakeNetBox struct {
	t   testing.TB
	srv *httptest.Server
	URL string // origin, http://127.0.0.1:port

	mu       sync.Mutex
	prefix   string // path prefix NetBox is served under: "" or "/netbox"
	token    string // the Authorization value accepted, "" for any
	latency  time.Duration
	chunked  bool // stream documents without Content-Length
	order    []string
	plugins  map[string]*fakePlugin
	extra    []fakeEntry                 // plugin list entries after the plugins
	list     string                      // plugin list document, "" to build it
	handlers map[string]http.HandlerFunc // raw handlers by base-relative path
	pads     map[string]int              // exact body size by base-relative path
	before   func(*http.Request)         // runs on every request, unlocked
	counts   map[string]int              // requests by raw path
	log      []fakeRequest
	inFlight int
	peak     int

	replacer       *strings.Replacer // fills in the templates, for replacerPrefix
	replacerPrefix string
}

// fakePlugin is one plugin; empty fields take the defaults described.
type fakePlugin struct {
	label    string // plugin list label, default the slug
	link     string // plugin list link, default {base}/api/plugins/<slug>/
	root     string // root, default advertising {base}/api/plugins/<slug>/mcp/ if there is a manifest
	manifest string // "" for none (HTML 404)
}

// fakeEntry is a raw plugin list member: label and JSON value.
type fakeEntry struct{ label, raw string }

// fakeRequest is what the fake NetBox saw of one request.
type fakeRequest struct {
	method, path, query string
	header              http.Header
	body                []byte
}

func newFakeNetBox(t testing.TB) *fakeNetBox {
	f := &fakeNetBox{t: t, token: "Token " + fakeToken, plugins: map[string]*fakePlugin{},
		handlers: map[string]http.HandlerFunc{}, pads: map[string]int{}, counts: map[string]int{}}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	f.URL = f.srv.URL
	t.Cleanup(f.srv.Close)
	return f
}

// locked runs fn with the fake's lock held, to change its fields.
func (f *fakeNetBox) locked(fn func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn()
}

// Setters: tests change the fake through these, never through its fields.

func (f *fakeNetBox) setPrefix(p string) { f.locked(func() { f.prefix = p }) }

// setToken sets the Authorization value the fake accepts, "" for any.
func (f *fakeNetBox) setToken(auth string) { f.locked(func() { f.token = auth }) }

// setLatency delays every answer by d.
func (f *fakeNetBox) setLatency(d time.Duration) { f.locked(func() { f.latency = d }) }

// setChunked streams documents without Content-Length when on.
func (f *fakeNetBox) setChunked(on bool) { f.locked(func() { f.chunked = on }) }

// setBefore runs fn on every request, before its answer, without the lock.
func (f *fakeNetBox) setBefore(fn func(*http.Request)) { f.locked(func() { f.before = fn }) }

// setList replaces the plugin list document; "" builds it from the plugins.
func (f *fakeNetBox) setList(doc string) { f.locked(func() { f.list = doc }) }

// resetLog forgets the requests seen so far.
func (f *fakeNetBox) resetLog() {
	f.locked(func() {
		f.log = nil
		clear(f.counts)
	})
}

// base is what NETBOX_URL would be.
func (f *fakeNetBox) base() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.URL + f.prefix
}

// config is the bridge configuration for this NetBox, through normalizeURL.
func (f *fakeNetBox) config() *config {
	base, origin, prefix, err := normalizeURL(f.base())
	if err != nil {
		f.t.Fatal(err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return &config{base: base, origin: origin, prefix: prefix, auth: f.token, timeout: 5 * time.Second}
}

// client is a client of this NetBox; edits change its configuration first.
func (f *fakeNetBox) client(edits ...func(*config)) *client {
	return testClient(f.t, f.config(), edits...)
}

// testClient is newClient of cfg after edits, with its idle connections
// closed at the end.
func testClient(t testing.TB, cfg *config, edits ...func(*config)) *client {
	for _, edit := range edits {
		edit(cfg)
	}
	c := newClient(cfg)
	t.Cleanup(c.http.CloseIdleConnections)
	return c
}

// Configuration edits for client, testClient and rawClient.
func withTimeout(d time.Duration) func(*config) { return func(c *config) { c.timeout = d } }
func insecureTLS(c *config)                     { c.insecure = true }

// waitFor waits at most 10 s for ch to deliver or close.
func waitFor(t testing.TB, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatalf("waited 10 s for %s", what)
	}
}

// untilCancelled holds a handler until the client gives up on its request,
// at most 10 s, and reports whether it did.
func untilCancelled(r *http.Request) bool {
	select {
	case <-r.Context().Done():
		return true
	case <-time.After(10 * time.Second):
		return false
	}
}

// addPlugin adds a plugin that advertises a manifest of tools, or nothing
// when there are none.
func (f *fakeNetBox) addPlugin(slug string, tools ...toolSpec) {
	p := &fakePlugin{}
	if len(tools) > 0 {
		p.manifest = manifestJSON(slug, tools...)
	}
	f.setPlugin(slug, p)
}

func (f *fakeNetBox) setPlugin(slug string, p *fakePlugin) {
	f.locked(func() {
		if f.plugins[slug] == nil {
			f.order = append(f.order, slug)
		}
		f.plugins[slug] = p
	})
}

// plugin changes an added plugin.
func (f *fakeNetBox) plugin(slug string, fn func(*fakePlugin)) {
	f.locked(func() { fn(f.plugins[slug]) })
}

func (f *fakeNetBox) addListEntry(label, raw string) {
	f.locked(func() { f.extra = append(f.extra, fakeEntry{label, raw}) })
}

// handle serves a base-relative path with a raw handler (no token check).
func (f *fakeNetBox) handle(path string, h http.HandlerFunc) {
	f.locked(func() { f.handlers[path] = h })
}

// padTo pads the document at a base-relative path with spaces to n bytes.
func (f *fakeNetBox) padTo(path string, n int) { f.locked(func() { f.pads[path] = n }) }

// requests counts the requests for a base-relative path.
func (f *fakeNetBox) requests(path string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.counts[f.prefix+path]
}

func (f *fakeNetBox) totalRequests() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.log)
}

func (f *fakeNetBox) requestLog() []fakeRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.log)
}

func (f *fakeNetBox) peakInFlight() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.peak
}

func (f *fakeNetBox) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	f.mu.Lock()
	f.counts[r.URL.Path]++
	f.log = append(f.log, fakeRequest{r.Method, r.URL.Path, r.URL.RawQuery, r.Header.Clone(), body})
	f.inFlight++
	f.peak = max(f.peak, f.inFlight)
	rel, inside := strings.CutPrefix(r.URL.Path, f.prefix)
	inside = inside && strings.HasPrefix(rel, "/")
	h, before, latency := f.handlers[rel], f.before, f.latency
	f.mu.Unlock()
	defer f.locked(func() { f.inFlight-- })
	if before != nil {
		before(r)
	}
	if latency > 0 {
		select {
		case <-time.After(latency):
		case <-r.Context().Done():
			return
		}
	}
	if inside && h != nil {
		h(w, r)
		return
	}
	f.mu.Lock()
	doc, found := f.document(rel)
	found = found && inside && r.Method == http.MethodGet
	authorized := f.token == "" || r.Header.Get("Authorization") == f.token
	chunked := f.chunked
	f.mu.Unlock()
	w.Header().Set("X-Request-ID", fmt.Sprintf("%08x-0000-4000-8000-000000000000", f.totalRequests()))
	w.Header().Set("API-Version", "4.7")
	switch auth := r.Header.Get("Authorization"); {
	case !found:
		htmlNotFound(w)
	case !authorized && auth == "":
		writeJSON(w, http.StatusForbidden, `{"detail": "Authentication credentials were not provided."}`, chunked)
	case !authorized && strings.Contains(auth, " nbt_"):
		writeJSON(w, http.StatusForbidden, `{"detail": "Invalid v2 token"}`, chunked)
	case !authorized:
		writeJSON(w, http.StatusForbidden, `{"detail": "Invalid v1 token"}`, chunked)
	default:
		writeJSON(w, http.StatusOK, doc, chunked)
	}
}

// body returns the document the fake serves at a base-relative path.
func (f *fakeNetBox) body(path string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	doc, _ := f.document(path)
	return doc
}

// document renders the document of a base-relative path; f.mu is held.
func (f *fakeNetBox) document(rel string) (string, bool) {
	var doc string
	if rel == "/api/plugins/" {
		doc = f.list
		if doc == "" {
			doc = f.listDocument()
		}
	} else {
		slug, rest, ok := strings.Cut(strings.TrimPrefix(rel, "/api/plugins/"), "/")
		p := f.plugins[slug]
		switch {
		case !strings.HasPrefix(rel, "/api/plugins/") || !ok || p == nil:
			return "", false
		case rest == "" && p.root != "":
			doc = p.root
		case rest == "" && p.manifest != "":
			doc = `{"mcp": {"schema_version": "1", "manifest": "{base}/api/plugins/` + slug + `/mcp/"}, "widgets": "{base}/api/plugins/` + slug + `/widgets/"}`
		case rest == "":
			doc = `{"widgets": "{base}/api/plugins/` + slug + `/widgets/"}`
		case rest == "mcp/" && p.manifest != "":
			doc = p.manifest
		default:
			return "", false
		}
	}
	if f.replacer == nil || f.replacerPrefix != f.prefix {
		f.replacer, f.replacerPrefix = strings.NewReplacer("{base}", f.URL+f.prefix, "{url}", f.URL), f.prefix
	}
	doc = f.replacer.Replace(doc)
	if n, ok := f.pads[rel]; ok {
		if n < len(doc) {
			f.t.Errorf("cannot pad %s of %d bytes to %d", rel, len(doc), n)
		}
		doc += strings.Repeat(" ", max(0, n-len(doc)))
	}
	return doc, true
}

// listDocument is the plugin list in the order the plugins were added.
func (f *fakeNetBox) listDocument() string {
	var b strings.Builder
	b.WriteString("{")
	sep := ""
	entry := func(label, raw string) {
		k, _ := json.Marshal(label)
		fmt.Fprintf(&b, "%s%s: %s", sep, k, raw)
		sep = ", "
	}
	for _, slug := range f.order {
		p := f.plugins[slug]
		link := orDefault(p.link, "{base}/api/plugins/"+slug+"/")
		raw, _ := json.Marshal(link)
		entry(orDefault(p.label, slug), string(raw))
	}
	for _, e := range f.extra {
		entry(e.label, e.raw)
	}
	b.WriteString("}")
	return b.String()
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// writeJSON writes a JSON document with its Content-Length, or chunked.
func writeJSON(w http.ResponseWriter, status int, doc string, chunked bool) {
	w.Header().Set("Content-Type", "application/json")
	if !chunked {
		w.Header().Set("Content-Length", strconv.Itoa(len(doc)))
	}
	w.WriteHeader(status)
	if chunked && doc != "" {
		io.WriteString(w, doc[:1])
		w.(http.Flusher).Flush() // forces chunked transfer
		doc = doc[1:]
	}
	io.WriteString(w, doc)
}

// htmlNotFound is NetBox's HTML 404 page, which it serves for unknown paths,
// API paths included, whatever the Accept header, with a CSRF cookie.
func htmlNotFound(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Set-Cookie", "csrftoken=fake; Path=/; SameSite=Lax")
	w.WriteHeader(http.StatusNotFound)
	io.WriteString(w, "<!DOCTYPE html>\n<html><head><title>Page Not Found</title></head><body><h1>Page Not Found</h1></body></html>\n")
}

// ---- manifests ----

// toolSpec is a descriptor in manifest key order.
type toolSpec struct {
	Name         string          `json:"name"`
	Title        string          `json:"title"`
	Description  string          `json:"description"`
	Method       string          `json:"method"`
	Path         string          `json:"path"`
	Effect       string          `json:"effect"`
	InputSchema  json.RawMessage `json:"inputSchema"`
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	Annotations  toolAnnotations `json:"annotations"`
}

type toolAnnotations struct {
	ReadOnlyHint    bool `json:"readOnlyHint"`
	DestructiveHint bool `json:"destructiveHint"`
	IdempotentHint  bool `json:"idempotentHint"`
	OpenWorldHint   bool `json:"openWorldHint"`
}

func readTool(name string) toolSpec {
	return toolSpec{Name: name, Title: "Read " + name, Description: "Read the " + name + " records.",
		Method: "GET", Path: name + "/", Effect: "read",
		InputSchema: json.RawMessage(`{"type": "object", "properties": {"q": {"type": "string"}, "limit": {"type": "integer", "minimum": 1}}, "additionalProperties": false}`),
		Annotations: toolAnnotations{ReadOnlyHint: true, IdempotentHint: true}}
}

func writeTool(name string) toolSpec {
	return toolSpec{Name: name, Title: "Write " + name, Description: "Create a " + name + " record.",
		Method: "POST", Path: name + "/", Effect: "write",
		InputSchema:  json.RawMessage(`{"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"], "additionalProperties": false}`),
		OutputSchema: json.RawMessage(`{"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]}`),
		Annotations:  toolAnnotations{}}
}

// numberedTools returns n read tools t000, t001, …
func numberedTools(n int) []toolSpec {
	tools := make([]toolSpec, n)
	for i := range tools {
		tools[i] = readTool(fmt.Sprintf("t%03d", i))
	}
	return tools
}

func manifestJSON(slug string, tools ...toolSpec) string {
	b, err := json.Marshal(struct {
		SchemaVersion string     `json:"schema_version"`
		Plugin        string     `json:"plugin"`
		Tools         []toolSpec `json:"tools"`
	}{"1", slug, tools})
	if err != nil {
		panic(err)
	}
	return string(b)
}

// ---- helpers ----

func scanAllOK(t *testing.T, c *client) *catalog {
	t.Helper()
	cat, err := c.scanAll(context.Background(), callOptions{})
	if err != nil {
		t.Fatalf("scanAll: %v", err)
	}
	return cat
}

// scanAllFails expects the whole scan to fail with a message containing want.
func scanAllFails(t *testing.T, c *client, want string) *bridgeError {
	t.Helper()
	cat, err := c.scanAll(context.Background(), callOptions{})
	if err == nil {
		t.Fatalf("scanAll succeeded with %d tools and problems %v, want an error containing %q", len(cat.tools), cat.problems, want)
	}
	be := asBridgeError(t, err)
	if be.Code != "discovery_failed" || !strings.Contains(be.Message, want) {
		t.Fatalf("scanAll: %s: %s, want discovery_failed containing %q", be.Code, be.Message, want)
	}
	return be
}

// scanOneFails expects the selected scan to fail with code and a message
// containing want.
func scanOneFails(t *testing.T, c *client, slug, code, want string) *bridgeError {
	t.Helper()
	cat, err := c.scanOne(context.Background(), slug, callOptions{})
	if err == nil {
		t.Fatalf("scanOne(%s) succeeded with %d tools, want %s", slug, len(cat.tools), code)
	}
	be := asBridgeError(t, err)
	if be.Code != code || !strings.Contains(be.Message, want) || be.Dispatched {
		t.Fatalf("scanOne(%s): %s: %s (dispatched %t), want %s containing %q", slug, be.Code, be.Message, be.Dispatched, code, want)
	}
	return be
}

func asBridgeError(t *testing.T, err error) *bridgeError {
	t.Helper()
	var be *bridgeError
	if !errors.As(err, &be) {
		t.Fatalf("%T %v is not a *bridgeError", err, err)
	}
	return be
}

func toolNames(cat *catalog) []string {
	var names []string
	for _, t := range cat.tools {
		names = append(names, t.qualifiedName())
	}
	return names
}

// catalogJSON is a plugin_list_tools result document (SPEC §9), as scan
// --json prints it and as the MCP tool answers it.
type catalogJSON struct {
	SchemaVersion string `json:"schema_version"`
	Tools         []struct {
		QualifiedName string `json:"qualified_name"`
		RequestPath   string `json:"request_path"`
		Effect        string `json:"effect"`
	} `json:"tools"`
	Problems []scanProblem `json:"problems"`
}

func decodeCatalog(t testing.TB, doc []byte) catalogJSON {
	t.Helper()
	var c catalogJSON
	if err := json.Unmarshal(doc, &c); err != nil {
		t.Fatalf("not a catalog document: %v\n%s", err, doc)
	}
	return c
}

func (c catalogJSON) names() []string {
	var names []string
	for _, t := range c.Tools {
		names = append(names, t.QualifiedName)
	}
	return names
}

// onlyProblem expects exactly one problem, for plugin, containing want.
func onlyProblem(t *testing.T, cat *catalog, plugin, code, want string) {
	t.Helper()
	if len(cat.problems) != 1 {
		t.Fatalf("problems %v, want one for %s containing %q", cat.problems, plugin, want)
	}
	if p := cat.problems[0]; p.Plugin != plugin || p.Code != code || !strings.Contains(p.Error, want) {
		t.Fatalf("problem %+v, want %s %s containing %q", p, plugin, code, want)
	}
}

// barrier holds its callers until n are waiting at once, then lets everyone
// through; a bounded wait keeps a sequential implementation from hanging
// the test, and reached tells whether n were ever in flight together.
type barrier struct {
	n       int
	mu      sync.Mutex
	waiting int
	open    chan struct{}
	once    sync.Once
	reached atomic.Bool
}

func newBarrier(n int) *barrier { return &barrier{n: n, open: make(chan struct{})} }

func (b *barrier) wait() {
	b.mu.Lock()
	b.waiting++
	if b.waiting >= b.n {
		b.reached.Store(true)
		b.once.Do(func() { close(b.open) })
	}
	b.mu.Unlock()
	select {
	case <-b.open:
	case <-time.After(3 * time.Second):
		b.once.Do(func() { close(b.open) })
	}
	b.mu.Lock()
	b.waiting--
	b.mu.Unlock()
}

// jsonShape counts the values and the nesting depth of a JSON document.
func jsonShape(t *testing.T, doc string) (values, depth int) {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(doc), &v); err != nil {
		t.Fatal(err)
	}
	var walk func(any) (int, int)
	walk = func(v any) (int, int) {
		n, d := 1, 0
		switch v := v.(type) {
		case []any:
			for _, e := range v {
				en, ed := walk(e)
				n, d = n+en, max(d, ed)
			}
			d++
		case map[string]any:
			for _, e := range v {
				en, ed := walk(e)
				n, d = n+en, max(d, ed)
			}
			d++
		}
		return n, d
	}
	return walk(v)
}

// nested is depth arrays, one inside the other.
func nested(depth int) string { return strings.Repeat("[", depth) + strings.Repeat("]", depth) }

// zeros is a JSON array of n zeros.
func zeros(n int) string {
	if n == 0 {
		return "[]"
	}
	return "[" + strings.Repeat("0,", n-1) + "0]"
}

func portOf(t *testing.T, rawURL string) string {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	return u.Port()
}

// ---- happy path and catalog shape ----

func TestScanAllHappyPath(t *testing.T) {
	t.Parallel()
	f := newFakeNetBox(t)
	f.addPlugin("zeta", readTool("b_list"), readTool("a_list"))
	f.addPlugin("example", readTool("list_reports"), writeTool("run_report"))
	f.addPlugin("quiet") // no mcp member
	f.setPlugin("nullmcp", &fakePlugin{root: `{"mcp": null, "widgets": "{base}/api/plugins/nullmcp/widgets/"}`})
	f.addListEntry("installed-plugins", `"{base}/api/plugins/installed-plugins/"`)
	var progress []string
	var mu sync.Mutex
	cat, err := f.client().scanAll(context.Background(), callOptions{progress: func(done, total int) {
		mu.Lock()
		progress = append(progress, fmt.Sprintf("%d/%d", done, total))
		mu.Unlock()
	}})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"example.list_reports", "example.run_report", "zeta.a_list", "zeta.b_list"}
	if got := toolNames(cat); !slices.Equal(got, want) {
		t.Errorf("tools %v, want %v", got, want)
	}
	if len(cat.problems) != 0 {
		t.Errorf("problems %v, want none", cat.problems)
	}
	for _, tl := range cat.tools {
		if want := "/api/plugins/" + tl.plugin + "/" + tl.tool.name + "/"; tl.requestPath != want {
			t.Errorf("%s: request path %s, want %s", tl.qualifiedName(), tl.requestPath, want)
		}
	}
	for path, n := range map[string]int{"/api/plugins/": 1, "/api/plugins/zeta/": 1, "/api/plugins/example/": 1,
		"/api/plugins/quiet/": 1, "/api/plugins/nullmcp/": 1, "/api/plugins/zeta/mcp/": 1, "/api/plugins/example/mcp/": 1,
		"/api/plugins/quiet/mcp/": 0, "/api/plugins/nullmcp/mcp/": 0, "/api/plugins/installed-plugins/": 0} {
		if got := f.requests(path); got != n {
			t.Errorf("%s: %d requests, want %d", path, got, n)
		}
	}
	if f.totalRequests() != 7 {
		t.Errorf("%d requests, want 7", f.totalRequests())
	}
	if len(progress) != 4 || progress[3] != "4/4" {
		t.Errorf("progress %v, want four reports ending 4/4", progress)
	}
}

func TestScanSortsDeterministically(t *testing.T) {
	t.Parallel()
	f := newFakeNetBox(t)
	// By qualified name "net-x.a" sorts before "net.z" ('-' < '.'), unlike by plugin.
	f.addPlugin("net", readTool("z"), readTool("m"))
	f.addPlugin("net-x", readTool("a"))
	f.addPlugin("alpha", readTool("q"))
	f.setPlugin("zz-bad", &fakePlugin{manifest: "{"})
	f.setPlugin("aa-bad", &fakePlugin{root: `[]`})
	f.setPlugin("mm", &fakePlugin{link: "/api/plugins/mm/../mm/"})
	c := f.client()
	first := catalogDocument(scanAllOK(t, c), false)
	for range 5 {
		if again := catalogDocument(scanAllOK(t, c), false); !bytes.Equal(again, first) {
			t.Fatalf("scans differ:\n%s\n%s", first, again)
		}
	}
	cat := scanAllOK(t, c)
	if got, want := toolNames(cat), []string{"alpha.q", "net-x.a", "net.m", "net.z"}; !slices.Equal(got, want) {
		t.Errorf("tools %v, want %v", got, want)
	}
	var plugins []string
	for _, p := range cat.problems {
		plugins = append(plugins, p.Plugin)
	}
	if want := []string{"aa-bad", "mm", "zz-bad"}; !slices.Equal(plugins, want) {
		t.Errorf("problems by plugin %v, want %v", plugins, want)
	}
}

// objectKeys returns the keys of a JSON object in document order.
func objectKeys(t *testing.T, raw []byte) []string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("not an object: %s", raw)
	}
	var keys []string
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	return keys
}

func TestCatalogDocument(t *testing.T) {
	t.Parallel()
	if got := string(catalogDocument(&catalog{}, false)); got != `{"schema_version":"1","detail":"full","tools":[],"problems":[]}` {
		t.Errorf("empty catalog: %s", got)
	}
	f := newFakeNetBox(t)
	read, write := readTool("list_reports"), writeTool("run_report")
	f.addPlugin("example", read, write)
	explicitNull := readTool("peek")
	explicitNull.OutputSchema = json.RawMessage("null")
	f.addPlugin("other", explicitNull)
	f.setPlugin("broken", &fakePlugin{manifest: `{"schema_version": "1", "plugin": "broken", "tools": []}`})
	doc := catalogDocument(scanAllOK(t, f.client()), false)
	if got := objectKeys(t, doc); !slices.Equal(got, []string{"schema_version", "detail", "tools", "problems"}) {
		t.Fatalf("keys %v", got)
	}
	var out struct {
		SchemaVersion string            `json:"schema_version"`
		Tools         []json.RawMessage `json:"tools"`
		Problems      []json.RawMessage `json:"problems"`
	}
	if err := json.Unmarshal(doc, &out); err != nil {
		t.Fatal(err)
	}
	if out.SchemaVersion != "1" || len(out.Tools) != 3 || len(out.Problems) != 1 {
		t.Fatalf("document %s", doc)
	}
	descriptorKeys := []string{"name", "title", "description", "method", "path", "effect", "inputSchema"}
	for i, c := range []struct {
		spec           toolSpec
		plugin, keys   string
		outputSchema   string
		qualified, req string
	}{
		{read, "example", "annotations outputSchema", "null", "example.list_reports", "/api/plugins/example/list_reports/"},
		{write, "example", "outputSchema annotations", string(write.OutputSchema), "example.run_report", "/api/plugins/example/run_report/"},
		{explicitNull, "other", "outputSchema annotations", "null", "other.peek", "/api/plugins/other/peek/"},
	} {
		raw := out.Tools[i]
		wantKeys := append(slices.Clone(descriptorKeys), strings.Fields(c.keys)...)
		wantKeys = append(wantKeys, "plugin", "qualified_name", "request_path")
		if got := objectKeys(t, raw); !slices.Equal(got, wantKeys) {
			t.Errorf("tool %d keys %v, want %v", i, got, wantKeys)
		}
		var got map[string]json.RawMessage
		json.Unmarshal(raw, &got)
		specJSON, _ := json.Marshal(c.spec)
		var spec map[string]json.RawMessage
		json.Unmarshal(specJSON, &spec)
		for k, v := range spec {
			if !jsonEqual(t, got[k], v) {
				t.Errorf("tool %d %s: %s, want %s as in the manifest", i, k, got[k], v)
			}
		}
		if !jsonEqual(t, got["outputSchema"], json.RawMessage(c.outputSchema)) {
			t.Errorf("tool %d outputSchema %s, want %s", i, got["outputSchema"], c.outputSchema)
		}
		for k, want := range map[string]string{"plugin": c.plugin, "qualified_name": c.qualified, "request_path": c.req} {
			if s, _ := strconv.Unquote(string(got[k])); s != want {
				t.Errorf("tool %d %s: %s, want %q", i, k, got[k], want)
			}
		}
	}
	if got := objectKeys(t, out.Problems[0]); !slices.Equal(got, []string{"plugin", "code", "error"}) {
		t.Errorf("problem keys %v", got)
	}
	var p scanProblem
	json.Unmarshal(out.Problems[0], &p)
	if p.Plugin != "broken" || p.Code != "discovery_failed" || !strings.Contains(p.Error, "must be an array of 1 to 64 tools") {
		t.Errorf("problem %+v", p)
	}
}

func jsonEqual(t *testing.T, a, b json.RawMessage) bool {
	t.Helper()
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xs, _ := json.Marshal(x)
	ys, _ := json.Marshal(y)
	return bytes.Equal(xs, ys)
}

func TestScanPathPrefix(t *testing.T) {
	t.Parallel()
	f := newFakeNetBox(t)
	f.setPrefix("/netbox")
	// Links with and without the prefix, absolute and root-relative; Proxbox
	// builds its manifest link without the prefix.
	links := map[string][2]string{
		"abs-prefixed":   {"{base}/api/plugins/abs-prefixed/", "{base}/api/plugins/abs-prefixed/mcp/"},
		"rel-prefixed":   {"/netbox/api/plugins/rel-prefixed/", "/netbox/api/plugins/rel-prefixed/mcp/"},
		"rel-unprefixed": {"/api/plugins/rel-unprefixed/", "/api/plugins/rel-unprefixed/mcp/"},
		"abs-unprefixed": {"{url}/api/plugins/abs-unprefixed/", "{url}/api/plugins/abs-unprefixed/mcp/"},
	}
	for slug, l := range links {
		f.setPlugin(slug, &fakePlugin{link: l[0], manifest: manifestJSON(slug, readTool("x")),
			root: `{"mcp": {"schema_version": "1", "manifest": "` + l[1] + `"}}`})
	}
	c := f.client()
	if c.base != f.URL+"/netbox" || c.prefix != "/netbox" {
		t.Fatalf("client base %s prefix %s", c.base, c.prefix)
	}
	cat := scanAllOK(t, c)
	if len(cat.tools) != 4 || len(cat.problems) != 0 {
		t.Fatalf("tools %v problems %v", toolNames(cat), cat.problems)
	}
	for _, tl := range cat.tools {
		if want := "/api/plugins/" + tl.plugin + "/x/"; tl.requestPath != want {
			t.Errorf("request path %s, want the base-relative %s", tl.requestPath, want)
		}
	}
	for _, r := range f.requestLog() {
		if !strings.HasPrefix(r.path, "/netbox/api/plugins/") {
			t.Errorf("request to %s, outside the prefix", r.path)
		}
	}
	for slug := range links {
		if n := f.requests("/api/plugins/" + slug + "/mcp/"); n != 1 {
			t.Errorf("%s: %d manifest requests under the prefix, want 1", slug, n)
		}
	}
	cat, err := c.scanOne(context.Background(), "rel-unprefixed", callOptions{})
	if err != nil || len(cat.tools) != 1 {
		t.Fatalf("scanOne: %v", err)
	}
}

// ---- links ----

// linkForm turns a valid base-relative path into a rejected link.
type linkForm struct {
	name string
	link func(origin, port, path string) string
	want string
}

func trimSlash(p string) string { return p[:len(p)-1] }

// crossOriginLinks name another origin: a manifest link must not (SPEC §3),
// while a plugin-list link only names a slug, whatever its origin.
var crossOriginLinks = []linkForm{
	{"other scheme", func(o, port, p string) string { return "https://127.0.0.1:" + port + p }, "has origin https://127.0.0.1:"},
	{"other host", func(o, port, p string) string { return "http://localhost:" + port + p }, "has origin http://localhost:"},
	{"other port", func(o, port, p string) string { return "http://127.0.0.1:1" + p }, "has origin http://127.0.0.1:1,"},
	{"default port", func(o, port, p string) string { return "http://127.0.0.1" + p }, "has origin http://127.0.0.1:80,"},
}

var rejectedLinks = []linkForm{
	{"non-http scheme", func(o, port, p string) string { return "ftp://127.0.0.1:" + port + p }, `scheme "ftp" is not http or https`},
	{"bad port", func(o, port, p string) string { return "http://127.0.0.1:" + port + "x" + p }, "is not a number"},
	{"no host", func(o, port, p string) string { return "http://" + p }, "no host"},
	{"percent", func(o, port, p string) string { return trimSlash(p) + "%2F/" }, `contains '%'`},
	{"percent-encoded dot", func(o, port, p string) string { return p + "%2e%2e/" }, `contains '%'`},
	{"backslash", func(o, port, p string) string { return trimSlash(p) + `\/` }, `contains '\\'`},
	{"NUL", func(o, port, p string) string { return trimSlash(p) + "\x00/" }, "control"},
	{"CR", func(o, port, p string) string { return trimSlash(p) + "\r/" }, "control"},
	{"LF", func(o, port, p string) string { return trimSlash(p) + "\n/" }, "control"},
	{"tab", func(o, port, p string) string { return trimSlash(p) + "\t/" }, "control"},
	{"space", func(o, port, p string) string { return trimSlash(p) + " /" }, "space"},
	{"DEL", func(o, port, p string) string { return trimSlash(p) + "\x7f/" }, "control"},
	{"non-ASCII", func(o, port, p string) string { return trimSlash(p) + "é/" }, "non-ASCII"},
	{"credentials", func(o, port, p string) string { return "http://user:pw@127.0.0.1:" + port + p }, "carries credentials"},
	{"user only", func(o, port, p string) string { return "http://user@127.0.0.1:" + port + p }, "carries credentials"},
	{"query", func(o, port, p string) string { return p + "?format=json" }, "has a query or fragment"},
	{"empty query", func(o, port, p string) string { return p + "?" }, "has a query or fragment"},
	{"fragment", func(o, port, p string) string { return p + "#top" }, "has a query or fragment"},
	{"protocol-relative", func(o, port, p string) string { return "//127.0.0.1:" + port + p }, "empty segment"},
	{"absolute double slash", func(o, port, p string) string { return o + "/" + p }, "empty segment"},
	{"empty segment", func(o, port, p string) string { return "/api/" + p[len("/api"):] }, "empty, . or .. segment"},
	{"dot segment", func(o, port, p string) string { return "/api/./" + p[len("/api/"):] }, "empty, . or .. segment"},
	{"dot-dot segment", func(o, port, p string) string { return "/api/plugins/zz/../" + p[len("/api/plugins/"):] }, "empty, . or .. segment"},
	{"no trailing slash", func(o, port, p string) string { return trimSlash(p) }, "not a normalized /api/…/ path"},
	{"relative", func(o, port, p string) string { return p[1:] }, "neither absolute nor root-relative"},
	{"outside the api", func(o, port, p string) string { return "/static" + p }, "not a normalized /api/…/ path"},
	{"another prefix", func(o, port, p string) string { return "/netbox" + p }, "not a normalized /api/…/ path"},
	{"long", func(o, port, p string) string { return p + strings.Repeat("a", 10000) + "\x00/" }, "control"},
}

// TestScanRejectsPluginLinks is a table of plugin-list entries for the plugin
// x beside a good plugin: a rejected entry is a problem of x alone and is
// never fetched; an accepted one names x, which is then discovered from the
// configured origin (SPEC §3).
func TestScanRejectsPluginLinks(t *testing.T) {
	t.Parallel()
	type entryCase struct {
		name  string
		entry func(origin, port string) string // the raw JSON value of the list entry "x"
		want  string                           // the problem, "" when the entry is accepted
	}
	str := func(form linkForm, want string) entryCase {
		return entryCase{form.name, func(o, port string) string {
			raw, _ := json.Marshal(form.link(o, port, "/api/plugins/x/"))
			return string(raw)
		}, want}
	}
	var cases []entryCase
	for _, form := range rejectedLinks {
		cases = append(cases, str(form, form.want))
	}
	for _, form := range []linkForm{
		{"not a plugin root", func(o, port, p string) string { return p + "widgets/" }, "is not a plugin API root"},
		{"core api", func(o, port, p string) string { return "/api/dcim/" }, "is not a plugin API root"},
		{"bad slug", func(o, port, p string) string { return "/api/plugins/X/" }, "is not a plugin API root"},
		{"slug of 65 characters", func(o, port, p string) string { return "/api/plugins/" + strings.Repeat("x", 65) + "/" }, "is not a plugin API root"},
	} {
		cases = append(cases, str(form, form.want))
	}
	// Another origin in a list link still names the slug: the plugin is
	// discovered from the configured origin, as --plugin would find it.
	for _, form := range crossOriginLinks {
		cases = append(cases, str(linkForm{name: "accepted " + form.name, link: form.link}, ""))
	}
	for _, form := range []linkForm{
		{"absolute", func(o, port, p string) string { return o + p }, ""},
		{"root-relative", func(o, port, p string) string { return p }, ""},
		{"upper-case scheme and host", func(o, port, p string) string { return "HTTP://LOCALHOST:" + port + p }, ""},
	} {
		cases = append(cases, str(linkForm{name: "accepted " + form.name, link: form.link}, ""))
	}
	for _, raw := range []string{`7`, `true`, `null`, `{"url": "/api/plugins/x/"}`, `["/api/plugins/x/"]`} {
		cases = append(cases, entryCase{"not a string: " + raw, func(string, string) string { return raw }, "the link is not a string"})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := newFakeNetBox(t)
			f.addPlugin("good", readTool("list"))
			f.setPlugin("x", &fakePlugin{manifest: manifestJSON("x", readTool("list"))})
			f.setList(`{"good": "/api/plugins/good/", "x": ` + c.entry(f.URL, portOf(t, f.URL)) + `}`)
			cat := scanAllOK(t, f.client())
			if c.want == "" {
				if len(cat.problems) != 0 || !slices.Equal(toolNames(cat), []string{"good.list", "x.list"}) || f.totalRequests() != 5 {
					t.Errorf("problems %v, tools %v after %d requests; want good.list and x.list after 5", cat.problems, toolNames(cat), f.totalRequests())
				}
				return
			}
			onlyProblem(t, cat, "x", "discovery_failed", c.want)
			if p := cat.problems[0]; !strings.Contains(p.Error, `plugin list entry "x"`) || len(p.Error) > 1000 {
				t.Errorf("problem %q does not name the entry or echoes too much", clip(p.Error, 300))
			}
			if got := toolNames(cat); !slices.Equal(got, []string{"good.list"}) {
				t.Errorf("tools %v, want good.list", got)
			}
			if f.totalRequests() != 3 {
				t.Errorf("%d requests, want 3 (the rejected link is never fetched)", f.totalRequests())
			}
		})
	}
}

// TestScanRejectsManifestLinks is a table of manifest links in x's
// advertisement: a rejected link is a problem of x alone in a full scan and
// fails a selected scan; an accepted one is x's manifest (SPEC §3).
func TestScanRejectsManifestLinks(t *testing.T) {
	t.Parallel()
	forms := slices.Concat(rejectedLinks, crossOriginLinks, []linkForm{
		{"another plugin", func(o, port, p string) string { return "/api/plugins/y/mcp/" }, "is not /api/plugins/x/mcp/"},
		{"the plugin root", func(o, port, p string) string { return "/api/plugins/x/" }, "is not /api/plugins/x/mcp/"},
		{"below mcp", func(o, port, p string) string { return p + "extra/" }, "is not /api/plugins/x/mcp/"},
		{"outside plugins", func(o, port, p string) string { return "/api/extras/mcp/" }, "is not /api/plugins/x/mcp/"},
		{"accepted absolute", func(o, port, p string) string { return o + p }, ""},
		{"accepted root-relative", func(o, port, p string) string { return p }, ""},
		{"accepted upper-case scheme", func(o, port, p string) string { return "HTTP" + strings.TrimPrefix(o, "http") + p }, ""},
	})
	for _, form := range forms {
		t.Run(form.name, func(t *testing.T) {
			t.Parallel()
			f := newFakeNetBox(t)
			f.addPlugin("good", readTool("list"))
			link, _ := json.Marshal(form.link(f.URL, portOf(t, f.URL), "/api/plugins/x/mcp/"))
			f.setPlugin("x", &fakePlugin{root: `{"mcp": {"schema_version": "1", "manifest": ` + string(link) + `}}`,
				manifest: manifestJSON("x", readTool("list"))})
			cat := scanAllOK(t, f.client())
			if form.want == "" {
				if len(cat.problems) != 0 || !slices.Equal(toolNames(cat), []string{"good.list", "x.list"}) {
					t.Errorf("problems %v, tools %v; want good.list and x.list", cat.problems, toolNames(cat))
				}
				if cat, err := f.client().scanOne(context.Background(), "x", callOptions{}); err != nil || !slices.Equal(toolNames(cat), []string{"x.list"}) {
					t.Errorf("scanOne: %v", err)
				}
				return
			}
			onlyProblem(t, cat, "x", "discovery_failed", form.want)
			if !strings.Contains(cat.problems[0].Error, `plugin "x": invalid mcp advertisement`) {
				t.Errorf("problem %q", clip(cat.problems[0].Error, 300))
			}
			if f.requests("/api/plugins/x/mcp/") != 0 || f.totalRequests() != 4 {
				t.Errorf("%d requests, %d for x's manifest: a rejected link is never fetched", f.totalRequests(), f.requests("/api/plugins/x/mcp/"))
			}
			// Selected, the manifest is fetched at once but not used.
			scanOneFails(t, f.client(), "x", "discovery_failed", form.want)
		})
	}
}

func TestResolveLink(t *testing.T) {
	t.Parallel()
	c := &client{config: &config{origin: "https://netbox.example.com:443", prefix: "/netbox"}}
	for link, want := range map[string]string{
		"/api/plugins/x/":                                      "/api/plugins/x/",
		"/netbox/api/plugins/x/":                               "/api/plugins/x/",
		"https://netbox.example.com/netbox/api/plugins/x/":     "/api/plugins/x/",
		"https://netbox.example.com/api/plugins/x/mcp/":        "/api/plugins/x/mcp/",
		"HTTPS://NetBox.Example.COM/api/plugins/x/":            "/api/plugins/x/",
		"https://netbox.example.com:443/api/plugins/x/":        "/api/plugins/x/",
		"https://netbox.example.com/netbox/api/plugins/x/..x/": "/api/plugins/x/..x/",
	} {
		if got, err := c.resolveLink(link, true); err != nil || got != want {
			t.Errorf("%s: %q, %v; want %q", link, got, err, want)
		}
	}
	for _, link := range []string{"http://netbox.example.com/api/plugins/x/", "https://netbox.example.com:8443/api/plugins/x/",
		"https://netbox.example.com.evil/api/plugins/x/", "/netboxx/api/plugins/x/", "/netbox/netbox/api/plugins/x/",
		"/netbox/", "/netbox", "https://netbox.example.com", "https://[::1]/api/plugins/x/", ""} {
		if got, err := c.resolveLink(link, true); err == nil {
			t.Errorf("%s: accepted as %q", link, got)
		}
	}
	// A NetBox served under /api: its prefix is stripped only before /api/,
	// and an un-prefixed /api/… link is still its own (SPEC §3).
	under := &client{config: &config{origin: "https://netbox.example.com:443", prefix: "/api"}}
	for link, want := range map[string]string{
		"/api/plugins/x/":     "/api/plugins/x/",
		"/api/api/plugins/x/": "/api/plugins/x/",
		"https://netbox.example.com/api/api/plugins/x/mcp/": "/api/plugins/x/mcp/",
		"https://netbox.example.com/api/plugins/x/mcp/":     "/api/plugins/x/mcp/",
	} {
		if got, err := under.resolveLink(link, true); err != nil || got != want {
			t.Errorf("prefix /api: %s: %q, %v; want %q", link, got, err, want)
		}
	}
	// A hostile host is named, clipped, beside the configured origin.
	if _, err := c.resolveLink("https://"+strings.Repeat("q", 5000)+"/api/plugins/x/", true); err == nil || strings.Count(err.Error(), "q") > 2*specClip+10 {
		t.Errorf("a long cross-origin link: %d bytes of error", len(fmt.Sprint(err)))
	}
}

func TestScanCrossOriginMessage(t *testing.T) {
	t.Parallel()
	// A reverse proxy without X-Forwarded-Proto/Host makes NetBox build
	// links with its internal origin: the list's links still name the
	// plugins, the manifest link fails closed and says why.
	f := newFakeNetBox(t)
	f.setPlugin("x", &fakePlugin{link: "http://netbox-internal:8000/api/plugins/x/",
		root: `{"mcp": {"schema_version": "1", "manifest": "http://netbox-internal:8000/api/plugins/x/mcp/"}}`, manifest: manifestJSON("x", readTool("list"))})
	cat := scanAllOK(t, f.client())
	configured := "http://127.0.0.1:" + portOf(t, f.URL)
	onlyProblem(t, cat, "x", "discovery_failed", "has origin http://netbox-internal:8000, but NetBox is configured as "+configured)
	if !strings.Contains(cat.problems[0].Error, "X-Forwarded-Proto") {
		t.Errorf("problem %q does not name the forwarded headers", cat.problems[0].Error)
	}
	// The full scan and --plugin agree.
	scanOneFails(t, f.client(), "x", "discovery_failed", "has origin http://netbox-internal:8000")
}

// ---- advertisements and manifests ----

func TestScanInvalidAdvertisement(t *testing.T) {
	t.Parallel()
	const link = `"/api/plugins/x/mcp/"`
	for name, c := range map[string]struct{ root, want string }{
		"extra key":               {`{"mcp": {"schema_version": "1", "manifest": ` + link + `, "tools": 1}}`, `must be exactly {"schema_version": "1", "manifest": "<link>"}`},
		"schema_version 2":        {`{"mcp": {"schema_version": "2", "manifest": ` + link + `}}`, "must be exactly"},
		"schema_version number":   {`{"mcp": {"schema_version": 1, "manifest": ` + link + `}}`, "must be exactly"},
		"non-string link":         {`{"mcp": {"schema_version": "1", "manifest": 7}}`, "must be exactly"},
		"null link":               {`{"mcp": {"schema_version": "1", "manifest": null}}`, "must be exactly"},
		"no link":                 {`{"mcp": {"schema_version": "1", "url": ` + link + `}}`, "must be exactly"},
		"only the link":           {`{"mcp": {"manifest": ` + link + `}}`, "must be exactly"},
		"string":                  {`{"mcp": ` + link + `}`, "must be exactly"},
		"array":                   {`{"mcp": [` + link + `]}`, "must be exactly"},
		"false":                   {`{"mcp": false}`, "must be exactly"},
		"root not an object":      {`["mcp"]`, "the plugin root is not an object"},
		"root not JSON":           {`{"mcp": }`, "invalid JSON"},
		"root with duplicate key": {`{"mcp": null, "mcp": null}`, `duplicate key "mcp"`},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := newFakeNetBox(t)
			f.addPlugin("good", readTool("list"))
			f.setPlugin("x", &fakePlugin{root: c.root, manifest: manifestJSON("x", readTool("list"))})
			cat := scanAllOK(t, f.client())
			onlyProblem(t, cat, "x", "discovery_failed", c.want)
			if len(cat.tools) != 1 || f.requests("/api/plugins/x/mcp/") != 0 {
				t.Errorf("tools %v, %d manifest requests", toolNames(cat), f.requests("/api/plugins/x/mcp/"))
			}
			scanOneFails(t, f.client(), "x", "discovery_failed", c.want)
		})
	}
}

func TestScanManifestDeclaresAnotherPlugin(t *testing.T) {
	t.Parallel()
	f := newFakeNetBox(t)
	f.setPlugin("x", &fakePlugin{manifest: manifestJSON("y", readTool("list"))})
	f.addPlugin("y", readTool("list"))
	cat := scanAllOK(t, f.client())
	onlyProblem(t, cat, "x", "discovery_failed", `manifest /api/plugins/x/mcp/ declares plugin "y", not "x"`)
	if got := toolNames(cat); !slices.Equal(got, []string{"y.list"}) {
		t.Errorf("tools %v", got)
	}
	scanOneFails(t, f.client(), "x", "discovery_failed", `declares plugin "y"`)
}

func TestScanDuplicateSlug(t *testing.T) {
	t.Parallel()
	f := newFakeNetBox(t)
	f.setPlugin("a", &fakePlugin{link: "/api/plugins/a/", manifest: manifestJSON("a", readTool("list"))})
	f.addListEntry("a-again", `"{base}/api/plugins/a/"`) // same slug, another link
	f.addListEntry("a-third", `"/api/plugins/a/"`)
	f.addPlugin("b", readTool("list"))
	f.addListEntry("b-again", `"{base}/api/plugins/b/"`) // the same link twice is one plugin
	cat := scanAllOK(t, f.client())
	onlyProblem(t, cat, "a", "discovery_failed", `plugin "a" is listed twice with different links`)
	if got := toolNames(cat); !slices.Equal(got, []string{"b.list"}) {
		t.Errorf("tools %v, want b.list", got)
	}
	if f.requests("/api/plugins/a/") != 0 || f.requests("/api/plugins/b/") != 1 {
		t.Errorf("root requests: a %d (want 0), b %d (want 1)", f.requests("/api/plugins/a/"), f.requests("/api/plugins/b/"))
	}
}

// ---- isolation and selected plugins ----

func TestScanAllIsolatesBrokenPlugins(t *testing.T) {
	t.Parallel()
	f := newFakeNetBox(t)
	f.addPlugin("good", readTool("list"))
	f.addPlugin("fine", writeTool("make"))
	f.setPlugin("no-manifest", &fakePlugin{root: `{"mcp": {"schema_version": "1", "manifest": "/api/plugins/no-manifest/mcp/"}}`})
	f.setPlugin("bad-manifest", &fakePlugin{manifest: `{"schema_version": "1", "plugin": "bad-manifest", "tools": [{"name": "x"}]}`})
	f.setPlugin("server-error", &fakePlugin{manifest: manifestJSON("server-error", readTool("list"))})
	f.handle("/api/plugins/server-error/", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusInternalServerError, `{"detail": "boom"}`, false)
	})
	f.addListEntry("gone", `"/api/plugins/gone/"`) // listed, but no root: HTML 404
	cat := scanAllOK(t, f.client())
	if got := toolNames(cat); !slices.Equal(got, []string{"fine.make", "good.list"}) {
		t.Errorf("tools %v", got)
	}
	want := []scanProblem{
		{"bad-manifest", "discovery_failed", `manifest /api/plugins/bad-manifest/mcp/: tools[0]: a tool descriptor is missing "title" (and`},
		{"gone", "plugin_not_found", `NetBox has no API root for plugin "gone" (GET ` + f.URL + `/api/plugins/gone/: HTTP 404)`},
		{"no-manifest", "discovery_failed", "/api/plugins/no-manifest/mcp/: HTTP 404"},
		{"server-error", "discovery_failed", `/api/plugins/server-error/: HTTP 500: "boom"`},
	}
	if len(cat.problems) != len(want) {
		t.Fatalf("problems %v", cat.problems)
	}
	for i, p := range cat.problems {
		if p.Plugin != want[i].Plugin || p.Code != want[i].Code || !strings.Contains(p.Error, want[i].Error) {
			t.Errorf("problem %d: %+v, want %+v", i, p, want[i])
		}
	}
}

func TestScanOneErrorCodes(t *testing.T) {
	t.Parallel()
	f := newFakeNetBox(t)
	f.addPlugin("quiet")
	f.setPlugin("nullmcp", &fakePlugin{root: `{"mcp": null}`, manifest: manifestJSON("nullmcp", readTool("list"))})
	f.setPlugin("no-manifest", &fakePlugin{root: `{"mcp": {"schema_version": "1", "manifest": "/api/plugins/no-manifest/mcp/"}}`})
	f.setPlugin("bad-manifest", &fakePlugin{manifest: `{"schema_version": "1", "plugin": "bad-manifest", "tools": []}`})
	f.setPlugin("root-error", &fakePlugin{manifest: manifestJSON("root-error", readTool("list"))})
	f.handle("/api/plugins/root-error/", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusServiceUnavailable, `{"detail": "maintenance"}`, false)
	})
	f.addPlugin("good", readTool("list"))
	// Proxbox with its bridge switched off: no mcp member, and its manifest
	// URL answers 503 with why (seen on the real Proxbox).
	f.setPlugin("switched-off", &fakePlugin{root: `{"jobs": "/api/plugins/switched-off/jobs/"}`})
	f.handle("/api/plugins/switched-off/mcp/", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusServiceUnavailable, `{"detail": "The semantic MCP consumer bridge is not activated.", "activation": {"state": "blocked"}}`, false)
	})
	c := f.client()
	scanOneFails(t, c, "switched-off", "not_advertised",
		`the plugin root does not advertise an MCP manifest; its manifest URL answered HTTP 503: "The semantic MCP consumer bridge is not activated."`)
	be := scanOneFails(t, c, "missing", "plugin_not_found", `NetBox has no API root for plugin "missing"`)
	if be.Plugin != "missing" {
		t.Errorf("plugin %q", be.Plugin)
	}
	scanOneFails(t, c, "quiet", "not_advertised", `plugin "quiet": the plugin root does not advertise an MCP manifest`)
	scanOneFails(t, c, "nullmcp", "not_advertised", "does not advertise")
	scanOneFails(t, c, "no-manifest", "discovery_failed", "/api/plugins/no-manifest/mcp/: HTTP 404")
	scanOneFails(t, c, "bad-manifest", "discovery_failed", "must be an array of 1 to 64 tools")
	scanOneFails(t, c, "root-error", "discovery_failed", `HTTP 503: "maintenance"`)
	scanOneFails(t, c, "Bad_Slug", "invalid_request", "is not a plugin slug")
	scanOneFails(t, c, "../good", "invalid_request", "is not a plugin slug")
	cat, err := c.scanOne(context.Background(), "good", callOptions{})
	if err != nil || !slices.Equal(toolNames(cat), []string{"good.list"}) || len(cat.problems) != 0 {
		t.Fatalf("scanOne(good): %v", err)
	}
	if f.requests("/api/plugins/") != 0 {
		t.Errorf("a selected scan fetched the plugin list")
	}
}

func TestScanOneIsOneRoundTrip(t *testing.T) {
	t.Parallel()
	f := newFakeNetBox(t)
	f.addPlugin("example", readTool("list"), writeTool("make"))
	b := newBarrier(2)
	f.setLatency(20 * time.Millisecond)
	f.setBefore(func(*http.Request) { b.wait() })
	cat, err := f.client().scanOne(context.Background(), "example", callOptions{})
	if err != nil || len(cat.tools) != 2 {
		t.Fatalf("scanOne: %v", err)
	}
	if !b.reached.Load() || f.peakInFlight() != 2 {
		t.Errorf("root and manifest were not in flight together (peak %d)", f.peakInFlight())
	}
	if f.totalRequests() != 2 || f.requests("/api/plugins/example/") != 1 || f.requests("/api/plugins/example/mcp/") != 1 {
		t.Errorf("requests %v, want the root and the manifest once each", f.requestLog())
	}
}

func TestScanAllBoundedConcurrency(t *testing.T) {
	t.Parallel()
	f := newFakeNetBox(t)
	for i := range 40 {
		f.addPlugin(fmt.Sprintf("p%02d", i), readTool("list"))
	}
	b := newBarrier(specInFlight)
	f.setBefore(func(r *http.Request) {
		if r.URL.Path != "/api/plugins/" {
			b.wait()
		}
	})
	cat := scanAllOK(t, f.client())
	if len(cat.tools) != 40 {
		t.Fatalf("%d tools", len(cat.tools))
	}
	if !b.reached.Load() || f.peakInFlight() != specInFlight {
		t.Errorf("peak in flight %d, want exactly %d", f.peakInFlight(), specInFlight)
	}
}

func TestScanBadToken(t *testing.T) {
	t.Parallel()
	f := newFakeNetBox(t)
	f.addPlugin("example", readTool("list"))
	cfg := f.config()
	cfg.auth = "Token ffffffffffffffffffffffffffffffffffffffff"
	c := testClient(t, cfg)
	be := scanAllFails(t, c, `/api/plugins/: HTTP 403: "Invalid v1 token"`)
	if strings.Contains(be.Message, "ffffffff") {
		t.Errorf("message %q echoes the token", be.Message)
	}
	scanOneFails(t, c, "example", "discovery_failed", `/api/plugins/example/: HTTP 403: "Invalid v1 token"`)
}

// ---- headers ----

func TestDiscoveryRequestHeaders(t *testing.T) {
	t.Parallel()
	f := newFakeNetBox(t)
	f.addPlugin("example", readTool("list"))
	scanAllOK(t, f.client())
	if _, err := f.client().scanOne(context.Background(), "example", callOptions{}); err != nil {
		t.Fatal(err)
	}
	log := f.requestLog()
	if len(log) != 5 {
		t.Fatalf("%d requests", len(log))
	}
	for _, r := range log {
		h := r.header
		if r.method != http.MethodGet || h.Get("Accept") != "application/json" || h.Get("Authorization") != "Token "+fakeToken ||
			!strings.HasPrefix(h.Get("User-Agent"), "netbox-plugin-bridge/") || len(h.Get("User-Agent")) <= len("netbox-plugin-bridge/") {
			t.Errorf("%s %s: headers %v", r.method, r.path, h)
		}
		for _, name := range []string{"If-None-Match", "If-Modified-Since", "Cookie", "Content-Type"} {
			if h.Get(name) != "" {
				t.Errorf("%s: unexpected %s", r.path, name)
			}
		}
	}

	// Per-call token and caller headers reach every discovery request.
	const callAuth = "Bearer nbt_callkey.callsecret"
	c := f.client() // configured with the old token
	f.setToken(callAuth)
	f.resetLog()
	opts := callOptions{auth: callAuth, header: http.Header{"X-Request-Id": {"req-42"}, "Accept": {"text/html"}}}
	if cat, err := c.scanAll(context.Background(), opts); err != nil || len(cat.tools) != 1 {
		t.Fatalf("scanAll with the call's token: %v", err)
	}
	if _, err := c.scanOne(context.Background(), "example", opts); err != nil {
		t.Fatal(err)
	}
	log = f.requestLog()
	if len(log) != 5 {
		t.Fatalf("%d requests", len(log))
	}
	for _, r := range log {
		if r.header.Get("Authorization") != callAuth || r.header.Get("X-Request-Id") != "req-42" || r.header.Get("Accept") != "application/json" {
			t.Errorf("%s: headers %v", r.path, r.header)
		}
	}
}

// ---- limits ----

func TestScanRootLimit(t *testing.T) {
	t.Parallel()
	for _, n := range []int{specScanRoots, specScanRoots + 1} {
		t.Run(strconv.Itoa(n), func(t *testing.T) {
			t.Parallel()
			f := newFakeNetBox(t)
			for i := range n {
				f.addPlugin(fmt.Sprintf("p%03d", i), numberedTools(4)...)
			}
			f.addListEntry("installed-plugins", `"{base}/api/plugins/installed-plugins/"`) // not a root
			if n == specScanRoots {
				// 128 roots of 4 tools: 512 tools and 257 requests, every limit exactly.
				cat := scanAllOK(t, f.client())
				if len(cat.tools) != specScanTools || len(cat.problems) != 0 || f.totalRequests() != specScanRequests {
					t.Errorf("%d tools, problems %v, %d requests", len(cat.tools), cat.problems, f.totalRequests())
				}
				return
			}
			scanAllFails(t, f.client(), "NetBox lists 129 plugin roots, more than 128")
			if f.totalRequests() != 1 {
				t.Errorf("%d requests, want only the list", f.totalRequests())
			}
		})
	}
}

// TestScanHostilePluginList: SPEC §3, every entry of the plugin list
// counts against its 128 roots, valid or not: a list of 5,000 bad entries
// fails the whole scan with one short error, before it can become 5,000
// problems (issue 28); SPEC §9, a catalog shows at most 128 problems, each
// clipped to 300 characters, and counts the others.
func TestScanHostilePluginList(t *testing.T) {
	t.Parallel()
	f := newFakeNetBox(t)
	f.addPlugin("ok", readTool("list"))
	for i := range 5000 {
		f.addListEntry(fmt.Sprintf("bad%04d", i), fmt.Sprintf(`"{base}/api/not-a-plugin-root/%04d/%s/"`, i, strings.Repeat("x", 100)))
	}
	scanAllFails(t, f.client(), "NetBox lists 5001 plugin roots, more than 128")
	r := call(t, connect(t, newBridge(f, false), protocolVersions[0], nil), "plugin_list_tools", map[string]any{})
	wantError(t, r, "discovery_failed", false)
	if len(r.text) > 1000 {
		t.Errorf("the answer to a hostile plugin list is %d bytes: %s", len(r.text), clip(r.text, 300))
	}
	cat := &catalog{}
	for i := range 200 {
		cat.problems = append(cat.problems, scanProblem{fmt.Sprintf("p%03d", i), "discovery_failed", strings.Repeat("é", 1000)})
	}
	var doc struct {
		Problems []struct{ Error string }
		Omitted  int `json:"problems_omitted"`
	}
	for _, full := range []bool{true, false} {
		if err := json.Unmarshal(catalogDocument(cat, full), &doc); err != nil {
			t.Fatal(err)
		}
		if len(doc.Problems) != 128 || doc.Omitted != 72 {
			t.Errorf("full %t: %d problems shown and %d omitted, want 128 and 72", full, len(doc.Problems), doc.Omitted)
		}
		for _, p := range doc.Problems {
			if n := utf8.RuneCountInString(p.Error); n > 300 {
				t.Fatalf("full %t: a problem of %d characters", full, n)
			}
		}
	}
}

func TestScanToolLimit(t *testing.T) {
	t.Parallel()
	for _, extra := range []int{0, 1} {
		t.Run(strconv.Itoa(specScanTools+extra), func(t *testing.T) {
			t.Parallel()
			f := newFakeNetBox(t)
			for i := range 8 {
				f.addPlugin(fmt.Sprintf("p%d", i), numberedTools(specManifestTools)...)
			}
			if extra > 0 {
				f.addPlugin("one-more", readTool("list"))
				scanAllFails(t, f.client(), "the plugins advertise 513 tools, more than 512")
				return
			}
			if cat := scanAllOK(t, f.client()); len(cat.tools) != 512 {
				t.Errorf("%d tools", len(cat.tools))
			}
		})
	}
}

func TestScanManifestToolLimit(t *testing.T) {
	t.Parallel()
	f := newFakeNetBox(t)
	f.addPlugin("max", numberedTools(64)...)
	f.addPlugin("over", numberedTools(65)...)
	f.setPlugin("none", &fakePlugin{manifest: `{"schema_version": "1", "plugin": "none", "tools": []}`})
	cat := scanAllOK(t, f.client())
	if len(cat.tools) != 64 || cat.tools[0].plugin != "max" {
		t.Errorf("%d tools", len(cat.tools))
	}
	if len(cat.problems) != 2 || cat.problems[0].Plugin != "none" || cat.problems[1].Plugin != "over" {
		t.Fatalf("problems %v", cat.problems)
	}
	for _, p := range cat.problems {
		if !strings.Contains(p.Error, "tools: must be an array of 1 to 64 tools") {
			t.Errorf("problem %+v", p)
		}
	}
	scanOneFails(t, f.client(), "over", "discovery_failed", "must be an array of 1 to 64 tools")
}

func TestScanAggregateBudget(t *testing.T) {
	t.Parallel()
	for _, extra := range []int{0, 1} {
		t.Run(strconv.Itoa(specScanBytes+extra), func(t *testing.T) {
			t.Parallel()
			const n = 16
			f := newFakeNetBox(t)
			for i := range n {
				f.addPlugin(fmt.Sprintf("p%02d", i))
			}
			// The list and n roots together are exactly the budget, plus extra.
			left := specScanBytes + extra - len(f.body("/api/plugins/"))
			b := newBarrier(n)
			for i := range n {
				slug := fmt.Sprintf("p%02d", i)
				doc := `{"widgets": "/api/plugins/` + slug + `/widgets/"}`
				size := left / n
				if i == 0 {
					size += left % n
				}
				doc += strings.Repeat(" ", size-len(doc))
				f.handle("/api/plugins/"+slug+"/", func(w http.ResponseWriter, r *http.Request) {
					// Every root streams half, waits for the others, then the rest.
					w.Header().Set("Content-Length", strconv.Itoa(len(doc)))
					io.WriteString(w, doc[:len(doc)/2])
					w.(http.Flusher).Flush()
					b.wait()
					io.WriteString(w, doc[len(doc)/2:])
				})
			}
			c := f.client()
			if extra == 0 {
				cat := scanAllOK(t, c)
				if len(cat.problems) != 0 {
					t.Errorf("problems %v", cat.problems)
				}
			} else {
				scanAllFails(t, c, "discovery bodies exceed the scan's aggregate limit (2097152 bytes)")
			}
			if !b.reached.Load() {
				t.Errorf("the roots did not stream at the same time")
			}
		})
	}
}

func TestScanDocumentByteLimits(t *testing.T) {
	t.Parallel()
	docs := []struct {
		name, path string
		limit      int
		whole      bool // the whole scan fails, not one plugin
	}{
		{"list", "/api/plugins/", specListBytes, true},
		{"root", "/api/plugins/a/", specListBytes, false},
		{"manifest", "/api/plugins/a/mcp/", specManifestBytes, false},
	}
	for _, d := range docs {
		for _, chunked := range []bool{false, true} {
			for _, extra := range []int{0, 1} {
				t.Run(fmt.Sprintf("%s/chunked=%t/%d", d.name, chunked, d.limit+extra), func(t *testing.T) {
					t.Parallel()
					f := newFakeNetBox(t)
					f.addPlugin("a", readTool("list"))
					f.addPlugin("b", readTool("list"))
					f.setChunked(chunked)
					f.padTo(d.path, d.limit+extra)
					want := fmt.Sprintf("more than %d bytes", d.limit)
					if !chunked {
						want = fmt.Sprintf("Content-Length %d is more than %d bytes", d.limit+1, d.limit)
					}
					switch {
					case extra == 0:
						if cat := scanAllOK(t, f.client()); len(cat.tools) != 2 || len(cat.problems) != 0 {
							t.Errorf("tools %v problems %v", toolNames(cat), cat.problems)
						}
					case d.whole:
						scanAllFails(t, f.client(), "/api/plugins/: body exceeds its size limit: "+want)
					default:
						cat := scanAllOK(t, f.client())
						onlyProblem(t, cat, "a", "discovery_failed", f.URL+d.path+": body exceeds its size limit: "+want)
						if got := toolNames(cat); !slices.Equal(got, []string{"b.list"}) {
							t.Errorf("tools %v", got)
						}
						scanOneFails(t, f.client(), "a", "discovery_failed", want)
					}
				})
			}
		}
	}
}

// manifestWithValues is a valid manifest of exactly n values, padded with
// outputSchema examples that stay inside the per-schema bounds.
func manifestWithValues(t *testing.T, slug string, n int) string {
	t.Helper()
	build := func(counts []int) string {
		tools := numberedTools(len(counts))
		for i, k := range counts {
			tools[i].OutputSchema = json.RawMessage(`{"examples": ` + zeros(k) + `}`)
		}
		return manifestJSON(slug, tools...)
	}
	counts := make([]int, 8)
	base, _ := jsonShape(t, build(counts))
	left := n - base
	for i := range counts {
		counts[i] = min(left, specSchemaValues-2) // the schema object and its examples array
		left -= counts[i]
	}
	doc := build(counts)
	if got, _ := jsonShape(t, doc); left != 0 || got != n {
		t.Fatalf("manifest of %d values, want %d", got, n)
	}
	return doc
}

func TestScanDepthAndValueLimits(t *testing.T) {
	t.Parallel()
	advert := `"mcp": {"schema_version": "1", "manifest": "/api/plugins/a/mcp/"}`
	rootWithValues := func(t *testing.T, n int) string {
		doc := func(k int) string { return `{` + advert + `, "v": ` + zeros(k) + `}` }
		base, _ := jsonShape(t, doc(0))
		return doc(n - base)
	}
	// depth counts the root object: root + 23 arrays is depth 24.
	rootWithDepth := func(depth int) string { return `{` + advert + `, "d": ` + nested(depth-1) + `}` }
	manifestWithDepth := func(depth int) string {
		tl := readTool("list")
		// manifest, tools, tool, outputSchema, examples: depth 5 before the arrays.
		tl.OutputSchema = json.RawMessage(`{"examples": ` + nested(depth-4) + `}`)
		return manifestJSON("a", tl)
	}
	type scanCase struct {
		name, root, manifest, list string
		problem                    string // "" for a clean scan
		whole                      bool
	}
	cases := []scanCase{
		{name: "root depth 24", root: rootWithDepth(24)},
		{name: "root depth 25", root: rootWithDepth(25), problem: "nesting deeper than 24"},
		{name: "root 12000 values", root: rootWithValues(t, 12000)},
		{name: "root 12001 values", root: rootWithValues(t, 12001), problem: "more than 12000 values"},
		// A valid manifest cannot nest 24 deep (schemas stop at 16): at 24 the
		// decoder passes it to the schema rule, at 25 it stops it itself.
		{name: "manifest depth 24", manifest: manifestWithDepth(24), problem: "nesting deeper than 16"},
		{name: "manifest depth 25", manifest: manifestWithDepth(25), problem: "nesting deeper than 24"},
		{name: "manifest 12000 values", manifest: manifestWithValues(t, "a", 12000)},
		{name: "manifest 12001 values", manifest: manifestWithValues(t, "a", 12001), problem: "more than 12000 values"},
		{name: "list depth 24", list: `{"a": "/api/plugins/a/", "deep": ` + nested(23) + `}`, problem: "the link is not a string"},
		{name: "list depth 25", list: `{"a": "/api/plugins/a/", "deep": ` + nested(24) + `}`, problem: "nesting deeper than 24", whole: true},
	}
	listValues := func(n int) string {
		doc := func(k int) string { return `{"a": "/api/plugins/a/", "v": ` + zeros(k) + `}` }
		base, _ := jsonShape(t, doc(0))
		return doc(n - base)
	}
	cases = append(cases,
		scanCase{name: "list 12000 values", list: listValues(12000), problem: "the link is not a string"},
		scanCase{name: "list 12001 values", list: listValues(12001), problem: "more than 12000 values", whole: true})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			if c.root != "" {
				if v, d := jsonShape(t, c.root); v > 12001 || d > 25 {
					t.Fatalf("test document of %d values, depth %d", v, d)
				}
			}
			f := newFakeNetBox(t)
			f.setPlugin("a", &fakePlugin{root: c.root, manifest: orDefault(c.manifest, manifestJSON("a", readTool("list")))})
			f.setList(c.list)
			switch {
			case c.whole:
				scanAllFails(t, f.client(), c.problem)
			case c.problem == "":
				if cat := scanAllOK(t, f.client()); len(cat.tools) == 0 || len(cat.problems) != 0 {
					t.Errorf("tools %v problems %v", toolNames(cat), cat.problems)
				}
			default:
				cat := scanAllOK(t, f.client())
				if len(cat.problems) != 1 || !strings.Contains(cat.problems[0].Error, c.problem) {
					t.Errorf("problems %v, want one containing %q", cat.problems, c.problem)
				}
				if c.list == "" {
					scanOneFails(t, f.client(), "a", "discovery_failed", c.problem)
				}
			}
		})
	}
}

// TestScanDeadline changes scanDeadline, so it does not run in parallel.
func TestScanDeadline(t *testing.T) {
	saved := scanDeadline
	t.Cleanup(func() { scanDeadline = saved })
	if saved != 30*time.Second {
		t.Errorf("the scan deadline is %v; SPEC §3 says 30 s", saved)
	}

	f := newFakeNetBox(t)
	f.addPlugin("fast", readTool("list"))
	scanDeadline = 5 * time.Second
	if cat := scanAllOK(t, f.client()); len(cat.tools) != 1 {
		t.Fatalf("tools %v", toolNames(cat))
	}

	// A root that never answers: the per-request timeout (5 s) is longer,
	// so the scan deadline must end the scan.
	f.addPlugin("slow", readTool("list"))
	f.handle("/api/plugins/slow/", func(w http.ResponseWriter, r *http.Request) { untilCancelled(r) })
	scanDeadline = 300 * time.Millisecond
	scanAllFails(t, f.client(), "the scan took longer than 300ms")
	scanOneFails(t, f.client(), "slow", "discovery_failed", "the scan took longer than 300ms")
}

func TestScanCancelled(t *testing.T) {
	t.Parallel()
	f := newFakeNetBox(t)
	f.addPlugin("fast", readTool("list"))
	f.addPlugin("slow", readTool("list"))
	arrived, cancelled := make(chan struct{}), make(chan bool, 2)
	f.handle("/api/plugins/slow/", func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		cancelled <- untilCancelled(r)
	})
	for _, one := range []bool{false, true} {
		ctx, cancel := context.WithCancel(context.Background())
		go func() { <-arrived; cancel() }()
		var err error
		if one {
			_, err = f.client().scanOne(ctx, "slow", callOptions{})
		} else {
			_, err = f.client().scanAll(ctx, callOptions{})
		}
		if be := asBridgeError(t, err); be.Code != "discovery_failed" || be.Message != "the scan was cancelled" {
			t.Errorf("selected=%t: %s: %s", one, be.Code, be.Message)
		}
		if !<-cancelled {
			t.Errorf("selected=%t: the in-flight request was not cancelled", one)
		}
	}
}

func TestScanStalledBody(t *testing.T) {
	t.Parallel()
	stall := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"mcp": {"schema_ver`)
		w.(http.Flusher).Flush()
		untilCancelled(r)
	}
	for _, path := range []string{"/api/plugins/stuck/", "/api/plugins/stuck/mcp/"} {
		t.Run(path, func(t *testing.T) {
			t.Parallel()
			f := newFakeNetBox(t)
			f.addPlugin("stuck", readTool("list"))
			f.addPlugin("good", readTool("list"))
			f.handle(path, stall)
			c := f.client(withTimeout(time.Second))
			cat := scanAllOK(t, c)
			onlyProblem(t, cat, "stuck", "discovery_failed", f.URL+path+": body could not be read: timed out after 1s")
			if got := toolNames(cat); !slices.Equal(got, []string{"good.list"}) {
				t.Errorf("tools %v", got)
			}
			scanOneFails(t, c, "stuck", "discovery_failed", "timed out after 1s")
		})
	}
}

// ---- transport ----

func TestRedirectsNeverFollowed(t *testing.T) {
	t.Parallel()
	var elsewhereHits atomic.Int64
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		elsewhereHits.Add(1)
		writeJSON(w, http.StatusOK, `{}`, false)
	}))
	t.Cleanup(elsewhere.Close)
	docs := map[string]string{"list": "/api/plugins/", "root": "/api/plugins/a/", "manifest": "/api/plugins/a/mcp/"}
	for _, status := range []int{301, 302, 307, 308} {
		for name, path := range docs {
			for _, cross := range []bool{false, true} {
				t.Run(fmt.Sprintf("%d/%s/cross-origin=%t", status, name, cross), func(t *testing.T) {
					t.Parallel()
					f := newFakeNetBox(t)
					f.addPlugin("a", readTool("list"))
					f.addPlugin("b", readTool("list"))
					var hits atomic.Int64
					f.handle("/moved/", func(w http.ResponseWriter, r *http.Request) { hits.Add(1) })
					target := f.URL + "/moved/"
					if cross {
						target = elsewhere.URL + "/moved/"
					}
					f.handle(path, func(w http.ResponseWriter, r *http.Request) {
						w.Header().Set("Location", target)
						writeJSON(w, status, `{"detail": "moved"}`, false)
					})
					want := fmt.Sprintf("redirects are never followed: HTTP %d to %q", status, target)
					if name == "list" {
						scanAllFails(t, f.client(), want)
					} else {
						cat := scanAllOK(t, f.client())
						onlyProblem(t, cat, "a", "discovery_failed", want)
						if got := toolNames(cat); !slices.Equal(got, []string{"b.list"}) {
							t.Errorf("tools %v", got)
						}
						scanOneFails(t, f.client(), "a", "discovery_failed", want)
					}
					if hits.Load() != 0 || f.requests("/moved/") != 0 {
						t.Errorf("the redirect was followed")
					}
				})
			}
		}
	}
	t.Cleanup(func() {
		if elsewhereHits.Load() != 0 {
			t.Errorf("a redirect to another origin was followed %d times", elsewhereHits.Load())
		}
	})
}

// rawClient is a client of a bare server, for transport tests; edits
// change its configuration first.
func rawClient(t testing.TB, rawURL string, timeout time.Duration, edits ...func(*config)) *client {
	base, origin, prefix, err := normalizeURL(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	return testClient(t, &config{base: base, origin: origin, prefix: prefix, auth: "Token " + fakeToken, timeout: timeout}, edits...)
}

func listRequest(limit int) request {
	return request{method: http.MethodGet, path: "/api/plugins/", limit: limit}
}

func TestContentLengthFailsBeforeReading(t *testing.T) {
	t.Parallel()
	// The server sends the headers and no body at all: a client that
	// started reading would block until its timeout instead.
	done := make(chan bool, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(specListBytes+1))
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		done <- untilCancelled(r)
	}))
	t.Cleanup(srv.Close)
	c := rawClient(t, srv.URL, 5*time.Second)
	resp, err := c.do(context.Background(), listRequest(specListBytes))
	if !errors.Is(err, errTooLarge) || !strings.Contains(err.Error(), "Content-Length 1048577 is more than 1048576 bytes") {
		t.Fatalf("error %v", err)
	}
	var te *transportError
	if !errors.As(err, &te) || !te.sent || te.resp == nil || te.resp.status != 200 || resp == nil || resp.body != nil {
		t.Errorf("transport error %+v", te)
	}
	if !<-done {
		t.Errorf("the client kept the connection open")
	}
	// Exactly at the limit the body is read.
	srv2 := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, "{}"+strings.Repeat(" ", specListBytes-2), false)
	}))
	t.Cleanup(srv2.Close)
	if resp, err := rawClient(t, srv2.URL, 5*time.Second).do(context.Background(), listRequest(specListBytes)); err != nil || len(resp.body) != specListBytes {
		t.Errorf("at the limit: %v", err)
	}
}

// TestResponseHeadersBounded: response headers are bounded like bodies; the
// transport's own default (10 MiB each) let one scan hold some 190 MiB of
// hostile headers with 16 requests in flight.
func TestResponseHeadersBounded(t *testing.T) {
	t.Parallel()
	pad := strings.Repeat("x", 4000)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.URL.Query().Get("pads"))
		for range n {
			w.Header().Add("X-Pad", pad)
		}
		writeJSON(w, http.StatusOK, "{}", false)
	}))
	t.Cleanup(srv.Close)
	c := rawClient(t, srv.URL, 5*time.Second)
	for pads, ok := range map[int]bool{4: true, 256: false, 2500: false} {
		req := listRequest(specListBytes)
		req.query = "pads=" + strconv.Itoa(pads)
		if _, err := c.do(context.Background(), req); (err == nil) != ok || !ok && !strings.Contains(err.Error(), "headers exceeded") {
			t.Errorf("%d KB of headers: %v", pads*4, err)
		}
	}
}

func TestNonSuccessBodiesChargeTheBudget(t *testing.T) {
	t.Parallel()
	page := "<html>" + strings.Repeat("x", 294) + "</html>" // 307 bytes
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusNotFound)
		io.WriteString(w, page)
	}))
	t.Cleanup(srv.Close)
	c := rawClient(t, srv.URL, 5*time.Second)
	b := new(atomic.Int64)
	b.Store(int64(len(page)))
	req := listRequest(specListBytes)
	req.allowance = b
	resp, err := c.do(context.Background(), req)
	if err != nil || resp.status != 404 || string(resp.body) != page || b.Load() != 0 {
		t.Fatalf("within the budget: %v, %d left", err, b.Load())
	}
	req.allowance = new(atomic.Int64)
	req.allowance.Store(int64(len(page) - 1))
	if _, err := c.do(context.Background(), req); !errors.Is(err, errBudget) {
		t.Fatalf("over the budget: %v, want errBudget", err)
	}

	// In a scan, 404 pages draw from the same 2 MiB.
	f := newFakeNetBox(t)
	bigPage := strings.Repeat("<p>Page Not Found</p>", (200<<10)/21)
	for i := range 12 {
		slug := fmt.Sprintf("p%02d", i)
		f.addPlugin(slug, readTool("list"))
		f.handle("/api/plugins/"+slug+"/mcp/", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, bigPage)
		})
	}
	scanAllFails(t, f.client(), "discovery bodies exceed the scan's aggregate limit")
}

func TestTransportErrorSent(t *testing.T) {
	t.Parallel()
	// A refused connection: nothing was sent.
	refused := refusedURL(t)
	_, err := rawClient(t, refused, 2*time.Second).do(context.Background(), listRequest(specListBytes))
	var te *transportError
	if !errors.As(err, &te) || te.sent || te.resp != nil {
		t.Fatalf("refused: %#v, want sent false", err)
	}

	// A server that reads the whole request, then hangs up: it was sent.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var accepted atomic.Int64
	serveConns(t, ln, func(conn net.Conn) {
		accepted.Add(1)
		if req, err := http.ReadRequest(bufio.NewReader(conn)); err == nil {
			io.Copy(io.Discard, req.Body)
		}
		conn.Close()
	})
	c := rawClient(t, "http://"+ln.Addr().String(), 2*time.Second)
	for _, req := range []request{listRequest(specListBytes), {method: http.MethodPost, path: "/api/plugins/x/run/", body: []byte(`{"a":1}`), limit: specInstanceBytes}} {
		_, err = c.do(context.Background(), req)
		te = nil
		if !errors.As(err, &te) || !te.sent || te.resp != nil {
			t.Errorf("%s after reading: %#v, want sent true", req.method, err)
		}
	}
	if n := accepted.Load(); n != 2 {
		t.Errorf("%d connections, want 2 (no retry)", n)
	}

	// Through scan: a refused NetBox is an error without a response.
	_, err = rawClient(t, refused, 2*time.Second).scanAll(context.Background(), callOptions{})
	be := asBridgeError(t, err)
	if !errors.As(be, &te) || te.resp != nil || te.sent {
		t.Errorf("scan of a refused NetBox: %v", err)
	}
}

// ---- benchmarks (SPEC §10) ----

// benchLatency is the round trip the scan benchmarks add to every request.
const benchLatency = 10 * time.Millisecond

// BenchmarkScan128 is a full scan of 128 advertising plugins with 4 tools
// each; SPEC §10 wants at most 20 round trips (sequentially it takes 257).
func BenchmarkScan128(b *testing.B) {
	f := newFakeNetBox(b)
	for i := range specScanRoots {
		f.addPlugin(fmt.Sprintf("p%03d", i), numberedTools(4)...)
	}
	f.setLatency(benchLatency)
	c := f.client()
	b.ReportAllocs()
	for b.Loop() {
		cat, err := c.scanAll(context.Background(), callOptions{})
		if err != nil || len(cat.tools) != 4*specScanRoots {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed())/float64(b.N)/float64(benchLatency), "round-trips/op")
}

// BenchmarkSelectedPlugin is the discovery before a dispatch; SPEC §10 wants
// one round trip.
func BenchmarkSelectedPlugin(b *testing.B) {
	f := newFakeNetBox(b)
	f.addPlugin("inv", numberedTools(4)...)
	f.setLatency(benchLatency)
	c := f.client()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.scanOne(context.Background(), "inv", callOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed())/float64(b.N)/float64(benchLatency), "round-trips/op")
}

// FuzzResolveLink: any link either fails or yields a normalized path under
// /api/ of the configured origin.
func FuzzResolveLink(f *testing.F) {
	for _, seed := range []string{"/api/plugins/x/", "http://127.0.0.1:8000/netbox/api/plugins/x/mcp/", "https://evil/api/",
		"//evil/api/", "/api/../x/", "/netbox/api/%2e%2e/", "HTTP://127.0.0.1:8000/api/plugins/a/", "/api/plugins/a\\b/"} {
		f.Add(seed)
	}
	base, origin, prefix, _ := normalizeURL("http://127.0.0.1:8000/netbox")
	c := newClient(&config{base: base, origin: origin, prefix: prefix, timeout: time.Second})
	f.Fuzz(func(t *testing.T, link string) {
		path, err := c.resolveLink(link, true)
		if err != nil {
			if len(err.Error()) > 3*specClip+400 {
				t.Fatalf("error echoes too much: %d bytes", len(err.Error()))
			}
			return
		}
		if !strings.HasPrefix(path, "/api/") || !strings.HasSuffix(path, "/") || strings.Contains(path, "//") ||
			strings.ContainsAny(path, "%\\?#") || slices.Contains(strings.Split(path, "/"), "..") || slices.Contains(strings.Split(path, "/"), ".") {
			t.Fatalf("%q resolved to %q", link, path)
		}
		for i := 0; i < len(path); i++ {
			if path[i] <= ' ' || path[i] >= 0x7f {
				t.Fatalf("%q resolved to %q with byte %#x", link, path, path[i])
			}
		}
	})
}

// TestProxyOnlyForHTTPS: a plain-HTTP NetBox is never reached through a
// proxy, which would see the token; HTTPS goes through one as configured.
func TestProxyOnlyForHTTPS(t *testing.T) {
	saved := environmentProxy
	t.Cleanup(func() { environmentProxy = saved })
	environmentProxy = func(*http.Request) (*url.URL, error) { return url.Parse("http://proxy.invalid:3128") }
	proxy := newClient(&config{timeout: time.Second}).http.Transport.(*http.Transport).Proxy
	for rawURL, want := range map[string]bool{"http://netbox.example.com/api/": false, "https://netbox.example.com/api/": true} {
		req, _ := http.NewRequest(http.MethodGet, rawURL, nil)
		u, err := proxy(req)
		if err != nil || (u != nil) != want {
			t.Errorf("%s: proxy %v, %v; want a proxy: %v", rawURL, u, err, want)
		}
	}
}

// TestHostileLabelIsClipped: SPEC §4, a plugin-list label is echoed with at
// most 200 characters, in the problem's plugin and in its message.
func TestHostileLabelIsClipped(t *testing.T) {
	t.Parallel()
	f := newFakeNetBox(t)
	f.addListEntry(strings.Repeat("x", 870000), `"/api/users/"`)
	f.addListEntry("a"+strings.Repeat("é", 300), `"/api/users/"`) // byte 200 falls inside a character
	cat := scanAllOK(t, f.client())
	if len(cat.problems) != 2 {
		t.Fatalf("problems %d", len(cat.problems))
	}
	for _, p := range cat.problems {
		if n := utf8.RuneCountInString(p.Plugin); n > 201 || !utf8.ValidString(p.Plugin) {
			t.Errorf("plugin of %d characters (valid UTF-8 %t)", n, utf8.ValidString(p.Plugin))
		}
		if n := utf8.RuneCountInString(p.Error); n > 600 {
			t.Errorf("message of %d characters", n)
		}
	}
}

// TestScanStopsAtABrokenLimit: SPEC §11, a scan that breaks a limit stops
// its outstanding requests at once instead of waiting for the slowest.
func TestScanStopsAtABrokenLimit(t *testing.T) {
	t.Parallel()
	f := newFakeNetBox(t)
	var stalled, released atomic.Int32
	for i := range 40 {
		slug := fmt.Sprintf("p%02d", i)
		f.addPlugin(slug, readTool("list"))
		if i < 4 {
			f.padTo("/api/plugins/"+slug+"/", 700<<10) // four of them spend the 2 MiB budget
			continue
		}
		f.handle("/api/plugins/"+slug+"/", func(w http.ResponseWriter, r *http.Request) {
			stalled.Add(1)
			select {
			case <-r.Context().Done():
				released.Add(1)
			case <-time.After(20 * time.Second):
			}
		})
	}
	start := time.Now()
	scanAllFails(t, f.client(), "discovery bodies exceed the scan's aggregate limit")
	if elapsed := time.Since(start); elapsed > 10*time.Second {
		t.Errorf("the scan waited %v for its slowest request", elapsed)
	}
	deadline := time.Now().Add(5 * time.Second)
	for released.Load() < stalled.Load() && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if stalled.Load() == 0 || released.Load() != stalled.Load() {
		t.Errorf("%d of %d outstanding requests were stopped", released.Load(), stalled.Load())
	}
}

// waiting is how many calls wait for the full scan of c with no per-call
// token or headers: what the test waits on before it lets the scan go.
func waiting(c *client) int {
	flights.Lock()
	defer flights.Unlock()
	for k, f := range flights.m {
		if k.c == c {
			return len(f.watchers)
		}
	}
	return 0
}

// TestConcurrentFullScansAreShared: SPEC §11, concurrent full scans with
// the same NetBox, credential and caller headers share one discovery; one
// that starts after it finished makes its own requests (coalesced, not
// cached); other headers or another token are another scan; a caller that
// gives up ends only its own wait, and the last to give up stops the scan.
func TestConcurrentFullScansAreShared(t *testing.T) {
	t.Parallel()
	f := newFakeNetBox(t)
	for i := range 4 {
		f.addPlugin(fmt.Sprintf("p%d", i), readTool("list"))
	}
	const scan = 1 + 4*2 // the list, then a root and a manifest per plugin
	release := make(chan struct{})
	f.setBefore(func(r *http.Request) {
		if r.URL.Path == "/api/plugins/" {
			<-release
		}
	})
	c := f.client()
	var wg sync.WaitGroup
	results := make([]*catalog, 16)
	for i := range 16 {
		wg.Go(func() { results[i], _ = c.scanAll(context.Background(), callOptions{}) })
	}
	for deadline := time.Now().Add(5 * time.Second); waiting(c) < 16 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	close(release)
	wg.Wait()
	for i, cat := range results {
		if cat == nil || len(cat.tools) != 4 {
			t.Fatalf("caller %d: %+v", i, cat)
		}
	}
	if n := f.totalRequests(); n != scan {
		t.Errorf("16 concurrent identical full scans made %d requests, want %d: one scan", n, scan)
	}
	scanAllOK(t, c)
	if n := f.totalRequests(); n != 2*scan {
		t.Errorf("a scan after the shared one made %d requests, want %d: a finished scan is not cached", n-scan, scan)
	}
	f.resetLog()
	var other sync.WaitGroup
	other.Go(func() { c.scanAll(context.Background(), callOptions{header: http.Header{"X-Caller": {"1"}}}) })
	other.Go(func() { c.scanAll(context.Background(), callOptions{auth: "Token " + fakeToken, authFrom: "per-call"}) })
	other.Go(func() { c.scanAll(context.Background(), callOptions{}) })
	other.Wait()
	if n := f.totalRequests(); n != 3*scan {
		t.Errorf("scans with other headers or another token made %d requests, want %d: three scans", n, 3*scan)
	}

	// Giving up: the first of two callers gives up and the other still gets
	// the catalog; when the only caller gives up, the scan stops.
	hold := make(chan struct{})
	f.setBefore(func(r *http.Request) {
		if r.URL.Path == "/api/plugins/" {
			<-hold
		}
	})
	quitter, quit := context.WithCancel(context.Background())
	quitErr := make(chan error, 1)
	go func() { _, err := c.scanAll(quitter, callOptions{}); quitErr <- err }()
	stayed := make(chan *catalog, 1)
	go func() { cat, _ := c.scanAll(context.Background(), callOptions{}); stayed <- cat }()
	for deadline := time.Now().Add(5 * time.Second); waiting(c) < 2 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	quit()
	if err := <-quitErr; err == nil {
		t.Error("the caller that gave up got no error")
	}
	close(hold)
	if cat := <-stayed; cat == nil || len(cat.tools) != 4 {
		t.Errorf("the caller that stayed got %+v", cat)
	}
	entered, stuck := make(chan struct{}), make(chan struct{})
	f.setBefore(func(r *http.Request) {
		if r.URL.Path == "/api/plugins/" {
			close(entered)
			untilCancelled(r)
			close(stuck)
		}
	})
	alone, giveUp := context.WithCancel(context.Background())
	go func() { c.scanAll(alone, callOptions{}) }()
	waitFor(t, entered, "the scan's first request")
	giveUp()
	waitFor(t, stuck, "the shared scan's request to end when its last caller gave up")
}

// TestMemo: SPEC §10, a body byte for byte the same as one seen before
// costs a hash, not a parse; a different byte is a new computation; the
// memo stays within its bounds whatever bodies come, emptying itself when
// full (issue 31).
func TestMemo(t *testing.T) {
	computed := 0
	compute := func() int { computed++; return computed }
	a, b := []byte(`{"x": 1}`), []byte(`{"x": 2}`)
	first, again := remember("test", a, 1, compute), remember("test", a, 1, compute) // the second time, the same bytes: no computation
	if first != 1 || again != 1 || remember("test", b, 1, compute) != 2 || remember("other scope", a, 1, compute) != 3 || computed != 3 {
		t.Fatalf("%d computations for 2 bodies in 2 scopes, one seen twice", computed)
	}
	// A NetBox that serves new bytes every time: the memo never passes its bounds.
	for i := range 3 * memoEntries {
		remember("hostile", fmt.Appendf(nil, `{"n": %d}`, i), 64<<10, compute)
		memo.Lock()
		n, charged := len(memo.values), memo.charged
		memo.Unlock()
		if n > memoEntries || charged > memoCharge {
			t.Fatalf("after %d new bodies: %d entries charged %d bytes, over %d and %d", i+1, n, charged, memoEntries, memoCharge)
		}
	}
}

// TestMemoNeverStale: SPEC §3 and §10, every call still fetches the root
// and the manifest, so a changed byte takes effect on the very next call: a
// write tool removed from the manifest, or the advertisement removed from
// the root, can never stay callable; and full scans running beside calls
// of the same manifest (whose light copies have no schemas) leave the
// calls' validation intact (issue 31).
func TestMemoNeverStale(t *testing.T) {
	t.Parallel()
	f := newInvNetBox(t)
	cs := connect(t, newBridge(f, true), protocolVersions[0], nil)
	if r := callInv(t, cs, "create", map[string]any{"name": "x"}); r.isError {
		t.Fatalf("the write before the change: %s", r.text)
	}
	f.plugin("inv", func(p *fakePlugin) { p.manifest = manifestJSON("inv", searchTool, peekTool, purgeTool) }) // create removed
	wantError(t, callInv(t, cs, "create", map[string]any{"name": "x"}), "tool_not_found", false)
	f.plugin("inv", func(p *fakePlugin) { p.root = `{"mcp": null}` })
	wantError(t, callInv(t, cs, "search", map[string]any{}), "not_advertised", false)
	f.plugin("inv", func(p *fakePlugin) {
		p.root = ""
		p.manifest = manifestJSON("inv", searchTool, peekTool, createTool, purgeTool)
	})
	var wg sync.WaitGroup
	for i := range 40 {
		wg.Go(func() {
			if i%2 == 0 {
				call(t, cs, "plugin_list_tools", map[string]any{"header": []string{fmt.Sprintf("X-Caller: %d", i)}})
				return
			}
			r := callInv(t, cs, "create", map[string]any{"name": 7}) // a number where the schema says string
			if r.code() != "invalid_arguments" {
				t.Errorf("a call beside full scans: %s, want invalid_arguments (its input schema must hold)", r.text)
			}
		})
	}
	wg.Wait()
}
