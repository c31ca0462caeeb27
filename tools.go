package main

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

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

const (
	safeToRetry = " Nothing was sent to the target operation; correct the call and retry."
	notBlindly  = " The write may have taken effect on NetBox: do not retry blindly; check the plugin's state first."
)

func stringValue(s string) value { return value{kind: kindString, s: s} }

// catalogDocument renders a catalog as the plugin_list_tools result (SPEC §9):
// each descriptor exactly as in its manifest, plus plugin, qualified_name and
// request_path.
func catalogDocument(cat *catalog) []byte {
	tools := value{kind: kindArray, arr: []value{}}
	for _, t := range cat.tools {
		d := t.tool.descriptor
		d.obj = append(d.obj[:len(d.obj):len(d.obj)], member{"plugin", stringValue(t.plugin)},
			member{"qualified_name", stringValue(t.qualifiedName())}, member{"request_path", stringValue(t.requestPath)})
		tools.arr = append(tools.arr, d)
	}
	problems := value{kind: kindArray, arr: []value{}}
	for _, p := range cat.problems {
		problems.arr = append(problems.arr, value{kind: kindObject, obj: []member{
			{"plugin", stringValue(p.Plugin)}, {"code", stringValue(p.Code)}, {"error", stringValue(p.Error)}}})
	}
	return encode(value{kind: kindObject, obj: []member{{"schema_version", stringValue("1")}, {"tools", tools}, {"problems", problems}}})
}

// ---- the MCP server ----

const instructions = `This server exposes the operations NetBox plugins advertise (bridge v1).
Call plugin_list_tools first: it returns every plugin tool with its input schema and effect.
Then call plugin_call_tool with the plugin, the tool and arguments that match its inputSchema.
Preview write and destructive tools with dry_run: true before running them; they run only when
the server was started with --allow-mutations. An outcome_unknown error means a write may have
happened: check before retrying.`

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
	if err == nil {
		var s *schema
		if s, err = compileSchema(v, "inputSchema"); err == nil {
			return s
		}
	}
	panic(err)
}

// bridge serves the two tools against one NetBox configuration.
type bridge struct {
	client *client // and its configuration
	cfgErr error   // when set, every call answers config_error
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
		Description: "Call one plugin tool from plugin_list_tools with arguments matching its inputSchema. Reads run at once; writes need --allow-mutations; dry_run previews any call without sending it.",
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
	v := build(raw)
	var err error
	a := &callArgs{arguments: value{kind: kindObject, obj: []member{}}}
	for _, m := range v.obj {
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
		case "header":
			if a.opts.header, err = parseHeaders(m.val.arr); err != nil {
				return nil, invalid(err)
			}
		}
	}
	if _, given := v.get("plugin"); given && !slugPattern.MatchString(a.plugin) {
		return nil, invalid(fmt.Errorf("arguments.plugin: %s is not a plugin slug (%s)", quote(a.plugin), slugPattern))
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

// ok renders a result document as structured content and as its JSON text.
func ok(doc []byte) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(doc)}}, StructuredContent: json.RawMessage(doc)}
}

// fail renders an error as an isError result.
func fail(err error, a *callArgs) *mcp.CallToolResult {
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
		a, err := parseArgs(req.Params.Arguments, input)
		if err == nil && b.cfgErr != nil {
			err = &bridgeError{Code: "config_error", Message: b.cfgErr.Error()}
		}
		var doc []byte
		if err == nil {
			doc, err = run(ctx, req, a)
		}
		if err != nil {
			return fail(err, a), nil
		}
		return ok(doc), nil
	}
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

