package main

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	neturl "net/url"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// secret marks every token of these tests, so no output may contain it.
const secret = "TOPSECRET"

const (
	secretV2 = "nbt_" + secret + "KEY." + secret + "VALUE"
	secretV1 = "0123456789" + secret + "0123456789abcdef012" // 40 characters
)

// testEnv is an environment of the given variables over real files in home.
func testEnv(home string, vars map[string]string) environment {
	var environ []string
	for k, v := range vars {
		environ = append(environ, k+"="+v)
	}
	return environment{getenv: func(k string) string { return vars[k] }, environ: func() []string { return environ }, readFile: osEnvironment().readFile, home: home}
}

// writeProfile writes a profile file with exactly mode.
func writeProfile(t *testing.T, path, content string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil { // not subject to the umask
		t.Fatal(err)
	}
}

func sdkPath(dir string) string { return filepath.Join(dir, "netbox-sdk", "config.json") }
func cliPath(dir string) string { return filepath.Join(dir, "netbox-cli", "config.json") }

func mustLoad(t *testing.T, f *options, env environment) *config {
	t.Helper()
	cfg, err := loadConfig(f, env)
	if err != nil {
		t.Fatalf("loadConfig: %v", err)
	}
	return cfg
}

// loadFails expects a configuration error containing want, and no token.
func loadFails(t *testing.T, f *options, env environment, want string) {
	t.Helper()
	cfg, err := loadConfig(f, env)
	switch {
	case err == nil:
		t.Fatalf("loadConfig succeeded (%+v), want an error containing %q", cfg, want)
	case !strings.Contains(err.Error(), want):
		t.Fatalf("error %q, want it to contain %q", err, want)
	case strings.Contains(err.Error(), secret):
		t.Fatalf("error %q shows the token", err)
	case strings.Contains(err.Error(), "\n"):
		t.Fatalf("error %q is more than one line", err)
	}
}

// ---- URL ----

func TestNormalizeURL(t *testing.T) {
	t.Parallel()
	for raw, want := range map[string][3]string{
		"netbox.example.com":                    {"https://netbox.example.com", "https://netbox.example.com:443", ""},
		"https://netbox.example.com/":           {"https://netbox.example.com", "https://netbox.example.com:443", ""},
		"https://netbox.example.com/netbox":     {"https://netbox.example.com/netbox", "https://netbox.example.com:443", "/netbox"},
		"https://netbox.example.com/netbox/":    {"https://netbox.example.com/netbox", "https://netbox.example.com:443", "/netbox"},
		"https://netbox.example.com/a/b//":      {"https://netbox.example.com/a/b", "https://netbox.example.com:443", "/a/b"},
		"http://netbox.example.com:8080/netbox": {"http://netbox.example.com:8080/netbox", "http://netbox.example.com:8080", "/netbox"},
		"http://netbox.example.com":             {"http://netbox.example.com", "http://netbox.example.com:80", ""},
		"HTTPS://NetBox.Example.com":            {"https://NetBox.Example.com", "https://netbox.example.com:443", ""},
		"localhost:8000":                        {"https://localhost:8000", "https://localhost:8000", ""},
		"localhost:8000/netbox/":                {"https://localhost:8000/netbox", "https://localhost:8000", "/netbox"},
		"[::1]:8000":                            {"https://[::1]:8000", "https://[::1]:8000", ""},
		"netbox.example.com:8443":               {"https://netbox.example.com:8443", "https://netbox.example.com:8443", ""},
		"http://127.0.0.1:8000":                 {"http://127.0.0.1:8000", "http://127.0.0.1:8000", ""},
		"http://[::1]:8000/":                    {"http://[::1]:8000", "http://[::1]:8000", ""},
	} {
		base, origin, prefix, err := normalizeURL(raw)
		if err != nil || [3]string{base, origin, prefix} != want {
			t.Errorf("%s: %q %q %q %v, want %q", raw, base, origin, prefix, err, want)
		}
	}
	for raw, want := range map[string]string{
		"https://user:pw@netbox.example.com": "must not contain credentials",
		"https://user@netbox.example.com":    "must not contain credentials",
		"https://netbox.example.com/?a=1":    "must not have a query or fragment",
		"https://netbox.example.com?":        "must not have a query or fragment",
		"https://netbox.example.com/#top":    "must not have a query or fragment",
		"https://netbox.example.com#":        "must not have a query or fragment",
		"https://netbox.example.com/ x":      "control character or space",
		"https://netbox.example.com/\x00":    "control character or space",
		"https://netbox.example.com\r\n":     "control character or space",
		"\thttps://netbox.example.com":       "control character or space",
		"https://netbox.example.com/\x7f":    "control character or space",
		"ftp://netbox.example.com":           `scheme "ftp" is not http or https`,
		"file:///etc/passwd":                 `scheme "file" is not http or https`,
		"javascript:alert(1)":                `scheme "javascript" is not http or https`,
		"mailto:ops@example.com":             `scheme "mailto" is not http or https`,
		"https://":                           "has no host",
		"https:///netbox":                    "has no host",
		"https://netbox.example.com/a%20b":   "must not contain percent-encoding",
		"https://netbox.example.com/a//b":    "empty, . or .. segment",
		"https://netbox.example.com/./x":     "empty, . or .. segment",
		"https://netbox.example.com/x/..":    "empty, . or .. segment",
		"https://netbox.example.com:port":    "is not a URL",
		"localhost:":                         "is not a number",
	} {
		if base, _, _, err := normalizeURL(raw); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %q, %v; want an error containing %q", raw, base, err, want)
		}
	}
}

// ---- tokens ----

func TestTokenForms(t *testing.T) {
	t.Parallel()
	const v1 = "0123456789abcdef0123456789abcdef01234567"
	for _, c := range []struct {
		name string
		vars map[string]string
		auth string
	}{
		{"v2 token", map[string]string{"NETBOX_TOKEN": "nbt_abc.def"}, "Bearer nbt_abc.def"},
		{"v1 token", map[string]string{"NETBOX_TOKEN": v1}, "Token " + v1},
		{"split", map[string]string{"NETBOX_TOKEN_KEY": "abc", "NETBOX_TOKEN_SECRET": "def"}, "Bearer nbt_abc.def"},
		{"split with nbt_", map[string]string{"NETBOX_TOKEN_KEY": "nbt_abc", "NETBOX_TOKEN_SECRET": "def"}, "Bearer nbt_abc.def"},
		{"split v2", map[string]string{"NETBOX_TOKEN_VERSION": "v2", "NETBOX_TOKEN_KEY": "abc", "NETBOX_TOKEN_SECRET": "def"}, "Bearer nbt_abc.def"},
		{"split v1", map[string]string{"NETBOX_TOKEN_VERSION": "v1", "NETBOX_TOKEN_SECRET": v1}, "Token " + v1},
		{"split V1", map[string]string{"NETBOX_TOKEN_VERSION": "V1", "NETBOX_TOKEN_KEY": "abc", "NETBOX_TOKEN_SECRET": v1}, "Token " + v1},

		{"whole beats split", map[string]string{"NETBOX_TOKEN": v1, "NETBOX_TOKEN_KEY": "abc", "NETBOX_TOKEN_SECRET": "def"}, "Token " + v1},
		{"none", map[string]string{}, ""},
	} {
		c.vars["NETBOX_URL"] = "https://netbox.example.com"
		cfg, err := loadConfig(&options{}, testEnv(t.TempDir(), c.vars))
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
		} else if cfg.auth != c.auth {
			t.Errorf("%s: auth %q, want %q", c.name, cfg.auth, c.auth)
		}
	}
	// Half a token is an error that names the missing field, in the
	// variables and in a profile alike (issue 19).
	for _, c := range []struct {
		name    string
		vars    map[string]string
		profile string
		want    []string
	}{
		{"key only", map[string]string{"NETBOX_TOKEN_KEY": "abc"}, "", []string{"NETBOX_TOKEN_KEY", "NETBOX_TOKEN_SECRET"}},
		{"secret only", map[string]string{"NETBOX_TOKEN_SECRET": "def"}, "", []string{"NETBOX_TOKEN_KEY", "NETBOX_TOKEN_SECRET"}},
		{"a v1 token as the key", map[string]string{"NETBOX_TOKEN_KEY": v1}, "", []string{"v1 token", "NETBOX_TOKEN_VERSION", "NETBOX_TOKEN_SECRET"}},
		{"the header form", map[string]string{"NETBOX_TOKEN": "Token " + v1}, "", []string{"NETBOX_TOKEN", `starts with "Token "`, "without the prefix"}},
		{"the Bearer header form", map[string]string{"NETBOX_TOKEN": "Bearer nbt_abc.def"}, "", []string{`starts with "Bearer "`, "without the prefix"}},
		{"v1 in the key", map[string]string{"NETBOX_TOKEN_VERSION": "v1", "NETBOX_TOKEN_KEY": v1}, "", []string{"NETBOX_TOKEN_SECRET", "not in NETBOX_TOKEN_KEY"}},
		{"profile key only", nil, `{"profiles": {"prod": {"base_url": "https://x", "token_key": "abc"}}}`, []string{`profile "prod"`, "token_key", "token_secret"}},
		{"profile v1 in the key", nil, `{"profiles": {"prod": {"base_url": "https://x", "token_key": "` + v1 + `"}}}`,
			[]string{`profile "prod"`, "token_version", "token_secret"}},
	} {
		dir := t.TempDir()
		vars := map[string]string{"NETBOX_URL": "https://netbox.example.com"}
		maps.Copy(vars, c.vars)
		if c.profile != "" {
			writeProfile(t, sdkPath(filepath.Join(dir, ".config")), c.profile, 0o600)
			vars = map[string]string{"NETBOX_PROFILE": "prod"}
		}
		_, err := loadConfig(&options{}, testEnv(dir, vars))
		for _, w := range c.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %v, want an error naming %s", c.name, err, w)
			}
		}
	}
}

func TestTokenControlCharactersRefused(t *testing.T) {
	t.Parallel()
	for _, bad := range []string{"\r", "\n", "\r\n", "\x00", " ", "\t", "\x7f"} {
		for _, vars := range []map[string]string{
			{"NETBOX_TOKEN": secretV2 + bad},
			{"NETBOX_TOKEN": bad + secretV1},
			{"NETBOX_TOKEN_KEY": secret, "NETBOX_TOKEN_SECRET": secret + bad + "x"},
			{"NETBOX_TOKEN_VERSION": "v1", "NETBOX_TOKEN_SECRET": secretV1 + bad},
		} {
			vars["NETBOX_URL"] = "https://netbox.example.com"
			loadFails(t, &options{}, testEnv(t.TempDir(), vars), "the token contains a control character")
		}
		// The same from a profile file.
		home := t.TempDir()
		doc, _ := json.Marshal(map[string]any{"profiles": map[string]any{"default": map[string]string{
			"base_url": "https://netbox.example.com", "token_version": "v1", "token_secret": secretV1 + bad}}})
		writeProfile(t, sdkPath(filepath.Join(home, ".config")), string(doc), 0o600)
		loadFails(t, &options{}, testEnv(home, nil), "the token contains a control character")
	}
}

// ---- profiles ----

const profileFile = `{"profiles": {
  "default": {"base_url": "https://profile.example.com/netbox/", "token_version": "v2", "token_key": "pkey",
              "token_secret": "psecret", "timeout": 12, "ssl_verify": false},
  "prod": {"base_url": "prod.example.com", "token_version": "v1", "token_secret": "0123456789abcdef0123456789abcdef01234567",
           "timeout": "7.5", "ssl_verify": "true"},
  "staging": {"base_url": "http://staging.example.com:8080"}}}`

func TestConfigPrecedence(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	writeProfile(t, sdkPath(filepath.Join(home, ".config")), profileFile, 0o600)
	type want struct {
		base, auth string
		timeout    time.Duration
		insecure   bool
	}
	const v1 = "Token 0123456789abcdef0123456789abcdef01234567"
	for _, c := range []struct {
		name  string
		flags *options
		vars  map[string]string
		want  want
	}{
		{"profile only", &options{}, nil,
			want{"https://profile.example.com/netbox", "Bearer nbt_pkey.psecret", 12 * time.Second, true}},
		{"env URL of the profile's NetBox", &options{}, map[string]string{"NETBOX_URL": "https://PROFILE.example.com:443/other"},
			want{"https://PROFILE.example.com:443/other", "Bearer nbt_pkey.psecret", 12 * time.Second, true}},
		{"env token", &options{}, map[string]string{"NETBOX_TOKEN": "nbt_env.tok"},
			want{"https://profile.example.com/netbox", "Bearer nbt_env.tok", 12 * time.Second, true}},
		{"env split token", &options{}, map[string]string{"NETBOX_TOKEN_KEY": "ek", "NETBOX_TOKEN_SECRET": "es"},
			want{"https://profile.example.com/netbox", "Bearer nbt_ek.es", 12 * time.Second, true}},
		{"env timeout and TLS", &options{}, map[string]string{"NETBOX_TIMEOUT": "3", "NETBOX_SSL_VERIFY": "1"},
			want{"https://profile.example.com/netbox", "Bearer nbt_pkey.psecret", 3 * time.Second, false}},
		{"everything from env", &options{}, map[string]string{"NETBOX_URL": "env.example.com", "NETBOX_TOKEN": "nbt_env.tok",
			"NETBOX_TIMEOUT": "4", "NETBOX_SSL_VERIFY": "off"},
			want{"https://env.example.com", "Bearer nbt_env.tok", 4 * time.Second, true}},
		{"flag timeout", &options{timeout: 2 * time.Second}, map[string]string{"NETBOX_TIMEOUT": "3"},
			want{"https://profile.example.com/netbox", "Bearer nbt_pkey.psecret", 2 * time.Second, true}},
		{"NETBOX_PROFILE", &options{}, map[string]string{"NETBOX_PROFILE": "prod"},
			want{"https://prod.example.com", v1, 7500 * time.Millisecond, false}},
		{"--profile beats NETBOX_PROFILE", &options{profile: "staging"}, map[string]string{"NETBOX_PROFILE": "prod"},
			want{"http://staging.example.com:8080", "", 30 * time.Second, false}},
		{"env beats a named profile", &options{profile: "prod"}, map[string]string{"NETBOX_URL": "https://env.example.com",
			"NETBOX_TOKEN": "nbt_env.tok", "NETBOX_TIMEOUT": "9"},
			want{"https://env.example.com", "Bearer nbt_env.tok", 9 * time.Second, false}},
	} {
		cfg, err := loadConfig(c.flags, testEnv(home, c.vars))
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if got := (want{cfg.base, cfg.auth, cfg.timeout, cfg.insecure}); got != c.want {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
}

// TestProfileTokenStaysWithItsNetBox: a profile's token is never sent to a
// NETBOX_URL that names another NetBox.
func TestProfileTokenStaysWithItsNetBox(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	writeProfile(t, sdkPath(filepath.Join(home, ".config")), profileFile, 0o600)
	_, err := loadConfig(&options{}, testEnv(home, map[string]string{"NETBOX_URL": "http://env.example.com"}))
	if err == nil || !strings.Contains(err.Error(), "set NETBOX_TOKEN as well") || strings.Contains(err.Error(), "psecret") {
		t.Fatalf("got %v", err)
	}
	cfg, err := loadConfig(&options{}, testEnv(home, map[string]string{"NETBOX_URL": "http://env.example.com", "NETBOX_TOKEN": "nbt_e.t"}))
	if err != nil || cfg.auth != "Bearer nbt_e.t" {
		t.Fatalf("got %+v, %v", cfg, err)
	}
}

func TestProfileLocations(t *testing.T) {
	t.Parallel()
	profile := func(host string) string {
		return `{"profiles": {"default": {"base_url": "https://` + host + `", "token_key": "k", "token_secret": "s"}}}`
	}
	for _, c := range []struct {
		name  string
		files map[string]string // relative to the temporary root: h = home, x = XDG
		xdg   bool
		want  string
	}{
		{"~/.config/netbox-sdk", map[string]string{sdkPath("h/.config"): "sdk"}, false, "sdk"},
		{"legacy netbox-cli", map[string]string{cliPath("h/.config"): "cli"}, false, "cli"},
		{"netbox-sdk before netbox-cli", map[string]string{sdkPath("h/.config"): "sdk", cliPath("h/.config"): "cli"}, false, "sdk"},
		{"XDG first", map[string]string{sdkPath("x"): "xdg", sdkPath("h/.config"): "home"}, true, "xdg"},
		{"then ~/.config", map[string]string{sdkPath("h/.config"): "home"}, true, "home"},
		{"XDG netbox-cli", map[string]string{cliPath("x"): "xdg-cli"}, true, "xdg-cli"},
		{"netbox-sdk anywhere before netbox-cli", map[string]string{cliPath("x"): "xdg-cli", sdkPath("h/.config"): "home"}, true, "home"},
		{"XDG unset ignores its directory", map[string]string{sdkPath("x"): "xdg", sdkPath("h/.config"): "home"}, false, "home"},
	} {
		root := t.TempDir()
		for rel, host := range c.files {
			writeProfile(t, filepath.Join(root, rel), profile(host+".example.com"), 0o600)
		}
		vars := map[string]string{}
		if c.xdg {
			vars["XDG_CONFIG_HOME"] = filepath.Join(root, "x")
		}
		cfg, err := loadConfig(&options{}, testEnv(filepath.Join(root, "h"), vars))
		if err != nil || cfg.base != "https://"+c.want+".example.com" || cfg.auth != "Bearer nbt_k.s" {
			t.Errorf("%s: %+v %v, want %s", c.name, cfg, err, c.want)
		}
	}
	// No file: no error unless a profile is named.
	home := t.TempDir()
	loadFails(t, &options{}, testEnv(home, nil), "no NetBox URL: set NETBOX_URL")
	cfg := mustLoad(t, &options{}, testEnv(home, map[string]string{"NETBOX_URL": "netbox.example.com"}))
	if cfg.auth != "" {
		t.Errorf("auth %q without any token", cfg.auth)
	}
	loadFails(t, &options{profile: "prod"}, testEnv(home, nil),
		`profile "prod": no netbox-sdk profile file in `+sdkPath(filepath.Join(home, ".config"))+" or "+cliPath(filepath.Join(home, ".config")))
}

func TestProfileFormats(t *testing.T) {
	t.Parallel()
	load := func(content string, f *options) (*config, error) {
		home := t.TempDir()
		writeProfile(t, sdkPath(filepath.Join(home, ".config")), content, 0o600)
		return loadConfig(f, testEnv(home, nil))
	}
	flat := `{"base_url": "https://flat.example.com/", "token_key": "nbt_k", "token_secret": "s", "timeout": "5", "ssl_verify": "no"}`
	if cfg, err := load(flat, &options{}); err != nil || cfg.base != "https://flat.example.com" || cfg.auth != "Bearer nbt_k.s" ||
		cfg.timeout != 5*time.Second || !cfg.insecure {
		t.Errorf("legacy flat object: %+v %v", cfg, err)
	}
	if cfg, err := load(profileFile, &options{profile: "default"}); err != nil || cfg.base != "https://profile.example.com/netbox" {
		t.Errorf("--profile default: %+v %v", cfg, err)
	}
	for _, c := range []struct {
		name, content, profile, want string
	}{
		{"flat object, named profile", flat, "prod", "holds only the default profile"},
		{"missing named profile", profileFile, "nope", `profile "nope" is not in `},
		{"named profile not an object", `{"profiles": {"prod": "x"}}`, "prod", `profile "prod" is not in `},
		{"no profiles member", `{"other": 1}`, "prod", `profile "prod" is not in `},
		{"no default profile", `{"profiles": {"prod": {"base_url": "https://prod.example.com"}}}`, "", "no NetBox URL"},
		{"not an object", `[]`, "", "is not a JSON object: the top-level value is not an object"},
		{"not JSON", `{"profiles": {"default": {"token_secret": "` + secret + `"`, "", "is not a JSON object: profiles.default: invalid JSON"},
		{"duplicate key", `{"profiles": {}, "profiles": {}}`, "", `duplicate key "profiles"`},
		{"byte order mark", "\xEF\xBB\xBF{}", "", "byte order mark"},
		{"bad URL", `{"base_url": "ftp://x", "token_key": "k", "token_secret": "` + secret + `"}`, "", `profile base_url: scheme "ftp"`},
		{"bad timeout", `{"base_url": "https://x", "timeout": "soon"}`, "", `profile timeout: "soon" is not a duration (30s) or a number of seconds`},
		{"bad ssl_verify", `{"base_url": "https://x", "ssl_verify": "maybe"}`, "", `profile ssl_verify: "maybe" is not one of`},
	} {
		cfg, err := load(c.content, &options{profile: c.profile})
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), "<nil>") {
			t.Errorf("%s: %+v %v, want an error containing %q", c.name, cfg, err, c.want)
		}
	}
	if cfg, err := load(`{"profiles": {"default": {"base_url": "https://x", "timeout": 2.5, "ssl_verify": true}}}`, &options{}); err != nil ||
		cfg.timeout != 2500*time.Millisecond || cfg.insecure {
		t.Errorf("number timeout and boolean ssl_verify: %+v %v", cfg, err)
	}
}

// TestProfilePermissions: SPEC §2, a profile file that group or others may
// read or write, that is not a regular file, or that another user owns is
// refused before a byte is read, with the fix; it is read with a 1 MiB bound.
func TestProfilePermissions(t *testing.T) {
	t.Parallel()
	content := `{"base_url": "https://netbox.example.com", "token_key": "` + secret + `", "token_secret": "` + secret + `"}`
	for _, mode := range []os.FileMode{0o600, 0o400, 0o700, 0o640, 0o604, 0o644, 0o660, 0o606, 0o620, 0o602, 0o610, 0o601, 0o755} {
		home := t.TempDir()
		path := sdkPath(filepath.Join(home, ".config"))
		writeProfile(t, path, content, mode)
		env := testEnv(home, nil)
		if mode&0o077 == 0 {
			if cfg := mustLoad(t, &options{}, env); cfg.base != "https://netbox.example.com" {
				t.Errorf("mode %04o: base %q", mode, cfg.base)
			}
			continue
		}
		loadFails(t, &options{}, env, fmt.Sprintf("%s may be read or written by other users (mode %04o)", path, mode))
		loadFails(t, &options{}, env, "run: chmod 600 "+path)
		// The environment's URL does not make an open file acceptable.
		loadFails(t, &options{}, testEnv(home, map[string]string{"NETBOX_URL": "https://netbox.example.com"}), "may be read or written by other users")
	}
	// Not regular files: a FIFO (it would block the open), a directory, a
	// symlink to a device. Each is refused at once, without hanging.
	for name, create := range map[string]func(path string) error{
		"FIFO":      func(path string) error { return syscall.Mkfifo(path, 0o600) },
		"directory": func(path string) error { return os.Mkdir(path, 0o700) },
		"device":    func(path string) error { return os.Symlink("/dev/zero", path) },
	} {
		home := t.TempDir()
		path := sdkPath(filepath.Join(home, ".config"))
		os.MkdirAll(filepath.Dir(path), 0o700)
		if err := create(path); err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			loadFails(t, &options{}, testEnv(home, nil), "is not a regular file")
		}()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: loading the profile hangs", name)
		}
	}
	// Larger than 1 MiB: refused, not read whole.
	home := t.TempDir()
	writeProfile(t, sdkPath(filepath.Join(home, ".config")), `{"base_url": "https://x", "pad": "`+strings.Repeat("x", 1<<20)+`"}`, 0o600)
	loadFails(t, &options{}, testEnv(home, nil), "is larger than 1048576 bytes")
	// Through an injected reader: errors are reported with what to do.
	env := environment{getenv: func(string) string { return "" }, home: "/home/ops",
		readFile: func(string) ([]byte, error) { return nil, os.ErrPermission }}
	loadFails(t, &options{}, env, "cannot use the netbox-sdk profile file: permission denied")
}

// TestProfileOwner: a file of another user is refused even at mode 0600.
// It needs root to give a file away, so it runs only as root.
func TestProfileOwner(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("giving a file to another user needs root")
	}
	home := t.TempDir()
	path := sdkPath(filepath.Join(home, ".config"))
	writeProfile(t, path, `{"base_url": "https://netbox.example.com"}`, 0o600)
	if err := os.Chown(path, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	loadFails(t, &options{}, testEnv(home, nil), "belongs to another user (uid 65534); it must be yours")
}

// ---- timeouts, TLS, mutations ----

// TestTimeoutSetting: a number of seconds or a Go duration, in the flag
// and in NETBOX_TIMEOUT alike; more than 0 and at most a day.
func TestTimeoutSetting(t *testing.T) {
	t.Parallel()
	env := func(timeout string) environment {
		return testEnv(t.TempDir(), map[string]string{"NETBOX_URL": "https://x", "NETBOX_TOKEN": "nbt_a.b", "NETBOX_TIMEOUT": timeout})
	}
	valid := map[string]time.Duration{"10": 10 * time.Second, "2.5": 2500 * time.Millisecond, "0.1": 100 * time.Millisecond,
		"86400": 24 * time.Hour, "5s": 5 * time.Second, "1m30s": 90 * time.Second, "250ms": 250 * time.Millisecond, "24h": 24 * time.Hour}
	invalid := []string{"0", "-1", "abc", "86401", "1e9", "Inf", "-Inf", "NaN", "nan", " 5", "0s", "-5s", "25h", "5 s"}
	if cfg := mustLoad(t, &options{}, env("")); cfg.timeout != 30*time.Second {
		t.Errorf("default timeout %v, want 30s", cfg.timeout)
	}
	for value, want := range valid {
		if cfg := mustLoad(t, &options{}, env(value)); cfg.timeout != want {
			t.Errorf("NETBOX_TIMEOUT=%q: %v, want %v", value, cfg.timeout, want)
		}
		o := options{cmd: "scan", stderr: io.Discard}
		if _, _, ok := o.parse(o.newFlags("scan"), []string{"--timeout", value}, env(""), io.Discard); !ok || o.timeout != want {
			t.Errorf("--timeout %s: %v, want %v", value, o.timeout, want)
		}
	}
	for _, value := range invalid {
		loadFails(t, &options{}, env(value), "NETBOX_TIMEOUT: ")
		var errOut bytes.Buffer
		o := options{cmd: "scan", stderr: &errOut}
		if _, code, ok := o.parse(o.newFlags("scan"), []string{"--timeout=" + value}, env(""), io.Discard); ok || code != 2 || !strings.Contains(errOut.String(), "--timeout") {
			t.Errorf("--timeout=%q: accepted or unclear: %q", value, errOut.String())
		}
	}
	if cfg := mustLoad(t, &options{timeout: 1500 * time.Millisecond}, env("10")); cfg.timeout != 1500*time.Millisecond {
		t.Errorf("--timeout does not win over NETBOX_TIMEOUT: %v", cfg.timeout)
	}
}

func TestSSLVerifySetting(t *testing.T) {
	t.Parallel()
	for value, insecure := range map[string]bool{"": false, "1": false, "true": false, "TRUE": false, "yes": false, "on": false,
		"0": true, "false": true, "False": true, "no": true, "off": true, "OFF": true} {
		cfg := mustLoad(t, &options{}, testEnv(t.TempDir(), map[string]string{"NETBOX_URL": "https://x", "NETBOX_SSL_VERIFY": value}))
		if cfg.insecure != insecure {
			t.Errorf("NETBOX_SSL_VERIFY=%q: insecure %t", value, cfg.insecure)
		}
	}
	for _, value := range []string{"maybe", "2", "disabled", " off"} {
		loadFails(t, &options{}, testEnv(t.TempDir(), map[string]string{"NETBOX_URL": "https://x", "NETBOX_SSL_VERIFY": value}),
			"NETBOX_SSL_VERIFY: ")
	}
}

// TestWritePolicySetting: SPEC §13's switch and allow-list, in the flag and
// in NETBOX_MCP_ALLOW_MUTATIONS alike, and the confirmation modes.
func TestWritePolicySetting(t *testing.T) {
	t.Parallel()
	ex := catalogTool{plugin: "example", tool: &tool{name: "run_report"}}
	px := catalogTool{plugin: "proxbox", tool: &tool{name: "sync"}}
	other := catalogTool{plugin: "example", tool: &tool{name: "purge"}}
	type verdicts struct{ ex, px, other bool }
	valid := map[string]verdicts{
		"1": {true, true, true}, "true": {true, true, true}, "TRUE": {true, true, true}, "yes": {true, true, true},
		"Yes": {true, true, true}, "on": {true, true, true}, "ON": {true, true, true},
		"": {}, "0": {}, "false": {}, "False": {}, "no": {}, "off": {}, "OFF": {},
		"example.run_report":                    {true, false, false},
		"example.run_report,proxbox.*":          {true, true, false},
		" example.run_report , proxbox.* ":      {true, true, false},
		"example.*":                             {true, false, true},
		",,example.run_report,,":                {true, false, false},
		" , ":                                   {},
		"proxbox.sync,proxbox.sync":             {false, true, false},
		"my-plugin_2.tool_1,example.run_report": {true, false, false},
	}
	invalid := []string{"proxbox", "*", "Proxbox.sync", "enabled", "2", "example.", ".run_report", "example.Run", "example.run-report",
		"example.*.x", "example.run_report;proxbox.*", "example.run report", "proxbox.*,bad", "-x.y", "example.9tool"}
	for value, want := range valid {
		for _, inFlag := range []bool{false, true} {
			env := testEnv(t.TempDir(), map[string]string{"NETBOX_MCP_ALLOW_MUTATIONS": value})
			if inFlag {
				env = testEnv(t.TempDir(), map[string]string{"NETBOX_MCP_ALLOW_MUTATIONS": "proxbox"}) // the flag wins, even over a bad value
			}
			p, confirm, err := policyOf(t, allowArgs(inFlag, value), env)
			if err != nil || confirm != "auto" {
				t.Errorf("%q (flag %t): %v, confirm %q", value, inFlag, err, confirm)
				continue
			}
			if got := (verdicts{p.allows(ex), p.allows(px), p.allows(other)}); got != want {
				t.Errorf("%q (flag %t): allows %+v, want %+v", value, inFlag, got, want)
			}
		}
	}
	for _, value := range invalid {
		for setting, inFlag := range map[string]bool{"NETBOX_MCP_ALLOW_MUTATIONS": false, "--allow-mutations": true} {
			_, _, err := policyOf(t, allowArgs(inFlag, value), testEnv(t.TempDir(), map[string]string{"NETBOX_MCP_ALLOW_MUTATIONS": value}))
			if err == nil || !strings.HasPrefix(err.Error(), setting+": ") {
				t.Errorf("%s=%q: %v, want a configuration error naming %s", setting, value, err, setting)
			}
		}
	}
	// The bare flag means every tool; the flag parser takes both forms.
	for args, want := range map[string]verdicts{"--allow-mutations": {true, true, true}, "--allow-mutations=proxbox.*": {false, true, false},
		"-allow-mutations=false": {}} {
		if p, _, err := policyOf(t, []string{args}, testEnv(t.TempDir(), nil)); err != nil || (verdicts{p.allows(ex), p.allows(px), p.allows(other)}) != want {
			t.Errorf("%s: %v %+v, want %+v", args, err, p, want)
		}
	}
	// Confirmation modes: the four words, in the flag or the variable.
	for _, mode := range []string{"auto", "destructive", "writes", "off"} {
		if _, got, err := policyOf(t, nil, testEnv(t.TempDir(), map[string]string{"NETBOX_MCP_CONFIRM": mode})); err != nil || got != mode {
			t.Errorf("NETBOX_MCP_CONFIRM=%s: %q %v", mode, got, err)
		}
		if _, got, err := policyOf(t, []string{"--confirm", mode}, testEnv(t.TempDir(), map[string]string{"NETBOX_MCP_CONFIRM": "bogus"})); err != nil || got != mode {
			t.Errorf("--confirm %s: %q %v", mode, got, err)
		}
	}
	for _, mode := range []string{"always", "yes", "none", "write"} {
		if _, _, err := policyOf(t, nil, testEnv(t.TempDir(), map[string]string{"NETBOX_MCP_CONFIRM": mode})); err == nil || !strings.Contains(err.Error(), "NETBOX_MCP_CONFIRM: ") {
			t.Errorf("NETBOX_MCP_CONFIRM=%s: %v", mode, err)
		}
		if _, _, err := policyOf(t, []string{"--confirm", mode}, testEnv(t.TempDir(), nil)); err == nil || !strings.Contains(err.Error(), "--confirm: ") {
			t.Errorf("--confirm %s: %v", mode, err)
		}
	}
}

// policyOf resolves the write policy of serve's command line under env.
func policyOf(t *testing.T, args []string, env environment) (writePolicy, string, error) {
	t.Helper()
	o := options{cmd: "serve", stderr: io.Discard}
	if _, _, ok := o.parse(o.newFlags("serve"), args, env, io.Discard); !ok {
		t.Fatalf("%v: not parsed", args)
	}
	return loadPolicy(&o)
}

// allowArgs is the command line that sets --allow-mutations to value, if
// inFlag.
func allowArgs(inFlag bool, value string) []string {
	if !inFlag {
		return nil
	}
	return []string{"--allow-mutations=" + value}
}

func TestConfigErrorsNeverShowTheToken(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	writeProfile(t, sdkPath(filepath.Join(home, ".config")),
		`{"profiles": {"default": {"base_url": "https://x", "token_key": "`+secret+`", "token_secret": "`+secret+`"}}}`, 0o600)
	for _, vars := range []map[string]string{
		{"NETBOX_URL": "https://x/\n", "NETBOX_TOKEN": secretV2},
		{"NETBOX_URL": "https://user:" + secret + "@x", "NETBOX_TOKEN": secretV2},
		{"NETBOX_URL": "https://x", "NETBOX_TOKEN": secretV2, "NETBOX_TIMEOUT": "x"},
		{"NETBOX_URL": "https://x", "NETBOX_TOKEN": secretV1, "NETBOX_SSL_VERIFY": "x"},
		{"NETBOX_URL": "https://x", "NETBOX_TOKEN": secretV2 + "\n"},
		{"NETBOX_URL": "https://x", "NETBOX_TOKEN": secretV2, "NETBOX_PROFILE": "missing"},
		{"NETBOX_URL": "ftp://x"},
		{"NETBOX_TIMEOUT": "0"},
		{"NETBOX_TOKEN_KEY": secret, "NETBOX_TOKEN_SECRET": secret + "\x00"},
	} {
		_, err := loadConfig(&options{}, testEnv(home, vars))
		if err == nil || strings.Contains(err.Error(), secret) {
			t.Errorf("%v: error %v", vars, err)
		}
	}
}

// ---- scan ----

// scanEnv isolates the process environment for run: a fresh home, no
// NETBOX_* variable but those given.
func scanEnv(t *testing.T, vars map[string]string) {
	t.Setenv("HOME", t.TempDir())
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	for _, k := range []string{"NETBOX_URL", "NETBOX_TOKEN", "NETBOX_TOKEN_KEY", "NETBOX_TOKEN_SECRET", "NETBOX_TOKEN_VERSION",
		"NETBOX_PROFILE", "NETBOX_TIMEOUT", "NETBOX_SSL_VERIFY", "NETBOX_MCP_ALLOW_MUTATIONS"} {
		t.Setenv(k, vars[k])
	}
}

// runCLI runs a command line and checks that no output shows a token.
func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(args, strings.NewReader(""), &out, &errOut, osEnvironment())
	for _, s := range []string{out.String(), errOut.String()} {
		if strings.Contains(s, secret) || strings.Contains(s, fakeToken) || strings.Contains(s, demoToken) {
			t.Errorf("%v: output shows a token:\n%s", args, s)
		}
	}
	return code, out.String(), errOut.String()
}

// oneLine expects s to be exactly one line containing want.
func oneLine(t *testing.T, s, want string) {
	t.Helper()
	if strings.Count(s, "\n") != 1 || !strings.HasSuffix(s, "\n") || !strings.Contains(s, want) {
		t.Errorf("stderr %q, want one line containing %q", s, want)
	}
}

// lastLineHas expects the last line of s to contain every want.
func lastLineHas(t *testing.T, s string, want ...string) {
	t.Helper()
	last := string(lastLine([]byte(s)))
	for _, w := range want {
		if !strings.Contains(last, w) {
			t.Errorf("last line %q, want it to contain %q", last, w)
		}
	}
}

func refusedURL(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return "http://" + ln.Addr().String()
}

