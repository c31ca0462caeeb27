package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// protocolVersions are what today's clients send, and the SDK's newest ("").
var protocolVersions = []string{"2025-11-25", ""}

// The inv plugin of the MCP tests: a read with every query type, a HEAD, a
// write and a destructive tool.
var (
	searchTool = toolSpec{Name: "search", Title: "Search", Description: "Search records.", Method: "GET", Path: "search/", Effect: "read",
		InputSchema: json.RawMessage(`{"type": "object", "additionalProperties": false, "properties": {
			"q": {"type": "string"}, "limit": {"type": "integer", "minimum": 1, "maximum": 9223372036854775807},
			"ratio": {"type": "number"}, "flag": {"type": "boolean"}, "maybe": {"type": ["string", "null"]},
			"tags": {"type": "array", "items": {"type": "string"}}, "ids": {"type": ["array", "null"], "items": {"type": "integer"}},
			"mode": {"type": "string", "enum": ["fast", "exact"]}, "since": {"type": "string", "format": "date-time"}}}`),
		OutputSchema: json.RawMessage(`{"type": "object", "properties": {"count": {"type": "integer", "minimum": 0}}, "required": ["count"]}`),
		Annotations:  toolAnnotations{ReadOnlyHint: true, IdempotentHint: true}}
	peekTool = toolSpec{Name: "peek", Title: "Peek", Description: "Check that records exist.", Method: "HEAD", Path: "search/", Effect: "read",
		InputSchema: json.RawMessage(`{"type": "object", "additionalProperties": false, "properties": {"q": {"type": "string"}}}`),
		Annotations: toolAnnotations{ReadOnlyHint: true, IdempotentHint: true}}
	createTool = toolSpec{Name: "create", Title: "Create", Description: "Create a record.", Method: "POST", Path: "records/", Effect: "write",
		InputSchema: json.RawMessage(`{"type": "object", "additionalProperties": false, "required": ["name"], "properties": {
			"name": {"type": "string", "minLength": 1}, "size": {"type": "integer", "minimum": 0, "maximum": 9223372036854775807},
			"at": {"type": "string", "format": "date-time"}, "kind": {"type": "string", "enum": ["vm", "device"]}}}`),
		OutputSchema: json.RawMessage(`{"type": "object", "properties": {"id": {"type": "integer", "minimum": 1}}, "required": ["id"]}`)}
	purgeTool = toolSpec{Name: "purge", Title: "Purge", Description: "Delete every record.", Method: "DELETE", Path: "records/", Effect: "destructive",
		InputSchema: json.RawMessage(`{"type": "object", "additionalProperties": false}`),
		Annotations: toolAnnotations{DestructiveHint: true}}
)

const (
	searchPath  = "/api/plugins/inv/search/"
	recordsPath = "/api/plugins/inv/records/"
)

// newInvNetBox is a fake NetBox with the inv plugin, a quiet plugin and a
// broken one, whose targets answer plausibly until a test changes them.
func newInvNetBox(t testing.TB) *fakeNetBox {
	f := newFakeNetBox(t)
	f.addPlugin("inv", searchTool, peekTool, createTool, purgeTool)
	f.addPlugin("quiet")
	f.setPlugin("broken", &fakePlugin{manifest: strings.Replace(manifestJSON("broken", readTool("list")), `"GET"`, `"get"`, 1)})
	f.handle(searchPath, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Request-ID", "req-1")
		w.Header().Set("Set-Cookie", "sessionid=secret")
		writeJSON(w, http.StatusOK, `{"count": 2}`, false)
	})
	f.handle(recordsPath, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Location", recordsPath+"7/")
		writeJSON(w, http.StatusCreated, `{"id": 7}`, false)
	})
	return f
}

// connect runs the bridge's MCP server in memory and returns a client session.
func connect(t testing.TB, b *bridge, version string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	ctx := context.Background()
	ct, st := mcp.NewInMemoryTransports()
	server := newMCPServer(b, slog.New(slog.NewTextHandler(io.Discard, nil)))
	ss, err := server.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, opts).Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cs.Close()
		ended := make(chan struct{})
		go func() { ss.Wait(); close(ended) }()
		select {
		case <-ended:
		case <-time.After(10 * time.Second):
			t.Errorf("the server session did not end 10 s after the client closed it: a tool handler never returned")
		}
	})
	return cs
}

func newBridge(f *fakeNetBox, allowMutations bool, edits ...func(*config)) *bridge {
	return &bridge{client: f.client(edits...), policy: writePolicy{all: allowMutations}, confirm: "auto", audit: &auditLog{stderr: slog.DiscardHandler}}
}

// result is a tool result with its structured content decoded.
type result struct {
	isError bool
	text    string
	doc     map[string]any
}

func (r result) code() string {
	e, _ := r.doc["error"].(map[string]any)
	s, _ := e["code"].(string)
	return s
}

func (r result) errorField(key string) any {
	e, _ := r.doc["error"].(map[string]any)
	return e[key]
}

func call(t testing.TB, cs *mcp.ClientSession, tool string, args any) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s %v: %v", tool, args, err)
	}
	raw, _ := json.Marshal(res.StructuredContent)
	r := result{isError: res.IsError}
	if err := json.Unmarshal(raw, &r.doc); err != nil {
		t.Fatalf("structuredContent %s: %v", raw, err)
	}
	if len(res.Content) != 1 {
		t.Fatalf("%d content blocks", len(res.Content))
	}
	r.text = res.Content[0].(*mcp.TextContent).Text
	if !r.isError {
		// The text is the same JSON document as the structured content.
		var again map[string]any
		if err := json.Unmarshal([]byte(r.text), &again); err != nil || !jsonSame(again, r.doc) {
			t.Fatalf("text %s differs from structuredContent %s", r.text, raw)
		}
	}
	return r
}

