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
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ---- the MCP server ----

const instructions = `This server exposes the operations NetBox plugins advertise (bridge v1).
Call plugin_list_tools first: it returns every plugin tool with its input schema and effect.
Then call plugin_call_tool with the plugin, the tool and arguments that match its inputSchema.
Preview write and destructive tools with dry_run: true before running them; they run only when
the operator allows them, and a human may be asked to confirm. An outcome_unknown error means a
write may have happened: check before retrying.`

// The two tools' own input schemas, compiled by the project's validator.
const (
	perCallProperties = `
  "token": {"type": "string", "minLength": 1, "description": "NetBox API token for this call only, instead of the configured one."},
  "header": {"type": "array", "maxItems": 100, "items": {"type": "string", "maxLength": 8192},
    "description": "Extra HTTP headers for every request of this call, as \"Name: value\" or \"Name=value\"."}}`
	listToolsSchema = `{"type": "object", "additionalProperties": false, "properties": {
  "plugin": {"type": "string", "description": "Only this plugin's tools (a slug such as \"proxbox\"); omit for every plugin."},` + perCallProperties + `}`
	callToolSchema = `{"type": "object", "additionalProperties": false, "required": ["plugin", "tool"], "properties": {
  "plugin": {"type": "string", "description": "Plugin slug, as in plugin_list_tools."},
  "tool": {"type": "string", "description": "Tool name within the plugin (the part after the dot of qualified_name)."},
  "arguments": {"type": "object", "description": "Arguments matching the tool's inputSchema.", "default": {}},
  "dry_run": {"type": "boolean", "default": false, "description": "Discover and validate, and show the request that would be sent, without sending it."},` + perCallProperties + `}`
)

// requestLimits bound a tool's own arguments: one instance plus its envelope.
var requestLimits = limits{bytes: instanceLimits.bytes + 64<<10, depth: instanceLimits.depth + 1, values: instanceLimits.values + 256}

var (
	listToolsInput = mustCompileTool(listToolsSchema)
	callToolInput  = mustCompileTool(callToolSchema)
)

func mustCompileTool(src string) *schema {
	v, err := decode([]byte(src), schemaLimits)
	var ps problems
	if s := compileSchema(v, "inputSchema", &ps); err == nil && s != nil {
		return s
	}
	panic(fmt.Sprint(err, ps))
}

// writePolicy is the mutation switch and its allow-list (SPEC §13).
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
	p := writePolicy{setting: setting}
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "1", "true", "yes", "on":
		p.all = true
		return p, nil
	case "", "0", "false", "no", "off":
		return p, nil
	}
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

func (p writePolicy) allows(ct catalogTool) bool {
	return p.all || slices.Contains(p.entries, ct.qualifiedName()) || slices.Contains(p.entries, ct.plugin+".*")
}

// refusal says why a write is not allowed and how to allow it.
func (p writePolicy) refusal(ct catalogTool) string {
	if len(p.entries) == 0 {
		return fmt.Sprintf("%s is a %s tool and mutations are disabled: start the server with --allow-mutations=%s (or NETBOX_MCP_ALLOW_MUTATIONS=%[3]s) to run it, or preview it with dry_run: true",
			ct.qualifiedName(), ct.tool.effect, ct.qualifiedName())
	}
	return fmt.Sprintf("%s is a %s tool that is not on the allow-list %s (%s): add %[1]s or %s.* to it to run it, or preview it with dry_run: true",
		ct.qualifiedName(), ct.tool.effect, strings.Join(p.entries, ","), p.setting, ct.plugin)
}

// confirmModes are the values of --confirm (SPEC §13), the default first.
var confirmModes = []string{"auto", "destructive", "writes", "off"}

// bridge serves the two tools against one NetBox configuration.
type bridge struct {
	client  *client // and its configuration
	cfgErr  error   // when set, every call answers config_error
	policy  writePolicy
	confirm string         // one of confirmModes
	audit   *slog.Logger   // one record per write decision
	calls   sync.WaitGroup // tool calls running
}

