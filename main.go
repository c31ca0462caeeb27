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
//	tools.go      the two MCP tools, dispatch, the write policy, confirmation,
//	              the audit and the stdio session
//	main.go       commands and flags, configuration, serve and its HTTP front,
//	              metrics, scan, check, check --plugin, the OpenAPI schema and
//	              draft, the demo NetBox
//
// The large files are in sections, each headed "---- name ----": schema.go's
// are listed in its design comment; tools.go's are the two tools, results,
// the catalog, dispatch, the write policy, the audit, confirmation and
// stdio; main.go's, in this order, the command line, configuration, serve,
// the HTTP front, metrics, scan, check, check --plugin, the OpenAPI schema
// and its converter, the cross-check and draft, the demo NetBox, and flags.
// The README's "Auditing" lists the safety core in reading order.
package main

import (
	"bytes"
	"cmp"
	"context"
	"crypto/subtle"
	"crypto/tls"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log"
	"log/slog"
	"maps"
	"math"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/signal"
	"path/filepath"
	"reflect"
	"runtime"
	"runtime/debug"
	rtmetrics "runtime/metrics"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"text/tabwriter"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ---- command line ----

// usage is the one usage text of every command and help form.
const usage = `netbox-plugin-bridge: NetBox plugin operations for MCP clients (bridge v1).

Usage:
  netbox-plugin-bridge [serve] [flags]    the MCP server on stdio (the default), or over --http
  netbox-plugin-bridge scan [--plugin P] [--json] [flags]
                                          the plugin tools an agent would see
  netbox-plugin-bridge check MANIFEST.json... [--openapi FILE] [--json | --format github]
  netbox-plugin-bridge check MANIFEST.json --tool T [--arguments JSON|@FILE] [--response JSON|@FILE]
                                          offline contract checks for plugin authors ('-': stdin)
  netbox-plugin-bridge check --plugin P [--arguments TOOL=JSON|TOOL=@FILE]... [--json] [flags]
                                          a live contract test of one plugin, its serializers
                                          included (--openapi FILE: a saved schema); it never writes
  netbox-plugin-bridge draft --plugin P [--operation "METHOD PATH"]... [--openapi FILE] [flags]
                                          a manifest drafted from NetBox's OpenAPI schema; without
                                          --operation, the operations it can draft
  netbox-plugin-bridge healthcheck [--http ADDR]
                                          exit 0 when the local serve --http answers /readyz
  netbox-plugin-bridge version | help     also --version, -h, --help, COMMAND --help

Try it without a NetBox: netbox-plugin-bridge scan --demo

Flags of serve, scan, check --plugin and draft:
  --profile NAME            a profile of ~/.config/netbox-sdk/config.json (chmod 600)
  --demo                    the built-in demo NetBox, on a loopback port
  --timeout DURATION        per-request timeout: 30s, or a number of seconds
  --allow-mutations[=LIST]  run write tools: all, or LIST as in example.run_report,proxbox.*
  --branch NAME             work in this NetBox branch (NetBox Branching)
  --branch-only             run write tools only in a branch
Flags of serve:
  --confirm MODE            ask a human first: auto (destructive, if the client can), destructive,
                            writes, off
  --http ADDR               serve stateless streamable HTTP at ADDR (:8080) /mcp, /healthz, /readyz
  --tls-cert FILE --tls-key FILE   serve HTTPS
  --auth-token-file FILE    the bearer token callers present when a NetBox token is configured;
                            else each caller sends their own: Bearer nbt_KEY.SECRET or Token V1
  --trusted-proxies CIDRS   proxies whose X-Forwarded-For names the caller
  --allowed-hosts NAMES     Host names a reverse proxy on this host forwards (DNS rebinding)
  --metrics ADDR            serve Prometheus metrics at ADDR (127.0.0.1:9464) /metrics
  --no-call-token           refuse the per-call token argument
  --log-format text|json    --log-level debug|info|warn|error   (stderr only)
  --audit-file FILE         also append each write decision to FILE as a JSON line (0600)
A flag the command line leaves out is read from NETBOX_MCP_<FLAG> (NETBOX_MCP_HTTP,
NETBOX_MCP_ALLOW_MUTATIONS, ...), --branch from NETBOX_BRANCH.

Configuration: flags, then the environment, then the netbox-sdk profile.
  NETBOX_URL            https://netbox.example.com[/prefix]
  NETBOX_TOKEN          nbt_KEY.SECRET (v2, sent as Bearer) or a v1 token (sent as Token), or
                        NETBOX_TOKEN_FILE (a chmod 600 file of one line), or
                        NETBOX_TOKEN_KEY and NETBOX_TOKEN_SECRET (NETBOX_TOKEN_VERSION=v1)
  NETBOX_TIMEOUT, NETBOX_PROFILE, NETBOX_SSL_VERIFY=0 (a last resort: set SSL_CERT_FILE)
Tokens are never flags. Exit: 0 clean, 1 problems, 2 usage, configuration or NetBox unreachable.
`

// Exit codes shared by scan and check.
const (
	exitOK      = 0
	exitInvalid = 1
	exitUsage   = 2
)

// exitFor is the exit code of a command that found problems, or none.
func exitFor(problems bool) int {
	if problems {
		return exitInvalid
	}
	return exitOK
}

func main() {
	// SPEC §11: the process stays under 64 MiB. Its Go memory is held near
	// memoryLimit, where the collector works harder instead of letting the
	// heap double under a burst of large bodies; GOMEMLIMIT and GOGC, when
	// set, still decide.
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(memoryLimit)
	}
	switch command := append(os.Args, "serve")[1]; {
	case os.Getenv("GOGC") != "":
	case command == "scan":
		// A scan is one-shot and its inputs are bounded (SPEC §3: 2 MiB of
		// discovery bodies): it collects only near the limit, so a typical
		// scan never stops for the collector.
		debug.SetGCPercent(-1)
	case command == "serve" || strings.HasPrefix(command, "-"):
		// A server's garbage is mostly the SDK's buffers of each message:
		// collecting at twice the default target, still under memoryLimit,
		// costs a few MiB and gives its CPU to the calls (README: Performance).
		debug.SetGCPercent(gcPercent)
	}
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr, osEnvironment()))
}

// memoryLimit is the Go memory (heap, stacks, runtime) at which the
// collector runs however little the heap has grown; gcPercent is serve's
// collection target below it.
const (
	memoryLimit = 40 << 20
	gcPercent   = 200
)

// commands are the commands, serve the default.
var commands = []string{"serve", "scan", "check", "draft", "healthcheck", "version", "help"}

// run executes one command line and returns the process exit code.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer, env environment) int {
	cmd := "serve"
	switch {
	case len(args) == 1 && (args[0] == "--version" || args[0] == "-version"):
		cmd, args = "version", nil
	case len(args) > 0 && !strings.HasPrefix(args[0], "-"):
		cmd, args = args[0], args[1:]
	}
	o := &options{stderr: stderr}
	if !slices.Contains(commands, cmd) {
		return o.fail("unknown command %q%s", cmd, suggest(cmd, commands, ""))
	}
	o.cmd = cmd
	positional, code, ok := o.parse(o.newFlags(cmd), args, env, stdout)
	switch {
	case !ok:
		return code
	case cmd == "help" && (len(positional) > 1 || len(positional) == 1 && !slices.Contains(commands, positional[0])):
		return o.fail("no command %q%s", strings.Join(positional, " "), suggest(positional[0], commands, ""))
	case cmd == "check":
		return runCheck(o, positional, stdin, stdout, env)
	case cmd == "draft" && len(positional) == 0:
		return runDraft(o, stdout, env)
	case cmd != "help" && len(positional) > 0:
		return o.fail("unexpected argument %q", positional[0])
	case cmd == "serve":
		return runServe(o, stdin, stdout, env)
	case cmd == "scan":
		return runScan(o, stdout, env)
	case cmd == "healthcheck":
		return runHealthcheck(o, stdout)
	case cmd == "version": // the version and the MCP SDK version built in
		sdk := "unknown"
		if bi, ok := debug.ReadBuildInfo(); ok {
			if i := slices.IndexFunc(bi.Deps, func(d *debug.Module) bool { return d.Path == "github.com/modelcontextprotocol/go-sdk" }); i >= 0 {
				sdk = bi.Deps[i].Version
			}
		}
		fmt.Fprintf(stdout, "netbox-plugin-bridge %s (go-sdk %s)\n", bridgeVersion(), sdk)
	default:
		fmt.Fprint(stdout, usage)
	}
	return exitOK
}

// ---- configuration (SPEC §2) ----

// environment is what configuration reads from outside: variables and the
// profile file.
type environment struct {
	getenv   func(string) string
	environ  func() []string              // every NAME=value set
	readFile func(string) ([]byte, error) // readFile of a private file, or a test's
	home     string
}

func osEnvironment() environment {
	home, _ := os.UserHomeDir()
	// Each file it reads holds a secret (SPEC §2, §14).
	return environment{getenv: os.Getenv, environ: os.Environ, home: home, readFile: func(path string) ([]byte, error) { return readFile(path, secretFileLimit, true) }}
}

// secretFileLimit bounds a file that holds a secret.
const secretFileLimit = 1 << 20

// readFile reads a file up to one byte past limit, so that a decoder can
// tell an oversize document. Before reading a byte it refuses what would
// never end (a directory, a device such as /dev/zero) and, for a private
// file that holds a secret, what another local user could have written or
// read: a file that is not regular (a FIFO), that group or others may read
// or write, or that another user owns. Windows has no such modes; there a
// private file need only be regular.
func readFile(path string, limit int, private bool) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil { // a *fs.PathError, named by the path alone
		return nil, fmt.Errorf("%s: %w", path, errors.Unwrap(err))
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	mode := info.Mode()
	switch {
	case !private && mode&(fs.ModeDir|fs.ModeDevice|fs.ModeSocket) != 0:
		return nil, fmt.Errorf("%s is not a file", path)
	case !private:
	case !mode.IsRegular():
		return nil, fmt.Errorf("%s is not a regular file (%v); point to a regular file", path, mode.Type())
	case runtime.GOOS == "windows":
	case mode.Perm()&0o077 != 0:
		return nil, fmt.Errorf("%s may be read or written by other users (mode %04o); run: chmod 600 %s", path, mode.Perm(), path)
	case fileOwner(info) != os.Getuid():
		return nil, fmt.Errorf("%s belongs to another user (uid %d); it must be yours", path, fileOwner(info))
	}
	data, err := io.ReadAll(io.LimitReader(f, int64(limit)+1))
	if err == nil && private && len(data) > limit {
		err = fmt.Errorf("%s is larger than %d bytes", path, limit)
	}
	return data, err
}

// secretLine reads a private file that holds one secret on one line (a
// token file): one trailing newline is dropped; an empty file, or one of
// several lines, is an error that names the file and the fix.
func secretLine(env environment, path string) (string, error) {
	data, err := env.readFile(path)
	line := strings.TrimSuffix(string(data), "\n")
	switch {
	case err != nil:
		return "", err
	case line == "":
		return "", fmt.Errorf("%s is empty; put the token in it, alone on one line", path)
	case strings.Contains(line, "\n"):
		return "", fmt.Errorf("%s holds several lines; put the token alone on one line", path)
	}
	return line, nil
}

// fileOwner is the owner of a file on Unix, or -1.
func fileOwner(info fs.FileInfo) int {
	if uid := reflect.ValueOf(info.Sys()).Elem().FieldByName("Uid"); uid.IsValid() {
		return int(uid.Uint())
	}
	return -1
}

// loadConfig resolves the NetBox configuration: flags, then environment,
// then the netbox-sdk profile file. Its errors are one line that says what
// to set.
func loadConfig(o *options, env environment) (*config, error) {
	cfg := &config{branch: o.branch}
	profileName := cmp.Or(o.profile, env.getenv("NETBOX_PROFILE"))
	p, err := loadProfile(env, cmp.Or(profileName, "default"), profileName != "")
	if err != nil {
		return nil, err
	}
	// Each setting with the name of where it came from, for messages.
	pick := func(envName, profileKey, profileValue string) (string, string) {
		if v := env.getenv(envName); v != "" {
			return v, envName
		}
		return profileValue, "profile " + profileKey
	}
	rawURL, urlFrom := pick("NETBOX_URL", "base_url", p.url)
	timeout, timeoutFrom := pick("NETBOX_TIMEOUT", "timeout", p.timeout)
	sslVerify, sslFrom := pick("NETBOX_SSL_VERIFY", "ssl_verify", p.sslVerify)
	// The token is whole, in a file, or in netbox-sdk's split form, or the profile's.
	token, tokenFrom := env.getenv("NETBOX_TOKEN"), "NETBOX_TOKEN"
	if file := env.getenv("NETBOX_TOKEN_FILE"); token == "" && file != "" {
		if token, err = secretLine(env, file); err != nil {
			return nil, fmt.Errorf("NETBOX_TOKEN_FILE: %v", err)
		}
		tokenFrom = "NETBOX_TOKEN_FILE"
	}
	if token == "" {
		tokenFrom = "NETBOX_TOKEN_KEY and NETBOX_TOKEN_SECRET"
		if strings.EqualFold(env.getenv("NETBOX_TOKEN_VERSION"), "v1") {
			tokenFrom = "NETBOX_TOKEN_SECRET"
		}
		if token, err = joinToken(env.getenv("NETBOX_TOKEN_VERSION"), env.getenv("NETBOX_TOKEN_KEY"), env.getenv("NETBOX_TOKEN_SECRET"),
			"NETBOX_TOKEN_VERSION", "NETBOX_TOKEN_KEY", "NETBOX_TOKEN_SECRET"); err != nil {
			return nil, err
		}
	}
	if token == "" && p.token != "" {
		token, tokenFrom = p.token, fmt.Sprintf("profile %q", p.name)
	}
	if rawURL == "" {
		return nil, errors.New("no NetBox URL: set NETBOX_URL (for example https://netbox.example.com) or a netbox-sdk profile, or use --demo")
	}
	if cfg.base, cfg.origin, cfg.prefix, err = normalizeURL(rawURL); err != nil {
		return nil, fmt.Errorf("%s: %v", urlFrom, err)
	}
	cfg.assumedHTTPS = !strings.Contains(rawURL, "://")
	if token != "" && strings.HasPrefix(tokenFrom, "profile") && urlFrom == "NETBOX_URL" && p.url != "" {
		// Never send a profile's token to a NetBox other than the profile's own.
		if _, origin, _, err := normalizeURL(p.url); err != nil || origin != cfg.origin {
			return nil, errors.New("NETBOX_URL names another NetBox than the profile whose token would be sent there; set NETBOX_TOKEN as well")
		}
	}
	if token != "" {
		if cfg.auth, err = authorization(token); err != nil {
			return nil, fmt.Errorf("%s: %v", tokenFrom, err)
		}
		cfg.authFrom = tokenFrom
	}
	if cfg.timeout, err = parseTimeout(cmp.Or(timeout, defaultTimeout.String())); err != nil {
		return nil, fmt.Errorf("%s: %s %v", timeoutFrom, quote(clip(timeout, 40)), err)
	}
	cfg.timeout = cmp.Or(o.timeout, cfg.timeout)
	if verify, err := switchWord(cmp.Or(sslVerify, "1")); err != nil {
		return nil, fmt.Errorf("%s: %s %v", sslFrom, quote(clip(sslVerify, 40)), err)
	} else if !verify {
		cfg.insecure, cfg.insecureFrom = true, sslFrom
	}
	return cfg, nil
}