// call discovers the plugin, validates the arguments and, unless this is a
// dry run or the mutation switch forbids it, dispatches the target request.
func (b *bridge) call(ctx context.Context, _ *mcp.CallToolRequest, a *callArgs) ([]byte, error) {
	cat, err := b.client.scanOne(ctx, a.plugin, a.opts)
	if err != nil {
		return nil, err
	}
	i := slices.IndexFunc(cat.tools, func(t catalogTool) bool { return t.tool.name == a.tool })
	if i < 0 {
		var names []string
		for _, t := range cat.tools {
			names = append(names, t.tool.name)
		}
		return nil, &bridgeError{Code: "tool_not_found", Message: fmt.Sprintf("plugin %s has no tool %s; it has: %s",
			quote(a.plugin), quote(clip(a.tool, 100)), strings.Join(names, ", "))}
	}
	ct := cat.tools[i]
	t := ct.tool
	args := encode(a.arguments)
	if err := t.input.validateBytes(args, instanceLimits, "arguments"); err != nil {
		return nil, &bridgeError{Code: "invalid_arguments", Message: err.Error()}
	}
	req := request{method: t.method, path: ct.requestPath, header: a.opts.header, auth: a.opts.auth, limit: instanceLimits.bytes}
	query := value{kind: kindObject, obj: []member{}}
	if t.effect == "read" {
		var q url.Values
		q, query = encodeQuery(a.arguments, t.input)
		req.query = q.Encode()
	} else {
		req.body = args
	}
	allowed := t.effect == "read" || b.client.allowMutations
	if a.dryRun {
		return dryRunDocument(ct, a, query, req.body, allowed), nil
	}
	if !allowed {
		return nil, &bridgeError{Code: "mutations_disabled", Message: fmt.Sprintf("%s is a %s tool and mutations are disabled: start the server with --allow-mutations or NETBOX_MCP_ALLOW_MUTATIONS=1 to run it, or preview it with dry_run: true",
			ct.qualifiedName(), t.effect)}
	}
	resp, err := b.client.do(ctx, req)
	return responseDocument(ct, resp, err)
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

func dryRunDocument(ct catalogTool, a *callArgs, query value, body []byte, allowed bool) []byte {
	bodyValue := value{}
	if body != nil {
		bodyValue = a.arguments
	}
	notice := "Local preview: discovery and argument validation ran against NetBox, but no request was sent to the target, so the plugin did not validate or authorize it."
	if !allowed {
		notice += " A live call would be refused: mutations are disabled (start with --allow-mutations)."
	}
	return encode(value{kind: kindObject, obj: []member{
		{"dry_run", value{kind: kindBool, b: true}}, {"plugin", stringValue(ct.plugin)}, {"tool", stringValue(ct.tool.name)},
		{"effect", stringValue(ct.tool.effect)}, {"method", stringValue(ct.tool.method)}, {"path", stringValue(ct.requestPath)},
		{"query", query}, {"body", bodyValue}, {"allowed", value{kind: kindBool, b: allowed}}, {"notice", stringValue(notice)}}})
}

// keptHeaders are the response headers an agent sees (SPEC §9).
var keptHeaders = []string{"Content-Type", "Location", "X-Request-Id", "Api-Version", "Etag", "Last-Modified", "Retry-After", "Allow"}

// shownHeaders renders the kept headers under their SPEC names.
var shownHeaders = map[string]string{"X-Request-Id": "X-Request-ID", "Api-Version": "API-Version", "Etag": "ETag"}

// responseDocument turns the target's answer into the success document or
// into the error of SPEC §9, on the right side of the write boundary.
func responseDocument(ct catalogTool, resp *response, err error) ([]byte, error) {
	write := ct.tool.effect != "read"
	var te *transportError
	if errors.As(err, &te) && !te.sent {
		return nil, &bridgeError{Code: "request_failed", Message: fmt.Sprintf("%s %s failed before anything was sent: %v",
			ct.tool.method, ct.requestPath, te.err)}
	}
	var problem string
	switch {
	case err != nil && resp != nil && resp.status >= 400:
		problem = fmt.Sprintf("HTTP %d, and its %v", resp.status, err)
	case err != nil:
		problem = err.Error()
	case resp.status < 200 || resp.status > 299:
		problem = fmt.Sprintf("HTTP %d", resp.status)
	default:
		body := json.RawMessage("null")
		if ct.tool.method != http.MethodHead && resp.status != 204 && resp.status != 205 {
			if verr := ct.tool.output.validateBytes(resp.body, instanceLimits, "body"); verr != nil {
				problem = "the response body is invalid: " + verr.Error()
				break
			}
			body = resp.body
		}
		headers := map[string]string{}
		for _, name := range keptHeaders {
			if v := resp.header.Values(name); len(v) > 0 {
				headers[cmp.Or(shownHeaders[name], name)] = strings.Join(v, ", ")
			}
		}
		return json.Marshal(struct {
			Plugin  string            `json:"plugin"`
			Tool    string            `json:"tool"`
			Effect  string            `json:"effect"`
			Status  int               `json:"status"`
			Headers map[string]string `json:"headers"`
			Body    json.RawMessage   `json:"body"`
		}{ct.plugin, ct.tool.name, ct.tool.effect, resp.status, headers, body})
	}
	// A failure reports its status, and its body when that is strict bounded JSON.
	be := &bridgeError{Dispatched: true}
	if resp != nil {
		be.Status = resp.status
		if v, derr := decode(resp.body, instanceLimits); derr == nil && resp.body != nil {
			be.Body = encode(v)
			if err == nil && (resp.status < 200 || resp.status > 299) {
				problem += detail(v)
			}
		}
	}
	target := ct.tool.method + " " + ct.requestPath
	switch {
	case write:
		be.Code, be.Outcome = "outcome_unknown", "unknown"
		be.Message = fmt.Sprintf("%s was sent, but its outcome is unknown: %s.%s", target, problem, notBlindly)
	case resp != nil && (resp.status < 200 || resp.status > 399): // whatever its body
		be.Code = "http_error"
		be.Message = fmt.Sprintf("%s: %s. The read had no effect; fix the cause and retry.", target, problem)
	default:
		be.Code, be.Body = "response_invalid", nil
		be.Message = fmt.Sprintf("%s: %s. The read had no effect; fix the cause and retry.", target, problem)
	}
	return nil, be
}

// ---- stdio ----

// maxLineLength bounds one JSON-RPC message from the client.
const maxLineLength = 4 << 20

// serveStdio runs the server over newline-delimited JSON-RPC. The SDK's
// transport ends the session on a line it cannot decode; SPEC §9 wants a
// reply and an intact session, so a filter in front of it answers such lines
// itself with -32700 (not JSON) or -32600 (not a JSON-RPC message).
func serveStdio(ctx context.Context, server *mcp.Server, in io.Reader, out io.Writer) error {
	w := &lineWriter{w: out}
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(filterLines(in, pw, w)) }()
	return server.Run(ctx, &mcp.IOTransport{Reader: pr, Writer: w})
}