// TestScanCommandExitCodes: SPEC §2, scan exits 0 clean, 1 with problems,
// 2 on a configuration error, an unreachable NetBox or a refused token, for
// a full scan and --plugin alike; stderr says which NetBox and which token.
func TestScanCommandExitCodes(t *testing.T) {
	f := newFakeNetBox(t)
	f.addPlugin("example", readTool("list_reports"), writeTool("run_report"))
	f.addPlugin("quiet")
	broken := newFakeNetBox(t)
	broken.addPlugin("example", readTool("list_reports"))
	broken.setPlugin("broken", &fakePlugin{manifest: `{"schema_version": "1", "plugin": "broken", "tools": []}`})
	refused := refusedURL(t)
	token := map[string]string{"NETBOX_URL": f.URL, "NETBOX_TOKEN": fakeToken}
	with := func(base map[string]string, k, v string) map[string]string {
		m := maps.Clone(base)
		m[k] = v
		return m
	}
	cases := []struct {
		name   string
		env    map[string]string
		args   []string
		code   int
		stdout []string // substrings of stdout; none: stdout is empty
		stderr []string // substrings of the last stderr line
	}{
		{"clean", token, nil, 0, []string{"TOOL", "example.list_reports", "example.run_report"},
			[]string{"NetBox " + f.URL + ", the v1 token (Token scheme) from NETBOX_TOKEN"}},
		{"one plugin", token, []string{"--plugin", "example"}, 0, []string{"example.run_report"}, nil},
		{"missing plugin", token, []string{"--plugin", "missing"}, 1, []string{"no tools", "1 problem(s):\nmissing: plugin_not_found: "}, nil},
		{"plugin without manifest", token, []string{"--plugin", "quiet"}, 1, []string{"quiet: not_advertised: "}, nil},
		{"a broken plugin", with(token, "NETBOX_URL", broken.URL), nil, 1,
			[]string{"example.list_reports", "1 problem(s):\nbroken: discovery_failed: manifest /api/plugins/broken/mcp/: tools: must be an array"}, nil},
		{"no URL", nil, nil, 2, nil, []string{"netbox-plugin-bridge scan: config_error: no NetBox URL: set NETBOX_URL"}},
		{"ftp URL", with(token, "NETBOX_URL", "ftp://netbox"), nil, 2, nil, []string{`NETBOX_URL: scheme "ftp" is not http or https`}},
		{"token with CR", with(token, "NETBOX_TOKEN", secretV2+"\r"), nil, 2, nil, []string{"NETBOX_TOKEN: the token contains a control character"}},
		{"bad allow-list", with(token, "NETBOX_MCP_ALLOW_MUTATIONS", "proxbox"), nil, 2, nil, []string{"config_error: NETBOX_MCP_ALLOW_MUTATIONS: "}},
		{"negative --timeout", token, []string{"--timeout=-1s"}, 2, nil, []string{`--timeout "-1s": is not`}},
		{"refused port", with(token, "NETBOX_URL", refused), nil, 2, nil,
			[]string{"discovery_failed: GET " + refused + "/api/plugins/: ", "refused"}},
		{"refused port, one plugin", with(token, "NETBOX_URL", refused), []string{"--plugin", "example"}, 2, nil,
			[]string{"discovery_failed: GET " + refused + "/api/plugins/example/: ", "refused"}},
		{"refused port, JSON", with(token, "NETBOX_URL", refused), []string{"--json"}, 2,
			[]string{`{"error":{"code":"discovery_failed","message":"GET ` + refused + `/api/plugins/: `}, []string{"refused"}},
		{"wrong token", with(token, "NETBOX_TOKEN", secretV1), nil, 2, nil,
			[]string{`HTTP 403: "Invalid v1 token"; NetBox refused the v1 token (Token scheme) from NETBOX_TOKEN: check that it is valid`}},
		{"wrong token, one plugin", with(token, "NETBOX_TOKEN", secretV1), []string{"--plugin", "example"}, 2, nil,
			[]string{`HTTP 403: "Invalid v1 token"; NetBox refused the v1 token (Token scheme) from NETBOX_TOKEN`}},
		{"wrong split token", map[string]string{"NETBOX_URL": f.URL, "NETBOX_TOKEN_KEY": "k", "NETBOX_TOKEN_SECRET": secret}, nil, 2, nil,
			[]string{"NetBox refused the v2 token (Bearer scheme) from NETBOX_TOKEN_KEY and NETBOX_TOKEN_SECRET"}},
		{"no token", map[string]string{"NETBOX_URL": f.URL}, nil, 2, nil,
			[]string{"HTTP 403", "no token was sent: set NETBOX_TOKEN"}},
		{"URL with /api", with(token, "NETBOX_URL", f.URL+"/api"), nil, 2, nil,
			[]string{"GET " + f.URL + "/api/api/plugins/: HTTP 404", "without /api"}},
	}
	for _, c := range cases {
		scanEnv(t, c.env)
		code, out, errOut := runCLI(t, append([]string{"scan"}, c.args...)...)
		if code != c.code {
			t.Errorf("%s: exit %d, want %d\n%s%s", c.name, code, c.code, out, errOut)
		}
		if len(c.stdout) == 0 && out != "" {
			t.Errorf("%s: stdout %q, want none", c.name, out)
		}
		for _, w := range c.stdout {
			if !strings.Contains(out, w) {
				t.Errorf("%s: stdout %q, want %q", c.name, out, w)
			}
		}
		lastLineHas(t, errOut, c.stderr...)
	}
	// The stderr line that names the NetBox and the token is the only one
	// for a loopback NetBox; over http:// to another host a token gets a
	// warning first (issue 19: on loopback it would be false).
	scanEnv(t, token)
	if _, _, errOut := runCLI(t, "scan"); strings.Count(strings.TrimSpace(errOut), "\n") != 0 || strings.Contains(errOut, "warning") {
		t.Errorf("stderr %q, want only the NetBox line for a loopback NetBox", errOut)
	}
	_, _, warnings, _ := startConfig(&options{}, testEnv(t.TempDir(), map[string]string{"NETBOX_URL": "http://netbox.example.com", "NETBOX_TOKEN": fakeToken}))
	if len(warnings) != 1 || warnings[0] != "the v1 token (Token scheme) from NETBOX_TOKEN goes to http://netbox.example.com over plain HTTP, readable on the network; use https://" {
		t.Errorf("warnings %q, want the plain-HTTP one", warnings)
	}
	scanEnv(t, map[string]string{"NETBOX_URL": refused, "NETBOX_SSL_VERIFY": "0"})
	if _, _, errOut := runCLI(t, "scan"); !strings.Contains(errOut, "warning: TLS certificate verification is off (NETBOX_SSL_VERIFY)") {
		t.Errorf("stderr %q, want the TLS warning", errOut)
	}
}

func TestScanCommandJSON(t *testing.T) {
	f := newFakeNetBox(t)
	f.addPlugin("example", readTool("list_reports"), writeTool("run_report"))
	f.setPlugin("broken", &fakePlugin{manifest: "{"})
	scanEnv(t, map[string]string{"NETBOX_URL": f.URL, "NETBOX_TOKEN": fakeToken})
	code, out, _ := runCLI(t, "scan", "--json")
	want := string(catalogDocument(scanAllOK(t, f.client()), false)) + "\n"
	if code != 1 || out != want {
		t.Errorf("scan --json: %d\n%s\nwant\n%s", code, out, want)
	}
	cat, err := f.client().scanOne(context.Background(), "example", callOptions{})
	if err != nil {
		t.Fatal(err)
	}
	code, out, _ = runCLI(t, "scan", "--json", "--plugin", "example")
	if want := string(catalogDocument(cat, true)) + "\n"; code != 0 || out != want {
		t.Errorf("scan --json --plugin example: %d\n%s\nwant\n%s", code, out, want)
	}
	code, out, _ = runCLI(t, "scan", "--plugin", "broken", "--json")
	if doc := decodeCatalog(t, []byte(out)); code != 1 || len(doc.Tools) != 0 ||
		len(doc.Problems) != 1 || doc.Problems[0].Plugin != "broken" || doc.Problems[0].Code != "discovery_failed" {
		t.Errorf("scan --json --plugin broken: %d\n%s", code, out)
	}
}

// TestBadCommandLines: bad flags stop any command at once with one clear
// line naming the flag as typed, a suggestion where one is near, and exit 2.
func TestBadCommandLines(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"scan", "--bogus"}, "unknown flag --bogus"},
		{[]string{"scan", "--jsn"}, "unknown flag --jsn (did you mean --json?)"},
		{[]string{"scan", "-jsn"}, "unknown flag -jsn (did you mean --json?)"},
		{[]string{"scan", "--plugn=x"}, "unknown flag --plugn (did you mean --plugin?)"},
		{[]string{"scan", "--token", secretV2}, "--token: tokens and URLs are not flags; set NETBOX_TOKEN"},
		{[]string{"scan", "--url=https://x"}, "--url: tokens and URLs are not flags; set NETBOX_URL"},
		{[]string{"scan", "--timeout", "soon"}, `--timeout "soon": is not a duration`},
		{[]string{"scan", "--plugin"}, "flag --plugin needs a value"},
		{[]string{"scan", "extra"}, `unexpected argument "extra"`},
		{[]string{"scan", "--json=maybe"}, "--json \"maybe\""},
		{[]string{"serve", "--log-format", "xml"}, `--log-format "xml" is not text or json`},
		{[]string{"check", "--bogus", "testdata/manifest-valid.json"}, "unknown flag --bogus"},
		{[]string{"check", "--tool"}, "flag --tool needs a value"},
		{[]string{"scna"}, `unknown command "scna" (did you mean scan?)`},
		{[]string{"chek"}, `unknown command "chek" (did you mean check?)`},
		{[]string{"frobnicate"}, `unknown command "frobnicate"; run 'netbox-plugin-bridge help'`},
		{[]string{"--bogus"}, "unknown flag --bogus"},
		{[]string{"help", "scna"}, `no command "scna" (did you mean scan?)`},
	} {
		code, out, errOut := runCLI(t, c.args...)
		if code != 2 || out != "" {
			t.Errorf("%v: %d %q", c.args, code, out)
		}
		oneLine(t, errOut, c.want)
		if strings.Contains(errOut, secret) {
			t.Errorf("%v: the error shows the token", c.args)
		}
	}
}

// TestHelp: -h, --help, help and COMMAND --help print that command's usage
// on stdout and exit 0.
func TestHelp(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"help"}, {"-h"}, {"--help"}, {"-help"}, {"serve", "--help"}, {"serve", "-h"}, {"scan", "--help"},
		{"scan", "--json", "--help"}, {"check", "--help"}, {"healthcheck", "--help"}, {"version", "--help"}, {"help", "scan"}, {"help", "check"}} {
		code, out, errOut := runCLI(t, args...)
		if code != 0 || out != usage || errOut != "" {
			t.Errorf("%v: %d, stderr %q, stdout:\n%s", args, code, errOut, out)
		}
	}
	// The usage names every command and every flag each command takes.
	for _, cmd := range []string{"serve", "scan", "check", "healthcheck"} {
		var o options
		o.newFlags(cmd).VisitAll(func(f *flag.Flag) {
			if !strings.Contains(usage, "--"+f.Name) {
				t.Errorf("the usage does not name %s's flag --%s", cmd, f.Name)
			}
		})
		if !strings.Contains(usage, "netbox-plugin-bridge "+cmd) && cmd != "serve" {
			t.Errorf("the usage does not name %s", cmd)
		}
	}
	if code, _, errOut := runCLI(t, "help", "scna"); code != 2 || !strings.Contains(errOut, "did you mean scan?") {
		t.Errorf("help scna: %d %q", code, errOut)
	}
}

// TestScanDemo: scan --demo says that it is a demo, and its broken plugin
// is broken on purpose.
func TestScanDemo(t *testing.T) {
	t.Parallel()
	code, out, errOut := runCLI(t, "scan", "--demo")
	if code != 1 {
		t.Errorf("scan --demo: %d %q", code, errOut)
	}
	oneLine(t, errOut, `the built-in demo NetBox at http://127.0.0.1:`)
	if !strings.Contains(errOut, `its plugin "broken" is broken on purpose`) {
		t.Errorf("stderr %q does not explain the broken plugin", errOut)
	}
	for _, want := range []string{"example.list_reports", "example.run_report", "1 problem(s):",
		`broken: discovery_failed: manifest /api/plugins/broken/mcp/: tools[0].method: "get" must be upper case: GET`} {
		if !strings.Contains(out, want) {
			t.Errorf("scan --demo does not print %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "quiet") || strings.Contains(out, "installed-plugins") {
		t.Errorf("scan --demo reports a plugin that does not participate:\n%s", out)
	}
	code, out, _ = runCLI(t, "scan", "--demo", "--json")
	doc := decodeCatalog(t, []byte(out))
	if code != 1 {
		t.Fatalf("scan --demo --json: %d", code)
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || code != 1 {
		t.Fatalf("scan --demo --json: %d %v", code, err)
	}
	var names []string
	for _, tl := range doc.Tools {
		names = append(names, tl.QualifiedName)
	}
	if !slices.Contains(names, "example.list_reports") || !slices.Contains(names, "example.run_report") ||
		len(doc.Problems) != 1 || doc.Problems[0].Plugin != "broken" || doc.Problems[0].Code != "discovery_failed" {
		t.Errorf("scan --demo --json: %+v", doc)
	}
	if code, _, _ := runCLI(t, "scan", "--demo", "--plugin", "example"); code != 0 {
		t.Errorf("scan --demo --plugin example: %d", code)
	}
	if code, out, _ := runCLI(t, "scan", "--demo", "--plugin", "quiet"); code != 1 || !strings.Contains(out, "no tools\n") ||
		!strings.Contains(out, "quiet: not_advertised") || strings.Contains(out, "TOOL") {
		t.Errorf("scan --demo --plugin quiet: %d\n%s", code, out)
	}
}

func TestDemoNetBox(t *testing.T) {
	t.Parallel()
	base, stop, err := startDemo()
	if err != nil {
		t.Fatal(err)
	}
	cfg, _ := loadConfig(&options{}, testEnv(t.TempDir(), map[string]string{"NETBOX_URL": base, "NETBOX_TOKEN": demoToken}))
	if cfg == nil || cfg.auth != "Token "+demoToken {
		t.Fatalf("config %+v", cfg)
	}
	cat := scanAllOK(t, testClient(t, cfg))
	if got := toolNames(cat); !slices.Equal(got, []string{"example.delete_report", "example.list_reports", "example.run_report"}) || len(cat.problems) != 1 {
		t.Errorf("tools %v problems %v", got, cat.problems)
	}
	cfg.auth = ""
	scanAllFails(t, testClient(t, cfg), `HTTP 403: "Invalid v1 token"`)
	stop()
	cfg.auth = "Token " + demoToken
	if _, err := testClient(t, cfg).scanAll(context.Background(), callOptions{}); err == nil {
		t.Errorf("the demo NetBox still answers after stop")
	}
}

// ---- check and version ----

// TestCheckCommand: SPEC §2's offline check, as plugin authors' CI tools do
// it: several files and stdin, every problem with its file, exit codes 0, 1
// and 2, arguments and responses as JSON or @FILE.
func TestCheckCommand(t *testing.T) {
	t.Parallel()
	const valid, invalid = "testdata/manifest-valid.json", "testdata/manifests/method-lowercase.json"
	code, out, errOut := runCLI(t, "check", valid)
	if code != 0 || out != valid+": valid (manifest)\n" || errOut != "" {
		t.Errorf("check valid: %d %q %q", code, out, errOut)
	}
	code, out, _ = runCLI(t, "check", invalid)
	if code != 1 || !strings.HasPrefix(out, invalid+`:9:17: tools[0] (list_reports).method: "get" must be upper case: GET`) {
		t.Errorf("check invalid: %d %q", code, out)
	}
	// Several files: each line carries its file; one problem makes exit 1.
	code, out, _ = runCLI(t, "check", valid, invalid, valid)
	if lines := strings.Split(strings.TrimSpace(out), "\n"); code != 1 || len(lines) != 3 ||
		lines[0] != valid+": valid (manifest)" || !strings.HasPrefix(lines[1], invalid+":9:17: tools[0] (list_reports).method: ") || lines[2] != lines[0] {
		t.Errorf("check of three files: %d\n%s", code, out)
	}
	// Standard input.
	data, _ := os.ReadFile(invalid)
	var stdout, stderr bytes.Buffer
	if code := run([]string{"check", "-"}, bytes.NewReader(data), &stdout, &stderr, osEnvironment()); code != 1 ||
		!strings.HasPrefix(stdout.String(), `-:9:17: tools[0] (list_reports).method: "get"`) {
		t.Errorf("check -: %d %q %q", code, stdout.String(), stderr.String())
	}
	// Every problem of a manifest, not the first bad keyword of each schema.
	many := `{"schema_version": "1", "plugin": "p", "tools": [{"name": "t", "title": "T", "description": "D.", "method": "POST",
	  "path": "t/", "effect": "write", "annotations": {"readOnlyHint": false, "destructiveHint": false, "idempotentHint": false, "openWorldHint": false},
	  "inputSchema": {"type": "object", "additionalProperties": false, "$ref": "#/x", "pattern": "^a", "x-extra": 1,
	    "properties": {"when": {"type": "string", "format": "email"}, "n": {"type": "integer", "minimum": "0"}}}}]}`
	file := filepath.Join(t.TempDir(), "many.json")
	os.WriteFile(file, []byte(many), 0o600)
	code, out, _ = runCLI(t, "check", file)
	for _, want := range []string{`inputSchema.$ref: keyword "$ref" is not in the bridge-v1 schema subset`,
		`inputSchema.pattern: keyword "pattern" is not in the bridge-v1 schema subset`,
		`inputSchema.properties.when.format: format "email" is not supported`,
		`inputSchema.properties.n.minimum: must be a number`, `inputSchema.x-extra: keyword "x-extra" is not in the bridge-v1 schema subset`} {
		if code != 1 || !strings.Contains(out, want) {
			t.Errorf("check of a manifest with five problems: %d, missing %q in\n%s", code, want, out)
		}
	}
	// A syntax error has its location, line and column.
	broken := filepath.Join(t.TempDir(), "broken.json")
	os.WriteFile(broken, []byte("{\"schema_version\": \"1\", \"plugin\": \"p\",\n \"tools\": [{\"name\": \"a\", \"name\": \"b\"}]}"), 0o600)
	code, out, _ = runCLI(t, "check", "--json", broken)
	var doc struct {
		Valid    bool `json:"valid"`
		Problems []struct {
			File, Location, Message, Tool string
			Line, Column                  int
		} `json:"problems"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || code != 1 || len(doc.Problems) != 1 ||
		doc.Problems[0].Location != "tools[0]" || doc.Problems[0].Line != 2 || doc.Problems[0].Column != 26 || doc.Problems[0].File != broken {
		t.Errorf("check --json of a duplicate key: %d %v\n%s", code, err, out)
	}

	// Usage errors and unreadable input: exit 2, one line on stderr.
	missing := filepath.Join(t.TempDir(), "missing.json")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"check"}, "give one or more manifest files"},
		{[]string{"check", valid, "--arguments", "{}"}, "--arguments and --response need --tool"},
		{[]string{"check", valid, invalid, "--tool", "list_reports"}, "--tool checks one manifest"},
		{[]string{"check", valid, "--tool", "nope"}, `has no tool "nope"; its tools are list_reports, run_report`},
		{[]string{"check", valid, "--tool", "list_reports", "--arguments", "@" + missing}, "--arguments: cannot read " + missing + ": no such file"},
		{[]string{"check", valid, "--tool", "list_reports", "--response", "@" + missing}, "--response: cannot read " + missing + ": no such file"},
		{[]string{"check", valid, "--tool", "list_reports", "--arguments", valid}, "--arguments " + valid + " is not JSON, but names a file: did you mean @" + valid + "?"},
	} {
		code, out, errOut := runCLI(t, c.args...)
		if code != 2 || out != "" {
			t.Errorf("%v: %d %q", c.args, code, out)
		}
		oneLine(t, errOut, c.want)
	}

	// GitHub workflow annotations mark the manifest's lines (issue 19).
	code, out, _ = runCLI(t, "check", "--format", "github", invalid)
	if want := "::error file=" + invalid + ",line=9,col=17,title=tools[0] (list_reports).method::\"get\" must be upper case: GET"; code != 1 || !strings.HasPrefix(out, want) {
		t.Errorf("check --format github: %d %q, want %q", code, out, want)
	}
	if code, _, errOut := runCLI(t, "check", "--format", "sarif", invalid); code != 2 || !strings.Contains(errOut, "--format") {
		t.Errorf("check --format sarif: %d %q", code, errOut)
	}
	// An unreadable file is reported among the others, the rest are
	// checked, and the exit code is 2 (issue 19).
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"check", missing, valid}, missing + ": cannot read: no such file or directory\n" + valid + ": valid (manifest)\n"},
		{[]string{"check", "/dev/zero", invalid}, "/dev/zero: cannot read: /dev/zero is not a file\n" + invalid + ":9:17: tools[0] (list_reports).method: "},
		{[]string{"check", t.TempDir()}, "is not a file"},
	} {
		if code, out, errOut := runCLI(t, c.args...); code != 2 || !strings.Contains(out, c.want) || errOut != "" {
			t.Errorf("%v: %d %q %q, want exit 2 and %q", c.args, code, out, errOut, c.want)
		}
	}
	code, out, _ = runCLI(t, "check", "--json", missing)
	if code != 2 || !strings.Contains(out, `"message": "cannot read: no such file or directory"`) || !strings.Contains(out, `"file": "`+missing) {
		t.Errorf("check --json of a missing file: %d %s", code, out)
	}

	// JSON: no HTML escaping, and the tool's name beside its index.
	code, out, _ = runCLI(t, "check", "--json", "testdata/manifests/name-duplicate.json")
	if code != 1 || strings.Contains(out, `\u003c`) || !strings.Contains(out, `"tool": "list_reports"`) {
		t.Errorf("check --json: %d\n%s", code, out)
	}
	code, out, _ = runCLI(t, "check", "--json", "testdata/manifests/path-leading-slash.json")
	if code != 1 || strings.Contains(out, `\u003c`) || !strings.Contains(out, "<plugin>") {
		t.Errorf("check --json escapes HTML: %d\n%s", code, out)
	}
	code, out, _ = runCLI(t, "check", valid, "--json")
	if code != 0 || !slices.Equal(objectKeys(t, []byte(out)), []string{"valid", "problems"}) || !strings.Contains(out, `"problems": []`) {
		t.Errorf("check --json valid: %d\n%s", code, out)
	}

	// One tool's arguments and response, each as JSON or @FILE.
	dir := t.TempDir()
	args, body := filepath.Join(dir, "args.json"), filepath.Join(dir, "body.json")
	os.WriteFile(args, []byte(`{"limit": 5}`), 0o600)
	os.WriteFile(body, []byte(`{"count": 0, "results": []}`), 0o600)
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--tool", "list_reports", "--arguments", `{"limit": 5}`}, 0, ": valid (manifest; arguments for list_reports)"},
		{[]string{"--tool", "list_reports", "--arguments", "@" + args}, 0, ": valid (manifest; arguments for list_reports)"},
		{[]string{"--tool", "list_reports", "--response", "@" + body}, 0, ": valid (manifest; response for list_reports)"},
		{[]string{"--tool", "list_reports", "--arguments", "@" + args, "--response", `{"count": 2}`}, 0,
			": valid (manifest; arguments for list_reports; response for list_reports)"},
		{[]string{"--tool", "list_reports", "--arguments", `{"limit": 0}`}, 1, "arguments.limit: "},
		{[]string{"--tool", "list_reports", "--arguments", `{"limit": 5, "limit": 6}`}, 1, `duplicate key "limit"`},
		{[]string{"--tool", "list_reports", "--response", `{"count": "x"}`}, 1, "response.count: expected integer, got string"},
		{[]string{"--tool", "run_report", "--response", `{"id": "x"}`}, 0, ": valid (manifest; response for run_report)"},
		{[]string{"--tool", "run_report", "--response", `{"id": 1} x`}, 1, "response: invalid JSON at line 1, column 11"},
	} {
		code, out, _ := runCLI(t, append([]string{"check", valid}, c.args...)...)
		if code != c.code || !strings.Contains(out, c.want) {
			t.Errorf("%v: %d %q, want %d containing %q", c.args, code, out, c.code, c.want)
		}
	}
}

func TestVersionCommand(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"version"}, {"--version"}} {
		code, out, _ := runCLI(t, args...)
		if code != 0 || !strings.HasPrefix(out, "netbox-plugin-bridge ") || strings.Count(out, "\n") != 1 {
			t.Errorf("%v: %d %q", args, code, out)
		}
	}
}

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

// nodeClients returns the e2e directory with its npm packages installed.
// The npm clients run only with BRIDGE_E2E=1 (CI sets it); otherwise the
// test skips, so the README's test command needs Go alone.
func nodeClients(t *testing.T) string {
	t.Helper()
	if os.Getenv("BRIDGE_E2E") != "1" {
		t.Skip("end-to-end npm clients skipped: run with BRIDGE_E2E=1 (needs Node.js 20 and npm) to include them")
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

// TestE2EREADMEInspectorLines: issue 30, the README's MCP Inspector commands
// are commands that work: each, as written, with the Inspector version
// e2e/package.json pins, against a bridge in the mode its comment names.
// Only the placeholders change: the address, the binary, the bearer token.
func TestE2EREADMEInspectorLines(t *testing.T) {
	dir := nodeClients(t)
	readme, _ := os.ReadFile("README.md")
	pkg, _ := os.ReadFile(filepath.Join(dir, "package.json"))
	pinned := regexp.MustCompile(`"@modelcontextprotocol/inspector": "([0-9.]+)"`).FindSubmatch(pkg)
	lines := regexp.MustCompile(`(?m)^npx @modelcontextprotocol/inspector@(\S+) (?:.*\\\n)*.*$`).FindAllSubmatch(readme, -1)
	if pinned == nil || len(lines) != 3 {
		t.Fatalf("the README has %d Inspector lines (want 3: HTTP each caller, HTTP shared, stdio) and e2e/package.json pins %q", len(lines), pinned)
	}
	f := newInvNetBox(t)
	f.setToken("")
	caller, shared := freeAddr(t), freeAddr(t)
	startHTTPServe(t, []string{"NETBOX_URL=" + f.URL}, caller, http.DefaultClient, "http")
	startHTTPServe(t, []string{"NETBOX_URL=" + f.URL, "NETBOX_TOKEN=" + secretV2, "NETBOX_MCP_AUTH_TOKEN=mcp-bearer"}, shared, http.DefaultClient, "http")
	for _, m := range lines {
		if string(m[1]) != string(pinned[1]) {
			t.Errorf("the README runs the Inspector %s; e2e/package.json pins %s", m[1], pinned[1])
		}
		line := strings.ReplaceAll(string(m[0]), "\\\n", " ")
		addr := caller
		if strings.Contains(line, "$NETBOX_MCP_AUTH_TOKEN") {
			addr = shared
		}
		line = strings.NewReplacer("npx @modelcontextprotocol/inspector@"+string(m[1]), filepath.Join(dir, "node_modules", ".bin", "mcp-inspector"),
			"http://127.0.0.1:8080/mcp", "http://"+addr+"/mcp", "--cli netbox-plugin-bridge ", "--cli "+releaseBinary(t)+" ").Replace(line)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		cmd := exec.CommandContext(ctx, "sh", "-c", line)
		cmd.Env = append(os.Environ(), "NETBOX_MCP_AUTH_TOKEN=mcp-bearer")
		out, err := cmd.Output()
		cancel()
		if err != nil || !strings.Contains(string(out), `"name": "plugin_call_tool"`) {
			t.Errorf("the README's %q: %v\n%s", m[0], err, out)
		}
	}
	t.Logf("e2e: README: %d Inspector lines ran with the Inspector %s", len(lines), pinned[1])
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
		want := version
		if want == "" {
			want = "2026-07-28" // the go-sdk's newest, negotiated through server/discover
		}
		if got := cs.InitializeResult().ProtocolVersion; got != want {
			t.Errorf("%q: negotiated protocol %q, want %q", version, got, want)
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
	if !t.Failed() {
		t.Logf("e2e: Go SDK client: protocols 2025-11-25 and 2026-07-28 negotiated, a write dispatched over each")
	}
}

// TestE2ETypeScriptElicitation: SPEC §13's confirmation with a client that
// can answer, the official TypeScript SDK declaring form elicitation: the
// human accepts one delete_report (dispatched, 204), declines one and
// dismisses one (not_confirmed, nothing sent); e2e/elicit.mjs checks the
// question, the demo NetBox's state and the audit records.
func TestE2ETypeScriptElicitation(t *testing.T) {
	dir := nodeClients(t)
	bin := releaseBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "node", filepath.Join(dir, "elicit.mjs"), bin, "--demo", "--allow-mutations", "--log-format", "json").CombinedOutput()
	var report struct {
		Questions int               `json:"questions"`
		Passed    int               `json:"passed"`
		Failed    []json.RawMessage `json:"failed"`
	}
	if jerr := json.Unmarshal(lastLine(out), &report); err != nil || jerr != nil || len(report.Failed) > 0 || report.Passed < 15 || report.Questions != 3 {
		t.Fatalf("%v\n%s", err, out)
	}
	t.Logf("e2e: TypeScript SDK client with form elicitation: %d checks passed; %d questions: accepted (204), declined and dismissed (not_confirmed)", report.Passed, report.Questions)
}

// TestE2EGoClientConfirmation: the same confirmation with the go-sdk client
// and its ElicitationHandler, over 2026-07-28 (the question comes back as an
// input-required result and the SDK calls again with the answer) and over
// 2025-11-25 (elicitation/create from the server). An accepted delete is
// dispatched exactly once; a declined one never.
func TestE2EGoClientConfirmation(t *testing.T) {
	bin := releaseBinary(t)
	for _, version := range []string{"", "2025-11-25"} {
		want := version
		if want == "" {
			want = "2026-07-28"
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		var (
			mu        sync.Mutex
			questions []string
			answers   []*mcp.ElicitResult
			creates   int // elicitation/create requests the server sent
		)
		client := mcp.NewClient(&mcp.Implementation{Name: "e2e-confirm", Version: "1"}, &mcp.ClientOptions{
			ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				mu.Lock()
				defer mu.Unlock()
				schema, _ := json.Marshal(req.Params.RequestedSchema)
				questions = append(questions, req.Params.Mode+" "+req.Params.Message+" "+string(schema))
				if len(answers) == 0 {
					return &mcp.ElicitResult{Action: "cancel"}, nil
				}
				a := answers[0]
				answers = answers[1:]
				return a, nil
			}})
		// An input-required result is answered without passing here; a
		// server-sent elicitation/create passes here.
		client.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
			return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
				if method == "elicitation/create" {
					mu.Lock()
					creates++
					mu.Unlock()
				}
				return next(ctx, method, req)
			}
		})
		asked := func() ([]string, int) {
			mu.Lock()
			defer mu.Unlock()
			return slices.Clone(questions), creates
		}
		cmd := exec.Command(bin, "--demo", "--allow-mutations", "--log-format", "json")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: version})
		if err != nil {
			cancel()
			t.Fatalf("%s: connect: %v", want, err)
		}
		if got := cs.InitializeResult().ProtocolVersion; got != want {
			t.Errorf("%s: negotiated protocol %q", want, got)
		}
		call := func(tool string, args map[string]any) map[string]any {
			t.Helper()
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "plugin_call_tool", Arguments: map[string]any{
				"plugin": "example", "tool": tool, "arguments": args}})
			if err != nil {
				t.Fatalf("%s: %s: %v", want, tool, err)
			}
			var doc map[string]any
			raw, _ := json.Marshal(res.StructuredContent)
			json.Unmarshal(raw, &doc)
			return doc
		}

		mu.Lock()
		answers = append(answers, &mcp.ElicitResult{Action: "accept", Content: map[string]any{"confirm": true}})
		mu.Unlock()
		accepted := call("delete_report", map[string]any{"id": 1})
		if qs, _ := asked(); accepted["status"] != float64(204) || len(qs) != 1 {
			t.Errorf("%s: accepted delete: %v, questions %q", want, accepted, qs)
		} else if q := qs[0]; !strings.HasPrefix(q, "form ") || !strings.Contains(q, "example.delete_report") ||
			!strings.Contains(q, "DELETE /api/plugins/example/reports/") || !strings.Contains(q, `"required":["confirm"]`) {
			t.Errorf("%s: question %q", want, q)
		}
		mu.Lock()
		answers = append(answers, &mcp.ElicitResult{Action: "decline"})
		mu.Unlock()
		declined := call("delete_report", map[string]any{"id": 2})
		if e, _ := declined["error"].(map[string]any); e["code"] != "not_confirmed" || e["dispatched"] != false {
			t.Errorf("%s: declined delete: %v", want, declined)
		}
		list := call("list_reports", map[string]any{})
		if body, _ := json.Marshal(list["body"]); !strings.Contains(string(body), `"count":1`) || !strings.Contains(string(body), `"id":2`) {
			t.Errorf("%s: after accept and decline NetBox holds %s, want report 2 only", want, body)
		}
		cs.Close() // waits for the process, so its stderr is complete
		cancel()

		qs, sent := asked()
		wantSent := 0 // 2026-07-28: the question travels in the call's result
		if want == "2025-11-25" {
			wantSent = 2
		}
		if len(qs) != 2 || sent != wantSent {
			t.Errorf("%s: %d questions, %d of them as elicitation/create (want 2, %d)", want, len(qs), sent, wantSent)
		}

		decisions := map[string]int{}
		for line := range strings.SplitSeq(stderr.String(), "\n") {
			var rec struct{ Msg, Decision string }
			if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "write" {
				decisions[rec.Decision]++
			}
		}
		if decisions["dispatching"] != 1 || decisions["dispatched"] != 1 || decisions["not_confirmed"] != 1 || len(decisions) != 3 {
			t.Errorf("%s: audit decisions %v\n%s", want, decisions, stderr.String())
		}
		if !t.Failed() {
			how := "input-required results"
			if sent > 0 {
				how = "elicitation/create requests"
			}
			t.Logf("e2e: Go SDK client with an ElicitationHandler over %s: %d questions as %s; the accepted delete dispatched %d time (204), the declined one not sent", want, len(qs), how, decisions["dispatched"])
		}
	}
}

// TestE2EPythonClients: the official Python MCP SDK (e2e/python/mcp_client.py)
// over stdio and over stateless streamable HTTP, each at 2026-07-28 (the
// SDK's default, server/discover) and 2025-11-25 (the initialize handshake):
// the catalog, a read, a refused write, dry runs, an allowed write, progress,
// a call cancelled while the bridge waits on a NetBox that stalls it, and the
// session after it. Then the OpenAI Agents SDK (e2e/python/strict_agents.py)
// converts the two tools with and without strict schemas and calls them
// with every optional argument null. The packages are those of
// e2e/python/requirements.txt, in e2e/.venv (.ci/run makes it).
func TestE2EPythonClients(t *testing.T) {
	if os.Getenv("BRIDGE_E2E") != "1" {
		t.Skip("end-to-end Python clients skipped: run with BRIDGE_E2E=1 (needs python3 -m venv e2e/.venv && e2e/.venv/bin/pip install -r e2e/python/requirements.txt) to include them")
	}
	python, _ := filepath.Abs(filepath.Join("e2e", ".venv", "bin", "python"))
	if _, err := os.Stat(python); err != nil {
		t.Fatalf("BRIDGE_E2E=1 needs the Python clients in e2e/.venv: run python3 -m venv e2e/.venv && e2e/.venv/bin/pip install -r e2e/python/requirements.txt (.ci/run does): %v", err)
	}
	bin := releaseBinary(t)
	scripts, _ := filepath.Abs(filepath.Join("e2e", "python"))
	client, agents := filepath.Join(scripts, "mcp_client.py"), filepath.Join(scripts, "strict_agents.py")
	tally := regexp.MustCompile(`(?m)^python .*: (\d+) passed, (\d+) failed$`)
	for _, run := range []struct {
		args      []string
		protocol  string // the negotiated protocol its tally names; "" for the agents
		minPassed int    // fewer means checks went missing
	}{
		{[]string{client, bin, "stdio"}, "2026-07-28", 16},
		{[]string{client, bin, "stdio", "--protocol", "legacy"}, "2025-11-25", 16},
		{[]string{client, bin, "http", freeAddr(t), freeAddr(t), freeAddr(t)}, "2026-07-28", 16},
		{[]string{client, bin, "http", "--protocol", "legacy", freeAddr(t), freeAddr(t), freeAddr(t)}, "2025-11-25", 16},
		{[]string{agents, bin}, "", 13},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		cmd := exec.CommandContext(ctx, python, run.args...)
		var stderr syncBuffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		cancel()
		name := filepath.Base(run.args[0]) + " " + strings.Join(run.args[2:], " ")
		m := tally.FindSubmatch(out)
		if err != nil || m == nil {
			t.Errorf("python %s: %v\n%s\n%s", name, err, out, stderr.String())
			continue
		}
		passed, _ := strconv.Atoi(string(m[1]))
		if string(m[2]) != "0" || passed < run.minPassed || !bytes.Contains(m[0], []byte("(protocol "+run.protocol+")")) && run.protocol != "" {
			t.Errorf("python %s: want at least %d checks passed, none failed, protocol %s; got %q\n%s\n%s",
				name, run.minPassed, run.protocol, m[0], out, stderr.String())
			continue
		}
		for line := range strings.SplitSeq(string(out), "\n") {
			if strings.HasPrefix(line, "info ") { // what the script measured
				t.Logf("e2e: python: %s", line)
			}
		}
		t.Logf("e2e: python: %s", m[0])
	}
}