func jsonSame(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

func callInv(t testing.TB, cs *mcp.ClientSession, tool string, args map[string]any, extra ...any) result {
	t.Helper()
	in := map[string]any{"plugin": "inv", "tool": tool, "arguments": args}
	for i := 0; i+1 < len(extra); i += 2 {
		in[extra[i].(string)] = extra[i+1]
	}
	return call(t, cs, "plugin_call_tool", in)
}

func wantError(t testing.TB, r result, code string, dispatched bool) {
	t.Helper()
	if !r.isError || r.code() != code || r.errorField("dispatched") != dispatched {
		t.Fatalf("want error %s (dispatched %v), got %+v", code, dispatched, r)
	}
	if r.text != r.errorField("message") {
		t.Fatalf("text %q is not the message %q", r.text, r.errorField("message"))
	}
}

func TestServerAdvertisesOnlyTools(t *testing.T) {
	t.Parallel()
	f := newInvNetBox(t)
	for _, v := range protocolVersions {
		cs := connect(t, newBridge(f, false), v, nil)
		init := cs.InitializeResult()
		if init.ServerInfo.Name != "netbox-plugin-bridge" || !strings.Contains(init.Instructions, "dry_run") {
			t.Errorf("%q: %+v", v, init.ServerInfo)
		}
		caps := init.Capabilities
		//lint:ignore SA1019 the bridge must not advertise logging, deprecated or not
		if caps.Tools == nil || caps.Logging != nil || caps.Prompts != nil || caps.Resources != nil {
			t.Errorf("%q: capabilities %+v", v, caps)
		}
		tools, err := cs.ListTools(context.Background(), nil)
		if err != nil || len(tools.Tools) != 2 {
			t.Fatalf("%q: %v %+v", v, err, tools)
		}
		for _, tl := range tools.Tools {
			a := tl.Annotations
			switch tl.Name {
			case "plugin_list_tools":
				if !a.ReadOnlyHint || !a.IdempotentHint {
					t.Errorf("plugin_list_tools annotations %+v", a)
				}
			}
			if tl.OutputSchema != nil {
				t.Errorf("%s declares an outputSchema", tl.Name)
			}
		}
	}
}

// TestCallToolAnnotations: SPEC §9, plugin_call_tool's annotations follow
// the write policy, and its description says which in one sentence: when
// no write can pass it is read-only, not destructive, idempotent and
// open-world; when any can, not read-only, destructive and open-world.
func TestCallToolAnnotations(t *testing.T) {
	t.Parallel()
	f := newInvNetBox(t)
	for _, c := range []struct {
		name                  string
		policy                writePolicy
		edit                  func(*bridge)
		writable, destructive bool
		human                 bool // a human's confirmation may be asked
	}{
		{"switch off", writePolicy{}, nil, false, false, false},
		{"empty list", writePolicy{setting: "--allow-mutations"}, nil, false, false, false},
		{"an allow-list", writePolicy{entries: []string{"inv.create"}}, nil, true, true, true},
		{"all", writePolicy{all: true}, nil, true, true, true},
		{"all, --confirm off", writePolicy{all: true}, func(b *bridge) { b.confirm = "off" }, true, true, false},
		{"all, but --branch-only and no branch", writePolicy{all: true}, func(b *bridge) { b.branchOnly = true }, false, false, false},
		{"all, --branch-only and a branch", writePolicy{all: true}, func(b *bridge) { b.branchOnly, b.client.branch = true, "review" }, true, true, true},
		// Over stateless HTTP no human can be asked (issue 28).
		{"all, over HTTP", writePolicy{all: true}, func(b *bridge) { b.overHTTP = true }, true, true, false},
		{"all, over HTTP, --confirm writes", writePolicy{all: true}, func(b *bridge) { b.overHTTP, b.confirm = true, "writes" }, false, false, false},
		{"all, over HTTP, --confirm destructive", writePolicy{all: true}, func(b *bridge) { b.overHTTP, b.confirm = true, "destructive" }, true, false, false},
	} {
		b := newBridge(f, false)
		b.policy = c.policy
		if c.edit != nil {
			c.edit(b)
		}
		cs := connect(t, b, protocolVersions[0], nil)
		tools, err := cs.ListTools(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, tl := range tools.Tools {
			if tl.Name != "plugin_call_tool" {
				continue
			}
			a := tl.Annotations
			destructive, openWorld := a.DestructiveHint != nil && *a.DestructiveHint, a.OpenWorldHint != nil && *a.OpenWorldHint
			if a.ReadOnlyHint == c.writable || destructive != c.destructive || !openWorld || !c.writable && !a.IdempotentHint {
				t.Errorf("%s: annotations %+v (destructive %t, open-world %t), want writes possible: %t, destructive: %t", c.name, a, destructive, openWorld, c.writable, c.destructive)
			}
			if off := strings.Contains(tl.Description, "Writes are off"); off == c.writable {
				t.Errorf("%s: the description %q does not say whether writes can run", c.name, tl.Description)
			}
			if promises := strings.Contains(tl.Description, "confirm"); promises && !c.human {
				t.Errorf("%s: the description %q promises a human's confirmation where none can be asked", c.name, tl.Description)
			}
		}
	}
}

func TestListTools(t *testing.T) {
	t.Parallel()
	f := newInvNetBox(t)
	for _, v := range protocolVersions {
		cs := connect(t, newBridge(f, false), v, nil)
		all := call(t, cs, "plugin_list_tools", map[string]any{})
		cat := decodeCatalog(t, []byte(all.text))
		if names := cat.names(); all.isError || !slices.Equal(names, []string{"inv.create", "inv.peek", "inv.purge", "inv.search"}) {
			t.Fatalf("%q: %v %+v", v, names, all)
		}
		if len(cat.Problems) != 1 || cat.Problems[0].Plugin != "broken" || cat.SchemaVersion != "1" {
			t.Fatalf("%q: problems %v", v, cat.Problems)
		}
		tools := all.doc["tools"].([]any)
		first := tools[0].(map[string]any)
		if first["request_path"] != recordsPath || first["plugin"] != "inv" || first["method"] != "POST" {
			t.Errorf("%q: descriptor %v", v, first)
		}
		if _, has := tools[2].(map[string]any)["outputSchema"]; !has {
			t.Errorf("%q: outputSchema missing instead of null", v)
		}

		one := call(t, cs, "plugin_list_tools", map[string]any{"plugin": "inv"})
		if cat := decodeCatalog(t, []byte(one.text)); one.isError || len(cat.Tools) != 4 || len(cat.Problems) != 0 {
			t.Fatalf("%q: list one: %+v", v, one)
		}
		wantError(t, call(t, cs, "plugin_list_tools", map[string]any{"plugin": "broken"}), "discovery_failed", false)
		wantError(t, call(t, cs, "plugin_list_tools", map[string]any{"plugin": "quiet"}), "not_advertised", false)
		wantError(t, call(t, cs, "plugin_list_tools", map[string]any{"plugin": "gone"}), "plugin_not_found", false)
		wantError(t, call(t, cs, "plugin_list_tools", map[string]any{"plugin": "Not A Slug"}), "invalid_request", false)
		wantError(t, call(t, cs, "plugin_list_tools", map[string]any{"plugins": "inv"}), "invalid_request", false)
	}
}

// jsonArgs decodes tool arguments with their number tokens as the client
// wrote them (7.0 stays 7.0, 1.5e3 stays 1.5e3).
func jsonArgs(t testing.TB, doc string) map[string]any {
	t.Helper()
	var args map[string]any
	dec := json.NewDecoder(strings.NewReader(doc))
	dec.UseNumber()
	if err := dec.Decode(&args); err != nil {
		t.Fatal(err)
	}
	return args
}

// lastRequest is the last request the fake saw for path.
func lastRequest(t testing.TB, f *fakeNetBox, path string) fakeRequest {
	t.Helper()
	log := f.requestLog()
	for i := len(log) - 1; i >= 0; i-- {
		if log[i].path == path {
			return log[i]
		}
	}
	t.Fatalf("no request for %s", path)
	return fakeRequest{}
}

func TestReadQueryEncoding(t *testing.T) {
	t.Parallel()
	f := newInvNetBox(t)
	cs := connect(t, newBridge(f, false), protocolVersions[0], nil)
	cases := []struct {
		args  string
		query string
	}{
		{`{"q": "a b&c=d/é"}`, "q=a+b%26c%3Dd%2F%C3%A9"},
		{`{"limit": 9223372036854775807}`, "limit=9223372036854775807"},
		{`{"limit": 7.0}`, "limit=7"},
		{`{"limit": 2e1}`, "limit=20"},
		{`{"ratio": 1.5e3}`, "ratio=1.5e3"},
		{`{"ratio": 0.10}`, "ratio=0.10"},
		{`{"ratio": 3}`, "ratio=3"},
		{`{"flag": true}`, "flag=true"},
		{`{"flag": false}`, "flag=false"},
		{`{"maybe": null}`, "maybe="},
		{`{"tags": ["x", "y", "x"]}`, "tags=x&tags=y&tags=x"},
		{`{"tags": []}`, ""},
		{`{"ids": [7.0, 8, 9e0]}`, "ids=7&ids=8&ids=9"},
		{`{"ids": null}`, "ids="},
		{`{"q": "z", "flag": true, "limit": 1}`, "flag=true&limit=1&q=z"},
		{`{}`, ""},
	}
	for _, c := range cases {
		args := jsonArgs(t, c.args)
		r := callInv(t, cs, "search", args)
		if r.isError || r.doc["status"] != 200.0 {
			t.Errorf("%s: %+v", c.args, r)
			continue
		}
		if got := lastRequest(t, f, searchPath).query; got != c.query {
			t.Errorf("%s: query %q, want %q", c.args, got, c.query)
		}
		preview := callInv(t, cs, "search", args, "dry_run", true)
		if preview.isError || preview.doc["method"] != "GET" || preview.doc["path"] != searchPath || preview.doc["body"] != nil || preview.doc["allowed"] != true {
			t.Errorf("%s: dry run %+v", c.args, preview)
		}
	}
	preview := callInv(t, cs, "search", map[string]any{"tags": []any{"a"}, "limit": json.Number("7.0"), "maybe": nil, "ids": []any{}}, "dry_run", true)
	if want := map[string]any{"tags": []any{"a"}, "limit": "7", "maybe": "", "ids": []any{}}; !jsonSame(preview.doc["query"], want) {
		t.Errorf("dry-run query %v, want %v", preview.doc["query"], want)
	}
}

func TestReadResponses(t *testing.T) {
	t.Parallel()
	f := newInvNetBox(t)
	elsewhere := newFakeNetBox(t)
	cs := connect(t, newBridge(f, false), protocolVersions[0], nil)
	big := `{"count": 1, "pad": "` + strings.Repeat("x", specInstanceBytes) + `"}`
	cases := []struct {
		name    string
		status  int
		body    string
		headers map[string]string
		tool    string
		code    string // "" for success
		check   func(result) bool
	}{
		{"valid body", 200, `{"count": 3, "extra": [1]}`, nil, "search", "", func(r result) bool {
			return r.doc["body"].(map[string]any)["count"] == 3.0 && r.doc["effect"] == "read" && r.doc["tool"] == "search"
		}},
		{"kept headers", 200, `{"count": 0}`, map[string]string{"Location": searchPath + "1/", "X-Request-ID": "abc", "API-Version": "4.2",
			"ETag": `"v1"`, "Last-Modified": "Wed, 02 Dec 2026 08:00:00 GMT", "Retry-After": "5", "Allow": "GET, HEAD, OPTIONS",
			"Set-Cookie": "s=1", "X-Internal": "no", "Vary": "Accept", "Cache-Control": "private", "Server": "nginx", "Www-Authenticate": "Token"}, "search", "", func(r result) bool {
			// SPEC §9: exactly these eight when present, under its names; never Set-Cookie.
			return jsonSame(r.doc["headers"], map[string]any{"Content-Type": "application/json", "Location": searchPath + "1/", "X-Request-ID": "abc",
				"API-Version": "4.2", "ETag": `"v1"`, "Last-Modified": "Wed, 02 Dec 2026 08:00:00 GMT", "Retry-After": "5", "Allow": "GET, HEAD, OPTIONS"})
		}},
		{"output schema fails", 200, `{"count": -1}`, nil, "search", "response_invalid", func(r result) bool {
			return strings.Contains(r.text, "body.count: -1 is less than minimum 0") && r.errorField("body") == nil
		}},
		{"not strict JSON", 200, `{"count": 1, "count": 2}`, nil, "search", "response_invalid", nil},
		{"empty 200", 200, ``, nil, "search", "response_invalid", nil},
		{"HEAD", 200, ``, nil, "peek", "", func(r result) bool { _, has := r.doc["body"]; return has && r.doc["body"] == nil }},
		{"204", 204, ``, nil, "search", "", func(r result) bool { return r.doc["body"] == nil && r.doc["status"] == 204.0 }},
		{"205", 205, ``, nil, "search", "", func(r result) bool { return r.doc["body"] == nil && r.doc["status"] == 205.0 }},
		{"302", 302, ``, map[string]string{"Location": elsewhere.URL + searchPath}, "search", "response_invalid", func(r result) bool {
			return r.errorField("status") == 302.0 && strings.Contains(r.text, "redirects are never followed")
		}},
		{"oversize, streamed", 200, big, nil, "search", "response_invalid", func(r result) bool { return strings.Contains(r.text, "more than 262144 bytes") }},
		{"oversize, declared", 200, big, map[string]string{"Content-Length": fmt.Sprint(len(big))}, "search", "response_invalid", func(r result) bool {
			return strings.Contains(r.text, fmt.Sprintf("Content-Length %d is more than 262144 bytes", len(big)))
		}},
		{"502 HTML", 502, `<html><body>Bad Gateway</body></html>`, map[string]string{"Content-Type": "text/html"}, "search", "http_error", func(r result) bool {
			return r.errorField("status") == 502.0 && r.errorField("body") == nil
		}},
		{"500 oversize", 500, big, nil, "search", "http_error", func(r result) bool {
			return r.errorField("status") == 500.0 && r.errorField("body") == nil && strings.Contains(r.text, "more than 262144 bytes")
		}},
		{"503 oversize, declared", 503, big, map[string]string{"Content-Length": fmt.Sprint(len(big))}, "search", "http_error", func(r result) bool {
			return r.errorField("status") == 503.0 && r.errorField("body") == nil
		}},
		{"403 DRF", 403, `{"detail": "You do not have permission to perform this action."}`, nil, "search", "http_error", func(r result) bool {
			return r.errorField("status") == 403.0 && strings.Contains(r.text, "You do not have permission") &&
				jsonSame(r.errorField("body"), map[string]any{"detail": "You do not have permission to perform this action."})
		}},
	}
	for _, c := range cases {
		f.handle(searchPath, func(w http.ResponseWriter, r *http.Request) {
			for k, v := range c.headers {
				w.Header().Set(k, v)
			}
			if w.Header().Get("Content-Type") == "" {
				w.Header().Set("Content-Type", "application/json")
			}
			w.WriteHeader(c.status)
			io.WriteString(w, c.body)
		})
		r := callInv(t, cs, c.tool, map[string]any{})
		switch {
		case c.code == "" && r.isError, c.code != "" && (r.code() != c.code || r.errorField("dispatched") != true):
			t.Errorf("%s: want %q, got %+v", c.name, c.code, r)
		case c.check != nil && !c.check(r):
			t.Errorf("%s: %+v", c.name, r)
		}
	}
	if elsewhere.totalRequests() != 0 {
		t.Error("a redirect was followed")
	}
}

func TestWriteNeedsTheSwitch(t *testing.T) {
	t.Parallel()
	f := newInvNetBox(t)
	off := connect(t, newBridge(f, false), protocolVersions[0], nil)
	on := connect(t, newBridge(f, true), protocolVersions[0], nil)
	args := map[string]any{"name": "vm1", "size": json.Number("9223372036854775807")}
	for _, tool := range []string{"create", "purge"} {
		in := args
		if tool == "purge" {
			in = map[string]any{}
		}
		r := callInv(t, off, tool, in)
		wantError(t, r, "mutations_disabled", false)
		if !strings.Contains(r.text, "--allow-mutations") {
			t.Errorf("message does not say how to enable writes: %s", r.text)
		}
	}
	for _, sess := range []*mcp.ClientSession{off, on} {
		r := callInv(t, sess, "create", args, "dry_run", true)
		want := sess == on
		if r.isError || r.doc["dry_run"] != true || r.doc["allowed"] != want || r.doc["method"] != "POST" ||
			r.doc["path"] != recordsPath || !jsonSame(r.doc["query"], map[string]any{}) || !strings.Contains(r.doc["notice"].(string), "preview") {
			t.Errorf("dry run (switch %v): %+v", want, r)
		}
	}
	if n := f.requests(recordsPath); n != 0 {
		t.Fatalf("%d requests reached the target before the switch allowed one", n)
	}
	r := callInv(t, on, "create", args)
	if r.isError || r.doc["status"] != 201.0 || r.doc["effect"] != "write" || !jsonSame(r.doc["headers"], map[string]any{"Content-Type": "application/json", "Location": recordsPath + "7/"}) {
		t.Fatalf("write: %+v", r)
	}
	sent := lastRequest(t, f, recordsPath)
	if string(sent.body) != `{"name":"vm1","size":9223372036854775807}` || sent.method != "POST" || sent.header.Get("Content-Type") != "application/json" {
		t.Fatalf("body %s, method %s, content type %q", sent.body, sent.method, sent.header.Get("Content-Type"))
	}
}

func TestWriteOutcomes(t *testing.T) {
	t.Parallel()
	f := newInvNetBox(t)
	elsewhere := newFakeNetBox(t)
	cs := connect(t, newBridge(f, true), protocolVersions[0], nil)
	cases := []struct {
		name    string
		handler http.HandlerFunc
		code    string
		status  any // JSON number, or nil when there was no response
		body    any
	}{
		{"201 valid", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, 201, `{"id": 9}`, false) }, "", 201.0, map[string]any{"id": 9.0}},
		{"201 not JSON", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, 201, `not-json`, false) }, "outcome_unknown", 201.0, nil},
		{"201 fails outputSchema", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, 201, `{"id": 0}`, false) }, "outcome_unknown", 201.0, map[string]any{"id": 0.0}},
		{"500 JSON", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, 500, `{"detail": "boom"}`, false) }, "outcome_unknown", 500.0, map[string]any{"detail": "boom"}},
		{"400 DRF", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, 400, `{"name": ["required"]}`, false) }, "outcome_unknown", 400.0, map[string]any{"name": []any{"required"}}},
		{"307 elsewhere", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Location", elsewhere.URL+recordsPath)
			w.WriteHeader(307)
		}, "outcome_unknown", 307.0, nil},
		{"connection closed after the request", func(w http.ResponseWriter, r *http.Request) {
			conn, _, _ := w.(http.Hijacker).Hijack()
			conn.Close()
		}, "outcome_unknown", nil, nil},
		{"body cut short", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Length", "100")
			w.WriteHeader(201)
			io.WriteString(w, `{"id":`)
			conn, _, _ := w.(http.Hijacker).Hijack()
			conn.Close()
		}, "outcome_unknown", 201.0, nil},
	}
	for _, c := range cases {
		f.handle(recordsPath, c.handler)
		r := callInv(t, cs, "create", map[string]any{"name": "x"})
		if c.code == "" {
			if r.isError || r.doc["status"] != c.status || !jsonSame(r.doc["body"], c.body) {
				t.Errorf("%s: %+v", c.name, r)
			}
			continue
		}
		if r.code() != c.code || r.errorField("dispatched") != true || r.errorField("outcome") != "unknown" ||
			r.errorField("status") != c.status || !jsonSame(r.errorField("body"), c.body) || !strings.Contains(r.text, "do not retry blindly") {
			t.Errorf("%s: %+v", c.name, r)
		}
	}
	if elsewhere.totalRequests() != 0 {
		t.Error("a write was redirected to another host")
	}
}

// TestWriteRefusedBeforeSending: a target whose connection is refused is
// request_failed with dispatched false, because no byte was written.
func TestWriteRefusedBeforeSending(t *testing.T) {
	t.Parallel()
	f := newInvNetBox(t)
	b := newBridge(f, true)
	refused := strings.TrimPrefix(refusedURL(t), "http://")
	var discovered atomic.Int32
	f.setBefore(func(r *http.Request) {
		if r.Method == http.MethodGet {
			discovered.Add(1)
		}
	})
	tr := b.client.http.Transport.(*http.Transport)
	tr.DisableKeepAlives = true
	dial := tr.DialContext
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		if discovered.Load() >= 2 { // root and manifest are in: the next dial is the target's
			addr = refused
		}
		return dial(ctx, network, addr)
	}
	cs := connect(t, b, protocolVersions[0], nil)
	r := callInv(t, cs, "create", map[string]any{"name": "x"})
	wantError(t, r, "request_failed", false)
	if !strings.Contains(r.text, "before anything was sent") || r.errorField("outcome") != nil {
		t.Fatalf("%+v", r)
	}
}

func TestInvalidArgumentsSendNothing(t *testing.T) {
	t.Parallel()
	f := newInvNetBox(t)
	cs := connect(t, newBridge(f, true), protocolVersions[0], nil)
	cases := []struct {
		tool string
		args map[string]any
		want string
	}{
		{"create", map[string]any{}, `arguments: missing required property "name"`},
		{"create", map[string]any{"name": "x", "colour": "red"}, "arguments.colour: property is not allowed"},
		{"create", map[string]any{"name": "x", "kind": "rack"}, `arguments.kind: "rack" is not one of the schema's enum values`},
		{"create", map[string]any{"name": "x", "at": "2026-02-30T00:00:00Z"}, "arguments.at"},
		{"create", map[string]any{"name": "x", "size": json.Number("9223372036854775808")}, "arguments.size: 9223372036854775808 is greater than maximum 9223372036854775807"},
		{"create", map[string]any{"name": "x", "size": json.Number("1.5")}, "arguments.size: expected integer, got number"},
		{"search", map[string]any{"limit": json.Number("9007199254740993.0")}, "arguments.limit: expected integer, got number"},
		{"search", map[string]any{"tags": "x"}, "arguments.tags: expected array, got string"},
	}
	for _, c := range cases {
		r := callInv(t, cs, c.tool, c.args)
		wantError(t, r, "invalid_arguments", false)
		if !strings.Contains(r.text, c.want) || !strings.Contains(r.text, "correct the call and retry") {
			t.Errorf("%v: %s, want %q", c.args, r.text, c.want)
		}
	}
	if n := f.requests(recordsPath) + f.requests(searchPath); n != 0 {
		t.Fatalf("%d target requests for invalid arguments", n)
	}
	wantError(t, callInv(t, cs, "nope", map[string]any{}), "tool_not_found", false)
	r := call(t, cs, "plugin_call_tool", map[string]any{"plugin": "inv", "tool": "create", "arguments": []any{1}})
	wantError(t, r, "invalid_request", false)
}

// storeBridge is a session with the plugin store, whose write put takes
// any x.
func storeBridge(t *testing.T) (*fakeNetBox, *mcp.ClientSession) {
	f := newInvNetBox(t)
	anything := toolSpec{Name: "put", Title: "Put", Description: "Store anything.", Method: "PUT", Path: "any/", Effect: "write",
		InputSchema: json.RawMessage(`{"type": "object", "additionalProperties": false, "properties": {"x": true}}`)}
	f.addPlugin("store", anything)
	return f, connect(t, newBridge(f, true), protocolVersions[0], nil)
}