// filterLines copies the lines of in that are single JSON-RPC messages to
// pass, and answers the others on replies.
func filterLines(in io.Reader, pass io.Writer, replies *lineWriter) error {
	r := bufio.NewReaderSize(in, 64<<10)
	for {
		line, tooLong, err := readLine(r)
		if err != nil {
			return err
		}
		line = bytes.TrimSpace(line)
		if tooLong {
			replies.reply(nil, jsonrpc.CodeParseError, fmt.Sprintf("message longer than %d bytes", maxLineLength))
			continue
		}
		if len(line) == 0 {
			continue
		}
		if _, err := jsonrpc.DecodeMessage(line); err != nil || line[0] == '[' {
			var probe struct {
				ID json.RawMessage `json:"id"`
			}
			if json.Unmarshal(line, &probe) != nil && !json.Valid(line) {
				replies.reply(nil, jsonrpc.CodeParseError, "parse error: the line is not JSON")
			} else {
				replies.reply(probe.ID, jsonrpc.CodeInvalidRequest, "invalid request: not a single JSON-RPC 2.0 message")
			}
			continue
		}
		if _, err := pass.Write(append(line, '\n')); err != nil {
			return err
		}
	}
}

// readLine reads one line, discarding the rest of a line over maxLineLength.
func readLine(r *bufio.Reader) (line []byte, tooLong bool, err error) {
	for {
		chunk, err := r.ReadSlice('\n')
		if len(line)+len(chunk) <= maxLineLength {
			line = append(line, chunk...)
		} else {
			tooLong = true
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

// lineWriter serializes whole lines from the SDK and from the filter.
type lineWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lineWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (l *lineWriter) Close() error { return nil }

// reply writes an error response for a line that carried no usable request.
func (l *lineWriter) reply(id json.RawMessage, code int, msg string) {
	if len(id) == 0 || !(id[0] == '"' || id[0] == '-' || '0' <= id[0] && id[0] <= '9') {
		id = json.RawMessage("null")
	}
	data, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   jsonrpc.Error   `json:"error"`
	}{"2.0", id, jsonrpc.Error{Code: int64(code), Message: msg}})
	l.Write(append(data, '\n'))
}