// loadPolicy resolves the write policy of SPEC §13: the switch or its
// allow-list, and the confirmation mode.
func loadPolicy(o *options) (writePolicy, string, error) {
	policy, err := parseWritePolicy(o.allowMutations, o.setting("allow-mutations"))
	if err != nil {
		return writePolicy{}, "", err
	}
	if confirm := cmp.Or(o.confirm, confirmModes[0]); !slices.Contains(confirmModes, confirm) {
		return writePolicy{}, "", fmt.Errorf("%s: %s is not one of %s", o.setting("confirm"), quote(clip(confirm, 40)), strings.Join(confirmModes, ", "))
	}
	return policy, cmp.Or(o.confirm, confirmModes[0]), nil
}

// joinToken builds a token from netbox-sdk's split form: version v1 takes
// the whole v1 token as its secret; otherwise a v2 token needs both its key
// and its secret. Half a token is an error that names the missing field.
func joinToken(version, key, secret, versionName, keyName, secretName string) (string, error) {
	switch {
	case strings.EqualFold(version, "v1") && secret == "" && key != "":
		return "", fmt.Errorf("%s is v1, which takes the v1 token in %s, not in %s", versionName, secretName, keyName)
	case strings.EqualFold(version, "v1"):
		return secret, nil
	case key == "" && secret == "":
		return "", nil
	case secret == "" && len(key) == 40 && !strings.HasPrefix(key, "nbt_"):
		return "", fmt.Errorf("%s holds what looks like a v1 token: set %s to v1 and put it in %s", keyName, versionName, secretName)
	case key == "" || secret == "":
		return "", fmt.Errorf("a v2 token needs both %s and %s, and only one is set", keyName, secretName)
	}
	return "nbt_" + strings.TrimPrefix(key, "nbt_") + "." + secret, nil
}

// profile is the part of a netbox-sdk profile the bridge uses.
type profile struct {
	name, url, token, timeout, sslVerify string
}

// loadProfile reads one profile of the netbox-sdk configuration file. A
// missing file is no error unless the profile was asked for by name.
func loadProfile(env environment, name string, named bool) (profile, error) {
	var paths []string
	for _, app := range []string{"netbox-sdk", "netbox-cli"} {
		if xdg := env.getenv("XDG_CONFIG_HOME"); xdg != "" {
			paths = append(paths, filepath.Join(xdg, app, "config.json"))
		}
		if env.home != "" {
			paths = append(paths, filepath.Join(env.home, ".config", app, "config.json"))
		}
	}
	for _, path := range paths {
		switch data, err := env.readFile(path); {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			return profile{}, fmt.Errorf("cannot use the netbox-sdk profile file: %v", err)
		default:
			return parseProfile(data, path, name, named)
		}
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
		if entry, _ = profiles.get(name); entry.kind != kindObject { // a missing one is null
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
	p := profile{name: name, url: text("base_url"), timeout: text("timeout"), sslVerify: text("ssl_verify")}
	if p.token, err = joinToken(text("token_version"), text("token_key"), text("token_secret"), "token_version", "token_key", "token_secret"); err != nil {
		return profile{}, fmt.Errorf("profile %q in %s: %v", name, path, err)
	}
	return p, nil
}

// startConfig loads the configuration, or starts the demo NetBox and
// configures it; stop shuts the demo down. warnings are the settings an
// operator should know are weak, once, for every command.
func startConfig(o *options, env environment) (cfg *config, stop func(), warnings []string, err error) {
	known := append(slices.Collect(maps.Values(flagVariables)), "NETBOX_MCP_AUTH_TOKEN")
	for _, kv := range env.environ() { // a newer deployment may set a newer variable: a warning, never an error
		if name, _, _ := strings.Cut(kv, "="); strings.HasPrefix(name, "NETBOX_MCP_") && !slices.Contains(known, name) {
			closest := slices.MinFunc(known, func(a, b string) int { return cmp.Compare(editDistance(name, a), editDistance(name, b)) })
			warnings = append(warnings, fmt.Sprintf("%s is not a setting of this version and is ignored; the closest one is %s", name, closest))
		}
	}
	if !o.demo {
		if cfg, err = loadConfig(o, env); err != nil {
			return nil, func() {}, warnings, err
		}
		if cfg.insecure {
			warnings = append(warnings, fmt.Sprintf("TLS certificate verification is off (%s)", cfg.insecureFrom))
		}
		if cfg.auth != "" && strings.HasPrefix(cfg.base, "http://") && !cfg.onLoopback() {
			warnings = append(warnings, fmt.Sprintf("%s goes to %s over plain HTTP, readable on the network; use https://", cfg.describeToken("", ""), cfg.base))
		}
		return cfg, func() {}, warnings, nil
	}
	base, stop, err := startDemo()
	if err != nil {
		return nil, func() {}, warnings, fmt.Errorf("cannot start the demo NetBox: %v", err)
	}
	cfg = &config{auth: "Token " + demoToken, authFrom: "the demo", timeout: cmp.Or(o.timeout, defaultTimeout), branch: o.branch}
	if o.http != "" {
		cfg.auth = "" // over HTTP each caller brings the demo's token: Authorization: Token demoToken
	}
	cfg.base, cfg.origin, cfg.prefix, _ = normalizeURL(base)
	return cfg, stop, warnings, nil
}

// ---- serve ----

// runServe runs the MCP server until stdin ends or a signal arrives. A
// configuration error does not stop it: every tool call answers
// config_error instead, so the MCP client can show the reason.
func runServe(o *options, stdin io.Reader, stdout io.Writer, env environment) int {
	var level slog.Level
	switch {
	case o.logFormat != "text" && o.logFormat != "json":
		return o.fail("%s %s is not text or json", o.setting("log-format"), quote(clip(o.logFormat, 40)))
	case level.UnmarshalText([]byte(o.logLevel)) != nil:
		return o.fail("%s %s is not debug, info, warn or error", o.setting("log-level"), quote(clip(o.logLevel, 40)))
	case (o.tlsCert == "") != (o.tlsKey == ""):
		return o.fail("--tls-cert and --tls-key go together: give both, or neither")
	case o.http == "" && (o.tlsCert != "" || o.authFile != "" || o.trustedProxies != "" || o.allowedHosts != ""):
		return o.fail("--tls-cert, --tls-key, --auth-token-file, --trusted-proxies and --allowed-hosts go with --http")
	case o.http != "" && strings.Trim(o.http, "0123456789") == "":
		return o.fail("%s %s: give an address with a port, such as :%[2]s or 127.0.0.1:%[2]s", o.setting("http"), o.http)
	}
	logger := newLogger(o.stderr, o.logFormat, level)
	// A write's audit record goes to stderr ahead of the write (SPEC §13): a
	// reader that went away must refuse the write, not kill the process.
	signal.Ignore(syscall.SIGPIPE)
	audit := &auditLog{stderr: newLogger(o.stderr, o.logFormat, slog.LevelInfo).Handler(), path: o.auditFile} // every write decision, whatever the level
	if o.auditFile != "" {
		if err := audit.reopen(); err != nil {
			return o.fail("%s: %v", o.setting("audit-file"), err)
		}
	}
	if f, ok := stdin.(*os.File); ok && o.http == "" {
		if info, err := f.Stat(); err == nil && info.Mode()&os.ModeCharDevice != 0 {
			logger.Info("this is an MCP stdio server: register it in an MCP client, or try 'netbox-plugin-bridge scan --demo' and 'netbox-plugin-bridge help'")
		}
	}
	cfg, stop, warnings, err := startConfig(o, env)
	defer stop()
	policy, confirm, perr := loadPolicy(o)
	if err = cmp.Or(err, perr); err != nil {
		logger.Error("the configuration is incomplete; every tool call will answer config_error", "error", err)
		cfg = cmp.Or(cfg, &config{timeout: defaultTimeout})
	}
	for _, w := range warnings {
		logger.Warn(w)
	}
	if o.demo && o.http != "" {
		logger.Info("serving the built-in demo NetBox", "url", cfg.base, "http_callers_send", "Authorization: Token "+demoToken)
	} else if o.demo {
		logger.Info("serving the built-in demo NetBox", "url", cfg.base)
	}
	b := &bridge{client: newClient(cfg), cfgErr: err, policy: policy, confirm: confirm, audit: audit,
		branchOnly: o.branchOnly, noCallToken: o.noCallToken, overHTTP: o.http != ""}
	m := &metrics{bridge: b}
	if o.metrics != "" { // on a listener of its own, without authentication (SPEC §18)
		ln, err := net.Listen("tcp", o.metrics)
		if err != nil {
			return o.fail("%s %s: %v", o.setting("metrics"), o.metrics, err)
		}
		defer ln.Close()
		go (&http.Server{Handler: m, ReadHeaderTimeout: bodyTimeout, ErrorLog: log.New(io.Discard, "", 0)}).Serve(ln)
		b.metric = m.count
		logger.Info("serving metrics", "url", "http://"+ln.Addr().String()+"/metrics")
	}
	if o.metrics != "" || level <= slog.LevelDebug {
		b.client.observe = func(req request, status, size int, took time.Duration) { // --log-level debug: one record a NetBox request (SPEC §2)
			logger.Debug("netbox", "kind", "netbox", "method", req.method, "path", req.path, "status", status, "duration_ms", took.Milliseconds(), "bytes", size)
			if o.metrics != "" {
				m.observe(req, status, size, took)
			}
		}
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	hup := make(chan os.Signal, 1) // SIGHUP reopens the audit file after a rotation, and changes nothing else
	signal.Notify(hup, syscall.SIGHUP)
	defer func() { signal.Stop(hup); close(hup) }()
	go func() {
		for range hup {
			if o.auditFile == "" {
				continue // nothing to reopen
			}
			if err := audit.reopen(); err != nil {
				logger.Error("SIGHUP: the audit file could not be reopened; the one open before stays in use", "file", o.auditFile, "error", err)
			} else {
				logger.Info("SIGHUP: the audit file was reopened", "file", o.auditFile)
			}
		}
	}()
	server := newMCPServer(b, newLogger(o.stderr, o.logFormat, max(level, slog.LevelWarn)))
	if o.http != "" {
		return serveHTTP(ctx, o, env, server, b, logger)
	}
	switch err := serveStdio(ctx, server, stdin, stdout); {
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

// runHealthcheck asks the local HTTP server whether it is ready, for a
// container's HEALTHCHECK where there is no shell or curl: exit 0 when
// GET /readyz answers 200.
func runHealthcheck(o *options, stdout io.Writer) int {
	host, port, err := net.SplitHostPort(o.http)
	if err != nil {
		return o.fail("%s %s: give the address serve listens on, such as :8080", o.setting("http"), quote(o.http))
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "127.0.0.1"
	}
	scheme := "http"
	if o.tlsCert != "" {
		scheme = "https"
	}
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} // our own server: nothing secret is sent
	resp, err := c.Get(scheme + "://" + net.JoinHostPort(host, port) + "/readyz")
	if err != nil {
		fmt.Fprintf(o.stderr, "netbox-plugin-bridge healthcheck: %v\n", err)
		return exitInvalid
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
	fmt.Fprintf(stdout, "%d %s\n", resp.StatusCode, printable(strings.TrimSpace(string(body))))
	return exitFor(resp.StatusCode != http.StatusOK)
}

// newLogger logs to w in the text or JSON form of log/slog.
func newLogger(w io.Writer, format string, level slog.Level) *slog.Logger {
	opts := &slog.HandlerOptions{Level: level}
	if format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// ---- the HTTP front (SPEC §14) ----

// HTTP bounds (SPEC §14).
const (
	httpBodyLimit = 4 << 20
	bodyTimeout   = 10 * time.Second // for the headers, and again for the body
	drainTimeout  = 30 * time.Second
	slotGrace     = 250 * time.Millisecond
)

// requestBodies bounds the HTTP request bodies held at once, process-wide,
// charged as their bytes arrive: a caller that declares a body and sends
// nothing holds nothing.
var requestBodies = newBudget(8 << 20)

// serveHTTP serves MCP streamable HTTP at /mcp, stateless, until ctx ends,
// then drains. A configured NetBox token makes the identity shared: callers
// then present the MCP bearer token instead of their own NetBox token.
func serveHTTP(ctx context.Context, o *options, env environment, server *mcp.Server, b *bridge, logger *slog.Logger) int {
	f := newFront(server, logger, strings.FieldsFunc(o.allowedHosts, listSeparator)...)
	if b.cfgErr != nil {
		f.notReady = "not ready: " + b.cfgErr.Error()
	}
	identity := "each caller's own NetBox token"
	if b.client.auth == "" {
		if o.authFile != "" || env.getenv("NETBOX_MCP_AUTH_TOKEN") != "" {
			logger.Warn("the MCP bearer token is not used: no NetBox token is configured, so each caller must present their own NetBox token")
		}
		if strings.HasPrefix(b.client.base, "http://") && !b.client.onLoopback() {
			logger.Warn("callers' NetBox tokens go to " + b.client.base + " over plain HTTP, readable on the network; use https://")
		}
	} else {
		identity = "the configured NetBox token, for callers with the MCP bearer token"
		f.bearer = env.getenv("NETBOX_MCP_AUTH_TOKEN")
		if o.authFile != "" {
			var err error
			if f.bearer, err = secretLine(env, o.authFile); err != nil {
				return o.fail("%s: %v", o.setting("auth-token-file"), err)
			}
		}
		if f.bearer == "" || hasControl(f.bearer) {
			return o.fail("a NetBox token is configured, so every HTTP caller would act with it: set NETBOX_MCP_AUTH_TOKEN (or --auth-token-file) to the token callers must present, or leave the NetBox token out so that each caller brings their own")
		}
	}
	for _, cidr := range strings.FieldsFunc(o.trustedProxies, listSeparator) {
		prefix, err := netip.ParsePrefix(cidr)
		if addr, aerr := netip.ParseAddr(cidr); aerr == nil {
			prefix, err = addr.Prefix(addr.BitLen())
		}
		if err != nil {
			return o.fail("%s: %s is not an address or a CIDR range such as 10.0.0.0/8", o.setting("trusted-proxies"), quote(clip(cidr, 60)))
		}
		f.trusted = append(f.trusted, prefix)
	}
	var tlsConfig *tls.Config
	if o.tlsCert != "" {
		cert, err := tls.LoadX509KeyPair(o.tlsCert, o.tlsKey)
		if err != nil {
			return o.fail("%s and %s: %v", o.setting("tls-cert"), o.setting("tls-key"), err)
		}
		tlsConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	ln, err := net.Listen("tcp", o.http)
	if err != nil {
		return o.fail("%s %s: %v", o.setting("http"), o.http, err)
	}
	scheme := "http"
	if tlsConfig != nil {
		ln, scheme = tls.NewListener(ln, tlsConfig), "https"
	} else if !loopback(o.http) {
		logger.Warn("listening on " + o.http + " without TLS: tokens cross the network in clear unless TLS terminates in front")
	}
	srv := &http.Server{Handler: f, TLSConfig: tlsConfig, ReadHeaderTimeout: bodyTimeout, IdleTimeout: 120 * time.Second, ErrorLog: log.New(io.Discard, "", 0)}
	logger.Info("serving MCP over streamable HTTP", "url", scheme+"://"+ln.Addr().String()+"/mcp", "identity", identity)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		logger.Error("the HTTP server failed", "error", err)
		return exitInvalid
	case <-ctx.Done():
	}
	again, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	logger.Info("stopping: no new connections; requests in flight may finish", "within", drainTimeout.String())
	drain, cancel := context.WithTimeout(again, drainTimeout) // a second signal ends the drain at once
	defer cancel()
	if err := srv.Shutdown(drain); err == nil {
		logger.Info("stopped; every request in flight was answered")
		return exitOK
	}
	srv.Close() // cancels what remains; their calls end and write their audit records
	waited, done := context.WithTimeout(context.Background(), stopTimeout)
	go func() { b.calls.Wait(); done() }()
	<-waited.Done() // the calls still running, at most stopTimeout
	logger.Info("stopped; requests still in flight after the drain were cancelled")
	return exitOK
}

// listSeparator separates the items of a list setting (--trusted-proxies,
// --allowed-hosts): commas and white space.
func listSeparator(r rune) bool { return r == ',' || unicode.IsSpace(r) }

// onLoopback reports whether the NetBox is on this machine.
func (c *config) onLoopback() bool {
	_, hostPort, _ := strings.Cut(c.origin, "://")
	return loopback(hostPort)
}

// loopback reports whether a host, with or without its port, is reachable
// only from this machine.
func loopback(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	return host == "localhost" || net.ParseIP(strings.Trim(host, "[]")).IsLoopback() // a nil IP is not
}

// front is the HTTP front of the MCP server (SPEC §14): /healthz and
// /readyz for load balancers, and /mcp behind cross-origin protection, the
// caller's authentication and the body and in-flight bounds, each refusal
// made, with its reason, before any MCP processing or NetBox request.
// Every request gets one access-log record.
type front struct {
	mcp      http.Handler
	cop      *http.CrossOriginProtection
	bearer   string         // the MCP bearer token; "" when each caller brings their own NetBox token
	trusted  []netip.Prefix // proxies whose X-Forwarded-For names the client
	allowed  []string       // the Host names a proxy on this host may forward (--allowed-hosts)
	notReady string         // why this replica cannot serve, "" when it can
	slots    chan struct{}  // authenticated requests in flight
	logger   *slog.Logger
}

// newFront makes the front of server. The SDK's own DNS-rebinding check
// refuses every Host that is not localhost on a loopback address; with
// allowed hosts, the front's check, which allows them, is the one.
func newFront(server *mcp.Server, logger *slog.Logger, allowed ...string) *front {
	return &front{logger: logger, slots: make(chan struct{}, callsInFlight), cop: http.NewCrossOriginProtection(), allowed: allowed,
		mcp: mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server },
			&mcp.StreamableHTTPOptions{Stateless: true, MaxRequestBodyBytes: httpBodyLimit, DisableLocalhostProtection: len(allowed) > 0})}
}

func (f *front) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
	remote, peer := f.clientAddress(r)
	switch {
	case r.URL.Path == "/mcp":
		f.serveMCP(rec, r, remote, peer)
	case r.URL.Path != "/healthz" && r.URL.Path != "/readyz":
		rec.refuse(http.StatusNotFound, "not found: the MCP endpoint is /mcp")
	case r.Method != http.MethodGet && r.Method != http.MethodHead:
		rec.refuse(http.StatusMethodNotAllowed, "only GET")
	case r.URL.Path == "/readyz" && f.notReady != "":
		rec.refuse(http.StatusServiceUnavailable, f.notReady)
	case r.URL.Path == "/readyz":
		io.WriteString(rec, "ready")
	default:
		io.WriteString(rec, "ok")
	}
	attrs := []any{"kind", "access", "method", clip(r.Method, 16), "path", clip(r.URL.Path, 100), "status", rec.status,
		"duration_ms", time.Since(start).Milliseconds(), "remote", remote}
	if peer != remote {
		attrs = append(attrs, "peer", peer)
	}
	if rec.reason != "" {
		attrs = append(attrs, "error", rec.reason)
	}
	f.logger.Info("http", attrs...)
}

// serveMCP refuses what it must, reads the body within its bounds, takes a
// slot and hands the request to the SDK with the caller in its context.
func (f *front) serveMCP(w *statusRecorder, r *http.Request, remote, peer string) {
	if err := f.cop.Check(r); err != nil {
		w.refuse(http.StatusForbidden, fmt.Sprintf("cross-origin request refused: Origin %s, Sec-Fetch-Site %s (%v)",
			quote(clip(r.Header.Get("Origin"), 100)), quote(clip(r.Header.Get("Sec-Fetch-Site"), 40)), err))
		return
	}
	name := r.Host // without its port
	if host, _, err := net.SplitHostPort(r.Host); err == nil {
		name = host
	}
	if local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok && loopback(local.String()) && !loopback(r.Host) && !slices.Contains(f.allowed, name) {
		w.refuse(http.StatusForbidden, fmt.Sprintf("Host %s refused on a loopback address (DNS rebinding protection); "+
			"behind a proxy on this host that keeps the client's Host, name it in --allowed-hosts (NETBOX_MCP_ALLOWED_HOSTS)", quote(clip(r.Host, 100))))
		return
	}
	auth, why := f.authenticate(r.Header.Get("Authorization"))
	if why != "" {
		w.Header().Set("WWW-Authenticate", "Bearer")
		w.refuse(http.StatusUnauthorized, why)
		return
	}
	if r.ContentLength > httpBodyLimit {
		w.refuse(http.StatusRequestEntityTooLarge, "the request body is larger than 4 MiB")
		return
	}
	// The body is read before a slot is taken, within a deadline and the
	// process-wide budget, so that slow or large bodies hold no slot.
	http.NewResponseController(w).SetReadDeadline(time.Now().Add(bodyTimeout))
	body, held, err := readBounded(r.Body, httpBodyLimit, requestBodies, nil)
	defer requestBodies.give(held)
	switch {
	case errors.Is(err, errTooLarge):
		w.refuse(http.StatusRequestEntityTooLarge, "the request body is larger than 4 MiB")
		return
	case errors.Is(err, errBusy):
		io.Copy(io.Discard, io.LimitReader(r.Body, httpBodyLimit)) // unheld, so that the client reads the answer
		w.Header().Set("Retry-After", "1")
		w.refuse(http.StatusServiceUnavailable, "too many request bodies in flight; retry in a second")
		return
	case err != nil:
		w.refuse(http.StatusRequestTimeout, "the request body could not be read within 10 s")
		return
	case bytes.HasPrefix(bytes.TrimLeft(body, " \t\r\n"), []byte("[")):
		w.refuse(http.StatusBadRequest, "JSON-RPC batches are not accepted: send one message per request")
		return
	}
	r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
	// A request that finds every slot taken waits a moment for one: a slot
	// is given back only after the SDK has finished with a response its
	// client may already hold.
	select {
	case f.slots <- struct{}{}:
		defer func() { <-f.slots }()
	case <-time.After(slotGrace): // an unstopped timer is collected (Go 1.23)
		w.Header().Set("Retry-After", "1")
		w.refuse(http.StatusServiceUnavailable, "too many requests in flight; retry in a second")
		return
	}
	// The caller the tool handler trusts, made here only: its call ends when its HTTP request does.
	caller := httpCaller{auth: auth, remote: remote, peer: peer, ctx: r.Context()}
	f.mcp.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), callerKey{}, caller)))
}