// TestArgumentBounds: SPEC §5 bounds arguments as an instance, 256 KiB,
// depth 32 and 10,000 values; at each bound a call goes through, one past
// it the arguments are refused before anything is sent.
func TestArgumentBounds(t *testing.T) {
	t.Parallel()
	f, cs := storeBridge(t)
	// The compact arguments {"x":…}: 6 bytes around a string's content,
	// the object and its member are depth 1 and 2 values.
	cases := []struct {
		name string
		args string
		ok   bool
	}{
		{"262144 bytes", `{"x":"` + strings.Repeat("a", 262144-8) + `"}`, true},
		{"262145 bytes", `{"x":"` + strings.Repeat("a", 262145-8) + `"}`, false},
		{"depth 32", `{"x":` + nested(31) + `}`, true},
		{"depth 33", `{"x":` + nested(32) + `}`, false},
		{"10000 values", `{"x":` + zeros(9998) + `}`, true},
		{"10001 values", `{"x":` + zeros(9999) + `}`, false},
	}
	for _, c := range cases {
		r := call(t, cs, "plugin_call_tool", map[string]any{"plugin": "store", "tool": "put", "arguments": jsonArgs(t, c.args), "dry_run": true})
		switch {
		case c.ok && (r.isError || r.doc["dry_run"] != true):
			t.Errorf("%s: %+v", c.name, clip(r.text, 300))
		case !c.ok && (!r.isError || r.errorField("dispatched") != false || (r.code() != "invalid_arguments" && r.code() != "invalid_request")):
			t.Errorf("%s: %s, want the arguments refused", c.name, clip(r.text, 300))
		}
	}
	if n := f.requests("/api/plugins/store/any/"); n != 0 {
		t.Errorf("%d requests reached the target of a dry run", n)
	}
}

// TestCallBeyondTheBoundsSendsNothing: SPEC §6 decodes the tool arguments
// the bridge receives within the bounds of their kind, enforced while
// decoding, and §5 bounds arguments as an instance: 256 KiB, depth 32,
// 10,000 values. A call whose arguments break a bound many times over is
// refused as it is read, before discovery: NetBox sees no request at all,
// not even the discovery GETs that a call with valid arguments makes.
func TestCallBeyondTheBoundsSendsNothing(t *testing.T) {
	t.Parallel()
	f, cs := storeBridge(t)
	for _, c := range []struct{ name, args string }{
		{"1 MiB", `{"x":"` + strings.Repeat("a", 1<<20) + `"}`},
		{"depth 64", `{"x":` + nested(63) + `}`},
		{"40,000 values", `{"x":` + zeros(39999) + `}`},
	} {
		r := call(t, cs, "plugin_call_tool", map[string]any{"plugin": "store", "tool": "put", "arguments": jsonArgs(t, c.args), "dry_run": true})
		if !r.isError || r.errorField("dispatched") != false || r.code() != "invalid_request" && r.code() != "invalid_arguments" {
			t.Errorf("%s: %s, want the call refused", c.name, clip(r.text, 300))
		}
	}
	if n := f.totalRequests(); n != 0 {
		t.Errorf("%d requests reached NetBox for calls whose arguments break the bounds", n)
	}
}

// TestDiscoveryErrorsSaySafeToRetry: SPEC §9, everything before
// outcome_unknown is safe to correct and retry, and the message says so.
func TestDiscoveryErrorsSaySafeToRetry(t *testing.T) {
	t.Parallel()
	f := newInvNetBox(t)
	cs := connect(t, newBridge(f, true), protocolVersions[0], nil)
	for plugin, code := range map[string]string{"quiet": "not_advertised", "nope": "plugin_not_found", "broken": "discovery_failed"} {
		for tool, args := range map[string]map[string]any{"plugin_list_tools": {"plugin": plugin}, "plugin_call_tool": {"plugin": plugin, "tool": "list"}} {
			r := call(t, cs, tool, args)
			wantError(t, r, code, false)
			if !strings.Contains(r.text, "Nothing was sent") || !strings.HasSuffix(r.text, "retry.") {
				t.Errorf("%s %s: %q does not say it is safe to retry", tool, plugin, r.text)
			}
		}
	}
	r := call(t, cs, "plugin_list_tools", map[string]any{})
	if problems := decodeCatalog(t, []byte(r.text)).Problems; len(problems) != 1 || strings.Contains(problems[0].Error, "retry") {
		t.Errorf("problems %v", problems)
	}
}

func TestInvalidRequestsSendNothing(t *testing.T) {
	t.Parallel()
	f := newInvNetBox(t)
	cs := connect(t, newBridge(f, true), protocolVersions[0], nil)
	var bad [][]string
	// SPEC §9's reserved names, spelled in mixed case, and any If-* header.
	for _, name := range []string{"Authorization", "Proxy-Authorization", "Cookie", "Host", "Accept", "Accept-Encoding",
		"Content-Type", "Content-Length", "Content-Encoding", "Transfer-Encoding", "Connection", "Upgrade", "TE",
		"Trailer", "Keep-Alive", "Expect", "If-Match", "If-None-Match", "If-Modified-Since", "If-Unmodified-Since",
		"If-Range", "If-Schedule-Tag-Match", "X-HTTP-Method-Override", "X-HTTP-Method", "X-Method-Override",
		"Idempotency-Key", "X-Idempotency-Key", "idempotency-KEY"} {
		bad = append(bad, []string{name + ": x"}, []string{name + "=x"})
	}
	bad = append(bad, []string{"no separator"}, []string{": empty name"}, []string{"Bad Name: x"}, []string{"X-Ok: bad\x01value"},
		[]string{"X-Ok: del\x7f"}, []string{"X-Ok: next line\u0085here"}, []string{"X-Ok: csi\u009b31m"}, // Unicode Cc: DEL and C1 too (issue 28)
		[]string{"X-Ok: line\r\nX-Evil: 1"}, []string{"cookie=a=b"}, manyHeaders(101))
	for _, header := range bad {
		for _, tool := range []string{"plugin_list_tools", "plugin_call_tool"} {
			r := call(t, cs, tool, map[string]any{"plugin": "inv", "tool": "search", "header": header})
			wantError(t, r, "invalid_request", false)
		}
	}
	for _, args := range []map[string]any{
		{"plugin": "inv", "tool": "search", "token": "abc\ndef"},
		{"plugin": "inv", "tool": "search", "token": ""},
		{"plugin": "inv"},
		{"plugin": "inv", "tool": "search", "dry_run": "yes"},
		{"plugin": "../etc", "tool": "search"},
	} {
		wantError(t, call(t, cs, "plugin_call_tool", args), "invalid_request", false)
	}
	if n := f.totalRequests(); n != 0 {
		t.Fatalf("%d requests made for invalid requests", n)
	}
}

// manyHeaders is n valid caller headers; SPEC §9 allows 100.
func manyHeaders(n int) []string {
	h := make([]string, n)
	for i := range h {
		h[i] = fmt.Sprintf("X-Entry-%d: %d", i, i)
	}
	return h
}

func TestPerCallTokensAndHeaders(t *testing.T) {
	t.Parallel()
	f := newInvNetBox(t)
	cs := connect(t, newBridge(f, true), protocolVersions[0], nil)
	for _, c := range []struct{ token, header string }{
		{"abcdefabcdefabcdefabcdefabcdefabcdefabcd", "Token abcdefabcdefabcdefabcdefabcdefabcdefabcd"},
		{"nbt_key1.secret1", "Bearer nbt_key1.secret1"},
	} {
		f.setToken(c.header)
		f.resetLog()
		trace := "t-" + c.token[:4] // this call's requests, apart from stragglers of the last
		r := callInv(t, cs, "create", map[string]any{"name": "x"}, "token", c.token, "header", []any{"X-Trace: " + trace, "X-Tenant=blue"})
		if r.isError {
			t.Fatalf("%s: %+v", c.token, r)
		}
		// The failed call before this one cancelled its manifest request,
		// which may reach the fake only now: it carries no trace.
		log := slices.DeleteFunc(f.requestLog(), func(req fakeRequest) bool { return req.header.Get("X-Trace") != trace })
		if len(log) != 3 {
			t.Fatalf("%d requests with the call's headers, want root, manifest and target: %v", len(log), log)
		}
		for _, req := range log {
			if req.header.Get("Authorization") != c.header || req.header.Get("X-Tenant") != "blue" {
				t.Errorf("%s %s: headers %v", req.method, req.path, req.header)
			}
		}
		if r := callInv(t, cs, "search", map[string]any{}); r.code() != "discovery_failed" || !strings.Contains(r.text, "HTTP 403") {
			t.Errorf("the configured token was accepted in place of the per-call one: %+v", r)
		}
	}
	// 100 header entries are allowed, and all of them are sent.
	r := callInv(t, cs, "search", map[string]any{}, "token", "nbt_key1.secret1", "header", manyHeaders(100))
	if sent := lastRequest(t, f, searchPath); r.isError || sent.header.Get("X-Entry-0") != "0" || sent.header.Get("X-Entry-99") != "99" {
		t.Errorf("100 headers: %+v", r)
	}
}

func TestNoStaleState(t *testing.T) {
	t.Parallel()
	f := newInvNetBox(t)
	cs := connect(t, newBridge(f, true), protocolVersions[0], nil)
	if r := callInv(t, cs, "create", map[string]any{"name": "x"}); r.isError {
		t.Fatal(r)
	}
	f.plugin("inv", func(p *fakePlugin) { p.manifest = manifestJSON("inv", searchTool) })
	wantError(t, callInv(t, cs, "create", map[string]any{"name": "x"}), "tool_not_found", false)
	f.plugin("inv", func(p *fakePlugin) { p.root = `{"widgets": "{base}/api/plugins/inv/widgets/"}` })
	wantError(t, callInv(t, cs, "search", map[string]any{}), "not_advertised", false)
	if n := f.requests(recordsPath); n != 1 {
		t.Fatalf("%d writes, want the one before the tool was removed", n)
	}
}