// TestE2EHAProxy: SPEC §14's shared deployment with real parts. Two
// `serve --http --demo` replicas of the release binary behind HAProxy
// (round-robin, /healthz checks, connection failures retried on the other
// server); the TypeScript SDK's StreamableHTTPClientTransport runs the
// catalog, a read, a refused write and a dry run through it with the
// caller's token. The replicas' access logs show the calls on both; then
// one replica is killed (SIGKILL) mid-run and every later call still
// succeeds through the other.
func TestE2EHAProxy(t *testing.T) {
	dir := nodeClients(t)
	haproxy, err := exec.LookPath("haproxy")
	if err != nil {
		t.Fatalf("BRIDGE_E2E=1 needs haproxy on PATH for the load-balancer end-to-end test (Debian: apt-get install -y haproxy; .ci/run installs it): %v", err)
	}
	bin := releaseBinary(t)

	// A replica keeps its stderr, one JSON record a line.
	type replica struct {
		name string
		cmd  *exec.Cmd
		done chan struct{} // stderr reached EOF
		mu   sync.Mutex
		recs []map[string]any
	}
	start := func(name string) (*replica, string) {
		t.Helper()
		r := &replica{name: name, done: make(chan struct{}),
			cmd: exec.Command(bin, "serve", "--http", "127.0.0.1:0", "--demo", "--log-format", "json")}
		stderr, _ := r.cmd.StderrPipe()
		if err := r.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.cmd.Process.Kill(); <-r.done; r.cmd.Wait() })
		addr := make(chan string, 1)
		go func() {
			defer close(r.done)
			lines := bufio.NewScanner(stderr)
			for lines.Scan() {
				var rec map[string]any
				json.Unmarshal(lines.Bytes(), &rec)
				if u, _ := rec["url"].(string); rec["msg"] == "serving MCP over streamable HTTP" {
					addr <- strings.TrimSuffix(strings.TrimPrefix(u, "http://"), "/mcp")
				}
				r.mu.Lock()
				r.recs = append(r.recs, rec)
				r.mu.Unlock()
			}
		}()
		select {
		case a := <-addr:
			return r, a
		case <-r.done:
		case <-time.After(10 * time.Second):
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		t.Fatalf("replica %s did not start serving HTTP:\n%v", name, r.recs)
		return nil, ""
	}
	// posts counts the access-log records of POST /mcp, by status.
	posts := func(r *replica) (total int, byStatus map[string]int) {
		r.mu.Lock()
		defer r.mu.Unlock()
		byStatus = map[string]int{}
		for _, rec := range r.recs {
			if rec["msg"] == "http" && rec["method"] == "POST" && rec["path"] == "/mcp" {
				total++
				byStatus[fmt.Sprint(rec["status"])]++
			}
		}
		return total, byStatus
	}
	r1, addr1 := start("r1")
	r2, addr2 := start("r2")

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	front := ln.Addr().String()
	ln.Close()
	cfg := filepath.Join(t.TempDir(), "haproxy.cfg")
	os.WriteFile(cfg, fmt.Appendf(nil, `global
    log stdout format raw local0 info

defaults
    mode http
    log global
    log-format "%%b/%%s %%HM %%HU %%ST retries=%%rc"
    timeout connect 2s
    timeout client 30s
    timeout server 30s
    # A refused connection (a dead replica) is retried, each time on another
    # server. HAProxy retries only connection failures, so no write is sent twice.
    retries 3
    option redispatch 1

frontend mcp
    bind %s
    default_backend bridge

backend bridge
    balance roundrobin
    option httpchk GET /healthz
    http-check expect status 200
    default-server check inter 500ms fastinter 200ms downinter 500ms rise 1 fall 2
    server r1 %s
    server r2 %s
`, front, addr1, addr2), 0o600)
	hp := exec.Command(haproxy, "-f", cfg, "-db")
	var hpErr syncBuffer
	hp.Stderr = &hpErr
	hpOut, _ := hp.StdoutPipe()
	if err := hp.Start(); err != nil {
		t.Fatal(err)
	}
	var hpMu sync.Mutex
	var hpLog []string
	hpDone := make(chan struct{})
	go func() {
		defer close(hpDone)
		for lines := bufio.NewScanner(hpOut); lines.Scan(); {
			hpMu.Lock()
			hpLog = append(hpLog, lines.Text())
			hpMu.Unlock()
		}
	}()
	t.Cleanup(func() { hp.Process.Kill(); <-hpDone; hp.Wait() })
	// hpLines returns HAProxy's log lines from index from on.
	hpLines := func(from int) []string {
		hpMu.Lock()
		defer hpMu.Unlock()
		return slices.Clone(hpLog[min(from, len(hpLog)):])
	}
	for deadline := time.Now().Add(10 * time.Second); ; {
		resp, err := http.Get("http://" + front + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("HAProxy on %s never answered /healthz: %v\n%s", front, err, hpErr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}

	type report struct {
		Calls    int               `json:"calls"`
		Requests map[string]int    `json:"requests"`
		Passed   int               `json:"passed"`
		Failed   []json.RawMessage `json:"failed"`
	}
	// client runs e2e/http-client.mjs through HAProxy; between() runs when
	// it pauses after its first round.
	client := func(rounds int, between func()) report {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		args := []string{filepath.Join(dir, "http-client.mjs"), "http://" + front + "/mcp", "--rounds", strconv.Itoa(rounds)}
		if between != nil {
			args = append(args, "--pause-after", "1")
		}
		cmd := exec.CommandContext(ctx, "node", args...)
		stdin, _ := cmd.StdinPipe()
		stdout, _ := cmd.StdoutPipe()
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		var out []string
		for lines := bufio.NewScanner(stdout); lines.Scan(); {
			out = append(out, lines.Text())
			if lines.Text() == `{"paused":1}` {
				between()
				io.WriteString(stdin, "go on\n")
			}
		}
		err := cmd.Wait()
		var rep report
		if len(out) == 0 || json.Unmarshal([]byte(out[len(out)-1]), &rep) != nil || err != nil || len(rep.Failed) > 0 || rep.Calls != 4*rounds {
			t.Fatalf("http-client.mjs, %d rounds: %v\n%s\n%s\nHAProxy:\n%s", rounds, err, strings.Join(out, "\n"), stderr.String(),
				strings.Join(hpLines(0), "\n"))
		}
		return rep
	}
	// settle waits until the replicas logged want POSTs to /mcp in all: a
	// record is written when its response is done, maybe after the client
	// has read it.
	settle := func(want int, rs ...*replica) {
		t.Helper()
		got := 0
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			got = 0
			for _, r := range rs {
				n, _ := posts(r)
				got += n
			}
			if got >= want {
				break
			}
		}
		if got != want {
			t.Fatalf("the replicas logged %d POSTs to /mcp, the client sent %d", got, want)
		}
	}
	sent := func(rep report) int { // the client's POSTs, and its 401 probe
		return rep.Requests["POST 200"] + rep.Requests["POST 202"] + 1
	}

	// Both replicas up: the calls are spread over both.
	first := client(2, nil)
	settle(sent(first), r1, r2)
	n1, s1 := posts(r1)
	n2, s2 := posts(r2)
	if n1 == 0 || n2 == 0 {
		t.Fatalf("round-robin: r1 answered %d POSTs to /mcp, r2 %d; want both", n1, n2)
	}
	if s1["401"]+s2["401"] != 1 || s1["200"]+s1["202"]+s2["200"]+s2["202"] != sent(first)-1 {
		t.Errorf("access-log statuses r1 %v, r2 %v", s1, s2)
	}
	t.Logf("e2e: HAProxy round-robin, two replicas: %d calls checked (%d checks passed), %d POSTs to /mcp: r1 answered %d, r2 %d",
		first.Calls, first.Passed, sent(first), n1, n2)

	// r1 is killed mid-run, between the client's first and second round.
	var killedAt, r2Before int
	second := client(3, func() {
		settle(n1+n2+1+1+1+4, r1, r2) // the 401 probe, initialize, initialized, 4 calls
		r2Before, _ = posts(r2)
		// HAProxy logs a request after the replica has: wait for its lines of
		// them too, so that the last answer of r1 is not read as after the kill.
		logged := func() int {
			return len(slices.DeleteFunc(hpLines(0), func(l string) bool { return !strings.Contains(l, " POST /mcp ") }))
		}
		for deadline := time.Now().Add(5 * time.Second); logged() < n1+n2+1+1+1+4 && time.Now().Before(deadline); {
			time.Sleep(10 * time.Millisecond)
		}
		killedAt = len(hpLines(0))
		r1.cmd.Process.Signal(syscall.SIGKILL)
		<-r1.done
	})
	r2Now := 0
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if r2Now, _ = posts(r2); r2Now >= r2Before+8 {
			break
		}
	}
	if r2Now < r2Before+8 { // rounds 2 and 3: 4 calls each
		t.Errorf("after r1 was killed r2 answered %d POSTs, want at least 8", r2Now-r2Before)
	}
	// And a new client after the kill: initialize and all through r2.
	third := client(1, nil)
	after := hpLines(killedAt)
	redispatched, toR1 := 0, 0
	for _, line := range after {
		if strings.HasPrefix(line, "bridge/r2 ") && strings.Contains(line, "retries=+") {
			redispatched++ // first sent to r1, refused, then to r2
		}
		if strings.HasPrefix(line, "bridge/r1 ") {
			toR1++
		}
	}
	if toR1 != 0 {
		t.Errorf("HAProxy answered %d requests from the killed r1:\n%s", toR1, strings.Join(after, "\n"))
	}
	down := slices.ContainsFunc(after, func(l string) bool { return strings.Contains(l, "r1 is DOWN") })
	t.Logf("e2e: HAProxy, r1 killed (SIGKILL) mid-run: %d calls after the kill (%d in the running client, %d in a new one) all answered by r2 (those two runs passed all %d checks); %d requests refused by the dead r1 were redispatched to r2; r1 marked DOWN by the health check during the run: %t",
		second.Calls-4+third.Calls, second.Calls-4, third.Calls, second.Passed+third.Passed, redispatched, down)

	// The survivor drains and exits 0 on SIGTERM.
	r2.cmd.Process.Signal(syscall.SIGTERM)
	<-r2.done
	if err := r2.cmd.Wait(); err != nil {
		t.Errorf("r2 after SIGTERM: %v", err)
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

// ---- scan performance and process memory (SPEC §10, §11) ----

// floorServerEnv selects the floor server mode of the test binary, for
// BenchmarkHTTPLoad: its value is the address to listen on, and
// floorNetBoxEnv the NetBox's base URL.
const (
	floorServerEnv = "BRIDGE_FLOOR_SERVER"
	floorNetBoxEnv = "BRIDGE_FLOOR_NETBOX"
)

// TestMain runs the tests, or, re-executed by BenchmarkHTTPLoad, the floor
// server: a process of its own, like the serve --http it is compared with,
// without a second main package.
func TestMain(m *testing.M) {
	if addr := os.Getenv(floorServerEnv); addr != "" {
		fmt.Fprintln(os.Stderr, "floor server:", floorServer(addr, os.Getenv(floorNetBoxEnv)))
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// floorServer is BenchmarkHTTPLoad's floor: a minimal stateless go-sdk
// server whose one tool makes the same three GETs as a read call of the
// bridge (the plugin's root and manifest at once, then the target) and
// checks each body only with json.Valid.
func floorServer(addr, netbox string) error {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns, tr.MaxIdleConnsPerHost = 256, 256
	c := &http.Client{Transport: tr}
	get := func(ctx context.Context, path string) ([]byte, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, netbox+path, nil)
		req.Header.Set("Authorization", catalogAuth)
		resp, err := c.Do(req)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err == nil && (resp.StatusCode != http.StatusOK || !json.Valid(body)) {
			err = fmt.Errorf("GET %s: HTTP %d", path, resp.StatusCode)
		}
		return body, err
	}
	server := mcp.NewServer(&mcp.Implementation{Name: "floor", Version: "1"}, nil)
	server.AddTool(&mcp.Tool{Name: "plugin_call_tool", InputSchema: json.RawMessage(`{"type": "object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var args struct{ Plugin string }
			json.Unmarshal(req.Params.Arguments, &args)
			root := "/api/plugins/" + args.Plugin + "/"
			var wg sync.WaitGroup
			var manifestErr error
			wg.Go(func() { _, manifestErr = get(ctx, root+"mcp/") })
			_, err := get(ctx, root)
			wg.Wait()
			var body []byte
			if err == nil && manifestErr == nil {
				body, err = get(ctx, root+"reports/?limit=5")
			} else if err == nil {
				err = manifestErr
			}
			if err != nil {
				return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: err.Error()}}}, nil
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(body)}}, StructuredContent: json.RawMessage(body)}, nil
		})
	return http.ListenAndServe(addr, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server },
		&mcp.StreamableHTTPOptions{Stateless: true}))
}

// catalogAuth is the Authorization the catalog server requires.
const catalogAuth = "Token 0123456789abcdef0123456789abcdef0cata000" // 40 characters: a caller may send it over HTTP

func catalogSlug(i int) string { return fmt.Sprintf("p%03d", i) }

// catalogServer is a NetBox reduced to what the process benchmarks need:
// precomputed documents served with Content-Length after a fixed latency,
// and a count of the requests in flight. Plugin i is catalogSlug(i); its
// targets answer every GET under the plugin with a small document.
type catalogServer struct {
	srv      *httptest.Server
	base     string
	latency  time.Duration
	docs     map[string][]byte
	inFlight atomic.Int32
	peak     atomic.Int32 // of every request
	targets  atomic.Int32 // target requests in flight
	tpeak    atomic.Int32
	// When hold > 0, target requests wait until hold of them are in flight
	// (or 10 s pass), so a test can tell concurrency from timing.
	hold    int32
	allHere chan struct{}
}

// newCatalogServer serves one plugin per manifest, each manifest a function
// of its slug.
func newCatalogServer(t testing.TB, latency time.Duration, plugins int, manifest func(slug string) string) *catalogServer {
	s := &catalogServer{latency: latency, docs: map[string][]byte{}}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	s.base = s.srv.URL
	var list strings.Builder
	list.WriteString("{")
	for i := range plugins {
		slug := catalogSlug(i)
		if i > 0 {
			list.WriteString(", ")
		}
		fmt.Fprintf(&list, "%q: %q", slug, s.base+"/api/plugins/"+slug+"/")
		s.docs["/api/plugins/"+slug+"/"] = fmt.Appendf(nil, `{"mcp": {"schema_version": "1", "manifest": "%s/api/plugins/%s/mcp/"}, "widgets": "%s/api/plugins/%s/widgets/"}`,
			s.base, slug, s.base, slug)
		s.docs["/api/plugins/"+slug+"/mcp/"] = []byte(manifest(slug))
	}
	list.WriteString("}")
	s.docs["/api/plugins/"] = []byte(list.String())
	return s
}

// discoveryBytes is the sum of the discovery bodies of one full scan.
func (s *catalogServer) discoveryBytes() int {
	n := 0
	for _, d := range s.docs {
		n += len(d)
	}
	return n
}

func (s *catalogServer) serve(w http.ResponseWriter, r *http.Request) {
	n := s.inFlight.Add(1)
	defer s.inFlight.Add(-1)
	for p := s.peak.Load(); n > p && !s.peak.CompareAndSwap(p, n); p = s.peak.Load() {
	}
	doc, found := s.docs[r.URL.Path]
	if !found && r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/api/plugins/") && strings.Count(r.URL.Path, "/") > 4 {
		doc, found = []byte(`{"count": 1, "results": [{"id": 1, "site": "ams1", "status": "done", "created": "2026-11-30T08:00:00Z"}]}`), true
		n := s.targets.Add(1)
		defer s.targets.Add(-1)
		for p := s.tpeak.Load(); n > p && !s.tpeak.CompareAndSwap(p, n); p = s.tpeak.Load() {
		}
		if s.hold > 0 {
			if n == s.hold {
				close(s.allHere)
			}
			select {
			case <-s.allHere:
			case <-time.After(10 * time.Second):
			}
		}
	}
	if s.latency > 0 {
		select {
		case <-time.After(s.latency):
		case <-r.Context().Done():
			return
		}
	}
	status := http.StatusOK
	switch {
	case r.Header.Get("Authorization") != catalogAuth:
		status, doc = http.StatusForbidden, []byte(`{"detail": "Invalid token."}`)
	case !found:
		status, doc = http.StatusNotFound, []byte(`{"detail": "Not found."}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(doc)))
	w.WriteHeader(status)
	w.Write(doc)
}

// env is the environment of a bridge process against this server.
func (s *catalogServer) env(t testing.TB) []string {
	return []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "NETBOX_URL=" + s.base,
		"NETBOX_TOKEN=" + strings.TrimPrefix(catalogAuth, "Token ")}
}

// benchManifest is a plugin manifest of four typical tools (about 3 KB): a
// list and a get with outputSchemas, a create and a delete.
func benchManifest(slug string) string {
	return `{"schema_version": "1", "plugin": "` + slug + `", "tools": [
  {"name": "list_reports", "title": "List inventory reports", "description": "List the inventory reports visible to the current NetBox principal, newest first.", "method": "GET", "path": "reports/", "effect": "read",
   "inputSchema": {"type": "object", "properties": {"status": {"type": "string", "enum": ["queued", "done", "failed"]}, "limit": {"type": "integer", "minimum": 1, "maximum": 100, "default": 20}, "site": {"type": "array", "items": {"type": "string", "maxLength": 100}, "maxItems": 10, "uniqueItems": true}, "since": {"type": "string", "format": "date-time"}}, "additionalProperties": false},
   "outputSchema": {"type": "object", "properties": {"count": {"type": "integer", "minimum": 0}, "results": {"type": "array", "items": {"type": "object", "properties": {"id": {"type": "integer", "minimum": 1}, "site": {"type": "string"}, "status": {"type": "string", "enum": ["queued", "done", "failed"]}, "created": {"type": "string", "format": "date-time"}}, "required": ["id", "site", "status", "created"], "additionalProperties": false}}}, "required": ["count", "results"], "additionalProperties": false},
   "annotations": {"readOnlyHint": true, "destructiveHint": false, "idempotentHint": true, "openWorldHint": false}},
  {"name": "get_report", "title": "Get one inventory report", "description": "Read one inventory report by its id, with the devices it counted.", "method": "GET", "path": "reports/one/", "effect": "read",
   "inputSchema": {"type": "object", "properties": {"id": {"type": "integer", "minimum": 1}, "brief": {"type": "boolean", "default": false}}, "required": ["id"], "additionalProperties": false},
   "outputSchema": {"type": "object", "properties": {"id": {"type": "integer", "minimum": 1}, "site": {"type": "string"}, "devices": {"type": "array", "items": {"type": "object", "properties": {"name": {"type": "string"}, "serial": {"type": ["string", "null"]}}, "required": ["name"]}}}, "required": ["id", "site", "devices"]},
   "annotations": {"readOnlyHint": true, "destructiveHint": false, "idempotentHint": true, "openWorldHint": false}},
  {"name": "run_report", "title": "Run an inventory report", "description": "Queue an inventory report for one site, or for every site when site is omitted.", "method": "POST", "path": "reports/run/", "effect": "write",
   "inputSchema": {"type": "object", "properties": {"site": {"type": "string", "minLength": 1, "maxLength": 100}, "scope": {"type": "string", "enum": ["active", "all"]}}, "required": ["scope"], "additionalProperties": false},
   "outputSchema": {"type": "object", "properties": {"id": {"type": "integer", "minimum": 1}, "status": {"const": "queued"}}, "required": ["id", "status"], "additionalProperties": false},
   "annotations": {"readOnlyHint": false, "destructiveHint": false, "idempotentHint": false, "openWorldHint": false}},
  {"name": "delete_report", "title": "Delete an inventory report", "description": "Delete one finished inventory report and its results. This cannot be undone.", "method": "DELETE", "path": "reports/delete/", "effect": "destructive",
   "inputSchema": {"type": "object", "properties": {"id": {"type": "integer", "minimum": 1}}, "required": ["id"], "additionalProperties": false},
   "annotations": {"readOnlyHint": false, "destructiveHint": true, "idempotentHint": true, "openWorldHint": false}}]}`
}

// timeProcess runs cmd to its end and returns its wall time.
func timeProcess(b *testing.B, cmd *exec.Cmd) time.Duration {
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	start := time.Now()
	err := cmd.Run()
	elapsed := time.Since(start)
	if err != nil {
		b.Fatalf("%s: %v\n%s", cmd.Path, err, stderr.Bytes())
	}
	return elapsed
}

// BenchmarkScanFloor is SPEC §10's full scan, 128 advertising plugins of 4
// tools behind 10 ms and 20 ms of latency, measured as the wall time of the
// whole `scan --json` process of the release binary, alternating in one run
// with the floor client (testdata/floor, built the same way). It reports
// both and their ratio, the goal being 1.02 at most.
func BenchmarkScanFloor(b *testing.B) {
	bin := releaseBinary(b)
	self := filepath.Join(b.TempDir(), "floor")
	build := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", self, "./testdata/floor")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("building the floor client: %v\n%s", err, out)
	}
	devNull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer devNull.Close()
	for _, latency := range []time.Duration{10 * time.Millisecond, 20 * time.Millisecond} {
		b.Run(fmt.Sprintf("latency=%v", latency), func(b *testing.B) {
			s := newCatalogServer(b, latency, specScanRoots, benchManifest)
			env := s.env(b)
			scan := func() *exec.Cmd {
				cmd := exec.Command(bin, "scan", "--json")
				cmd.Env = env
				return cmd
			}
			floor := func() *exec.Cmd {
				cmd := exec.Command(self, s.base, strconv.Itoa(specScanRoots), catalogAuth)
				cmd.Env = env
				return cmd
			}
			// Once, untimed: the scan finds every tool, the floor succeeds.
			out, err := scan().Output()
			var doc struct { // the index: tools grouped by plugin
				Plugins  []struct{ Tools []json.RawMessage }
				Problems []json.RawMessage
			}
			if err != nil || json.Unmarshal(out, &doc) != nil || len(doc.Plugins) != specScanRoots || len(doc.Plugins[0].Tools) != 4 || len(doc.Problems) != 0 {
				b.Fatalf("scan: %v, %d plugins, problems %s", err, len(doc.Plugins), doc.Problems)
			}
			if out, err := floor().CombinedOutput(); err != nil {
				b.Fatalf("floor client: %v\n%s", err, out)
			}
			var scanTime, floorTime time.Duration
			i := 0
			for b.Loop() {
				cmds := [2]*exec.Cmd{scan(), floor()}
				cmds[0].Stdout, cmds[1].Stdout = devNull, devNull
				order := [2]int{0, 1}
				if i%2 == 1 {
					order = [2]int{1, 0}
				}
				i++
				for _, k := range order {
					if k == 0 {
						scanTime += timeProcess(b, cmds[0])
					} else {
						floorTime += timeProcess(b, cmds[1])
					}
				}
			}
			n := float64(b.N)
			b.ReportMetric(float64(scanTime)/n, "scan-ns/op")
			b.ReportMetric(float64(floorTime)/n, "floor-ns/op")
			b.ReportMetric(float64(scanTime)/n/float64(latency), "scan-RT/op")
			b.ReportMetric(float64(floorTime)/n/float64(latency), "floor-RT/op")
			b.ReportMetric(float64(scanTime)/float64(floorTime), "scan/floor")
		})
	}
}

// BenchmarkParseManifest is the cost of one typical manifest (benchManifest,
// about 3 KB), from bytes to descriptors and compiled schemas.
func BenchmarkParseManifest(b *testing.B) {
	data := []byte(benchManifest("p000"))
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, ps := parseManifest(data); len(ps) > 0 {
			b.Fatal(ps)
		}
	}
}

// BenchmarkCatalogDocument is the scan's output for the maximal catalog of
// typical tools (128 plugins of 4): the index rendered, and what a model
// pays for it and for one plugin's full descriptors, in bytes and in
// tokens estimated as bytes / 4.
func BenchmarkCatalogDocument(b *testing.B) {
	cat := &catalog{}
	for i := range specScanRoots {
		slug := catalogSlug(i)
		m, ps := parseManifest([]byte(benchManifest(slug)))
		if len(ps) > 0 {
			b.Fatal(ps)
		}
		cat.add(slug, m)
	}
	cat.sort()
	index := catalogDocument(cat, false)
	one := catalogDocument(&catalog{plugin: "p000", tools: cat.tools[:4]}, true)
	b.SetBytes(int64(len(index)))
	b.ReportAllocs()
	for b.Loop() {
		catalogDocument(cat, false)
	}
	b.ReportMetric(float64(len(renderCatalog(cat, "full", 0, 0))), "full-bytes")
	b.ReportMetric(float64(len(index)), "index-bytes")
	b.ReportMetric(float64(len(index)/4), "index-tokens")
	b.ReportMetric(float64(len(one)), "plugin-bytes")
	b.ReportMetric(float64(len(one)/4), "plugin-tokens")
}

// serveProcess is the release binary's serve command, spoken to in
// newline-delimited JSON-RPC on its stdio.
type serveProcess struct {
	t      testing.TB
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Reader
	stderr bytes.Buffer
}

func startServe(t testing.TB, env []string) *serveProcess { return startServeTo(t, env, nil) }

// startServeTo starts serve with args, its stderr to stderr, or when that
// is nil to p.stderr.
func startServeTo(t testing.TB, env []string, stderr io.Writer, args ...string) *serveProcess {
	p := &serveProcess{t: t, cmd: exec.Command(releaseBinary(t), append([]string{"serve"}, args...)...)}
	p.cmd.Env = env
	p.cmd.Stderr = cmp.Or[io.Writer](stderr, &p.stderr)
	p.in, _ = p.cmd.StdinPipe()
	stdout, _ := p.cmd.StdoutPipe()
	p.out = bufio.NewReaderSize(stdout, 1<<20)
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.cmd.Process.Kill(); p.cmd.Wait() })
	p.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	if line := p.reply(); !bytes.Contains(line, []byte(`"id":0`)) {
		t.Fatalf("initialize: %s", line)
	}
	p.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return p
}

func (p *serveProcess) send(line string) {
	if _, err := io.WriteString(p.in, line+"\n"); err != nil {
		p.t.Fatalf("writing to serve: %v\n%s", err, p.stderr.Bytes())
	}
}

// reply reads the next line the process writes.
func (p *serveProcess) reply() []byte {
	line, err := p.out.ReadBytes('\n')
	if err != nil {
		p.t.Fatalf("reading from serve: %v\n%s", err, p.stderr.Bytes())
	}
	return line
}

// peakRSS is the process's peak resident set (VmHWM) in bytes.
func (p *serveProcess) peakRSS() int64 {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		p.t.Fatal(err)
	}
	for line := range strings.Lines(string(status)) {
		if kb, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(kb), "kB")), 10, 64)
			return n << 10
		}
	}
	p.t.Fatalf("no VmHWM in %s", status)
	return 0
}

// toolCall is the JSON-RPC line of a tools/call.
func toolCall(id int, name, arguments string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":%s}}`, id, name, arguments)
}

// maximalCatalog is a legal catalog of the largest size a scan accepts:
// plugins manifests of tools each, whose bodies with the plugin list and the
// roots make just under the scan's 2 MiB. Each tool has props input
// properties (half of them again in its outputSchema); with enum > 0 each
// property is an integer enum of that many values, the densest shape for a
// decoded tree, else a described string. Tool descriptions (up to 2,000
// characters) and then the inputSchema's description take the rest.
type maximalCatalog struct {
	name                        string
	plugins, tools, props, enum int
}

var maximalCatalogs = []maximalCatalog{
	{"128 plugins of 4 tools, long descriptions and schemas", 128, 4, 12, 0},
	{"128 plugins of 4 tools, dense values", 128, 4, 12, 50},
	{"8 plugins of 64 tools, dense values", 8, 64, 4, 20},
}

// size is the size of each manifest.
func (c maximalCatalog) size() int {
	return min((specScanBytes-32<<10)/c.plugins, specManifestBytes-16)
}

func (c maximalCatalog) manifest(slug string) string {
	var props []string
	for j := range c.props {
		if c.enum > 0 {
			var enum []string
			for k := range c.enum {
				enum = append(enum, strconv.Itoa(k))
			}
			props = append(props, fmt.Sprintf(`"f%02d": {"type": "integer", "enum": [%s]}`, j, strings.Join(enum, ",")))
		} else {
			props = append(props, fmt.Sprintf(`"field_%02d": {"type": "string", "title": "Field %d", "description": "Only the records whose field %d matches this value exactly.", "maxLength": 64}`, j, j, j))
		}
	}
	output := `{"type": "object", "properties": {"count": {"type": "integer", "minimum": 0}, "results": {"type": "array", "items": {"type": "object", "properties": {` +
		strings.Join(props[:c.props/2], ", ") + `}}}}}`
	tool := func(i, pad int) string {
		method, effect, ro, destructive := "GET", "read", true, false
		switch i % 4 {
		case 2:
			method, effect, ro = "POST", "write", false
		case 3:
			method, effect, ro, destructive = "DELETE", "destructive", false, true
		}
		text := strings.Repeat("Describes the operation at length. ", pad/35+1)
		desc, more := text[:min(pad, 2000)], text[:max(pad-2000, 0)]
		return fmt.Sprintf(`{"name": "tool_%d", "title": "Tool %d of %s", "description": %q, "method": %q, "path": "things/%d/", "effect": %q,
   "inputSchema": {"type": "object", "description": %q, "properties": {%s}, "additionalProperties": false},
   "outputSchema": %s,
   "annotations": {"readOnlyHint": %t, "destructiveHint": %t, "idempotentHint": true, "openWorldHint": false}}`,
			i, i, slug, desc, method, i, effect, more, strings.Join(props, ", "), output, ro, destructive)
	}
	doc := func(pad int) string {
		var tools []string
		for i := range c.tools {
			tools = append(tools, tool(i, pad))
		}
		return `{"schema_version": "1", "plugin": "` + slug + `", "tools": [` + strings.Join(tools, ",\n  ") + `]}`
	}
	pad := (c.size() - len(doc(1))) / c.tools // each tool grows by pad
	m := doc(1 + pad)
	return m + strings.Repeat(" ", c.size()-len(m))
}

// processMemoryLimit is SPEC §11's bound on the peak RSS of one process.
const processMemoryLimit = 64 << 20

// TestServeMemoryBounded: the release binary's serve process stays under
// 64 MiB of peak RSS (VmHWM) with 32 concurrent full scans of each maximal
// catalog, and with 32 request lines over, or just under, the 1 MiB line
// limit (SPEC §11).
func TestServeMemoryBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the release binary against 128 plugins")
	}
	for _, c := range maximalCatalogs {
		t.Run("32 full scans of "+c.name, func(t *testing.T) {
			s := newCatalogServer(t, 2*time.Millisecond, c.plugins, c.manifest)
			if n := s.discoveryBytes(); n >= specScanBytes || n < specScanBytes-48<<10 {
				t.Fatalf("the catalog has %d bytes of discovery bodies, want just under %d", n, specScanBytes)
			}
			if _, ps := parseManifest([]byte(c.manifest("p000"))); len(ps) > 0 {
				t.Fatalf("the manifest is not valid: %v", ps)
			}
			p := startServe(t, s.env(t))
			start := time.Now()
			for id := 1; id <= 32; id++ { // 32 callers: no scan is shared
				p.send(toolCall(id, "plugin_list_tools", fmt.Sprintf(`{"header": ["X-Caller: %d"]}`, id)))
			}
			for range 32 {
				line := p.reply()
				var reply struct {
					Result struct{ StructuredContent json.RawMessage }
				}
				json.Unmarshal(line, &reply)
				if n := bytes.Count(reply.Result.StructuredContent, []byte(`{"name":"`)); n != specScanTools || bytes.Contains(line, []byte(`"isError":true`)) ||
					len(reply.Result.StructuredContent) > specIndexLimit || !bytes.Contains(line, []byte(`"detail":"index"`)) {
					t.Fatalf("a reply with %d tools, %d bytes of structured content: %s", n, len(reply.Result.StructuredContent), clip(string(line), 2000))
				}
			}
			peak := p.peakRSS()
			t.Logf("memory: 32 concurrent full scans of %s, %d bytes of discovery bodies: peak RSS %.1f MiB (%.1f s)",
				c.name, s.discoveryBytes(), float64(peak)/(1<<20), time.Since(start).Seconds())
			if peak >= processMemoryLimit {
				t.Errorf("peak RSS %d bytes, want under %d", peak, processMemoryLimit)
			}
		})
	}
	// Lines over the limit are garbage by definition (-32700); lines just
	// under it reach the SDK, whose tool handler refuses their arguments.
	line := func(id, size int) string {
		envelope := `{"jsonrpc":"2.0","id":%2d,"method":"tools/call","params":{"name":"plugin_list_tools","arguments":{"plugin":"%s"}}}`
		return fmt.Sprintf(envelope, id, strings.Repeat("x", size-len(envelope)+3)) // the id takes 2 of the 5 bytes of %2d and %s
	}
	for _, c := range []struct {
		name  string
		size  int
		reply string
	}{
		{"32 oversize request lines of 4 MiB", 4 << 20, "-32700"},
		{"32 request lines just under the 1 MiB limit", maxLineLength - 1, `"isError":true`}, // and the newline
	} {
		t.Run(c.name, func(t *testing.T) {
			if n := len(line(10, c.size)); n != c.size {
				t.Fatalf("a line of %d bytes, want %d", n, c.size)
			}
			p := startServe(t, []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()})
			go func() {
				for id := 10; id < 42; id++ {
					if _, err := io.WriteString(p.in, line(id, c.size)+"\n"); err != nil {
						return // the reader below reports it
					}
				}
			}()
			for range 32 {
				if reply := p.reply(); !bytes.Contains(reply, []byte(c.reply)) {
					t.Fatalf("reply %s", clip(string(reply), 500))
				}
			}
			peak := p.peakRSS()
			t.Logf("memory: %s: peak RSS %.1f MiB", c.name, float64(peak)/(1<<20))
			if peak >= processMemoryLimit {
				t.Errorf("peak RSS %d bytes, want under %d", peak, processMemoryLimit)
			}
		})
	}
}

// TestServeConcurrentReads: the process-wide gate does not serialize
// ordinary calls (SPEC §11): 64 concurrent plugin_call_tool reads of a
// plugin with a small manifest are all in flight at the target at once.
func TestServeConcurrentReads(t *testing.T) {
	s := newCatalogServer(t, 50*time.Millisecond, 1, benchManifest)
	s.hold, s.allHere = 64, make(chan struct{})
	p := startServe(t, s.env(t))
	start := time.Now()
	for id := 1; id <= 64; id++ {
		p.send(toolCall(id, "plugin_call_tool", `{"plugin":"p000","tool":"list_reports","arguments":{"limit":5}}`))
	}
	for range 64 {
		if line := p.reply(); !bytes.Contains(line, []byte(`"status":200`)) || bytes.Contains(line, []byte(`"isError":true`)) {
			t.Fatalf("reply %s", line)
		}
	}
	t.Logf("concurrency: 64 plugin_call_tool reads behind %v: %d target requests in flight at once, %d requests of any kind, %.1f latencies",
		s.latency, s.tpeak.Load(), s.peak.Load(), float64(time.Since(start))/float64(s.latency))
	if n := s.tpeak.Load(); n != 64 {
		t.Errorf("at most %d of 64 reads were in flight at once", n)
	}
}

// TestCheapTreeIsTheSameTree: the decoder's shortcuts (strings cut from one
// copy of the document, arrays of the exact size, appendString's runs) give
// what the plain way gives, on every valid document of the JSON test suite
// and the test manifests.
func TestCheapTreeIsTheSameTree(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("testdata", "conformance", "json-test-suite", "*.json"))
	more, _ := filepath.Glob(filepath.Join("testdata", "manifests", "*.json"))
	docs := [][]byte{[]byte(benchManifest("p000")), []byte(maximalCatalogs[1].manifest("p000")), []byte(`{"a\n\u00e9\"": ["\ud83d\ude00", "x\\/y", -0.5e3, {}, []]}`)}
	for _, f := range append(files, more...) {
		data, _ := os.ReadFile(f)
		docs = append(docs, data)
	}
	checked := 0
	for _, data := range docs {
		v, err := decode(data, rootLimits)
		if err != nil {
			continue
		}
		checked++
		var plain any
		if json.Unmarshal(data, &plain) != nil {
			t.Fatalf("%.60q: decoded, but encoding/json refuses it", data)
		}
		enc := encode(v)
		var again any
		if json.Unmarshal(enc, &again) != nil || !reflect.DeepEqual(plain, again) {
			t.Errorf("%.60q: encoded as %.60q", data, enc)
		}
	}
	if checked < 100 {
		t.Fatalf("only %d documents checked", checked)
	}
	// appendString against the rule of SPEC §9, character by character:
	// every control character (Unicode Cc: C0, DEL, C1) escaped, on every
	// byte and every character up to U+00FF.
	plainString := func(s string) []byte {
		b := []byte{'"'}
		for i := 0; i < len(s); {
			r, n := utf8.DecodeRuneInString(s[i:]) // a byte that is not UTF-8 is copied as it is
			switch {
			case r == '"' || r == '\\':
				b = append(b, '\\', byte(r))
			case r == '\n':
				b = append(b, '\\', 'n')
			case r < 0x20 || 0x7f <= r && r <= 0x9f:
				b = append(b, fmt.Sprintf(`\u%04x`, r)...)
			default:
				b = append(b, s[i:i+n]...)
			}
			i += n
		}
		return append(b, '"')
	}
	for c := range 256 {
		for _, s := range []string{string(rune(c)), string([]byte{byte(c)}), "ab" + string([]byte{byte(c)}) + "cd" + string([]byte{byte(c)})} {
			if got, want := appendString(nil, s), plainString(s); !bytes.Equal(got, want) {
				t.Errorf("appendString(%q) = %q, want %q", s, got, want)
			}
		}
	}
}

