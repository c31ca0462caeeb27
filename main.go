// Command netbox-plugin-bridge lets MCP clients discover and call the
// operations that NetBox plugins advertise through bridge v1.
//
// The package is seven files in layers; each uses only names defined in
// itself or in a file before it, so they read bottom-up:
//
//	rfc3339.go    the RFC 3339 date-time rule
//	schema.go     the strict bounded JSON decoder and the schema subset
//	manifest.go   the bridge-v1 manifest and descriptor rules
//	transport.go  the configuration of a NetBox and the one bounded HTTP client
//	discover.go   discovery: the plugin list, roots and manifests
//	tools.go      the two MCP tools, dispatch and the stdio session
//	main.go       commands, flags, configuration sources and the demo NetBox
package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"
	"unicode"
	"unicode/utf8"
)

const usage = `netbox-plugin-bridge: NetBox plugin operations for MCP clients (bridge v1).

Usage:
  netbox-plugin-bridge [serve] [flags]
	MCP stdio server with the tools plugin_list_tools and plugin_call_tool.
  netbox-plugin-bridge scan [--plugin P] [--json] [flags]
	Discover the plugin tools of the configured NetBox and print them with
	any problems. Exit 0 clean, 1 problems, 2 configuration or connection error.
  netbox-plugin-bridge check MANIFEST.json [--tool T [--arguments JSON|@FILE] [--response FILE]] [--json]
	Check a bridge-v1 manifest offline, and optionally arguments or a
	response body for one of its tools. Exit 0 valid, 1 invalid, 2 usage
	or unreadable input.
  netbox-plugin-bridge version

Flags of serve and scan:
  --profile NAME       netbox-sdk profile (default: $NETBOX_PROFILE or "default")
  --allow-mutations    enable write and destructive plugin tools
  --demo               use the built-in demo NetBox on a loopback port
  --timeout DURATION   per-request timeout (default: $NETBOX_TIMEOUT seconds or 30s)

Environment: NETBOX_URL, NETBOX_TOKEN (or NETBOX_TOKEN_KEY and
NETBOX_TOKEN_SECRET), NETBOX_SSL_VERIFY, NETBOX_TIMEOUT, NETBOX_PROFILE,
NETBOX_MCP_ALLOW_MUTATIONS. Tokens are never accepted as flags.
`

// Exit codes shared by scan and check.
const (
	exitOK      = 0
	exitInvalid = 1
	exitUsage   = 2
)

func main() {
	// SPEC §11: the process stays under 64 MiB. Its Go memory is held near
	// memoryLimit, where the collector works harder instead of letting the
	// heap double; GOMEMLIMIT and GOGC, when set, still decide.
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(memoryLimit)
	}
	if len(os.Args) > 1 && os.Args[1] == "scan" && os.Getenv("GOGC") == "" {
		// A scan is one-shot and its inputs are bounded (SPEC §3: 2 MiB of
		// discovery bodies): it collects only near the limit, so a typical
		// scan never stops for the collector.
		debug.SetGCPercent(-1)
	}
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// memoryLimit is the Go memory (heap, stacks, runtime) at which the
// collector runs however little the heap has grown.
const memoryLimit = 40 << 20

// run executes one command line and returns the process exit code.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 1 && (args[0] == "--version" || args[0] == "-version") {
		args = []string{"version"}
	}
	cmd := "serve"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		cmd, args = args[0], args[1:]
	}
	switch cmd {
	case "serve":
		return runServe(args, os.Stdin, stdout, stderr, osEnvironment())
	case "scan":
		return runScan(args, stdout, stderr, osEnvironment())
	case "check":
		return runCheck(args, stdout, stderr)
	case "version":
		fmt.Fprintln(stdout, versionLine())
		return exitOK
	case "help":
		fmt.Fprint(stdout, usage)
		return exitOK
	}
	fmt.Fprintf(stderr, "netbox-plugin-bridge: unknown command %q; run 'netbox-plugin-bridge help'\n", cmd)
	return exitUsage
}

// versionLine is the version and the MCP SDK version built in.
func versionLine() string {
	sdk := "unknown"
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == "github.com/modelcontextprotocol/go-sdk" {
				sdk = d.Version
			}
		}
	}
	return fmt.Sprintf("netbox-plugin-bridge %s (go-sdk %s)", bridgeVersion(), sdk)
}