func TestConcurrentCalls(t *testing.T) {
	t.Parallel()
	f := newInvNetBox(t)
	cs := connect(t, newBridge(f, true), protocolVersions[0], nil)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 64 {
		wg.Go(func() {
			tool, args := "search", map[string]any{"limit": i + 1}
			if i%4 == 0 {
				tool, args = "create", map[string]any{"name": fmt.Sprint("r", i)}
			}
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "plugin_call_tool",
				Arguments: map[string]any{"plugin": "inv", "tool": tool, "arguments": args}})
			if err != nil || res.IsError {
				errs <- fmt.Errorf("call %d: %v %+v", i, err, res)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := f.requests(recordsPath); n != 16 {
		t.Errorf("%d writes, want 16", n)
	}
}

func TestConfigErrorAnswersEveryCall(t *testing.T) {
	t.Parallel()
	b := &bridge{client: newClient(&config{timeout: time.Second}), cfgErr: errors.New("no NetBox URL: set NETBOX_URL"), audit: &auditLog{stderr: slog.DiscardHandler}}
	cs := connect(t, b, protocolVersions[0], nil)
	for tool, args := range map[string]map[string]any{"plugin_list_tools": {}, "plugin_call_tool": {"plugin": "inv", "tool": "search"}} {
		r := call(t, cs, tool, args)
		wantError(t, r, "config_error", false)
		if r.text != "no NetBox URL: set NETBOX_URL" {
			t.Errorf("%s: %q", tool, r.text)
		}
	}
}

// TestFullScanReportsProgress: a full scan reports MCP progress with
// strictly increasing values, in the order they arrive, whatever the number
// of discovery workers, and the last value is the total (SPEC §9, §11).
func TestFullScanReportsProgress(t *testing.T) {
	t.Parallel()
	f := newInvNetBox(t)
	const plugins = 64
	for i := range plugins - 3 { // inv, quiet and broken are plugins too
		f.addPlugin(fmt.Sprintf("p%02d", i), readTool("list"))
	}
	for run := range 3 {
		var mu sync.Mutex
		var seen []float64
		var total float64
		cs := connect(t, newBridge(f, false), protocolVersions[0], &mcp.ClientOptions{
			ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
				mu.Lock()
				defer mu.Unlock()
				seen = append(seen, req.Params.Progress)
				total = req.Params.Total
			}})
		params := &mcp.CallToolParams{Name: "plugin_list_tools", Arguments: map[string]any{}}
		params.SetProgressToken(fmt.Sprintf("scan-%d", run))
		if res, err := cs.CallTool(context.Background(), params); err != nil || res.IsError {
			t.Fatal(err, res)
		}
		deadline := time.Now().Add(5 * time.Second)
		for {
			mu.Lock()
			last := len(seen) > 0 && seen[len(seen)-1] == plugins
			mu.Unlock()
			if last || time.Now().After(deadline) {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		mu.Lock()
		if total != plugins || len(seen) == 0 || seen[len(seen)-1] != plugins || seen[0] < 1 {
			t.Errorf("run %d: progress %v of %v, want increasing values ending at %d of %d", run, seen, total, plugins, plugins)
		}
		for i := 1; i < len(seen); i++ {
			if seen[i] <= seen[i-1] {
				t.Errorf("run %d: progress %v goes from %v to %v: MCP asks for increasing values", run, seen, seen[i-1], seen[i])
				break
			}
		}
		mu.Unlock()
	}
}

func TestCancellationStopsRequests(t *testing.T) {
	t.Parallel()
	f := newInvNetBox(t)
	entered, stopped := make(chan struct{}), make(chan struct{})
	f.handle(searchPath, func(w http.ResponseWriter, r *http.Request) {
		close(entered)
		if untilCancelled(r) {
			close(stopped)
		}
	})
	cs := connect(t, newBridge(f, false), protocolVersions[0], nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "plugin_call_tool",
			Arguments: map[string]any{"plugin": "inv", "tool": "search"}})
		done <- err
	}()
	waitFor(t, entered, "the call to reach the target")
	cancel()
	waitFor(t, stopped, "the target request to be cancelled")
	if err := <-done; err == nil {
		t.Fatal("the cancelled call returned no error")
	}
}

// stdioSession drives serveStdio with raw lines, as a client's bytes.
type stdioSession struct {
	t       *testing.T
	in      *io.PipeWriter
	replies chan map[string]any
}

func newStdioSession(t *testing.T, b *bridge) *stdioSession {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	server := newMCPServer(b, slog.New(slog.NewTextHandler(io.Discard, nil)))
	go serveStdio(context.Background(), server, inR, outW)
	t.Cleanup(func() { inW.Close() })
	s := &stdioSession{t: t, in: inW, replies: make(chan map[string]any, 16)}
	go func() {
		lines := bufio.NewScanner(outR)
		lines.Buffer(nil, 4<<20)
		for lines.Scan() {
			var msg map[string]any
			if err := json.Unmarshal(lines.Bytes(), &msg); err != nil {
				t.Errorf("reply %q is not JSON: %v", lines.Bytes(), err)
			}
			s.replies <- msg
		}
	}()
	return s
}

func (s *stdioSession) send(line string) {
	s.t.Helper()
	if _, err := io.WriteString(s.in, line+"\n"); err != nil {
		s.t.Fatal(err)
	}
}

func (s *stdioSession) reply() map[string]any {
	s.t.Helper()
	select {
	case msg := <-s.replies:
		return msg
	case <-time.After(10 * time.Second):
		s.t.Fatal("no reply")
		return nil
	}
}

// noReply checks that nothing more was written.
func (s *stdioSession) noReply() {
	s.t.Helper()
	select {
	case msg := <-s.replies:
		s.t.Errorf("unexpected reply %v", msg)
	case <-time.After(100 * time.Millisecond):
	}
}

func wantRPCError(t *testing.T, msg map[string]any, code float64, id any) {
	t.Helper()
	e, _ := msg["error"].(map[string]any)
	if e["code"] != code || msg["id"] != id || msg["jsonrpc"] != "2.0" {
		t.Errorf("got %v, want code %v id %v", msg, code, id)
	}
}

const initializeLine = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

// TestStdioLines: SPEC §11, the stdio session survives every malformed line
// with -32700 or -32600, ids that are not strings or integers within ±2^53
// are not mangled, and every request gets exactly one reply.
func TestStdioLines(t *testing.T) {
	t.Parallel()
	f := newInvNetBox(t)
	s := newStdioSession(t, newBridge(f, false))
	ping := `{"jsonrpc":"2.0","id":5,"method":"ping"}`
	// Before initialize: ping is answered, other requests are refused with
	// their id, and a 2026-07-28 request that carries its own protocol
	// version stands alone.
	s.send(ping)
	if r := s.reply(); r["id"] != 5.0 || r["result"] == nil {
		t.Errorf("ping before initialize: %v", r)
	}
	s.send(`{"jsonrpc":"2.0","id":"early","method":"tools/list"}`)
	wantRPCError(t, s.reply(), -32600, "early")
	for _, c := range []struct {
		name, line string
		code       float64
		id         any
	}{
		{"not JSON", `garbage{`, -32700, nil},
		{"cut short", `{"jsonrpc": "2.0", "id": 1, "method": `, -32700, nil},
		{"trailing bytes", ping + ` x`, -32700, nil},
		{"two messages on one line", ping + ping, -32700, nil},
		{"two messages with a space", ping + " " + ping, -32700, nil},
		{"NUL after the message", ping + "\x00", -32700, nil},
		{"comment after the message", ping + "//c", -32700, nil},
		{"NUL and invalid UTF-8", "\x00\xff", -32700, nil},
		{"invalid UTF-8 in a string", "{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"p\xffing\"}", -32700, nil},
		{"duplicate key", `{"jsonrpc":"2.0","id":6,"id":7,"method":"ping"}`, -32700, nil},
		{"not a message", `{"id": 7, "hello": "world"}`, -32600, 7.0},
		{"a batch", `[` + ping + `]`, -32600, nil},
		{"a number", `42`, -32600, nil},
		{"fractional id", `{"jsonrpc":"2.0","id":1.5,"method":"ping"}`, -32600, nil},
		{"30-digit id", `{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"ping"}`, -32600, nil},
		{"id beyond 2^53", `{"jsonrpc":"2.0","id":9007199254740992,"method":"ping"}`, -32600, nil},
		{"id below -2^53", `{"jsonrpc":"2.0","id":-9007199254740992,"method":"ping"}`, -32600, nil},
		{"exponent id beyond 2^53", `{"jsonrpc":"2.0","id":1e16,"method":"ping"}`, -32600, nil},
		{"null id", `{"jsonrpc":"2.0","id":null,"method":"ping"}`, -32600, nil},
		{"boolean id", `{"jsonrpc":"2.0","id":true,"method":"ping"}`, -32600, nil},
		{"object id", `{"jsonrpc":"2.0","id":{},"method":"ping"}`, -32600, nil},
		{"wrong version", `{"jsonrpc":"1.0","id":8,"method":"ping"}`, -32600, 8.0},
		{"over 1 MiB", `{"jsonrpc":"2.0","id":9,"method":"ping","params":{"pad":"` + strings.Repeat("x", 1<<20) + `"}}`, -32700, nil},
	} {
		s.send(c.line)
		msg := s.reply()
		wantRPCError(t, msg, c.code, c.id)
		if t.Failed() {
			t.Fatalf("%s: %v", c.name, msg)
		}
	}
	// Ids at the edges of ±2^53 are kept exactly; an integral number token
	// is the integer it equals (SPEC §5).
	for id, want := range map[string]string{"9007199254740991": "9007199254740991", "-9007199254740991": "-9007199254740991",
		"0": "0", `""`: `""`, `"a\u00e9"`: `"aé"`, "1e3": "1000", "7.0": "7"} {
		s.send(`{"jsonrpc":"2.0","id":` + id + `,"method":"ping"}`)
		r := s.reply()
		if raw, _ := json.Marshal(r["id"]); r["result"] == nil || string(raw) != want {
			t.Errorf("id %s came back as %s, want %s: %v", id, raw, want, r)
		}
	}
	s.send(initializeLine)
	if r := s.reply(); r["id"] != 1.0 || r["result"] == nil {
		t.Fatalf("initialize: %v", r)
	}
	s.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	s.send(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	if r := s.reply(); r["id"] != 2.0 || len(r["result"].(map[string]any)["tools"].([]any)) != 2 {
		t.Fatalf("tools/list after malformed lines: %v", r)
	}
	s.noReply() // one reply per line, no more
}

// TestStdioDuplicateID: a request whose id is still in flight is refused
// with -32600; the first request still gets its own reply.
func TestStdioDuplicateID(t *testing.T) {
	t.Parallel()
	f := newInvNetBox(t)
	entered, release := make(chan struct{}, 4), make(chan struct{})
	f.handle(searchPath, func(w http.ResponseWriter, r *http.Request) {
		entered <- struct{}{}
		<-release
		writeJSON(w, http.StatusOK, `{"count": 1}`, false)
	})
	s := newStdioSession(t, newBridge(f, false))
	s.send(initializeLine)
	s.reply()
	s.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	call := `{"jsonrpc":"2.0","id":"c1","method":"tools/call","params":{"name":"plugin_call_tool","arguments":{"plugin":"inv","tool":"search"}}}`
	s.send(call)
	<-entered
	s.send(call)
	wantRPCError(t, s.reply(), -32600, "c1")
	close(release)
	if r := s.reply(); r["id"] != "c1" || r["result"] == nil {
		t.Fatalf("the first call's reply: %v", r)
	}
	s.send(call) // answered: the id is free again
	if r := s.reply(); r["id"] != "c1" || r["result"] == nil {
		t.Fatalf("the id reused after its reply: %v", r)
	}
	s.noReply()
}

// TestStdioStatelessRequest: a 2026-07-28 client sends requests with their
// protocol version in _meta and no initialize; they are not refused.
func TestStdioStatelessRequest(t *testing.T) {
	t.Parallel()
	s := newStdioSession(t, newBridge(newInvNetBox(t), false))
	s.send(`{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
		`"io.modelcontextprotocol/clientCapabilities":{}}}}`)
	if r := s.reply(); r["id"] != 3.0 || r["result"] == nil {
		t.Fatalf("stateless tools/list: %v", r)
	}
}

// BenchmarkCallToolRead is one plugin_call_tool read through an in-memory
// MCP session against a NetBox with 10 ms of latency per request; SPEC §10
// wants 2 round trips (discovery 1, dispatch 1).
// BenchmarkCallToolRead: one read through an MCP session takes two round
// trips (SPEC §10), in a NetBox branch too, since the branch is looked up
// at the same time as discovery (SPEC §16).
func BenchmarkCallToolRead(b *testing.B) {
	const latency = 10 * time.Millisecond
	f := newInvNetBox(b)
	f.setLatency(latency)
	serveBranches(f, map[string]string{"review": "ready"})
	for _, branch := range []string{"", "review"} {
		b.Run("branch="+branch, func(b *testing.B) {
			br := newBridge(f, false)
			br.client.branch = branch
			cs := connect(b, br, protocolVersions[0], nil)
			args := map[string]any{"plugin": "inv", "tool": "search", "arguments": map[string]any{"q": "x", "limit": 5}}
			b.ReportAllocs()
			for b.Loop() {
				res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "plugin_call_tool", Arguments: args})
				if err != nil || res.IsError {
					b.Fatal(err, res)
				}
			}
			b.ReportMetric(float64(b.Elapsed())/float64(b.N)/float64(latency), "round-trips/op")
		})
	}
}

// TestHostileNetBox drives plugin_call_tool against a NetBox that misbehaves
// on purpose (SPEC §11). Mutations are on, and every case that misleads
// discovery calls the write tool, so a hostile discovery that got through
// would dispatch a write that the counter sees: such cases must count none,
// and a write whose answer is hostile must count exactly one. Each case is
// bounded in time, and in memory by what the whole process allocated during
// it (an upper bound of the peak).
func TestHostileNetBox(t *testing.T) {
	// Serial: allocatedDuring counts the whole process's allocations.
	const manifestPath, rootPath = "/api/plugins/inv/mcp/", "/api/plugins/inv/"
	type hostileCase struct {
		name   string
		setup  func(f, other *fakeNetBox)
		tool   string
		code   string
		want   string
		writes int32 // writes the target must see
		sent   bool  // SPEC §9's dispatched: the target request was sent
	}
	cases := []hostileCase{
		{"manifest link to another origin", func(f, other *fakeNetBox) {
			f.plugin("inv", func(p *fakePlugin) {
				p.root = `{"mcp": {"schema_version": "1", "manifest": "` + other.URL + `/api/plugins/inv/mcp/"}}`
			})
		}, "create", "discovery_failed", "X-Forwarded-Proto", 0, false},
		{"manifest link outside the namespace", func(f, _ *fakeNetBox) {
			f.plugin("inv", func(p *fakePlugin) {
				p.root = `{"mcp": {"schema_version": "1", "manifest": "/api/plugins/other/mcp/"}}`
			})
		}, "create", "discovery_failed", "is not /api/plugins/inv/mcp/", 0, false},
		{"manifest link with a dot-dot segment", func(f, _ *fakeNetBox) {
			f.plugin("inv", func(p *fakePlugin) {
				p.root = `{"mcp": {"schema_version": "1", "manifest": "/api/plugins/other/../inv/mcp/"}}`
			})
		}, "create", "discovery_failed", "empty, . or .. segment", 0, false},
		{"manifest of another plugin", func(f, _ *fakeNetBox) {
			f.plugin("inv", func(p *fakePlugin) { p.manifest = manifestJSON("other", createTool, searchTool) })
		}, "create", "discovery_failed", `declares plugin "other"`, 0, false},
	}
	// Every hostile body where discovery reads it, and as a read's and a
	// write's answer.
	for _, h := range hostileBodies {
		serve := func(path, doc string) func(f, other *fakeNetBox) {
			return func(f, other *fakeNetBox) {
				if doc == "" {
					doc = f.body(path) // what the fake would have served
				}
				f.handle(path, func(w http.ResponseWriter, r *http.Request) { h.serve(w, r, doc, other.URL+path) })
			}
		}
		cases = append(cases,
			hostileCase{"root: " + h.name, serve(rootPath, ""), "create", "discovery_failed", h.want(rootBounds), 0, false},
			hostileCase{"manifest: " + h.name, serve(manifestPath, ""), "create", "discovery_failed", h.want(manifestBounds), 0, false},
			hostileCase{"read: " + h.name, serve(searchPath, `{"count": 2}`), "search", "response_invalid", h.want(targetBounds), 0, true},
			hostileCase{"write: " + h.name, serve(recordsPath, `{"id": 7}`), "create", "outcome_unknown", h.want(targetBounds), 1, true})
	}
	var passed int
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, other := newInvNetBox(t), newFakeNetBox(t)
			f.addListEntry("escape", `"{base}/api/users/"`) // a root link out of /api/plugins/: a problem of its own
			// The other origin serves what a followed link or redirect would find.
			other.addPlugin("inv", createTool, searchTool)
			other.handle(searchPath, func(w http.ResponseWriter, r *http.Request) { writeJSON(w, 200, `{"count": 2}`, false) })
			other.handle(recordsPath, func(w http.ResponseWriter, r *http.Request) { writeJSON(w, 201, `{"id": 7}`, false) })
			var writes atomic.Int32 // requests of any method but GET and HEAD, on any path
			f.setBefore(func(r *http.Request) {
				if r.Method != http.MethodGet && r.Method != http.MethodHead {
					writes.Add(1)
				}
			})
			c.setup(f, other)
			// 2 s: long enough for a bomb decoded under -race on a loaded machine; the stalled cases wait it out.
			cs := connect(t, newBridge(f, true, withTimeout(2*time.Second)), protocolVersions[0], nil)
			args := map[string]any{}
			if c.tool == "create" {
				args["name"] = "x"
			}
			var r result
			start := time.Now()
			alloc := allocatedDuring(func() { r = callInv(t, cs, c.tool, args) })
			if elapsed := time.Since(start); elapsed > 10*time.Second {
				t.Errorf("took %v", elapsed)
			}
			if r.code() != c.code || !strings.Contains(r.text, c.want) || r.errorField("dispatched") != c.sent {
				t.Errorf("got %s (dispatched %v): %s; want %s containing %q", r.code(), r.errorField("dispatched"), r.text, c.code, c.want)
			}
			if alloc > 32<<20 {
				t.Errorf("allocated %d MiB", alloc>>20)
			}
			if n := writes.Load(); n != c.writes || other.totalRequests() != 0 {
				t.Errorf("%d writes dispatched (want %d), %d requests to the other origin", n, c.writes, other.totalRequests())
			}
			cat := decodeCatalog(t, []byte(call(t, cs, "plugin_list_tools", map[string]any{}).text))
			if !slices.ContainsFunc(cat.Problems, func(p scanProblem) bool {
				return p.Plugin == "escape" && strings.Contains(p.Error, "is not a plugin API root")
			}) {
				t.Errorf("the escaping root link is not a problem: %v", cat.Problems)
			}
			if f.requests("/api/users/") != 0 {
				t.Error("the escaping root link was fetched")
			}
			if !t.Failed() {
				passed++
			}
			t.Logf("hostile: %s: %s, %d KiB allocated", c.name, c.code, alloc>>10)
		})
	}
	t.Logf("hostile: %d of %d hostile NetBox cases refused without an unwanted write", passed, len(cases))
}

// ---- write policy: allow-list, confirmation, audit (SPEC §13) ----

// asker is an MCP client's elicitation handler that answers with answer
// and records the questions.
type asker struct {
	mu        sync.Mutex
	questions []*mcp.ElicitParams
	answer    func(ctx context.Context) (*mcp.ElicitResult, error)
}

func (a *asker) handle(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	a.mu.Lock()
	a.questions = append(a.questions, req.Params)
	a.mu.Unlock()
	return a.answer(ctx)
}

func (a *asker) asked() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.questions)
}

func accept(confirm any) func(context.Context) (*mcp.ElicitResult, error) {
	return func(context.Context) (*mcp.ElicitResult, error) {
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"confirm": confirm}}, nil
	}
}

// policyBridge is a bridge over f with the given policy and mode, whose
// audit records go to log as JSON lines.
func policyBridge(f *fakeNetBox, policy writePolicy, mode string, log io.Writer) *bridge {
	b := newBridge(f, false)
	b.policy, b.confirm = policy, mode
	b.audit = &auditLog{stderr: slog.NewJSONHandler(log, nil)}
	return b
}

// TestConfirmationMatrix: every confirmation mode, with a client that can
// ask a human and one that cannot, for a read, a write, a destructive tool
// and a dry run. The oracle is SPEC §13's sentence for each mode.
func TestConfirmationMatrix(t *testing.T) {
	t.Parallel()
	type call struct {
		tool   string
		effect string
		args   map[string]any
		dryRun bool
	}
	calls := []call{{"search", "read", map[string]any{}, false}, {"create", "write", map[string]any{"name": "x"}, false},
		{"purge", "destructive", map[string]any{}, false}, {"create", "write", map[string]any{"name": "x"}, true},
		{"purge", "destructive", map[string]any{}, true}}
	for _, mode := range []string{"auto", "destructive", "writes", "off"} {
		for _, canAsk := range []bool{true, false} {
			for _, c := range calls {
				name := fmt.Sprintf("%s/ask=%t/%s/dry=%t", mode, canAsk, c.tool, c.dryRun)
				f := newInvNetBox(t)
				purges := 0
				f.handle(recordsPath, func(w http.ResponseWriter, r *http.Request) {
					if r.Method == http.MethodDelete {
						purges++
						w.WriteHeader(http.StatusNoContent)
						return
					}
					writeJSON(w, http.StatusCreated, `{"id": 7}`, false)
				})
				a := &asker{answer: accept(true)}
				opts := &mcp.ClientOptions{}
				if canAsk {
					opts.ElicitationHandler = a.handle
				}
				cs := connect(t, policyBridge(f, writePolicy{all: true}, mode, io.Discard), protocolVersions[0], opts)
				r := callInv(t, cs, c.tool, c.args, "dry_run", c.dryRun)
				// SPEC §13: asked only for a write about to dispatch.
				needs := !c.dryRun && c.effect != "read" && (mode == "writes" || mode == "destructive" && c.effect == "destructive" ||
					mode == "auto" && c.effect == "destructive" && canAsk)
				switch {
				case needs && !canAsk:
					wantError(t, r, "not_confirmed", false)
					if !strings.Contains(r.text, "does not support MCP form elicitation") || !strings.Contains(r.text, "--confirm "+mode) {
						t.Errorf("%s: message %q", name, r.text)
					}
				case r.isError:
					t.Errorf("%s: %s", name, r.text)
				}
				if want := map[bool]int{true: 1}[needs && canAsk]; a.asked() != want {
					t.Errorf("%s: asked %d times, want %d", name, a.asked(), want)
				}
				sent := f.requests(recordsPath) + f.requests(searchPath)
				if want := map[bool]int{true: 1}[!c.dryRun && (!needs || canAsk)]; sent != want {
					t.Errorf("%s: %d target requests, want %d", name, sent, want)
				}
			}
		}
	}
}

// TestConfirmationAnswers: only accept with confirm true dispatches; every
// other answer is not_confirmed, says what happened, and sends nothing.
func TestConfirmationAnswers(t *testing.T) {
	// Serial: it shortens the process-wide confirmTimeout.
	defer func(d time.Duration) { confirmTimeout = d }(confirmTimeout)
	confirmTimeout = 300 * time.Millisecond
	for _, c := range []struct {
		name   string
		answer func(ctx context.Context) (*mcp.ElicitResult, error)
		want   string // "" for dispatched
	}{
		{"accept", accept(true), ""},
		{"decline", func(context.Context) (*mcp.ElicitResult, error) { return &mcp.ElicitResult{Action: "decline"}, nil }, "the human declined it"},
		{"cancel", func(context.Context) (*mcp.ElicitResult, error) { return &mcp.ElicitResult{Action: "cancel"}, nil }, "dismissed the question"},
		{"accept false", accept(false), "answered without confirming it"},
		{"accept without confirm", func(context.Context) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{}}, nil
		}, "could not ask"}, // the SDK refuses content that breaks the required schema
		{"handler error", func(context.Context) (*mcp.ElicitResult, error) { return nil, errors.New("no human here") }, "the client could not ask"},
		{"no answer in time", func(ctx context.Context) (*mcp.ElicitResult, error) { <-ctx.Done(); return nil, ctx.Err() }, "no answer came within 300ms"},
	} {
		f := newInvNetBox(t)
		var log bytes.Buffer
		a := &asker{answer: c.answer}
		cs := connect(t, policyBridge(f, writePolicy{all: true}, "writes", &log), protocolVersions[0], &mcp.ClientOptions{ElicitationHandler: a.handle})
		r := callInv(t, cs, "create", map[string]any{"name": "x"})
		switch {
		case c.want == "" && r.isError:
			t.Errorf("%s: %s", c.name, r.text)
		case c.want != "":
			wantError(t, r, "not_confirmed", false)
			if !strings.Contains(r.text, c.want) || !strings.Contains(r.text, "nothing reached NetBox") {
				t.Errorf("%s: message %q, want %q", c.name, r.text, c.want)
			}
		}
		if n, want := f.requests(recordsPath), map[bool]int{true: 1}[c.want == ""]; n != want {
			t.Errorf("%s: %d writes, want %d", c.name, n, want)
		}
		decisions := map[bool][]any{true: {"dispatching", "dispatched"}, false: {"not_confirmed"}}[c.want == ""]
		var got []any
		for _, rec := range auditRecords(t, &log) {
			got = append(got, rec["decision"])
		}
		if !slices.Equal(got, decisions) {
			t.Errorf("%s: audit decisions %v, want %v", c.name, got, decisions)
		}
	}
	// A call cancelled while the question is open sends nothing.
	f := newInvNetBox(t)
	confirmTimeout = time.Minute
	opened := make(chan struct{})
	a := &asker{answer: func(ctx context.Context) (*mcp.ElicitResult, error) {
		close(opened)
		<-ctx.Done()
		return nil, ctx.Err()
	}}
	cs := connect(t, policyBridge(f, writePolicy{all: true}, "writes", io.Discard), protocolVersions[0], &mcp.ClientOptions{ElicitationHandler: a.handle})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "plugin_call_tool", Arguments: map[string]any{"plugin": "inv", "tool": "create", "arguments": map[string]any{"name": "x"}}})
		done <- err
	}()
	<-opened
	cancel()
	<-done
	time.Sleep(100 * time.Millisecond)
	if n := f.requests(recordsPath); n != 0 {
		t.Errorf("a call cancelled while asking sent %d writes", n)
	}
}

// TestConfirmationQuestion: the question states the exact request, the body
// clipped to 4 KiB, and asks for the one boolean SPEC §13 gives.
func TestConfirmationQuestion(t *testing.T) {
	t.Parallel()
	f := newInvNetBox(t)
	a := &asker{answer: accept(true)}
	cs := connect(t, policyBridge(f, writePolicy{all: true}, "writes", io.Discard), protocolVersions[0], &mcp.ClientOptions{ElicitationHandler: a.handle})
	long := strings.Repeat("n", 5000)
	if r := callInv(t, cs, "create", map[string]any{"name": long, "size": 3}); r.isError {
		t.Fatal(r.text)
	}
	q := a.questions[0]
	schema, _ := json.Marshal(q.RequestedSchema)
	wantSchema := `{"type": "object", "properties": {"confirm": {"type": "boolean", "title": "Send this request to NetBox"}}, "required": ["confirm"]}`
	if q.Mode != "form" || !jsonEqual(t, schema, json.RawMessage(wantSchema)) {
		t.Errorf("mode %q, schema %s", q.Mode, schema)
	}
	body := `{"name":"` + long + `","size":3}`
	for _, want := range []string{"inv.create", "write", "POST " + recordsPath, `{"name":"nnnn`,
		fmt.Sprintf("clipped: the body is %d bytes; the first 4096 are shown", len(body))} {
		if !strings.Contains(q.Message, want) {
			t.Errorf("the question %q does not state %q", clip(q.Message, 300), want)
		}
	}
	if strings.Contains(q.Message, long) {
		t.Error("the body was not clipped")
	}
}

