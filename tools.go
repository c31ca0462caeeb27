package main

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ---- the two tools ----

// instructions are what a model reads first; TestModelFacingText counts
// their tokens.
const instructions = `Tools that NetBox plugins advertise (bridge v1). Call plugin_list_tools; when it returns an index, call it again with plugin to get input schemas. Then call plugin_call_tool with arguments matching the tool's inputSchema; dry_run: true shows the exact request without sending it. Writes run only where the operator allows them: a refused write must not be retried unless the user asks. outcome_unknown means a write may have happened: check NetBox before any retry.`

// The two tools' own input schemas, compiled by the project's validator.
const (
	// Every optional argument also takes null, meaning absent, for agents
	// that make every property required (SPEC §9).
	perCallProperties = `
  "token": {"type": ["string", "null"], "minLength": 1, "description": "Only a NetBox API token the user gave for this call; omit it to act with the configured identity."},
  "header": {"type": ["array", "null"], "maxItems": 100, "items": {"type": "string", "maxLength": 8192},
    "description": "Extra HTTP headers for every request of this call, as \"Name: value\" or \"Name=value\"."}}`
	listToolsSchema = `{"type": "object", "additionalProperties": false, "properties": {
  "plugin": {"type": ["string", "null"], "description": "A plugin slug, as in the catalog: that plugin's tools with their input schemas."},` + perCallProperties + `}`
	callToolSchema = `{"type": "object", "additionalProperties": false, "required": ["plugin", "tool"], "properties": {
  "plugin": {"type": "string", "description": "Plugin slug, as in plugin_list_tools."},
  "tool": {"type": "string", "description": "Tool name within the plugin (the part after the dot of qualified_name)."},
  "arguments": {"type": ["object", "null"], "description": "Arguments matching the tool's inputSchema.", "default": {}},
  "dry_run": {"type": ["boolean", "null"], "default": false, "description": "Validate and show the exact request without sending it; use it before a write."},` + perCallProperties + `}`
)

// requestLimits bound a tool's own arguments: one instance plus its envelope.
var requestLimits = limits{bytes: instanceLimits.bytes + 64<<10, depth: instanceLimits.depth + 1, values: instanceLimits.values + 256}

// mustCompileTool compiles one of the two schemas when the server is made.
func mustCompileTool(src string) *schema {
	v, err := decode([]byte(src), schemaLimits)
	var ps problems
	if s := compileSchema(v, "inputSchema", &ps); err == nil && s != nil {
		return s
	}
	panic(fmt.Sprint(err, ps))
}

// bridge serves the two tools against one NetBox configuration.
type bridge struct {
	client      *client // and its configuration
	cfgErr      error   // when set, every call answers config_error
	policy      writePolicy
	confirm     string // one of confirmModes
	branchOnly  bool   // writes only into a branch (SPEC §16)
	noCallToken bool   // NetBox credentials only from the configuration
	audit       *auditLog
	overHTTP    bool // served over stateless HTTP, where no human can be asked
	spent       spentStates
	calls       sync.WaitGroup // tool calls running
	inFlight    atomic.Int64   // and their number
	// metric, when set, counts one event of a metric with its labels, each
	// from a bounded set (SPEC §18).
	metric func(name string, labels ...string)
}

// count counts one event for the metrics, if there are any.
func (b *bridge) count(name string, labels ...string) {
	if b.metric != nil {
		b.metric(name, labels...)
	}
}

func newMCPServer(b *bridge, logger *slog.Logger) *mcp.Server {
	server := mcp.NewServer(&mcp.Implementation{Name: "netbox-plugin-bridge", Version: bridgeVersion()}, &mcp.ServerOptions{
		Instructions: instructions,
		Logger:       logger,
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}},
	})
	server.AddTool(&mcp.Tool{
		Name:  "plugin_list_tools",
		Title: "List NetBox plugin tools",
		Description: "List the tools NetBox plugins offer, and the problems of plugins that failed. Without plugin: every tool, " +
			"as an index of names and summaries when the catalog is large; with plugin: that plugin's tools with their input schemas.",
		InputSchema: json.RawMessage(listToolsSchema),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, DestructiveHint: new(false), OpenWorldHint: new(false)},
	}, b.handler(mustCompileTool(listToolsSchema), b.listTools))
	// The annotations tell clients whether any write can pass the policy,
	// since they gate on them, and the description promises a human's
	// confirmation only where one can be asked (SPEC §9).
	writes, annotations := "Writes are off here: write tools can only be previewed.",
		&mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, DestructiveHint: new(false), OpenWorldHint: new(true)}
	switch {
	case b.cfgErr != nil || !b.policy.all && len(b.policy.entries) == 0 || b.branchOnly && b.client.branch == "":
	case b.overHTTP && b.confirm == "writes":
		writes = "Writes are off here: each needs a human's yes, and none can be asked over this HTTP service; write tools can only be previewed."
	case b.overHTTP && b.confirm == "destructive":
		writes, annotations = "Writes run where the operator allows them; destructive tools can only be previewed here.", &mcp.ToolAnnotations{DestructiveHint: new(false), OpenWorldHint: new(true)}
	case b.overHTTP || b.confirm == "off":
		writes, annotations = "Writes run where the operator allows them.", &mcp.ToolAnnotations{DestructiveHint: new(true), OpenWorldHint: new(true)}
	default:
		writes, annotations = "Writes run where the operator allows them, some after a human confirms.", &mcp.ToolAnnotations{DestructiveHint: new(true), OpenWorldHint: new(true)}
	}
	server.AddTool(&mcp.Tool{
		Name:        "plugin_call_tool",
		Title:       "Call a NetBox plugin tool",
		Description: "Call one plugin tool with arguments matching its inputSchema. Reads run at once; dry_run: true shows the request without sending it. " + writes,
		InputSchema: json.RawMessage(callToolSchema),
		Annotations: annotations,
	}, b.handler(mustCompileTool(callToolSchema), b.call))
	return server
}

// callArgs are the parsed arguments of either tool.
type callArgs struct {
	plugin, tool string
	arguments    value
	dryRun       bool
	opts         callOptions
}

// parseArgs validates a tool's own arguments against its published schema
// and reads them; the handler makes its errors invalid_request.
func parseArgs(raw json.RawMessage, s *schema) (*callArgs, error) {
	if t := string(bytes.TrimSpace(raw)); t == "" || t == "null" {
		raw = json.RawMessage("{}")
	}
	err := s.validateBytes(raw, requestLimits, "arguments")
	if err != nil {
		return nil, err
	}
	a := &callArgs{arguments: value{kind: kindObject, obj: []member{}}}
	for _, m := range decodeChecked(raw).obj {
		switch {
		case m.val.kind == kindNull: // absent
		case m.key == "plugin":
			a.plugin = m.val.s
		case m.key == "tool":
			a.tool = m.val.s
		case m.key == "arguments":
			a.arguments = m.val
		case m.key == "dry_run":
			a.dryRun = m.val.b
		case m.key == "token":
			if a.opts.auth, err = authorization(m.val.s); err != nil {
				return nil, fmt.Errorf("arguments.token: %v", err)
			}
			a.opts.authFrom = "per-call"
		case m.key == "header":
			if a.opts.header, err = parseHeaders(m.val.arr); err != nil {
				return nil, err
			}
		}
	}
	return a, nil
}