func newMCPServer(b *bridge, logger *slog.Logger) *mcp.Server {
	server := mcp.NewServer(&mcp.Implementation{Name: "netbox-plugin-bridge", Version: bridgeVersion()}, &mcp.ServerOptions{
		Instructions: instructions,
		Logger:       logger,
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}},
	})
	yes, no := true, false
	server.AddTool(&mcp.Tool{
		Name:        "plugin_list_tools",
		Title:       "List NetBox plugin tools",
		Description: "Discover the tools that NetBox plugins advertise, with their input schemas, effects and annotations. Problems of individual plugins are listed beside the tools.",
		InputSchema: json.RawMessage(listToolsSchema),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, DestructiveHint: &no, OpenWorldHint: &no},
	}, b.handler(listToolsInput, b.listTools))
	server.AddTool(&mcp.Tool{
		Name:        "plugin_call_tool",
		Title:       "Call a NetBox plugin tool",
		Description: "Call one plugin tool from plugin_list_tools with arguments matching its inputSchema. Reads run at once; writes run when the operator allows them; dry_run previews any call without sending it.",
		InputSchema: json.RawMessage(callToolSchema),
		Annotations: &mcp.ToolAnnotations{DestructiveHint: &yes, OpenWorldHint: &yes},
	}, b.handler(callToolInput, b.call))
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
// and reads them.
func parseArgs(raw json.RawMessage, s *schema) (*callArgs, error) {
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		raw = json.RawMessage("{}")
	}
	invalid := func(err error) error {
		return &bridgeError{Code: "invalid_request", Message: err.Error()}
	}
	if err := s.validateBytes(raw, requestLimits, "arguments"); err != nil {
		return nil, invalid(err)
	}
	var err error
	a := &callArgs{arguments: value{kind: kindObject, obj: []member{}}}
	for _, m := range build(raw).obj {
		switch m.key {
		case "plugin":
			a.plugin = m.val.s
		case "tool":
			a.tool = m.val.s
		case "arguments":
			a.arguments = m.val
		case "dry_run":
			a.dryRun = m.val.b
		case "token":
			if a.opts.auth, err = authorization(m.val.s); err != nil {
				return nil, invalid(fmt.Errorf("arguments.token: %v", err))
			}
			a.opts.authFrom = "per-call"
		case "header":
			if a.opts.header, err = parseHeaders(m.val.arr); err != nil {
				return nil, invalid(err)
			}
		}
	}
	return a, nil
}

// reservedHeaders are the caller header names the bridge itself controls
// (SPEC §9): its own request headers, the method overrides, which would let
// a read tool write, and the idempotency keys, which would let Go's client
// resend a write. Conditional headers (If-*) are refused by prefix.
var reservedHeaders = []string{"authorization", "proxy-authorization", "cookie", "host", "accept", "accept-encoding",
	"content-type", "content-length", "content-encoding", "transfer-encoding", "connection", "upgrade", "te",
	"trailer", "keep-alive", "expect", "x-http-method-override", "x-http-method", "x-method-override",
	"idempotency-key", "x-idempotency-key"}

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
		for j := 0; j < len(name); j++ {
			if !strings.ContainsRune("!#$%&'*+-.^_`|~", rune(name[j])) && !isAlnum(name[j]) {
				return nil, fmt.Errorf("%s: header name %s is not an RFC 9110 token", at, quote(clip(name, 100)))
			}
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

const (
	safeToRetry = " Nothing was sent to the target operation; correct the call and retry."
	notBlindly  = " The write may have taken effect on NetBox: do not retry blindly; check the plugin's state first."
)

// toolResult renders a result document as structured content and as its
// JSON text.
func toolResult(doc []byte) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(doc)}}, StructuredContent: json.RawMessage(doc)}
}

// toolError renders an error as an isError result.
func toolError(err error, a *callArgs) *mcp.CallToolResult {
	var be *bridgeError
	if !errors.As(err, &be) {
		be = &bridgeError{Code: "discovery_failed", Message: err.Error()}
	}
	if a != nil {
		be.Plugin = cmp.Or(be.Plugin, a.plugin)
		be.Tool = cmp.Or(be.Tool, a.tool)
	}
	if !be.Dispatched && be.Code != "config_error" {
		be.Message = strings.TrimSuffix(be.Message, ".") + "." + safeToRetry // SPEC §9: safe to correct and retry
	}
	doc, _ := json.Marshal(struct {
		Error *bridgeError `json:"error"`
	}{be})
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: be.Message}}, StructuredContent: json.RawMessage(doc)}
}

// handler adapts one of the two operations to a raw MCP tool handler: its
// arguments validated against its published schema, the configuration
// checked, and its result document or error rendered.
func (b *bridge) handler(input *schema, run func(context.Context, *mcp.CallToolRequest, *callArgs) ([]byte, error)) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		b.calls.Add(1)
		defer b.calls.Done()
		a, err := parseArgs(req.Params.Arguments, input)
		if caller, ok := ctx.Value(callerKey{}).(httpCaller); ok {
			// The SDK detaches a call from its HTTP request; a client that
			// goes away, or a drain that gives up, still ends the call.
			var cancel context.CancelFunc
			ctx, cancel = context.WithCancel(ctx)
			defer cancel()
			defer context.AfterFunc(caller.ctx, cancel)()
			if err == nil {
				err = caller.apply(&a.opts)
			}
		}
		if err == nil && b.cfgErr != nil {
			err = &bridgeError{Code: "config_error", Message: b.cfgErr.Error()}
		}
		var doc []byte
		if err == nil {
			doc, err = run(ctx, req, a)
		}
		var ask *inputRequired
		switch {
		case errors.As(err, &ask):
			return ask.result, nil
		case err != nil:
			return toolError(err, a), nil
		}
		return toolResult(doc), nil
	}
}