// TestConfirmationNewProtocol: a 2026-07-28 client is asked through a
// multi round-trip result; its answer confirms exactly the request shown.
func TestConfirmationNewProtocol(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		answer func(ctx context.Context) (*mcp.ElicitResult, error)
		writes int
	}{{accept(true), 1}, {func(context.Context) (*mcp.ElicitResult, error) { return &mcp.ElicitResult{Action: "decline"}, nil }, 0}} {
		f := newInvNetBox(t)
		a := &asker{answer: c.answer}
		cs := connect(t, policyBridge(f, writePolicy{all: true}, "auto", io.Discard), "", &mcp.ClientOptions{ElicitationHandler: a.handle})
		if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
			t.Fatalf("negotiated %s", v)
		}
		r := callInv(t, cs, "purge", map[string]any{})
		if c.writes == 0 {
			wantError(t, r, "not_confirmed", false)
		} else if r.isError {
			t.Fatal(r.text)
		}
		if a.asked() != 1 || f.requests(recordsPath) != c.writes {
			t.Errorf("asked %d, %d writes; want 1 and %d", a.asked(), f.requests(recordsPath), c.writes)
		}
	}
	// An answer made up without a question, or one for another request, does
	// not confirm: the bridge asks, and sends nothing.
	f := newInvNetBox(t)
	s := newStdioSession(t, policyBridge(f, writePolicy{all: true}, "auto", io.Discard))
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{}}}}`
	for i, state := range []string{`"forged"`, `""`} {
		s.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{%s,"name":"plugin_call_tool","arguments":{"plugin":"inv","tool":"purge"},`+
			`"inputResponses":{"confirm":{"action":"accept","content":{"confirm":true}}},"requestState":%s}}`, i+1, meta, state))
		r := s.reply()
		res, _ := r["result"].(map[string]any)
		if res["inputRequests"] == nil || res["requestState"] == nil || res["isError"] == true {
			t.Errorf("requestState %s: %v, want the question asked", state, r)
		}
	}
	if n := f.requests(recordsPath); n != 0 {
		t.Errorf("a made-up answer sent %d writes", n)
	}
}

// auditRecords parses the JSON audit lines of log.
func auditRecords(t *testing.T, log *bytes.Buffer) []map[string]any {
	t.Helper()
	var recs []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(log.String()), "\n") {
		if line == "" {
			continue
		}
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("audit line %q: %v", line, err)
		}
		if rec["msg"] == "write" {
			recs = append(recs, rec)
		}
	}
	return recs
}

// TestAuditRecords: one record per write decision with SPEC §13's fields;
// reads, their dry runs and calls refused before a decision have none; no
// secret and no body ever.
// specV1Name is how SPEC §13 names a v1 token in the audit: "v1:" and the
// first 12 hex digits of its SHA-256.
func specV1Name(token string) string {
	sum := sha256.Sum256([]byte(token))
	return "v1:" + fmt.Sprintf("%x", sum)[:12]
}

func TestAuditRecords(t *testing.T) {
	t.Parallel()
	f := newInvNetBox(t)
	f.handle(recordsPath, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Request-ID", "req-42")
		if r.Method == http.MethodDelete {
			writeJSON(w, http.StatusConflict, `{"detail": "busy"}`, false)
			return
		}
		writeJSON(w, http.StatusCreated, `{"id": 7}`, false)
	})
	f.locked(func() { f.token = "" }) // any token
	var log bytes.Buffer
	b := policyBridge(f, writePolicy{entries: []string{"inv.create"}, setting: "--allow-mutations"}, "off", &log)
	b.client.auth = "Bearer nbt_cfgkey." + secret
	cs := connect(t, b, protocolVersions[0], nil)
	callInv(t, cs, "search", map[string]any{})                                                // read: none
	callInv(t, cs, "search", map[string]any{}, "dry_run", true)                               // read dry run: none
	callInv(t, cs, "create", map[string]any{"bad": 1})                                        // invalid arguments: none
	callInv(t, cs, "nope", map[string]any{})                                                  // no such tool: none
	callInv(t, cs, "create", map[string]any{"name": secret})                                  // dispatched
	callInv(t, cs, "create", map[string]any{"name": "x"}, "dry_run", true)                    // dry_run
	callInv(t, cs, "purge", map[string]any{})                                                 // mutations_disabled
	callInv(t, cs, "create", map[string]any{"name": "y"}, "token", "nbt_callkey."+secret+"2") // dispatched, per-call
	b.policy = writePolicy{all: true}
	callInv(t, cs, "purge", map[string]any{}, "token", "0123456789abcdef0123456789abcdef01234567") // dispatched, 409: outcome unknown
	recs := auditRecords(t, &log)
	// A dispatched write has two records: dispatching before the send,
	// without the response's fields, then dispatched (SPEC §13).
	want := []map[string]any{
		{"decision": "dispatching", "tool": "create", "effect": "write", "method": "POST", "status": nil, "request_id": nil, "token": "nbt_cfgkey", "token_source": "configured"},
		{"decision": "dispatched", "tool": "create", "effect": "write", "method": "POST", "status": 201.0, "request_id": "req-42", "token": "nbt_cfgkey", "token_source": "configured"},
		{"decision": "dry_run", "tool": "create", "token": "nbt_cfgkey", "token_source": "configured"},
		{"decision": "mutations_disabled", "tool": "purge", "effect": "destructive", "method": "DELETE"},
		{"decision": "dispatching", "tool": "create", "token": "nbt_callkey", "token_source": "per-call"},
		{"decision": "dispatched", "tool": "create", "token": "nbt_callkey", "token_source": "per-call"},
		{"decision": "dispatching", "tool": "purge", "status": nil, "outcome": nil, "token": specV1Name("0123456789abcdef0123456789abcdef01234567"), "token_source": "per-call"},
		{"decision": "dispatched", "tool": "purge", "status": 409.0, "outcome": "unknown", "token": specV1Name("0123456789abcdef0123456789abcdef01234567"), "token_source": "per-call"},
	}
	if len(recs) != len(want) {
		t.Fatalf("%d audit records, want %d:\n%s", len(recs), len(want), log.String())
	}
	for i, w := range want {
		for k, v := range w {
			if recs[i][k] != v {
				t.Errorf("record %d: %s = %v, want %v", i, k, recs[i][k], v)
			}
		}
		if recs[i]["plugin"] != "inv" || recs[i]["path"] == nil || recs[i]["level"] != "INFO" {
			t.Errorf("record %d: %v", i, recs[i])
		}
		if _, ok := recs[i]["duration_ms"]; ok != (recs[i]["decision"] == "dispatched") {
			t.Errorf("record %d: duration_ms only for a dispatched call: %v", i, recs[i])
		}
	}
	if strings.Contains(log.String(), secret) || strings.Contains(log.String(), "0123456789abcdef") {
		t.Errorf("the audit log shows a secret or a body:\n%s", log.String())
	}
}