// TestServeExitsCleanly: SPEC §11, the release binary ends with status 0
// when stdin closes and when it gets SIGTERM or SIGINT, at once even with a
// call in flight (it is cancelled, its reply never written), logging at
// info, not error.
func TestServeExitsCleanly(t *testing.T) {
	bin := releaseBinary(t)
	f := newInvNetBox(t)
	entered := make(chan struct{}, 8)
	f.handle(searchPath, func(w http.ResponseWriter, r *http.Request) {
		entered <- struct{}{}
		<-r.Context().Done() // answers only when the bridge gives up
	})
	for _, stop := range []string{"stdin EOF", "SIGTERM", "SIGINT"} {
		for _, inFlight := range []bool{false, true} {
			cmd := exec.Command(bin)
			cmd.Env = append(os.Environ(), "NETBOX_URL="+f.URL, "NETBOX_TOKEN="+fakeToken, "NETBOX_TIMEOUT=30", "HOME="+t.TempDir())
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			stdin, _ := cmd.StdinPipe()
			stdout, _ := cmd.StdoutPipe()
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			out := bufio.NewReader(stdout)
			io.WriteString(stdin, initializeLine+"\n")
			if line, err := out.ReadString('\n'); err != nil || !strings.Contains(line, `"id":1`) {
				t.Fatalf("%s: no initialize reply: %q %v", stop, line, err)
			}
			io.WriteString(stdin, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")
			if inFlight {
				io.WriteString(stdin, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"plugin_call_tool","arguments":{"plugin":"inv","tool":"search"}}}`+"\n")
				select {
				case <-entered:
				case <-time.After(10 * time.Second):
					t.Fatalf("%s: the call never reached NetBox", stop)
				}
			}
			start := time.Now()
			switch stop {
			case "stdin EOF":
				stdin.Close()
			case "SIGTERM":
				cmd.Process.Signal(syscall.SIGTERM)
			default:
				cmd.Process.Signal(os.Interrupt)
			}
			rest, _ := io.ReadAll(out)
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("%s (in flight %t): %v\n%s", stop, inFlight, err, stderr.String())
				}
			case <-time.After(10 * time.Second):
				cmd.Process.Kill()
				t.Fatalf("%s (in flight %t): still running after 10 s", stop, inFlight)
			}
			// Far below the 30 s the NetBox request would wait; SPEC asks for 1 s.
			if elapsed := time.Since(start); elapsed > 3*time.Second {
				t.Errorf("%s (in flight %t): exited after %v", stop, inFlight, elapsed)
			}
			if len(rest) != 0 {
				t.Errorf("%s (in flight %t): written to stdout after the stop: %q", stop, inFlight, rest)
			}
			if log := stderr.String(); strings.Contains(log, "level=ERROR") || !strings.Contains(log, "level=INFO") ||
				!strings.Contains(log, "calls in flight were cancelled") {
				t.Errorf("%s (in flight %t): log\n%s", stop, inFlight, log)
			}
		}
	}
}

// TestServeTerminalHint: the bare command on a terminal (here /dev/null, a
// character device as a terminal is) says what it is and how to try it.
func TestServeTerminalHint(t *testing.T) {
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer devnull.Close()
	var stdout, stderr bytes.Buffer
	if code := run(nil, devnull, &stdout, &stderr, testEnv(t.TempDir(), nil)); code != 0 || stdout.Len() != 0 ||
		!strings.Contains(stderr.String(), "this is an MCP stdio server") || !strings.Contains(stderr.String(), "scan --demo") {
		t.Errorf("serve on a terminal: %d %q %q", code, stdout.String(), stderr.String())
	}
}

// TestScanOutputIsPrintable: titles and problems from NetBox cannot put
// escape sequences or extra lines on the operator's terminal.
func TestScanOutputIsPrintable(t *testing.T) {
	var out bytes.Buffer
	hostile := readTool("list")
	hostile.Title = "List\x1b[2J\rfake line\u009b2J\u0085"
	tl := manifestJSON("p", hostile)
	m, ps := parseManifest([]byte(tl))
	if len(ps) > 0 {
		t.Fatal(ps)
	}
	cat := &catalog{problems: []scanProblem{{"evil\x1b]0;x\x07", "discovery_failed", "bad\nline"}}}
	cat.add("p", m)
	printCatalog(&out, cat)
	if strings.ContainsAny(out.String(), "\x1b\r\x07\u009b\u0085") || strings.Contains(out.String(), "bad\nline") {
		t.Fatalf("control characters reached the terminal: %q", out.String())
	}
	// scan --json escapes every control character, C1 too (SPEC §9, issue 28).
	for _, full := range []bool{true, false} {
		doc := string(catalogDocument(cat, full))
		if strings.ContainsFunc(doc, unicode.IsControl) || !strings.Contains(doc, `\u009b2J\u0085`) {
			t.Errorf("full %t: a control character in the JSON, or not escaped: %q", full, doc)
		}
	}
}

func TestNegativeTimeoutReportedFirst(t *testing.T) {
	for _, args := range [][]string{{"scan", "--timeout", "-1s"}, {"scan", "--demo", "--timeout", "-1s"}} {
		var out, errOut bytes.Buffer
		if code := run(args, strings.NewReader(""), &out, &errOut, osEnvironment()); code != 2 || !strings.Contains(errOut.String(), `--timeout "-1s": is not`) {
			t.Errorf("%v: %d %q", args, code, errOut.String())
		}
	}
}

// ---- check --plugin (SPEC §15) ----

// liveNetBox is a fake NetBox with the plugin "good", which follows the
// author checklist: its reads refuse a caller without a token, answer with a
// token, and match their outputSchema.
func liveNetBox(t *testing.T) *fakeNetBox {
	f := newFakeNetBox(t)
	list := readTool("list")
	list.OutputSchema = json.RawMessage(`{"type": "object", "properties": {"count": {"type": "integer"}}, "required": ["count"]}`)
	item := readTool("item")
	item.InputSchema = json.RawMessage(`{"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"], "additionalProperties": false}`)
	drop := writeTool("drop")
	drop.Method, drop.Effect, drop.Annotations = "DELETE", "destructive", toolAnnotations{DestructiveHint: true}
	f.addPlugin("good", list, item, writeTool("make"), drop)
	for _, path := range []string{"list/", "item/", "make/", "drop/"} {
		f.handle("/api/plugins/good/"+path, func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Authorization") == "" {
				writeJSON(w, http.StatusForbidden, `{"detail": "Authentication credentials were not provided."}`, false)
				return
			}
			writeJSON(w, http.StatusOK, `{"count": 2}`, false)
		})
	}
	return f
}

// noWrites fails when any write method reached the fake NetBox.
func noWrites(t *testing.T, name string, f *fakeNetBox) {
	t.Helper()
	for _, r := range f.requestLog() {
		if r.method != http.MethodGet && r.method != http.MethodHead {
			t.Errorf("%s: %s %s reached NetBox", name, r.method, r.path)
		}
	}
}

func TestLiveCheck(t *testing.T) {
	argsFile := filepath.Join(t.TempDir(), "item.json")
	os.WriteFile(argsFile, []byte(`{"id": 3}`), 0o600)
	fine := []string{"list (read): called: 200", "item (read): not called: it needs arguments; give --arguments item=JSON",
		"make (write): not sent; its dry run: POST /api/plugins/good/make/", "drop (destructive): not sent; its dry run: DELETE /api/plugins/good/drop/"}
	status := func(code int, body string) func(f *fakeNetBox) {
		return func(f *fakeNetBox) {
			f.handle("/api/plugins/good/list/", func(w http.ResponseWriter, r *http.Request) {
				if r.Header.Get("Authorization") == "" {
					writeJSON(w, http.StatusForbidden, `{"detail": "no"}`, false)
					return
				}
				writeJSON(w, code, body, false)
			})
		}
	}
	anonymous := func(code int) func(f *fakeNetBox) {
		return func(f *fakeNetBox) {
			f.handle("/api/plugins/good/list/", func(w http.ResponseWriter, r *http.Request) {
				if r.Header.Get("Authorization") == "" {
					w.WriteHeader(code)
					return
				}
				writeJSON(w, http.StatusOK, `{"count": 1}`, false)
			})
		}
	}
	cases := []struct {
		name  string
		setup func(f *fakeNetBox)
		args  []string
		code  int
		want  []string // lines of stdout, in order ("" ends the list: nothing after)
	}{
		{"follows the checklist", nil, nil, 0, fine},
		{"arguments as JSON", nil, []string{"--arguments", `item={"id": 3}`}, 0, []string{"list (read): called: 200", "item (read): called: 200"}},
		{"arguments from a file", nil, []string{"--arguments", "item=@" + argsFile}, 0, []string{"item (read): called: 200"}},
		{"invalid arguments", nil, []string{"--arguments", `item={"id": "x"}`}, 1,
			[]string{"tools.item.arguments.id: expected integer, got string", "item (read): not called"}},
		{"wrong advertisement", func(f *fakeNetBox) {
			f.plugin("good", func(p *fakePlugin) { p.root = `{"mcp": {"schema_version": "2", "manifest": "/api/plugins/good/mcp/"}}` })
		}, nil, 1, []string{`advertisement: plugin "good": invalid mcp advertisement`, ""}},
		{"no advertisement", func(f *fakeNetBox) { f.plugin("good", func(p *fakePlugin) { p.root = `{"widgets": "x"}` }) }, nil, 1,
			[]string{"advertisement: plugin \"good\": the plugin root does not advertise an MCP manifest", ""}},
		{"no plugin root", func(f *fakeNetBox) {
			f.handle("/api/plugins/good/", func(w http.ResponseWriter, r *http.Request) { htmlNotFound(w) })
		}, nil, 1,
			[]string{`advertisement: NetBox has no API root for plugin "good"`, ""}},
		{"manifest of another plugin", func(f *fakeNetBox) {
			f.plugin("good", func(p *fakePlugin) {
				p.manifest = strings.Replace(p.manifest, `"plugin":"good"`, `"plugin":"other"`, 1)
			})
		}, nil, 1, []string{`advertisement: manifest /api/plugins/good/mcp/ declares plugin "other", not "good"`, ""}},
		{"manifest problems", func(f *fakeNetBox) {
			f.plugin("good", func(p *fakePlugin) {
				p.manifest = strings.Replace(strings.Replace(p.manifest, `"method":"GET"`, `"method":"get"`, 1), `"path":"make/"`, `"path":"/make"`, 1)
			})
		}, nil, 1, []string{`manifest.tools[0] (list).method: "get" must be upper case: GET`, `manifest.tools[2] (make).path: "/make": `, ""}},
		{"manifest not JSON", func(f *fakeNetBox) { f.plugin("good", func(p *fakePlugin) { p.manifest = `{"tools": [1,]}` }) }, nil, 1,
			[]string{"manifest.tools[1]: invalid JSON at line 1, column 14", ""}},
		{"anonymous 200", anonymous(http.StatusOK), nil, 1,
			[]string{"tools.list.anonymous: answered 200 without a NetBox token; the target view must enforce NetBox permissions"}},
		{"anonymous 404", anonymous(http.StatusNotFound), nil, 1,
			[]string{"tools.list.anonymous: answered 404; expected 401 or 403 without a token"}},
		{"anonymous 401", anonymous(http.StatusUnauthorized), nil, 0, fine},
		{"body breaks outputSchema", status(200, `{"count": "two"}`), nil, 1,
			[]string{"tools.list.response.count: expected integer, got string", "list (read): called: 200"}},
		{"500", status(500, `{"detail": "boom"}`), nil, 1, []string{`tools.list.response: answered 500: "boom"`, "list (read): called: 500"}},
		{"duplicate key", status(200, `{"count": 1, "count": 2}`), nil, 1, []string{`tools.list.response: invalid JSON at line 1, column 14`}},
		{"not JSON", status(200, `<html>`), nil, 1, []string{"tools.list.response: invalid JSON at line 1, column 1"}},
	}
	for _, c := range cases {
		f := liveNetBox(t)
		if c.setup != nil {
			c.setup(f)
		}
		scanEnv(t, map[string]string{"NETBOX_URL": f.URL, "NETBOX_TOKEN": fakeToken})
		code, out, errOut := runCLI(t, append([]string{"check", "--plugin", "good"}, c.args...)...)
		if code != c.code {
			t.Errorf("%s: exit %d, want %d\n%s%s", c.name, code, c.code, out, errOut)
		}
		lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		i := 0
		for _, w := range c.want {
			for i < len(lines) && (w == "" || !strings.HasPrefix(lines[i], w)) {
				i++
			}
			if w == "" && len(lines) > 0 && strings.Contains(out, "(read)") {
				t.Errorf("%s: tools were checked after a bad advertisement or manifest:\n%s", c.name, out)
			}
			if w != "" && i == len(lines) {
				t.Errorf("%s: no line %q (in this order) in\n%s", c.name, w, out)
			}
		}
		noWrites(t, c.name, f)
		if c.name == "arguments as JSON" {
			var anon, authed int
			for _, r := range f.requestLog() {
				if r.path == "/api/plugins/good/item/" && r.query == "id=3" {
					if r.header.Get("Authorization") == "" {
						anon++
					} else {
						authed++
					}
				}
			}
			if anon != 1 || authed != 1 {
				t.Errorf("%s: %d anonymous and %d authorized item requests with id=3, want 1 and 1", c.name, anon, authed)
			}
		}
	}
}

// TestLiveCheckCannotCheck: exit 2 when nothing could be checked.
func TestLiveCheckCannotCheck(t *testing.T) {
	f := liveNetBox(t)
	for _, c := range []struct {
		name string
		env  map[string]string
		args []string
		want string
	}{
		{"unreachable", map[string]string{"NETBOX_URL": refusedURL(t), "NETBOX_TOKEN": fakeToken}, nil, "refused"},
		{"token refused", map[string]string{"NETBOX_URL": f.URL, "NETBOX_TOKEN": secretV1}, nil, "HTTP 403"},
		{"no URL", nil, nil, "no NetBox URL"},
		{"arguments without =", map[string]string{"NETBOX_URL": f.URL, "NETBOX_TOKEN": fakeToken}, []string{"--arguments", "item"}, "give TOOL=JSON or TOOL=@FILE"},
		{"arguments of no tool", map[string]string{"NETBOX_URL": f.URL, "NETBOX_TOKEN": fakeToken}, []string{"--arguments", "nope={}"},
			`plugin "good" has no tool "nope"; it has: list, item, make, drop`},
		{"a manifest file too", map[string]string{"NETBOX_URL": f.URL, "NETBOX_TOKEN": fakeToken}, []string{"testdata/manifest-valid.json"}, "give no manifest file"},
	} {
		scanEnv(t, c.env)
		code, out, errOut := runCLI(t, append([]string{"check", "--plugin", "good"}, c.args...)...)
		if code != 2 || out != "" || !strings.Contains(errOut, c.want) {
			t.Errorf("%s: %d %q %q, want exit 2 and %q", c.name, code, out, errOut, c.want)
		}
	}
	noWrites(t, "exit 2", f)
}

// TestLiveCheckJSON: SPEC §15's document, decoded strictly.
func TestLiveCheckJSON(t *testing.T) {
	f := liveNetBox(t)
	status := 0
	f.handle("/api/plugins/good/list/", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, http.StatusOK, `{"count": 1}`, false) })
	scanEnv(t, map[string]string{"NETBOX_URL": f.URL, "NETBOX_TOKEN": fakeToken})
	code, out, _ := runCLI(t, "check", "--plugin", "good", "--json")
	if _, err := decode([]byte(out), rootLimits); err != nil {
		t.Fatalf("not strict JSON: %v\n%s", err, out)
	}
	var doc struct {
		Valid    bool `json:"valid"`
		Problems []struct {
			Location string `json:"location"`
			Message  string `json:"message"`
		} `json:"problems"`
		Notes []struct { // SPEC §17: what the OpenAPI cross-check noted
			Location string `json:"location"`
			Message  string `json:"message"`
		} `json:"notes"`
		Tools []struct {
			Name   string `json:"name"`
			Effect string `json:"effect"`
			Called bool   `json:"called"`
			Status *int   `json:"status"`
		} `json:"tools"`
	}
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil || code != 1 || doc.Valid || len(doc.Problems) != 1 ||
		doc.Problems[0].Location != "tools.list.anonymous" || len(doc.Tools) != 4 {
		t.Fatalf("%d %v %+v\n%s", code, err, doc, out)
	}
	for _, tl := range doc.Tools {
		if tl.Name == "list" {
			status = *tl.Status
		}
		if (tl.Status != nil) != tl.Called || tl.Called != (tl.Name == "list") {
			t.Errorf("tool %+v", tl)
		}
	}
	if status != 200 || !strings.Contains(out, `"status": null`) {
		t.Errorf("statuses in\n%s", out)
	}
	noWrites(t, "json", f)
}

// TestLiveCheckDemo: SPEC §15, the demo's example passes, broken fails.
func TestLiveCheckDemo(t *testing.T) {
	t.Parallel()
	if code, out, errOut := runCLI(t, "check", "--plugin", "example", "--demo"); code != 0 || !strings.Contains(out, "list_reports (read): called: 200") ||
		!strings.HasSuffix(out, "example: valid — 3 tools, 1 read(s) called, 2 write(s) as dry runs\n") {
		t.Errorf("check --plugin example --demo: %d\n%s%s", code, out, errOut)
	}
	// Its GitHub annotations name no file: the problems are in none of the author's (issue 30).
	if code, out, _ := runCLI(t, "check", "--plugin", "broken", "--demo", "--format", "github"); code != 1 ||
		!strings.HasPrefix(out, "::error title=manifest.tools[0] (purge).method::") || strings.Contains(out, "file=") {
		t.Errorf("check --plugin broken --demo --format github: %d\n%s", code, out)
	}
	if code, out, _ := runCLI(t, "check", "--plugin", "broken", "--demo"); code != 1 || !strings.HasPrefix(out, "manifest.tools[0] (purge).method: ") ||
		!strings.HasSuffix(out, "broken: invalid, 1 problem(s) — 0 tools, 0 read(s) called, 0 write(s) as dry runs\n") {
		t.Errorf("check --plugin broken --demo: %d\n%s", code, out)
	}
}

// ---- serve --http (SPEC §14) ----

// httpBridge serves the bridge of f over an httptest server through the
// HTTP front, with bearer "" for the caller-token mode; its access and
// audit records go to log.
func httpBridge(t *testing.T, f *fakeNetBox, shared bool, bearer string, log io.Writer) *httptest.Server {
	t.Helper()
	b := newBridge(f, true)
	logger := slog.New(slog.NewJSONHandler(log, nil)) // one handler, so one lock, for the audit and the access log
	b.audit, b.overHTTP = &auditLog{stderr: logger.Handler()}, true
	if !shared {
		b.client.auth = "" // no configured token: each caller brings their own
	}
	front := newFront(newMCPServer(b, slog.New(slog.NewTextHandler(io.Discard, nil))), logger)
	front.bearer = bearer
	srv := httptest.NewServer(front)
	t.Cleanup(srv.Close)
	return srv
}

// headerTransport adds an Authorization header to every request.
type headerTransport struct{ auth string }

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", h.auth)
	return http.DefaultTransport.RoundTrip(r)
}

// httpSession connects a go-sdk client to url with an Authorization header.
func httpSession(t *testing.T, url, auth, version string) *mcp.ClientSession {
	t.Helper()
	transport := &mcp.StreamableClientTransport{Endpoint: url + "/mcp", HTTPClient: &http.Client{Transport: headerTransport{auth}}}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(context.Background(), transport,
		&mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("connect with %q: %v", clip(auth, 12), err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// postMCP sends one raw JSON-RPC message to /mcp; a Host in header is the
// request's Host.
func postMCP(t *testing.T, url string, header http.Header, body string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url+"/mcp", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	for k, v := range header {
		req.Header[k] = v
	}
	req.Host = cmp.Or(header.Get("Host"), req.Host)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// TestHTTPCallerTokens: the caller's own NetBox token is used for every
// NetBox request of that MCP request; two callers interleaved never see
// each other's token.
func TestHTTPCallerTokens(t *testing.T) {
	f := newInvNetBox(t)
	f.locked(func() { f.token = "" })
	var log bytes.Buffer
	srv := httpBridge(t, f, false, "", &log)
	tokens := []string{"Bearer nbt_alice1." + secret + "A", "Token " + strings.Repeat("b0b", 13) + "b"}
	sessions := []*mcp.ClientSession{httpSession(t, srv.URL, tokens[0], protocolVersions[0]), httpSession(t, srv.URL, strings.ToLower(tokens[1][:1])+tokens[1][1:], "")}
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			cs := sessions[i%2]
			tool, args := "search", map[string]any{"q": fmt.Sprint(i % 2)}
			if i%5 == 0 {
				tool, args = "create", map[string]any{"name": fmt.Sprint(i % 2)}
			}
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "plugin_call_tool",
				Arguments: map[string]any{"plugin": "inv", "tool": tool, "arguments": args, "header": []string{fmt.Sprintf("X-Caller: %d", i%2)}}})
			if err != nil || res.IsError {
				t.Errorf("call %d: %v %+v", i, err, res)
			}
		})
	}
	wg.Wait()
	log0 := f.requestLog()
	if len(log0) != 20*3 {
		t.Errorf("%d NetBox requests, want 60 (root, manifest, target)", len(log0))
	}
	for _, r := range log0 {
		who, _ := strconv.Atoi(r.header.Get("X-Caller"))
		if got := r.header.Get("Authorization"); got != tokens[who] {
			t.Errorf("%s %s of caller %d carried %q, want its own %q", r.method, r.path, who, clip(got, 20), clip(tokens[who], 20))
		}
	}
	// The per-call token is refused: the HTTP identity is the identity.
	r := call(t, sessions[0], "plugin_call_tool", map[string]any{"plugin": "inv", "tool": "search", "token": "nbt_x.y"})
	wantError(t, r, "invalid_request", false)
	srv.Close() // the access record of a request is written after its answer: wait for every handler
	// Audit: token_source http, the caller's key, the peer address.
	recs := auditRecords(t, &log)
	if len(recs) != 8 { // each write: dispatching, then dispatched (SPEC §13)
		t.Fatalf("%d audit records, want 8", len(recs))
	}
	for _, rec := range recs {
		if rec["token_source"] != "http" || !strings.HasPrefix(rec["remote"].(string), "127.0.0.1:") ||
			rec["token"] != "nbt_alice1" && rec["token"] != specV1Name(strings.TrimPrefix(tokens[1], "Token ")) {
			t.Errorf("audit %v", rec)
		}
	}
	if strings.Contains(log.String(), secret) || strings.Contains(log.String(), "b0bb0b") {
		t.Errorf("a token reached the log:\n%s", log.String())
	}
}

// TestHTTPUnauthorized: a missing or malformed Authorization is answered 401
// with WWW-Authenticate: Bearer, before any MCP processing and without a
// NetBox request; /healthz needs none.
func TestHTTPUnauthorized(t *testing.T) {
	f := newInvNetBox(t)
	caller := httpBridge(t, f, false, "", io.Discard)
	shared := httpBridge(t, f, true, "mcp-"+secret, io.Discard)
	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	for _, c := range []struct {
		url  string
		auth []string
	}{
		{caller.URL, []string{"", "Bearer", "Bearer ", "Bearer abc", "Bearer nbt_", "Bearer nbt_.s", "Bearer nbt_k.", "Bearer nbt_k.s.t",
			"Bearer nbt_k é.s", "Basic " + secret, "Token " + strings.Repeat("a", 39), "Token " + strings.Repeat("a", 41),
			"Token " + strings.Repeat("a", 39) + "-", "Bearer  nbt_k.s", "nbt_k.s"}},
		{shared.URL, []string{"", "Bearer", "Bearer mcp-", "Bearer mcp-" + secret + "x", "Token mcp-" + secret, "mcp-" + secret}},
	} {
		for _, auth := range c.auth {
			h := http.Header{}
			if auth != "" {
				h.Set("Authorization", auth)
			}
			resp := postMCP(t, c.url, h, initialize)
			if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") != "Bearer" {
				t.Errorf("Authorization %q: %d %v", auth, resp.StatusCode, resp.Header)
			}
		}
	}
	if n := f.totalRequests(); n != 0 {
		t.Errorf("%d NetBox requests for unauthorized callers", n)
	}
	for _, url := range []string{caller.URL, shared.URL} {
		resp, err := http.Get(url + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || string(body) != "ok" {
			t.Errorf("/healthz: %d %q", resp.StatusCode, body)
		}
	}
	// The right MCP bearer token, in any scheme case, is let in.
	for _, auth := range []string{"Bearer mcp-" + secret, "bearer mcp-" + secret} {
		if resp := postMCP(t, shared.URL, http.Header{"Authorization": {auth}}, initialize); resp.StatusCode != http.StatusOK {
			t.Errorf("%s: %d", clip(auth, 10), resp.StatusCode)
		}
	}
}

// TestHTTPStateless: no Mcp-Session-Id; a call is answered by a second
// server that never saw the initialize.
func TestHTTPStateless(t *testing.T) {
	f := newInvNetBox(t)
	f.locked(func() { f.token = "" })
	a, b := httpBridge(t, f, false, "", io.Discard), httpBridge(t, f, false, "", io.Discard)
	h := http.Header{"Authorization": {"Bearer nbt_k1.s1"}}
	resp := postMCP(t, a.URL, h, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	if resp.StatusCode != 200 || resp.Header.Get("Mcp-Session-Id") != "" {
		t.Fatalf("initialize: %d, session %q", resp.StatusCode, resp.Header.Get("Mcp-Session-Id"))
	}
	resp = postMCP(t, b.URL, h, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"plugin_call_tool","arguments":{"plugin":"inv","tool":"search"}}}`)
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || resp.Header.Get("Mcp-Session-Id") != "" || !strings.Contains(string(body), `\"status\":200`) {
		t.Errorf("a call to the other replica: %d %s", resp.StatusCode, body)
	}
}

// TestHTTPBounds: 413 over 4 MiB, 403 cross-origin, 503 with Retry-After
// beyond 64 in flight, every request answered.
func TestHTTPBounds(t *testing.T) {
	f := newInvNetBox(t)
	f.locked(func() { f.token = "" })
	release := make(chan struct{})
	var entered atomic.Int32
	f.handle(searchPath, func(w http.ResponseWriter, r *http.Request) {
		entered.Add(1)
		<-release
		writeJSON(w, http.StatusOK, `{"count": 1}`, false)
	})
	srv := httpBridge(t, f, false, "", io.Discard)
	h := http.Header{"Authorization": {"Bearer nbt_k1.s1"}}
	big := `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"` + strings.Repeat("x", 4<<20) + `"}}`
	if resp := postMCP(t, srv.URL, h, big); resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("4 MiB body: %d", resp.StatusCode)
	}
	cross := http.Header{"Authorization": {"Bearer nbt_k1.s1"}, "Origin": {"https://evil.example"}, "Sec-Fetch-Site": {"cross-site"}}
	if resp := postMCP(t, srv.URL, cross, `{"jsonrpc":"2.0","id":1,"method":"ping"}`); resp.StatusCode != http.StatusForbidden {
		t.Errorf("cross-origin: %d", resp.StatusCode)
	}
	call := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"plugin_call_tool","arguments":{"plugin":"inv","tool":"search"}}}`
	codes := make(chan int, 64)
	for range 64 {
		go func() {
			resp := postMCP(t, srv.URL, h, call)
			io.ReadAll(resp.Body)
			codes <- resp.StatusCode
		}()
	}
	for deadline := time.Now().Add(10 * time.Second); entered.Load() < 64 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	resp := postMCP(t, srv.URL, h, call)
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "1" {
		t.Errorf("the 65th request: %d %v", resp.StatusCode, resp.Header)
	}
	if resp, err := http.Get(srv.URL + "/healthz"); err != nil || resp.StatusCode != 200 {
		t.Errorf("/healthz at the cap: %v %v", err, resp)
	}
	close(release)
	for range 64 {
		if code := <-codes; code != 200 {
			t.Errorf("a request in flight was answered %d", code)
		}
	}
}

// TestHTTPNoConfirmation: over stateless HTTP the server cannot ask; the
// strict modes answer not_confirmed, auto falls back to the switch.
func TestHTTPNoConfirmation(t *testing.T) {
	f := newInvNetBox(t)
	f.locked(func() { f.token = "" })
	for mode, want := range map[string]string{"writes": "not_confirmed", "destructive": "not_confirmed", "auto": ""} {
		b := newBridge(f, true)
		b.client.auth, b.confirm = "", mode
		srv := httptest.NewServer(newFront(newMCPServer(b, slog.New(slog.NewTextHandler(io.Discard, nil))), slog.New(slog.NewTextHandler(io.Discard, nil))))
		cs := httpSession(t, srv.URL, "Bearer nbt_k1.s1", protocolVersions[0])
		r := callInv(t, cs, "purge", map[string]any{})
		if r.code() != want || want != "" && !strings.Contains(r.text, "cannot ask a human over stateless HTTP") {
			t.Errorf("--confirm %s: %s %q", mode, r.code(), r.text)
		}
		srv.Close()
	}
}

// freeAddr is a loopback address nobody listens on yet.
func freeAddr(t testing.TB) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// startHTTPServe starts the release binary's serve with args and env, and
// waits until addr answers /healthz.
func startHTTPServe(t testing.TB, env []string, addr string, client *http.Client, scheme string, args ...string) (*exec.Cmd, *syncBuffer) {
	t.Helper()
	cmd := exec.Command(releaseBinary(t), append([]string{"serve", "--http", addr}, args...)...)
	cmd.Env = append(env, "HOME="+t.TempDir(), "PATH="+os.Getenv("PATH"))
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if resp, err := client.Get(scheme + "://" + addr + "/healthz"); err == nil {
			resp.Body.Close()
			return cmd, stderr
		}
	}
	t.Fatalf("serve --http %s never answered /healthz:\n%s", addr, stderr.String())
	return nil, nil
}

// syncBuffer is a bytes.Buffer that a child process may write while the
// test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestHTTPServeStartup: the shared-identity mode refuses to start without an
// MCP bearer token; the token file's rules; --tls-cert and --tls-key.
func TestHTTPServeStartup(t *testing.T) {
	bin := releaseBinary(t)
	dir := t.TempDir()
	file := func(name, content string, mode os.FileMode) string {
		path := filepath.Join(dir, name)
		os.WriteFile(path, []byte(content), 0o600)
		os.Chmod(path, mode)
		return path
	}
	shared := []string{"NETBOX_URL=https://netbox.example.com", "NETBOX_TOKEN=" + secretV2}
	for _, c := range []struct {
		env  []string
		args []string
		want string
	}{
		{shared, nil, "set NETBOX_MCP_AUTH_TOKEN"},
		{shared, []string{"--auth-token-file", file("empty", "\n", 0o600)}, "empty; put the token in it, alone on one line"},
		{shared, []string{"--auth-token-file", file("lines", "one\ntwo\n", 0o600)}, "holds several lines; put the token alone on one line"},
		{shared, []string{"--auth-token-file", file("open", "tok\n", 0o644)}, "may be read or written by other users"},
		{shared, []string{"--auth-token-file", filepath.Join(dir, "missing")}, "--auth-token-file"},
		{nil, []string{"--tls-cert", file("cert", "x", 0o600)}, "--tls-cert and --tls-key go together"},
		{nil, []string{"--tls-cert", file("cert2", "x", 0o600), "--tls-key", file("key2", "y", 0o600)}, "--tls-cert and --tls-key: "},
		{nil, []string{"--tls-cert", filepath.Join(dir, "nope"), "--tls-key", filepath.Join(dir, "nope")}, "no such file"},
	} {
		cmd := exec.Command(bin, append([]string{"serve", "--http", freeAddr(t)}, c.args...)...)
		cmd.Env = append(c.env, "HOME="+t.TempDir())
		out, err := cmd.CombinedOutput()
		if code := cmd.ProcessState.ExitCode(); err == nil || code != 2 || !strings.Contains(string(out), c.want) {
			t.Errorf("%v: exit %d, %q; want exit 2 and %q", c.args, code, out, c.want)
		}
		if strings.Contains(string(out), secret) {
			t.Errorf("%v: the output shows the token", c.args)
		}
	}
	// The file wins over the variable; one trailing newline is dropped.
	addr := freeAddr(t)
	tokenFile := file("token", "from-file\n", 0o600)
	_, stderr := startHTTPServe(t, append(shared, "NETBOX_MCP_AUTH_TOKEN=from-env"), addr, http.DefaultClient, "http", "--auth-token-file", tokenFile)
	for auth, want := range map[string]int{"Bearer from-file": 200, "Bearer from-env": 401, "Bearer from-file\n": 401} {
		req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
		req.Header.Set("Authorization", strings.TrimSuffix(auth, "\n"))
		if strings.HasSuffix(auth, "\n") {
			req.Header.Set("Authorization", "Bearer from-file%0A")
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != want {
			t.Errorf("%q: %v %v, want %d", auth, err, resp, want)
		} else {
			resp.Body.Close()
		}
	}
	if strings.Contains(stderr.String(), "without TLS") {
		t.Errorf("a loopback address got the plain-HTTP warning:\n%s", stderr.String())
	}
}

// TestHTTPServeTLS: --tls-cert and --tls-key serve HTTPS.
func TestHTTPServeTLS(t *testing.T) {
	cert := testCertificate(t)
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	keyDER, _ := x509.MarshalPKCS8PrivateKey(cert.PrivateKey)
	os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Certificate[0]}), 0o600)
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600)
	pool := x509.NewCertPool()
	leaf, _ := x509.ParseCertificate(cert.Certificate[0])
	pool.AddCert(leaf)
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	addr := freeAddr(t)
	f := newInvNetBox(t)
	f.locked(func() { f.token = "" })
	startHTTPServe(t, []string{"NETBOX_URL=" + f.URL}, addr, client, "https", "--tls-cert", certFile, "--tls-key", keyFile)
	transport := &mcp.StreamableClientTransport{Endpoint: "https://" + addr + "/mcp",
		HTTPClient: &http.Client{Transport: &authTLS{auth: "Bearer nbt_k.s", base: client.Transport}}}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(context.Background(), transport, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if r := callInv(t, cs, "search", map[string]any{}); r.isError {
		t.Errorf("a read over HTTPS: %s", r.text)
	}
	if resp, err := http.Get("http://" + addr + "/healthz"); err == nil && resp.StatusCode == http.StatusOK {
		t.Error("plain HTTP was served on the HTTPS port")
	}
}

// authTLS adds an Authorization header over a given transport.
type authTLS struct {
	auth string
	base http.RoundTripper
}

func (a *authTLS) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", a.auth)
	return a.base.RoundTrip(r)
}

// TestHTTPServeDrain: SPEC §14, SIGTERM stops accepting, lets a write
// dispatched before it finish and deliver its answer, then exits 0; one
// access-log record per request, without headers or tokens; a warning when
// listening off loopback without TLS.
func TestHTTPServeDrain(t *testing.T) {
	f := newInvNetBox(t)
	f.locked(func() { f.token = "" })
	entered, release := make(chan struct{}, 1), make(chan struct{})
	f.handle(recordsPath, func(w http.ResponseWriter, r *http.Request) {
		entered <- struct{}{}
		<-release
		writeJSON(w, http.StatusCreated, `{"id": 7}`, false)
	})
	_, port, _ := net.SplitHostPort(freeAddr(t))
	addr := "127.0.0.1:" + port
	cmd, stderr := startHTTPServe(t, []string{"NETBOX_URL=" + f.URL, "NETBOX_MCP_ALLOW_MUTATIONS=1"}, addr, http.DefaultClient, "http", "--log-format", "json")
	cs := httpSession(t, "http://"+addr, "Bearer nbt_caller."+secret, protocolVersions[0])
	result := make(chan result, 1)
	go func() { result <- callInv(t, cs, "create", map[string]any{"name": "x"}) }()
	<-entered
	cmd.Process.Signal(syscall.SIGTERM)
	time.Sleep(300 * time.Millisecond)
	if _, err := http.Get("http://" + addr + "/healthz"); err == nil {
		t.Error("new connections are still accepted while draining")
	}
	close(release)
	if r := <-result; r.isError || r.doc["status"] != 201.0 {
		t.Errorf("the write in flight: %+v", r)
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("exit: %v\n%s", err, stderr.String())
	}
	var access int
	for _, line := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if rec["msg"] == "http" {
			access++
			if rec["method"] == nil || rec["path"] == nil || rec["status"] == nil || rec["duration_ms"] == nil || rec["remote"] == nil {
				t.Errorf("access record %v", rec)
			}
		}
		if rec["level"] == "ERROR" {
			t.Errorf("error logged: %v", rec)
		}
	}
	if access < 3 || strings.Contains(stderr.String(), secret) || strings.Contains(stderr.String(), "Authorization") {
		t.Errorf("%d access records; log:\n%s", access, stderr.String())
	}
	// Off loopback without TLS: one warning.
	cmd = exec.Command(releaseBinary(t), "serve", "--http", ":0")
	cmd.Env = []string{"HOME=" + t.TempDir(), "NETBOX_URL=" + f.URL}
	var warn bytes.Buffer
	cmd.Stderr = &warn
	cmd.Start()
	time.Sleep(500 * time.Millisecond)
	cmd.Process.Signal(syscall.SIGTERM)
	cmd.Wait()
	if strings.Count(warn.String(), "tokens cross the network in clear unless TLS terminates in front") != 1 {
		t.Errorf("listening on :0 without TLS:\n%s", warn.String())
	}
}

// vmHWM is a process's peak resident set in bytes.
func vmHWM(t testing.TB, pid int) int64 {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(status)) {
		if kb, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(kb), "kB")), 10, 64)
			return n << 10
		}
	}
	t.Fatalf("no VmHWM in %s", status)
	return 0
}

// BenchmarkHTTPLoad: 1, 8 and 64 MCP clients, each making reads through one
// serve --http of the release binary, NetBox at 10 ms, against the floor
// server (a minimal go-sdk server making the same three GETs a call, see
// TestMain), alternating in one run. It reports calls/s and p99 of both,
// their ratios, and the bridge's peak RSS; no call may fail or be lost.
func BenchmarkHTTPLoad(b *testing.B) {
	s := newCatalogServer(b, 10*time.Millisecond, 1, benchManifest)
	bridgeAddr, floorAddr := freeAddr(b), freeAddr(b)
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + b.TempDir(), "NETBOX_URL=" + s.base}
	cmd, _ := startHTTPServe(b, env, bridgeAddr, http.DefaultClient, "http")
	self, _ := os.Executable()
	floor := exec.Command(self, "-test.run=^$")
	floor.Env = append(os.Environ(), floorServerEnv+"="+floorAddr, floorNetBoxEnv+"="+s.base)
	if err := floor.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { floor.Process.Kill(); floor.Wait() })
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if c, err := net.Dial("tcp", floorAddr); err == nil {
			c.Close()
			break
		} else if time.Now().After(deadline) {
			b.Fatal("the floor server never listened")
		}
	}
	for _, clients := range []int{1, 8, 64} {
		b.Run(fmt.Sprintf("clients=%d", clients), func(b *testing.B) {
			var rates, p99s [2]float64 // bridge, floor
			for b.Loop() {
				for k, addr := range []string{bridgeAddr, floorAddr} {
					rate, p99 := httpLoad(b, addr, clients, max(50, 400/clients))
					rates[k] += rate
					p99s[k] += p99
				}
			}
			n := float64(b.N)
			b.ReportMetric(rates[0]/n, "calls/s")
			b.ReportMetric(p99s[0]/n, "p99-ms")
			b.ReportMetric(rates[1]/n, "floor-calls/s")
			b.ReportMetric(p99s[1]/n, "floor-p99-ms")
			b.ReportMetric(rates[0]/rates[1], "calls/s-vs-floor")
			b.ReportMetric(p99s[0]/p99s[1], "p99-vs-floor")
		})
	}
	b.ReportMetric(float64(vmHWM(b, cmd.Process.Pid))/(1<<20), "peak-RSS-MiB")
}

// httpLoad makes clients MCP sessions to addr each call plugin_call_tool
// calls times at once, and returns the calls per second and the p99
// latency in milliseconds.
func httpLoad(b *testing.B, addr string, clients, calls int) (rate, p99 float64) {
	transport := &http.Transport{MaxIdleConnsPerHost: clients}
	defer transport.CloseIdleConnections()
	sessions := make([]*mcp.ClientSession, clients)
	for i := range sessions {
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "load", Version: "1"}, nil).Connect(context.Background(),
			&mcp.StreamableClientTransport{Endpoint: "http://" + addr + "/mcp", HTTPClient: &http.Client{Transport: &authTLS{catalogAuth, transport}}},
			&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err != nil {
			b.Fatal(err)
		}
		defer cs.Close()
		sessions[i] = cs
	}
	latencies := make([]time.Duration, 0, clients*calls)
	var mu sync.Mutex
	var failed atomic.Int32
	var wg sync.WaitGroup
	start := time.Now()
	for _, cs := range sessions {
		wg.Go(func() {
			for range calls {
				t0 := time.Now()
				res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "plugin_call_tool",
					Arguments: map[string]any{"plugin": "p000", "tool": "list_reports", "arguments": map[string]any{"limit": 5}}})
				if err != nil || res.IsError {
					if failed.Add(1) == 1 {
						b.Logf("first failure at %s: %v %+v", addr, err, res)
					}
					continue
				}
				mu.Lock()
				latencies = append(latencies, time.Since(t0))
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if n := failed.Load(); n > 0 {
		b.Fatalf("%d of %d calls failed or were lost", n, clients*calls)
	}
	slices.Sort(latencies)
	return float64(len(latencies)) / elapsed.Seconds(), float64(latencies[len(latencies)*99/100].Microseconds()) / 1000
}

// ---- found by review: HTTP batches, slow and large bodies, a call whose
// request ends, check's policy and slug ----

// TestHTTPRequestBodies: a JSON-RPC batch is refused (one POST, one call);
// slow bodies do not hold the in-flight slots.
func TestHTTPRequestBodies(t *testing.T) {
	f := newInvNetBox(t)
	f.setToken("")
	srv := httpBridge(t, f, false, "", io.Discard)
	h := http.Header{"Authorization": {"Bearer nbt_k1.s1"}}
	call := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"plugin_call_tool","arguments":{"plugin":"inv","tool":"search"}}}`
	for _, body := range []string{"[" + call + "," + call + "]", " \n[" + call + "]"} {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/mcp", strings.NewReader(body))
		req.Header = h.Clone()
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream") // no protocol version: the SDK would take a batch
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != http.StatusBadRequest {
			t.Errorf("a batch: %v %v", err, resp)
		} else {
			resp.Body.Close()
		}
	}
	if n := f.totalRequests(); n != 0 {
		t.Errorf("%d NetBox requests for batches", n)
	}
	// 64 callers announce bodies they never send; a normal call still gets in.
	var conns []net.Conn
	for range 64 {
		c, err := net.Dial("tcp", strings.TrimPrefix(srv.URL, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		fmt.Fprintf(c, "POST /mcp HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer nbt_k1.s1\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{")
	}
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	time.Sleep(200 * time.Millisecond)
	if resp := postMCP(t, srv.URL, h, call); resp.StatusCode != http.StatusOK {
		t.Errorf("a call behind 64 stalled bodies: %d", resp.StatusCode)
	}
}

// TestHTTPCallEndsWithItsRequest: a client that goes away ends its call's
// NetBox request (SPEC §9), and the write is still audited.
func TestHTTPCallEndsWithItsRequest(t *testing.T) {
	f := newInvNetBox(t)
	f.setToken("")
	entered, cancelled := make(chan struct{}), make(chan struct{})
	f.handle(recordsPath, func(w http.ResponseWriter, r *http.Request) {
		close(entered)
		<-r.Context().Done()
		close(cancelled)
	})
	var log syncBuffer
	srv := httpBridge(t, f, false, "", &log)
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/mcp", strings.NewReader(
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"plugin_call_tool","arguments":{"plugin":"inv","tool":"create","arguments":{"name":"x"}}}}`))
	req.Header.Set("Authorization", "Bearer nbt_k1.s1")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	go http.DefaultClient.Do(req)
	<-entered
	cancel()
	select {
	case <-cancelled:
	case <-time.After(5 * time.Second):
		t.Fatal("the NetBox request went on after its caller went away")
	}
	// The dispatching record is written before the send; wait for the outcome's.
	for deadline := time.Now().Add(5 * time.Second); !strings.Contains(log.String(), `"decision":"dispatched"`) && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if !strings.Contains(log.String(), `"decision":"dispatched"`) || !strings.Contains(log.String(), `"outcome":"unknown"`) {
		t.Errorf("audit:\n%s", log.String())
	}
}

// TestHTTPServeBodyMemory: 64 authenticated bodies of almost 4 MiB at once
// stay within the process bound; every request is answered.
func TestHTTPServeBodyMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("measures a child process")
	}
	addr := freeAddr(t)
	f := newInvNetBox(t)
	cmd, _ := startHTTPServe(t, []string{"NETBOX_URL=" + f.URL}, addr, http.DefaultClient, "http")
	body := `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"` + strings.Repeat("x", 4<<20-100) + `"}}`
	var wg sync.WaitGroup
	var answered atomic.Int32
	for range 64 {
		wg.Go(func() {
			req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/mcp", strings.NewReader(body))
			req.Header.Set("Authorization", "Bearer nbt_k1.s1")
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("MCP-Protocol-Version", "2025-11-25")
			if resp, err := http.DefaultClient.Do(req); err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				answered.Add(1)
			}
		})
	}
	wg.Wait()
	rss := vmHWM(t, cmd.Process.Pid)
	t.Logf("memory: 64 HTTP bodies of 4 MiB at once: peak RSS %.1f MiB, %d answered", float64(rss)/(1<<20), answered.Load())
	if rss >= 64<<20 || answered.Load() != 64 {
		t.Errorf("peak RSS %d MiB, %d of 64 answered", rss>>20, answered.Load())
	}
}

// TestCheckRefusesABadSwitchAndSlug: a malformed write policy is a
// configuration error for check too, and --plugin must be a slug (exit 2).
func TestCheckRefusesABadSwitchAndSlug(t *testing.T) {
	scanEnv(t, map[string]string{"NETBOX_MCP_ALLOW_MUTATIONS": "proxbox"})
	for _, args := range [][]string{{"check", "testdata/manifest-valid.json"}, {"check", "--plugin", "example", "--demo"}} {
		if code, _, errOut := runCLI(t, args...); code != 2 || !strings.Contains(errOut, "NETBOX_MCP_ALLOW_MUTATIONS: ") {
			t.Errorf("%v with a bad switch: %d %q", args, code, errOut)
		}
	}
	scanEnv(t, nil)
	if code, _, errOut := runCLI(t, "check", "--plugin", "Not/A/Slug", "--demo"); code != 2 || !strings.Contains(errOut, "is not a plugin slug") {
		t.Errorf("a bad slug: %d %q", code, errOut)
	}
	if code, out, _ := runCLI(t, "check", "--plugin", "example", "--demo", "--arguments", `run_report={"scope": "none"}`); code != 1 ||
		!strings.Contains(out, "tools.run_report.arguments.scope: ") {
		t.Errorf("invalid arguments for a write: %d\n%s", code, out)
	}
}

// ---- the real NetBox (issue 16): stood up by e2e/netbox/setup ----

// realNetBox is the NetBox that e2e/netbox/setup stands up, as its env file
// describes it: URLs, tokens of real users, the reference's command.
type realNetBox map[string]string

// loadRealNetBox reads the env file of e2e/netbox/setup; without it, or
// with its NetBox down, the test skips with one line saying how to run it,
// unless NETBOX_E2E=1 (CI) requires it.
func loadRealNetBox(t *testing.T) realNetBox {
	t.Helper()
	nb := realNetBox{}
	data, err := os.ReadFile(cmp.Or(os.Getenv("NETBOX_E2E_ENV"), "/tmp/netbox-e2e/env"))
	for line := range strings.Lines(string(data)) {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), "="); ok {
			nb[k] = v
		}
	}
	if err == nil {
		var resp *http.Response
		if resp, err = http.Get(nb["NETBOX_E2E_URL"] + "/api/status/"); err == nil {
			resp.Body.Close()
		}
	}
	switch {
	case err == nil:
	case os.Getenv("NETBOX_E2E") == "1":
		t.Fatalf("the real NetBox is required (NETBOX_E2E=1) but not up: %v", err)
	default:
		t.Skip("no real NetBox: e2e/netbox/run stands one up and runs these tests")
	}
	return nb
}

// token is the named user's token: "alice" (v2), "alice_v1", "bob",
// "reader", "nobody" or "admin".
func (nb realNetBox) token(user string) string { return nb["NETBOX_E2E_TOKEN_"+strings.ToUpper(user)] }

// auth is the Authorization that NetBox takes for the named user's token.
func (nb realNetBox) auth(user string) string {
	if t := nb.token(user); !strings.HasPrefix(t, "nbt_") {
		return "Token " + t
	}
	return "Bearer " + nb.token(user)
}

// api asks NetBox's REST API itself: the oracle of these tests. Numbers
// keep their exact text.
func (nb realNetBox) api(t *testing.T, method, url, user string, body any, header ...string) (int, map[string]any) {
	t.Helper()
	var payload io.Reader
	if body != nil {
		data, _ := json.Marshal(body)
		payload = bytes.NewReader(data)
	}
	if !strings.HasPrefix(url, "http") {
		url = nb["NETBOX_E2E_URL"] + url
	}
	req, _ := http.NewRequest(method, url, payload)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if user != "" {
		req.Header.Set("Authorization", nb.auth(user))
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	var doc map[string]any
	dec := json.NewDecoder(resp.Body)
	dec.UseNumber()
	dec.Decode(&doc)
	return resp.StatusCode, doc
}

// widgets is what NetBox's own REST endpoint of the test plugin lists, by
// id, in a branch when schemaID is set.
func (nb realNetBox) widgets(t *testing.T, schemaID string) map[string]map[string]any {
	t.Helper()
	var header []string
	if schemaID != "" {
		header = []string{"X-NetBox-Branch", schemaID}
	}
	status, doc := nb.api(t, http.MethodGet, "/api/plugins/bridge-test/widgets/?limit=1000", "admin", nil, header...)
	if status != http.StatusOK {
		t.Fatalf("NetBox lists no widgets: %d %v", status, doc)
	}
	out := map[string]map[string]any{}
	for _, w := range doc["results"].([]any) {
		w := w.(map[string]any)
		out[fmt.Sprint(w["id"])] = w
	}
	return out
}

// changedBy is the user NetBox's changelog names for the last change of a
// widget.
func (nb realNetBox) changedBy(t *testing.T, id string) string {
	t.Helper()
	_, doc := nb.api(t, http.MethodGet, "/api/core/object-changes/?changed_object_id="+id+"&ordering=-time&limit=50", "admin", nil)
	results, _ := doc["results"].([]any)
	for _, r := range results {
		r := r.(map[string]any)
		if fmt.Sprint(r["changed_object_type"]) == "netbox_bridge_test.widget" {
			return fmt.Sprint(r["user_name"])
		}
	}
	return ""
}

// env is a process environment for the release binary against url with a
// user's token ("" for none) and no profile.
func (nb realNetBox) env(t *testing.T, url, user string) []string {
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "NETBOX_URL=" + cmp.Or(url, nb["NETBOX_E2E_URL"])}
	if user != "" {
		env = append(env, "NETBOX_TOKEN="+nb.token(user))
	}
	return env
}

// session serves the release binary over stdio against the real NetBox and
// connects the go-sdk client to it.
func (nb realNetBox) session(t *testing.T, env []string, opts *mcp.ClientOptions, args ...string) *mcp.ClientSession {
	t.Helper()
	cmd := exec.Command(releaseBinary(t), args...)
	cmd.Env = env
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "netbox-e2e", Version: "1"}, opts).Connect(context.Background(),
		&mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: protocolVersions[0]})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// command runs the release binary once.
func (nb realNetBox) command(t *testing.T, env []string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(releaseBinary(t), args...)
	cmd.Env = env
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatal(err)
	}
	return cmd.ProcessState.ExitCode(), out.String(), errOut.String()
}

// tally counts the checks of one group for its netbox: line.
type tally struct {
	t              *testing.T
	passed, failed int
}

func (c *tally) check(ok bool, format string, args ...any) bool {
	c.t.Helper()
	if ok {
		c.passed++
	} else {
		c.failed++
		c.t.Errorf(format, args...)
	}
	return ok
}

// TestRealNetBox runs the bridge against a real NetBox with real plugins
// and users (issue 16): every assertion on NetBox's state is made through
// NetBox's own REST API, never on the bridge's word. Each group prints a
// line beginning "netbox:".
func TestRealNetBox(t *testing.T) {
	nb := loadRealNetBox(t)
	groups := []struct {
		name string
		run  func(*testing.T, realNetBox, *tally)
	}{
		{"scan", realScan}, {"reads", realReads}, {"writes", realWrites}, {"http", realHTTP},
		{"check", realCheck}, {"proxbox", realProxbox}, {"openapi", realOpenAPI}, {"branching", realBranching}, {"reference", realReference},
	}
	total := tally{t: t}
	for _, g := range groups {
		t.Run(g.name, func(t *testing.T) {
			c := &tally{t: t}
			g.run(t, nb, c)
			t.Logf("netbox: %s: %d passed, %d failed", g.name, c.passed, c.failed)
			total.passed, total.failed = total.passed+c.passed, total.failed+c.failed
		})
	}
	t.Logf("netbox: NetBox %s, %d passed, %d failed", nb["NETBOX_E2E_VERSION"], total.passed, total.failed)
}

// realScan: scan finds the test plugin's and the real Proxbox's tools, skips
// NetBox's installed-plugins listing and the branching plugin, which
// advertises nothing, without a problem; the same under BASE_PATH.
func realScan(t *testing.T, nb realNetBox, c *tally) {
	_, list := nb.api(t, http.MethodGet, "/api/plugins/", "alice", nil)
	c.check(list["installed-plugins"] != nil && list["branching"] != nil, "NetBox's plugin list %v lacks installed-plugins or branching", list)
	for _, url := range []string{nb["NETBOX_E2E_URL"], nb["NETBOX_E2E_URL_BASEPATH"]} {
		// What NetBox itself advertises: each advertising plugin's manifest.
		var want []string
		for _, plugin := range []string{"bridge-test", "proxbox"} {
			if status, m := nb.api(t, http.MethodGet, url+"/api/plugins/"+plugin+"/mcp/", "alice", nil); status == http.StatusOK {
				for _, tool := range m["tools"].([]any) {
					want = append(want, plugin+"."+tool.(map[string]any)["name"].(string))
				}
			}
		}
		slices.Sort(want)
		code, out, errOut := nb.command(t, nb.env(t, url, "alice"), "scan", "--json")
		var doc catalogJSON
		json.Unmarshal([]byte(out), &doc)
		c.check(code == 0 && len(want) > 0 && slices.Equal(doc.names(), want) && len(doc.Problems) == 0,
			"scan --json of %s: exit %d, tools %v, problems %v, want %v and none\n%s", url, code, doc.names(), doc.Problems, want, errOut)
		code, out, _ = nb.command(t, nb.env(t, url, "alice"), "scan", "--plugin", "bridge-test")
		c.check(code == 0 && strings.Contains(out, "bridge-test.create_widget  POST    write"), "scan --plugin bridge-test of %s: %d\n%s", url, code, out)
	}
}

// realReads: a read returns what NetBox's own REST API returns, a big
// integer and a date-time exactly; a token without permission gets
// NetBox's own 403 and its detail; v1 and v2 tokens work, configured and
// per call.
func realReads(t *testing.T, nb realNetBox, c *tally) {
	direct := nb.widgets(t, "")
	cs := nb.session(t, nb.env(t, "", "alice"), nil)
	r := call(t, cs, "plugin_call_tool", map[string]any{"plugin": "bridge-test", "tool": "list_widgets", "arguments": map[string]any{"limit": 1000}})
	body, _ := r.doc["body"].(map[string]any)
	results, _ := body["results"].([]any)
	ids := map[string]bool{}
	for _, w := range results {
		ids[fmt.Sprint(w.(map[string]any)["id"])] = true
	}
	c.check(!r.isError && len(ids) == len(direct) && len(direct) > 0, "list_widgets: %d widgets, NetBox lists %d: %s", len(ids), len(direct), clip(r.text, 300))
	for id, w := range direct {
		c.check(ids[id], "widget %s (%v) is missing from the bridge's read", id, w["name"])
	}
	for id := range direct {
		r = call(t, cs, "plugin_call_tool", map[string]any{"plugin": "bridge-test", "tool": "get_widget", "arguments": map[string]any{"id": json.Number(id)}})
		_, one := nb.api(t, http.MethodGet, "/api/plugins/bridge-test/widgets/"+id+"/", "alice", nil)
		var got struct{ Body map[string]any }
		dec := json.NewDecoder(strings.NewReader(r.text))
		dec.UseNumber()
		dec.Decode(&got)
		c.check(!r.isError && got.Body["serial"] == one["serial"] && got.Body["observed"] == one["observed"] && got.Body["last_updated"] == one["last_updated"],
			"get_widget %s: %s, want serial %v, observed %v and last_updated %v exactly as NetBox has them", id, clip(r.text, 300), one["serial"], one["observed"], one["last_updated"])
	}

	// The user without permissions: NetBox's own 403, with its detail.
	status, refused := nb.api(t, http.MethodGet, "/api/plugins/bridge-test/widgets/", "nobody", nil)
	cs = nb.session(t, nb.env(t, "", "nobody"), nil)
	r = call(t, cs, "plugin_call_tool", map[string]any{"plugin": "bridge-test", "tool": "list_widgets"})
	c.check(status == http.StatusForbidden && r.code() == "http_error" && r.errorField("status") == 403.0 &&
		strings.Contains(r.text, fmt.Sprint(refused["detail"])), "the permission-less token: NetBox %d %v, the bridge %s", status, refused, r.text)

	// v1 and v2 tokens, configured and per call; a read-only user reads.
	for _, user := range []string{"alice_v1", "reader"} {
		cs := nb.session(t, nb.env(t, "", user), nil)
		r := call(t, cs, "plugin_call_tool", map[string]any{"plugin": "bridge-test", "tool": "list_widgets"})
		c.check(!r.isError && r.doc["status"] == 200.0, "configured %s: %s", user, clip(r.text, 300))
	}
	cs = nb.session(t, nb.env(t, "", ""), nil)
	for _, user := range []string{"alice", "alice_v1"} {
		r := call(t, cs, "plugin_call_tool", map[string]any{"plugin": "bridge-test", "tool": "list_widgets", "token": nb.token(user)})
		c.check(!r.isError && r.doc["status"] == 200.0, "per-call %s: %s", user, clip(r.text, 300))
	}
}

// realWrites: a dry run and a write with mutations off change nothing; an
// allowed write creates exactly one object, which NetBox's changelog puts
// under the token's user; a confirmed destructive call deletes exactly one
// and a declined one nothing.
func realWrites(t *testing.T, nb realNetBox, c *tally) {
	before := nb.widgets(t, "")
	name := fmt.Sprintf("e2e-%d", time.Now().UnixNano())
	create := map[string]any{"plugin": "bridge-test", "tool": "create_widget", "arguments": map[string]any{"name": name, "serial": json.Number("9007199254740993")}}
	off := nb.session(t, nb.env(t, "", "alice"), nil)
	dry := maps.Clone(create)
	dry["dry_run"] = true
	r := call(t, off, "plugin_call_tool", dry)
	c.check(!r.isError && r.doc["dry_run"] == true && r.doc["allowed"] == false && len(nb.widgets(t, "")) == len(before), "dry run: %s", clip(r.text, 300))
	r = call(t, off, "plugin_call_tool", create)
	c.check(r.code() == "mutations_disabled" && len(nb.widgets(t, "")) == len(before), "mutations off: %s", clip(r.text, 300))

	var answer atomic.Value
	answer.Store("decline")
	asks := &mcp.ClientOptions{ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		return &mcp.ElicitResult{Action: answer.Load().(string), Content: map[string]any{"confirm": answer.Load() == "accept"}}, nil
	}}
	on := nb.session(t, nb.env(t, "", "alice"), asks, "--allow-mutations=bridge-test.create_widget,bridge-test.delete_widget")
	r = call(t, on, "plugin_call_tool", create)
	after := nb.widgets(t, "")
	id := fmt.Sprint(r.doc["body"].(map[string]any)["id"])
	c.check(!r.isError && r.doc["status"] == 201.0 && len(after) == len(before)+1 && after[id]["name"] == name &&
		fmt.Sprint(after[id]["serial"]) == "9007199254740993", "an allowed write: %s; NetBox has %d widgets, had %d", clip(r.text, 300), len(after), len(before))
	c.check(nb.changedBy(t, id) == nb["NETBOX_E2E_USER_ALICE"], "NetBox's changelog names %q for widget %s, want %s", nb.changedBy(t, id), id, nb["NETBOX_E2E_USER_ALICE"])

	del := map[string]any{"plugin": "bridge-test", "tool": "delete_widget", "arguments": map[string]any{"id": json.Number(id)}}
	r = call(t, on, "plugin_call_tool", del)
	c.check(r.code() == "not_confirmed" && nb.widgets(t, "")[id] != nil, "a declined delete: %s", clip(r.text, 300))
	answer.Store("accept")
	r = call(t, on, "plugin_call_tool", del)
	final := nb.widgets(t, "")
	c.check(!r.isError && r.doc["status"] == 204.0 && final[id] == nil && len(final) == len(before), "a confirmed delete: %s; %d widgets", clip(r.text, 300), len(final))

	// A user who may not add: NetBox refuses, the bridge says the outcome is
	// unknown (a write that got a non-2xx), and nothing was created.
	reader := nb.session(t, nb.env(t, "", "reader"), nil, "--allow-mutations")
	r = call(t, reader, "plugin_call_tool", create)
	c.check(r.code() == "outcome_unknown" && r.errorField("status") == 403.0 && len(nb.widgets(t, "")) == len(before), "the reader's write: %s", clip(r.text, 300))
}

// realHTTP: serve --http in the caller-token mode, two users through the
// TypeScript SDK client: NetBox's changelog records each call under its own
// user; the annotations follow the write policy as that client sees them.
func realHTTP(t *testing.T, nb realNetBox, c *tally) {
	dir := nodeClients(t)
	for _, policy := range []string{"bridge-test.create_widget", ""} {
		addr := freeAddr(t)
		args := []string{}
		if policy != "" {
			args = append(args, "--allow-mutations="+policy)
		}
		startHTTPServe(t, nb.env(t, "", ""), addr, http.DefaultClient, "http", args...)
		for _, user := range []string{"alice", "bob"} {
			name := fmt.Sprintf("e2e-%s-%d", user, time.Now().UnixNano())
			calls, _ := json.Marshal([]map[string]any{{"name": "plugin_call_tool", "arguments": map[string]any{"plugin": "bridge-test", "tool": "create_widget",
				"arguments": map[string]any{"name": name}}}})
			out, err := exec.Command("node", filepath.Join(dir, "calls.mjs"), "http://"+addr+"/mcp", nb.auth(user), string(calls)).Output()
			var doc struct {
				Tools []struct {
					Name        string
					Annotations map[string]any
				}
				Results []struct {
					IsError           bool
					StructuredContent map[string]any
				}
			}
			if !c.check(err == nil && json.Unmarshal(out, &doc) == nil && len(doc.Results) == 1, "node calls.mjs as %s: %v\n%s", user, err, out) {
				continue
			}
			for _, tool := range doc.Tools {
				if tool.Name == "plugin_call_tool" {
					c.check(tool.Annotations["readOnlyHint"] == (policy == "") && tool.Annotations["destructiveHint"] == (policy != ""),
						"--allow-mutations=%s: the TypeScript client sees annotations %v", policy, tool.Annotations)
				}
			}
			res := doc.Results[0]
			if policy == "" {
				c.check(res.IsError && res.StructuredContent["error"].(map[string]any)["code"] == "mutations_disabled", "%s with writes off: %v", user, res)
				continue
			}
			body, _ := res.StructuredContent["body"].(map[string]any)
			id := fmt.Sprint(body["id"])
			c.check(!res.IsError && nb.changedBy(t, id) == nb["NETBOX_E2E_USER_"+strings.ToUpper(user)],
				"%s over HTTP: %v; NetBox's changelog names %q", user, res, nb.changedBy(t, id))
			nb.api(t, http.MethodDelete, "/api/plugins/bridge-test/widgets/"+id+"/", "admin", nil)
		}
	}
}

// realCheck: check --plugin finds the tool whose answer breaks its own
// outputSchema, passes the others, and its anonymous probes meet NetBox's
// real refusal.
func realCheck(t *testing.T, nb realNetBox, c *tally) {
	status, anon := nb.api(t, http.MethodGet, "/api/plugins/bridge-test/widgets/", "", nil)
	c.check(status == http.StatusForbidden, "NetBox answers an anonymous read %d %v, want 403", status, anon)
	code, out, errOut := nb.command(t, nb.env(t, "", "alice"), "check", "--plugin", "bridge-test")
	c.check(code == 1 && strings.Contains(out, "tools.broken_count.response.count: expected integer, got string") && !strings.Contains(out, ".anonymous"),
		"check --plugin bridge-test: %d\n%s%s", code, out, errOut)
	for _, tool := range []string{"list_widgets", "get_widget"} {
		c.check(strings.Contains(out, tool+" (read): called: 200") && !strings.Contains(problemLines(out), "tools."+tool+"."), "check --plugin: %s is not called cleanly\n%s", tool, out)
	}
	code, out, errOut = nb.command(t, nb.env(t, nb["NETBOX_E2E_URL_BASEPATH"], "alice"), "check", "--plugin", "bridge-test")
	c.check(code == 0 && strings.HasSuffix(out, "bridge-test: valid — 4 tools, 2 read(s) called, 2 write(s) as dry runs\n"),
		"check --plugin bridge-test without its broken tool, under BASE_PATH: %d\n%s%s", code, out, errOut)
}

// realProxbox: the real Proxbox, with its bridge switched on the way its
// own test does, is scanned and checked live; with its bridge off (as it
// ships) it is reported as not advertising, with its 503 detail.
func realProxbox(t *testing.T, nb realNetBox, c *tally) {
	code, out, errOut := nb.command(t, nb.env(t, "", "alice"), "check", "--plugin", "proxbox")
	c.check(code != 2 && !strings.Contains(out, "advertisement") && !strings.Contains(out, "manifest."),
		"check --plugin proxbox, its bridge on: %d\n%s%s", code, out, errOut)
	t.Logf("check --plugin proxbox, its bridge on (exit %d):\n%s", code, out)
	status, off := nb.api(t, http.MethodGet, nb["NETBOX_E2E_URL_BASEPATH"]+"/api/plugins/proxbox/mcp/", "alice", nil)
	code, out, _ = nb.command(t, nb.env(t, nb["NETBOX_E2E_URL_BASEPATH"], "alice"), "scan", "--plugin", "proxbox")
	c.check(status == http.StatusServiceUnavailable && code == 1 && strings.Contains(out, "proxbox: not_advertised: ") && strings.Contains(out, fmt.Sprint(off["detail"])),
		"scan --plugin proxbox, its bridge off: NetBox %d %v; the bridge %d\n%s", status, off, code, out)
}

// problemLines is the output of check without its notes.
func problemLines(out string) string {
	var lines []string
	for line := range strings.Lines(out) {
		if !strings.Contains(line, ": note: ") {
			lines = append(lines, line)
		}
	}
	return strings.Join(lines, "")
}

// realOpenAPI: SPEC §17 on the real NetBox. draft, from NetBox's own
// schema, drafts every operation it lists of the test plugin, Proxbox and
// the third-party plugins of NETBOX_E2E_PLUGINS into manifests that pass
// check against the same schema; check --plugin cross-checks the real
// manifests of the test plugin (also under BASE_PATH) and Proxbox with no
// problem; a copy of the test plugin's manifest with a planted drift fails
// at the §17 locations.
func realOpenAPI(t *testing.T, nb realNetBox, c *tally) {
	env := nb.env(t, "", "alice")
	schema := filepath.Join(t.TempDir(), "openapi.json")
	req, _ := http.NewRequest(http.MethodGet, nb["NETBOX_E2E_URL"]+"/api/schema/?format=json", nil)
	req.Header.Set("Authorization", "Bearer "+nb.token("admin"))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	os.WriteFile(schema, data, 0o644)
	t.Logf("netbox: openapi: NetBox's schema is %d bytes", len(data))
	_, plugins := nb.api(t, http.MethodGet, "/api/plugins/", "admin", nil)
	drafted := map[string]string{}
	for label := range plugins {
		slug := strings.Split(fmt.Sprint(plugins[label]), "/")[len(strings.Split(fmt.Sprint(plugins[label]), "/"))-2]
		if label == "installed-plugins" || slug == "branching" {
			continue
		}
		from := []string{"--openapi", schema} // the saved schema; the test plugin's live, from NetBox
		if slug == "bridge-test" {
			from = nil
		}
		code, listed, errOut := nb.command(t, env, append([]string{"draft", "--plugin", slug}, from...)...)
		ops := strings.Split(strings.TrimSpace(listed), "\n")
		if !c.check(code == 0 && len(ops) > 0 && ops[0] != "", "draft --plugin %s lists: %d\n%s%s", slug, code, listed, errOut) {
			continue
		}
		passed := 0
		for batch := range slices.Chunk(ops, 8) { // 8 tools a manifest, within its 256 KiB
			args := []string{"draft", "--plugin", slug, "--openapi", schema}
			for _, op := range batch {
				args = append(args, "--operation", op)
			}
			code, manifest, errOut := nb.command(t, env, args...)
			file := filepath.Join(t.TempDir(), "draft.json")
			os.WriteFile(file, []byte(manifest), 0o644)
			ccode, out, _ := nb.command(t, env, "check", file, "--openapi", schema)
			if code == 0 && ccode == 0 {
				passed += len(batch)
			} else {
				t.Errorf("draft --plugin %s of %q: exit %d, then check: exit %d\n%s%s", slug, batch, code, ccode, errOut, problemLines(out))
			}
		}
		c.check(passed == len(ops), "%s: %d of %d drafted operations pass check", slug, passed, len(ops))
		drafted[slug] = fmt.Sprintf("%s %d/%d", slug, passed, len(ops))
	}
	t.Logf("netbox: openapi: drafted operations that pass check --openapi: %s", strings.Join(slices.Sorted(maps.Values(drafted)), ", "))
	c.check(len(drafted) >= 3 && drafted["bridge-test"] != "" && drafted["proxbox"] != "", "drafted plugins %v: want the test plugin, Proxbox and the third-party ones", drafted)
	code, out, errOut := nb.command(t, env, "draft", "--plugin", "proxbox", "--operation", "GET sync/schedule/", "--operation", "POST sync/schedule/")
	file := filepath.Join(t.TempDir(), "proxbox.json")
	os.WriteFile(file, []byte(out), 0o644)
	ccode, checked, _ := nb.command(t, env, "check", file, "--openapi", schema)
	c.check(code == 0 && ccode == 0, "Proxbox's sync/schedule/ drafted: exit %d, check exit %d\n%s%s", code, ccode, errOut, problemLines(checked))

	// The real manifests, cross-checked live: no problem at .openapi.
	for _, c2 := range []struct{ url, plugin string }{{"", "bridge-test"}, {nb["NETBOX_E2E_URL_BASEPATH"], "bridge-test"}, {"", "proxbox"}} {
		_, out, errOut := nb.command(t, nb.env(t, c2.url, "alice"), "check", "--plugin", c2.plugin)
		c.check(strings.Contains(out, "tools.") && !strings.Contains(problemLines(out), ".openapi") && !regexp.MustCompile(`(?m)^openapi: note`).MatchString(out),
			"check --plugin %s at %q: a cross-check problem, or no cross-check\n%s%s", c2.plugin, cmp.Or(c2.url, nb["NETBOX_E2E_URL"]), out, errOut)
	}

	// A planted drift, on a copy of the served manifest.
	_, served := nb.api(t, http.MethodGet, "/api/plugins/bridge-test/mcp/", "alice", nil)
	for _, tl := range served["tools"].([]any) {
		tool := tl.(map[string]any)
		props := tool["inputSchema"].(map[string]any)["properties"].(map[string]any)
		switch tool["name"] {
		case "create_widget":
			props["color"] = map[string]any{"type": "string"}        // an extra property
			props["serial"] = map[string]any{"type": "string"}       // a wrong type
			delete(tool["inputSchema"].(map[string]any), "required") // a missing required one
		case "get_widget":
			tool["method"], tool["effect"] = "POST", "write" // a wrong method
			tool["annotations"].(map[string]any)["readOnlyHint"] = false
		}
	}
	data, _ = json.Marshal(served)
	file = filepath.Join(t.TempDir(), "drift.json")
	os.WriteFile(file, data, 0o644)
	code, out, _ = nb.command(t, env, "check", file, "--openapi", schema)
	for _, want := range []string{"tools.create_widget.openapi.color: the serializer takes no property", "tools.create_widget.openapi.serial: the manifest has type string; the serializer takes integer",
		"tools.create_widget.openapi.name: the serializer requires it; the manifest does not",
		"tools.get_widget.openapi: NetBox's API schema has no POST /api/plugins/bridge-test/tools/get-widget/"} {
		c.check(code == 1 && strings.Contains(out, want), "the planted drift: exit %d, want %q:\n%s", code, want, problemLines(out))
	}
}

// realBranching: with --branch, writes land in a real NetBox Branching
// branch, and main is untouched until a merge (SPEC §16).
func realBranching(t *testing.T, nb realNetBox, c *tally) {
	name := fmt.Sprintf("e2e-%d", time.Now().UnixNano())
	// The widget the branch deletes, made in main before the branch: the
	// merge deletes it from main, so it must be none that later reads use.
	status, made := nb.api(t, http.MethodPost, "/api/plugins/bridge-test/widgets/", "admin", map[string]any{"name": name + "-victim"})
	if !c.check(status == http.StatusCreated, "creating the widget to delete: %d %v", status, made) {
		return
	}
	victim := fmt.Sprint(made["id"])
	status, br := nb.api(t, http.MethodPost, "/api/plugins/branching/branches/", "admin", map[string]any{"name": name})
	if !c.check(status == http.StatusCreated, "creating a branch: %d %v", status, br) {
		return
	}
	branchURL := fmt.Sprintf("/api/plugins/branching/branches/%v/", br["id"])
	waitStatus := func(want string) map[string]any {
		for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
			if _, br = nb.api(t, http.MethodGet, branchURL, "admin", nil); br["status"].(map[string]any)["value"] == want {
				break
			}
		}
		return br
	}
	br = waitStatus("ready")
	schemaID := fmt.Sprint(br["schema_id"])
	if !c.check(br["status"].(map[string]any)["value"] == "ready", "the branch never became ready: %v", br) {
		return
	}
	main0 := nb.widgets(t, "")
	cs := nb.session(t, nb.env(t, "", "alice"), nil, "--branch", name, "--allow-mutations", "--confirm", "off")
	widget := fmt.Sprintf("e2e-branch-%d", time.Now().UnixNano())
	r := call(t, cs, "plugin_call_tool", map[string]any{"plugin": "bridge-test", "tool": "create_widget", "arguments": map[string]any{"name": widget}})
	created := fmt.Sprint(r.doc["body"].(map[string]any)["id"])
	inBranch, inMain := nb.widgets(t, schemaID), nb.widgets(t, "")
	c.check(!r.isError && inBranch[created] != nil && inMain[created] == nil && len(inMain) == len(main0),
		"a write in the branch: %s; in the branch %t, in main %t", clip(r.text, 300), inBranch[created] != nil, inMain[created] != nil)
	r = call(t, cs, "plugin_call_tool", map[string]any{"plugin": "bridge-test", "tool": "delete_widget", "arguments": map[string]any{"id": json.Number(victim)}})
	inBranch, inMain = nb.widgets(t, schemaID), nb.widgets(t, "")
	c.check(!r.isError && inBranch[victim] == nil && inMain[victim] != nil, "a delete in the branch: %s", clip(r.text, 300))
	r = call(t, cs, "plugin_call_tool", map[string]any{"plugin": "bridge-test", "tool": "list_widgets", "header": []string{"X-NetBox-Branch: " + schemaID}})
	c.check(r.code() == "invalid_request", "a caller's X-NetBox-Branch under --branch: %s", clip(r.text, 300))

	// Merged through the plugin's API, both changes are in main.
	status, job := nb.api(t, http.MethodPost, branchURL+"merge/", "admin", map[string]any{"commit": true})
	br = waitStatus("merged")
	merged := nb.widgets(t, "")
	c.check(status < 300 && merged[created] != nil && merged[victim] == nil, "after the merge (%d %v, branch %v): created in main %t, deleted from main %t",
		status, job, br["status"], merged[created] != nil, merged[victim] == nil)

	// A merged branch is not ready, and an unknown one does not exist:
	// branch_unavailable, nothing sent; --branch-only without a branch.
	for _, branch := range []string{name, "nosuch-" + name} {
		cs := nb.session(t, nb.env(t, "", "alice"), nil, "--branch", branch, "--allow-mutations")
		before := nb.widgets(t, "")
		r := call(t, cs, "plugin_call_tool", map[string]any{"plugin": "bridge-test", "tool": "create_widget", "arguments": map[string]any{"name": widget + "-x"}})
		c.check(r.code() == "branch_unavailable" && r.errorField("dispatched") == false && len(nb.widgets(t, "")) == len(before),
			"--branch %s: %s", branch, clip(r.text, 300))
	}
	cs = nb.session(t, nb.env(t, "", "alice"), nil, "--branch-only", "--allow-mutations")
	r = call(t, cs, "plugin_call_tool", map[string]any{"plugin": "bridge-test", "tool": "create_widget", "arguments": map[string]any{"name": widget + "-y"}})
	c.check(r.code() == "branch_required" && len(nb.widgets(t, "")) == len(merged), "--branch-only without a branch: %s", clip(r.text, 300))
	t.Logf("netbox: branching: branch %s (%s) created, written, merged", name, schemaID)
}

// ---- the README ----

// TestREADMEBlocks: every JSON and YAML block of the README parses (issue
// 19: a plugin author copies them into their CI): JSON with the strict
// decoder, YAML with PyYAML, which BRIDGE_E2E=1 (CI) requires.
func TestREADMEBlocks(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)\n```(json|yaml)\n(.*?)\n```").FindAllStringSubmatch(string(readme), -1)
	yamlOK := exec.Command("python3", "-c", "import yaml").Run() == nil
	if !yamlOK && os.Getenv("BRIDGE_E2E") == "1" {
		t.Fatal("PyYAML is needed to parse the README's YAML blocks (pip install pyyaml)")
	}
	counts := map[string]int{}
	for _, b := range blocks {
		kind, text := b[1], b[2]
		switch {
		case kind == "json":
			if _, err := decode([]byte(text), rootLimits); err != nil {
				t.Errorf("a JSON block of the README: %v\n%s", err, text)
			}
		case !yamlOK:
			counts["yaml skipped: no PyYAML"]++
			continue
		default:
			cmd := exec.Command("python3", "-c", "import sys, yaml; yaml.safe_load(sys.stdin)")
			cmd.Stdin = strings.NewReader(text)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("a YAML block of the README: %v\n%s\n%s", err, out, text)
			}
		}
		counts[kind]++
	}
	if counts["json"] == 0 || counts["yaml"]+counts["yaml skipped: no PyYAML"] == 0 {
		t.Errorf("the README has no JSON or no YAML block: %v", counts)
	}
	t.Logf("readme: blocks parsed %v", counts)
}

// reference is netbox-sdk's nbx-mcp, the reference implementation, served
// over stdio against url with the named user's token and driven by the same
// go-sdk client as the bridge.
func (nb realNetBox) reference(t testing.TB, url, user string) *mcp.ClientSession {
	t.Helper()
	cmd := exec.Command(nb["NETBOX_E2E_REFERENCE"])
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "NETBOX_URL=" + url, "NETBOX_TOKEN=" + nb.token(user)}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "netbox-e2e", Version: "1"}, nil).Connect(context.Background(),
		&mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: protocolVersions[0]})
	if err != nil {
		t.Fatalf("starting the reference %s: %v", nb["NETBOX_E2E_REFERENCE"], err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// verdict is whether a dry run of create_widget accepts the arguments: a
// dry-run document, or a refusal (an error result, or a client error for a
// line the server refused as not strict JSON).
func verdict(cs *mcp.ClientSession, arguments string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "plugin_call_tool", Arguments: json.RawMessage(
		`{"plugin": "bridge-test", "tool": "create_widget", "dry_run": true, "arguments": ` + arguments + `}`)})
	return err == nil && !res.IsError
}

// realReference: the reference beside the bridge on the same NetBox and
// plugins, with the same client: the same qualified names and effects in the
// catalog, and the same accept or reject verdict on a table of argument
// cases, but where the bridge is deliberately stricter (SPEC §12).
func realReference(t *testing.T, nb realNetBox, c *tally) {
	url := nb["NETBOX_E2E_URL"]
	ref, bridge := nb.reference(t, url, "alice"), nb.session(t, nb.env(t, url, "alice"), nil)
	effects := func(cs *mcp.ClientSession) map[string]string {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "plugin_list_tools", Arguments: map[string]any{}})
		if err != nil || res.IsError {
			t.Fatalf("plugin_list_tools: %v %+v", err, res)
		}
		raw, _ := json.Marshal(res.StructuredContent)
		var doc struct {
			Tools []struct{ QualifiedName, Effect string }
		}
		json.Unmarshal(bytes.ReplaceAll(raw, []byte(`"qualified_name"`), []byte(`"QualifiedName"`)), &doc)
		out := map[string]string{}
		for _, tool := range doc.Tools {
			out[tool.QualifiedName] = tool.Effect
		}
		return out
	}
	theirs, ours := effects(ref), effects(bridge)
	agree := 0
	for name, effect := range ours {
		if c.check(theirs[name] == effect, "%s: the bridge says %s, the reference %q", name, effect, theirs[name]) {
			agree++
		}
	}
	c.check(len(theirs) == len(ours) && len(ours) > 0, "the reference lists %d tools, the bridge %d", len(theirs), len(ours))
	t.Logf("reference: catalog: %d tools, %d agree on qualified name and effect, %d differ", len(ours), agree, len(ours)-agree+abs(len(theirs)-len(ours)))

	// Arguments of create_widget (name 1-100 characters, required; serial an
	// int64; observed an RFC 3339 date-time; description at most 200), each
	// with SPEC §5's verdict; stricter marks where SPEC §12 parts ways.
	long := func(ch string, n int) string { return strconv.Quote(strings.Repeat(ch, n)) }
	cases := []struct {
		name, args     string
		accept, strict bool
	}{
		{"nothing", `{}`, false, false},
		{"a name", `{"name": "a"}`, true, false},
		{"an empty name", `{"name": ""}`, false, false},
		{"100 characters", `{"name": ` + long("x", 100) + `}`, true, false},
		{"101 characters", `{"name": ` + long("x", 101) + `}`, false, false},
		{"100 non-ASCII characters", `{"name": ` + long("é", 100) + `}`, true, false},
		{"a number as the name", `{"name": 5}`, false, false},
		{"an integer", `{"name": "a", "serial": 7}`, true, false},
		{"7.0", `{"name": "a", "serial": 7.0}`, true, false},
		{"1e2", `{"name": "a", "serial": 1e2}`, true, false},
		{"1.5", `{"name": "a", "serial": 1.5}`, false, false},
		{"int64 maximum", `{"name": "a", "serial": 9223372036854775807}`, true, false},
		{"past int64", `{"name": "a", "serial": 9223372036854775808}`, false, false},
		{"int64 minimum", `{"name": "a", "serial": -9223372036854775808}`, true, false},
		{"true as a number", `{"name": "a", "serial": true}`, false, false},
		{"a numeric string", `{"name": "a", "serial": "7"}`, false, false},
		{"null", `{"name": "a", "serial": null}`, false, false},
		{"a date-time", `{"name": "a", "observed": "2026-08-12T12:34:56Z"}`, true, false},
		{"a leap second", `{"name": "a", "observed": "1990-12-31T23:59:60Z"}`, true, false},
		{"a leap second that is none", `{"name": "a", "observed": "2026-08-12T12:34:60Z"}`, false, false},
		{"lower-case t and z", `{"name": "a", "observed": "2026-08-12t12:34:56z"}`, true, false},
		{"-00:00", `{"name": "a", "observed": "2026-08-12T12:34:56-00:00"}`, true, false},
		{"no offset", `{"name": "a", "observed": "2026-08-12T12:34:56"}`, false, false},
		{"February 30", `{"name": "a", "observed": "2026-02-30T00:00:00Z"}`, false, false},
		{"past year 9999", `{"name": "a", "observed": "9999-12-31T23:59:60Z"}`, false, false},
		{"200 characters", `{"name": "a", "description": ` + long("d", 200) + `}`, true, false},
		{"201 characters", `{"name": "a", "description": ` + long("d", 201) + `}`, false, false},
		{"an unknown key", `{"name": "a", "zzz": 1}`, false, false},
		{"a duplicate key", `{"name": "a", "name": "b"}`, false, true},
	}
	var same, stricter int
	for _, tc := range cases {
		ourVerdict, theirVerdict := verdict(bridge, tc.args), verdict(ref, tc.args)
		c.check(ourVerdict == tc.accept, "%s: the bridge accepts %t, SPEC §5: %t", tc.name, ourVerdict, tc.accept)
		switch {
		case ourVerdict == theirVerdict:
			same++
		case tc.strict && !ourVerdict:
			stricter++ // SPEC §12: duplicate JSON keys are invalid here
		default:
			c.check(false, "%s: the bridge accepts %t, the reference %t", tc.name, ourVerdict, theirVerdict)
		}
	}
	t.Logf("reference: verdicts: %d cases, %d agree, %d where the bridge is deliberately stricter (SPEC §12), %d other", len(cases), same, stricter, len(cases)-same-stricter)
}

func abs(n int) int { return max(n, -n) }

// delayed serves url behind delay of latency for every request, as a
// NetBox far away: the benchmarks' NetBox.
func delayed(t testing.TB, url string, latency time.Duration) string {
	target, _ := neturl.Parse(url)
	proxy := httputil.NewSingleHostReverseProxy(target)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(latency)
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// BenchmarkRealNetBox: a full scan and one read call through an MCP session,
// the bridge against the reference, the same client, NetBox the real one
// behind 10 ms of added latency per request; alternating in one run. It
// reports each in milliseconds and the bridge/reference ratios.
func BenchmarkRealNetBox(b *testing.B) {
	nb := realNetBox{}
	data, err := os.ReadFile(cmp.Or(os.Getenv("NETBOX_E2E_ENV"), "/tmp/netbox-e2e/env"))
	if err != nil {
		b.Skip("no real NetBox: e2e/netbox/run stands one up")
	}
	for line := range strings.Lines(string(data)) {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), "="); ok {
			nb[k] = v
		}
	}
	const latency = 10 * time.Millisecond
	url := delayed(b, nb["NETBOX_E2E_URL"], latency)
	bridgeCmd := exec.Command(releaseBinary(b))
	bridgeCmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + b.TempDir(), "NETBOX_URL=" + url, "NETBOX_TOKEN=" + nb.token("alice")}
	bridge, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(context.Background(),
		&mcp.CommandTransport{Command: bridgeCmd}, &mcp.ClientSessionOptions{ProtocolVersion: protocolVersions[0]})
	if err != nil {
		b.Fatal(err)
	}
	defer bridge.Close()
	ref := nb.reference(b, url, "alice")
	for _, op := range []struct{ name, tool, args string }{
		{"full scan", "plugin_list_tools", `{}`},
		{"one read", "plugin_call_tool", `{"plugin": "bridge-test", "tool": "get_widget", "arguments": {"name": "alpha"}}`},
	} {
		b.Run(op.name, func(b *testing.B) {
			var times [2]time.Duration
			for b.Loop() {
				for k, cs := range []*mcp.ClientSession{bridge, ref} {
					start := time.Now()
					res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: op.tool, Arguments: json.RawMessage(op.args)})
					if err != nil || res.IsError {
						b.Fatalf("%s (%d): %v %+v", op.name, k, err, res)
					}
					times[k] += time.Since(start)
				}
			}
			n := float64(b.N)
			b.ReportMetric(float64(times[0].Microseconds())/1000/n, "bridge-ms")
			b.ReportMetric(float64(times[1].Microseconds())/1000/n, "reference-ms")
			b.ReportMetric(float64(times[0])/float64(times[1]), "bridge/reference")
		})
	}
}

// ---- issue 17: no caller can stall another, refusals that say why, the
// operators' view (readyz, trusted proxies) ----

// rawRequest opens a connection to the server at addr and writes head, a
// request's line and headers, as a client that may never send its body.
func rawRequest(t *testing.T, addr, head string) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := io.WriteString(c, head); err != nil {
		t.Fatal(err)
	}
	return c, bufio.NewReader(c)
}

// statusLine reads the status line of the next response on c, waiting at
// most d.
func statusLine(t *testing.T, c net.Conn, r *bufio.Reader, d time.Duration) string {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(d))
	line, err := r.ReadString('\n')
	if err != nil {
		return fmt.Sprintf("no answer within %v (%v)", d, err)
	}
	return strings.TrimSpace(line)
}

// TestHTTPSilentUploadsStallNoOne: SPEC §11, bytes are charged as they
// arrive: two callers that send the headers of POST /mcp with a made-up but
// well-formed token and Content-Length: 4194304, and never the body, hold
// nothing, and a small call of another caller is answered while they hang
// (issue 17: it waited 9.5 s for their 10 s body timeout). Each upload asks
// for 100 Continue, so the test knows that the server is reading its body.
func TestHTTPSilentUploadsStallNoOne(t *testing.T) {
	t.Parallel()
	f := newInvNetBox(t)
	f.setToken("")
	srv := httpBridge(t, f, false, "", io.Discard)
	addr := strings.TrimPrefix(srv.URL, "http://")
	type upload struct {
		c net.Conn
		r *bufio.Reader
	}
	var uploads []upload
	for range 2 {
		c, r := rawRequest(t, addr, "POST /mcp HTTP/1.1\r\nHost: "+addr+"\r\nAuthorization: Bearer nbt_k1.s1\r\n"+
			"Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2025-11-25\r\n"+
			"Expect: 100-continue\r\nContent-Length: 4194304\r\n\r\n")
		if line := statusLine(t, c, r, 10*time.Second); !strings.HasPrefix(line, "HTTP/1.1 100") {
			t.Fatalf("a silent upload: %q, want 100 Continue (the server reading its body)", line)
		}
		r.ReadString('\n') // the blank line after 100 Continue
		uploads = append(uploads, upload{c, r})
	}
	start := time.Now()
	cs := httpSession(t, srv.URL, "Bearer nbt_other.s2", protocolVersions[0])
	list := call(t, cs, "plugin_list_tools", map[string]any{"plugin": "inv"})
	read := callInv(t, cs, "search", map[string]any{})
	elapsed := time.Since(start)
	if list.isError || read.isError || read.doc["status"] != 200.0 {
		t.Errorf("another caller's calls while two uploads hang: %s / %s", list.text, read.text)
	}
	for i, u := range uploads { // still hanging: the call did not wait them out
		if line := statusLine(t, u.c, u.r, 50*time.Millisecond); !strings.HasPrefix(line, "no answer") {
			t.Errorf("upload %d was answered %q before the other caller's call was: the call waited for it", i, line)
		}
	}
	// A liveness bound, not a performance claim: far below the 10 s body
	// timeout the old code made the call wait.
	if elapsed > 5*time.Second {
		t.Errorf("another caller's session and two calls took %v while two uploads hung", elapsed)
	}
}

// TestHTTPOversizeDeclaredAtOnce: SPEC §11, §14, a declared Content-Length
// over the 4 MiB limit is refused 413 before any body byte is read, not 408
// after the 10 s body timeout (issue 17).
func TestHTTPOversizeDeclaredAtOnce(t *testing.T) {
	t.Parallel()
	f := newInvNetBox(t)
	f.setToken("")
	srv := httpBridge(t, f, false, "", io.Discard)
	addr := strings.TrimPrefix(srv.URL, "http://")
	c, r := rawRequest(t, addr, "POST /mcp HTTP/1.1\r\nHost: "+addr+"\r\nAuthorization: Bearer nbt_k1.s1\r\n"+
		"Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: 4194305\r\n\r\n")
	if line := statusLine(t, c, r, 8*time.Second); !strings.HasPrefix(line, "HTTP/1.1 413") {
		t.Errorf("Content-Length 4194305 and no body: %q, want 413 at once", line)
	}
}

// TestHTTPAccessLogClipsTheMethod: SPEC §14, the access record clips the
// method to 16 characters: a 200,000-byte method from an unauthenticated
// caller makes a small record (issue 17: a 200 KB one).
func TestHTTPAccessLogClipsTheMethod(t *testing.T) {
	t.Parallel()
	var log syncBuffer
	srv := httpBridge(t, newInvNetBox(t), false, "", &log)
	addr := strings.TrimPrefix(srv.URL, "http://")
	method := strings.Repeat("M", 200000)
	c, r := rawRequest(t, addr, method+" /mcp HTTP/1.1\r\nHost: "+addr+"\r\n\r\n")
	if line := statusLine(t, c, r, 10*time.Second); !strings.HasPrefix(line, "HTTP/1.1 401") {
		t.Fatalf("a 200,000-byte method: %q, want 401", line)
	}
	c.Close()
	srv.Close() // waits for the handler, which logs after answering
	var found bool
	for line := range strings.Lines(log.String()) {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line %q: %v", clip(line, 200), err)
		}
		if rec["msg"] != "http" {
			continue
		}
		found = true
		logged, _ := rec["method"].(string)
		kept := strings.TrimSuffix(logged, "…") // the clip's marker is not the method's
		if len([]rune(kept)) > 16 || !strings.HasPrefix(method, kept) || len(line) > 1024 {
			t.Errorf("access record of %d bytes with method %q (%d characters of it): want at most 16", len(line), clip(logged, 40), len(kept))
		}
	}
	if !found {
		t.Errorf("no access record:\n%s", clip(log.String(), 400))
	}
}

// TestHTTPRefusalsSayWhy: SPEC §14, a 401 says why in its body, one line:
// no Authorization; a v2 token sent with Token or a v1 token sent with
// Bearer, with the form to use; a malformed token; a wrong MCP bearer
// token. A 403 for a Host or an Origin names the header and its value, in
// the body and in the access record. No body shows a token.
func TestHTTPRefusalsSayWhy(t *testing.T) {
	t.Parallel()
	f := newInvNetBox(t)
	var log syncBuffer
	caller := httpBridge(t, f, false, "", &log)
	shared := httpBridge(t, f, true, "mcp-"+secret, io.Discard)
	ping := `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	v1 := "0123456789" + secret + "abcdefghijklmnopqrstu" // 40 letters and digits
	for _, c := range []struct {
		url, auth     string
		want, notWant []string // in the body, case-insensitive
	}{
		{caller.URL, "", []string{"no Authorization"}, nil},
		{caller.URL, "Token nbt_k1." + secret, []string{"v2", "Bearer nbt_"}, []string{"malformed"}},
		{caller.URL, "Bearer " + v1, []string{"v1", "Token "}, []string{"malformed"}},
		{caller.URL, "Bearer abc" + secret, []string{"malformed"}, nil},
		{caller.URL, "Token " + secret, []string{"malformed"}, nil},
		// A token where the scheme goes: no part of it is quoted (issue 28).
		{caller.URL, "nbt_k1." + secret + " nbt_k1." + secret, []string{"v2", "Bearer nbt_"}, []string{"malformed"}},
		{caller.URL, v1 + " " + v1, []string{"v1", "Token "}, []string{"malformed"}},
		{shared.URL, "", []string{"no Authorization"}, nil},
		{shared.URL, "Bearer wrong-" + secret, []string{"MCP bearer token"}, []string{"no Authorization"}},
	} {
		h := http.Header{}
		if c.auth != "" {
			h.Set("Authorization", c.auth)
		}
		resp := postMCP(t, c.url, h, ping)
		body, _ := io.ReadAll(resp.Body)
		name := fmt.Sprintf("Authorization %q", clip(c.auth, 12))
		if resp.StatusCode != http.StatusUnauthorized || strings.Count(string(body), "\n") != 1 || !strings.HasSuffix(string(body), "\n") {
			t.Errorf("%s: %d %q, want 401 and one line", name, resp.StatusCode, body)
		}
		lower := strings.ToLower(string(body))
		for _, want := range c.want {
			if !strings.Contains(lower, strings.ToLower(want)) {
				t.Errorf("%s: the 401 says %q; want it to say %q", name, body, want)
			}
		}
		for _, not := range c.notWant {
			if strings.Contains(lower, strings.ToLower(not)) {
				t.Errorf("%s: the 401 says %q; it is not %q", name, body, not)
			}
		}
		if strings.Contains(string(body), secret) {
			t.Errorf("%s: the 401 shows the token: %q", name, body)
		}
	}

	// 403: an Origin, and a Host on a loopback address.
	for _, c := range []struct {
		header, value string
	}{{"Origin", "https://evil.example"}, {"Host", "evil.example"}} {
		header := http.Header{"Authorization": {"Bearer nbt_k1.s1"}, c.header: {c.value}}
		if c.header == "Origin" {
			header.Set("Sec-Fetch-Site", "cross-site")
		}
		resp := postMCP(t, caller.URL, header, ping)
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(body), c.header) || !strings.Contains(string(body), c.value) {
			t.Errorf("%s %s: %d %q, want 403 naming the header and its value", c.header, c.value, resp.StatusCode, body)
		}
	}
	caller.Close() // every access record is written
	if strings.Contains(log.String(), secret) {
		t.Errorf("an access record quotes the caller's Authorization:\n%s", log.String())
	}
	refused := map[string]bool{}
	for line := range strings.Lines(log.String()) {
		var rec map[string]any
		json.Unmarshal([]byte(line), &rec)
		why, _ := rec["error"].(string)
		if rec["msg"] == "http" && rec["status"] == 403.0 {
			for _, c := range []struct{ header, value string }{{"Origin", "https://evil.example"}, {"Host", "evil.example"}} {
				refused[c.header] = refused[c.header] || strings.Contains(why, c.header) && strings.Contains(why, c.value)
			}
		}
	}
	if !refused["Origin"] || !refused["Host"] {
		t.Errorf("the access records of the 403s do not name the header and value (Origin %v, Host %v):\n%s", refused["Origin"], refused["Host"], log.String())
	}
}