// authenticate checks a request's Authorization (SPEC §14). It returns
// the NetBox Authorization to send on in the caller-token mode ("" for the
// shared identity), or why the request is refused.
func (f *front) authenticate(header string) (auth, why string) {
	scheme, token, _ := strings.Cut(header, " ")
	if f.bearer != "" {
		switch {
		case header == "":
			return "", "no Authorization header: send Authorization: Bearer <the MCP bearer token>"
		case !strings.EqualFold(scheme, "Bearer") || subtle.ConstantTimeCompare([]byte(token), []byte(f.bearer)) != 1:
			return "", "the Authorization is not Bearer with this server's MCP bearer token (NETBOX_MCP_AUTH_TOKEN)"
		}
		return "", ""
	}
	alnum := func(s string) bool {
		return s != "" && !strings.ContainsFunc(s, func(r rune) bool { return r >= utf8.RuneSelf || !isAlnum(byte(r)) })
	}
	key, secret, _ := strings.Cut(strings.TrimPrefix(token, "nbt_"), ".")
	v2, v1 := strings.HasPrefix(token, "nbt_") && alnum(key) && alnum(secret), len(token) == 40 && alnum(token)
	switch {
	case strings.EqualFold(scheme, "Bearer") && v2:
		return "Bearer " + token, ""
	case strings.EqualFold(scheme, "Token") && v1:
		return "Token " + token, ""
	case header == "":
		return "", "no Authorization header: send your NetBox token as Authorization: Bearer nbt_KEY.SECRET (v2) or Token V1TOKEN (v1)"
	case v2: // what the caller sent is never quoted: its first word may be a token too (SPEC §14)
		return "", "a v2 NetBox token (nbt_…) goes with the Bearer scheme: send Authorization: Bearer nbt_KEY.SECRET"
	case v1:
		return "", "a v1 NetBox token (40 letters or digits) goes with the Token scheme: send Authorization: Token V1TOKEN"
	}
	return "", "malformed Authorization: send Bearer nbt_KEY.SECRET (a v2 NetBox token) or Token V1TOKEN (a v1 token of 40 letters or digits)"
}

// clientAddress works out the request's client address, remote: the peer,
// or, when the peer is a trusted proxy, the right-most X-Forwarded-For
// address it does not trust.
func (f *front) clientAddress(r *http.Request) (remote, peer string) {
	remote, peer = r.RemoteAddr, r.RemoteAddr
	addrPort, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil || !f.trusts(addrPort.Addr()) {
		return remote, peer
	}
	for _, hop := range slices.Backward(strings.Split(strings.Join(r.Header.Values("X-Forwarded-For"), ","), ",")) {
		addr, err := netip.ParseAddr(strings.TrimSpace(hop))
		if err != nil {
			break // a forged or broken hop: trust no further
		}
		if remote = addr.String(); !f.trusts(addr) {
			break
		}
	}
	return remote, peer
}

func (f *front) trusts(addr netip.Addr) bool {
	return slices.ContainsFunc(f.trusted, func(p netip.Prefix) bool { return p.Contains(addr.Unmap()) })
}

// statusRecorder remembers a response's status, and the reason of a
// refusal, for the access log.
type statusRecorder struct {
	http.ResponseWriter
	status int
	reason string
}

func (r *statusRecorder) WriteHeader(status int) {
	r.status = status
	r.ResponseWriter.WriteHeader(status)
}

// refuse answers with status and a one-line reason, logged with the request.
func (r *statusRecorder) refuse(status int, reason string) {
	r.reason = reason
	http.Error(r, reason, status)
}

func (r *statusRecorder) Flush() { http.NewResponseController(r.ResponseWriter).Flush() }