// TestStdioEndsOnEOF: stdin ending while the session ends on its own never
// leaves serveStdio waiting (a race that once hung the process).
func TestStdioEndsOnEOF(t *testing.T) {
	t.Parallel()
	server := newMCPServer(newBridge(newInvNetBox(t), false), slog.New(slog.NewTextHandler(io.Discard, nil)))
	for i := range 300 {
		done := make(chan error, 1)
		go func() {
			done <- serveStdio(context.Background(), server, strings.NewReader(initializeLine+"\n"), io.Discard)
		}()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("run %d: %v", i, err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("run %d: serveStdio still waits after stdin ended", i)
		}
	}
}

// ---- found by review: confirmations are spent once, for one caller,
// within ten minutes; a request's own capabilities; stdio edge lines ----

// TestConfirmationIsSpentOnce: an answer confirms one request of one caller,
// once, within the question's ten minutes.
func TestConfirmationIsSpentOnce(t *testing.T) {
	// Serial: it shortens the process-wide confirmTimeout.
	defer func(d time.Duration) { confirmTimeout = d }(confirmTimeout)
	f := newInvNetBox(t)
	f.setToken("")
	s := newStdioSession(t, policyBridge(f, writePolicy{all: true}, "destructive", io.Discard))
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{}}}}`
	id := 0
	ask := func(extra string) string {
		id++
		s.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{%s,"name":"plugin_call_tool","arguments":{"plugin":"inv","tool":"purge"%s}}}`, id, meta, extra))
		res, _ := s.reply()["result"].(map[string]any)
		state, _ := res["requestState"].(string)
		if res["inputRequests"] == nil || state == "" {
			t.Fatalf("not asked: %v", res)
		}
		return state
	}
	answer := func(state, extra string) map[string]any {
		id++
		s.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{%s,"name":"plugin_call_tool","arguments":{"plugin":"inv","tool":"purge"%s},`+
			`"inputResponses":{"confirm":{"action":"accept","content":{"confirm":true}}},"requestState":%q}}`, id, meta, extra, state))
		res, _ := s.reply()["result"].(map[string]any)
		return res
	}
	state := ask("")
	if res := answer(state, ""); res["isError"] == true {
		t.Fatalf("the confirmed call: %v", res)
	}
	if res := answer(state, ""); res["isError"] != true || !strings.Contains(fmt.Sprint(res["content"]), "already used") {
		t.Errorf("the same answer again: %v", res)
	}
	// Another identity or other caller headers: a new question, not a dispatch.
	for _, extra := range []string{`,"token":"nbt_other.identity"`, `,"header":["X-Tenant: other"]`} {
		if res := answer(ask(""), extra); res["inputRequests"] == nil {
			t.Errorf("an answer given for another caller (%s): %v", extra, res)
		}
	}
	// An answer after the question's time is not a confirmation.
	confirmTimeout = time.Second
	state = ask("")
	time.Sleep(2100 * time.Millisecond)
	if res := answer(state, ""); res["isError"] != true || !strings.Contains(fmt.Sprint(res["content"]), "after the question") {
		t.Errorf("a late answer: %v", res)
	}
	if n := f.requests(recordsPath); n != 1 {
		t.Errorf("%d DELETEs for one confirmation, want 1", n)
	}
}

// TestConfirmationReadsEachRequestsCapabilities: a 2026-07-28 request that
// declares elicitation is asked, whatever an earlier request declared.
func TestConfirmationReadsEachRequestsCapabilities(t *testing.T) {
	t.Parallel()
	s := newStdioSession(t, policyBridge(newInvNetBox(t), writePolicy{all: true}, "destructive", io.Discard))
	meta := func(caps string) string {
		return `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":` + caps + `}`
	}
	s.send(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` + meta(`{}`) + `}}`)
	s.reply()
	s.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{` + meta(`{"elicitation":{"form":{}}}`) + `,"name":"plugin_call_tool","arguments":{"plugin":"inv","tool":"purge"}}}`)
	if res, _ := s.reply()["result"].(map[string]any); res["inputRequests"] == nil {
		t.Errorf("a request declaring elicitation was not asked: %v", res)
	}
	s.send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{` + meta(`{}`) + `,"name":"plugin_call_tool","arguments":{"plugin":"inv","tool":"purge"}}}`)
	if res, _ := s.reply()["result"].(map[string]any); res["isError"] != true || !strings.Contains(fmt.Sprint(res["content"]), "does not support MCP form elicitation") {
		t.Errorf("a request without elicitation: %v", res)
	}
}

// TestStdioInitializeAndResponses: a response without exactly one of result
// and error is refused; initialize counts once it is answered without an
// error, and only once.
func TestStdioInitializeAndResponses(t *testing.T) {
	t.Parallel()
	s := newStdioSession(t, newBridge(newInvNetBox(t), false))
	for _, line := range []string{`{"jsonrpc":"2.0","id":8}`, `{"jsonrpc":"2.0","id":81,"result":1,"error":{"code":1,"message":"x"}}`} {
		s.send(line)
		wantRPCError(t, s.reply(), -32600, float64(map[bool]int{true: 8, false: 81}[strings.Contains(line, `"id":8}`)]))
	}
	s.send(`{"jsonrpc":"2.0","id":"bad","method":"initialize"}`) // no params: the SDK refuses it
	if r := s.reply(); r["error"] == nil {
		t.Fatalf("initialize without params: %v", r)
	}
	s.send(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	wantRPCError(t, s.reply(), -32600, 2.0)
	s.send(initializeLine)
	if r := s.reply(); r["result"] == nil {
		t.Fatalf("initialize: %v", r)
	}
	s.send(initializeLine)
	wantRPCError(t, s.reply(), -32600, 1.0)
}

// TestV2TokenNeedsKeyAndSecret: a v2 token without its dot would be logged
// whole as its "key"; it is refused.
func TestV2TokenNeedsKeyAndSecret(t *testing.T) {
	t.Parallel()
	for _, token := range []string{"nbt_" + secret, "nbt_." + secret, "nbt_" + secret + "."} {
		if _, err := authorization(token); err == nil || strings.Contains(err.Error(), secret) {
			t.Errorf("%q: %v", token, err)
		}
	}
	if auth, err := authorization("nbt_k." + secret); err != nil || auth != "Bearer nbt_k."+secret {
		t.Errorf("a v2 token: %q %v", auth, err)
	}
}

// ---- NetBox branches (SPEC §16) ----

// serveBranches makes f answer NetBox Branching's branch list the way the
// real plugin does: a paged list filtered by ?name=, each branch with its
// status as a choice object and its schema_id.
func serveBranches(f *fakeNetBox, statuses map[string]string) {
	f.handle(branchesPath, func(w http.ResponseWriter, r *http.Request) {
		results := []string{}
		if status, ok := statuses[r.URL.Query().Get("name")]; ok {
			results = append(results, fmt.Sprintf(`{"id": 1, "name": %q, "status": {"value": %q, "label": "X"}, "schema_id": "td5smq0f"}`,
				r.URL.Query().Get("name"), status))
		}
		writeJSON(w, http.StatusOK, fmt.Sprintf(`{"count": %d, "next": null, "previous": null, "results": [%s]}`, len(results), strings.Join(results, ",")), false)
	})
}

// TestBranchAdviceFitsTheCause: SPEC §16, a branch_unavailable message says
// the next step that fits: wait for a branch on its way to ready, name
// another for one that never will be, and a 403 on the lookup is about
// viewing branches, not about the plugin's reads (issue 28).
func TestBranchAdviceFitsTheCause(t *testing.T) {
	t.Parallel()
	f := newInvNetBox(t)
	statuses := map[string]string{"merged": "merged", "reverted": "reverted", "archived": "archived", "failed": "failed",
		"fresh": "provisioning", "syncing": "syncing"}
	serveBranches(f, statuses)
	for name, status := range statuses {
		b := newBridge(f, true)
		b.client.branch = name
		r := callInv(t, connect(t, b, protocolVersions[0], nil), "create", map[string]any{"name": "x"})
		wantError(t, r, "branch_unavailable", false)
		never := status != "provisioning" && status != "syncing"
		if strings.Contains(r.text, "wait") == never || strings.Contains(r.text, "another") != never || !strings.Contains(r.text, status) {
			t.Errorf("a %s branch: %q; want it to say %s", status, r.text, map[bool]string{true: "to name another", false: "to wait"}[never])
		}
	}
	f.handle(branchesPath, func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusForbidden, `{"detail": "You do not have permission to perform this action."}`, false)
	})
	b := newBridge(f, true)
	b.client.branch = "review"
	r := callInv(t, connect(t, b, protocolVersions[0], nil), "search", map[string]any{})
	wantError(t, r, "branch_unavailable", false)
	if !strings.Contains(r.text, "view_branch") || strings.Contains(r.text, "read plugins") {
		t.Errorf("a 403 on the branch lookup: %q; want the permission to view branches, not to read plugins", r.text)
	}
}

// TestBranch: with --branch every target request of a call carries the
// branch's schema_id as X-NetBox-Branch, found by name at the same time as
// discovery; a branch that is missing or not ready refuses the call before
// anything is sent; --branch-only refuses writes without a branch; the
// agent cannot choose a branch itself; the dry run, the question to a human
// and the audit name the branch.
func TestBranch(t *testing.T) {
	t.Parallel()
	f := newInvNetBox(t)
	serveBranches(f, map[string]string{"review": "ready", "fresh": "provisioning"})
	var log bytes.Buffer
	b := policyBridge(f, writePolicy{all: true}, "off", &log)
	b.client.branch = "review"
	cs := connect(t, b, protocolVersions[0], nil)
	for _, c := range []struct{ tool, path string }{{"search", searchPath}, {"create", recordsPath}, {"purge", recordsPath}} {
		f.resetLog()
		args := map[string]any{}
		if c.tool == "create" {
			args["name"] = "x"
		}
		if r := callInv(t, cs, c.tool, args); r.isError {
			t.Fatalf("%s in a ready branch: %s", c.tool, r.text)
		}
		for _, req := range f.requestLog() {
			if got := req.header.Get("X-NetBox-Branch"); (req.path == c.path) != (got == "td5smq0f") {
				t.Errorf("%s: %s %s carried X-NetBox-Branch %q", c.tool, req.method, req.path, got)
			}
		}
	}
	r := callInv(t, cs, "create", map[string]any{"name": "x"}, "dry_run", true)
	if h, _ := r.doc["headers"].(map[string]any); r.doc["branch"] != "review" || h["X-NetBox-Branch"] != "td5smq0f" {
		t.Errorf("dry run %v, want the branch and its header", r.doc)
	}
	for _, rec := range auditRecords(t, &log) {
		if rec["branch"] != "review" {
			t.Errorf("audit %v does not name the branch", rec)
		}
	}
	// The agent cannot choose a branch while a branch rule is in force, in
	// any entry, empty or not: nothing reaches NetBox (issue 28).
	for _, h := range [][]string{{"X-NetBox-Branch: other"}, {"X-NetBox-Branch:", "X-NetBox-Branch: other"}, {"X-Tenant: 1", "x-netbox-branch="}} {
		f.resetLog()
		wantError(t, callInv(t, cs, "search", map[string]any{}, "header", h), "invalid_request", false)
		if n := f.totalRequests(); n != 0 {
			t.Errorf("headers %q: %d requests reached NetBox", h, n)
		}
	}

	// A branch that does not exist, or is not ready: nothing is sent.
	for name, want := range map[string]string{"nosuch": "has no branch", "fresh": `"provisioning", not ready`} {
		b := newBridge(f, true)
		b.client.branch = name
		cs := connect(t, b, protocolVersions[0], nil)
		for tool, args := range map[string]map[string]any{"search": {}, "create": {"name": "x"}} {
			f.resetLog()
			r := callInv(t, cs, tool, args)
			wantError(t, r, "branch_unavailable", false)
			if !strings.Contains(r.text, `NetBox branch "`+name+`"`) || !strings.Contains(r.text, want) {
				t.Errorf("%s in branch %s: %q", tool, name, r.text)
			}
			if n := f.requests(searchPath) + f.requests(recordsPath); n != 0 {
				t.Errorf("%s in branch %s: %d target requests", tool, name, n)
			}
		}
	}

	// --branch-only without a branch: writes refused, reads run; the agent
	// cannot pick a branch either.
	b = newBridge(f, true)
	b.branchOnly = true
	cs = connect(t, b, protocolVersions[0], nil)
	f.resetLog()
	r = callInv(t, cs, "create", map[string]any{"name": "x"})
	wantError(t, r, "branch_required", false)
	if n := f.requests(recordsPath); n != 0 || !strings.Contains(r.text, "do not retry") && !strings.Contains(r.text, "Do not retry") {
		t.Errorf("branch_required: %d writes, %q", n, r.text)
	}
	if r := callInv(t, cs, "search", map[string]any{}); r.isError {
		t.Errorf("a read under --branch-only: %s", r.text)
	}
	wantError(t, callInv(t, cs, "create", map[string]any{"name": "x"}, "header", []string{"x-netbox-branch: td5smq0f"}), "invalid_request", false)
	f.resetLog()
	wantError(t, callInv(t, cs, "search", map[string]any{}, "header", []string{"X-NetBox-Branch:", "X-NetBox-Branch: td5smq0f"}), "invalid_request", false)
	if n := f.totalRequests(); n != 0 {
		t.Errorf("an empty X-NetBox-Branch beside another under --branch-only: %d requests reached NetBox", n)
	}
	// Without a branch rule the header is the caller's own.
	cs = connect(t, newBridge(f, true), protocolVersions[0], nil)
	if r := callInv(t, cs, "search", map[string]any{}, "header", []string{"X-NetBox-Branch: mine"}); r.isError {
		t.Errorf("X-NetBox-Branch without a branch rule: %s", r.text)
	}
}

// ---- what the model pays and reads (SPEC §9, issue 18) ----

// specFullLimit and specIndexLimit are SPEC §9's sizes of the catalog's two
// forms, and specSummary the characters of an index summary.
const (
	specFullLimit  = 32 << 10
	specIndexLimit = 64 << 10
	specSummary    = 160
)

// checkIndex checks an index document against SPEC §9: its size, its
// members grouped by plugin (each slug once), no schema, summaries that are
// first sentences; it returns the index's tools, each with its plugin.
func checkIndex(t *testing.T, text string, tools int) []map[string]any {
	t.Helper()
	var doc struct {
		Detail  string
		Next    string
		Plugins []struct {
			Plugin string
			Tools  []map[string]any
		}
		Problems []any
	}
	if err := json.Unmarshal([]byte(text), &doc); err != nil || doc.Detail != "index" || doc.Next == "" || doc.Problems == nil {
		t.Fatalf("not an index: %v %s", err, clip(text, 500))
	}
	var all []map[string]any
	seen := map[string]bool{}
	for _, p := range doc.Plugins {
		if seen[p.Plugin] || len(p.Tools) == 0 {
			t.Fatalf("plugin %q listed twice, or with no tools", p.Plugin)
		}
		seen[p.Plugin] = true
		for _, tool := range p.Tools {
			for k := range tool {
				if !slices.Contains([]string{"name", "effect", "title", "summary"}, k) {
					t.Fatalf("an index entry has %q: %v", k, tool)
				}
			}
			if tool["name"] == nil || tool["effect"] == nil {
				t.Fatalf("index entry %v", tool)
			}
			if summary, _ := tool["summary"].(string); utf8.RuneCountInString(summary) > specSummary {
				t.Fatalf("a summary of %d characters: %v", utf8.RuneCountInString(summary), tool)
			}
			tool["plugin"] = p.Plugin
			all = append(all, tool)
		}
	}
	if len(all) != tools {
		t.Fatalf("an index of %d tools, want %d: %s", len(all), tools, clip(text, 500))
	}
	if len(text) > specIndexLimit || strings.Contains(text, "inputSchema") || strings.Contains(text, "outputSchema") {
		t.Errorf("the index is %d bytes (at most %d), or holds a schema", len(text), specIndexLimit)
	}
	if !strings.Contains(doc.Next, "plugin") {
		t.Errorf("next %q does not say to call again with plugin", doc.Next)
	}
	t.Logf("catalog: the index of %d tools: %d bytes, about %d tokens", tools, len(text), len(text)/4)
	return all
}

// longestNames is plugin i of the maximal catalog with every name at its
// longest (SPEC §9: 64-character slugs and tool names), destructive tools,
// and titles and descriptions at their SPEC §4 bounds: its slug and manifest.
func longestNames(i int) (string, string) {
	slug := fmt.Sprintf("%03d", i) + strings.Repeat("s", 61)
	var tools []toolSpec
	for j := range 4 {
		tools = append(tools, toolSpec{Name: fmt.Sprintf("t%d", j) + strings.Repeat("n", 62), Title: strings.Repeat("T", 200),
			Description: strings.Repeat("D", 1998) + ". ", Method: "DELETE", Path: fmt.Sprintf("t%d/", j), Effect: "destructive",
			InputSchema: json.RawMessage(`{"type": "object", "additionalProperties": false}`), Annotations: toolAnnotations{DestructiveHint: true}})
	}
	return slug, manifestJSON(slug, tools...)
}

// TestCatalogForms: SPEC §9, without plugin the full document when its JSON
// is at most 32 KiB, else the index (names, effects, titles when they fit,
// first-sentence summaries, problems, next), at most 64 KiB for the maximal
// catalog; with plugin that plugin's full descriptors; one document as text
// and as structured content.
func TestCatalogForms(t *testing.T) {
	t.Parallel()
	// A small catalog: the full form.
	f := newInvNetBox(t)
	cs := connect(t, newBridge(f, false), protocolVersions[0], nil)
	small := call(t, cs, "plugin_list_tools", map[string]any{})
	if small.doc["detail"] != "full" || len(small.text) > specFullLimit || !strings.Contains(small.text, "inputSchema") {
		t.Errorf("a small catalog: detail %v, %d bytes", small.doc["detail"], len(small.text))
	}
	// The maximal catalog of typical tools, 128 plugins of 4.
	big := newFakeNetBox(t)
	for i := range specScanRoots {
		big.setPlugin(catalogSlug(i), &fakePlugin{manifest: benchManifest(catalogSlug(i))})
	}
	cs = connect(t, newBridge(big, false), protocolVersions[0], nil)
	all := call(t, cs, "plugin_list_tools", map[string]any{})
	checkIndex(t, all.text, 4*specScanRoots)
	one := call(t, cs, "plugin_list_tools", map[string]any{"plugin": "p007"})
	if one.doc["detail"] != "full" || len(one.doc["tools"].([]any)) != 4 || !strings.Contains(one.text, `"inputSchema":{"type":"object"`) {
		t.Errorf("plugin p007: %s", clip(one.text, 300))
	}
	// A catalog a little over 32 KiB keeps its titles and whole summaries.
	mid := newFakeNetBox(t)
	for i := range 12 {
		mid.setPlugin(catalogSlug(i), &fakePlugin{manifest: benchManifest(catalogSlug(i))})
	}
	cs = connect(t, newBridge(mid, false), protocolVersions[0], nil)
	r := call(t, cs, "plugin_list_tools", map[string]any{})
	if first := checkIndex(t, r.text, 48)[0]; first["title"] != "Delete an inventory report" ||
		first["summary"] != "Delete one finished inventory report and its results." {
		t.Errorf("a mid-sized index entry %v, want its title and its description's first sentence", first)
	}
	// The maximal catalog with the longest names: at most 64 KiB, names
	// whole, titles and summaries shortened to fit (issue 28).
	longest := newFakeNetBox(t)
	for i := range specScanRoots {
		slug, manifest := longestNames(i)
		longest.setPlugin(slug, &fakePlugin{manifest: manifest})
	}
	cs = connect(t, newBridge(longest, false), protocolVersions[0], nil)
	r = call(t, cs, "plugin_list_tools", map[string]any{})
	for _, tool := range checkIndex(t, r.text, 4*specScanRoots) {
		if len(tool["name"].(string)) != 64 || len(tool["plugin"].(string)) != 64 {
			t.Fatalf("a name was cut: %v", tool)
		}
	}
}

// TestRefusalsNeverInviteARetry: SPEC §9, mutations_disabled (with and
// without a list) and every cause of not_confirmed say that a human refused
// or must allow the write and that the same call must not be retried unless
// the human asks; never "correct the call and retry".
func TestRefusalsNeverInviteARetry(t *testing.T) {
	t.Parallel()
	f := newInvNetBox(t)
	say := func(name string, r result, code string) {
		t.Helper()
		wantError(t, r, code, false)
		lower := strings.ToLower(r.text)
		if strings.Contains(lower, "correct the call and retry") || !strings.Contains(lower, "do not retry") ||
			!strings.Contains(lower, "unless the user asks") || !strings.Contains(lower, "human") && !strings.Contains(lower, "operator") {
			t.Errorf("%s: %q", name, r.text)
		}
	}
	cs := connect(t, newBridge(f, false), protocolVersions[0], nil)
	say("the switch off", callInv(t, cs, "create", map[string]any{"name": "x"}), "mutations_disabled")
	b := newBridge(f, false)
	b.policy = writePolicy{entries: []string{"inv.purge"}, setting: "--allow-mutations"}
	cs = connect(t, b, protocolVersions[0], nil)
	say("not on the list", callInv(t, cs, "create", map[string]any{"name": "x"}), "mutations_disabled")
	for _, c := range []struct {
		name   string
		answer *mcp.ElicitResult
		mode   string
		asks   bool
	}{
		{"declined", &mcp.ElicitResult{Action: "decline"}, "auto", true},
		{"cancelled", &mcp.ElicitResult{Action: "cancel"}, "auto", true},
		{"accepted without confirm", &mcp.ElicitResult{Action: "accept", Content: map[string]any{"confirm": false}}, "auto", true},
		{"a client that cannot ask", nil, "destructive", false},
	} {
		b := newBridge(f, true)
		b.confirm = c.mode
		var opts *mcp.ClientOptions
		if c.asks {
			opts = &mcp.ClientOptions{ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) { return c.answer, nil }}
		}
		cs := connect(t, b, protocolVersions[0], opts)
		say(c.name, callInv(t, cs, "purge", map[string]any{}), "not_confirmed")
	}
	b = newBridge(f, true)
	b.branchOnly = true
	cs = connect(t, b, protocolVersions[0], nil)
	say("branch_required", callInv(t, cs, "create", map[string]any{"name": "x"}), "branch_required")
}

// TestModelFacingText: what a model reads before any call, the server's
// instructions and the two tools' descriptions, is short (tokens counted
// as bytes / 4, the figure in the README) and names the two-step catalog,
// dry_run, a human's yes for writes, and outcome_unknown.
func TestModelFacingText(t *testing.T) {
	t.Parallel()
	f := newInvNetBox(t)
	cs := connect(t, newBridge(f, true), protocolVersions[0], nil)
	text := cs.InitializeResult().Instructions
	tools, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range tools.Tools {
		text += "\n" + tool.Description
	}
	tokens := len(text) / 4
	t.Logf("model: the instructions and the tool descriptions: %d bytes, about %d tokens", len(text), tokens)
	if tokens > 300 {
		t.Errorf("%d tokens of instructions and descriptions, want at most 300", tokens)
	}
	for _, want := range []string{"plugin_list_tools", "with plugin", "plugin_call_tool", "dry_run", "human", "outcome_unknown", "not be retried"} {
		if !strings.Contains(text, want) {
			t.Errorf("the model-facing text does not say %q:\n%s", want, text)
		}
	}
}

// ---- issue 17: a pipelined handshake, an old protocol's _meta, writes
// after stop, the caller headers a human and the audit see, coalesced
// full scans ----

// TestStdioPipelinedHandshake: SPEC §11, a client that writes initialize,
// notifications/initialized and a request in one write, without waiting,
// is served in order: the request is answered, never refused "before
// initialize". Issue 17 saw it refused in 37–70 % of sessions, so many
// sessions are tried.
func TestStdioPipelinedHandshake(t *testing.T) {
	t.Parallel()
	b := newBridge(newInvNetBox(t), false)
	const sessions = 50
	var wg sync.WaitGroup
	for i := range sessions {
		s := newStdioSession(t, b)
		wg.Go(func() {
			handshake := initializeLine + "\n" + `{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n" +
				`{"jsonrpc":"2.0","id":2,"method":"tools/list"}` + "\n"
			if _, err := io.WriteString(s.in, handshake); err != nil { // one write
				t.Errorf("session %d: %v", i, err)
				return
			}
			replies := map[float64]map[string]any{}
			for range 2 {
				select {
				case r := <-s.replies:
					id, _ := r["id"].(float64)
					replies[id] = r
				case <-time.After(10 * time.Second):
					t.Errorf("session %d: %d replies within 10 s, want 2", i, len(replies))
					return
				}
			}
			if replies[1]["result"] == nil {
				t.Errorf("session %d: initialize: %v", i, replies[1])
			}
			res, _ := replies[2]["result"].(map[string]any)
			if tools, _ := res["tools"].([]any); len(tools) != 2 {
				t.Errorf("session %d: tools/list written with its handshake in one write: %v; want its result", i, replies[2])
			}
		})
	}
	wg.Wait()
}