// parseFlags parses flags that may come before or after positional
// arguments and returns those, at most maxArgs of them. It reports usage
// errors itself.
func parseFlags(fs *flag.FlagSet, args []string, stderr io.Writer, maxArgs int) ([]string, bool) {
	fs.SetOutput(io.Discard)
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			fmt.Fprintf(stderr, "netbox-plugin-bridge %s: %v; run 'netbox-plugin-bridge help'\n", fs.Name(), err)
			return nil, false
		}
		if args = fs.Args(); len(args) == 0 {
			break
		}
		positional, args = append(positional, args[0]), args[1:]
	}
	if len(positional) > maxArgs {
		fmt.Fprintf(stderr, "netbox-plugin-bridge %s: unexpected argument %q; run 'netbox-plugin-bridge help'\n", fs.Name(), positional[maxArgs])
		return nil, false
	}
	return positional, true
}

// runCheck is the offline contract check for plugin authors.
func runCheck(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	toolName := fs.String("tool", "", "tool whose arguments or response to check")
	arguments := fs.String("arguments", "", "arguments as JSON, or @FILE")
	response := fs.String("response", "", "file holding a response body")
	asJSON := fs.Bool("json", false, "print the verdict as JSON")
	files, ok := parseFlags(fs, args, stderr, 1)
	if !ok {
		return exitUsage
	}
	fail := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "netbox-plugin-bridge check: "+format+"\n", a...)
		return exitUsage
	}
	switch {
	case len(files) != 1:
		return fail("give exactly one manifest file; run 'netbox-plugin-bridge help'")
	case *toolName == "" && (*arguments != "" || *response != ""):
		return fail("--arguments and --response need --tool")
	}
	var docs [3][]byte // manifest, arguments, response
	for i, name := range []string{"@" + files[0], *arguments, "@" + *response} {
		switch {
		case name == "@":
		case strings.HasPrefix(name, "@"):
			data, err := os.ReadFile(name[1:])
			if err != nil {
				return fail("cannot read %v", err)
			}
			docs[i] = data
		case name != "":
			docs[i] = []byte(name)
		}
	}
	ps := checkDocuments(docs[0], *toolName, docs[1], docs[2])
	if *asJSON {
		out, _ := json.MarshalIndent(struct {
			Valid    bool     `json:"valid"`
			Problems problems `json:"problems"`
		}{len(ps) == 0, append(problems{}, ps...)}, "", "  ")
		fmt.Fprintln(stdout, string(out))
	} else {
		for _, p := range ps {
			fmt.Fprintln(stdout, p.Error())
		}
		if len(ps) == 0 {
			fmt.Fprintf(stdout, "%s: valid\n", files[0])
		}
	}
	if len(ps) > 0 {
		return exitInvalid
	}
	return exitOK
}

// ---- configuration (SPEC §2) ----

// commonFlags are the flags of serve and scan.
type commonFlags struct {
	profile        string
	allowMutations bool
	demo           bool
	timeout        time.Duration
}

func (f *commonFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.profile, "profile", "", "netbox-sdk profile name")
	fs.BoolVar(&f.allowMutations, "allow-mutations", false, "enable write and destructive plugin tools")
	fs.BoolVar(&f.demo, "demo", false, "use the built-in demo NetBox")
	fs.DurationVar(&f.timeout, "timeout", 0, "per-request timeout")
}

// environment is what configuration reads from outside: variables and files.
type environment struct {
	getenv   func(string) string
	readFile func(string) ([]byte, fs.FileMode, error)
	home     string
}

func osEnvironment() environment {
	home, _ := os.UserHomeDir()
	return environment{getenv: os.Getenv, home: home, readFile: func(name string) ([]byte, fs.FileMode, error) {
		info, err := os.Stat(name)
		if err != nil {
			return nil, 0, err
		}
		data, err := os.ReadFile(name)
		return data, info.Mode().Perm(), err
	}}
}