func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// ---- metrics (SPEC §18) ----

// metrics are the process's counts for Prometheus: each series, its name
// and labels rendered, with its count. Every label value comes from a
// bounded set (the two tools, SPEC §9's codes, kinds, status classes,
// outcomes, answers), never from a caller or a plugin, so the series are
// few; a scrape reads them without a lock, and never holds up a call.
type metrics struct {
	series  sync.Map                          // rendered series → *atomic.Int64
	buckets [len(latencyBuckets)]atomic.Int64 // NetBox requests by duration, cumulative
	micros  atomic.Int64                      // their seconds, in microseconds
	bridge  *bridge
}

// metricFamilies are the metrics, in the order of a scrape.
var metricFamilies = []struct{ name, kind, help string }{
	{"tool_calls_total", "counter", "Tool calls by tool and result code: ok, or a SPEC §9 error code."},
	{"writes_total", "counter", "Calls of write tools by outcome: sent (answered 2xx), refused (by the policy, a branch rule, a human or the audit), unknown."},
	{"confirmations_total", "counter", "Questions put to a human before a write, by answer: yes, or no (declined, dismissed, unanswered, or none could be asked)."},
	{"netbox_requests_total", "counter", "NetBox requests by kind (discovery, target) and status class (2xx to 5xx, or error for no answer)."},
	{"netbox_request_seconds", "histogram", "The duration of NetBox requests."},
	{"calls_in_flight", "gauge", "Tool calls running."},
	{"body_budget_bytes_in_use", "gauge", "Bytes of the process-wide body budgets in use (SPEC §11): NetBox's answers, HTTP request bodies."},
	{"goroutines", "gauge", "Goroutines of the process."},
	{"heap_bytes", "gauge", "Bytes of the Go heap in use."},
	{"gc_cycles_total", "counter", "Garbage collections of the process."},
}

// latencyBuckets are the histogram's upper bounds, in seconds.
var latencyBuckets = [...]float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, math.Inf(1)}

// count adds one to the series of name with labels, given as names and
// values in turn.
func (m *metrics) count(name string, labels ...string) {
	series := name
	for i := 0; i+1 < len(labels); i += 2 {
		series += fmt.Sprintf("%c%s=%q", "{,"[min(i, 1)], labels[i], labels[i+1])
	}
	if len(labels) > 0 {
		series += "}"
	}
	v, _ := m.series.LoadOrStore(series, new(atomic.Int64))
	v.(*atomic.Int64).Add(1)
}

// observe counts a NetBox request: by kind and status class, and in the
// histogram.
func (m *metrics) observe(req request, status, _ int, took time.Duration) {
	kind, class := "target", "error"
	if req.allowance != nil { // a scan's: discovery
		kind = "discovery"
	}
	if status > 0 {
		class = fmt.Sprintf("%dxx", status/100)
	}
	m.count("netbox_requests_total", "kind", kind, "class", class)
	for i, le := range latencyBuckets {
		if took.Seconds() <= le {
			m.buckets[i].Add(1)
		}
	}
	m.micros.Add(took.Microseconds())
}

// ServeHTTP answers a scrape of /metrics in the text exposition format 0.0.4.
func (m *metrics) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/metrics" {
		http.NotFound(w, r)
		return
	}
	samples := map[string]int64{}
	m.series.Range(func(k, v any) bool {
		samples[k.(string)] = v.(*atomic.Int64).Load()
		return true
	})
	figures := []rtmetrics.Sample{{Name: "/sched/goroutines:goroutines"}, {Name: "/memory/classes/heap/objects:bytes"}, {Name: "/gc/cycles/total:gc-cycles"}}
	rtmetrics.Read(figures)
	for i, name := range []string{"goroutines", "heap_bytes", "gc_cycles_total"} {
		samples[name] = int64(figures[i].Value.Uint64())
	}
	samples["calls_in_flight"] = m.bridge.inFlight.Load()
	samples[`body_budget_bytes_in_use{budget="netbox"}`] = netboxBodies.size - netboxBodies.left.Load()
	samples[`body_budget_bytes_in_use{budget="requests"}`] = requestBodies.size - requestBodies.left.Load()
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	series := slices.Sorted(maps.Keys(samples))
	for _, f := range metricFamilies {
		fmt.Fprintf(w, "# HELP %[1]s%[2]s %[3]s\n# TYPE %[1]s%[2]s %[4]s\n", metricPrefix, f.name, f.help, f.kind)
		if f.kind == "histogram" { // the buckets in order, then the sum and the count
			for i, le := range latencyBuckets {
				fmt.Fprintf(w, "%s%s_bucket{le=\"%s\"} %d\n", metricPrefix, f.name, fmt.Sprint(le), m.buckets[i].Load())
			}
			fmt.Fprintf(w, "%[1]s%[2]s_sum %[3]g\n%[1]s%[2]s_count %[4]d\n", metricPrefix, f.name, float64(m.micros.Load())/1e6, m.buckets[len(m.buckets)-1].Load())
			continue
		}
		for _, s := range series {
			if name, _, _ := strings.Cut(s, "{"); name == f.name {
				fmt.Fprintf(w, "%s%s %d\n", metricPrefix, s, samples[s])
			}
		}
	}
}

// metricPrefix starts every metric's name (SPEC §18).
const metricPrefix = "netbox_plugin_bridge_"

// ---- scan ----

func runScan(o *options, stdout io.Writer, env environment) int {
	fail := func(code, msg string) int {
		fmt.Fprintf(o.stderr, "netbox-plugin-bridge scan: %s: %s\n", code, msg)
		if o.json {
			doc, _ := json.Marshal(map[string]map[string]string{"error": {"code": code, "message": msg}})
			fmt.Fprintln(stdout, string(doc))
		}
		return exitUsage
	}
	if _, _, err := loadPolicy(o); err != nil {
		return fail("config_error", err.Error())
	}
	c, ctx, stop, err := openNetBox(o, env)
	defer stop()
	if err != nil {
		return fail("config_error", err.Error())
	}
	var cat *catalog
	schemaID, branchErr := c.branchAndDiscover(ctx, callOptions{}, func() {
		if o.plugin != "" {
			cat, err = c.scanOne(ctx, o.plugin, callOptions{})
		} else {
			cat, err = c.scanAll(ctx, callOptions{})
		}
	})
	err = cmp.Or(err, branchErr)
	switch be, known := errors.AsType[*bridgeError](err); {
	case err == nil:
	case !known:
		return fail("discovery_failed", err.Error())
	case o.plugin == "" || err == branchErr || be.Code == "invalid_request" || cannotCheck(err, o.plugin):
		return fail(be.Code, be.Message) // the whole scan failed, the branch is unavailable, NetBox is unreachable or refused the token
	default:
		cat = &catalog{problems: []scanProblem{{o.plugin, be.Code, be.Message}}}
	}
	if schemaID != "" {
		fmt.Fprintf(o.stderr, "netbox-plugin-bridge scan: in NetBox branch %s, which calls select with X-NetBox-Branch: %s\n", quote(c.branch), schemaID)
	}
	if o.json {
		stdout.Write(append(catalogDocument(cat, o.plugin != ""), '\n'))
	} else {
		printCatalog(stdout, cat)
	}
	return exitFor(len(cat.problems) > 0)
}

func printCatalog(w io.Writer, cat *catalog) {
	if len(cat.tools) == 0 {
		fmt.Fprintln(w, "no tools")
	} else {
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "TOOL\tMETHOD\tEFFECT\tTITLE")
		for _, t := range cat.tools {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", t.qualifiedName(), t.tool.method, t.tool.effect, printable(t.tool.title))
		}
		tw.Flush()
	}
	if len(cat.problems) > 0 {
		fmt.Fprintf(w, "\n%d problem(s):\n", len(cat.problems))
		for _, p := range cat.problems {
			fmt.Fprintf(w, "%s: %s: %s\n", printable(p.Plugin), p.Code, printable(p.Error))
		}
	}
}