// httpCaller is who calls over streamable HTTP (SPEC §14), put in the
// request's context by the HTTP front: the caller's own NetBox
// Authorization in the caller-token mode, "" when the configured token
// serves everyone, and the peer address.
type httpCaller struct {
	auth, remote string
	ctx          context.Context // the HTTP request's: it ends with the request
}

type callerKey struct{}

// apply makes the caller's identity the call's: its NetBox token replaces
// the configured one, and a per-call token is refused, since the HTTP
// identity is the identity.
func (c httpCaller) apply(opts *callOptions) error {
	opts.remote = c.remote
	switch {
	case c.auth == "":
	case opts.authFrom == "per-call":
		return &bridgeError{Code: "invalid_request", Message: "arguments.token: over HTTP the caller's own Authorization is the NetBox token; leave out token"}
	default:
		opts.auth, opts.authFrom = c.auth, "http"
	}
	return nil
}

// callerAuthorization reads a caller's own NetBox token from its
// Authorization header: exactly Bearer nbt_<key>.<secret> or Token <40
// letters or digits>, the scheme in any case; it returns the header the
// bridge sends on.
func callerAuthorization(header string) (string, bool) {
	scheme, token, _ := strings.Cut(header, " ")
	alnum := func(s string) bool {
		return s != "" && !strings.ContainsFunc(s, func(r rune) bool { return r >= utf8.RuneSelf || !isAlnum(byte(r)) })
	}
	switch key, secret, _ := strings.Cut(strings.TrimPrefix(token, "nbt_"), "."); {
	case strings.EqualFold(scheme, "Bearer") && strings.HasPrefix(token, "nbt_") && alnum(key) && alnum(secret):
		return "Bearer " + token, true
	case strings.EqualFold(scheme, "Token") && len(token) == 40 && alnum(token):
		return "Token " + token, true
	}
	return "", false
}

// listTools is plugin_list_tools: one plugin, or a full scan with progress.
func (b *bridge) listTools(ctx context.Context, req *mcp.CallToolRequest, a *callArgs) ([]byte, error) {
	var cat *catalog
	var err error
	if a.plugin != "" {
		cat, err = b.client.scanOne(ctx, a.plugin, a.opts)
	} else {
		if token := req.Params.GetProgressToken(); token != nil {
			a.opts.progress = func(done, total int) {
				req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token,
					Progress: float64(done), Total: float64(total), Message: fmt.Sprintf("%d of %d plugins discovered", done, total)})
			}
		}
		cat, err = b.client.scanAll(ctx, a.opts)
	}
	if err != nil {
		return nil, err
	}
	return catalogDocument(cat), nil
}

// catalogDocument renders a catalog as the plugin_list_tools result (SPEC §9):
// each descriptor exactly as in its manifest, plus plugin, qualified_name and
// request_path.
func catalogDocument(cat *catalog) []byte {
	size := 64
	for _, t := range cat.tools {
		size += len(t.tool.descriptor) + 2*len(t.plugin) + len(t.requestPath) + 64
	}
	b := append(make([]byte, 0, size), `{"schema_version":"1","tools":[`...)
	for i, t := range cat.tools {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, t.tool.descriptor[:len(t.tool.descriptor)-1]...) // without its '}'
		b = appendString(append(b, `,"plugin":`...), t.plugin)
		b = appendString(append(b, `,"qualified_name":`...), t.qualifiedName())
		b = appendString(append(b, `,"request_path":`...), t.requestPath)
		b = append(b, '}')
	}
	b = append(b, `],"problems":[`...)
	for i, p := range cat.problems {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(append(b, `{"plugin":`...), p.Plugin)
		b = appendString(append(b, `,"code":`...), p.Code)
		b = appendString(append(b, `,"error":`...), p.Error)
		b = append(b, '}')
	}
	return append(b, "]}"...)
}

// call discovers the plugin, validates the arguments and dispatches the
// target request: a read at once, a write when the write policy allows it.
func (b *bridge) call(ctx context.Context, req *mcp.CallToolRequest, a *callArgs) ([]byte, error) {
	cat, err := b.client.scanOne(ctx, a.plugin, a.opts)
	if err != nil {
		return nil, err
	}
	ct, err := cat.find(a.tool)
	if err != nil {
		return nil, err
	}
	p, err := prepare(ct, a.arguments, a.opts)
	switch {
	case err != nil:
		return nil, err
	case ct.tool.effect != "read":
		return b.write(ctx, req, a, p)
	case a.dryRun:
		return dryRunDocument(p, a.arguments, ""), nil
	}
	doc, _, err := b.dispatch(ctx, p)
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
	ct    catalogTool
	req   request
	query value // the dry-run view of req.query
}