// reservedHeaders are the caller header names the bridge itself controls
// (SPEC §9): its own request headers, the method overrides, which would let
// a read tool write, and the idempotency keys, which would let Go's client
// resend a write. Conditional headers (If-*) are refused by prefix, and
// X-NetBox-Branch while a branch rule is in force (SPEC §16).
var reservedHeaders = []string{"authorization", "proxy-authorization", "cookie", "host", "accept", "accept-encoding",
	"content-type", "content-length", "content-encoding", "transfer-encoding", "connection", "upgrade", "te",
	"trailer", "keep-alive", "expect", "x-http-method-override", "x-http-method", "x-method-override",
	"idempotency-key", "x-idempotency-key"}

// branchHeader selects a NetBox branch by its schema_id (SPEC §16).
const branchHeader = "X-NetBox-Branch"

// parseHeaders reads "Name: value" and "Name=value" entries.
func parseHeaders(entries []value) (http.Header, error) {
	h := http.Header{}
	for i, e := range entries {
		at := fmt.Sprintf("arguments.header[%d]", i)
		cut := strings.IndexAny(e.s, ":=")
		if cut <= 0 {
			return nil, fmt.Errorf("%s: %s is not \"Name: value\" or \"Name=value\"", at, quote(clip(e.s, 100)))
		}
		name, val := e.s[:cut], strings.Trim(e.s[cut+1:], " ")
		if strings.ContainsFunc(name, func(r rune) bool { return r > '~' || !isAlnum(byte(r)) && !strings.ContainsRune("!#$%&'*+-.^_`|~", r) }) {
			return nil, fmt.Errorf("%s: header name %s is not an RFC 9110 token", at, quote(clip(name, 100)))
		}
		if lower := strings.ToLower(name); slices.Contains(reservedHeaders, lower) || strings.HasPrefix(lower, "if-") {
			return nil, fmt.Errorf("%s: header %s is set by the bridge and cannot be overridden", at, quote(name))
		}
		if hasControl(val) {
			return nil, fmt.Errorf("%s: the value of header %s contains a control character", at, quote(name))
		}
		h.Add(name, val)
	}
	return h, nil
}

// handler adapts one of the two operations to a raw MCP tool handler: its
// arguments validated against its published schema, the caller and the
// configuration checked, and its result document or error rendered.
func (b *bridge) handler(input *schema, run func(context.Context, *mcp.CallToolRequest, *callArgs) ([]byte, error)) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		b.calls.Add(1)
		b.inFlight.Add(1)
		defer func() { b.calls.Done(); b.inFlight.Add(-1) }()
		a, err := parseArgs(req.Params.Arguments, input)
		caller, overHTTP := ctx.Value(callerKey{}).(httpCaller)
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		if overHTTP {
			// The SDK detaches a call from its HTTP request; a client that
			// goes away, or a drain that gives up, still ends the call.
			defer context.AfterFunc(caller.ctx, cancel)()
		}
		var doc []byte
		switch {
		case err != nil:
			err = &bridgeError{Code: "invalid_request", Message: err.Error()}
		case caller.auth != "" && a.opts.authFrom == "per-call": // over HTTP the caller's identity is the identity
			err = &bridgeError{Code: "invalid_request", Message: "arguments.token: over HTTP the caller's own Authorization is the NetBox token; leave out token"}
		case b.cfgErr != nil:
			err = &bridgeError{Code: "config_error", Message: b.cfgErr.Error()}
		case a.opts.authFrom == "per-call" && b.noCallToken:
			err = &bridgeError{Code: "invalid_request", Message: "arguments.token: the operator allows NetBox credentials only from the configuration (--no-call-token); leave out token"}
		case a.opts.header.Values(branchHeader) != nil && (b.client.branch != "" || b.branchOnly): // in any entry, empty or not
			err = &bridgeError{Code: "invalid_request", Message: "arguments.header: X-NetBox-Branch is set by the bridge while the operator confines writes to a branch"}
		default:
			// The caller's identity is the call's: its NetBox token replaces the configured one.
			a.opts.remote, a.opts.peer = caller.remote, caller.peer
			if caller.auth != "" {
				a.opts.auth, a.opts.authFrom = caller.auth, "http"
			}
			doc, err = run(ctx, req, a)
		}
		if ask, ok := errors.AsType[*inputRequired](err); ok {
			return ask.result, nil
		} else if err != nil {
			result, code := toolError(err, a)
			b.count("tool_calls_total", "tool", req.Params.Name, "code", code)
			return result, nil
		}
		b.count("tool_calls_total", "tool", req.Params.Name, "code", "ok")
		// The same JSON as structured content and as text, no other copy.
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(doc)}}, StructuredContent: json.RawMessage(doc)}, nil
	}
}

// httpCaller is who calls over streamable HTTP (SPEC §14), put in the
// request's context by the HTTP front: the caller's own NetBox
// Authorization in the caller-token mode, "" when the configured token
// serves everyone, and the client's address.
type httpCaller struct {
	auth         string
	remote, peer string          // the client, and the peer when a trusted proxy forwarded it
	ctx          context.Context // the HTTP request's: it ends with the request
}

type callerKey struct{}

// ---- results ----

// nextSteps are what an error's message tells the model to do next (SPEC
// §9): never to retry what a human refused or must allow.
var nextSteps = map[string]string{
	"invalid_request":    "Nothing was sent; correct the call and retry.",
	"tool_not_found":     "Nothing was sent; correct the call and retry.",
	"invalid_arguments":  "Nothing was sent; correct the call and retry.",
	"mutations_disabled": "Nothing was sent: the operator has not allowed this write. Do not retry it unless the user asks you to, after allowing it.",
	"not_confirmed":      "Nothing was sent: a human did not confirm this write. Do not retry it unless the user asks you to.",
	"branch_required":    "Nothing was sent: the operator allows writes only into a NetBox branch, and none is configured. Do not retry it unless the user asks you to.",
	"branch_unavailable": "Nothing was sent. Do not retry until the user says the branch is ready.",
	"request_failed":     "Nothing was sent; retry once NetBox is reachable.",
	"plugin_not_found":   "Nothing was sent to the target operation; it is safe to retry.",
	"not_advertised":     "Nothing was sent to the target operation; it is safe to retry.",
	"discovery_failed":   "Nothing was sent to the target operation; it is safe to retry.",
	"outcome_unknown":    "The write may have taken effect on NetBox: do not retry blindly; check the plugin's state first.",
	"audit_failed":       "The bridge cannot record writes now: do not retry until the user says the operator has fixed its audit log.",
}

// toolError renders an error as an isError result, with its code.
func toolError(err error, a *callArgs) (*mcp.CallToolResult, string) {
	be := &bridgeError{Code: "discovery_failed", Message: err.Error()}
	if e, ok := errors.AsType[*bridgeError](err); ok {
		*be = *e // a copy: the callers waiting on one scan share its error
	}
	if a != nil {
		be.Plugin = cmp.Or(be.Plugin, a.plugin)
		be.Tool = cmp.Or(be.Tool, a.tool)
	}
	if next := nextSteps[be.Code]; next != "" {
		be.Message = strings.TrimSuffix(be.Message, ".") + ". " + next
	}
	doc, _ := json.Marshal(map[string]*bridgeError{"error": be})
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: be.Message}}, StructuredContent: json.RawMessage(doc)}, be.Code
}