// startServeAt starts the release binary's serve with args and env, which
// make it listen at addr, and waits until addr answers /healthz.
func startServeAt(t *testing.T, env []string, addr string, client *http.Client, scheme string, args ...string) (*exec.Cmd, *syncBuffer) {
	t.Helper()
	cmd := exec.Command(releaseBinary(t), append([]string{"serve"}, args...)...)
	cmd.Env = append(env, "HOME="+t.TempDir(), "PATH="+os.Getenv("PATH"))
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if resp, err := client.Get(scheme + "://" + addr + "/healthz"); err == nil {
			resp.Body.Close()
			return cmd, stderr
		}
	}
	t.Fatalf("serve %v never answered /healthz at %s:\n%s", args, addr, stderr.String())
	return nil, nil
}

// stopServe stops a serve process with SIGTERM and waits for it, so that
// every record it logs is written.
func stopServe(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("serve exited: %v", err)
		}
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		t.Fatal("serve still running 10 s after SIGTERM")
	}
}

// jsonRecords parses JSON log lines.
func jsonRecords(t *testing.T, log string) []map[string]any {
	t.Helper()
	var recs []map[string]any
	for line := range strings.Lines(log) {
		if strings.TrimSpace(line) == "" {
			continue
		}
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line %q is not JSON: %v", clip(line, 200), err)
		}
		recs = append(recs, rec)
	}
	return recs
}