// prepare validates arguments against the tool's inputSchema and builds
// its request (SPEC §9): a read's query, or a write's JSON body.
func prepare(ct catalogTool, arguments value, opts callOptions) (prepared, error) {
	args := encode(arguments)
	if err := ct.tool.input.validateBytes(args, instanceLimits, "arguments"); err != nil {
		return prepared{}, &bridgeError{Code: "invalid_arguments", Message: err.Error()}
	}
	p := prepared{ct: ct, query: value{kind: kindObject, obj: []member{}},
		req: request{method: ct.tool.method, path: ct.requestPath, header: opts.header, auth: opts.auth, limit: instanceLimits.bytes}}
	if ct.tool.effect == "read" {
		var q url.Values
		q, p.query = encodeQuery(arguments, ct.tool.input)
		p.req.query = q.Encode()
	} else {
		p.req.body = args
	}
	return p, nil
}

// dispatch sends the request once and renders its answer.
func (b *bridge) dispatch(ctx context.Context, p prepared) ([]byte, *response, error) {
	resp, err := b.client.do(ctx, p.req)
	if resp != nil {
		defer resp.release()
	}
	doc, err := responseDocument(p.ct, resp, err)
	return doc, resp, err
}

// write decides a call of a write or destructive tool (SPEC §13): a dry
// run, refused by the allow-list, not confirmed, or dispatched; each
// decision is one audit record.
func (b *bridge) write(ctx context.Context, req *mcp.CallToolRequest, a *callArgs, p prepared) (doc []byte, err error) {
	refusal := ""
	if !b.policy.allows(p.ct) {
		refusal = b.policy.refusal(p.ct)
	}
	var decision string
	var attrs []any
	switch {
	case a.dryRun:
		decision, doc = "dry_run", dryRunDocument(p, a.arguments, refusal)
	case refusal != "":
		decision, err = "mutations_disabled", &bridgeError{Code: "mutations_disabled", Message: refusal}
	default:
		if err = b.confirmWrite(ctx, req, p); err != nil {
			var ask *inputRequired
			if errors.As(err, &ask) {
				return nil, err // not decided yet: the client asks and calls again
			}
			decision = "not_confirmed"
			break
		}
		start := time.Now()
		var resp *response
		doc, resp, err = b.dispatch(ctx, p)
		decision = "dispatched"
		if resp != nil {
			attrs = append(attrs, "status", resp.status)
			if id := resp.header.Get("X-Request-ID"); id != "" {
				attrs = append(attrs, "request_id", clip(id, clipLimit))
			}
		}
		if be := (*bridgeError)(nil); errors.As(err, &be) && be.Outcome != "" {
			attrs = append(attrs, "outcome", be.Outcome)
		}
		attrs = append(attrs, "duration_ms", time.Since(start).Milliseconds())
	}
	b.auditWrite(ctx, p, a.opts, decision, attrs)
	return doc, err
}

// auditWrite logs one write decision: never the body, never a secret.
func (b *bridge) auditWrite(ctx context.Context, p prepared, opts callOptions, decision string, attrs []any) {
	if b.audit == nil {
		return
	}
	auth, source := cmp.Or(opts.auth, b.client.auth), cmp.Or(opts.authFrom, "configured")
	token := "none"
	if scheme, secret, _ := strings.Cut(auth, " "); scheme == "Bearer" {
		token = "v2" // only the key of nbt_<key>.<secret> is shown, never more
		if key, _, found := strings.Cut(secret, "."); found {
			token = key
		}
	} else if auth != "" {
		token = "v1"
	}
	attrs = append([]any{"plugin", p.ct.plugin, "tool", p.ct.tool.name, "effect", p.ct.tool.effect, "method", p.ct.tool.method,
		"path", p.ct.requestPath, "decision", decision}, attrs...)
	attrs = append(attrs, "token", token, "token_source", source)
	if opts.remote != "" {
		attrs = append(attrs, "remote", opts.remote)
	}
	b.audit.InfoContext(ctx, "write", attrs...)
}

// The question put to a human before a write (SPEC §13).
const (
	confirmSchema    = `{"type": "object", "properties": {"confirm": {"type": "boolean", "title": "Send this request to NetBox"}}, "required": ["confirm"]}`
	confirmBodyLimit = 4 << 10
)

// confirmTimeout bounds how long a question stays open; tests shorten it.
var confirmTimeout = 10 * time.Minute

// confirmKey signs the request a 2026-07-28 client is asked about, so that
// its answer confirms that request and no other.
var confirmKey = func() []byte {
	k := make([]byte, 32)
	rand.Read(k)
	return k
}()

// requestState signs the request a 2026-07-28 client is asked about: who
// sends it (the token and caller headers), the tool, its effect, the exact
// request, when the question was asked, and a nonce of this question.
func requestState(p prepared, asked time.Time, nonce string) string {
	mac := hmac.New(sha256.New, confirmKey)
	fmt.Fprintf(mac, "%d\x00%s\x00%s\x00%s\x00%s\x00%s\x00%s\x00%s\x00", asked.Unix(), nonce, p.ct.qualifiedName(), p.ct.tool.effect,
		p.req.method, p.req.path, p.req.query, p.req.auth)
	p.req.header.Write(mac) // in sorted order
	mac.Write(p.req.body)
	return strconv.FormatInt(asked.Unix(), 10) + "." + nonce + "." + hex.EncodeToString(mac.Sum(nil))
}