// TestConfirmationOldProtocolMeta: SPEC §11, per-request capabilities in
// _meta count only on protocol versions that define them (2026-07-28 and
// later); on older ones the session's declared capabilities decide. A
// destructive call under --confirm auto in a session that declared form
// elicitation is asked even when its _meta names 2025-06-18 with no
// elicitation; and a session that declared none is not asked because an
// old _meta claims it can be.
func TestConfirmationOldProtocolMeta(t *testing.T) {
	t.Parallel()
	oldMeta := func(caps map[string]any) mcp.Meta {
		return mcp.Meta{"io.modelcontextprotocol/protocolVersion": "2025-06-18", "io.modelcontextprotocol/clientCapabilities": caps}
	}
	purge := func(meta mcp.Meta) *mcp.CallToolParams {
		return &mcp.CallToolParams{Meta: meta, Name: "plugin_call_tool", Arguments: map[string]any{"plugin": "inv", "tool": "purge"}}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	// The session declared form elicitation (2025-11-25); the call's old
	// _meta declares none: the human is still asked, and declines.
	f := newInvNetBox(t)
	a := &asker{answer: func(context.Context) (*mcp.ElicitResult, error) { return &mcp.ElicitResult{Action: "decline"}, nil }}
	cs := connect(t, policyBridge(f, writePolicy{all: true}, "auto", io.Discard), "2025-11-25", &mcp.ClientOptions{ElicitationHandler: a.handle})
	res, err := cs.CallTool(ctx, purge(oldMeta(map[string]any{})))
	if err != nil {
		t.Fatal(err)
	}
	if a.asked() != 1 || !res.IsError || f.requests(recordsPath) != 0 {
		t.Errorf("a destructive call with _meta protocolVersion 2025-06-18 in a session that can ask: asked %d times, isError %v, %d DELETEs; "+
			"want asked once, not_confirmed, nothing sent", a.asked(), res.IsError, f.requests(recordsPath))
	}

	// The session declared no elicitation; the old _meta claims form
	// elicitation: under --confirm destructive the client cannot ask.
	f = newInvNetBox(t)
	cs = connect(t, policyBridge(f, writePolicy{all: true}, "destructive", io.Discard), "2025-11-25", nil)
	res, err = cs.CallTool(ctx, purge(oldMeta(map[string]any{"elicitation": map[string]any{"form": map[string]any{}}})))
	if err != nil {
		t.Fatal(err)
	}
	text := ""
	if len(res.Content) == 1 {
		text = res.Content[0].(*mcp.TextContent).Text
	}
	if !res.IsError || !strings.Contains(text, "does not support MCP form elicitation") || f.requests(recordsPath) != 0 {
		t.Errorf("an old _meta claiming elicitation in a session without it: %v %q, %d DELETEs; want not_confirmed because the client cannot ask",
			res.IsError, text, f.requests(recordsPath))
	}
}

// auditSignal is a log writer that keeps every line and tells when a write
// record arrives.
type auditSignal struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	write chan struct{}
}

func (a *auditSignal) Write(p []byte) (int, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if bytes.Contains(p, []byte(`"msg":"write"`)) {
		select {
		case a.write <- struct{}{}:
		default:
		}
	}
	return a.buf.Write(p)
}

// stopWriter is a session's stdout: it hands on each write until the test
// says the session stopped, and keeps what comes after.
type stopWriter struct {
	mu      sync.Mutex
	stopped bool
	after   []byte
	lines   chan []byte
}

func (w *stopWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped {
		w.after = append(w.after, p...)
		return len(p), nil
	}
	w.lines <- bytes.Clone(p)
	return len(p), nil
}

func (w *stopWriter) stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stopped = true
}

func (w *stopWriter) written() []byte {
	w.mu.Lock()
	defer w.mu.Unlock()
	return bytes.Clone(w.after)
}