// openNetBox connects a command to its NetBox: the configuration (or the
// demo), its warnings and one line naming the NetBox and the token on
// stderr, and a context that a signal ends. stop ends both.
func openNetBox(o *options, env environment) (*client, context.Context, func(), error) {
	cfg, stopDemo, warnings, err := startConfig(o, env)
	if err != nil {
		return nil, nil, stopDemo, err
	}
	for _, w := range warnings {
		fmt.Fprintf(o.stderr, "netbox-plugin-bridge %s: warning: %s\n", o.cmd, w)
	}
	if o.demo {
		fmt.Fprintf(o.stderr, "netbox-plugin-bridge %s: the built-in demo NetBox at %s; its plugin \"broken\" is broken on purpose, to show a problem\n", o.cmd, cfg.base)
	} else {
		fmt.Fprintf(o.stderr, "netbox-plugin-bridge %s: NetBox %s, %s\n", o.cmd, cfg.base, cfg.describeToken("", ""))
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	return newClient(cfg), ctx, func() { cancel(); stopDemo() }, nil
}

// cannotCheck reports whether a discovery error of the plugin slug means
// that nothing could be checked: NetBox did not answer, or refused the
// token on the plugin root.
func cannotCheck(err error, slug string) bool {
	te, isTransport := errors.AsType[*transportError](err)
	hs, isStatus := errors.AsType[*httpStatusError](err)
	return isTransport && te.resp == nil || isStatus &&
		(hs.status == http.StatusUnauthorized || hs.status == http.StatusForbidden) && hs.path == "/api/plugins/"+slug+"/"
}

// ---- check ----

// finding is one problem of a check, with the file it was found in.
type finding struct {
	File string `json:"file,omitempty"`
	problem
}

// printFindings prints a check's problems, for check and check --plugin
// alike: as text lines (FILE:LINE:COL: LOCATION: MESSAGE, the tool's name
// beside its index) or, with --format github, as workflow annotations.
func printFindings(w io.Writer, format, level string, findings []finding) {
	for _, f := range findings {
		at, loc, message := f.File, f.Location, f.Message
		if f.Line > 0 && f.File != "" {
			at += fmt.Sprintf(":%d:%d", f.Line, f.Column)
		}
		if i := strings.Index(loc, "tools["); f.Tool != "" && i >= 0 {
			end := i + strings.IndexByte(loc[i:], ']') + 1
			loc = loc[:end] + " (" + f.Tool + ")" + loc[end:]
		}
		if format == "github" {
			data := strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A")
			property := strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A", ":", "%3A", ",", "%2C")
			where := "" // a live check's problems are in no file of the author's
			if f.File != "" {
				where = fmt.Sprintf("file=%s,line=%d,col=%d,", property.Replace(f.File), max(f.Line, 1), max(f.Column, 1))
			}
			fmt.Fprintf(w, "::%s %stitle=%s::%s\n", level, where, property.Replace(cmp.Or(loc, "manifest")), data.Replace(message))
			continue
		}
		if level == "notice" {
			message = "note: " + message
		}
		fmt.Fprintln(w, strings.TrimPrefix(at+": "+(&problem{Location: loc, Message: message}).Error(), ": "))
	}
}

// checkReport is the --json document of check and, with its tools, of
// check --plugin; notes are what the OpenAPI cross-check found that is no
// problem (SPEC §17).
type checkReport struct {
	Valid    bool       `json:"valid"`
	Problems []finding  `json:"problems"`
	Notes    []finding  `json:"notes,omitzero"`
	Tools    []liveTool `json:"tools,omitzero"`
}

// add adds what a check found in file, capped, to the report and, unless
// the report is for --json, prints it: the problems, then the notes.
func (r *checkReport) add(w io.Writer, o *options, file string, ps, notes problems) {
	n, k := len(r.Problems), len(r.Notes)
	for _, p := range ps.capped() {
		r.Problems = append(r.Problems, finding{file, p})
	}
	for _, p := range notes.capped() {
		r.Notes = append(r.Notes, finding{file, p})
	}
	if !o.json {
		printFindings(w, o.format, "error", r.Problems[n:])
		printFindings(w, o.format, "notice", r.Notes[k:])
	}
}

// printJSON prints a check's --json document, valid when it has no
// problem.
func printJSON(w io.Writer, doc checkReport) {
	doc.Valid = len(doc.Problems) == 0
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	enc.Encode(doc)
}

// runCheck is the contract check for plugin authors: offline on manifest
// files, or live with --plugin.
func runCheck(o *options, files []string, stdin io.Reader, stdout io.Writer, env environment) int {
	if _, _, err := loadPolicy(o); err != nil {
		return o.fail("%v", err) // a typo in the safety switch is loud everywhere
	}
	switch {
	case o.format != "text" && o.format != "github":
		return o.fail("--format %s is not text or github", quote(clip(o.format, 40)))
	case o.plugin != "" && (len(files) > 0 || o.tool != "" || o.response != ""):
		return o.fail("--plugin checks a plugin live: give no manifest file, --tool or --response")
	case o.plugin != "" && !slugPattern.MatchString(o.plugin):
		return o.fail("--plugin %s is not a plugin slug (%s)", quote(clip(o.plugin, 80)), slugPattern)
	case o.plugin != "":
		return runLiveCheck(o, stdin, stdout, env)
	case o.demo || o.profile != "" || o.timeout != 0 || o.given["allow-mutations"] || o.given["branch"]:
		return o.fail("--demo, --profile, --timeout, --allow-mutations and --branch go with --plugin")
	case len(files) == 0:
		return o.fail("give one or more manifest files, or - for standard input")
	case o.tool == "" && (len(o.arguments) > 0 || o.response != ""):
		return o.fail("--arguments and --response need --tool")
	case o.tool != "" && len(files) > 1:
		return o.fail("--tool checks one manifest, not %d", len(files))
	case len(o.arguments) > 1:
		return o.fail("--arguments is given %d times; give it once", len(o.arguments))
	}
	var doc *openapi
	if o.openapi != "" {
		var err error
		if doc, err = loadOpenAPI(context.Background(), nil, o.openapi); err != nil {
			return o.fail("--openapi %v", err)
		}
	}
	report := checkReport{Problems: []finding{}}
	unreadable := false
	for _, file := range files {
		var m *manifest
		// ps are the file's problems; notes, the cross-check's.
		var ps, notes problems
		if data, err := readDocument(file, manifestLimits.bytes, stdin); err != nil { // reported among the others; the rest are checked
			ps.add("", "cannot read: %s", strings.TrimPrefix(err.Error(), file+": "))
			unreadable = true
		} else {
			m, ps = parseManifest(data)
		}
		checked := "manifest"
		if m != nil && o.tool != "" {
			t := m.tool(o.tool)
			if t == nil {
				var names []string
				for _, t := range m.tools {
					names = append(names, t.name)
				}
				return o.fail("%s has no tool %s; its tools are %s", file, quote(o.tool), strings.Join(names, ", "))
			}
			for _, given := range []struct {
				name, value string
				schema      *schema
			}{{"arguments", strings.Join(o.arguments, ""), t.input}, {"response", o.response, t.output}} {
				if given.value == "" {
					continue
				}
				data, err := documentArgument("--"+given.name, given.value, stdin)
				if err != nil {
					return o.fail("%v", err)
				}
				if err := given.schema.validateBytes(data, instanceLimits, given.name); err != nil {
					ps.addErr(err)
				}
				checked += fmt.Sprintf("; %s for %s", given.name, o.tool)
			}
		}
		if m != nil && doc != nil {
			for _, t := range m.tools {
				crossCheckTool(doc, m.plugin, t, &ps, &notes)
			}
			checked += "; each tool against NetBox's API schema"
		}
		report.add(stdout, o, file, ps, notes)
		if len(ps) == 0 && !o.json {
			fmt.Fprintf(stdout, "%s: valid (%s)\n", file, checked)
		}
	}
	if o.json {
		printJSON(stdout, report)
	}
	if unreadable {
		return exitUsage
	}
	return exitFor(len(report.Problems) > 0)
}

// readDocument reads a document to check: a file, or standard input for -.
func readDocument(path string, limit int, stdin io.Reader) ([]byte, error) {
	if path == "-" {
		return io.ReadAll(io.LimitReader(stdin, int64(limit)+1))
	}
	return readFile(path, limit, false)
}

// documentArgument reads the value of --arguments or --response: JSON, or
// @FILE.
func documentArgument(flagName, value string, stdin io.Reader) ([]byte, error) {
	if path, ok := strings.CutPrefix(value, "@"); ok {
		data, err := readDocument(path, instanceLimits.bytes, stdin)
		if err != nil {
			return nil, fmt.Errorf("%s: cannot read %v", flagName, err)
		}
		return data, nil
	}
	if !json.Valid([]byte(value)) {
		if info, err := os.Stat(value); err == nil && info.Mode().IsRegular() {
			return nil, fmt.Errorf("%s %s is not JSON, but names a file: did you mean @%[2]s?", flagName, value)
		}
	}
	return []byte(value), nil
}

// ---- check --plugin (SPEC §15) ----

// liveTool is the summary of one tool in a live check.
type liveTool struct {
	Name   string `json:"name"`
	Effect string `json:"effect"`
	Called bool   `json:"called"`
	Status *int   `json:"status"`
	note   string
}

// runLiveCheck checks one plugin on the configured NetBox from outside, as
// the bridge v1 author checklist asks, and never sends a write: its
// advertisement, its manifest, that each read refuses a caller without a
// token, and each read's answer.
func runLiveCheck(o *options, stdin io.Reader, stdout io.Writer, env environment) int {
	given := map[string]string{}
	for _, a := range o.arguments {
		name, value, ok := strings.Cut(a, "=")
		if !ok || name == "" {
			return o.fail("--arguments %s: give TOOL=JSON or TOOL=@FILE", quote(clip(a, 60)))
		}
		data, err := documentArgument("--arguments "+name, value, stdin)
		if err != nil {
			return o.fail("%v", err)
		}
		given[name] = string(data)
	}
	c, ctx, stop, err := openNetBox(o, env)
	defer stop()
	if err != nil {
		return o.fail("%v", err)
	}
	var m *manifest
	var rootErr, manifestErr error
	schemaID, branchErr := c.branchAndDiscover(ctx, callOptions{}, func() { m, rootErr, manifestErr = c.fetchSelected(ctx, o.plugin, callOptions{}) })
	var ps, notes problems // notes: what the OpenAPI cross-check found that is no problem
	me, manifestBroken := errors.AsType[*manifestError](manifestErr)
	switch {
	case cannotCheck(rootErr, o.plugin):
		fmt.Fprintf(o.stderr, "netbox-plugin-bridge check: %v\n", rootErr)
		return exitUsage // nothing could be checked: NetBox unreachable, or the token refused
	case rootErr != nil || errors.Is(manifestErr, errOtherPlugin): // the root's, or a manifest of another plugin
		ps.add("advertisement", "%v", cmp.Or(rootErr, manifestErr))
	case manifestBroken:
		for _, p := range me.ps {
			p.Location = strings.TrimSuffix("manifest."+p.Location, ".")
			ps.put(p)
		}
	case manifestErr != nil:
		ps.add("manifest", "%v", manifestErr)
	case branchErr != nil:
		fmt.Fprintf(o.stderr, "netbox-plugin-bridge check: %v\n", branchErr)
		return exitUsage
	}
	tools := []liveTool{}
	if len(ps) == 0 {
		cat := &catalog{plugin: o.plugin}
		cat.add(o.plugin, m)
		for name := range given {
			if _, err := cat.find(name); err != nil {
				return o.fail("--arguments %s: %v", name, err)
			}
		}
		for _, ct := range cat.tools {
			tools = append(tools, checkLiveTool(ctx, c, ct, given, schemaID, &ps))
		}
		// The serializers (SPEC §17): NetBox may have its schema endpoint off.
		switch doc, err := loadOpenAPI(ctx, c, o.openapi); {
		case err != nil && o.openapi != "":
			return o.fail("--openapi %v", err)
		case err != nil:
			notes.add("openapi", "NetBox's API schema could not be read, so no tool was compared with its serializer: %v", err)
		default:
			for _, ct := range cat.tools {
				crossCheckTool(doc, o.plugin, ct.tool, &ps, &notes)
			}
		}
	}
	for i := range ps {
		ps[i].Line, ps[i].Column = 0, 0 // a place in no file of the author's
		if o.json {
			ps[i].Tool = "" // SPEC §15: location and message
		}
	}
	report := checkReport{Problems: []finding{}, Tools: tools}
	report.add(stdout, o, "", ps, notes)
	if o.json {
		printJSON(stdout, report)
	} else {
		reads, writes := 0, 0
		for _, t := range tools {
			if t.Called {
				reads++
			} else if t.Effect != "read" {
				writes++
			}
			fmt.Fprintf(stdout, "%s (%s): %s\n", t.Name, t.Effect, t.note)
		}
		verdict := "valid"
		if len(ps) > 0 {
			verdict = fmt.Sprintf("invalid, %d problem(s)", len(ps))
		}
		fmt.Fprintf(stdout, "%s: %s — %d tools, %d read(s) called, %d write(s) as dry runs\n", o.plugin, verdict, len(tools), reads, writes)
	}
	return exitFor(len(ps) > 0)
}

// checkLiveTool checks one tool live: a read is probed without a token and
// called with its arguments, its answer classified as a call's would be; a
// write is shown as its dry run, never sent.
func checkLiveTool(ctx context.Context, c *client, ct catalogTool, given map[string]string, schemaID string, ps *problems) liveTool {
	t := ct.tool
	lt := liveTool{Name: t.name, Effect: t.effect}
	at := "tools." + t.name
	args, hasArgs := given[t.name]
	if !hasArgs {
		args = "{}"
	}
	err := t.input.validateBytes([]byte(args), instanceLimits, at+".arguments")
	switch {
	case err != nil && hasArgs:
		ps.addErr(err)
		lt.note = "not called: its --arguments are invalid"
		return lt
	case t.effect != "read":
		lt.note = fmt.Sprintf("not sent; its dry run: %s %s", t.method, ct.requestPath)
		if schemaID != "" {
			lt.note += " with X-NetBox-Branch: " + schemaID
		}
		return lt
	case err != nil:
		lt.note = fmt.Sprintf("not called: it needs arguments; give --arguments %s=JSON", t.name)
		return lt
	}
	p, _ := prepare(ct, decodeChecked([]byte(args)), callOptions{}, schemaID)
	anon := p.req // without arguments, args is {}: no query
	anon.anon = true
	if resp, err := c.do(ctx, anon); resp == nil {
		ps.add(at+".anonymous", "%v", err)
	} else if resp.release(); resp.status >= 200 && resp.status <= 299 {
		ps.add(at+".anonymous", "answered %d without a NetBox token; the target view must enforce NetBox permissions", resp.status)
	} else if resp.status != http.StatusUnauthorized && resp.status != http.StatusForbidden {
		ps.add(at+".anonymous", "answered %d; expected 401 or 403 without a token", resp.status)
	}
	_, resp, err := c.send(ctx, p)
	switch invalid, breaksOutput := errors.AsType[*problem](err); {
	case resp == nil:
		ps.add(at+".response", "%v", err)
		lt.note = "called: no answer"
		return lt
	case resp.status < 200 || resp.status > 299:
		var body value // the answer's body, when it was strict JSON
		if be, ok := errors.AsType[*bridgeError](err); ok {
			body, _ = decode(be.Body, instanceLimits)
		}
		ps.add(at+".response", "answered %d%s", resp.status, detail(body))
	case breaksOutput: // the body against the outputSchema
		invalid.Location = at + ".response" + strings.TrimPrefix(invalid.Location, "body")
		ps.put(*invalid)
	case err != nil:
		ps.add(at+".response", "%v", err)
	}
	lt.Called, lt.Status, lt.note = true, &resp.status, fmt.Sprintf("called: %d", resp.status)
	return lt
}

// ---- the OpenAPI schema and its converter (SPEC §17) ----

// openapi is NetBox's OpenAPI 3 document (drf-spectacular's), read once a
// run. It is checked whole by the strict decoder within openapiLimits, then
// kept as raw bytes: a path item or a component schema is decoded when it
// is first used, so that a 20 MB document never becomes one tree.
type openapi struct {
	paths   map[string][]byte // path item by path from /api/ on (a BASE_PATH cut off)
	schemas map[string][]byte // component schema by name
	decoded map[string]value  // the component schemas decoded so far
}

// readOpenAPI checks data as an OpenAPI document and indexes it.
func readOpenAPI(data []byte) (*openapi, error) {
	if _, err := scanDocument(data, openapiLimits, nil, "", nil); err != nil {
		return nil, fmt.Errorf("the API schema is not one strict JSON document within %d MiB: %v", openapiLimits.bytes>>20, err)
	}
	o := &openapi{paths: map[string][]byte{}, schemas: map[string][]byte{}, decoded: map[string]value{}}
	members(memberBytes(data, "paths"), func(path string, item []byte) {
		if i := strings.Index(path, "/api/"); i >= 0 {
			o.paths[path[i:]] = item
		}
	})
	members(memberBytes(memberBytes(data, "components"), "schemas"), func(name string, s []byte) { o.schemas[name] = s })
	if len(o.paths) == 0 {
		return nil, errors.New("the API schema has no paths under /api/: is it NetBox's OpenAPI document?")
	}
	return o, nil
}

// memberBytes is the raw value of the member key of a checked object, nil
// when it has none.
func memberBytes(data []byte, key string) (raw []byte) {
	members(data, func(k string, v []byte) {
		if k == key {
			raw = v
		}
	})
	return raw
}

// loadOpenAPI reads the OpenAPI document of --openapi FILE, or else
// NetBox's own at /api/schema/, with a body budget of its own.
func loadOpenAPI(ctx context.Context, c *client, file string) (*openapi, error) {
	if file != "" {
		data, err := readFile(file, openapiLimits.bytes, false)
		if err != nil {
			return nil, err
		}
		return readOpenAPI(data)
	}
	resp, err := c.do(ctx, request{method: http.MethodGet, path: "/api/schema/", query: "format=json", limit: openapiLimits.bytes,
		held: newBudget(int64(openapiLimits.bytes) + 1)})
	if err != nil {
		return nil, fmt.Errorf("GET %s/api/schema/: %v", c.base, err)
	}
	defer resp.release()
	if resp.status != http.StatusOK {
		return nil, fmt.Errorf("GET %s/api/schema/?format=json: HTTP %d", c.base, resp.status)
	}
	return readOpenAPI(resp.body)
}

// operation is the operation of method at path, if the document has it;
// a path item over openapiPartLimits is an error.
func (o *openapi) operation(path, method string) (op value, found bool, err error) {
	raw, found := o.paths[path]
	if found {
		var item value
		item, err = decode(raw, openapiPartLimits)
		op, found = item.get(strings.ToLower(method))
	}
	return op, found, err
}

// converter turns drf-spectacular's OpenAPI 3.0 schemas into the bridge-v1
// subset (SPEC §5, §17): $refs inlined, nullable as a type union, OpenAPI
// 3.0's boolean exclusive bounds as numbers, the combinators NetBox writes
// read as what they stand for, and every other keyword dropped and noted.
type converter struct {
	*openapi
	dropped []string // "location: keyword", for draft's comments
	left    int      // the schemas it may still convert, of convertSchemas
}

// convertDepth bounds the nesting of one conversion: deeper is a hostile
// document, or $refs that never end. convertSchemas bounds the schemas one
// tool's conversion visits: $refs shared at every level would inline into
// billions without a loop or a deep one.
const (
	convertDepth   = 32
	convertSchemas = 1 << 14
)

// combinators are the combining keywords drf-spectacular writes.
var combinators = []string{"allOf", "oneOf", "anyOf"}

// keptKeywords are the subset's keywords (SPEC §5) that OpenAPI 3.0 writes
// the same way, kept as they are.
var keptKeywords = []string{"type", "enum", "const", "required", "minItems", "maxItems", "minLength", "maxLength", "minProperties", "maxProperties",
	"multipleOf", "exclusiveMinimum", "exclusiveMaximum", "title", "description", "default", "deprecated", "readOnly", "writeOnly"}

func (c *converter) convert(v value, at string, depth int, refs []string) (value, error) {
	c.left--
	switch {
	case depth > convertDepth:
		return value{}, fmt.Errorf("%s: nested deeper than %d schemas", at, convertDepth)
	case c.left < 0:
		return value{}, fmt.Errorf("%s: its $refs inline to more than %d schemas", at, convertSchemas)
	case v.kind == kindBool:
		return v, nil
	case v.kind != kindObject:
		return value{}, fmt.Errorf("%s: a schema must be an object", at)
	}
	if ref, ok := v.get("$ref"); ok { // #/components/schemas/NAME, inlined
		name, local := strings.CutPrefix(ref.s, "#/components/schemas/")
		raw, found := c.schemas[name]
		switch {
		case !local || !found:
			return value{}, fmt.Errorf("%s: $ref %s points to no schema of the document", at, quote(clip(ref.s, 100)))
		case slices.Contains(refs, name):
			return value{}, fmt.Errorf("%s: $ref loop %s", at, strings.Join(append(refs, name), " → "))
		}
		if _, ok := c.decoded[name]; !ok {
			v, err := decode(raw, openapiPartLimits)
			if err != nil {
				return value{}, fmt.Errorf("%s: $ref %s: %v", at, quote(clip(ref.s, 100)), err)
			}
			c.decoded[name] = v
		}
		return c.convert(c.decoded[name], at, depth+1, append(refs, name))
	}
	out := value{kind: kindObject, obj: []member{}}
	var err error
	for _, k := range combinators {
		if list, ok := v.get(k); ok && err == nil {
			out, err = c.combine(k, list, at, depth, refs)
		}
	}
	for _, m := range v.obj {
		key, val := m.key, m.val
		switch {
		case key == "properties":
			props := value{kind: kindObject, obj: []member{}}
			for _, p := range val.obj {
				s, perr := c.convert(p.val, child(child(at, "properties"), p.key), depth+1, refs)
				props.obj, err = append(props.obj, member{p.key, s}), cmp.Or(err, perr)
			}
			val = props
		case key == "items" || key == "additionalProperties" && val.kind == kindObject:
			val, err = c.convert(val, child(at, key), depth+1, refs)
		case key == "minimum" || key == "maximum": // OpenAPI 3.0 {minimum: 0, exclusiveMinimum: true}: Draft 2020-12 {exclusiveMinimum: 0}
			if flag, _ := v.get("exclusiveM" + key[1:]); flag.b {
				key = "exclusiveM" + key[1:]
			}
		case strings.HasPrefix(key, "exclusiveM") && val.kind == kindBool, key == "nullable", slices.Contains(combinators, key), strings.HasPrefix(key, "x-"):
			continue // read above, or an extension that says nothing of the value
		case key == "format" && val.s == "date-time", slices.Contains(keptKeywords, key):
		default:
			c.dropped = append(c.dropped, child(at, key))
			continue
		}
		out = set(out, key, val)
	}
	if nullable, _ := v.get("nullable"); !nullable.b {
		return out, err
	}
	if t, ok := out.get("type"); ok && typesOf(out)&typeNull == 0 {
		types := t.arr
		if t.kind == kindString {
			types = []value{t}
		}
		out = set(out, "type", value{kind: kindArray, arr: append(slices.Clone(types), stringValue("null"))})
	}
	if e, ok := out.get("enum"); ok && !slices.ContainsFunc(e.arr, func(e value) bool { return e.kind == kindNull }) {
		out = set(out, "enum", value{kind: kindArray, arr: append(slices.Clone(e.arr), value{})})
	}
	return out, err
}

// combine reads the combinators drf-spectacular writes as what they stand
// for: a one-member allOf as its member (the wrapper's own keywords then
// apply); a bulk body [X, array of X] as X; a related object [id, nested
// object] as the integer id; members of one scalar type as that type, with
// the loosest of their bounds. Anything else is noted and accepts any value.
func (c *converter) combine(k string, list value, at string, depth int, refs []string) (value, error) {
	integer := slices.IndexFunc(list.arr, func(m value) bool { t, _ := m.get("type"); return t.s == "integer" })
	switch n := len(list.arr); {
	case n == 1:
		return c.convert(list.arr[0], at, depth+1, refs)
	case n == 2 && equal(list.arr[1], value{kind: kindObject, obj: []member{{"type", stringValue("array")}, {"items", list.arr[0]}}}):
		return c.convert(list.arr[0], at, depth+1, refs)
	case n == 2 && k != "allOf" && integer >= 0 && objectSchema(list.arr[1-integer]): // a related object: its id, or the object
		return c.convert(list.arr[integer], at, depth+1, refs)
	}
	var conv []value
	for _, m := range list.arr {
		s, err := c.convert(m, at, depth+1, refs)
		if err != nil {
			return value{}, err
		}
		conv = append(conv, s)
	}
	one := func(s value) bool { // of the first member's scalar type
		t, _ := s.get("type")
		first, _ := conv[0].get("type")
		return t.kind == kindString && t.s == first.s && t.s != "object" && t.s != "array"
	}
	if k == "allOf" || len(conv) == 0 || slices.ContainsFunc(conv, func(s value) bool { return !one(s) }) {
		c.dropped = append(c.dropped, child(at, k))
		return value{kind: kindObject, obj: []member{}}, nil
	}
	t, _ := conv[0].get("type")
	merged := value{kind: kindObject, obj: []member{{"type", t}}}
	for _, kw := range [...]string{"minLength", "maxLength", "minItems", "maxItems", "minimum", "maximum"} {
		var loosest value // a bound every member has: the least of the least, the most of the most
		for _, s := range conv {
			b, ok := s.get(kw)
			if !ok {
				loosest = value{}
				break
			}
			if loosest.kind == kindNull || exact(b.s).Cmp(exact(loosest.s)) == map[bool]int{true: -1, false: 1}[strings.HasPrefix(kw, "min")] {
				loosest = b
			}
		}
		if loosest.kind == kindNumber {
			merged = set(merged, kw, loosest)
		}
	}
	return merged, nil
}

// objectSchema reports whether an OpenAPI schema is an object's: a $ref,
// an allOf (drf-spectacular wraps a nullable $ref in one) or type object.
func objectSchema(v value) bool {
	_, ref := v.get("$ref")
	_, wrapped := v.get("allOf")
	return ref || wrapped || typesOf(v) == typeObject
}

// set puts key: val into the object v, which this file built, in place of
// a member of that key.
func set(v value, key string, val value) value {
	if i := slices.IndexFunc(v.obj, func(m member) bool { return m.key == key }); i >= 0 {
		v.obj[i].val = val
		return v
	}
	v.obj = append(v.obj, member{key, val})
	return v
}

// request is the serializer side of an operation's input, converted: a
// write's application/json request body, or a read's query parameters as
// the properties of an object; null when a write declares no JSON body.
func (c *converter) request(op value, method, at string) (value, error) {
	if method != http.MethodGet && method != http.MethodHead {
		body, _ := op.get("requestBody")
		content, _ := body.get("content")
		json, found := content.get("application/json")
		if !found {
			return value{}, nil
		}
		s, _ := json.get("schema")
		return c.convert(s, at, 0, nil)
	}
	params, _ := op.get("parameters")
	props, required := value{kind: kindObject, obj: []member{}}, value{kind: kindArray, arr: []value{}}
	for _, p := range params.arr {
		in, _ := p.get("in")
		name, _ := p.get("name")
		schema, _ := p.get("schema")
		if in.s != "query" || name.kind != kindString {
			continue
		}
		s, err := c.convert(schema, child(child(at, "properties"), name.s), 1, nil)
		if err != nil {
			return value{}, err
		}
		if d, ok := p.get("description"); ok && d.kind == kindString {
			s = set(s, "description", d)
		}
		props.obj = append(props.obj, member{name.s, s})
		if r, _ := p.get("required"); r.b {
			required.arr = append(required.arr, name)
		}
	}
	return value{kind: kindObject, obj: []member{{"type", stringValue("object")}, {"properties", props}, {"required", required}}}, nil
}

// response is the schema of an operation's first 2xx application/json
// answer, converted; null when it has none.
func (c *converter) response(op value, at string) (value, error) {
	responses, _ := op.get("responses")
	for _, r := range responses.obj {
		content, _ := r.val.get("content")
		if json, found := content.get("application/json"); found && len(r.key) == 3 && r.key[0] == '2' {
			s, _ := json.get("schema")
			return c.convert(s, at, 0, nil)
		}
	}
	return value{}, nil
}

// ---- the serializer cross-check, and draft (SPEC §17) ----

// crossCheckTool compares a tool with NetBox's operation at its path and
// method (SPEC §17): the request body or the query parameters with its
// inputSchema, the answer with its outputSchema. Problems and notes are
// located at tools.<name>.openapi.
func crossCheckTool(o *openapi, slug string, t *tool, ps, notes *problems) {
	at, path := "tools."+t.name+".openapi", "/api/plugins/"+slug+"/"+t.path
	op, found, err := o.operation(path, t.method)
	if !found && err == nil && t.method == http.MethodHead { // drf-spectacular writes GET only: HEAD answers as GET does
		op, found, err = o.operation(path, http.MethodGet)
	}
	switch {
	case err != nil:
		notes.add(at, "NetBox's API schema of %s could not be read, so the tool was not compared: %v", path, err)
		return
	case !found:
		ps.add(at, "NetBox's API schema has no %s %s", t.method, path)
		return
	}
	descriptor := decodeChecked(t.descriptor)
	input, _ := descriptor.get("inputSchema")
	output, _ := descriptor.get("outputSchema")
	c := &converter{openapi: o, left: convertSchemas}
	in, err := c.request(op, t.method, at)
	switch {
	case err != nil:
		notes.add(at, "the serializer could not be read, so the input was not compared: %v", err)
	case in.kind == kindNull:
		notes.add(at, "NetBox's API schema declares no JSON request body for %s %s, so the input was not compared", t.method, path)
	default:
		crossCheck(input, in, at, false, t.method == http.MethodGet || t.method == http.MethodHead, ps, notes)
	}
	out, err := c.response(op, at+".response")
	if props, _ := out.get("properties"); err == nil && len(props.obj) > 0 && output.kind == kindObject {
		crossCheck(output, out, at+".response", true, false, ps, notes)
	}
}

// The bounds crossCheck compares, each one bound however written: a
// number's lower bound is minimum or exclusiveMinimum, whichever is the
// stricter.
var boundKeywords = [][]string{{"minLength"}, {"minItems"}, {"minProperties"}, {"minimum", "exclusiveMinimum"},
	{"maxLength"}, {"maxItems"}, {"maxProperties"}, {"maximum", "exclusiveMaximum"}}

// crossCheck compares the manifest's schema m with the serializer's s, both
// in the subset, at loc. An input must not allow what the serializer
// refuses: a type, enum member or bound it refuses, a property it does not
// know, or leaving out one it requires. An answer must accept what the
// serializer answers: each of its types and enum members, and no property
// it never has. What is only stricter than the serializer, and the
// serializer fields the manifest leaves out, are notes. query: s's
// properties are query parameters, where an array takes one value too.
func crossCheck(m, s value, loc string, answer, query bool, ps, notes *problems) {
	side := map[bool]string{false: "takes", true: "answers"}[answer]
	narrow, wide := typesOf(m), typesOf(s)
	if answer {
		narrow, wide = wide, narrow
	}
	if wide != 0 && (narrow == 0 || narrow&^(wide|wide&typeNumber>>1) != 0) { // an integer is a number
		ps.add(loc, "the manifest has type %s; the serializer %s %s", cmp.Or(typesOf(m).String(), "any"), side, cmp.Or(typesOf(s).String(), "any"))
	}
	in, of := enumOf(m), enumOf(s)
	if answer {
		in, of = of, in
	}
	if of.kind == kindArray && (in.kind != kindArray || slices.ContainsFunc(in.arr, func(e value) bool { return !slices.ContainsFunc(of.arr, func(f value) bool { return equal(e, f) }) })) {
		ps.add(loc, "the manifest has enum %s; the serializer %s %s", clip(string(encode(enumOf(m))), clipLimit), side, clip(string(encode(enumOf(s))), clipLimit))
	}
	for _, kws := range boundKeywords {
		lower := strings.HasPrefix(kws[0], "min")
		mk, mb := boundOf(m, kws, lower)
		sk, sb := boundOf(s, kws, lower)
		show := func(k, n string) string { // "none", "10" or "exclusiveMinimum 0"
			return cmp.Or(strings.TrimPrefix(strings.TrimSpace(k+" "+n), kws[0]+" "), "none")
		}
		msg := fmt.Sprintf("%s: the manifest has %s; the serializer %s %s", kws[0], show(mk, mb), side, show(sk, sb))
		switch order := stricter(mk, mb, sk, sb, lower); { // > 0: the manifest's
		case order < 0 && !answer, order > 0 && answer && sk != "": // an input the serializer refuses; an answer it allows the manifest refuses
			ps.add(loc, "%s", msg)
		case order > 0:
			notes.add(loc, "%s (the manifest is stricter)", msg)
		}
	}
	mp, _ := m.get("properties")
	sp, named := s.get("properties")
	var left []string
	for _, p := range sp.obj {
		if _, found := mp.get(p.key); !found {
			left = append(left, p.key)
		}
	}
	closed, _ := m.get("additionalProperties")
	switch fields := clip(strings.Join(left, ", "), problemClip); {
	case len(left) > 0 && answer && closed.kind == kindBool && !closed.b:
		ps.add(loc, "additionalProperties false refuses %d of the fields the serializer answers: %s", len(left), fields)
	case len(left) > 0:
		notes.add(loc, "the manifest leaves out %d of the serializer's fields: %s", len(left), fields)
	}
	for _, p := range mp.obj {
		sv, found := sp.get(p.key)
		switch items, _ := sv.get("items"); {
		case !named: // the serializer names no fields
		case !found:
			ps.add(child(loc, p.key), "the serializer %s no property %s", side, quote(p.key))
		case query && typesOf(sv) == typeArray && typesOf(p.val)&typeArray == 0:
			crossCheck(p.val, items, child(loc, p.key), answer, false, ps, notes)
		default:
			crossCheck(p.val, sv, child(loc, p.key), answer, false, ps, notes)
		}
	}
	mr, _ := m.get("required")
	sr, _ := s.get("required")
	lacks := func(list value, r value) bool {
		return !slices.ContainsFunc(list.arr, func(e value) bool { return e.s == r.s })
	}
	for _, r := range sr.arr {
		if !answer && lacks(mr, r) {
			ps.add(child(loc, r.s), "the serializer requires it; the manifest does not")
		}
	}
	for _, r := range mr.arr { // a note: DRF answers every field, required by the schema or not
		if answer && named && lacks(sr, r) {
			notes.add(child(loc, r.s), "the manifest requires it; the serializer's schema does not say it always answers it")
		}
	}
	mi, hasM := m.get("items")
	si, hasS := s.get("items")
	if hasM && hasS {
		crossCheck(mi, si, loc+"[]", answer, false, ps, notes)
	}
}

// boundOf is v's strictest bound written with one of kws: the keyword
// and its number, "" for none.
func boundOf(v value, kws []string, lower bool) (kw, n string) {
	for _, k := range kws {
		if b, ok := v.get(k); ok && b.kind == kindNumber && stricter(k, b.s, kw, n, lower) > 0 {
			kw, n = k, b.s
		}
	}
	return kw, n
}

// stricter compares bound a (keyword ak, "" for none) with bound b: > 0
// when a is the stricter. No bound is the loosest; a greater lower bound or
// a lesser upper one is stricter, and at one number an exclusive one.
func stricter(ak, a, bk, b string, lower bool) int {
	if ak == "" || bk == "" {
		return cmp.Compare(len(ak), 0) - cmp.Compare(len(bk), 0)
	}
	c := exact(a).Cmp(exact(b))
	if !lower {
		c = -c
	}
	return cmp.Or(c, cmp.Compare(strings.Count(ak, "exclusive"), strings.Count(bk, "exclusive")))
}

// typesOf is the types a schema value declares, 0 for any.
func typesOf(v value) typeMask {
	t, _ := v.get("type")
	var mask typeMask
	for _, name := range append(t.arr, t) {
		if i := slices.Index(typeNames[:], name.s); i >= 0 && name.kind == kindString {
			mask |= 1 << i
		}
	}
	return mask
}

// enumOf is what a schema value's enum or const allows, as an array; null
// for any value.
func enumOf(v value) value {
	if c, ok := v.get("const"); ok {
		return value{kind: kindArray, arr: []value{c}}
	}
	e, _ := v.get("enum")
	return e
}

// runDraft prints a bridge-v1 manifest drafted from NetBox's OpenAPI schema
// for the --operation METHOD PATH of a plugin, or, without one, lists the
// operations it can draft (SPEC §17). Comments on what could not be
// carried over go to stderr; an operation v1 cannot express is refused, and
// the others still drafted, with exit 1.
func runDraft(o *options, stdout io.Writer, env environment) int {
	if !slugPattern.MatchString(o.plugin) {
		return o.fail("--plugin %s: give the plugin's slug, as in /api/plugins/<slug>/", quote(clip(o.plugin, 80)))
	}
	doc, stop, err := openOpenAPI(o, env)
	defer stop()
	if err != nil {
		return o.fail("%v", err)
	}
	prefix := "/api/plugins/" + o.plugin + "/"
	if len(o.operations) == 0 {
		for _, path := range slices.Sorted(maps.Keys(doc.paths)) {
			rel, ours := strings.CutPrefix(path, prefix)
			for _, method := range slices.Sorted(maps.Keys(methodEffects)) {
				if _, _, err := draftTool(doc, o.plugin, method, rel, map[string]bool{}); ours && err == nil {
					fmt.Fprintf(stdout, "%s %s\n", method, rel)
				}
			}
		}
		return exitOK
	}
	var tools []string
	taken := map[string]bool{}
	for _, op := range o.operations {
		method, rel, _ := strings.Cut(strings.TrimSpace(op), " ")
		tool, comments, err := draftTool(doc, o.plugin, strings.ToUpper(method), strings.TrimPrefix(strings.TrimSpace(rel), prefix), taken)
		for _, c := range comments {
			fmt.Fprintf(o.stderr, "netbox-plugin-bridge draft: %s: %s\n", op, c)
		}
		if err != nil {
			fmt.Fprintf(o.stderr, "netbox-plugin-bridge draft: %s is not drafted: %v\n", op, err)
		} else {
			tools = append(tools, tool)
		}
	}
	manifest := fmt.Appendf(nil, `{"schema_version":"1","plugin":%q,"tools":[%s]}`, o.plugin, strings.Join(tools, ","))
	if _, ps := parseManifest(manifest); len(ps) > 0 && len(tools) > 0 {
		fmt.Fprintf(o.stderr, "netbox-plugin-bridge draft: the drafted manifest breaks a rule, %v: draft fewer operations at once\n", &ps[0])
		return exitInvalid
	} else if len(tools) == 0 {
		return exitInvalid
	}
	var out bytes.Buffer
	json.Indent(&out, manifest, "", "  ")
	fmt.Fprintln(stdout, out.String())
	return exitFor(len(tools) < len(o.operations))
}

// openOpenAPI reads the OpenAPI document for draft: --openapi FILE, or the
// configured NetBox's.
func openOpenAPI(o *options, env environment) (*openapi, func(), error) {
	if o.openapi != "" {
		doc, err := loadOpenAPI(context.Background(), nil, o.openapi)
		return doc, func() {}, err
	}
	c, ctx, stop, err := openNetBox(o, env)
	if err != nil {
		return nil, stop, err
	}
	doc, err := loadOpenAPI(ctx, c, "")
	return doc, stop, err
}

// draftTool drafts the descriptor of one operation, as JSON: effect and
// annotations from the method, the name from the operationId, title and
// description from its summary and description (else a TODO), the input
// from its JSON body or query parameters, the output from its first 2xx
// answer, each within SPEC §4 and §5's bounds; and comments on what it left
// out.
func draftTool(o *openapi, slug, method, rel string, taken map[string]bool) (tool string, comments []string, err error) {
	op, found, err := o.operation("/api/plugins/"+slug+"/"+rel, method)
	switch {
	case strings.ContainsAny(rel, "{}"):
		return "", nil, errors.New("its path is templated: a bridge-v1 tool has a fixed path")
	case err != nil:
		return "", nil, err
	case !found:
		return "", nil, fmt.Errorf("NetBox's API schema has no %s /api/plugins/%s/%s", method, slug, rel)
	case methodEffects[method] == nil || checkToolPath(rel) != nil:
		return "", nil, errors.New("bridge v1 has no such method or path")
	}
	c := &converter{openapi: o, left: convertSchemas}
	in, err := c.request(op, method, "inputSchema")
	if t, _ := in.get("type"); err == nil && in.kind != kindNull && t.s != "object" {
		err = errors.New("its request body is not a JSON object (NetBox's bulk operations take arrays)")
	}
	if err != nil {
		return "", nil, err
	}
	if in.kind == kindNull { // a write that declares no body
		in = value{kind: kindObject, obj: []member{}}
	}
	in = set(set(in, "type", stringValue("object")), "additionalProperties", value{kind: kindBool})
	props, _ := in.get("properties")
	required, _ := in.get("required")
	all, left := props.obj, 0
	fit := func(drop func(i int, m member) bool) (ps problems) { // keeps every parameter drop does not name, and the required
		var kept []member
		for i, m := range all {
			if !drop(i, m) || slices.ContainsFunc(required.arr, func(r value) bool { return r.s == m.key }) {
				kept = append(kept, m)
			}
		}
		in, left = set(in, "properties", value{kind: kindObject, obj: kept}), len(all)-len(kept)
		ps.checkInputSchema(in, "inputSchema", method)
		return ps
	}
	ps := fit(func(int, member) bool { return false })
	if first := ps; len(ps) > 0 && (method == http.MethodGet || method == http.MethodHead) {
		// A query's parameters that the rules refuse go; then, while it is
		// too large, the lookups (name__ic); then the most of the first
		// parameters that fit, found by halving.
		refused := func(_ int, m member) bool {
			return slices.ContainsFunc(first, func(p problem) bool {
				return strings.HasPrefix(p.Location+".", child("inputSchema.properties", m.key)+".")
			})
		}
		lookup := func(i int, m member) bool { return refused(i, m) || strings.Contains(m.key, "__") }
		beyond := func(n int) func(int, member) bool {
			return func(i int, m member) bool { return lookup(i, m) || i >= n }
		}
		if ps = fit(refused); len(ps) > 0 {
			if ps = fit(lookup); len(ps) > 0 {
				ps = fit(beyond(sort.Search(len(all), func(n int) bool { return len(fit(beyond(n+1))) > 0 })))
			}
		}
	}
	if len(ps) > 0 {
		return "", nil, fmt.Errorf("its input breaks a bridge-v1 rule: %v", &ps[0])
	}
	if left > 0 {
		comments = append(comments, fmt.Sprintf("%d of its %d query parameters left out (lookups such as name__ic first), to fit bridge v1's schema bounds and query rule",
			left, len(all)))
	}
	out, err := c.response(op, "outputSchema")
	if err == nil && out.kind != kindNull && compileSchema(out, "outputSchema", &ps) == nil {
		err = &ps[0]
	}
	if err != nil {
		comments, out = append(comments, fmt.Sprintf("outputSchema left null: %v", err)), value{}
	}
	for _, at := range c.dropped {
		comments = append(comments, at+" dropped: bridge v1's schema subset has no such keyword or format")
	}
	id, _ := op.get("operationId")
	name := strings.Map(func(r rune) rune {
		if r < utf8.RuneSelf && isAlnum(byte(r)) {
			return r
		}
		return '_'
	}, strings.TrimPrefix(strings.ToLower(id.s), "plugins_"+strings.ReplaceAll(slug, "-", "_")+"_"))
	if name == "" || name[0] < 'a' || name[0] > 'z' {
		name = "op_" + name
	}
	name = name[:min(len(name), 60)]
	for base, i := name, 2; taken[name]; i++ {
		name = fmt.Sprintf("%s_%d", base, i)
	}
	taken[name] = true
	summary, _ := op.get("summary")
	description, _ := op.get("description")
	effect := methodEffects[method][0]
	return fmt.Sprintf(`{"name":%q,"title":%s,"description":%s,"method":%q,"path":%q,"effect":%q,"inputSchema":%s,"outputSchema":%s,`+
		`"annotations":{"readOnlyHint":%t,"destructiveHint":%t,"idempotentHint":%t,"openWorldHint":false}}`, name,
		appendString(nil, clipRunes(cmp.Or(summary.s, "TODO: a title for "+method+" "+rel), titleLimit)),
		appendString(nil, clipRunes(cmp.Or(description.s, summary.s, "TODO: what it does, what it answers, what to know before calling it."), descriptionLimit)),
		method, rel, effect, encode(in), encode(out), effect == "read", effect == "destructive", method != http.MethodPost && method != http.MethodPatch), comments, nil
}

// ---- the built-in demo NetBox ----

// demoToken is the v1 token the demo NetBox requires; it guards nothing real.
const demoToken = "0123456789abcdef0123456789abcdef01234567"

// demoManifest is the example plugin's manifest: a read tool with query
// arguments and an outputSchema, a write tool and a destructive one.
const demoManifest = `{"schema_version": "1", "plugin": "example", "tools": [
  {"name": "list_reports", "title": "List inventory reports", "description": "List the inventory reports visible to the current NetBox principal, newest first.", "method": "GET", "path": "reports/", "effect": "read",
   "inputSchema": {"type": "object", "properties": {"status": {"type": "string", "enum": ["queued", "done", "failed"]}, "limit": {"type": "integer", "minimum": 1, "maximum": 100, "default": 20}, "site": {"type": "array", "items": {"type": "string", "maxLength": 100}, "maxItems": 10, "uniqueItems": true}, "since": {"type": "string", "format": "date-time"}}, "additionalProperties": false},
   "outputSchema": {"type": "object", "properties": {"count": {"type": "integer", "minimum": 0}, "results": {"type": "array", "items": {"type": "object", "properties": {"id": {"type": "integer", "minimum": 1}, "site": {"type": "string"}, "status": {"type": "string", "enum": ["queued", "done", "failed"]}, "created": {"type": "string", "format": "date-time"}}, "required": ["id", "site", "status", "created"], "additionalProperties": false}}}, "required": ["count", "results"], "additionalProperties": false},
   "annotations": {"readOnlyHint": true, "destructiveHint": false, "idempotentHint": true, "openWorldHint": false}},
  {"name": "run_report", "title": "Run an inventory report", "description": "Queue an inventory report for one site, or for every site when site is omitted.", "method": "POST", "path": "reports/run/", "effect": "write",
   "inputSchema": {"type": "object", "properties": {"site": {"type": "string", "minLength": 1, "maxLength": 100}, "scope": {"type": "string", "enum": ["active", "all"]}}, "required": ["scope"], "additionalProperties": false},
   "outputSchema": {"type": "object", "properties": {"id": {"type": "integer", "minimum": 1}, "status": {"const": "queued"}}, "required": ["id", "status"], "additionalProperties": false},
   "annotations": {"readOnlyHint": false, "destructiveHint": false, "idempotentHint": false, "openWorldHint": false}},
  {"name": "delete_report", "title": "Delete an inventory report", "description": "Delete one inventory report for good.", "method": "DELETE", "path": "reports/", "effect": "destructive",
   "inputSchema": {"type": "object", "properties": {"id": {"type": "integer", "minimum": 1}}, "required": ["id"], "additionalProperties": false},
   "annotations": {"readOnlyHint": false, "destructiveHint": true, "idempotentHint": true, "openWorldHint": false}}]}`

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

// demoBranch is the demo NetBox's one branch, ready (SPEC §16): writes
// selected with its schema_id change the branch's copy of the reports,
// taken when the demo starts.
var demoBranch = map[string]any{"id": 1, "name": "review", "status": map[string]string{"value": "ready", "label": "Ready"}, "schema_id": "br0review"}

func demoHandler(base string) http.Handler {
	var mu sync.Mutex
	reports := map[string][]map[string]any{"": {
		{"id": 1, "site": "ams1", "status": "done", "created": "2026-11-30T08:00:00Z"},
		{"id": 2, "site": "fra2", "status": "failed", "created": "2026-12-01T08:00:00Z"},
	}}
	reports[demoBranch["schema_id"].(string)] = slices.Clone(reports[""])
	nextID := 2
	send := func(w http.ResponseWriter, status int, v any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		json.NewEncoder(w).Encode(v)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Token "+demoToken {
			send(w, http.StatusForbidden, map[string]string{"detail": "Invalid v1 token"}) // as NetBox says
			return
		}
		mu.Lock()
		defer mu.Unlock()
		branch := r.Header.Get("X-NetBox-Branch") // "" selects main
		if _, exists := reports[branch]; !exists {
			send(w, http.StatusBadRequest, map[string]string{"detail": "No such branch."})
			return
		}
		switch r.Method + " " + r.URL.Path {
		case "GET /api/plugins/":
			send(w, http.StatusOK, map[string]string{"example": base + "/api/plugins/example/", "quiet": base + "/api/plugins/quiet/",
				"broken": base + "/api/plugins/broken/", "branching": base + "/api/plugins/branching/", installedPlugins: base + "/api/plugins/installed-plugins/"})
		case "GET /api/plugins/installed-plugins/":
			send(w, http.StatusOK, []map[string]string{{"name": "example"}, {"name": "quiet"}, {"name": "broken"}, {"name": "netbox_branching"}})
		case "GET /api/plugins/example/", "GET /api/plugins/broken/": // each root advertises its manifest
			send(w, http.StatusOK, map[string]any{"mcp": map[string]string{"schema_version": "1", "manifest": r.URL.Path + "mcp/"}})
		case "GET /api/plugins/quiet/", "GET /api/plugins/branching/": // these advertise nothing
			send(w, http.StatusOK, map[string]any{strings.Split(r.URL.Path, "/")[3]: base + r.URL.Path, "mcp": nil})
		case "GET /api/plugins/branching/branches/":
			results := []any{}
			if r.URL.Query().Get("name") == demoBranch["name"] {
				results = append(results, demoBranch)
			}
			send(w, http.StatusOK, map[string]any{"count": len(results), "next": nil, "previous": nil, "results": results})
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
			for _, rep := range slices.Backward(reports[branch]) {
				if len(results) < limit && (q.Get("status") == "" || rep["status"] == q.Get("status")) &&
					(!q.Has("site") || slices.Contains(q["site"], rep["site"].(string))) && rep["created"].(string) >= q.Get("since") {
					results = append(results, rep)
				}
			}
			send(w, http.StatusOK, map[string]any{"count": len(results), "results": results})
		case "DELETE /api/plugins/example/reports/":
			var in struct{ ID int }
			json.NewDecoder(io.LimitReader(r.Body, 1<<16)).Decode(&in)
			i := slices.IndexFunc(reports[branch], func(rep map[string]any) bool { return rep["id"] == in.ID })
			if i < 0 {
				send(w, http.StatusNotFound, map[string]string{"detail": "No such report."})
				return
			}
			reports[branch] = slices.Delete(reports[branch], i, i+1)
			w.WriteHeader(http.StatusNoContent)
		case "POST /api/plugins/example/reports/run/":
			var in struct{ Site, Scope string }
			if err := json.NewDecoder(io.LimitReader(r.Body, 1<<16)).Decode(&in); err != nil || in.Scope == "" {
				send(w, http.StatusBadRequest, map[string]string{"detail": "scope is required"})
				return
			}
			nextID++
			reports[branch] = append(reports[branch], map[string]any{"id": nextID, "site": cmp.Or(in.Site, "all"), "status": "queued",
				"created": time.Now().UTC().Format(time.RFC3339)})
			w.Header().Set("Location", "/api/plugins/example/reports/"+strconv.Itoa(nextID)+"/")
			send(w, http.StatusCreated, map[string]any{"id": nextID, "status": "queued"})
		default:
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, "<!DOCTYPE html><html><body><h1>Page Not Found</h1></body></html>")
		}
	})
}