// checkState reports whether state is one requestState gave for p, and when.
func checkState(p prepared, state string) (time.Time, bool) {
	parts := strings.SplitN(state, ".", 3)
	secs, err := strconv.ParseInt(parts[0], 10, 64)
	asked := time.Unix(secs, 0)
	return asked, err == nil && len(parts) == 3 && hmac.Equal([]byte(state), []byte(requestState(p, asked, parts[1])))
}

// spent holds the request states whose answer was used, until they expire:
// one confirmation sends one request, once.
var spent = struct {
	sync.Mutex
	states map[string]time.Time
}{states: map[string]time.Time{}}

func spend(state string, asked time.Time) bool {
	spent.Lock()
	defer spent.Unlock()
	for s, t := range spent.states {
		if time.Since(t) > confirmTimeout {
			delete(spent.states, s)
		}
	}
	if _, used := spent.states[state]; used {
		return false
	}
	spent.states[state] = asked
	return true
}

// inputRequired is a question a 2026-07-28 client answers by calling again
// with the answer (multi round-trip requests): the handler returns it as
// the call's result.
type inputRequired struct{ result *mcp.CallToolResult }

func (*inputRequired) Error() string { return "input required" }

// confirmWrite returns nil when p may be dispatched: the confirmation mode
// does not ask for it, or a human confirmed exactly this request.
func (b *bridge) confirmWrite(ctx context.Context, req *mcp.CallToolRequest, p prepared) error {
	var caps *mcp.ElicitationCapabilities
	version := ""
	_, stateless := ctx.Value(callerKey{}).(httpCaller)
	if req != nil && req.Session != nil && !stateless {
		if session := req.Session.InitializeParams(); session != nil && session.Capabilities != nil {
			version, caps = session.ProtocolVersion, session.Capabilities.Elicitation
		}
		// A 2026-07-28 request declares its own version and capabilities.
		if v, ok := req.Params.Meta["io.modelcontextprotocol/protocolVersion"].(string); ok {
			var declared struct {
				Elicitation *mcp.ElicitationCapabilities `json:"elicitation"`
			}
			raw, _ := json.Marshal(req.Params.Meta["io.modelcontextprotocol/clientCapabilities"])
			json.Unmarshal(raw, &declared)
			version, caps = v, declared.Elicitation
		}
	}
	canAsk := caps != nil && (caps.Form != nil || caps.URL == nil) // {} is form, from before 2025-11-25
	destructive := p.ct.tool.effect == "destructive"
	switch {
	case b.confirm == "off", b.confirm == "auto" && !(destructive && canAsk), b.confirm == "destructive" && !destructive:
		return nil
	}
	refuse := func(why string) error {
		return &bridgeError{Code: "not_confirmed", Message: fmt.Sprintf("%s was not sent: %s; nothing reached NetBox", p.ct.qualifiedName(), why)}
	}
	if !canAsk {
		how := "the client cannot ask a human: it does not support MCP form elicitation"
		if stateless {
			how = "the server cannot ask a human over stateless HTTP"
		}
		return refuse(fmt.Sprintf("--confirm %s needs a human's confirmation, and %s", b.confirm, how))
	}
	params := &mcp.ElicitParams{Mode: "form", Message: confirmMessage(p), RequestedSchema: json.RawMessage(confirmSchema)}
	var answer *mcp.ElicitResult
	if version >= "2026-07-28" {
		var ok bool
		answer, ok = req.Params.InputResponses["confirm"].(*mcp.ElicitResult)
		switch asked, valid := checkState(p, req.Params.RequestState); {
		case !ok || !valid:
			return &inputRequired{&mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"confirm": params}, RequestState: requestState(p, time.Now(), rand.Text())}}
		case time.Since(asked) > confirmTimeout:
			return refuse(fmt.Sprintf("the answer came more than %v after the question", confirmTimeout))
		case !spend(req.Params.RequestState, asked):
			return refuse("this answer was already used for a request: a confirmation sends one request once")
		}
	} else {
		ctx, cancel := context.WithTimeout(ctx, confirmTimeout)
		defer cancel()
		var err error
		answer, err = req.Session.Elicit(ctx, params)
		switch {
		case errors.Is(ctx.Err(), context.DeadlineExceeded):
			return refuse(fmt.Sprintf("no answer came within %v", confirmTimeout))
		case ctx.Err() != nil:
			return refuse("the call was cancelled while the question was open")
		case err != nil:
			return refuse("the client could not ask: " + clip(err.Error(), clipLimit))
		}
	}
	switch {
	case answer.Action == "accept" && answer.Content["confirm"] == true:
		return nil
	case answer.Action == "accept":
		return refuse("the human answered without confirming it")
	case answer.Action == "decline":
		return refuse("the human declined it")
	case answer.Action == "cancel":
		return refuse("the human dismissed the question")
	}
	return refuse(fmt.Sprintf("the client answered %s", quote(clip(answer.Action, 40))))
}