// getText GETs url and returns the status and the body.
func getText(t *testing.T, client *http.Client, url string) (int, string) {
	t.Helper()
	resp, err := client.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// TestHTTPServesOnlyItsEndpoints: SPEC §14 names the HTTP front's
// endpoints, /mcp, /healthz and /readyz. Any other path is none of them: it
// is not found (RFC 9110: 404), and NetBox is asked nothing.
func TestHTTPServesOnlyItsEndpoints(t *testing.T) {
	t.Parallel()
	f := newInvNetBox(t)
	srv := httpBridge(t, f, false, "", io.Discard)
	for _, path := range []string{"/", "/mcp/", "/healthz/", "/readyz/x", "/api/plugins/", "/index.html"} {
		if status, body := getText(t, http.DefaultClient, srv.URL+path); status != http.StatusNotFound {
			t.Errorf("GET %s: %d %q, want 404", path, status, clip(body, 100))
		}
	}
	if n := f.totalRequests(); n != 0 {
		t.Errorf("%d NetBox requests for paths the front does not serve", n)
	}
}

// TestHTTPReadyz: SPEC §14, /readyz answers 200 "ready" on a replica that
// can serve, and 503 with one line naming what is missing on one that
// cannot: no NetBox URL, or a write policy that does not parse. /healthz
// stays 200 "ok" there.
func TestHTTPReadyz(t *testing.T) {
	t.Parallel()
	f := newInvNetBox(t)
	for _, c := range []struct {
		env     []string
		status  int
		missing string
	}{
		{[]string{"NETBOX_URL=" + f.URL}, 200, ""},
		{nil, 503, "NETBOX_URL"},
		{[]string{"NETBOX_URL=" + f.URL, "NETBOX_MCP_ALLOW_MUTATIONS=proxbox"}, 503, "NETBOX_MCP_ALLOW_MUTATIONS"},
	} {
		addr := freeAddr(t)
		cmd, _ := startHTTPServe(t, c.env, addr, http.DefaultClient, "http")
		status, body := getText(t, http.DefaultClient, "http://"+addr+"/readyz")
		switch {
		case c.status == 200 && (status != 200 || strings.TrimSpace(body) != "ready"):
			t.Errorf("%v: /readyz %d %q, want 200 ready", c.env, status, body)
		case c.status == 503 && (status != 503 || strings.Count(body, "\n") != 1 || !strings.Contains(body, c.missing)):
			t.Errorf("%v: /readyz %d %q, want 503 and one line naming %s", c.env, status, body, c.missing)
		}
		if status, body := getText(t, http.DefaultClient, "http://"+addr+"/healthz"); status != 200 || body != "ok" {
			t.Errorf("%v: /healthz %d %q, want 200 ok", c.env, status, body)
		}
		stopServe(t, cmd)
	}
}

// TestHTTPTrustedProxies: SPEC §13, §14, with the peer in a
// --trusted-proxies range (or NETBOX_MCP_TRUSTED_PROXIES) the audit and the
// access record name as remote the right-most untrusted X-Forwarded-For
// address, never a forged left-most one, and the peer as peer; without
// them X-Forwarded-For is ignored: remote is the peer, and there is no
// peer field.
func TestHTTPTrustedProxies(t *testing.T) {
	t.Parallel()
	f := newInvNetBox(t)
	f.setToken("")
	env := []string{"NETBOX_URL=" + f.URL, "NETBOX_MCP_ALLOW_MUTATIONS=1"}
	for _, c := range []struct {
		name string
		env  []string
		args []string
	}{
		{"--trusted-proxies", env, []string{"--trusted-proxies", "127.0.0.0/8,10.0.0.0/8"}},
		{"NETBOX_MCP_TRUSTED_PROXIES", append(env, "NETBOX_MCP_TRUSTED_PROXIES=127.0.0.0/8, 10.0.0.0/8"), nil},
		{"neither", env, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			addr := freeAddr(t)
			cmd, stderr := startHTTPServe(t, c.env, addr, http.DefaultClient, "http", append(c.args, "--log-format", "json")...)
			// The caller 203.0.113.7 forged 6.6.6.6; the proxies 10.1.2.3
			// and the peer appended what they saw.
			h := http.Header{"Authorization": {"Bearer nbt_k1.s1"}, "X-Forwarded-For": {"6.6.6.6, 203.0.113.7", "10.1.2.3"}}
			resp := postMCP(t, "http://"+addr, h, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"plugin_call_tool",`+
				`"arguments":{"plugin":"inv","tool":"create","arguments":{"name":"x"}}}}`)
			if body, _ := io.ReadAll(resp.Body); !strings.Contains(string(body), `\"status\":201`) {
				t.Fatalf("the write: %d %s", resp.StatusCode, body)
			}
			stopServe(t, cmd)
			var audit, access int
			for _, rec := range jsonRecords(t, stderr.String()) {
				if rec["msg"] != "write" && (rec["msg"] != "http" || rec["path"] != "/mcp") {
					continue
				}
				if rec["msg"] == "write" {
					audit++
				} else {
					access++
				}
				peer, _ := rec["peer"].(string)
				remote, _ := rec["remote"].(string)
				if c.name == "neither" {
					if !strings.HasPrefix(remote, "127.0.0.1:") || rec["peer"] != nil {
						t.Errorf("without trusted proxies: remote %q, peer %v; want the peer as remote and no peer field: %v", remote, rec["peer"], rec)
					}
					continue
				}
				if remote != "203.0.113.7" || !strings.HasPrefix(peer, "127.0.0.1:") {
					t.Errorf("behind trusted proxies: remote %q, peer %q; want 203.0.113.7 and the peer: %v", remote, peer, rec)
				}
			}
			if audit != 2 || access != 1 { // the write's dispatching and dispatched records (SPEC §13)
				t.Errorf("%d audit and %d access records of the write, want 2 and 1:\n%s", audit, access, stderr.String())
			}
		})
	}
}

// TestSlowReadsStallNoOne: SPEC §11, a NetBox body holds only what has
// arrived: while caller A has 34 reads whose target drips its body
// (chunked, a byte now and then, never ending until the test lets it),
// caller B's plugin_list_tools of the plugin and a read of another plugin
// are answered, and A's reads are still dripping then (issue 17: each
// chunked body reserved 256 KiB of the 8 MiB budget while it streamed, and
// B waited until A's requests timed out).
func TestSlowReadsStallNoOne(t *testing.T) {
	t.Parallel()
	const slow = 34
	f := newInvNetBox(t)
	f.setToken("")
	f.setChunked(true) // every body streams without Content-Length
	f.addPlugin("other", readTool("list"))
	f.handle("/api/plugins/other/list/", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, `{"count": 1}`, true)
	})
	release := make(chan struct{})
	t.Cleanup(func() {
		select {
		case <-release:
		default:
			close(release)
		}
	})
	dripping := make(chan struct{}, slow)
	f.handle(searchPath, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		io.WriteString(w, "{")
		w.(http.Flusher).Flush()
		dripping <- struct{}{}
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-release:
				io.WriteString(w, `"count": 1}`)
				return
			case <-r.Context().Done():
				return
			case <-tick.C:
				io.WriteString(w, " ")
				w.(http.Flusher).Flush()
			}
		}
	})
	srv := httpBridge(t, f, false, "", io.Discard)
	a := httpSession(t, srv.URL, "Bearer nbt_alice.s1", protocolVersions[0])
	var done atomic.Int32
	results := make(chan *mcp.CallToolResult, slow)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for range slow {
		go func() {
			res, err := a.CallTool(ctx, &mcp.CallToolParams{Name: "plugin_call_tool", Arguments: map[string]any{"plugin": "inv", "tool": "search"}})
			done.Add(1)
			if err != nil {
				res = &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: err.Error()}}}
			}
			results <- res
		}()
	}
	for i := range slow {
		select {
		case <-dripping:
		case <-time.After(10 * time.Second):
			t.Fatalf("%d of caller A's %d slow reads reached NetBox within 10 s", i, slow)
		}
	}
	start := time.Now()
	b := httpSession(t, srv.URL, "Bearer nbt_bob.s2", protocolVersions[0])
	for range 3 { // the slow bodies have surely reached the bridge by the later calls
		if r := call(t, b, "plugin_list_tools", map[string]any{"plugin": "inv"}); r.isError {
			t.Errorf("caller B's plugin_list_tools while A's reads drip: %s", r.text)
		}
		if r := call(t, b, "plugin_call_tool", map[string]any{"plugin": "other", "tool": "list"}); r.isError || r.doc["status"] != 200.0 {
			t.Errorf("caller B's read of another plugin while A's reads drip: %s", r.text)
		}
	}
	elapsed := time.Since(start)
	if n := done.Load(); n != 0 {
		t.Errorf("%d of caller A's slow reads ended before caller B was answered; they drip until released", n)
	}
	// A liveness bound, not a performance claim: B did not wait for A.
	if elapsed > 5*time.Second {
		t.Errorf("caller B's session and six calls took %v while A's reads dripped", elapsed)
	}
	close(release)
	for range slow {
		select {
		case res := <-results:
			if res.IsError {
				t.Errorf("one of caller A's slow reads: %v", res.Content[0].(*mcp.TextContent).Text)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("caller A's reads did not end within 20 s of their bodies' end")
		}
	}
}

// ---- issue 19: the operator's stumbles ----

// binaryExit runs the release binary with args and env and returns its
// exit code and stderr; a binary that keeps running is killed after 10 s.
func binaryExit(t *testing.T, env []string, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, releaseBinary(t), args...)
	cmd.Env = append(env, "HOME="+t.TempDir())
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Errorf("%v: still running after 10 s", args)
	}
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatal(err)
	}
	return cmd.ProcessState.ExitCode(), stderr.String()
}

// TestServeBarePort: serve --http 18082 (a bare port) is a usage error whose
// line says how to write the address (issue 19).
func TestServeBarePort(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		env  []string
		name string
	}{
		{[]string{"serve", "--http", "18082"}, []string{"NETBOX_URL=https://netbox.example.com"}, "--http"},
		{[]string{"serve"}, []string{"NETBOX_URL=https://netbox.example.com", "NETBOX_MCP_HTTP=18082"}, "NETBOX_MCP_HTTP"},
	} {
		code, stderr := binaryExit(t, c.env, c.args...)
		if code != 2 || !strings.Contains(stderr, c.name) || !strings.Contains(stderr, ":18082") && !strings.Contains(stderr, "127.0.0.1:18082") {
			t.Errorf("%v %v: exit %d, %q; want exit 2 and :18082 or 127.0.0.1:18082, naming %s", c.args, c.env, code, stderr, c.name)
		}
		oneLine(t, stderr, "18082")
	}
}