// ---- flags ----

// fail reports a usage or configuration error of the command, if there
// is one, on one line and returns exit code 2.
func (o *options) fail(format string, a ...any) int {
	fmt.Fprintf(o.stderr, "%s: %s; run 'netbox-plugin-bridge help'\n", strings.TrimSpace("netbox-plugin-bridge "+o.cmd), fmt.Sprintf(format, a...))
	return exitUsage
}

// options are the flags of every command; newFlags registers those a
// command takes.
type options struct {
	profile, plugin, confirm, logFormat, logLevel, format string
	http, tlsCert, tlsKey, authFile, trustedProxies       string
	allowedHosts, metrics                                 string
	auditFile, branch, tool, response, openapi            string
	allowMutations                                        string // all, or a LIST; a bare --allow-mutations is "true"
	timeout                                               time.Duration
	demo, json, branchOnly, noCallToken                   bool
	arguments, operations                                 []string
	given                                                 map[string]bool   // the flags the command line set
	from                                                  map[string]string // flag → the variable that set it
	cmd                                                   string            // the command they are for
	stderr                                                io.Writer
}

// flagVariables are the environment variables of the flags: a variable
// sets its flag when the command line does not (SPEC §2).
var flagVariables = map[string]string{
	"allow-mutations": "NETBOX_MCP_ALLOW_MUTATIONS", "confirm": "NETBOX_MCP_CONFIRM", "branch": "NETBOX_BRANCH",
	"branch-only": "NETBOX_MCP_BRANCH_ONLY", "http": "NETBOX_MCP_HTTP", "tls-cert": "NETBOX_MCP_TLS_CERT",
	"tls-key": "NETBOX_MCP_TLS_KEY", "auth-token-file": "NETBOX_MCP_AUTH_TOKEN_FILE", "trusted-proxies": "NETBOX_MCP_TRUSTED_PROXIES",
	"log-format": "NETBOX_MCP_LOG_FORMAT", "log-level": "NETBOX_MCP_LOG_LEVEL", "audit-file": "NETBOX_MCP_AUDIT_FILE",
	"no-call-token": "NETBOX_MCP_NO_CALL_TOKEN", "demo": "NETBOX_MCP_DEMO", "allowed-hosts": "NETBOX_MCP_ALLOWED_HOSTS", "metrics": "NETBOX_MCP_METRICS",
}