// confirmMessage states the exact request: tool, effect, method, path and
// query, and the body clipped to 4 KiB.
func confirmMessage(p prepared) string {
	target := p.req.path
	if p.req.query != "" {
		target += "?" + p.req.query
	}
	body := string(p.req.body)
	if len(body) > confirmBodyLimit {
		body = clip(body, confirmBodyLimit) + fmt.Sprintf("\n(clipped: the body is %d bytes; the first %d are shown)", len(p.req.body), confirmBodyLimit)
	}
	return fmt.Sprintf("Send this request to NetBox? %s is a %s tool.\n\n%s %s\n%s", p.ct.qualifiedName(), p.ct.tool.effect, p.ct.tool.method, target, body)
}

// encodeQuery renders GET/HEAD arguments as a query (SPEC §9) and as the
// dry-run view of it: names sorted, arrays as repeated keys, null as an
// empty value, integral numbers of integer properties as plain digits,
// other numbers as their exact tokens.
func encodeQuery(args value, s *schema) (url.Values, value) {
	q := url.Values{}
	view := value{kind: kindObject, obj: []member{}}
	members := slices.Clone(args.obj)
	slices.SortFunc(members, func(x, y member) int { return strings.Compare(x.key, y.key) })
	for _, m := range members {
		prop := s.props[s.propIndex[m.key]].schema
		if m.val.kind != kindArray {
			text := queryText(m.val, prop)
			q.Add(m.key, text)
			view.obj = append(view.obj, member{m.key, stringValue(text)})
			continue
		}
		list := value{kind: kindArray, arr: []value{}}
		for _, e := range m.val.arr {
			text := queryText(e, prop.items)
			q.Add(m.key, text)
			list.arr = append(list.arr, stringValue(text))
		}
		view.obj = append(view.obj, member{m.key, list})
	}
	return q, view
}

func queryText(v value, s *schema) string {
	switch v.kind {
	case kindNull:
		return ""
	case kindBool:
		return fmt.Sprint(v.b)
	case kindNumber:
		if s != nil && s.types&typeInteger != 0 && s.types&typeNumber == 0 {
			return exact(v.s).RatString() // integral: validated as an integer
		}
	}
	return v.s
}

func stringValue(s string) value { return value{kind: kindString, s: s} }

// dryRunDocument previews a call (SPEC §9); refusal says why a live call
// would be refused, "" when it would be allowed.
func dryRunDocument(p prepared, arguments value, refusal string) []byte {
	body := value{}
	if p.req.body != nil {
		body = arguments
	}
	notice := "Local preview: discovery and argument validation ran against NetBox, but no request was sent to the target, so the plugin did not validate or authorize it."
	if refusal != "" {
		notice += " A live call would be refused: " + refusal
	}
	ct := p.ct
	return encode(value{kind: kindObject, obj: []member{
		{"dry_run", value{kind: kindBool, b: true}}, {"plugin", stringValue(ct.plugin)}, {"tool", stringValue(ct.tool.name)},
		{"effect", stringValue(ct.tool.effect)}, {"method", stringValue(ct.tool.method)}, {"path", stringValue(ct.requestPath)},
		{"query", p.query}, {"body", body}, {"allowed", value{kind: kindBool, b: refusal == ""}}, {"notice", stringValue(notice)}}})
}

// keptHeaders are the response headers an agent sees, under SPEC §9's names.
var keptHeaders = []string{"Content-Type", "Location", "X-Request-ID", "API-Version", "ETag", "Last-Modified", "Retry-After", "Allow"}

// responseDocument turns the target's answer into the success document, or
// into the error of SPEC §9 on the right side of the write boundary.
func responseDocument(ct catalogTool, resp *response, err error) ([]byte, error) {
	var te *transportError
	if errors.As(err, &te) && !te.sent {
		return nil, &bridgeError{Code: "request_failed", Message: fmt.Sprintf("%s %s failed before anything was sent: %v",
			ct.tool.method, ct.requestPath, te.err)}
	}
	if err == nil && resp.status >= 200 && resp.status <= 299 {
		doc, verr := successDocument(ct, resp)
		if verr == nil {
			return doc, nil
		}
		err = fmt.Errorf("the response body is invalid: %v", verr)
	}
	return nil, dispatchError(ct, resp, err)
}