// ---- the catalog ----

// What a model pays for the catalog (SPEC §9): every descriptor up to
// fullCatalogLimit of JSON, else the index, within indexLimit.
const (
	fullCatalogLimit = 32 << 10
	indexLimit       = 64 << 10
	indexNext        = "Call plugin_list_tools with plugin for that plugin's tools with their input schemas."
)

// listTools is plugin_list_tools: one plugin, or a full scan with progress.
func (b *bridge) listTools(ctx context.Context, req *mcp.CallToolRequest, a *callArgs) ([]byte, error) {
	if a.plugin != "" {
		cat, err := b.client.scanOne(ctx, a.plugin, a.opts)
		if err != nil {
			return nil, err
		}
		return catalogDocument(cat, true), nil
	}
	if token := req.Params.GetProgressToken(); token != nil {
		var stop func()
		a.opts.progress, stop = progressSender(ctx, req, token)
		defer stop()
	}
	cat, err := b.client.scanAll(ctx, a.opts)
	if err != nil {
		return nil, err
	}
	cat.rendered.Do(func() { cat.rendered.doc = catalogDocument(cat, false) })
	return cat.rendered.doc, nil
}

// progressSender sends a call's progress so that a slow client never slows
// the scan, each value from a goroutine of its own, and only a larger value
// than any sent before (MCP asks for increasing values). stop waits for
// them all, so that none goes out after the call's result.
func progressSender(ctx context.Context, req *mcp.CallToolRequest, token any) (update func(done, total int), stop func()) {
	var mu sync.Mutex
	var sending sync.WaitGroup
	sent := 0
	return func(done, total int) {
		sending.Go(func() {
			mu.Lock()
			defer mu.Unlock()
			if done > sent {
				sent = done
				req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token,
					Progress: float64(done), Total: float64(total), Message: fmt.Sprintf("%d of %d plugins discovered", done, total)})
			}
		})
	}, sending.Wait
}

// catalogDocument renders a catalog as the plugin_list_tools result (SPEC
// §9): every descriptor when full is set or the document fits
// fullCatalogLimit, else the index, whose summaries and then titles are
// clipped shorter, down to nothing, until it fits indexLimit.
func catalogDocument(cat *catalog, full bool) []byte {
	size := 0 // of the descriptors alone, without rendering them
	for _, t := range cat.tools {
		size += len(t.tool.descriptor)
	}
	if full || size <= fullCatalogLimit {
		if doc := renderCatalog(cat, "full", 0, 0); full || len(doc) <= fullCatalogLimit {
			return doc
		}
	}
	for title, summary := titleLimit, summaryLimit; ; {
		if doc := renderCatalog(cat, "index", title, summary); len(doc) <= indexLimit || title == 0 {
			return doc
		}
		if summary > 0 {
			summary = summary * 3 / 4
		} else {
			title = title * 3 / 4
		}
	}
}

// The problems a catalog shows, each message clipped to 300 characters,
// "…" included (SPEC §9).
const (
	problemsShown = 128
	problemClip   = 299
)

// renderCatalog renders the full document, each descriptor exactly as in
// its manifest plus plugin, qualified_name and request_path, or the index,
// grouped by plugin, with titles and summaries clipped to title and summary
// bytes and left out at 0. Both show at most problemsShown problems.
func renderCatalog(cat *catalog, detail string, title, summary int) []byte {
	size := 512 + 300*len(cat.tools)
	for _, t := range cat.tools {
		if detail == "full" {
			size += len(t.tool.descriptor) + 2*len(t.plugin) + len(t.requestPath)
		}
	}
	b := append(make([]byte, 0, size), `{"schema_version":"1","detail":`...)
	b = appendString(b, detail)
	b = append(b, `,"`+map[bool]string{true: "tools", false: "plugins"}[detail == "full"]+`":[`...)
	for i, t := range cat.tools {
		// The members one by one, as this loop is the catalog's hot path:
		// first what separates the tool from the one before, then the tool.
		switch {
		case i > 0 && (detail == "full" || t.plugin == cat.tools[i-1].plugin): // tools are sorted: a plugin's are together
			b = append(b, ',')
		case i > 0:
			b = append(b, "]},"...)
			fallthrough
		case detail != "full": // each plugin's slug once in the index
			b = append(appendString(append(b, `{"plugin":`...), t.plugin), `,"tools":[`...)
		}
		if detail == "full" {
			b = append(b, t.tool.descriptor[:len(t.tool.descriptor)-1]...) // without its '}'
			b = appendMembers(b, "plugin", t.plugin, "qualified_name", t.qualifiedName(), "request_path", t.requestPath)
			b = append(b, '}')
			continue
		}
		b = appendMembers(append(b, '{'), "name", t.tool.name, "effect", t.tool.effect)
		if title > 0 {
			b = appendMembers(b, "title", clip(t.tool.title, title))
		}
		if summary > 0 {
			b = appendMembers(b, "summary", clip(t.tool.summary, summary))
		}
		b = append(b, '}')
	}
	if detail != "full" && len(cat.tools) > 0 {
		b = append(b, "]}"...)
	}
	b = append(b, `],"problems":[`...)
	for i, p := range cat.problems[:min(len(cat.problems), problemsShown)] {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(appendMembers(append(b, '{'), "plugin", p.Plugin, "code", p.Code, "error", clip(p.Error, problemClip)), '}')
	}
	b = append(b, ']')
	if omitted := len(cat.problems) - problemsShown; omitted > 0 {
		b = strconv.AppendInt(append(b, `,"problems_omitted":`...), int64(omitted), 10)
	}
	if detail != "full" {
		b = appendMembers(b, "next", indexNext)
	}
	return append(b, '}')
}

// appendMembers appends string members to an object, given as names and
// values in turn, each after a comma unless the object has none yet. The
// names are the bridge's own, plain ASCII, so they are copied unescaped.
func appendMembers(b []byte, members ...string) []byte {
	for i := 0; i < len(members); i += 2 {
		if b[len(b)-1] != '{' {
			b = append(b, ',')
		}
		b = appendString(append(append(append(b, '"'), members[i]...), '"', ':'), members[i+1])
	}
	return b
}

// ---- dispatch ----

// call discovers the plugin (and looks its branch up at the same time),
// validates the arguments and dispatches the target request: a read at
// once, a write when the write policy allows it.
func (b *bridge) call(ctx context.Context, req *mcp.CallToolRequest, a *callArgs) ([]byte, error) {
	var cat *catalog
	var err error
	schemaID, branchErr := b.client.branchAndDiscover(ctx, a.opts, func() { cat, err = b.client.scanOne(ctx, a.plugin, a.opts) })
	if err != nil {
		return nil, err
	}
	ct, err := cat.find(a.tool)
	if err != nil {
		return nil, err
	}
	p, err := prepare(ct, a.arguments, a.opts, schemaID)
	switch {
	case err != nil:
		return nil, err
	case ct.tool.effect != "read":
		return b.write(ctx, req, a, p, branchErr)
	case branchErr != nil:
		return nil, branchErr
	case a.dryRun:
		return dryRunDocument(p, b.client.branch, ""), nil
	}
	doc, _, err := b.client.send(ctx, p)
	return doc, err
}