// newFlags registers the flags of one command.
func (o *options) newFlags(cmd string) *flag.FlagSet {
	fs := flag.NewFlagSet(cmd, flag.ContinueOnError)
	if cmd == "serve" || cmd == "scan" || cmd == "check" || cmd == "draft" {
		fs.StringVar(&o.profile, "profile", "", "")
		switchFlag(fs, "demo", &o.demo)
		fs.Func("timeout", "", func(s string) (err error) {
			o.timeout, err = parseTimeout(s)
			return err
		})
	}
	if cmd == "serve" || cmd == "scan" || cmd == "check" {
		fs.BoolFunc("allow-mutations", "", func(s string) error { // a switch that may carry its LIST
			o.allowMutations = s
			return nil
		})
		fs.StringVar(&o.branch, "branch", "", "")
		switchFlag(fs, "branch-only", &o.branchOnly)
	}
	switch cmd {
	case "serve":
		fs.StringVar(&o.confirm, "confirm", "", "")
		fs.StringVar(&o.logFormat, "log-format", "text", "")
		fs.StringVar(&o.logLevel, "log-level", "info", "")
		fs.StringVar(&o.auditFile, "audit-file", "", "")
		switchFlag(fs, "no-call-token", &o.noCallToken)
		fs.StringVar(&o.authFile, "auth-token-file", "", "")
		fs.StringVar(&o.trustedProxies, "trusted-proxies", "", "")
		fs.StringVar(&o.allowedHosts, "allowed-hosts", "", "")
		fs.StringVar(&o.metrics, "metrics", "", "")
		fallthrough
	case "healthcheck":
		fs.StringVar(&o.http, "http", "", "")
		fs.StringVar(&o.tlsCert, "tls-cert", "", "")
		fs.StringVar(&o.tlsKey, "tls-key", "", "")
	case "draft":
		fs.StringVar(&o.plugin, "plugin", "", "")
		fs.StringVar(&o.openapi, "openapi", "", "")
		fs.Func("operation", "", func(s string) error {
			o.operations = append(o.operations, s)
			return nil
		})
	case "check":
		fs.StringVar(&o.openapi, "openapi", "", "")
		fs.StringVar(&o.format, "format", "text", "")
		fs.StringVar(&o.tool, "tool", "", "")
		fs.Func("arguments", "", func(s string) error {
			o.arguments = append(o.arguments, s)
			return nil
		})
		fs.StringVar(&o.response, "response", "", "")
		fallthrough
	case "scan":
		fs.StringVar(&o.plugin, "plugin", "", "")
		fs.BoolVar(&o.json, "json", false, "")
	}
	return fs
}