// successDocument is the result of a 2xx answer whose body passes the
// tool's outputSchema.
func successDocument(ct catalogTool, resp *response) ([]byte, error) {
	body := []byte("null")
	if hasBody(ct.tool.method, resp.status) {
		if err := ct.tool.output.validateBytes(resp.body, instanceLimits, "body"); err != nil {
			return nil, err
		}
		body = resp.body
	}
	headers := value{kind: kindObject, obj: []member{}}
	for _, name := range keptHeaders {
		if v := resp.header.Values(name); len(v) > 0 {
			headers.obj = append(headers.obj, member{name, stringValue(strings.Join(v, ", "))})
		}
	}
	doc := encode(value{kind: kindObject, obj: []member{{"plugin", stringValue(ct.plugin)}, {"tool", stringValue(ct.tool.name)},
		{"effect", stringValue(ct.tool.effect)}, {"status", value{kind: kindNumber, s: strconv.Itoa(resp.status)}}, {"headers", headers}}})
	doc = append(doc[:len(doc)-1], `,"body":`...)
	return append(append(doc, body...), '}'), nil
}

// hasBody reports whether an answer has a body to check (SPEC §9): not
// for HEAD, nor for 204 and 205.
func hasBody(method string, status int) bool {
	return method != http.MethodHead && status != http.StatusNoContent && status != http.StatusResetContent
}

// dispatchError is the failure of a request that was sent: a write's outcome
// is unknown; a read failed without effect. It reports the status, and the
// body when that is strict bounded JSON.
func dispatchError(ct catalogTool, resp *response, err error) *bridgeError {
	be := &bridgeError{Dispatched: true}
	problem := ""
	switch {
	case err != nil && resp != nil && resp.status >= 400:
		problem = fmt.Sprintf("HTTP %d, and its %v", resp.status, err)
	case err != nil:
		problem = err.Error()
	default:
		problem = fmt.Sprintf("HTTP %d", resp.status)
	}
	if resp != nil {
		be.Status = resp.status
		if v, derr := decode(resp.body, instanceLimits); derr == nil && resp.body != nil {
			be.Body = encode(v)
			if err == nil {
				problem += detail(v)
			}
		}
	}
	target := ct.tool.method + " " + ct.requestPath
	switch {
	case ct.tool.effect != "read":
		be.Code, be.Outcome = "outcome_unknown", "unknown"
		be.Message = fmt.Sprintf("%s was sent, but its outcome is unknown: %s.%s", target, problem, notBlindly)
	case resp != nil && (resp.status < 200 || resp.status > 399): // whatever its body
		be.Code = "http_error"
		be.Message = fmt.Sprintf("%s: %s. The read had no effect; fix the cause and retry.", target, problem)
	default:
		be.Code, be.Body = "response_invalid", nil
		be.Message = fmt.Sprintf("%s: %s. The read had no effect; fix the cause and retry.", target, problem)
	}
	return be
}

// ---- stdio ----

// maxLineLength bounds one JSON-RPC message from the client: no valid call
// of the two tools comes near it (their arguments are bounded at 320 KiB).
const maxLineLength = 1 << 20

// lineLimits bound the syntax check of one line; the tools' own arguments
// are bounded again, tighter, when a handler reads them.
var lineLimits = limits{bytes: maxLineLength, depth: 128, values: maxLineLength}

// stdioTransport is newline-delimited JSON-RPC on stdin and stdout. Unlike
// the SDK's IOTransport it never ends the session on a bad line (SPEC §11):
// a line that is not one valid JSON-RPC message gets its error reply, every
// request exactly one reply, and the session goes on.
type stdioTransport struct {
	in   io.Reader
	out  io.Writer
	conn *stdioConn
}

func (t *stdioTransport) Connect(context.Context) (mcp.Connection, error) {
	t.conn = &stdioConn{out: t.out, messages: make(chan jsonrpc.Message), done: make(chan struct{}), eof: make(chan struct{}),
		inFlight: map[jsonrpc.ID]bool{}}
	go t.conn.readLines(t.in)
	return t.conn, nil
}

// serveStdio runs one MCP session on in and out until in ends or ctx ends.
// Then it stops writing and closes the session, which cancels every call
// still in flight, and returns once they have returned (SPEC §11).
func serveStdio(ctx context.Context, server *mcp.Server, in io.Reader, out io.Writer) error {
	t := &stdioTransport{in: in, out: out}
	ss, err := server.Connect(ctx, t, nil)
	if err != nil {
		return err
	}
	ended := make(chan struct{})
	go func() { err = ss.Wait(); close(ended) }()
	select {
	case <-ended: // the session failed by itself: stdout is gone, say
		if errors.Is(err, io.EOF) {
			err = nil
		}
		return err
	case <-ctx.Done():
	case <-t.conn.eof:
	}
	t.conn.Close()
	select {
	case <-ended:
	case <-time.After(stopTimeout): // a handler that ignores its cancellation does not hold the exit
	}
	return nil
}

// stopTimeout bounds how long a stopping session waits for its calls.
const stopTimeout = time.Second

// stdioConn is one stdio session. Its reader checks each line before the
// SDK sees it; its writer learns which requests have been answered.
type stdioConn struct {
	out      io.Writer
	messages chan jsonrpc.Message
	done     chan struct{} // closed by Close: nothing more is read or written
	eof      chan struct{} // closed when stdin ends
	once     sync.Once

	mu           sync.Mutex
	closed       bool
	initialized  bool                // an initialize request was answered
	initializing jsonrpc.ID          // the initialize request not answered yet
	inFlight     map[jsonrpc.ID]bool // requests the SDK has not answered yet
}