// find returns the catalog's tool of that name, or tool_not_found.
func (cat *catalog) find(name string) (catalogTool, error) {
	var names []string
	for _, t := range cat.tools {
		if t.tool.name == name {
			return t, nil
		}
		names = append(names, t.tool.name)
	}
	return catalogTool{}, &bridgeError{Code: "tool_not_found", Message: fmt.Sprintf("plugin %s has no tool %s; it has: %s",
		quote(cat.plugin), quote(clip(name, 100)), strings.Join(names, ", "))}
}

// prepared is a validated call of one tool, ready to dispatch.
type prepared struct {
	ct     catalogTool
	req    request
	query  value       // the dry-run view of req.query
	body   value       // and of req.body
	caller http.Header // the caller's own headers, without the bridge's
}

// prepare validates arguments against the tool's inputSchema and builds
// its request (SPEC §9): a read's query, or a write's JSON body, and the
// branch header when a branch is in force.
func prepare(ct catalogTool, arguments value, opts callOptions, schemaID string) (prepared, error) {
	if ct.tool.input == nil { // a nil schema accepts anything: only a full scan's light copies lack one
		panic("internal error: a tool without its compiled input schema is never dispatched")
	}
	args := encode(arguments)
	if err := ct.tool.input.validateBytes(args, instanceLimits, "arguments"); err != nil {
		return prepared{}, &bridgeError{Code: "invalid_arguments", Message: err.Error()}
	}
	p := prepared{ct: ct, query: value{kind: kindObject, obj: []member{}}, caller: opts.header,
		req: request{method: ct.tool.method, path: ct.requestPath, header: opts.header, auth: opts.auth, limit: instanceLimits.bytes}}
	if schemaID != "" {
		p.req.header = http.Header{} // the caller's headers with the branch's, the caller's left as they are
		maps.Copy(p.req.header, opts.header)
		p.req.header.Set(branchHeader, schemaID)
	}
	if ct.tool.effect == "read" {
		p.req.query, p.query = encodeQuery(arguments, ct.tool.input)
	} else {
		p.req.body, p.body = args, arguments
	}
	return p, nil
}

// encodeQuery renders GET/HEAD arguments as a query (SPEC §9) and as the
// dry-run view of it: names sorted, arrays as repeated keys, null as an
// empty value, integral numbers of integer properties as plain digits,
// other numbers as their exact tokens.
func encodeQuery(args value, s *schema) (string, value) {
	q := url.Values{}
	view := value{kind: kindObject, obj: []member{}}
	for _, m := range slices.SortedFunc(slices.Values(args.obj), func(x, y member) int { return strings.Compare(x.key, y.key) }) {
		prop := s.props[s.propIndex[m.key]].schema
		if m.val.kind != kindArray {
			view.obj = append(view.obj, member{m.key, addQueryValue(q, m.key, m.val, prop)})
			continue
		}
		list := value{kind: kindArray, arr: []value{}}
		for _, e := range m.val.arr {
			list.arr = append(list.arr, addQueryValue(q, m.key, e, prop.items))
		}
		view.obj = append(view.obj, member{m.key, list})
	}
	return q.Encode(), view
}

// addQueryValue adds one value of the parameter key to q, as encodeQuery
// renders it, and returns the text it added, for the dry-run view.
func addQueryValue(q url.Values, key string, v value, s *schema) value {
	text := v.s
	switch {
	case v.kind == kindNull:
		text = ""
	case v.kind == kindBool:
		text = fmt.Sprint(v.b)
	case v.kind == kindNumber && s != nil && s.types&typeInteger != 0 && s.types&typeNumber == 0:
		text = exact(v.s).RatString() // integral: validated as an integer
	}
	q.Add(key, text)
	return stringValue(text)
}

func stringValue(s string) value { return value{kind: kindString, s: s} }

// send dispatches the request once and renders its answer: the result
// document, or the error of SPEC §9 (which carries a strict JSON body of a
// non-2xx answer). The response it returns keeps the status and headers
// only: its body was released to the process budget once rendered.
func (c *client) send(ctx context.Context, p prepared) ([]byte, *response, error) {
	resp, err := c.do(ctx, p.req)
	doc, err := responseDocument(p.ct, resp, err)
	if resp != nil {
		resp.release()
		resp.body = nil
	}
	return doc, resp, err
}

// dryRunDocument previews a call (SPEC §9): in branch, when one is in
// force; refusal says why a live call would be refused, "" when it would
// be allowed.
func dryRunDocument(p prepared, branch, refusal string) []byte {
	notice := "Local preview: discovery and argument validation ran against NetBox, but no request was sent to the target, so the plugin did not validate or authorize it."
	if refusal != "" {
		notice += " A live call would be refused: " + refusal
	}
	doc := value{kind: kindObject, obj: []member{
		{"dry_run", value{kind: kindBool, b: true}}, {"plugin", stringValue(p.ct.plugin)}, {"tool", stringValue(p.ct.tool.name)},
		{"effect", stringValue(p.ct.tool.effect)}, {"method", stringValue(p.ct.tool.method)}, {"path", stringValue(p.ct.requestPath)},
		{"query", p.query}, {"body", p.body}, {"allowed", value{kind: kindBool, b: refusal == ""}}, {"notice", stringValue(notice)}}}
	if id := p.req.header.Get(branchHeader); id != "" {
		doc.obj = append(doc.obj, member{"branch", stringValue(branch)},
			member{"headers", value{kind: kindObject, obj: []member{{"X-NetBox-Branch", stringValue(id)}}}})
	}
	return encode(doc)
}

// keptHeaders are the response headers an agent sees, under SPEC §9's names.
var keptHeaders = []string{"Content-Type", "Location", "X-Request-ID", "API-Version", "ETag", "Last-Modified", "Retry-After", "Allow"}

// responseDocument turns the target's answer into the success document, or
// into the error of SPEC §9 on the right side of the write boundary.
func responseDocument(ct catalogTool, resp *response, err error) ([]byte, error) {
	if te, ok := errors.AsType[*transportError](err); ok && !te.sent {
		return nil, &bridgeError{Code: "request_failed", Message: fmt.Sprintf("%s %s failed before anything was sent: %v",
			ct.tool.method, ct.requestPath, te.err)}
	}
	if err == nil && resp.status >= 200 && resp.status <= 299 {
		// A 2xx answer succeeds when its body passes the tool's
		// outputSchema; HEAD, 204 and 205 have no body to check (SPEC §9).
		body := []byte("null")
		if ct.tool.method != http.MethodHead && resp.status != http.StatusNoContent && resp.status != http.StatusResetContent {
			body, err = resp.body, ct.tool.output.validateBytes(resp.body, instanceLimits, "body")
		}
		if err == nil {
			doc := appendMembers(append(make([]byte, 0, len(body)+512), '{'), "plugin", ct.plugin, "tool", ct.tool.name, "effect", ct.tool.effect)
			doc = append(strconv.AppendInt(append(doc, `,"status":`...), int64(resp.status), 10), `,"headers":{`...)
			for _, name := range keptHeaders {
				if v := resp.header.Values(name); len(v) > 0 {
					doc = appendMembers(doc, name, strings.Join(v, ", "))
				}
			}
			return append(append(append(doc, `},"body":`...), body...), '}'), nil
		}
		err = fmt.Errorf("the response body is invalid: %w", err)
	}
	return nil, dispatchError(ct, resp, err)
}