// loadConfig resolves flags, then environment, then the netbox-sdk profile
// file. Its errors are one line that says what to set.
func loadConfig(f commonFlags, env environment) (*config, error) {
	if f.timeout < 0 {
		return nil, errors.New("--timeout must be positive")
	}
	cfg := &config{timeout: defaultTimeout}
	profileName := cmp.Or(f.profile, env.getenv("NETBOX_PROFILE"))
	p, err := loadProfile(env, cmp.Or(profileName, "default"), profileName != "")
	if err != nil {
		return nil, err
	}
	// Each setting with the name of where it came from, for error messages.
	pick := func(envName, profileKey, profileValue string) (string, string) {
		if v := env.getenv(envName); v != "" {
			return v, envName
		}
		return profileValue, "profile " + profileKey
	}
	rawURL, urlFrom := pick("NETBOX_URL", "base_url", p.url)
	timeout, timeoutFrom := pick("NETBOX_TIMEOUT", "timeout", p.timeout)
	sslVerify, sslFrom := pick("NETBOX_SSL_VERIFY", "ssl_verify", p.sslVerify)
	token, tokenFrom := envToken(env.getenv), "NETBOX_TOKEN"
	if token == "" {
		token, tokenFrom = p.token, "profile token_secret"
	}
	if rawURL == "" {
		return nil, errors.New("no NetBox URL: set NETBOX_URL (for example https://netbox.example.com) or a netbox-sdk profile, or use --demo")
	}
	if cfg.base, cfg.origin, cfg.prefix, err = normalizeURL(rawURL); err != nil {
		return nil, fmt.Errorf("%s: %v", urlFrom, err)
	}
	if token != "" && tokenFrom != "NETBOX_TOKEN" && urlFrom == "NETBOX_URL" && p.url != "" {
		// Never send a profile's token to a NetBox other than the profile's own.
		if _, origin, _, err := normalizeURL(p.url); err != nil || origin != cfg.origin {
			return nil, errors.New("NETBOX_URL names another NetBox than the profile whose token would be sent there; set NETBOX_TOKEN as well")
		}
	}
	if token != "" {
		if cfg.auth, err = authorization(token); err != nil {
			return nil, fmt.Errorf("%s: %v", tokenFrom, err)
		}
	}
	if timeout != "" {
		secs, err := strconv.ParseFloat(timeout, 64)
		if err != nil || !(secs > 0 && secs <= 86400) { // !(…) also refuses NaN
			return nil, fmt.Errorf("%s: %q is not a number of seconds between 0 and 86400", timeoutFrom, clip(timeout, 40))
		}
		cfg.timeout = time.Duration(secs * float64(time.Second))
	}
	if f.timeout > 0 {
		cfg.timeout = f.timeout
	}
	switch strings.ToLower(sslVerify) {
	case "", "1", "true", "yes", "on":
	case "0", "false", "no", "off":
		cfg.insecure = true
	default:
		return nil, fmt.Errorf("%s: %q is not one of 1, true, yes, on, 0, false, no, off", sslFrom, clip(sslVerify, 40))
	}
	return cfg, nil
}

// mutationsAllowed is the mutation switch of SPEC §2.
func mutationsAllowed(f commonFlags, env environment) bool {
	return f.allowMutations || truthy(env.getenv("NETBOX_MCP_ALLOW_MUTATIONS"))
}

func truthy(s string) bool {
	return slices.Contains([]string{"1", "true", "yes", "on"}, strings.ToLower(s))
}

// envToken reads the whole token, or netbox-sdk's split form.
func envToken(getenv func(string) string) string {
	if t := getenv("NETBOX_TOKEN"); t != "" {
		return t
	}
	key, secret := getenv("NETBOX_TOKEN_KEY"), getenv("NETBOX_TOKEN_SECRET")
	if strings.EqualFold(getenv("NETBOX_TOKEN_VERSION"), "v1") {
		return secret
	}
	return joinToken(key, secret)
}

// joinToken builds a v2 token from its key and secret.
func joinToken(key, secret string) string {
	if key == "" || secret == "" {
		return ""
	}
	if !strings.HasPrefix(key, "nbt_") {
		key = "nbt_" + key
	}
	return key + "." + secret
}

// profile is the part of a netbox-sdk profile the bridge uses.
type profile struct {
	url, token, timeout, sslVerify string
}

// loadProfile reads one profile of the netbox-sdk configuration file. A
// missing file is no error unless the profile was asked for by name.
func loadProfile(env environment, name string, named bool) (profile, error) {
	var dirs []string
	if x := env.getenv("XDG_CONFIG_HOME"); x != "" {
		dirs = append(dirs, x)
	}
	if env.home != "" {
		dirs = append(dirs, filepath.Join(env.home, ".config"))
	}
	var paths []string
	for _, app := range []string{"netbox-sdk", "netbox-cli"} {
		for _, d := range dirs {
			paths = append(paths, filepath.Join(d, app, "config.json"))
		}
	}
	for _, path := range paths {
		data, mode, err := env.readFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return profile{}, fmt.Errorf("cannot read the netbox-sdk profile file %s: %v", path, err)
		}
		if mode&0o044 != 0 {
			return profile{}, fmt.Errorf("the profile file %s is readable by other users (mode %04o); run: chmod 600 %s", path, mode, path)
		}
		return parseProfile(data, path, name, named)
	}
	if named {
		return profile{}, fmt.Errorf("profile %q: no netbox-sdk profile file in %s", name, strings.Join(paths, " or "))
	}
	return profile{}, nil
}

