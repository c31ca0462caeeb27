package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The end-to-end tests drive the release binary with MCP clients nobody on
// this team wrote: the official TypeScript SDK, the MCP Inspector CLI (both
// pinned in e2e/package.json) and the Go SDK's CommandTransport.

var (
	buildOnce   sync.Once
	builtBinary string
	buildErr    error
)

// releaseBinary builds the binary the way the README's release command does.
func releaseBinary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "bridge-e2e")
		if err != nil {
			buildErr = err
			return
		}
		builtBinary = filepath.Join(dir, "netbox-plugin-bridge")
		cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w -X main.version=e2e", "-o", builtBinary, ".")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("%v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatalf("building the binary: %v", buildErr)
	}
	return builtBinary
}

// nodeClients returns the e2e directory with its npm packages installed,
// installing them when they are missing. Without node the test is skipped on
// a developer machine and fails in CI (BRIDGE_E2E=1).
func nodeClients(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		if os.Getenv("BRIDGE_E2E") != "" {
			t.Fatal("node is not installed, and BRIDGE_E2E requires the end-to-end clients")
		}
		t.Skip("node is not installed: the end-to-end MCP client tests need Node.js 20 or later")
	}
	dir, _ := filepath.Abs("e2e")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", ".package-lock.json")); err != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "npm", "ci", "--no-audit", "--no-fund")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("npm ci in e2e/: %v\n%s", err, out)
		}
	}
	return dir
}

func TestE2ETypeScriptClient(t *testing.T) {
	dir := nodeClients(t)
	bin := releaseBinary(t)
	for _, args := range [][]string{{"--demo"}, {"--demo", "--allow-mutations"}} {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		out, err := exec.CommandContext(ctx, "node", append([]string{filepath.Join(dir, "client.mjs"), bin}, args...)...).CombinedOutput()
		cancel()
		var report struct {
			Passed int               `json:"passed"`
			Failed []json.RawMessage `json:"failed"`
		}
		if jerr := json.Unmarshal(lastLine(out), &report); err != nil || jerr != nil || len(report.Failed) > 0 || report.Passed < 10 {
			t.Errorf("%v: %v\n%s", args, err, out)
			continue
		}
		t.Logf("e2e: TypeScript SDK client %v: %d checks passed", args, report.Passed)
	}
}

func lastLine(b []byte) []byte {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return []byte(lines[len(lines)-1])
}

func TestE2EInspectorCLI(t *testing.T) {
	dir := nodeClients(t)
	bin := releaseBinary(t)
	inspector := filepath.Join(dir, "node_modules", ".bin", "mcp-inspector")
	// run returns the inspector's stdout; a tool error result exits non-zero
	// by design, so wantToolError accepts that.
	run := func(wantToolError bool, args ...string) []byte {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, inspector, append([]string{"--cli", bin, "--demo"}, args...)...)
		out, err := cmd.Output()
		if err != nil && !(wantToolError && strings.Contains(string(out), `"isError": true`)) {
			stderr := ""
			if ee, ok := err.(*exec.ExitError); ok {
				stderr = string(ee.Stderr)
			}
			t.Fatalf("inspector %v: %v\n%s\n%s", args, err, out, stderr)
		}
		return out
	}
	var list struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	// --strict exits non-zero on any error-severity schema portability problem.
	if err := json.Unmarshal(run(false, "--method", "tools/list", "--strict"), &list); err != nil || len(list.Tools) != 2 {
		t.Fatalf("tools/list: %v %+v", err, list)
	}
	var result struct {
		IsError           bool `json:"isError"`
		StructuredContent struct {
			Status int `json:"status"`
			Body   struct {
				Count int `json:"count"`
			} `json:"body"`
			Error struct {
				Code string `json:"code"`
			} `json:"error"`
		} `json:"structuredContent"`
	}
	out := run(false, "--method", "tools/call", "--tool-name", "plugin_call_tool", "--tool-arg", "plugin=example",
		"--tool-arg", "tool=list_reports", "--tool-arg", `arguments={"status": "done"}`)
	if err := json.Unmarshal(out, &result); err != nil || result.IsError || result.StructuredContent.Status != 200 || result.StructuredContent.Body.Count != 1 {
		t.Fatalf("tools/call read: %v\n%s", err, out)
	}
	out = run(true, "--method", "tools/call", "--tool-name", "plugin_call_tool", "--tool-arg", "plugin=example",
		"--tool-arg", "tool=run_report", "--tool-arg", `arguments={"scope": "all"}`)
	if err := json.Unmarshal(out, &result); err != nil || !result.IsError || result.StructuredContent.Error.Code != "mutations_disabled" {
		t.Fatalf("tools/call write: %v\n%s", err, out)
	}
	t.Logf("e2e: MCP Inspector CLI: tools/list --strict, a read and a refused write passed")
}

func TestE2EGoClient(t *testing.T) {
	bin := releaseBinary(t)
	for _, version := range []string{"2025-11-25", ""} { // today's clients, and the SDK's newest
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		client := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil)
		cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: exec.Command(bin, "--demo", "--allow-mutations")},
			&mcp.ClientSessionOptions{ProtocolVersion: version})
		if err != nil {
			cancel()
			t.Fatalf("%q: connect: %v", version, err)
		}
		if info := cs.InitializeResult().ServerInfo; info.Name != "netbox-plugin-bridge" || info.Version != "e2e" {
			t.Errorf("%q: server info %+v", version, info)
		}
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "plugin_call_tool", Arguments: map[string]any{
			"plugin": "example", "tool": "run_report", "arguments": map[string]any{"scope": "active"}}})
		if err != nil || res.IsError {
			t.Errorf("%q: write: %v %+v", version, err, res)
		} else if doc, _ := json.Marshal(res.StructuredContent); !strings.Contains(string(doc), `"status":201`) {
			t.Errorf("%q: write result %s", version, doc)
		}
		cs.Close()
		cancel()
	}
}

// BenchmarkStartup measures spawn to the first initialize reply of the
// release binary (SPEC §10: under 10 ms).
func BenchmarkStartup(b *testing.B) {
	bin := releaseBinary(b)
	init := []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}` + "\n")
	for b.Loop() {
		cmd := exec.Command(bin, "--demo")
		stdin, _ := cmd.StdinPipe()
		stdout, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		stdin.Write(init)
		buf := make([]byte, 1)
		if _, err := stdout.Read(buf); err != nil {
			b.Fatal(err)
		}
		b.StopTimer() // the shutdown is not part of start-up
		stdin.Close()
		cmd.Wait()
		b.StartTimer()
	}
}