// dispatchError is the failure of a request that was sent: a write's outcome
// is unknown; a read failed without effect. It reports the status, and the
// body when that is strict bounded JSON.
func dispatchError(ct catalogTool, resp *response, err error) *bridgeError {
	be := &bridgeError{Dispatched: true, cause: err}
	why := fmt.Sprint(err)
	switch {
	case err != nil && resp != nil && resp.status >= 400:
		why = fmt.Sprintf("HTTP %d, and its %v", resp.status, err)
	case err == nil:
		why = fmt.Sprintf("HTTP %d", resp.status)
	}
	if resp != nil {
		be.Status = resp.status
		if v, derr := decode(resp.body, instanceLimits); derr == nil && resp.body != nil {
			be.Body = encode(v)
			if err == nil {
				why += detail(v)
			}
		}
	}
	target := ct.tool.method + " " + ct.requestPath
	be.Code, be.Message = "http_error", fmt.Sprintf("%s: %s. The read had no effect; fix the cause and retry.", target, why)
	switch {
	case ct.tool.effect != "read":
		be.Code, be.Outcome = "outcome_unknown", "unknown"
		be.Message = fmt.Sprintf("%s was sent, but its outcome is unknown: %s", target, why)
	case resp == nil || resp.status >= 200 && resp.status <= 399: // else http_error, whatever its body
		be.Code, be.Body = "response_invalid", nil
	}
	return be
}

// ---- write policy (SPEC §13, §16) ----

// writePolicy is the mutation switch and its allow-list.
type writePolicy struct {
	all     bool
	entries []string // "plugin.tool" or "plugin.*"
	setting string   // the flag or variable that set it
}

// parseWritePolicy reads a value of the switch: 1|true|yes|on for every
// tool, 0|false|no|off or nothing for none, else a list of plugin.tool and
// plugin.* entries. A typo in a safety switch must be loud, so anything else
// is an error, never "off".
func parseWritePolicy(s, setting string) (writePolicy, error) {
	if all, err := switchWord(strings.TrimSpace(s)); err == nil || strings.TrimSpace(s) == "" {
		return writePolicy{all: all, setting: setting}, nil
	}
	p := writePolicy{setting: setting}
	for _, e := range strings.Split(s, ",") {
		e = strings.TrimSpace(e)
		plugin, tool, ok := strings.Cut(e, ".")
		switch {
		case e == "":
		case !ok || !slugPattern.MatchString(plugin) || tool != "*" && !toolNamePattern.MatchString(tool):
			return writePolicy{}, fmt.Errorf("%s: %s is neither plugin.tool nor plugin.* (as in example.run_report,proxbox.*), nor one of 1, true, yes, on, 0, false, no, off",
				setting, quote(e))
		default:
			p.entries = append(p.entries, e)
		}
	}
	return p, nil
}

// switchWord reads 1|true|yes|on or 0|false|no|off, in any case.
func switchWord(s string) (bool, error) {
	switch strings.ToLower(s) {
	case "1", "true", "yes", "on":
		return true, nil
	case "0", "false", "no", "off":
		return false, nil
	}
	return false, errors.New("is not one of 1, true, yes, on, 0, false, no, off")
}

func (p writePolicy) allows(ct catalogTool) bool {
	return p.all || slices.Contains(p.entries, ct.qualifiedName()) || slices.Contains(p.entries, ct.plugin+".*")
}

// confirmModes are the values of --confirm, the default first.
var confirmModes = []string{"auto", "destructive", "writes", "off"}

// refusal is the code and message of a write the policy refuses, or "".
func (b *bridge) refusal(ct catalogTool) (code, message string) {
	name := ct.qualifiedName()
	switch {
	case b.branchOnly && b.client.branch == "":
		return "branch_required", fmt.Sprintf("%s is a %s tool, and the operator allows writes only into a NetBox branch (--branch-only), but no branch is configured: a human must set --branch NAME (NETBOX_BRANCH) to a branch of NetBox that is ready",
			name, ct.tool.effect)
	case b.policy.allows(ct):
		return "", ""
	case len(b.policy.entries) == 0:
		return "mutations_disabled", fmt.Sprintf("%s is a %s tool and mutations are disabled: a human must start the server with --allow-mutations=%s (or NETBOX_MCP_ALLOW_MUTATIONS=%[3]s) to allow it; dry_run: true previews it",
			name, ct.tool.effect, name)
	}
	return "mutations_disabled", fmt.Sprintf("%[1]s is a %[2]s tool that is not on the allow-list %[3]s (%[4]s): a human must add %[1]s or %[5]s.* to it to allow it; dry_run: true previews it",
		name, ct.tool.effect, strings.Join(b.policy.entries, ","), b.policy.setting, ct.plugin)
}

// write decides a call of a write or destructive tool in four steps:
// decide (a dry run, or refused by the policy or for its branch), ask (a
// human, when the mode says so), record and send once, record the
// outcome. Each decision is audited; nothing is sent unless its
// dispatching record was written first (SPEC §13).
func (b *bridge) write(ctx context.Context, req *mcp.CallToolRequest, a *callArgs, p prepared, branchErr error) ([]byte, error) {
	refused := func(decision string) { // audited and counted
		b.audit.write(ctx, b.auditRecord(a, p, decision))
		b.count("writes_total", "outcome", "refused")
	}

	// Decide: the branch, the dry run, the policy.
	code, refusal := b.refusal(p.ct)
	switch {
	case branchErr != nil && code == "":
		refused("branch_unavailable")
		return nil, branchErr
	case a.dryRun:
		b.audit.write(ctx, b.auditRecord(a, p, "dry_run"))
		return dryRunDocument(p, b.client.branch, refusal), nil
	case code != "":
		refused(code)
		return nil, &bridgeError{Code: code, Message: refusal}
	}

	// Ask: a human confirms exactly this request when the mode asks for it.
	if err := b.confirmWrite(ctx, req, p); err != nil {
		if _, ask := errors.AsType[*inputRequired](err); !ask { // else not decided yet: the client asks and calls again
			refused("not_confirmed")
		}
		return nil, err
	}

	// Record, then send once: no byte goes to NetBox before the
	// dispatching record is on stderr and in the audit file.
	if err := b.audit.write(ctx, b.auditRecord(a, p, "dispatching")); err != nil {
		b.count("writes_total", "outcome", "refused")
		return nil, &bridgeError{Code: "audit_failed", Message: fmt.Sprintf("%s was not sent: its audit record could not be written (%v); nothing reached NetBox",
			p.ct.qualifiedName(), err)}
	}
	start := time.Now()
	doc, resp, err := b.client.send(ctx, p)

	// Record the outcome: the status, NetBox's request id, outcome_unknown.
	var outcome []any
	if resp != nil {
		outcome = append(outcome, "status", resp.status)
		if id := resp.header.Get("X-Request-ID"); id != "" {
			outcome = append(outcome, "request_id", clip(printable(id), clipLimit))
		}
	}
	if be, ok := errors.AsType[*bridgeError](err); ok && be.Outcome != "" {
		outcome = append(outcome, "outcome", be.Outcome)
		b.count("writes_total", "outcome", "unknown")
	} else if err == nil {
		b.count("writes_total", "outcome", "sent")
	}
	outcome = append(outcome, "duration_ms", time.Since(start).Milliseconds())
	b.audit.write(ctx, b.auditRecord(a, p, "dispatched", outcome...))
	return doc, err
}