func parseProfile(data []byte, path, name string, named bool) (profile, error) {
	doc, err := decode(data, rootLimits)
	if err == nil && doc.kind != kindObject {
		err = errors.New("the top-level value is not an object")
	}
	if err != nil {
		return profile{}, fmt.Errorf("the profile file %s is not a JSON object: %v", path, err)
	}
	entry := doc
	if _, flat := doc.get("base_url"); !flat {
		profiles, _ := doc.get("profiles")
		var found bool
		if entry, found = profiles.get(name); !found || entry.kind != kindObject {
			if !named {
				return profile{}, nil
			}
			return profile{}, fmt.Errorf("profile %q is not in %s", name, path)
		}
	} else if name != "default" {
		return profile{}, fmt.Errorf("profile %q: %s holds only the default profile", name, path)
	}
	text := func(key string) string {
		switch v, _ := entry.get(key); v.kind {
		case kindString, kindNumber:
			return v.s
		case kindBool:
			return strconv.FormatBool(v.b)
		}
		return ""
	}
	p := profile{url: text("base_url"), timeout: text("timeout"), sslVerify: text("ssl_verify")}
	if strings.EqualFold(text("token_version"), "v1") {
		p.token = text("token_secret")
	} else {
		p.token = joinToken(text("token_key"), text("token_secret"))
	}
	return p, nil
}

// ---- serve ----

// runServe runs the MCP stdio server until stdin ends or a signal arrives.
// A configuration error does not stop it: every tool call answers
// config_error instead, so the MCP client can show the reason.
func runServe(args []string, stdin io.ReadCloser, stdout, stderr io.Writer, env environment) int {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	var f commonFlags
	f.register(fs)
	if _, ok := parseFlags(fs, args, stderr, 0); !ok {
		return exitUsage
	}
	logger := slog.New(slog.NewTextHandler(stderr, nil))
	cfg, stop, err := startConfig(f, env)
	if err != nil {
		logger.Error("NetBox is not configured; every tool call will answer config_error", "error", err)
		cfg, stop = &config{timeout: defaultTimeout}, func() {}
	}
	defer stop()
	if cfg.insecure {
		logger.Warn("TLS certificate verification is disabled (NETBOX_SSL_VERIFY)")
	}
	if f.demo {
		logger.Info("serving the built-in demo NetBox", "url", cfg.base)
	}
	life, end := context.WithCancel(context.Background())
	b := &bridge{client: newClient(cfg), cfgErr: err, allowMutations: mutationsAllowed(f, env), life: life}
	sdkLogger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	err = serveStdio(ctx, newMCPServer(b, sdkLogger), stdin, stdout, end)
	switch {
	case err != nil:
		logger.Error("the MCP session failed", "error", err)
		return exitInvalid
	case ctx.Err() != nil:
		logger.Info("stopped by a signal; calls in flight were cancelled")
	default:
		logger.Info("stdin closed; calls in flight were cancelled")
	}
	return exitOK
}

// ---- scan ----

func runScan(args []string, stdout, stderr io.Writer, env environment) int {
	fs := flag.NewFlagSet("scan", flag.ContinueOnError)
	var f commonFlags
	f.register(fs)
	plugin := fs.String("plugin", "", "discover only this plugin")
	asJSON := fs.Bool("json", false, "print the plugin_list_tools result document")
	if _, ok := parseFlags(fs, args, stderr, 0); !ok {
		return exitUsage
	}
	cfg, stop, err := startConfig(f, env)
	if err != nil {
		fmt.Fprintf(stderr, "netbox-plugin-bridge scan: %v\n", err)
		return exitUsage
	}
	defer stop()
	c := newClient(cfg)
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	var cat *catalog
	if *plugin != "" {
		cat, err = c.scanOne(ctx, *plugin, callOptions{})
	} else {
		cat, err = c.scanAll(ctx, callOptions{})
	}
	if err != nil {
		be := err.(*bridgeError)
		var te *transportError
		if *plugin == "" || errors.As(be.cause, &te) && te.resp == nil {
			fmt.Fprintf(stderr, "netbox-plugin-bridge scan: %s: %v\n", be.Code, be.Message)
			return exitUsage
		}
		cat = &catalog{problems: []scanProblem{{*plugin, be.Code, be.Message}}}
	}
	if *asJSON {
		stdout.Write(append(catalogDocument(cat), '\n'))
	} else {
		printCatalog(stdout, cat)
	}
	if len(cat.problems) > 0 {
		return exitInvalid
	}
	return exitOK
}