// setting names where a flag's value came from, for messages.
func (o *options) setting(name string) string { return cmp.Or(o.from[name], "--"+name) }

// parse parses a command's flags, before and after the positional
// arguments it returns, then sets each flag the command line left out from
// its variable. Its errors name a flag as it was typed and suggest the
// nearest one; -h and --help print the command's usage. When ok is false
// the command ends with code.
func (o *options) parse(fs *flag.FlagSet, args []string, env environment, stdout io.Writer) (positional []string, code int, ok bool) {
	fail := func(format string, a ...any) ([]string, int, bool) { return nil, o.fail(format, a...), false }
	for len(args) > 0 {
		arg := args[0]
		args = args[1:]
		if arg == "--" {
			positional = append(positional, args...)
			break
		}
		if len(arg) < 2 || arg[0] != '-' {
			positional = append(positional, arg)
			continue
		}
		typed, value, hasValue := strings.Cut(arg, "=")
		name := strings.TrimPrefix(typed[1:], "-")
		fl := fs.Lookup(name)
		switch {
		case name == "h" || name == "help":
			fmt.Fprint(stdout, usage)
			return nil, exitOK, false
		case name == "token" || name == "url":
			return fail("%s: tokens and URLs are not flags; set NETBOX_%s (or use a netbox-sdk profile)", typed, strings.ToUpper(name))
		case fl == nil:
			var names []string
			fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
			return fail("unknown flag %s%s", typed, suggest(name, names, "--"))
		}
		if b, isBool := fl.Value.(interface{ IsBoolFlag() bool }); !hasValue && isBool && b.IsBoolFlag() {
			value = "true"
		} else if !hasValue {
			if len(args) == 0 {
				return fail("flag %s needs a value", typed)
			}
			value, args = args[0], args[1:]
		}
		if err := fs.Set(name, value); err != nil {
			return fail("%s %s: %v", typed, quote(value), err)
		}
	}
	o.given, o.from = map[string]bool{}, map[string]string{}
	fs.Visit(func(f *flag.Flag) { o.given[f.Name] = true })
	for _, name := range slices.Sorted(maps.Keys(flagVariables)) {
		variable := flagVariables[name]
		if value := env.getenv(variable); value != "" && !o.given[name] && fs.Lookup(name) != nil {
			if err := fs.Set(name, value); err != nil {
				return fail("%s %s: %v", variable, quote(clip(value, 60)), err)
			}
			o.from[name] = variable
		}
	}
	return positional, exitOK, true
}

// suggest is " (did you mean X?)" for the candidate nearest to s, if one is
// within two edits.
func suggest(s string, candidates []string, prefix string) string {
	best, bestDistance := "", 3
	for _, c := range candidates {
		if d := editDistance(s, c); d < bestDistance {
			best, bestDistance = c, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %s%s?)", prefix, best)
}

// editDistance is the Levenshtein distance of two short strings.
func editDistance(a, b string) int {
	row := make([]int, len(b)+1)
	for j := range row {
		row[j] = j
	}
	for i := 1; i <= len(a); i++ {
		prev := row[0]
		row[0] = i
		for j := 1; j <= len(b); j++ {
			if a[i-1] != b[j-1] {
				prev++ // the diagonal, plus one for a substitution
			}
			prev, row[j] = row[j], min(row[j]+1, row[j-1]+1, prev)
		}
	}
	return row[len(b)]
}

// switchFlag registers a boolean flag whose variable takes the switch words.
func switchFlag(fs *flag.FlagSet, name string, on *bool) {
	fs.BoolFunc(name, "", func(s string) (err error) {
		*on, err = switchWord(s)
		return err
	})
}

// parseTimeout reads a timeout: a Go duration (30s, 1m) or a number of
// seconds (30, 2.5), more than 0 and at most a day.
func parseTimeout(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	// The seconds are bounded before they convert: NaN and ±Inf never do.
	if secs, ferr := strconv.ParseFloat(s, 64); err != nil && ferr == nil && secs > 0 && secs <= 86400 {
		d, err = time.Duration(secs*float64(time.Second)), nil
	}
	if err != nil || d <= 0 || d > 24*time.Hour {
		return 0, errors.New("is not a duration (30s) or a number of seconds, more than 0 and at most a day")
	}
	return d, nil
}