func (c *stdioConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case m := <-c.messages:
		return m, nil
	case <-c.eof:
		return nil, io.EOF
	case <-c.done:
		return nil, io.EOF
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

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

func (c *stdioConn) Close() error {
	c.once.Do(func() {
		c.mu.Lock()
		c.closed = true
		c.mu.Unlock()
		close(c.done)
	})
	return nil
}

func (c *stdioConn) SessionID() string { return "" }

// readLines reads stdin line by line until it ends or the session closes.
func (c *stdioConn) readLines(in io.Reader) {
	defer close(c.eof)
	r := bufio.NewReaderSize(in, 64<<10)
	for {
		line, tooLong, err := readLine(r)
		if err != nil {
			return
		}
		if tooLong {
			c.reply(nil, jsonrpc.CodeParseError, fmt.Sprintf("parse error: the message is longer than %d bytes", maxLineLength))
			continue
		}
		m := c.check(line)
		if m == nil {
			continue
		}
		select {
		case c.messages <- m:
		case <-c.done:
			return
		}
	}
}

// check returns the message on line when it is one the SDK may see, and
// otherwise answers it itself: -32700 for a line that is not exactly one
// strict JSON value, -32600 for a value that is not a usable JSON-RPC
// message (SPEC §11).
func (c *stdioConn) check(line []byte) jsonrpc.Message {
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return nil
	}
	if err := (*schema)(nil).validateBytes(line, lineLimits, ""); err != nil {
		c.reply(nil, jsonrpc.CodeParseError, "parse error: "+err.Error())
		return nil
	}
	var probe struct {
		ID, Result, Error json.RawMessage
		Params            struct {
			Meta map[string]json.RawMessage `json:"_meta"`
		}
	}
	perr := json.Unmarshal(line, &probe)
	id := probe.ID
	if len(id) > 0 && id[0] != '"' && !(strings.IndexByte("-0123456789", id[0]) >= 0 && isInteger(string(id), !bytes.ContainsAny(id, ".eE")) &&
		exact(string(id)).Num().CmpAbs(maxSafeInteger) <= 0) {
		c.reply(nil, jsonrpc.CodeInvalidRequest, "invalid request: an id must be a string or an integer within ±2^53")
		return nil
	}
	m, err := jsonrpc.DecodeMessage(line)
	_, response := m.(*jsonrpc.Response)
	if err != nil || perr != nil || response && (probe.Result == nil) == (probe.Error == nil) {
		c.reply(id, jsonrpc.CodeInvalidRequest, "invalid request: not a JSON-RPC 2.0 message")
		return nil
	}
	req, ok := m.(*jsonrpc.Request)
	if !ok || !req.IsCall() {
		return m
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	stateless := probe.Params.Meta["io.modelcontextprotocol/protocolVersion"] != nil // 2026-07-28 needs no initialize
	switch {
	case c.inFlight[req.ID]:
		c.replyLocked(id, jsonrpc.CodeInvalidRequest, "invalid request: a request with this id is still in flight")
		return nil
	case req.Method == "initialize" && (c.initialized || c.initializing.IsValid()):
		c.replyLocked(id, jsonrpc.CodeInvalidRequest, "invalid request: the session is already initialized")
		return nil
	case !c.initialized && !stateless && !slices.Contains([]string{"initialize", "ping", "server/discover"}, req.Method):
		c.replyLocked(id, jsonrpc.CodeInvalidRequest, fmt.Sprintf("invalid request: %s before initialize", quote(req.Method)))
		return nil
	case req.Method == "initialize":
		c.initializing = req.ID
	}
	c.inFlight[req.ID] = true
	return m
}

// readLine reads one line, discarding the rest of a line over maxLineLength.
func readLine(r *bufio.Reader) (line []byte, tooLong bool, err error) {
	for {
		chunk, err := r.ReadSlice('\n')
		if len(line)+len(chunk) <= maxLineLength {
			line = append(line, chunk...)
		} else {
			tooLong, line = true, line[:0]
		}
		switch {
		case err == bufio.ErrBufferFull:
			continue
		case err == io.EOF && (len(line) > 0 || tooLong):
			return line, tooLong, nil
		case err != nil:
			return nil, false, err
		}
		return line, tooLong, nil
	}
}

// reply writes an error response for a line the SDK does not see.
func (c *stdioConn) reply(id json.RawMessage, code int, msg string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.replyLocked(id, code, msg)
}

func (c *stdioConn) replyLocked(id json.RawMessage, code int, msg string) {
	if c.closed {
		return
	}
	if id == nil {
		id = json.RawMessage("null")
	}
	data, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   jsonrpc.Error   `json:"error"`
	}{"2.0", id, jsonrpc.Error{Code: int64(code), Message: msg}})
	c.out.Write(append(data, '\n'))
}