func printCatalog(w io.Writer, cat *catalog) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TOOL\tMETHOD\tEFFECT\tTITLE")
	for _, t := range cat.tools {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", t.qualifiedName(), t.tool.method, t.tool.effect, printable(t.tool.title))
	}
	tw.Flush()
	if len(cat.problems) > 0 {
		fmt.Fprintf(w, "\n%d problem(s):\n", len(cat.problems))
		for _, p := range cat.problems {
			fmt.Fprintf(w, "%s: %s: %s\n", printable(p.Plugin), p.Code, printable(p.Error))
		}
	}
}

// printable keeps a hostile NetBox's text from driving the operator's
// terminal: control characters become U+FFFD.
func printable(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return utf8.RuneError
		}
		return r
	}, s)
}

// startConfig loads the configuration, or starts the demo NetBox and
// configures it. stop shuts the demo down.
func startConfig(f commonFlags, env environment) (*config, func(), error) {
	if !f.demo || f.timeout < 0 {
		cfg, err := loadConfig(f, env)
		return cfg, func() {}, err
	}
	base, stop, err := startDemo()
	if err != nil {
		return nil, nil, fmt.Errorf("cannot start the demo NetBox: %v", err)
	}
	cfg := &config{auth: "Token " + demoToken, timeout: cmp.Or(f.timeout, defaultTimeout)}
	cfg.base, cfg.origin, cfg.prefix, _ = normalizeURL(base)
	return cfg, stop, nil
}

// ---- the built-in demo NetBox ----

// demoToken is the v1 token the demo NetBox requires; it guards nothing real.
const demoToken = "0123456789abcdef0123456789abcdef01234567"

// demoManifest is the example plugin's manifest: one read tool with query
// arguments and an outputSchema, one write tool with a body.
const demoManifest = `{"schema_version": "1", "plugin": "example", "tools": [
  {"name": "list_reports", "title": "List inventory reports", "description": "List the inventory reports visible to the current NetBox principal, newest first.", "method": "GET", "path": "reports/", "effect": "read",
   "inputSchema": {"type": "object", "properties": {"status": {"type": "string", "enum": ["queued", "done", "failed"]}, "limit": {"type": "integer", "minimum": 1, "maximum": 100, "default": 20}, "site": {"type": "array", "items": {"type": "string", "maxLength": 100}, "maxItems": 10, "uniqueItems": true}, "since": {"type": "string", "format": "date-time"}}, "additionalProperties": false},
   "outputSchema": {"type": "object", "properties": {"count": {"type": "integer", "minimum": 0}, "results": {"type": "array", "items": {"type": "object", "properties": {"id": {"type": "integer", "minimum": 1}, "site": {"type": "string"}, "status": {"type": "string", "enum": ["queued", "done", "failed"]}, "created": {"type": "string", "format": "date-time"}}, "required": ["id", "site", "status", "created"], "additionalProperties": false}}}, "required": ["count", "results"], "additionalProperties": false},
   "annotations": {"readOnlyHint": true, "destructiveHint": false, "idempotentHint": true, "openWorldHint": false}},
  {"name": "run_report", "title": "Run an inventory report", "description": "Queue an inventory report for one site, or for every site when site is omitted.", "method": "POST", "path": "reports/run/", "effect": "write",
   "inputSchema": {"type": "object", "properties": {"site": {"type": "string", "minLength": 1, "maxLength": 100}, "scope": {"type": "string", "enum": ["active", "all"]}}, "required": ["scope"], "additionalProperties": false},
   "outputSchema": {"type": "object", "properties": {"id": {"type": "integer", "minimum": 1}, "status": {"const": "queued"}}, "required": ["id", "status"], "additionalProperties": false},
   "annotations": {"readOnlyHint": false, "destructiveHint": false, "idempotentHint": false, "openWorldHint": false}}]}`

