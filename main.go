// Command netbox-plugin-bridge lets MCP clients discover and call the
// operations that NetBox plugins advertise through bridge v1.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"
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

// version is set at release time with -ldflags "-X main.version=…".
var version = ""

// Exit codes shared by scan and check.
const (
	exitOK      = 0
	exitInvalid = 1
	exitUsage   = 2
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run executes one command line and returns the process exit code.
func run(args []string, stdout, stderr io.Writer) int {
	cmd := "serve"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		cmd, args = args[0], args[1:]
	}
	switch cmd {
	case "check":
		return runCheck(args, stdout, stderr)
	case "version":
		fmt.Fprintln(stdout, versionLine())
		return exitOK
	case "help":
		fmt.Fprint(stdout, usage)
		return exitOK
	}
	if len(args) == 1 && (args[0] == "--version" || args[0] == "-version") {
		fmt.Fprintln(stdout, versionLine())
		return exitOK
	}
	fmt.Fprintf(stderr, "netbox-plugin-bridge: unknown command %q; run 'netbox-plugin-bridge help'\n", cmd)
	return exitUsage
}

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

func sdkVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == "github.com/modelcontextprotocol/go-sdk" {
				return d.Version
			}
		}
	}
	return "unknown"
}

func versionLine() string {
	return fmt.Sprintf("netbox-plugin-bridge %s (go-sdk %s)", bridgeVersion(), sdkVersion())
}

// errUsage marks a command-line error; the flag package has printed it.
var errUsage = errors.New("usage")

// parseFlags parses flags that may come before or after positional
// arguments, and returns the positional ones.
func parseFlags(fs *flag.FlagSet, args []string, stderr io.Writer) ([]string, error) {
	fs.SetOutput(io.Discard)
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			fmt.Fprintf(stderr, "netbox-plugin-bridge %s: %v; run 'netbox-plugin-bridge help'\n", fs.Name(), err)
			return nil, errUsage
		}
		args = fs.Args()
		if len(args) == 0 {
			return positional, nil
		}
		positional, args = append(positional, args[0]), args[1:]
	}
}

// runCheck is the offline contract check for plugin authors.
func runCheck(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	toolName := fs.String("tool", "", "tool whose arguments or response to check")
	arguments := fs.String("arguments", "", "arguments as JSON, or @FILE")
	response := fs.String("response", "", "file holding a response body")
	asJSON := fs.Bool("json", false, "print the verdict as JSON")
	files, err := parseFlags(fs, args, stderr)
	if err != nil {
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
	data, err := os.ReadFile(files[0])
	if err != nil {
		return fail("cannot read the manifest: %v", err)
	}
	var args2, body []byte
	if strings.HasPrefix(*arguments, "@") {
		if args2, err = os.ReadFile((*arguments)[1:]); err != nil {
			return fail("cannot read the arguments: %v", err)
		}
	} else if *arguments != "" {
		args2 = []byte(*arguments)
	}
	if *response != "" {
		if body, err = os.ReadFile(*response); err != nil {
			return fail("cannot read the response: %v", err)
		}
	}
	ps := checkDocuments(data, *toolName, args2, body)
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

// checkDocuments checks a manifest and, for one of its tools, arguments
// (when non-nil) and a response body (when non-nil).
func checkDocuments(manifestData []byte, toolName string, arguments, body []byte) problems {
	m, ps := parseManifest(manifestData)
	if len(ps) > 0 || toolName == "" {
		return ps
	}
	t := m.tool(toolName)
	if t == nil {
		return problems{{"--tool", fmt.Sprintf("the manifest has no tool %s", quote(toolName))}}
	}
	if arguments != nil {
		if err := t.input.validateBytes(arguments, instanceLimits, "arguments"); err != nil {
			ps.addErr(err)
		}
	}
	if body != nil {
		if err := t.output.validateBytes(body, instanceLimits, "response"); err != nil {
			ps.addErr(err)
		}
	}
	return ps
}