// tokenName names the token of an Authorization without its secret: a v2
// token's key, or for a v1 token "v1:" and 12 hex digits of its SHA-256,
// enough to tell callers apart and useless to an attacker.
func tokenName(auth string) string {
	scheme, token, _ := strings.Cut(auth, " ")
	switch {
	case auth == "":
		return "none"
	case scheme == "Bearer":
		key, _, _ := strings.Cut(token, ".")
		return key
	}
	sum := sha256.Sum256([]byte(token))
	return "v1:" + hex.EncodeToString(sum[:6])
}

// callerHeaders renders a call's caller headers for a human and the audit,
// names and values clipped; they never hold Authorization.
func callerHeaders(h http.Header) string {
	var lines []string
	for _, name := range slices.Sorted(maps.Keys(h)) {
		lines = append(lines, clip(name, 100)+": "+clip(strings.Join(h[name], ", "), 200))
	}
	return strings.Join(lines, "\n")
}

// ---- audit (SPEC §13) ----

// auditRecord is the audit record of a write decision: the call, the
// decision, the outcome's attributes when it was dispatched, and the caller
// by its token's public part; never the body, never a secret.
func (b *bridge) auditRecord(a *callArgs, p prepared, decision string, outcome ...any) slog.Record {
	r := slog.NewRecord(time.Now(), slog.LevelInfo, "write", 0)
	r.Add("kind", "audit", "plugin", p.ct.plugin, "tool", p.ct.tool.name, "effect", p.ct.tool.effect, "method", p.ct.tool.method,
		"path", p.ct.requestPath, "decision", decision)
	r.Add(outcome...)
	r.Add("token", tokenName(cmp.Or(a.opts.auth, b.client.auth)), "token_source", cmp.Or(a.opts.authFrom, "configured"))
	if a.opts.remote != "" {
		r.Add("remote", a.opts.remote)
	}
	if a.opts.peer != a.opts.remote {
		r.Add("peer", a.opts.peer)
	}
	if h := callerHeaders(a.opts.header); h != "" {
		r.Add("headers", h)
	}
	if b.client.branch != "" {
		r.Add("branch", b.client.branch)
	}
	return r
}

// auditLog is where write decisions go: stderr, through the operator's log
// handler, and with --audit-file a file of JSON lines, appended and synced.
// Its lock guards the file and failing.
type auditLog struct {
	stderr  slog.Handler
	path    string // --audit-file, "" for none
	mu      sync.Mutex
	file    *os.File
	failing error // the file's last failure, said once on stderr
}

// write writes one record everywhere and returns the first failure: a
// record that cannot be written to stderr (a closed pipe) or to the file,
// synced to disk (a full disk, a removed directory), is not written. A
// file failure is also said once on stderr, until the file works again.
func (l *auditLog) write(ctx context.Context, r slog.Record) error {
	err := l.stderr.Handle(ctx, r)
	if l.path == "" {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	ferr := errors.New("it is not open")
	if l.file != nil {
		if ferr = slog.NewJSONHandler(l.file, nil).Handle(ctx, r); ferr == nil {
			if ferr = l.file.Sync(); errors.Is(ferr, syscall.EINVAL) {
				ferr = nil // a pipe or a device, which has no disk to sync
			}
		}
	}
	if ferr != nil && l.failing == nil && err == nil {
		notice := slog.NewRecord(time.Now(), slog.LevelError, "the audit file cannot be written: every write is refused with audit_failed until it can", 0)
		notice.Add("kind", "audit", "file", l.path, "error", ferr.Error())
		l.stderr.Handle(ctx, notice)
	}
	l.failing = ferr
	if ferr != nil {
		return cmp.Or(err, fmt.Errorf("the audit file %s: %w", l.path, ferr))
	}
	return err
}

// reopen opens the audit file, creating it private, and closes the one it
// replaces: at the start and on SIGHUP, after a log rotation renamed it.
func (l *auditLog) reopen() error {
	f, err := os.OpenFile(l.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.file != nil {
		l.file.Close()
	}
	l.file = f
	return nil
}

// ---- confirmation (SPEC §13) ----

// The question put to a human before a write.
const (
	confirmSchema    = `{"type": "object", "properties": {"confirm": {"type": "boolean", "title": "Send this request to NetBox"}}, "required": ["confirm"]}`
	confirmBodyLimit = 4 << 10
)

// confirmTimeout bounds how long a question stays open; tests shorten it.
var confirmTimeout = 10 * time.Minute

// multiRoundTrip is the first protocol version that asks through a result
// and declares capabilities per request. Versions are dates, so they order
// as strings.
const multiRoundTrip = "2026-07-28"

// confirmWrite returns nil when p may be dispatched: the confirmation mode
// does not ask for it, or a human confirmed exactly this request.
func (b *bridge) confirmWrite(ctx context.Context, req *mcp.CallToolRequest, p prepared) error {
	version, canAsk, stateless := clientAsks(ctx, req)
	switch b.confirm { // the mode table of SPEC §13; writes always asks
	case "off":
		return nil
	case "auto", "destructive": // only destructive tools; auto asks only a client that can ask
		if p.ct.tool.effect != "destructive" || b.confirm == "auto" && !canAsk {
			return nil
		}
	}
	params := &mcp.ElicitParams{Mode: "form", Message: confirmMessage(p, b.client.branch), RequestedSchema: json.RawMessage(confirmSchema)}
	var why string
	switch {
	case !canAsk && stateless:
		why = "--confirm " + b.confirm + " needs a human's confirmation, and the server cannot ask a human over stateless HTTP; a human may start it with --confirm auto (or off) to let the allow-list alone decide"
	case !canAsk:
		why = "--confirm " + b.confirm + " needs a human's confirmation, and the client cannot ask a human: it does not support MCP form elicitation; a human may use a client that does, or start the server with --confirm auto (or off) to let the allow-list alone decide"
	case version < multiRoundTrip:
		why = askInline(ctx, req, params)
	default:
		// A 2026-07-28 client is asked through the call's result and answers
		// by calling again with the answer and the signed state of the question.
		answer, answered := req.Params.InputResponses["confirm"].(*mcp.ElicitResult)
		asked, valid := confirmState(req.Params.RequestState).verify(p)
		switch {
		case !answered || answer == nil || !valid: // the question is still to be asked
			return &inputRequired{&mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"confirm": params}, RequestState: string(newConfirmState(p, time.Now().Unix(), rand.Text()))}}
		case time.Since(asked) > confirmTimeout:
			why = fmt.Sprintf("the answer came more than %v after the question", confirmTimeout)
		case !b.spent.spend(req.Params.RequestState, asked):
			why = "this answer was already used for a request: a confirmation sends one request once"
		default:
			why = answerRefusal(answer)
		}
	}
	b.count("confirmations_total", "answer", map[bool]string{true: "yes", false: "no"}[why == ""])
	if why != "" {
		return &bridgeError{Code: "not_confirmed", Message: fmt.Sprintf("%s was not sent: %s; nothing reached NetBox", p.ct.qualifiedName(), why)}
	}
	return nil
}