// demoBrokenManifest breaks a SPEC §4 rule: methods are upper case.
const demoBrokenManifest = `{"schema_version": "1", "plugin": "broken", "tools": [{"name": "purge", "title": "Purge",
  "description": "Purge everything.", "method": "get", "path": "purge/", "effect": "read",
  "inputSchema": {"type": "object", "additionalProperties": false},
  "annotations": {"readOnlyHint": true, "destructiveHint": false, "idempotentHint": true, "openWorldHint": false}}]}`

// startDemo serves the demo NetBox on a loopback port and returns its URL.
func startDemo() (string, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	base := "http://" + ln.Addr().String()
	srv := &http.Server{Handler: demoHandler(base), ReadHeaderTimeout: 5 * time.Second, ErrorLog: log.New(io.Discard, "", 0)}
	go srv.Serve(ln)
	return base, func() { srv.Close() }, nil
}

func demoHandler(base string) http.Handler {
	var mu sync.Mutex
	reports := []map[string]any{
		{"id": 1, "site": "ams1", "status": "done", "created": "2026-11-30T08:00:00Z"},
		{"id": 2, "site": "fra2", "status": "failed", "created": "2026-12-01T08:00:00Z"},
	}
	send := func(w http.ResponseWriter, status int, v any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		json.NewEncoder(w).Encode(v)
	}
	advertise := func(slug string) map[string]any {
		return map[string]any{"mcp": map[string]string{"schema_version": "1", "manifest": "/api/plugins/" + slug + "/mcp/"}}
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Token "+demoToken {
			send(w, http.StatusForbidden, map[string]string{"detail": "Invalid token"})
			return
		}
		mu.Lock()
		defer mu.Unlock()
		switch r.Method + " " + r.URL.Path {
		case "GET /api/plugins/":
			send(w, http.StatusOK, map[string]string{
				"example": base + "/api/plugins/example/", "quiet": base + "/api/plugins/quiet/",
				"broken": base + "/api/plugins/broken/", installedPlugins: base + "/api/plugins/installed-plugins/"})
		case "GET /api/plugins/installed-plugins/":
			send(w, http.StatusOK, []map[string]string{{"name": "example"}, {"name": "quiet"}, {"name": "broken"}})
		case "GET /api/plugins/example/":
			send(w, http.StatusOK, advertise("example"))
		case "GET /api/plugins/broken/":
			send(w, http.StatusOK, advertise("broken"))
		case "GET /api/plugins/quiet/":
			send(w, http.StatusOK, map[string]string{"widgets": base + "/api/plugins/quiet/widgets/"})
		case "GET /api/plugins/example/mcp/":
			send(w, http.StatusOK, json.RawMessage(demoManifest))
		case "GET /api/plugins/broken/mcp/":
			send(w, http.StatusOK, json.RawMessage(demoBrokenManifest))
		case "GET /api/plugins/example/reports/", "HEAD /api/plugins/example/reports/":
			q := r.URL.Query()
			limit, err := strconv.Atoi(cmp.Or(q.Get("limit"), "20"))
			if err != nil || limit < 1 {
				send(w, http.StatusBadRequest, map[string]string{"detail": "limit must be a positive integer"})
				return
			}
			results := []map[string]any{}
			for i := len(reports) - 1; i >= 0 && len(results) < limit; i-- {
				rep := reports[i]
				if (q.Get("status") == "" || rep["status"] == q.Get("status")) && (!q.Has("site") || slices.Contains(q["site"], rep["site"].(string))) &&
					rep["created"].(string) >= q.Get("since") {
					results = append(results, rep)
				}
			}
			send(w, http.StatusOK, map[string]any{"count": len(results), "results": results})
		case "POST /api/plugins/example/reports/run/":
			var in struct{ Site, Scope string }
			if err := json.NewDecoder(io.LimitReader(r.Body, 1<<16)).Decode(&in); err != nil || in.Scope == "" {
				send(w, http.StatusBadRequest, map[string]string{"detail": "scope is required"})
				return
			}
			rep := map[string]any{"id": len(reports) + 1, "site": cmp.Or(in.Site, "all"), "status": "queued",
				"created": time.Now().UTC().Format(time.RFC3339)}
			reports = append(reports, rep)
			w.Header().Set("Location", "/api/plugins/example/reports/"+strconv.Itoa(len(reports))+"/")
			send(w, http.StatusCreated, map[string]any{"id": rep["id"], "status": "queued"})
		default:
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, "<!DOCTYPE html><html><body><h1>Page Not Found</h1></body></html>")
		}
	})
}