// TestStdioNothingWrittenAfterStop: SPEC §11, after the session stops (its
// context ends, or stdin ends), nothing is written to stdout: a call whose
// NetBox answer comes only after serveStdio returned never writes its
// reply. The call is a write, so its audit record tells when the call has
// ended.
func TestStdioNothingWrittenAfterStop(t *testing.T) {
	t.Parallel()
	for _, stop := range []string{"context", "stdin EOF"} {
		t.Run(stop, func(t *testing.T) {
			t.Parallel()
			f := newInvNetBox(t)
			entered, release := make(chan struct{}), make(chan struct{})
			f.handle(recordsPath, func(w http.ResponseWriter, r *http.Request) {
				close(entered)
				<-release // holds its answer, even when the bridge gives up
				writeJSON(w, http.StatusCreated, `{"id": 7}`, false)
			})
			t.Cleanup(func() {
				select {
				case <-release:
				default:
					close(release)
				}
			})
			log := &auditSignal{write: make(chan struct{}, 1)}
			b := policyBridge(f, writePolicy{all: true}, "off", log)
			server := newMCPServer(b, slog.New(slog.NewTextHandler(io.Discard, nil)))
			inR, inW := io.Pipe()
			t.Cleanup(func() { inW.Close() })
			out := &stopWriter{lines: make(chan []byte, 8)}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			returned := make(chan error, 1)
			go func() { returned <- serveStdio(ctx, server, inR, out) }()
			io.WriteString(inW, initializeLine+"\n")
			select {
			case line := <-out.lines:
				if !bytes.Contains(line, []byte(`"id":1`)) {
					t.Fatalf("initialize: %s", line)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("no initialize reply")
			}
			io.WriteString(inW, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"+
				`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"plugin_call_tool","arguments":{"plugin":"inv","tool":"create","arguments":{"name":"x"}}}}`+"\n")
			waitFor(t, entered, "the write to reach NetBox")
			out.stop()
			if stop == "context" {
				cancel()
			} else {
				inW.Close()
			}
			select {
			case err := <-returned:
				if err != nil {
					t.Errorf("serveStdio: %v", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("serveStdio did not return within 10 s of the stop")
			}
			if stop == "context" {
				// A malformed line after the stop gets no -32700 either.
				go io.WriteString(inW, "{not json\n")
			}
			close(release)
			select {
			case <-log.write: // the call has ended: its reply, if any, is being written
			case <-time.After(10 * time.Second):
				t.Fatal("the call never ended")
			}
			time.Sleep(200 * time.Millisecond) // room for a reply that follows its audit record
			if after := out.written(); len(after) != 0 {
				t.Errorf("stopped by %s: written to stdout after the stop: %q", stop, after)
			}
		})
	}
	// The guard itself, whatever the SDK does: after Close neither a reply
	// nor a refusal of a bad line reaches stdout.
	var stdout bytes.Buffer
	c := &stdioConn{out: &stdout, done: make(chan struct{}), inFlight: map[jsonrpc.ID]bool{}}
	c.Close()
	id, _ := jsonrpc.MakeID(float64(7))
	if err := c.Write(context.Background(), &jsonrpc.Response{ID: id, Result: json.RawMessage(`{}`)}); err == nil || c.check([]byte("{not json"), false) != nil || stdout.Len() != 0 {
		t.Errorf("after Close: Write answered %v, and stdout holds %q", err, stdout.String())
	}
}

// TestCallerHeadersNamedForTheHuman: SPEC §13, the confirmation message
// and the audit record name the caller headers that were sent, names and
// values (clipped), never Authorization.
func TestCallerHeadersNamedForTheHuman(t *testing.T) {
	t.Parallel()
	f := newInvNetBox(t)
	f.setToken("")
	var log bytes.Buffer
	a := &asker{answer: accept(true)}
	cs := connect(t, policyBridge(f, writePolicy{all: true}, "writes", &log), protocolVersions[0], &mcp.ClientOptions{ElicitationHandler: a.handle})
	long := strings.Repeat("v", 5000)
	r := callInv(t, cs, "create", map[string]any{"name": "x"}, "token", "nbt_callerkey."+secret,
		"header", []any{"X-Tenant: blue", "X-Trace=abc123", "X-Long: " + long})
	if r.isError || a.asked() != 1 {
		t.Fatalf("the confirmed write: %s, asked %d times", r.text, a.asked())
	}
	if got := lastRequest(t, f, recordsPath).header; got.Get("X-Tenant") != "blue" || got.Get("X-Trace") != "abc123" {
		t.Fatalf("the headers were not sent: %v", got)
	}
	question := a.questions[0].Message
	recs := auditRecords(t, &log)
	if len(recs) != 2 {
		t.Fatalf("%d audit records, want 2 (dispatching, dispatched):\n%s", len(recs), log.String())
	}
	ahead, _ := json.Marshal(recs[0])
	record, _ := json.Marshal(recs[1])
	for what, text := range map[string]string{"the confirmation message": question, "the dispatching record": string(ahead), "the audit record": string(record)} {
		for _, want := range []string{"X-Tenant", "blue", "X-Trace", "abc123", "X-Long"} {
			if !strings.Contains(text, want) {
				t.Errorf("%s does not name the caller header part %q: %s", what, want, clip(text, 600))
			}
		}
		if strings.Contains(text, long) {
			t.Errorf("%s shows a 5,000-character header value whole, not clipped", what)
		}
		if strings.Contains(strings.ToLower(text), "authorization") || strings.Contains(text, secret) {
			t.Errorf("%s names Authorization or shows the token: %s", what, clip(text, 600))
		}
	}
}

// BenchmarkConcurrentFullScans: SPEC §11, 16 concurrent full scans by one
// caller (the same NetBox, token and caller headers) take at most 1.5 ×
// one scan's time; NetBox has 128 plugins and answers at 10 ms a request.
// "scan" times the scans themselves and fails above the SPEC's bound;
// "mcp" times plugin_list_tools through an in-memory MCP session, where
// each of the 16 calls also renders, sends and decodes its own copy of the
// catalog on the same cores, and only reports.
func BenchmarkConcurrentFullScans(b *testing.B) {
	s := newCatalogServer(b, 10*time.Millisecond, 128, benchManifest)
	base, origin, prefix, err := normalizeURL(s.base)
	if err != nil {
		b.Fatal(err)
	}
	c := testClient(b, &config{base: base, origin: origin, prefix: prefix, auth: catalogAuth, timeout: 10 * time.Second})
	cs := connect(b, &bridge{client: c, confirm: "auto", audit: &auditLog{stderr: slog.DiscardHandler}}, protocolVersions[0], nil)
	scans := map[string]func(){
		"scan": func() {
			if cat, err := c.scanAll(context.Background(), callOptions{}); err != nil || len(cat.tools) != 128*4 {
				b.Fatalf("a full scan: %v", err)
			}
		},
		"mcp": func() {
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "plugin_list_tools", Arguments: map[string]any{}})
			if err != nil || res.IsError {
				b.Fatalf("a full scan: %v %+v", err, res)
			}
		},
	}
	for _, name := range []string{"scan", "mcp"} {
		scan := scans[name]
		b.Run(name, func(b *testing.B) {
			scan() // warm the connections
			var one, sixteen time.Duration
			for b.Loop() {
				start := time.Now()
				scan()
				one += time.Since(start)
				start = time.Now()
				var wg sync.WaitGroup
				for range 16 {
					wg.Go(scan)
				}
				wg.Wait()
				sixteen += time.Since(start)
			}
			n := float64(b.N)
			ratio := float64(sixteen) / float64(one)
			b.ReportMetric(float64(one.Milliseconds())/n, "one-scan-ms")
			b.ReportMetric(float64(sixteen.Milliseconds())/n, "16-scans-ms")
			b.ReportMetric(ratio, "16-vs-one")
			if name == "scan" && ratio > 1.5 {
				b.Errorf("16 concurrent full scans took %.2f × one scan; SPEC §11 allows at most 1.5 ×", ratio)
			}
		})
	}
}

// TestNullMeansAbsent: SPEC §9, every optional argument of both tools also
// accepts null, which means absent, and the published schemas say so, for
// agents that make every property required (OpenAI's strict mode); the
// required ones do not.
func TestNullMeansAbsent(t *testing.T) {
	t.Parallel()
	f := newInvNetBox(t)
	cs := connect(t, newBridge(f, false), protocolVersions[0], nil)
	tools, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	optional := map[string][]string{"plugin_list_tools": {"plugin", "token", "header"}, "plugin_call_tool": {"arguments", "dry_run", "token", "header"}}
	for _, tl := range tools.Tools {
		raw, _ := json.Marshal(tl.InputSchema)
		var schema struct {
			Required   []string
			Properties map[string]struct{ Type any }
		}
		json.Unmarshal(raw, &schema)
		for name, p := range schema.Properties {
			types, _ := p.Type.([]any)
			if nullable := slices.Contains(types, "null"); nullable != slices.Contains(optional[tl.Name], name) || nullable == slices.Contains(schema.Required, name) && nullable {
				t.Errorf("%s.%s: type %v (required %v); want null allowed exactly when it is optional", tl.Name, name, p.Type, schema.Required)
			}
		}
	}
	all := call(t, cs, "plugin_list_tools", map[string]any{"plugin": nil, "token": nil, "header": nil})
	if all.isError || all.doc["detail"] != "full" || len(all.doc["tools"].([]any)) != 4 {
		t.Errorf("plugin_list_tools with every optional argument null: %s", clip(all.text, 300))
	}
	r := callInv(t, cs, "search", nil, "dry_run", nil, "token", nil, "header", nil)
	if r.isError || r.doc["status"] != 200.0 {
		t.Errorf("plugin_call_tool with every optional argument null: %s", clip(r.text, 300))
	}
	wantError(t, call(t, cs, "plugin_call_tool", map[string]any{"plugin": "inv", "tool": nil}), "invalid_request", false)
}

// TestAdviceWorksWhenFollowed: SPEC §9, "advice that names a setting works
// when followed literally": each refusal that tells a human what to set
// (mutations_disabled without and with an allow-list, not_confirmed for a
// client that cannot ask, branch_required, config_error) is followed as it
// is written, and the same call then passes (issue 30).
func TestAdviceWorksWhenFollowed(t *testing.T) {
	t.Parallel()
	f := newInvNetBox(t)
	f.setToken("") // any token: the configuration the advice leads to has none
	serveBranches(f, map[string]string{"review": "ready"})
	create := func(b *bridge) result {
		t.Helper()
		return callInv(t, connect(t, b, protocolVersions[0], nil), "create", map[string]any{"name": "x"})
	}
	said := func(r result, pattern string) []string {
		t.Helper()
		m := regexp.MustCompile(pattern).FindStringSubmatch(r.text)
		if m == nil {
			t.Fatalf("%s: %q does not say %s", r.code(), r.text, pattern)
		}
		return m
	}
	passes := func(what string, b *bridge) {
		t.Helper()
		if r := create(b); r.isError {
			t.Errorf("%s, as the advice says: the call is still refused: %s", what, r.text)
		}
	}
	// The switch off: "start the server with --allow-mutations=inv.create".
	r := create(newBridge(f, false))
	for _, value := range said(r, `--allow-mutations=(\S+) \(or NETBOX_MCP_ALLOW_MUTATIONS=(\S+)\)`)[1:] {
		b := newBridge(f, false)
		var err error
		if b.policy, err = parseWritePolicy(value, "--allow-mutations"); err != nil {
			t.Fatalf("the advised value %q: %v", value, err)
		}
		passes("--allow-mutations="+value, b)
	}
	// An allow-list without it: "add inv.create or inv.* to it".
	b := newBridge(f, false)
	b.policy, _ = parseWritePolicy("inv.purge", "--allow-mutations")
	for _, entry := range said(create(b), `add (\S+) or (\S+) to it`)[1:] {
		b := newBridge(f, false)
		b.policy, _ = parseWritePolicy("inv.purge,"+entry, "--allow-mutations")
		passes("adding "+entry+" to the list", b)
	}
	// A mode that needs a human, and a client that cannot ask.
	for _, overHTTP := range []bool{false, true} {
		b := newBridge(f, true)
		b.confirm, b.overHTTP = "writes", overHTTP
		r := create(b)
		wantError(t, r, "not_confirmed", false)
		for _, mode := range said(r, `--confirm (\w+) \(or (\w+)\) to let the allow-list alone decide`)[1:] {
			b.confirm = mode
			passes("--confirm "+mode, b)
		}
	}
	// --branch-only without a branch: "set --branch NAME (NETBOX_BRANCH) to a branch of NetBox that is ready".
	b = newBridge(f, true)
	b.branchOnly = true
	said(create(b), `set --branch NAME \(NETBOX_BRANCH\) to a branch of NetBox that is ready`)
	b.client.branch = "review"
	passes("--branch review", b)
	// No NetBox URL: "set NETBOX_URL".
	_, err := loadConfig(&options{}, testEnv(t.TempDir(), nil))
	b = newBridge(f, true)
	b.cfgErr = err
	said(create(b), `set NETBOX_URL \(for example https://netbox\.example\.com\)`)
	cfg, err := loadConfig(&options{}, testEnv(t.TempDir(), map[string]string{"NETBOX_URL": f.URL}))
	if err != nil {
		t.Fatal(err)
	}
	passes("NETBOX_URL="+f.URL, &bridge{client: newClient(cfg), policy: writePolicy{all: true}, confirm: "auto", audit: &auditLog{stderr: slog.DiscardHandler}})
}

// TestSharedScanErrorAdvisedOnce: callers waiting on one full scan share its
// error; each answer carries the next step SPEC §9 names for the code once,
// and no answer changes another's (a data race under -race).
func TestSharedScanErrorAdvisedOnce(t *testing.T) {
	t.Parallel()
	f := newFakeNetBox(t)
	f.setList("not JSON")
	release := make(chan struct{})
	f.setBefore(func(r *http.Request) {
		if r.URL.Path == "/api/plugins/" {
			<-release
		}
	})
	b := newBridge(f, false)
	cs := connect(t, b, protocolVersions[0], nil)
	const callers = 8
	results := make([]result, callers)
	var wg sync.WaitGroup
	for i := range callers {
		wg.Go(func() { results[i] = call(t, cs, "plugin_list_tools", map[string]any{}) })
	}
	for deadline := time.Now().Add(5 * time.Second); waiting(b.client) < callers && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	if n := waiting(b.client); n != callers {
		t.Fatalf("%d callers wait on the scan, want %d", n, callers)
	}
	close(release)
	wg.Wait()
	const advice = "Nothing was sent to the target operation; it is safe to retry."
	for i, r := range results {
		wantError(t, r, "discovery_failed", false)
		if n := strings.Count(r.text, advice); n != 1 {
			t.Errorf("caller %d: the advice appears %d times in %q, want once", i, n, r.text)
		}
	}
}

// TestBusyWriteAnswerSaysDoNotRetry: a write whose answer finds the
// process's body budget spent was sent, so it is outcome_unknown (SPEC §9),
// and nothing in its message tells the model to retry it. Not parallel: it
// spends the process's budget.
func TestBusyWriteAnswerSaysDoNotRetry(t *testing.T) {
	f := newInvNetBox(t)
	var held atomic.Int64
	f.setBefore(func(r *http.Request) {
		if r.Method == http.MethodPost && held.Load() == 0 {
			n := netboxBodies.left.Load()
			netboxBodies.take(n)
			held.Store(n)
		}
	})
	defer func() { netboxBodies.give(held.Load()) }()
	cs := connect(t, newBridge(f, true), protocolVersions[0], nil)
	r := call(t, cs, "plugin_call_tool", map[string]any{"plugin": "inv", "tool": "create", "arguments": map[string]any{"name": "busy"}})
	wantError(t, r, "outcome_unknown", true)
	if held.Load() == 0 {
		t.Fatal("the write never reached NetBox")
	}
	if rest := strings.ReplaceAll(r.text, "do not retry blindly", ""); strings.Contains(strings.ToLower(rest), "retry") {
		t.Errorf("a write of unknown outcome tells the model to retry: %q", r.text)
	}
}