// clientAsks reads whether the caller's client can ask a human through
// form elicitation, and on which protocol. A 2026-07-28 request declares
// its own version and capabilities in _meta; on older versions, and for
// _meta that names an older one, the session's declaration decides.
func clientAsks(ctx context.Context, req *mcp.CallToolRequest) (version string, canAsk, stateless bool) {
	if _, stateless = ctx.Value(callerKey{}).(httpCaller); stateless || req == nil || req.Session == nil {
		return "", false, stateless
	}
	var caps *mcp.ElicitationCapabilities
	if session := req.Session.InitializeParams(); session != nil && session.Capabilities != nil {
		version, caps = session.ProtocolVersion, session.Capabilities.Elicitation
	}
	if v, ok := req.Params.Meta["io.modelcontextprotocol/protocolVersion"].(string); ok && v >= multiRoundTrip {
		var declared mcp.ClientCapabilities
		raw, _ := json.Marshal(req.Params.Meta["io.modelcontextprotocol/clientCapabilities"])
		json.Unmarshal(raw, &declared)
		version, caps = v, declared.Elicitation
	}
	return version, caps != nil && (caps.Form != nil || caps.URL == nil), false // {} is form, from before 2025-11-25
}

// askInline asks with elicitation/create within the call, and waits for
// the answer up to confirmTimeout; why says what went wrong or what the
// human answered, "" for a confirmation.
func askInline(ctx context.Context, req *mcp.CallToolRequest, params *mcp.ElicitParams) (why string) {
	ctx, cancel := context.WithTimeout(ctx, confirmTimeout)
	defer cancel()
	answer, err := req.Session.Elicit(ctx, params)
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return fmt.Sprintf("no answer came within %v", confirmTimeout)
	case ctx.Err() != nil:
		return "the call was cancelled while the question was open"
	case err != nil:
		return "the client could not ask: " + clip(err.Error(), clipLimit)
	}
	return answerRefusal(answer)
}

// answerRefusal reads a human's answer: "" for a confirmation, else what
// the answer was.
func answerRefusal(answer *mcp.ElicitResult) string {
	switch {
	case answer.Action == "accept" && answer.Content["confirm"] == true:
		return ""
	case answer.Action == "accept":
		return "the human answered without confirming it"
	case answer.Action == "decline":
		return "the human declined it"
	case answer.Action == "cancel":
		return "the human dismissed the question"
	}
	return fmt.Sprintf("the client answered %s", quote(clip(answer.Action, 40)))
}

// confirmMessage states the exact request: tool, effect, method, path and
// query, the caller headers, the branch, and the body clipped to 4 KiB.
func confirmMessage(p prepared, branch string) string {
	target := p.req.path
	if p.req.query != "" {
		target += "?" + p.req.query
	}
	if h := callerHeaders(p.caller); h != "" {
		target += "\n" + h
	}
	if branch != "" {
		target += fmt.Sprintf("\nin NetBox branch %s", quote(branch))
	}
	body := string(p.req.body)
	if len(body) > confirmBodyLimit {
		body = clip(body, confirmBodyLimit) + fmt.Sprintf("\n(clipped: the body is %d bytes; the first %d are shown)", len(p.req.body), confirmBodyLimit)
	}
	return fmt.Sprintf("Send this request to NetBox? %s is a %s tool.\n\n%s %s\n%s", p.ct.qualifiedName(), p.ct.tool.effect, p.ct.tool.method, target, body)
}

// confirmKey signs the requests 2026-07-28 clients are asked about.
var confirmKey = []byte(rand.Text() + rand.Text()) // 256 bits and more

// confirmState is what a 2026-07-28 client carries from the question to
// its answer: "ASKED.NONCE.MAC", when it was asked (Unix seconds), a nonce
// of the question, and a MAC over both and the exact request. Invariant:
// nothing in a state is trusted, its time included, before verify says
// that its MAC is right.
type confirmState string

func newConfirmState(p prepared, asked int64, nonce string) confirmState {
	mac := hmac.New(sha256.New, confirmKey)
	// Who sends the request (its token and caller headers), the tool, its
	// effect, the exact request, when the question was asked and the nonce.
	fmt.Fprintf(mac, "%d\x00%s\x00%s\x00%s\x00%s\x00%s\x00%s\x00%s\x00", asked, nonce, p.ct.qualifiedName(), p.ct.tool.effect,
		p.req.method, p.req.path, p.req.query, p.req.auth)
	p.req.header.Write(mac) // in sorted order
	mac.Write(p.req.body)
	return confirmState(fmt.Sprintf("%d.%s.%x", asked, nonce, mac.Sum(nil)))
}

// verify reports whether the state is one newConfirmState gave for p, and
// when the question was asked.
func (s confirmState) verify(p prepared) (asked time.Time, ok bool) {
	secs, rest, _ := strings.Cut(string(s), ".")
	nonce, _, _ := strings.Cut(rest, ".")
	n, err := strconv.ParseInt(secs, 10, 64)
	return time.Unix(n, 0), err == nil && hmac.Equal([]byte(s), []byte(newConfirmState(p, n, nonce)))
}

// spentStates are the confirmation states whose answer sent a request, kept
// until they expire: one confirmation sends one request, once. The bridge
// owns one set; its lock guards the map.
type spentStates struct {
	mu     sync.Mutex
	states map[string]time.Time
}

// spend records state and reports whether it was not spent before.
func (s *spentStates) spend(state string, asked time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.states == nil {
		s.states = map[string]time.Time{}
	}
	// An expired state goes: its answer is refused as late anyway.
	maps.DeleteFunc(s.states, func(_ string, t time.Time) bool { return time.Since(t) > confirmTimeout })
	if _, used := s.states[state]; used {
		return false
	}
	s.states[state] = asked
	return true
}

// inputRequired is a question a 2026-07-28 client answers by calling again
// with the answer (multi round-trip requests): the handler returns it as
// the call's result.
type inputRequired struct{ result *mcp.CallToolResult }

func (*inputRequired) Error() string { return "input required" }

// ---- stdio ----

// maxLineLength bounds one JSON-RPC message from the client: no valid call
// of the two tools comes near it (their arguments are bounded at 320 KiB).
const maxLineLength = 1 << 20

// lineLimits bound the syntax check of one line; the tools' own arguments
// are bounded again, tighter, when a handler reads them.
var lineLimits = limits{bytes: maxLineLength, depth: 128, values: maxLineLength}