// cliSession is the command line's serve run in-process on pipes, under a
// test environment, with an initialized MCP session on them.
type cliSession struct {
	*stdioSession
	stderr *syncBuffer
	code   chan int
}

func startCLISession(t *testing.T, vars map[string]string, args ...string) *cliSession {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	s := &cliSession{stdioSession: &stdioSession{t: t, in: inW, replies: make(chan map[string]any, 16)}, stderr: &syncBuffer{}, code: make(chan int, 1)}
	env := testEnv(t.TempDir(), vars)
	go func() {
		code := run(append([]string{"serve"}, args...), inR, outW, s.stderr, env)
		inR.CloseWithError(io.ErrClosedPipe) // a serve that ended takes no more lines
		outW.Close()
		s.code <- code
	}()
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
	t.Cleanup(func() { s.end() })
	s.send(initializeLine)
	if r := s.reply(); r["result"] == nil {
		t.Fatalf("serve %v: initialize: %v\n%s", args, r, s.stderr.String())
	}
	s.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return s
}

// end closes stdin and returns serve's exit code.
func (s *cliSession) end() int {
	s.in.Close()
	select {
	case code := <-s.code:
		s.code <- code
		return code
	case <-time.After(10 * time.Second):
		s.t.Fatal("serve did not end within 10 s of stdin's end")
		return -1
	}
}

// callTool calls a tool and returns its structured content and text.
func (s *cliSession) callTool(tool string, args map[string]any) (isError bool, doc map[string]any, text string) {
	s.t.Helper()
	raw, _ := json.Marshal(args)
	s.send(toolCall(7, tool, string(raw)))
	r := s.reply()
	res, _ := r["result"].(map[string]any)
	if res == nil {
		s.t.Fatalf("%s: %v", tool, r)
	}
	doc, _ = res["structuredContent"].(map[string]any)
	content, _ := res["content"].([]any)
	if len(content) == 1 {
		text, _ = content[0].(map[string]any)["text"].(string)
	}
	return res["isError"] == true, doc, text
}

func errorCode(doc map[string]any) string {
	e, _ := doc["error"].(map[string]any)
	code, _ := e["code"].(string)
	return code
}

// serveExit runs serve in-process with stdin already ended and returns its
// exit code and stderr.
func serveExit(t *testing.T, vars map[string]string, args ...string) (int, string) {
	t.Helper()
	var stdout, stderr strings.Builder
	code := run(append([]string{"serve"}, args...), strings.NewReader(""), &stdout, &stderr, testEnv(t.TempDir(), vars))
	if stdout.Len() != 0 {
		t.Errorf("serve %v wrote to stdout: %q", args, stdout.String())
	}
	return code, stderr.String()
}

// TestFlagVariables: issue 19, every flag a container sets works as an
// environment variable (SPEC §2: flags, then the environment); the command
// line wins over the variable, and an error in a variable's value names the
// variable. The HTTP ones (NETBOX_MCP_HTTP, NETBOX_MCP_TLS_*,
// NETBOX_MCP_TRUSTED_PROXIES, NETBOX_MCP_AUDIT_FILE, NETBOX_MCP_LOG_LEVEL)
// are also served in TestHealthcheck, TestHTTPTrustedProxies, TestAuditFile
// and TestLogLevel.
func TestFlagVariables(t *testing.T) {
	t.Parallel()
	f := newInvNetBox(t)
	f.setToken("")
	serveBranches(f, map[string]string{"review": "ready", "other": "ready"})
	netbox := map[string]string{"NETBOX_URL": f.URL, "NETBOX_TOKEN": fakeToken}
	with := func(kv ...string) map[string]string {
		vars := map[string]string{}
		for k, v := range netbox {
			vars[k] = v
		}
		for i := 0; i+1 < len(kv); i += 2 {
			vars[kv[i]] = kv[i+1]
		}
		return vars
	}
	dir := t.TempDir()

	// A bad value in a variable: exit 2, one line naming the variable.
	for _, c := range []struct{ variable, value string }{
		{"NETBOX_MCP_LOG_FORMAT", "xml"},
		{"NETBOX_MCP_LOG_LEVEL", "bogus"},
		{"NETBOX_MCP_NO_CALL_TOKEN", "maybe"},
		{"NETBOX_MCP_BRANCH_ONLY", "maybe"},
		{"NETBOX_MCP_AUDIT_FILE", filepath.Join(dir, "no", "such", "dir", "audit.log")},
	} {
		code, stderr := serveExit(t, with(c.variable, c.value))
		if code != 2 || !strings.Contains(stderr, c.variable) {
			t.Errorf("%s=%s: exit %d, %q; want exit 2 naming %s", c.variable, c.value, code, stderr, c.variable)
		}
	}
	for _, c := range []struct {
		env  []string
		name string
	}{ // a serve --http that does start would not end: the release binary, killed if need be
		{[]string{"NETBOX_MCP_HTTP=" + freeAddr(t), "NETBOX_MCP_TRUSTED_PROXIES=bogus"}, "NETBOX_MCP_TRUSTED_PROXIES"},
		{[]string{"NETBOX_MCP_HTTP=" + freeAddr(t), "NETBOX_MCP_TLS_CERT=" + filepath.Join(dir, "none.pem"), "NETBOX_MCP_TLS_KEY=" + filepath.Join(dir, "none.key")}, "NETBOX_MCP_TLS_CERT"},
	} {
		code, stderr := binaryExit(t, append(c.env, "NETBOX_URL="+f.URL), "serve")
		if code != 2 || !strings.Contains(stderr, c.name) {
			t.Errorf("%v: exit %d, %q; want exit 2 naming %s", c.env, code, stderr, c.name)
		}
	}
	// The command line wins over a bad variable.
	for _, c := range []struct {
		variable, value, flag string
	}{
		{"NETBOX_MCP_LOG_FORMAT", "xml", "--log-format=text"},
		{"NETBOX_MCP_LOG_LEVEL", "bogus", "--log-level=info"},
		{"NETBOX_MCP_NO_CALL_TOKEN", "maybe", "--no-call-token=false"},
		{"NETBOX_MCP_BRANCH_ONLY", "maybe", "--branch-only=false"},
		{"NETBOX_MCP_AUDIT_FILE", filepath.Join(dir, "no", "such", "dir", "audit.log"), "--audit-file=" + filepath.Join(dir, "audit.log")},
	} {
		if code, stderr := serveExit(t, with(c.variable, c.value), c.flag); code != 0 {
			t.Errorf("%s=%s with %s: exit %d, %q; want the flag to win", c.variable, c.value, c.flag, code, stderr)
		}
	}

	// The log format and level.
	_, stderr := serveExit(t, with("NETBOX_MCP_LOG_FORMAT", "json"))
	jsonRecords(t, stderr) // every line is JSON
	if _, stderr := serveExit(t, with("NETBOX_MCP_LOG_FORMAT", "json"), "--log-format", "text"); !strings.Contains(stderr, "level=INFO") {
		t.Errorf("NETBOX_MCP_LOG_FORMAT=json with --log-format text: %q, want text records", stderr)
	}
	if _, stderr := serveExit(t, with("NETBOX_MCP_LOG_LEVEL", "warn")); strings.Contains(stderr, "level=INFO") {
		t.Errorf("NETBOX_MCP_LOG_LEVEL=warn: %q, want no info record", stderr)
	}
	if _, stderr := serveExit(t, with("NETBOX_MCP_LOG_LEVEL", "warn"), "--log-level", "info"); !strings.Contains(stderr, "level=INFO") {
		t.Errorf("NETBOX_MCP_LOG_LEVEL=warn with --log-level info: %q, want the info record of the end of stdin", stderr)
	}

	// The confirmation mode: this client cannot ask a human.
	create := map[string]any{"plugin": "inv", "tool": "create", "arguments": map[string]any{"name": "x"}}
	s := startCLISession(t, with("NETBOX_MCP_ALLOW_MUTATIONS", "1", "NETBOX_MCP_CONFIRM", "writes"))
	if _, doc, text := s.callTool("plugin_call_tool", create); errorCode(doc) != "not_confirmed" {
		t.Errorf("NETBOX_MCP_CONFIRM=writes: a write answered %q, want not_confirmed", text)
	}
	s = startCLISession(t, with("NETBOX_MCP_ALLOW_MUTATIONS", "1", "NETBOX_MCP_CONFIRM", "writes"), "--confirm", "off")
	if isError, _, text := s.callTool("plugin_call_tool", create); isError {
		t.Errorf("NETBOX_MCP_CONFIRM=writes with --confirm off: %q, want the write sent", text)
	}
	s = startCLISession(t, with("NETBOX_MCP_ALLOW_MUTATIONS", "1", "NETBOX_MCP_CONFIRM", "bogus"))
	if _, doc, text := s.callTool("plugin_call_tool", create); errorCode(doc) != "config_error" || !strings.Contains(text, "NETBOX_MCP_CONFIRM") {
		t.Errorf("NETBOX_MCP_CONFIRM=bogus: %q, want config_error naming NETBOX_MCP_CONFIRM", text)
	}

	// The branch, and writes only into a branch.
	search := map[string]any{"plugin": "inv", "tool": "search", "dry_run": true}
	s = startCLISession(t, with("NETBOX_BRANCH", "review"))
	if _, doc, text := s.callTool("plugin_call_tool", search); doc["branch"] != "review" {
		t.Errorf("NETBOX_BRANCH=review: the dry run %q, want it in branch review", text)
	}
	s = startCLISession(t, with("NETBOX_BRANCH", "review"), "--branch", "other")
	if _, doc, text := s.callTool("plugin_call_tool", search); doc["branch"] != "other" {
		t.Errorf("NETBOX_BRANCH=review with --branch other: the dry run %q, want it in branch other", text)
	}
	s = startCLISession(t, with("NETBOX_MCP_ALLOW_MUTATIONS", "1", "NETBOX_MCP_BRANCH_ONLY", "1"))
	if _, doc, text := s.callTool("plugin_call_tool", create); errorCode(doc) != "branch_required" {
		t.Errorf("NETBOX_MCP_BRANCH_ONLY=1: a write answered %q, want branch_required", text)
	}
	s = startCLISession(t, with("NETBOX_MCP_ALLOW_MUTATIONS", "1", "NETBOX_MCP_BRANCH_ONLY", "1"), "--branch-only=false")
	if isError, _, text := s.callTool("plugin_call_tool", create); isError {
		t.Errorf("NETBOX_MCP_BRANCH_ONLY=1 with --branch-only=false: %q, want the write sent", text)
	}
}

// TestNoCallToken: issue 19, --no-call-token (or NETBOX_MCP_NO_CALL_TOKEN=1)
// refuses a per-call token with invalid_request and sends nothing to
// NetBox; without it a per-call token is what NetBox sees. The token
// property tells a model it is for a token the user gave for this call.
func TestNoCallToken(t *testing.T) {
	t.Parallel()
	f := newInvNetBox(t)
	f.setToken("")
	netbox := map[string]string{"NETBOX_URL": f.URL, "NETBOX_TOKEN": fakeToken}
	withVar := map[string]string{"NETBOX_URL": f.URL, "NETBOX_TOKEN": fakeToken, "NETBOX_MCP_NO_CALL_TOKEN": "1"}
	const perCall = "nbt_callkey." + secret
	calls := []struct {
		tool string
		args map[string]any
	}{
		{"plugin_call_tool", map[string]any{"plugin": "inv", "tool": "search", "token": perCall}},
		{"plugin_list_tools", map[string]any{"plugin": "inv", "token": perCall}},
		{"plugin_list_tools", map[string]any{"token": perCall}},
	}
	for _, c := range []struct {
		name    string
		vars    map[string]string
		args    []string
		refused bool
	}{
		{"--no-call-token", netbox, []string{"--no-call-token"}, true},
		{"NETBOX_MCP_NO_CALL_TOKEN=1", withVar, nil, true},
		{"NETBOX_MCP_NO_CALL_TOKEN=1 with --no-call-token=false", withVar, []string{"--no-call-token=false"}, false},
		{"neither", netbox, nil, false},
	} {
		s := startCLISession(t, c.vars, c.args...)
		for _, call := range calls {
			before := f.totalRequests()
			isError, doc, text := s.callTool(call.tool, call.args)
			sent := f.requestLog()[before:]
			if c.refused {
				e, _ := doc["error"].(map[string]any)
				if errorCode(doc) != "invalid_request" || e["dispatched"] != false || len(sent) != 0 {
					t.Errorf("%s: %s %v: %q, %d NetBox requests; want invalid_request and nothing sent", c.name, call.tool, call.args, text, len(sent))
				}
				continue
			}
			if isError || len(sent) == 0 {
				t.Errorf("%s: %s with a per-call token: %q", c.name, call.tool, text)
			}
			for _, r := range sent {
				if got := r.header.Get("Authorization"); got != "Bearer "+perCall {
					t.Errorf("%s: %s %s carried %q, want the per-call token", c.name, r.method, r.path, clip(got, 20))
				}
			}
		}
		s.end()
	}
	// The description of token, as a model reads it in tools/list.
	s := startCLISession(t, netbox)
	s.send(`{"jsonrpc":"2.0","id":3,"method":"tools/list"}`)
	res, _ := s.reply()["result"].(map[string]any)
	tools, _ := res["tools"].([]any)
	if len(tools) != 2 {
		t.Fatalf("tools/list: %v", res)
	}
	for _, tool := range tools {
		tool, _ := tool.(map[string]any)
		schema, _ := tool["inputSchema"].(map[string]any)
		props, _ := schema["properties"].(map[string]any)
		token, _ := props["token"].(map[string]any)
		if d, _ := token["description"].(string); !strings.Contains(d, "the user gave for this call") {
			t.Errorf("%s: the token description %q does not say it is for a token the user gave for this call", tool["name"], d)
		}
	}
}

// TestBadPluginSlugIsUsage: issue 19, scan --plugin and check --plugin with
// something that is not a slug are usage errors, exit 2, not problems
// (exit 1), against a NetBox that answers.
func TestBadPluginSlugIsUsage(t *testing.T) {
	t.Parallel()
	f := newInvNetBox(t)
	vars := map[string]string{"NETBOX_URL": f.URL, "NETBOX_TOKEN": fakeToken}
	for _, args := range [][]string{{"scan", "--plugin", "Bad_Slug"}, {"scan", "--plugin", "Bad_Slug", "--json"}, {"check", "--plugin", "Bad_Slug"}} {
		var stdout, stderr strings.Builder
		code := run(args, strings.NewReader(""), &stdout, &stderr, testEnv(t.TempDir(), vars))
		if code != 2 || !strings.Contains(stderr.String(), "Bad_Slug") {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 naming the slug", args, code, stderr.String())
		}
	}
}

// testTLSFiles writes a certificate for 127.0.0.1 and its key, and returns
// their paths and a client that trusts the certificate.
func testTLSFiles(t *testing.T) (certFile, keyFile string, client *http.Client) {
	t.Helper()
	cert := testCertificate(t)
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	keyDER, _ := x509.MarshalPKCS8PrivateKey(cert.PrivateKey)
	os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Certificate[0]}), 0o600)
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600)
	pool := x509.NewCertPool()
	leaf, _ := x509.ParseCertificate(cert.Certificate[0])
	pool.AddCert(leaf)
	return certFile, keyFile, &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
}

// TestHealthcheck: issue 19, healthcheck exits 0 against a ready serve
// --http (plain, and HTTPS with --tls-cert and --tls-key), 1 against one
// that is not ready (no NETBOX_URL) or when nothing listens; it reads the
// address from --http or NETBOX_MCP_HTTP. The servers take their address
// and TLS files from the variables, and a flag wins over a bad variable.
func TestHealthcheck(t *testing.T) {
	t.Parallel()
	f := newInvNetBox(t)
	certFile, keyFile, tlsClient := testTLSFiles(t)
	plain, secure, notReady := freeAddr(t), freeAddr(t), freeAddr(t)
	startServeAt(t, []string{"NETBOX_URL=" + f.URL, "NETBOX_MCP_HTTP=" + plain}, plain, http.DefaultClient, "http")
	startServeAt(t, []string{"NETBOX_URL=" + f.URL, "NETBOX_MCP_HTTP=" + secure, "NETBOX_MCP_TLS_CERT=" + certFile, "NETBOX_MCP_TLS_KEY=" + keyFile},
		secure, tlsClient, "https")
	startServeAt(t, []string{"NETBOX_MCP_HTTP=18082"}, notReady, http.DefaultClient, "http", "--http", notReady)
	_, plainPort, _ := net.SplitHostPort(plain)
	for _, c := range []struct {
		args []string
		vars map[string]string
		code int
	}{
		{[]string{"--http", plain}, nil, 0},
		{nil, map[string]string{"NETBOX_MCP_HTTP": plain}, 0},
		{nil, map[string]string{"NETBOX_MCP_HTTP": ":" + plainPort}, 0},
		{[]string{"--http", plain}, map[string]string{"NETBOX_MCP_HTTP": freeAddr(t)}, 0},
		{[]string{"--http", secure, "--tls-cert", certFile, "--tls-key", keyFile}, nil, 0},
		{nil, map[string]string{"NETBOX_MCP_HTTP": secure, "NETBOX_MCP_TLS_CERT": certFile, "NETBOX_MCP_TLS_KEY": keyFile}, 0},
		{[]string{"--http", notReady}, nil, 1},
		{[]string{"--http", freeAddr(t)}, nil, 1},
	} {
		var stdout, stderr strings.Builder
		if code := run(append([]string{"healthcheck"}, c.args...), strings.NewReader(""), &stdout, &stderr, testEnv(t.TempDir(), c.vars)); code != c.code {
			t.Errorf("healthcheck %v %v: exit %d (%q %q), want %d", c.args, c.vars, code, stdout.String(), stderr.String(), c.code)
		}
	}
}

// TestLogLevel: issue 19, --log-level warn hides the info records (the
// access log among them), but every write decision is still logged;
// --log-level bogus is a usage error (exit 2).
func TestLogLevel(t *testing.T) {
	t.Parallel()
	f := newInvNetBox(t)
	f.setToken("")
	addr := freeAddr(t)
	cmd, stderr := startHTTPServe(t, []string{"NETBOX_URL=" + f.URL, "NETBOX_MCP_ALLOW_MUTATIONS=1"}, addr, http.DefaultClient, "http",
		"--log-level", "warn", "--log-format", "json")
	resp := postMCP(t, "http://"+addr, http.Header{"Authorization": {"Bearer nbt_k1.s1"}}, `{"jsonrpc":"2.0","id":1,"method":"tools/call",`+
		`"params":{"name":"plugin_call_tool","arguments":{"plugin":"inv","tool":"create","arguments":{"name":"x"}}}}`)
	if body, _ := io.ReadAll(resp.Body); !strings.Contains(string(body), `\"status\":201`) {
		t.Fatalf("the write: %d %s", resp.StatusCode, body)
	}
	stopServe(t, cmd)
	writes := 0
	for _, rec := range jsonRecords(t, stderr.String()) {
		switch {
		case rec["msg"] == "write":
			writes++
		case rec["level"] == "INFO" || rec["level"] == "DEBUG":
			t.Errorf("--log-level warn logged %v", rec)
		}
	}
	if writes != 2 { // dispatching, then dispatched (SPEC §13)
		t.Errorf("--log-level warn: %d audit records of a write, want 2:\n%s", writes, stderr.String())
	}
	if code, stderr := serveExit(t, nil, "--log-level", "bogus"); code != 2 || !strings.Contains(stderr, "--log-level") {
		t.Errorf("--log-level bogus: exit %d, %q; want exit 2 naming --log-level", code, stderr)
	}
}

// TestAuditFile: issue 19, --audit-file FILE (or NETBOX_MCP_AUDIT_FILE)
// appends one JSON line per write decision to FILE, created 0600 and never
// truncated; each line tells itself apart from an access record (kind
// "audit" against "access"), and the access log never goes there.
func TestAuditFile(t *testing.T) {
	t.Parallel()
	f := newInvNetBox(t)
	f.setToken("")
	file := filepath.Join(t.TempDir(), "audit.jsonl")
	h := http.Header{"Authorization": {"Bearer nbt_k1.s1"}}
	callLine := func(tool string, args string, dryRun bool) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"plugin_call_tool","arguments":{"plugin":"inv","tool":%q,"arguments":%s,"dry_run":%t}}}`,
			tool, args, dryRun)
	}
	var first []byte
	for run, c := range []struct {
		env    []string
		args   []string
		calls  []string
		audits int // audit records of the calls: a dispatched write has two
		lines  int // in the file after this run
	}{ // a write, its dry run and a read; then a write refused
		{[]string{"NETBOX_URL=" + f.URL, "NETBOX_MCP_ALLOW_MUTATIONS=1"}, []string{"--audit-file", file},
			[]string{callLine("create", `{"name":"x"}`, false), callLine("create", `{"name":"y"}`, true), callLine("search", `{}`, false)}, 3, 3},
		{[]string{"NETBOX_URL=" + f.URL, "NETBOX_MCP_AUDIT_FILE=" + file}, nil, []string{callLine("purge", `{}`, false)}, 1, 4},
	} {
		addr := freeAddr(t)
		cmd, stderr := startHTTPServe(t, c.env, addr, http.DefaultClient, "http", append(c.args, "--log-format", "json")...)
		for _, line := range c.calls {
			resp := postMCP(t, "http://"+addr, h, line)
			io.ReadAll(resp.Body)
		}
		getText(t, http.DefaultClient, "http://"+addr+"/healthz")
		stopServe(t, cmd)
		info, err := os.Stat(file)
		if err != nil {
			t.Fatal(err)
		}
		if info.Mode().Perm() != 0o600 {
			t.Errorf("run %d: the audit file's mode is %v, want 0600", run, info.Mode().Perm())
		}
		data, _ := os.ReadFile(file)
		recs := jsonRecords(t, string(data))
		if len(recs) != c.lines {
			t.Errorf("run %d: %d lines in the audit file, want %d:\n%s", run, len(recs), c.lines, data)
		}
		for _, rec := range recs {
			if rec["kind"] != "audit" || rec["msg"] != "write" {
				t.Errorf("run %d: the audit file holds %v; want only write decisions, kind audit", run, rec)
			}
		}
		if run == 0 {
			first = data
		} else if !strings.HasPrefix(string(data), string(first)) {
			t.Errorf("the second run did not append to the audit file:\n%s\nthen\n%s", first, data)
		}
		// The access records, on stderr, say kind access; the audit's there
		// too, kind audit.
		kinds := map[any]int{}
		for _, rec := range jsonRecords(t, stderr.String()) {
			if rec["msg"] == "http" || rec["msg"] == "write" {
				kinds[rec["msg"].(string)+"/"+fmt.Sprint(rec["kind"])]++
			}
		}
		if kinds["http/access"] < len(c.calls)+1 || kinds["write/audit"] != c.audits || len(kinds) != 2 {
			t.Errorf("run %d: stderr records by msg/kind %v", run, kinds)
		}
	}
}

// TestAuditWrittenAhead: SPEC §13, a write's dispatching record is on
// stderr and in the audit file, synced, before the write leaves; when either
// cannot be written (a stderr pipe whose reader is gone, a full disk) the
// write is refused audit_failed, nothing reaches NetBox, and the bridge
// lives on to answer (issue 28: SIGPIPE once killed it after the POST).
// SIGHUP reopens the audit file after a rotation renamed it, and changes
// nothing else (SPEC §2).
func TestAuditWrittenAhead(t *testing.T) {
	t.Parallel()
	f := newInvNetBox(t)
	f.setToken("")
	env := []string{"NETBOX_URL=" + f.URL, "NETBOX_MCP_ALLOW_MUTATIONS=1"}
	write := func(id int) string {
		return toolCall(id, "plugin_call_tool", `{"plugin":"inv","tool":"create","arguments":{"name":"x"}}`)
	}
	refused := func(p *serveProcess, id int, why string) {
		t.Helper()
		p.send(write(id))
		if line := p.reply(); !bytes.Contains(line, []byte(`"code":"audit_failed"`)) || !bytes.Contains(line, []byte(`"dispatched":false`)) {
			t.Errorf("%s: the write answered %s, want audit_failed, not dispatched", why, clip(string(line), 400))
		}
		if n := f.requests(recordsPath); n != 0 {
			t.Errorf("%s: %d writes reached NetBox", why, n)
		}
	}

	// stderr is a pipe whose reader is gone.
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	p := startServeTo(t, env, w)
	w.Close()
	refused(p, 1, "stderr closed")
	p.send(toolCall(2, "plugin_call_tool", `{"plugin":"inv","tool":"search","arguments":{}}`))
	if line := p.reply(); !bytes.Contains(line, []byte(`"status":200`)) {
		t.Errorf("stderr closed: a read after the refused write answered %s", clip(string(line), 300))
	}
	p.in.Close()
	if err := p.cmd.Wait(); err != nil {
		t.Errorf("stderr closed: serve exited with %v", err)
	}

	// The audit file is on a full disk: refused, and said once on stderr.
	if _, err := os.Stat("/dev/full"); err == nil {
		var stderr syncBuffer
		p = startServeTo(t, env, &stderr, "--audit-file", "/dev/full", "--log-format", "json")
		refused(p, 1, "--audit-file /dev/full")
		refused(p, 2, "--audit-file /dev/full, again")
		p.in.Close()
		p.cmd.Wait()
		if n := strings.Count(stderr.String(), "the audit file cannot be written"); n != 1 {
			t.Errorf("--audit-file /dev/full: stderr says %d times that the audit file cannot be written, want once:\n%s", n, stderr.String())
		}
	}

	// Written ahead: when the write reaches NetBox, the file already ends
	// with its dispatching record. Then a rotation and SIGHUP.
	file := filepath.Join(t.TempDir(), "audit.jsonl")
	var last []string // the file's last decision when each write arrived
	var mu sync.Mutex
	f.handle(recordsPath, func(w http.ResponseWriter, r *http.Request) {
		data, _ := os.ReadFile(file)
		recs := jsonRecords(t, string(data))
		mu.Lock()
		last = append(last, fmt.Sprint(recs[len(recs)-1]["decision"]))
		mu.Unlock()
		writeJSON(w, http.StatusCreated, `{"id": 7}`, false)
	})
	var stderr syncBuffer
	p = startServeTo(t, env, &stderr, "--audit-file", file, "--log-format", "json")
	p.send(write(1))
	p.reply()
	if err := os.Rename(file, file+".1"); err != nil {
		t.Fatal(err)
	}
	p.cmd.Process.Signal(syscall.SIGHUP)
	for deadline := time.Now().Add(5 * time.Second); !strings.Contains(stderr.String(), "reopened") && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	p.send(write(2))
	if line := p.reply(); !bytes.Contains(line, []byte(`"status":201`)) {
		t.Errorf("a write after SIGHUP answered %s", clip(string(line), 300))
	}
	p.in.Close()
	if err := p.cmd.Wait(); err != nil {
		t.Errorf("serve after SIGHUP exited with %v", err)
	}
	for _, name := range []string{file + ".1", file} {
		data, _ := os.ReadFile(name)
		var decisions []any
		for _, rec := range jsonRecords(t, string(data)) {
			decisions = append(decisions, rec["decision"])
		}
		if !slices.Equal(decisions, []any{"dispatching", "dispatched"}) {
			t.Errorf("%s holds the decisions %v, want one write's dispatching and dispatched", filepath.Base(name), decisions)
		}
	}
	if !slices.Equal(last, []string{"dispatching", "dispatching"}) {
		t.Errorf("when each write reached NetBox, the audit file ended with %v; want its dispatching record", last)
	}
}

// sourceOrder is the design card's layering, lowest first: a file uses only
// names defined in itself or in a file before it.
var sourceOrder = []string{"rfc3339.go", "schema.go", "manifest.go", "transport.go", "discover.go", "tools.go", "main.go"}

// parseSources parses the non-test source files in sourceOrder.
func parseSources(t *testing.T) (*token.FileSet, []*ast.File) {
	t.Helper()
	fset := token.NewFileSet()
	var files []*ast.File
	for _, name := range sourceOrder {
		f, err := parser.ParseFile(fset, name, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	if others, _ := filepath.Glob("*.go"); len(others) != len(sourceOrder)+countTests(others) {
		t.Fatalf("the package has source files outside the design card's seven: %v", others)
	}
	return fset, files
}

func countTests(names []string) int {
	n := 0
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			n++
		}
	}
	return n
}

// TestLayers: no file uses a package-level name defined in a file after it
// in sourceOrder (the design card), so the code reads bottom-up, file by file.
func TestLayers(t *testing.T) {
	t.Parallel()
	_, files := parseSources(t)
	definedIn := map[string]int{}
	for i, f := range files {
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil {
					definedIn[d.Name.Name] = i
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						definedIn[s.Name.Name] = i
					case *ast.ValueSpec:
						for _, n := range s.Names {
							definedIn[n.Name] = i
						}
					}
				}
			}
		}
	}
	uses := 0
	for i, f := range files {
		// Names the parser cannot resolve that are not package-level uses:
		// selected fields and methods, composite-literal keys, method names.
		notUses := map[*ast.Ident]bool{f.Name: true}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.SelectorExpr:
				notUses[n.Sel] = true
			case *ast.KeyValueExpr:
				if key, ok := n.Key.(*ast.Ident); ok {
					notUses[key] = true
				}
			case *ast.FuncDecl:
				notUses[n.Name] = true
			}
			return true
		})
		ast.Inspect(f, func(n ast.Node) bool {
			ident, ok := n.(*ast.Ident)
			// The parser's own resolution: an identifier it leaves unresolved
			// names a package-level declaration or a builtin.
			if !ok || ident.Obj != nil || notUses[ident] {
				return true
			}
			j, ok := definedIn[ident.Name]
			if !ok || j == i {
				return true
			}
			uses++
			if j > i {
				t.Errorf("%s uses %s, defined in %s above it", sourceOrder[i], ident.Name, sourceOrder[j])
			}
			return true
		})
	}
	if uses == 0 {
		t.Fatal("no use across files found: the check sees nothing")
	}
	t.Logf("layers: %d uses across files, all downward", uses)
}

// TestAuditPath keeps the README's reading path true (issue 21): every row
// names a declaration of the file it says and a test that exists, the rows
// go in reading order (the files' layering, top to bottom within a file),
// and the stated total is within 10 % of the path's code lines.
func TestAuditPath(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "\n## Auditing\n")
	if !ok {
		t.Fatal(`the README has no "## Auditing" section`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	rows := regexp.MustCompile("(?m)^\\| *\\d+ *\\| *`([A-Za-z.]+)` *\\| *([a-z0-9]+\\.go) *\\|.*\\| *`(Test[A-Za-z0-9]+)`").FindAllStringSubmatch(section, -1)
	total := regexp.MustCompile(`The path is (\d+) code lines`).FindStringSubmatch(section)
	if len(rows) < 10 || total == nil {
		t.Fatalf("the Auditing section lists %d rows (want at least 10) and states a total: %v", len(rows), total != nil)
	}
	fset, files := parseSources(t)
	type place struct{ file, line, lines int }
	decls := map[string]place{}
	for i, f := range files {
		src, err := os.ReadFile(sourceOrder[i])
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			from, to := fset.Position(d.Pos()), fset.Position(d.End())
			decls[sourceOrder[i]+":"+declName(d)] = place{i, from.Line, codeLines(src[from.Offset:to.Offset])}
		}
	}
	tests := map[string]bool{}
	testFiles, _ := filepath.Glob("*_test.go")
	for _, name := range testFiles {
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range regexp.MustCompile(`(?m)^func (Test\w+)\(t \*testing\.T\)`).FindAllStringSubmatch(string(src), -1) {
			tests[m[1]] = true
		}
	}
	sum, last := 0, place{}
	for _, r := range rows {
		p, ok := decls[r[2]+":"+r[1]]
		if !ok {
			t.Errorf("the reading path names %s in %s, which does not define it", r[1], r[2])
			continue
		}
		if !tests[r[3]] {
			t.Errorf("the reading path proves %s by %s, which does not exist", r[1], r[3])
		}
		if p.file < last.file || p.file == last.file && p.line < last.line {
			t.Errorf("the reading path goes back: %s (%s:%d) after %s:%d", r[1], r[2], p.line, sourceOrder[last.file], last.line)
		}
		sum, last = sum+p.lines, p
	}
	stated, _ := strconv.Atoi(total[1])
	if diff := stated - sum; diff*10 > sum || -diff*10 > sum {
		t.Errorf("the README says the path is %d code lines; its %d declarations have %d", stated, len(rows), sum)
	}
	t.Logf("audit: %d declarations, %d code lines (README says %d)", len(rows), sum, stated)

	// Each row's test fails without the row's guard: e2e/mutants/run deletes
	// each guard as e2e/mutants/rows.txt says and runs the test (too slow
	// for here). Here the list is kept true: one entry for each row, naming
	// its test, and a snippet that still occurs exactly once in its file.
	mutants := map[string][]map[string]string{}
	for _, m := range readMutants(t) {
		mutants[m["file"]+":"+m["decl"]] = append(mutants[m["file"]+":"+m["decl"]], m)
	}
	for _, r := range rows {
		ms := mutants[r[2]+":"+r[1]]
		delete(mutants, r[2]+":"+r[1])
		if len(ms) != 1 {
			t.Errorf("e2e/mutants/rows.txt has %d entries for %s (%s), want one", len(ms), r[1], r[2])
			continue
		}
		src, _ := os.ReadFile(r[2])
		switch m := ms[0]; {
		case m["test"] != r[3]:
			t.Errorf("e2e/mutants/rows.txt proves %s by %s, the README by %s", r[1], m["test"], r[3])
		case m["find"] == m["into"]:
			t.Errorf("e2e/mutants/rows.txt: the mutant of %s changes nothing", r[1])
		case strings.Count(string(src), m["find"]) != 1:
			t.Errorf("e2e/mutants/rows.txt: the snippet of %s occurs %d times in %s, want once: %q", r[1], strings.Count(string(src), m["find"]), r[2], m["find"])
		}
	}
	for name := range mutants {
		t.Errorf("e2e/mutants/rows.txt has an entry for %s, which the Auditing table does not list", name)
	}
}

// readMutants reads the entries of e2e/mutants/rows.txt as e2e/mutants/run
// does: blocks of "key: value" lines (an Auditing row's decl, file and
// test, and the edit, find into, that deletes its guard), each ended by a
// blank line; # starts a comment.
func readMutants(t *testing.T) []map[string]string {
	t.Helper()
	data, err := os.ReadFile("e2e/mutants/rows.txt")
	if err != nil {
		t.Fatal(err)
	}
	var ms []map[string]string
	for block := range strings.SplitSeq(string(data), "\n\n") {
		m := map[string]string{}
		for line := range strings.Lines(block) {
			if line = strings.TrimSuffix(line, "\n"); line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			switch key, val, _ := strings.Cut(line, ": "); {
			case !slices.Contains([]string{"decl", "file", "test", "find", "into"}, key) || m[key] != "" || val == "":
				t.Errorf("e2e/mutants/rows.txt: %q is not one of decl, file, test, find and into, each once and not empty", line)
			default:
				m[key] = val
			}
		}
		switch {
		case len(m) == 0: // comments only
		case len(m) != 5:
			t.Errorf("e2e/mutants/rows.txt: the entry for %q lacks some of decl, file, test, find and into", m["decl"])
		default:
			ms = append(ms, m)
		}
	}
	return ms
}

// declName is how the README names a declaration: a function, a method as
// Type.Method, a type, or the first name of a var or const block.
func declName(d ast.Decl) string {
	switch d := d.(type) {
	case *ast.FuncDecl:
		if d.Recv == nil {
			return d.Name.Name
		}
		recv := d.Recv.List[0].Type
		if star, ok := recv.(*ast.StarExpr); ok {
			recv = star.X
		}
		if ident, ok := recv.(*ast.Ident); ok {
			return ident.Name + "." + d.Name.Name
		}
	case *ast.GenDecl:
		switch s := d.Specs[0].(type) {
		case *ast.TypeSpec:
			return s.Name.Name
		case *ast.ValueSpec:
			return s.Names[0].Name
		}
	}
	return ""
}

// codeLines counts the lines of src that are neither blank nor only a
// comment: the README's and the budget's measure.
func codeLines(src []byte) int {
	n := 0
	for _, line := range strings.Split(string(src), "\n") {
		line = strings.TrimSpace(line)
		if line != "" && !strings.HasPrefix(line, "//") {
			n++
		}
	}
	return n
}

// TestCodeBudget: the non-test source stays within its budget, blanks and
// comments excluded. The design card's is 5,200: 4,500 (issue 21), plus 60
// for the hardening of issue 28, 350 for the OpenAPI schema of issue 26, 80
// for issue 30, 150 for the release and metrics of issue 29 and 60 for the
// memo of issue 31. The source is over it, by what SPEC §17's converter,
// cross-check and draft took beyond their share (about 560 lines, not 350,
// with the fixes of the review that followed them) after two
// simplification passes over every file paid back what they could
// (README, "Auditing"): this limit holds it where it stands, and the next
// simplification lowers it.
func TestCodeBudget(t *testing.T) {
	t.Parallel()
	total := 0
	for _, name := range sourceOrder {
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		total += codeLines(src)
	}
	const budget = 5460
	if total > budget {
		t.Errorf("the non-test source is %d code lines, over the budget of %d", total, budget)
	}
	t.Logf("budget: %d code lines of %d", total, budget)
}

// ---- the OpenAPI schema: draft and the cross-check (SPEC §17) ----

// openapiFixture is a trimmed fragment of a real NetBox 4.7.3 OpenAPI
// document (testdata/openapi/SOURCE.txt).
const openapiFixture = "testdata/openapi/netbox-4.7.3.json"

// draftCLI runs draft on the fixture and decodes the manifest it prints.
func draftCLI(t *testing.T, plugin string, operations ...string) (code int, manifest map[string]any, stdout, stderr string) {
	t.Helper()
	args := []string{"draft", "--plugin", plugin, "--openapi", openapiFixture}
	for _, op := range operations {
		args = append(args, "--operation", op)
	}
	code, stdout, stderr = runCLI(t, args...)
	json.Unmarshal([]byte(stdout), &manifest)
	return code, manifest, stdout, stderr
}

// TestDraft: SPEC §17, draft lists the operations bridge v1 can express
// (fixed paths, JSON-object bodies), and drafts each into a manifest that
// passes the offline check against the same document unchanged; an
// operation v1 cannot express is refused with the reason, the others still
// drafted, exit 1.
func TestDraft(t *testing.T) {
	t.Parallel()
	for plugin, want := range map[string]string{
		"bridge-test": "GET mcp/\nGET tools/broken-count/\nDELETE tools/delete-widget/\nGET tools/get-widget/\nGET widgets/\nPOST widgets/\n",
		"proxbox":     "POST endpoints/proxmox/\nGET sync/schedule/\nPOST sync/schedule/\n",
		"bgp":         "POST session/\n",
	} {
		code, _, listed, _ := draftCLI(t, plugin)
		if code != 0 || listed != want {
			t.Errorf("draft --plugin %s lists (exit %d):\n%s\nwant:\n%s", plugin, code, listed, want)
		}
		var ops []string
		for line := range strings.Lines(listed) {
			ops = append(ops, strings.TrimSpace(line))
		}
		code, manifest, out, stderr := draftCLI(t, plugin, ops...)
		if code != 0 || len(manifest["tools"].([]any)) != len(ops) {
			t.Fatalf("draft of %s's %d operations: exit %d\n%s\n%s", plugin, len(ops), code, out, stderr)
		}
		file := filepath.Join(t.TempDir(), "manifest.json")
		os.WriteFile(file, []byte(out), 0o644)
		if code, out, _ := runCLI(t, "check", file, "--openapi", openapiFixture); code != 0 || !strings.Contains(out, "valid (manifest; each tool against NetBox's API schema)") {
			t.Errorf("the drafted manifest of %s does not pass check --openapi unchanged (exit %d):\n%s", plugin, code, out)
		}
	}
	// Refused with the reason; the others still drafted; exit 1.
	code, manifest, _, stderr := draftCLI(t, "bridge-test", "PUT widgets/", "GET widgets/{id}/", "GET nowhere/", "POST widgets/")
	if tools, _ := manifest["tools"].([]any); code != 1 || len(tools) != 1 {
		t.Errorf("two refused operations beside a good one: exit %d, %d tools drafted; want 1 and 1", code, len(tools))
	}
	for _, want := range []string{"PUT widgets/ is not drafted: its request body is not a JSON object", "GET widgets/{id}/ is not drafted: its path is templated",
		"GET nowhere/ is not drafted: NetBox's API schema has no GET /api/plugins/bridge-test/nowhere/"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr does not say %q:\n%s", want, stderr)
		}
	}
}

// TestDraftConversion: SPEC §17's sentences, on real drf-spectacular
// shapes: effect and annotations from the method, the name from the
// operationId, refs inlined, nullable as a type union, a bulk body as its
// object, a related object as its integer id (with null when nullable), a
// one-member allOf as its member with the wrapper's nullable and
// description, members of one scalar type as that type with the loosest
// bounds, boolean exclusive bounds as numbers, and each dropped keyword
// named on stderr.
func TestDraftConversion(t *testing.T) {
	t.Parallel()
	prop := func(tool map[string]any, path ...string) any {
		var v any = tool
		for _, k := range path {
			m, _ := v.(map[string]any)
			v = m[k]
		}
		return v
	}
	_, m, _, stderr := draftCLI(t, "bridge-test", "POST widgets/", "GET widgets/")
	create, list := m["tools"].([]any)[0].(map[string]any), m["tools"].([]any)[1].(map[string]any)
	for what, c := range map[string]struct{ got, want any }{
		"name":                 {create["name"], "widgets_create"},
		"effect":               {create["effect"], "write"},
		"annotations":          {create["annotations"], map[string]any{"readOnlyHint": false, "destructiveHint": false, "idempotentHint": false, "openWorldHint": false}},
		"read annotations":     {list["annotations"], map[string]any{"readOnlyHint": true, "destructiveHint": false, "idempotentHint": true, "openWorldHint": false}},
		"description":          {create["description"], "Post a list of widget objects."},
		"root":                 {[]any{prop(create, "inputSchema", "type"), prop(create, "inputSchema", "additionalProperties")}, []any{"object", false}},
		"bulk body as X":       {prop(create, "inputSchema", "required"), []any{"name"}},
		"nullable":             {prop(create, "inputSchema", "properties", "observed", "type"), []any{"string", "null"}},
		"ref inlined":          {prop(create, "inputSchema", "properties", "tags", "items", "properties", "name", "maxLength"), 100.0},
		"query array":          {prop(list, "inputSchema", "properties", "id", "items", "type"), "integer"},
		"answer ref inlined":   {prop(list, "outputSchema", "properties", "results", "items", "properties", "observed", "type"), []any{"string", "null"}},
		"int64 format dropped": {prop(create, "inputSchema", "properties", "serial", "format"), nil},
	} {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s: %v, want %v", what, c.got, c.want)
		}
	}
	if !strings.Contains(stderr, "POST widgets/: inputSchema.properties.tags.items.properties.slug.pattern dropped") {
		t.Errorf("stderr does not name a dropped pattern:\n%s", stderr)
	}
	_, m, _, _ = draftCLI(t, "bgp", "POST session/")
	session := m["tools"].([]any)[0].(map[string]any)
	_, m, _, _ = draftCLI(t, "proxbox", "POST sync/schedule/", "POST endpoints/proxmox/")
	schedule, endpoint := m["tools"].([]any)[0].(map[string]any), m["tools"].([]any)[1].(map[string]any)
	for what, c := range map[string]struct{ got, want any }{
		"related object, nullable": {prop(session, "inputSchema", "properties", "site"), map[string]any{"type": []any{"integer", "null"}}},
		"related object":           {prop(session, "inputSchema", "properties", "local_as"), map[string]any{"type": "integer"}},
		"one-member allOf":         {prop(schedule, "inputSchema", "properties", "recurrence", "description"), "Bridge-v1 recurrence with exactly one bounded unit/value member."},
		"the allOf's member":       {prop(schedule, "inputSchema", "properties", "recurrence", "properties", "minutes", "maximum"), 2147483647.0},
		"exclusive bounds":         {[]any{prop(endpoint, "inputSchema", "properties", "retry_backoff", "exclusiveMinimum"), prop(endpoint, "inputSchema", "properties", "retry_backoff", "exclusiveMaximum")}, []any{-1000.0, 1000.0}},
		"no inclusive bound left":  {prop(endpoint, "inputSchema", "properties", "retry_backoff", "maximum"), nil},
		"one scalar type, loosest": {prop(session, "outputSchema", "properties", "local_address", "properties", "dns_name"), map[string]any{"type": "string", "maxLength": 255.0, "description": "Hostname or FQDN (not case-sensitive)"}},
		"enum with null, nullable": {prop(schedule, "inputSchema", "properties", "interval_unit", "type"), []any{"string", "null"}},
	} {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s: %v, want %v", what, c.got, c.want)
		}
	}
}

// TestOpenAPICrossCheck: SPEC §17, check --openapi compares each tool with
// NetBox's operation at its path and method: the real manifests of the
// test plugin and of Proxbox pass; a copy with a planted drift fails at
// tools.<name>.openapi…, naming both sides, and --json carries the same
// problems, and the notes.
func TestOpenAPICrossCheck(t *testing.T) {
	t.Parallel()
	for _, file := range []string{"testdata/openapi/bridge-test-manifest.json", "testdata/proxbox/proxbox_bridge_v1.json"} {
		if code, out, _ := runCLI(t, "check", file, "--openapi", openapiFixture); code != 0 || !strings.Contains(out, "valid (manifest; each tool against NetBox's API schema)") {
			t.Errorf("%s against its serializers: exit %d\n%s", file, code, out)
		}
	}
	original, err := os.ReadFile("testdata/openapi/bridge-test-manifest.json")
	if err != nil {
		t.Fatal(err)
	}
	// A HEAD tool is compared with the GET operation, the only one NetBox lists.
	head := strings.Replace(string(original), `"method": "GET",
            "path": "widgets/"`, `"method": "HEAD",
            "path": "widgets/"`, 1)
	file := filepath.Join(t.TempDir(), "head.json")
	os.WriteFile(file, []byte(head), 0o644)
	if code, out, _ := runCLI(t, "check", file, "--openapi", openapiFixture); code != 0 || !strings.Contains(head, `"HEAD"`) {
		t.Errorf("a HEAD tool against NetBox's GET: exit %d\n%s", code, out)
	}
	for _, c := range []struct {
		drift, location, want string
		edit                  func(tools map[string]map[string]any)
	}{
		{"an extra property", "tools.create_widget.openapi.color", "the serializer takes no property", func(tools map[string]map[string]any) {
			tools["create_widget"]["inputSchema"].(map[string]any)["properties"].(map[string]any)["color"] = map[string]any{"type": "string"}
		}},
		{"a missing required property", "tools.create_widget.openapi.name", "the serializer requires it; the manifest does not", func(tools map[string]map[string]any) {
			delete(tools["create_widget"]["inputSchema"].(map[string]any), "required")
		}},
		{"a wrong type", "tools.create_widget.openapi.serial", "the manifest has type string; the serializer takes integer", func(tools map[string]map[string]any) {
			tools["create_widget"]["inputSchema"].(map[string]any)["properties"].(map[string]any)["serial"] = map[string]any{"type": "string"}
		}},
		{"a wrong method", "tools.get_widget.openapi", "NetBox's API schema has no POST /api/plugins/bridge-test/tools/get-widget/", func(tools map[string]map[string]any) {
			tools["get_widget"]["method"], tools["get_widget"]["effect"] = "POST", "write"
			tools["get_widget"]["annotations"] = map[string]any{"readOnlyHint": false, "destructiveHint": false, "idempotentHint": false, "openWorldHint": false}
		}},
		{"an answer the manifest refuses", "tools.list_widgets.openapi.response.results[].observed", "the manifest has type string; the serializer answers null or string",
			func(tools map[string]map[string]any) {
				results := tools["list_widgets"]["outputSchema"].(map[string]any)["properties"].(map[string]any)["results"].(map[string]any)
				results["items"].(map[string]any)["properties"].(map[string]any)["observed"] = map[string]any{"type": "string"}
			}},
	} {
		var doc map[string]any
		dec := json.NewDecoder(bytes.NewReader(original))
		dec.UseNumber() // 64-bit bounds stay exact
		dec.Decode(&doc)
		tools := map[string]map[string]any{}
		for _, tl := range doc["tools"].([]any) {
			tools[tl.(map[string]any)["name"].(string)] = tl.(map[string]any)
		}
		c.edit(tools)
		data, _ := json.Marshal(doc)
		file := filepath.Join(t.TempDir(), "drift.json")
		os.WriteFile(file, data, 0o644)
		code, out, _ := runCLI(t, "check", file, "--openapi", openapiFixture)
		if line := file + ": " + c.location + ": " + c.want; code != 1 || !strings.Contains(out, line) {
			t.Errorf("%s: exit %d, want 1 and the line %q:\n%s", c.drift, code, line, out)
		}
		var report struct {
			Valid           bool
			Problems, Notes []problem
		}
		_, out, _ = runCLI(t, "check", file, "--openapi", openapiFixture, "--json")
		if err := json.Unmarshal([]byte(out), &report); err != nil || report.Valid || !slices.ContainsFunc(report.Problems, func(p problem) bool {
			return p.Location == c.location && strings.Contains(p.Message, c.want)
		}) || len(report.Notes) == 0 {
			t.Errorf("%s: --json %v\n%s", c.drift, err, clip(out, 2000))
		}
	}
}

// TestOpenAPIBadInput: SPEC §17, a truncated or hostile document, a $ref
// loop, a $ref to nowhere or a schema nested beyond bounds is a clear error
// that says where, never a hang; an operation's many filter parameters are
// cut to the bounds, the lookup variants first, and stderr says how many.
func TestOpenAPIBadInput(t *testing.T) {
	t.Parallel()
	write := func(doc string) string {
		file := filepath.Join(t.TempDir(), "openapi.json")
		os.WriteFile(file, []byte(doc), 0o644)
		return file
	}
	fixture, err := os.ReadFile(openapiFixture)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, doc, want string }{
		{"truncated", string(fixture[:len(fixture)/2]), "invalid JSON at line"},
		{"nested 100 000 deep", strings.Repeat("[", 100000) + strings.Repeat("]", 100000), "nesting deeper than 64"},
		{"no paths", `{"openapi": "3.0.3", "paths": {}}`, "has no paths under /api/"},
		{"a duplicate key", `{"paths": {"/api/x/": {}}, "paths": {}}`, "duplicate key"},
	} {
		for _, args := range [][]string{{"check", "testdata/openapi/bridge-test-manifest.json"}, {"draft", "--plugin", "p"}} {
			code, _, stderr := runCLI(t, append(args, "--openapi", write(c.doc))...)
			if code != 2 || !strings.Contains(stderr, c.want) {
				t.Errorf("%s, %s: exit %d, %q; want exit 2 saying %q", c.name, args[0], code, stderr, c.want)
			}
		}
	}
	op := func(schema string) string {
		return `{"paths": {"/api/plugins/p/x/": {"post": {"operationId": "x", "requestBody": {"content": {"application/json": {"schema": ` + schema + `}}}}}},
		 "components": {"schemas": {"A": {"type": "object", "properties": {"b": {"$ref": "#/components/schemas/B"}}},
		   "B": {"type": "object", "properties": {"a": {"$ref": "#/components/schemas/A"}}}}}}`
	}
	// A schema 100 deep: nested, the strict decoder refuses the document,
	// saying where; through 100 $refs, the conversion refuses it.
	deep := strings.Repeat(`{"type": "object", "properties": {"n": `, 100) + `{"type": "string"}` + strings.Repeat("}}", 100)
	code, _, stderr := runCLI(t, "draft", "--plugin", "p", "--openapi", write(op(deep)), "--operation", "POST x/")
	if want := `paths["/api/plugins/p/x/"].post.requestBody.content["application/json"].schema.properties.n.properties.n`; code != 2 || !strings.Contains(stderr, want) {
		t.Errorf("a schema nested 100 deep: exit %d, %q; want exit 2 and where: %q", code, stderr, want)
	}
	var chain []string
	for i := range 100 {
		chain = append(chain, fmt.Sprintf(`"R%d": {"type": "object", "properties": {"n": {"$ref": "#/components/schemas/R%d"}}}`, i, i+1))
	}
	chained := `{"paths": {"/api/plugins/p/x/": {"post": {"requestBody": {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/R0"}}}}}}},
	  "components": {"schemas": {` + strings.Join(chain, ",") + `, "R100": {"type": "string"}}}}`
	code, _, stderr = runCLI(t, "draft", "--plugin", "p", "--openapi", write(chained), "--operation", "POST x/")
	if code != 1 || !strings.Contains(stderr, "is not drafted: inputSchema.properties.n.properties.n") || !strings.Contains(stderr, "nested deeper than 32 schemas") {
		t.Errorf("100 $refs deep: exit %d, %q", code, stderr)
	}
	for _, c := range []struct{ name, schema, want string }{
		{"a $ref loop", `{"$ref": "#/components/schemas/A"}`, "inputSchema.properties.b.properties.a: $ref loop A → B → A"},
		{"a $ref to nowhere", `{"type": "object", "properties": {"z": {"$ref": "#/components/schemas/Z"}}}`, `inputSchema.properties.z: $ref "#/components/schemas/Z" points to no schema`},
		{"a $ref outside the document", `{"$ref": "https://example.com/x.json"}`, `inputSchema: $ref "https://example.com/x.json" points to no schema`},
	} {
		code, _, stderr := runCLI(t, "draft", "--plugin", "p", "--openapi", write(op(c.schema)), "--operation", "POST x/")
		if code != 1 || !strings.Contains(stderr, "POST x/ is not drafted: "+c.want) {
			t.Errorf("%s: exit %d, %q; want exit 1 and %q", c.name, code, stderr, c.want)
		}
	}
	// 150 filters and 450 lookup variants: more than a schema's 2,048 values.
	var params []string
	for i := range 150 {
		for _, suffix := range []string{"", "__ic", "__n", "__isw"} {
			params = append(params, fmt.Sprintf(`{"in": "query", "name": "f%03d%s", "schema": {"type": "array", "items": {"type": "string"}}, "description": "Filter %d."}`, i, suffix, i))
		}
	}
	doc := `{"paths": {"/api/plugins/p/list/": {"get": {"operationId": "plugins_p_list_list", "parameters": [` + strings.Join(params, ",") + `]}}}}`
	code, stdout, stderr := runCLI(t, "draft", "--plugin", "p", "--openapi", write(doc), "--operation", "GET list/")
	var m struct {
		Tools []struct {
			InputSchema struct{ Properties map[string]any }
		}
	}
	json.Unmarshal([]byte(stdout), &m)
	if code != 0 || len(m.Tools) != 1 || len(m.Tools[0].InputSchema.Properties) != 150 || !strings.Contains(stderr, "450 of its 600 query parameters left out (lookups such as name__ic first)") {
		t.Fatalf("600 filter parameters: exit %d, %d kept\n%s", code, len(m.Tools[0].InputSchema.Properties), stderr)
	}
	for name := range m.Tools[0].InputSchema.Properties {
		if strings.Contains(name, "__") {
			t.Errorf("a lookup variant %s stayed while plain filters went", name)
		}
	}
}

// TestOperatorSettings: issue 30, SPEC §2 and §14. NETBOX_TOKEN_FILE is a
// private file of one line (NETBOX_TOKEN wins over it); NETBOX_MCP_DEMO=1
// is --demo; a NETBOX_MCP_* variable this version does not know is a
// warning naming the closest known one, never an error; --allowed-hosts
// lets a reverse proxy on this host keep the client's Host, and any other
// Host is still refused, naming the setting that would allow it.
func TestOperatorSettings(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	token := func(name, content string, mode os.FileMode) string {
		path := filepath.Join(dir, name)
		writeProfile(t, path, content, mode)
		return path
	}
	cfg, err := loadConfig(&options{}, testEnv(dir, map[string]string{"NETBOX_URL": "https://nb.example", "NETBOX_TOKEN_FILE": token("ok", "nbt_key1.s3cret\n", 0o600)}))
	if err != nil || cfg.auth != "Bearer nbt_key1.s3cret" || cfg.authFrom != "NETBOX_TOKEN_FILE" {
		t.Errorf("NETBOX_TOKEN_FILE: %v %+v", err, cfg)
	}
	cfg, _ = loadConfig(&options{}, testEnv(dir, map[string]string{"NETBOX_URL": "https://nb.example", "NETBOX_TOKEN_FILE": token("other", "nbt_key1.s3cret\n", 0o600),
		"NETBOX_TOKEN": "nbt_key2.s3cret"}))
	if cfg == nil || cfg.auth != "Bearer nbt_key2.s3cret" {
		t.Errorf("NETBOX_TOKEN beside NETBOX_TOKEN_FILE: %+v, want NETBOX_TOKEN's", cfg)
	}
	for _, c := range []struct{ name, content, want string }{
		{"loose", "nbt_key1.s3cret\n", filepath.Join(dir, "loose") + " may be read or written by other users (mode 0644); run: chmod 600 " + filepath.Join(dir, "loose")},
		{"lines", "nbt_key1.s3cret\nnbt_key2.s3cret\n", filepath.Join(dir, "lines") + " holds several lines; put the token alone on one line"},
		{"empty", "", filepath.Join(dir, "empty") + " is empty"},
	} {
		mode := os.FileMode(0o600)
		if c.name == "loose" {
			mode = 0o644
		}
		loadFails(t, &options{}, testEnv(dir, map[string]string{"NETBOX_URL": "https://nb.example", "NETBOX_TOKEN_FILE": token(c.name, c.content, mode)}), "NETBOX_TOKEN_FILE: "+c.want)
	}
	// NETBOX_MCP_DEMO=1, and a misspelt variable beside it.
	var stdout, stderr bytes.Buffer
	code := run([]string{"scan"}, strings.NewReader(""), &stdout, &stderr, testEnv(dir, map[string]string{"NETBOX_MCP_DEMO": "1", "NETBOX_MCP_ALLOW_MUTATION": "1"}))
	if code != 1 || !strings.Contains(stdout.String(), "example.run_report") {
		t.Errorf("NETBOX_MCP_DEMO=1 scan: exit %d\n%s%s", code, stdout.String(), stderr.String())
	}
	if want := "NETBOX_MCP_ALLOW_MUTATION is not a setting of this version and is ignored; the closest one is NETBOX_MCP_ALLOW_MUTATIONS"; !strings.Contains(stderr.String(), want) {
		t.Errorf("a misspelt NETBOX_MCP_ variable: stderr %q, want %q", stderr.String(), want)
	}
	// A proxy on this host that keeps the client's Host.
	f := newInvNetBox(t)
	var log syncBuffer
	b := newBridge(f, false)
	srv := httptest.NewServer(newFront(newMCPServer(b, slog.New(slog.DiscardHandler)), slog.New(slog.NewJSONHandler(&log, nil)), "mcp.example.com"))
	t.Cleanup(srv.Close)
	for host, want := range map[string]int{"mcp.example.com": http.StatusOK, "mcp.example.com:443": http.StatusOK, "evil.example": http.StatusForbidden} {
		resp := postMCP(t, srv.URL, http.Header{"Authorization": {"Bearer nbt_k1.s1"}, "Host": {host}}, `{"jsonrpc":"2.0","id":1,"method":"ping"}`)
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != want || want == http.StatusForbidden && !strings.Contains(string(body), "--allowed-hosts") {
			t.Errorf("Host %s with --allowed-hosts mcp.example.com: %d %q, want %d", host, resp.StatusCode, body, want)
		}
	}
	srv.Close()
	if !strings.Contains(log.String(), `Host \"evil.example\" refused`) || !strings.Contains(log.String(), "--allowed-hosts") {
		t.Errorf("the access log does not name the refused Host and the setting:\n%s", log.String())
	}
}

// TestMetrics: SPEC §18 and §2. serve --metrics ADDR serves Prometheus'
// text format at /metrics, which promtool accepts, after a full scan, a
// read, a refused write and a NetBox call that failed; its counters moved
// by exactly those calls, each NetBox request counted by kind and class,
// and --log-level debug logged each NetBox request once, never a token.
// An address in use is a start-up error that names it.
func TestMetrics(t *testing.T) {
	t.Parallel()
	f := newInvNetBox(t)
	f.setToken("")
	f.handle(searchPath, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("q") == "fail" {
			writeJSON(w, http.StatusInternalServerError, `{"detail": "boom"}`, false)
			return
		}
		writeJSON(w, http.StatusOK, `{"count": 2}`, false)
	})
	addr := freeAddr(t)
	var stderr syncBuffer
	p := startServeTo(t, []string{"NETBOX_URL=" + f.URL, "NETBOX_TOKEN=" + secretV2}, &stderr, "--metrics", addr, "--log-level", "debug", "--log-format", "json")
	for id, args := range []string{`{"plugin":"inv","tool":"search","arguments":{}}`, `{"plugin":"inv","tool":"create","arguments":{"name":"x"}}`,
		`{"plugin":"inv","tool":"search","arguments":{"q":"fail"}}`} {
		p.send(toolCall(id+1, "plugin_call_tool", args))
		p.reply()
	}
	p.send(toolCall(9, "plugin_list_tools", `{}`))
	p.reply()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	scrape, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	requests := map[string]int{}
	for _, r := range f.requestLog() {
		kind := "discovery"
		if r.path == searchPath || r.path == recordsPath {
			kind = "target"
		}
		requests[kind]++
	}
	want := map[string]int{
		`tool_calls_total{tool="plugin_call_tool",code="ok"}`: 1, `tool_calls_total{tool="plugin_call_tool",code="mutations_disabled"}`: 1,
		`tool_calls_total{tool="plugin_call_tool",code="http_error"}`: 1, `tool_calls_total{tool="plugin_list_tools",code="ok"}`: 1,
		`writes_total{outcome="refused"}`: 1, `netbox_requests_total{kind="discovery",class="2xx"}`: requests["discovery"],
		`netbox_requests_total{kind="target",class="2xx"}`: 1, `netbox_requests_total{kind="target",class="5xx"}`: 1,
		`netbox_request_seconds_count`: requests["discovery"] + requests["target"], `calls_in_flight`: 0,
	}
	for series, n := range want {
		if line := fmt.Sprintf("\nnetbox_plugin_bridge_%s %d\n", series, n); !strings.Contains(string(scrape), line) {
			t.Errorf("the scrape has no line %q:\n%s", strings.TrimSpace(line), scrape)
		}
	}
	if strings.Contains(string(scrape), "writes_total{outcome=\"sent\"}") || requests["target"] != 2 {
		t.Errorf("a write was counted as sent, or NetBox saw %d target requests, want 2", requests["target"])
	}
	promtool, err := exec.LookPath("promtool")
	switch {
	case err == nil:
		cmd := exec.Command(promtool, "check", "metrics")
		cmd.Stdin = bytes.NewReader(scrape)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("promtool check metrics: %v\n%s", err, out)
		}
	case os.Getenv("BRIDGE_E2E") == "1":
		t.Fatal("promtool is needed to check the metrics (Debian's prometheus package)")
	}
	p.in.Close()
	p.cmd.Wait()
	debug := 0
	for _, rec := range jsonRecords(t, stderr.String()) {
		if rec["msg"] == "netbox" && rec["level"] == "DEBUG" {
			debug++
		}
	}
	if _, tokenSecret, _ := strings.Cut(secretV2, "."); debug != requests["discovery"]+requests["target"] || strings.Contains(stderr.String(), tokenSecret) {
		t.Errorf("--log-level debug: %d records of NetBox requests, want %d, or a token:\n%s", debug, requests["discovery"]+requests["target"], stderr.String())
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if code, errOut := serveExit(t, map[string]string{"NETBOX_URL": f.URL}, "--metrics", ln.Addr().String()); code != 2 || !strings.Contains(errOut, "--metrics "+ln.Addr().String()) {
		t.Errorf("--metrics on an address in use: exit %d, %q", code, errOut)
	}
}

// TestOpenAPIBoundedWork: a hostile or huge OpenAPI document costs bounded
// work (SPEC §17: "refs inlined (bounded)"; the README's limits): $refs
// that fan out at every level stop at 16,384 schemas, a path item over
// 65,536 values is refused alone, and a list of 5,000 filters is trimmed by
// halving, keeping its required parameter, into a draft that passes check.
func TestOpenAPIBoundedWork(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, doc string) string {
		file := filepath.Join(dir, name)
		if err := os.WriteFile(file, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		return file
	}
	post := func(schema, extra string) string {
		return `{"paths": {"/api/plugins/p/x/": {"post": {"operationId": "x", ` + extra + `"requestBody": {"content": {"application/json": {"schema": ` + schema + `}}}}}}`
	}
	code, manifest, stderr := runCLI(t, "draft", "--plugin", "p", "--openapi", write("plain.json", post(`{"type": "object", "properties": {}}`, "")+"}"), "--operation", "POST x/")
	if code != 0 {
		t.Fatalf("a plain operation: exit %d, %s", code, stderr)
	}
	manifestFile := write("manifest.json", manifest)

	// Fourteen schemas of six properties, each a $ref to the next: no loop,
	// nothing deeper than 32, and 6^13 schemas inlined.
	var fan []string
	for i := range 14 {
		var props []string
		for j := range 6 {
			props = append(props, fmt.Sprintf(`"p%d": {"$ref": "#/components/schemas/C%d"}`, j, i+1))
		}
		fan = append(fan, fmt.Sprintf(`"C%d": {"type": "object", "properties": {%s}}`, i, strings.Join(props, ",")))
	}
	fanned := write("fan.json", post(`{"$ref": "#/components/schemas/C0"}`, "")+`, "components": {"schemas": {`+strings.Join(fan, ",")+`, "C14": {"type": "string"}}}}`)
	const inlined = "its $refs inline to more than 16384 schemas"
	if code, _, stderr := runCLI(t, "draft", "--plugin", "p", "--openapi", fanned, "--operation", "POST x/"); code != 1 || !strings.Contains(stderr, "POST x/ is not drafted: inputSchema") || !strings.Contains(stderr, inlined) {
		t.Errorf("draft of $refs that fan out: exit %d, %q; want exit 1 saying %q", code, stderr, inlined)
	}
	if code, stdout, _ := runCLI(t, "check", manifestFile, "--openapi", fanned); code != 0 || !strings.Contains(stdout, "note: the serializer could not be read") || !strings.Contains(stdout, inlined) {
		t.Errorf("check against $refs that fan out: exit %d, %q; want a note saying %q", code, stdout, inlined)
	}

	// One path item of 70,000 values, in a document within every bound.
	big := write("big.json", post(`{"type": "object"}`, `"x-big": [`+strings.Repeat("0,", 69999)+`0], `)+"}")
	if code, _, stderr := runCLI(t, "draft", "--plugin", "p", "--openapi", big, "--operation", "POST x/"); code != 1 || !strings.Contains(stderr, "65536") {
		t.Errorf("draft of a path item of 70,000 values: exit %d, %q; want exit 1 naming the 65,536 bound", code, stderr)
	}
	if code, stdout, _ := runCLI(t, "check", manifestFile, "--openapi", big); code != 0 || !strings.Contains(stdout, `NetBox's API schema of /api/plugins/p/x/ could not be read`) {
		t.Errorf("check against a path item of 70,000 values: exit %d, %q; want a note", code, stdout)
	}

	// 5,000 plain filters, the last one required.
	var params []string
	for i := range 5000 {
		params = append(params, fmt.Sprintf(`{"in": "query", "name": "f%04d", "required": %t, "schema": {"type": "string"}}`, i, i == 4999))
	}
	list := write("list.json", `{"paths": {"/api/plugins/p/list/": {"get": {"operationId": "plugins_p_list_list", "parameters": [`+strings.Join(params, ",")+`]}}}}`)
	code, drafted, stderr := runCLI(t, "draft", "--plugin", "p", "--openapi", list, "--operation", "GET list/")
	var m struct {
		Tools []struct {
			InputSchema struct {
				Properties map[string]any
				Required   []string
			}
		}
	}
	json.Unmarshal([]byte(drafted), &m)
	if code != 0 || len(m.Tools) != 1 || !slices.Equal(m.Tools[0].InputSchema.Required, []string{"f4999"}) || m.Tools[0].InputSchema.Properties["f4999"] == nil {
		t.Fatalf("5,000 filters, the last required: exit %d, %s\n%.300s", code, stderr, drafted)
	}
	kept := len(m.Tools[0].InputSchema.Properties)
	if want := fmt.Sprintf("%d of its 5000 query parameters left out", 5000-kept); !strings.Contains(stderr, want) {
		t.Errorf("5,000 filters: stderr %q, want %q", stderr, want)
	}
	for i := range kept - 1 { // the first ones, in order
		if m.Tools[0].InputSchema.Properties[fmt.Sprintf("f%04d", i)] == nil {
			t.Errorf("f%04d left out, though %d were kept", i, kept)
		}
	}
	if code, stdout, _ := runCLI(t, "check", write("drafted.json", drafted), "--openapi", list); code != 0 {
		t.Errorf("the draft of 5,000 filters fails check --openapi: exit %d\n%s", code, stdout)
	}
}

// TestCrossCheckBoundsAndAnswers: SPEC §17's reading of the serializer.
// One bound however written (a decimal's exclusive OpenAPI 3.0 bounds: a
// stricter manifest is a note); a oneOf of integers is one integer with the
// loosest bounds, and only [integer, object] is a related object; an answer
// the serializer allows and the manifest refuses (a tighter stated bound,
// additionalProperties false over its fields) is a problem.
func TestCrossCheckBoundsAndAnswers(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	doc := filepath.Join(dir, "openapi.json")
	os.WriteFile(doc, []byte(`{"paths": {"/api/plugins/p/a/": {"post": {"operationId": "a",
	  "requestBody": {"content": {"application/json": {"schema": {"type": "object", "properties": {
	    "d": {"type": "number", "minimum": -1000, "exclusiveMinimum": true, "maximum": 1000, "exclusiveMaximum": true},
	    "r": {"oneOf": [{"type": "integer", "minimum": 0, "maximum": 10}, {"type": "integer", "minimum": 100, "maximum": 200}]},
	    "u": {"oneOf": [{"type": "integer"}, {"type": "string"}]}}}}}},
	  "responses": {"201": {"content": {"application/json": {"schema": {"type": "object", "required": ["id"],
	    "properties": {"id": {"type": "integer"}, "name": {"type": "string", "maxLength": 200}}}}}}}}}}}`), 0o644)
	code, drafted, stderr := runCLI(t, "draft", "--plugin", "p", "--openapi", doc, "--operation", "POST a/")
	var m map[string]any
	if err := json.Unmarshal([]byte(drafted), &m); code != 0 || err != nil {
		t.Fatalf("draft: exit %d, %v, %s", code, err, stderr)
	}
	tool := m["tools"].([]any)[0].(map[string]any)
	props := tool["inputSchema"].(map[string]any)["properties"].(map[string]any)
	for name, want := range map[string]string{
		"d": `{"exclusiveMaximum":1000,"exclusiveMinimum":-1000,"type":"number"}`,
		"r": `{"maximum":200,"minimum":0,"type":"integer"}`, // the loosest of both
		"u": `{}`,                                           // integer or string: not a related object
	} {
		if got, _ := json.Marshal(props[name]); string(got) != want {
			t.Errorf("draft: %s is %s, want %s", name, got, want)
		}
	}
	if !strings.Contains(stderr, "inputSchema.properties.u.oneOf dropped") {
		t.Errorf("draft: stderr %q does not name the oneOf it dropped", stderr)
	}
	check := func(what string, edit func(in, out map[string]any), code int, want ...string) {
		t.Helper()
		var m map[string]any
		json.Unmarshal([]byte(drafted), &m)
		tool := m["tools"].([]any)[0].(map[string]any)
		edit(tool["inputSchema"].(map[string]any)["properties"].(map[string]any), tool["outputSchema"].(map[string]any))
		data, _ := json.Marshal(m)
		file := filepath.Join(t.TempDir(), "manifest.json")
		os.WriteFile(file, data, 0o644)
		got, stdout, _ := runCLI(t, "check", file, "--openapi", doc)
		if got != code {
			t.Errorf("%s: exit %d, want %d\n%s", what, got, code, stdout)
		}
		for _, w := range want {
			if !strings.Contains(stdout, w) {
				t.Errorf("%s: no %q in\n%s", what, w, stdout)
			}
		}
	}
	check("the draft", func(in, out map[string]any) {}, 0)
	check("a stricter decimal", func(in, out map[string]any) { in["d"] = map[string]any{"type": "number", "minimum": 0, "maximum": 999} }, 0,
		"tools.a.openapi.d: note: minimum: the manifest has 0; the serializer takes exclusiveMinimum -1000 (the manifest is stricter)",
		"tools.a.openapi.d: note: maximum: the manifest has 999; the serializer takes exclusiveMaximum 1000 (the manifest is stricter)")
	check("a looser decimal", func(in, out map[string]any) {
		in["d"] = map[string]any{"type": "number", "minimum": -1000, "maximum": 1000}
	}, 1,
		"tools.a.openapi.d: minimum: the manifest has -1000; the serializer takes exclusiveMinimum -1000")
	check("a string where the serializer takes integer or string", func(in, out map[string]any) { in["u"] = map[string]any{"type": "string"} }, 0)
	check("an answer's tighter maxLength", func(in, out map[string]any) {
		out["properties"].(map[string]any)["name"] = map[string]any{"type": "string", "maxLength": 10}
	}, 1, "tools.a.openapi.response.name: maxLength: the manifest has 10; the serializer answers 200")
	check("an answer closed to a field", func(in, out map[string]any) {
		delete(out["properties"].(map[string]any), "name")
		out["additionalProperties"] = false
	}, 1, "tools.a.openapi.response: additionalProperties false refuses 1 of the fields the serializer answers: name")
	check("an answer's required field the serializer does not require", func(in, out map[string]any) { out["required"] = []any{"id", "name"} }, 0,
		"tools.a.openapi.response.name: note: the manifest requires it; the serializer's schema does not say it always answers it")
}