// serveStdio runs one MCP session on in and out until in ends or ctx ends.
// Then it stops writing and closes the session, which cancels every call
// still in flight, and returns once they have returned, or after
// stopTimeout (SPEC §11).
func serveStdio(ctx context.Context, server *mcp.Server, in io.Reader, out io.Writer) error {
	c := &stdioConn{in: in, out: out, messages: make(chan jsonrpc.Message), done: make(chan struct{}), eof: make(chan struct{}),
		inFlight: map[jsonrpc.ID]bool{}}
	ss, err := server.Connect(ctx, c, nil)
	if err != nil {
		return err
	}
	ended := make(chan error, 1)
	go func() { ended <- ss.Wait() }()
	select {
	case err := <-ended: // the session failed by itself: stdout is gone, say
		if errors.Is(err, io.EOF) {
			err = nil
		}
		return err
	case <-ctx.Done():
	case <-c.eof:
	}
	c.Close() // from here on nothing reaches stdout
	select {
	case <-ended:
	case <-time.After(stopTimeout): // a handler that ignores its cancellation does not hold the exit
	}
	return nil
}

// stopTimeout bounds how long a stopping session waits for its calls.
const stopTimeout = time.Second

// stdioConn is one stdio session, the transport and the connection both.
// Unlike the SDK's IOTransport it never ends the session on a bad line
// (SPEC §11): its reader checks each line before the SDK sees it and
// answers a bad one itself; its writer learns which requests have been
// answered. After Close nothing more is read or written.
type stdioConn struct {
	in       io.Reader
	out      io.Writer
	messages chan jsonrpc.Message
	done     chan struct{} // closed by Close
	eof      chan struct{} // closed when stdin ends

	mu           sync.Mutex // guards what follows, and every write to out
	closed       bool
	initialized  bool                // an initialize line was accepted, and has not failed
	initializing jsonrpc.ID          // that line's request, until it is answered
	inFlight     map[jsonrpc.ID]bool // requests the SDK has not answered yet
}

// Connect starts reading stdin; the SDK calls it once, in server.Connect.
func (c *stdioConn) Connect(context.Context) (mcp.Connection, error) {
	go c.readLines()
	return c, nil
}

// Read hands the SDK the next message that passed check, in the order the
// lines came; after stdin ends or Close, io.EOF.
func (c *stdioConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case m := <-c.messages:
		return m, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-c.eof:
	case <-c.done:
	}
	return nil, io.EOF
}

// Write writes one message as one line, under the lock, and learns from a
// response which request it answered; after Close it writes nothing (SPEC
// §11: nothing reaches stdout after the stop).
func (c *stdioConn) Write(_ context.Context, m jsonrpc.Message) error {
	data, err := jsonrpc.EncodeMessage(m)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return io.ErrClosedPipe
	}
	if r, ok := m.(*jsonrpc.Response); ok {
		delete(c.inFlight, r.ID)
		if r.ID == c.initializing {
			c.initialized, c.initializing = r.Error == nil, jsonrpc.ID{} // a failed initialize may be sent again
		}
	}
	_, err = c.out.Write(append(data, '\n'))
	return err
}

// Close is the stop: from here on nothing is written (Write and check's
// refusals look at closed under the same lock) and Read returns io.EOF.
func (c *stdioConn) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.closed {
		close(c.done)
	}
	c.closed = true
	return nil
}

func (c *stdioConn) SessionID() string { return "" }

// readLines reads stdin line by line until it ends or the session closes,
// handing each line on in the order it came; a line over maxLineLength is
// answered, and the rest of it discarded, as it arrives.
func (c *stdioConn) readLines() {
	defer close(c.eof)
	r := bufio.NewReaderSize(c.in, 64<<10)
	var line []byte
	for tooLong := false; ; {
		chunk, err := r.ReadSlice('\n')
		if tooLong = tooLong || len(line)+len(chunk) > maxLineLength; !tooLong {
			line = append(line, chunk...)
		}
		switch {
		case err == bufio.ErrBufferFull:
			continue
		case err != nil && len(line) == 0 && !tooLong:
			return // stdin ended between lines
		}
		m := c.check(line, tooLong)
		line, tooLong = line[:0], false
		if m != nil {
			select {
			case c.messages <- m:
			case <-c.done:
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// check returns the message on line when the SDK may see it, and otherwise
// answers it itself (SPEC §11): -32700 for a line over maxLineLength or
// that is not exactly one strict JSON value, -32600 for a value that is not
// a usable JSON-RPC message. The checks parse the line once; the SDK
// decodes it again.
func (c *stdioConn) check(line []byte, tooLong bool) jsonrpc.Message {
	c.mu.Lock()
	defer c.mu.Unlock()
	refuse := func(id json.RawMessage, code int, msg string) jsonrpc.Message {
		if !c.closed { // an error response, in one Write
			fmt.Fprintf(c.out, "{\"jsonrpc\":\"2.0\",\"id\":%s,\"error\":{\"code\":%d,\"message\":%s}}\n", cmp.Or(string(id), "null"), code, appendString(nil, msg))
		}
		return nil
	}
	if tooLong {
		return refuse(nil, jsonrpc.CodeParseError, fmt.Sprintf("parse error: the message is longer than %d bytes", maxLineLength))
	}
	if line = bytes.TrimSpace(line); len(line) == 0 {
		return nil
	}
	doc, err := decode(line, lineLimits)
	if err != nil { // JSON-RPC: a parse error's id is null
		return refuse(nil, jsonrpc.CodeParseError, "parse error: "+err.Error())
	}
	// The id for a reply: a string, or an integer within ±2^53 (an
	// integral token such as 1e3 is the integer it equals); nil for none.
	id, hasID := doc.get("id")
	var rawID json.RawMessage
	switch {
	case !hasID:
	case id.kind == kindString:
		rawID = encode(id)
	case id.kind != kindNumber || !isInteger(id.s, !strings.ContainsAny(id.s, ".eE")) || exact(id.s).Num().CmpAbs(maxSafeInteger) > 0:
		return refuse(nil, jsonrpc.CodeInvalidRequest, "invalid request: an id must be a string or an integer within ±2^53")
	default:
		rawID = []byte(exact(id.s).Num().String())
	}
	_, hasResult := doc.get("result")
	_, hasError := doc.get("error")
	m, err := jsonrpc.DecodeMessage(line)
	if _, response := m.(*jsonrpc.Response); err != nil || response && hasResult == hasError {
		return refuse(rawID, jsonrpc.CodeInvalidRequest, "invalid request: not a JSON-RPC 2.0 message")
	}
	req, ok := m.(*jsonrpc.Request)
	if !ok || !req.IsCall() {
		return m
	}
	meta, _ := doc.get("params")
	meta, _ = meta.get("_meta")
	version, _ := meta.get("io.modelcontextprotocol/protocolVersion")
	needsNoInitialize := version.kind == kindString && version.s >= multiRoundTrip
	switch {
	case c.inFlight[req.ID]:
		return refuse(rawID, jsonrpc.CodeInvalidRequest, "invalid request: a request with this id is still in flight")
	case req.Method == "initialize" && c.initialized:
		return refuse(rawID, jsonrpc.CodeInvalidRequest, "invalid request: the session is already initialized")
	case !c.initialized && !needsNoInitialize && !slices.Contains([]string{"initialize", "ping", "server/discover"}, req.Method):
		return refuse(rawID, jsonrpc.CodeInvalidRequest, fmt.Sprintf("invalid request: %s before initialize", quote(req.Method)))
	case req.Method == "initialize":
		// What follows the line is served in order, before its answer is
		// written (SPEC §11: pipelined handshakes).
		c.initialized, c.initializing = true, req.ID
	}
	c.inFlight[req.ID] = true
	return m
}
