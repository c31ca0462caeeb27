package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

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
	return environment{getenv: func(k string) string { return vars[k] }, readFile: osEnvironment().readFile, home: home}
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

func mustLoad(t *testing.T, f commonFlags, env environment) *config {
	t.Helper()
	cfg, err := loadConfig(f, env)
	if err != nil {
		t.Fatalf("loadConfig: %v", err)
	}
	return cfg
}

// loadFails expects a configuration error containing want, and no token.
func loadFails(t *testing.T, f commonFlags, env environment, want string) {
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
		{"key only", map[string]string{"NETBOX_TOKEN_KEY": "abc"}, ""},
		{"secret only", map[string]string{"NETBOX_TOKEN_SECRET": "def"}, ""},
		{"whole beats split", map[string]string{"NETBOX_TOKEN": v1, "NETBOX_TOKEN_KEY": "abc", "NETBOX_TOKEN_SECRET": "def"}, "Token " + v1},
		{"none", map[string]string{}, ""},
	} {
		c.vars["NETBOX_URL"] = "https://netbox.example.com"
		cfg, err := loadConfig(commonFlags{}, testEnv(t.TempDir(), c.vars))
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
		} else if cfg.auth != c.auth {
			t.Errorf("%s: auth %q, want %q", c.name, cfg.auth, c.auth)
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
			loadFails(t, commonFlags{}, testEnv(t.TempDir(), vars), "the token contains a control character")
		}
		// The same from a profile file.
		home := t.TempDir()
		doc, _ := json.Marshal(map[string]any{"profiles": map[string]any{"default": map[string]string{
			"base_url": "https://netbox.example.com", "token_version": "v1", "token_secret": secretV1 + bad}}})
		writeProfile(t, sdkPath(filepath.Join(home, ".config")), string(doc), 0o600)
		loadFails(t, commonFlags{}, testEnv(home, nil), "the token contains a control character")
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
		flags commonFlags
		vars  map[string]string
		want  want
	}{
		{"profile only", commonFlags{}, nil,
			want{"https://profile.example.com/netbox", "Bearer nbt_pkey.psecret", 12 * time.Second, true}},
		{"env URL of the profile's NetBox", commonFlags{}, map[string]string{"NETBOX_URL": "https://PROFILE.example.com:443/other"},
			want{"https://PROFILE.example.com:443/other", "Bearer nbt_pkey.psecret", 12 * time.Second, true}},
		{"env token", commonFlags{}, map[string]string{"NETBOX_TOKEN": "nbt_env.tok"},
			want{"https://profile.example.com/netbox", "Bearer nbt_env.tok", 12 * time.Second, true}},
		{"env split token", commonFlags{}, map[string]string{"NETBOX_TOKEN_KEY": "ek", "NETBOX_TOKEN_SECRET": "es"},
			want{"https://profile.example.com/netbox", "Bearer nbt_ek.es", 12 * time.Second, true}},
		{"env timeout and TLS", commonFlags{}, map[string]string{"NETBOX_TIMEOUT": "3", "NETBOX_SSL_VERIFY": "1"},
			want{"https://profile.example.com/netbox", "Bearer nbt_pkey.psecret", 3 * time.Second, false}},
		{"everything from env", commonFlags{}, map[string]string{"NETBOX_URL": "env.example.com", "NETBOX_TOKEN": "nbt_env.tok",
			"NETBOX_TIMEOUT": "4", "NETBOX_SSL_VERIFY": "off"},
			want{"https://env.example.com", "Bearer nbt_env.tok", 4 * time.Second, true}},
		{"flag timeout", commonFlags{timeout: 2 * time.Second}, map[string]string{"NETBOX_TIMEOUT": "3"},
			want{"https://profile.example.com/netbox", "Bearer nbt_pkey.psecret", 2 * time.Second, true}},
		{"NETBOX_PROFILE", commonFlags{}, map[string]string{"NETBOX_PROFILE": "prod"},
			want{"https://prod.example.com", v1, 7500 * time.Millisecond, false}},
		{"--profile beats NETBOX_PROFILE", commonFlags{profile: "staging"}, map[string]string{"NETBOX_PROFILE": "prod"},
			want{"http://staging.example.com:8080", "", 30 * time.Second, false}},
		{"env beats a named profile", commonFlags{profile: "prod"}, map[string]string{"NETBOX_URL": "https://env.example.com",
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
	_, err := loadConfig(commonFlags{}, testEnv(home, map[string]string{"NETBOX_URL": "http://env.example.com"}))
	if err == nil || !strings.Contains(err.Error(), "set NETBOX_TOKEN as well") || strings.Contains(err.Error(), "psecret") {
		t.Fatalf("got %v", err)
	}
	cfg, err := loadConfig(commonFlags{}, testEnv(home, map[string]string{"NETBOX_URL": "http://env.example.com", "NETBOX_TOKEN": "nbt_e.t"}))
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
		cfg, err := loadConfig(commonFlags{}, testEnv(filepath.Join(root, "h"), vars))
		if err != nil || cfg.base != "https://"+c.want+".example.com" || cfg.auth != "Bearer nbt_k.s" {
			t.Errorf("%s: %+v %v, want %s", c.name, cfg, err, c.want)
		}
	}
	// No file: no error unless a profile is named.
	home := t.TempDir()
	loadFails(t, commonFlags{}, testEnv(home, nil), "no NetBox URL: set NETBOX_URL")
	cfg := mustLoad(t, commonFlags{}, testEnv(home, map[string]string{"NETBOX_URL": "netbox.example.com"}))
	if cfg.auth != "" {
		t.Errorf("auth %q without any token", cfg.auth)
	}
	loadFails(t, commonFlags{profile: "prod"}, testEnv(home, nil),
		`profile "prod": no netbox-sdk profile file in `+sdkPath(filepath.Join(home, ".config"))+" or "+cliPath(filepath.Join(home, ".config")))
}

func TestProfileFormats(t *testing.T) {
	t.Parallel()
	load := func(content string, f commonFlags) (*config, error) {
		home := t.TempDir()
		writeProfile(t, sdkPath(filepath.Join(home, ".config")), content, 0o600)
		return loadConfig(f, testEnv(home, nil))
	}
	flat := `{"base_url": "https://flat.example.com/", "token_key": "nbt_k", "token_secret": "s", "timeout": "5", "ssl_verify": "no"}`
	if cfg, err := load(flat, commonFlags{}); err != nil || cfg.base != "https://flat.example.com" || cfg.auth != "Bearer nbt_k.s" ||
		cfg.timeout != 5*time.Second || !cfg.insecure {
		t.Errorf("legacy flat object: %+v %v", cfg, err)
	}
	if cfg, err := load(profileFile, commonFlags{profile: "default"}); err != nil || cfg.base != "https://profile.example.com/netbox" {
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
		{"not JSON", `{"profiles": {"default": {"token_secret": "` + secret + `"`, "", "is not a JSON object: invalid JSON"},
		{"duplicate key", `{"profiles": {}, "profiles": {}}`, "", `duplicate key "profiles"`},
		{"byte order mark", "\xEF\xBB\xBF{}", "", "byte order mark"},
		{"bad URL", `{"base_url": "ftp://x", "token_key": "k", "token_secret": "` + secret + `"}`, "", `profile base_url: scheme "ftp"`},
		{"bad timeout", `{"base_url": "https://x", "timeout": "soon"}`, "", `profile timeout: "soon" is not a number of seconds`},
		{"bad ssl_verify", `{"base_url": "https://x", "ssl_verify": "maybe"}`, "", `profile ssl_verify: "maybe" is not one of`},
	} {
		cfg, err := load(c.content, commonFlags{profile: c.profile})
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), "<nil>") {
			t.Errorf("%s: %+v %v, want an error containing %q", c.name, cfg, err, c.want)
		}
	}
	if cfg, err := load(`{"profiles": {"default": {"base_url": "https://x", "timeout": 2.5, "ssl_verify": true}}}`, commonFlags{}); err != nil ||
		cfg.timeout != 2500*time.Millisecond || cfg.insecure {
		t.Errorf("number timeout and boolean ssl_verify: %+v %v", cfg, err)
	}
}

func TestProfilePermissions(t *testing.T) {
	t.Parallel()
	for _, mode := range []os.FileMode{0o600, 0o400, 0o700, 0o640, 0o604, 0o644, 0o660, 0o606, 0o755} {
		home := t.TempDir()
		path := sdkPath(filepath.Join(home, ".config"))
		writeProfile(t, path, `{"base_url": "https://netbox.example.com", "token_key": "`+secret+`", "token_secret": "`+secret+`"}`, mode)
		env := testEnv(home, nil)
		if mode&0o044 == 0 {
			if cfg := mustLoad(t, commonFlags{}, env); cfg.base != "https://netbox.example.com" {
				t.Errorf("mode %04o: base %q", mode, cfg.base)
			}
			continue
		}
		loadFails(t, commonFlags{}, env, fmt.Sprintf("the profile file %s is readable by other users (mode %04o)", path, mode))
		loadFails(t, commonFlags{}, env, "run: chmod 600 "+path)
		// The environment's URL does not make a readable file acceptable.
		loadFails(t, commonFlags{}, testEnv(home, map[string]string{"NETBOX_URL": "https://netbox.example.com"}), "readable by other users")
	}
	// Through the injected reader, without any file.
	env := environment{getenv: func(string) string { return "" }, home: "/home/ops",
		readFile: func(name string) ([]byte, os.FileMode, error) {
			if name == "/home/ops/.config/netbox-sdk/config.json" {
				return []byte(`{"base_url": "https://x"}`), 0o644, nil
			}
			return nil, 0, os.ErrNotExist
		}}
	loadFails(t, commonFlags{}, env, "the profile file /home/ops/.config/netbox-sdk/config.json is readable by other users (mode 0644)")
	env.readFile = func(string) ([]byte, os.FileMode, error) { return nil, 0, os.ErrPermission }
	loadFails(t, commonFlags{}, env, "cannot read the netbox-sdk profile file /home/ops/.config/netbox-sdk/config.json")
}

// ---- timeouts, TLS, mutations ----

func TestTimeoutSetting(t *testing.T) {
	t.Parallel()
	env := func(timeout string) environment {
		return testEnv(t.TempDir(), map[string]string{"NETBOX_URL": "https://x", "NETBOX_TOKEN": "nbt_a.b", "NETBOX_TIMEOUT": timeout})
	}
	for value, want := range map[string]time.Duration{"": 30 * time.Second, "10": 10 * time.Second, "2.5": 2500 * time.Millisecond,
		"0.1": 100 * time.Millisecond, "86400": 24 * time.Hour} {
		if cfg := mustLoad(t, commonFlags{}, env(value)); cfg.timeout != want {
			t.Errorf("NETBOX_TIMEOUT=%q: %v, want %v", value, cfg.timeout, want)
		}
	}
	for _, value := range []string{"0", "-1", "abc", "86401", "1e9", "Inf", "-Inf", "NaN", "nan", "30s", " 5"} {
		loadFails(t, commonFlags{}, env(value), "NETBOX_TIMEOUT: ")
	}
	if cfg := mustLoad(t, commonFlags{timeout: 1500 * time.Millisecond}, env("10")); cfg.timeout != 1500*time.Millisecond {
		t.Errorf("--timeout: %v", cfg.timeout)
	}
	loadFails(t, commonFlags{timeout: -time.Second}, env(""), "--timeout must be positive")
}

func TestSSLVerifySetting(t *testing.T) {
	t.Parallel()
	for value, insecure := range map[string]bool{"": false, "1": false, "true": false, "TRUE": false, "yes": false, "on": false,
		"0": true, "false": true, "False": true, "no": true, "off": true, "OFF": true} {
		cfg := mustLoad(t, commonFlags{}, testEnv(t.TempDir(), map[string]string{"NETBOX_URL": "https://x", "NETBOX_SSL_VERIFY": value}))
		if cfg.insecure != insecure {
			t.Errorf("NETBOX_SSL_VERIFY=%q: insecure %t", value, cfg.insecure)
		}
	}
	for _, value := range []string{"maybe", "2", "disabled", " off"} {
		loadFails(t, commonFlags{}, testEnv(t.TempDir(), map[string]string{"NETBOX_URL": "https://x", "NETBOX_SSL_VERIFY": value}),
			"NETBOX_SSL_VERIFY: ")
	}
}

func TestAllowMutationsSetting(t *testing.T) {
	t.Parallel()
	for value, on := range map[string]bool{"1": true, "true": true, "TRUE": true, "yes": true, "Yes": true, "on": true, "ON": true,
		"": false, "0": false, "false": false, "no": false, "off": false, "enabled": false, " 1": false, "2": false} {
		env := testEnv(t.TempDir(), map[string]string{"NETBOX_URL": "https://x", "NETBOX_MCP_ALLOW_MUTATIONS": value})
		if got := mutationsAllowed(commonFlags{}, env); got != on {
			t.Errorf("NETBOX_MCP_ALLOW_MUTATIONS=%q: %t", value, got)
		}
		if !mutationsAllowed(commonFlags{allowMutations: true}, env) {
			t.Errorf("--allow-mutations with %q: off", value)
		}
	}
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
		_, err := loadConfig(commonFlags{}, testEnv(home, vars))
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
	code = run(args, &out, &errOut)
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

// refusedURL is the URL of a loopback port that refuses connections.
func refusedURL(t testing.TB) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return "http://" + ln.Addr().String()
}

// TestScanCommandExitCodes is SPEC §2's table for scan: exit 0 clean, 1
// problems, 2 error. An error prints nothing on stdout and one line on
// stderr; no output ever shows a token.
func TestScanCommandExitCodes(t *testing.T) {
	f := newFakeNetBox(t)
	f.addPlugin("example", readTool("list_reports"), writeTool("run_report"))
	f.addPlugin("quiet")
	withBroken := newFakeNetBox(t)
	withBroken.addPlugin("example", readTool("list_reports"), writeTool("run_report"))
	withBroken.setPlugin("broken", &fakePlugin{manifest: `{"schema_version": "1", "plugin": "broken", "tools": []}`})
	clean := map[string]string{"NETBOX_URL": f.URL, "NETBOX_TOKEN": fakeToken}
	refused := map[string]string{"NETBOX_URL": refusedURL(t), "NETBOX_TOKEN": secretV2}
	const refusal = "netbox-plugin-bridge scan: discovery_failed: GET /api/plugins/"
	cases := []struct {
		name   string
		vars   map[string]string
		args   []string
		code   int
		stdout []string // all on stdout; stdout must be empty when code is 2
		absent string   // not on stdout
		stderr []string // all on one stderr line; none: stderr must be empty
	}{
		{"clean", clean, []string{"scan"}, 0, []string{"TOOL", "example.list_reports", "example.run_report"}, "problem", nil},
		{"clean --json", clean, []string{"scan", "--json"}, 0, []string{`"qualified_name":"example.run_report"`, `"problems":[]`}, "", nil},
		{"--plugin example", clean, []string{"scan", "--plugin", "example"}, 0, []string{"example.run_report"}, "problem", nil},
		{"--plugin missing", clean, []string{"scan", "--plugin", "missing"}, 1, []string{"1 problem(s):\nmissing: plugin_not_found: "}, "", nil},
		{"--plugin quiet", clean, []string{"scan", "--plugin", "quiet"}, 1, []string{"1 problem(s):\nquiet: not_advertised: "}, "", nil},
		{"a broken plugin", map[string]string{"NETBOX_URL": withBroken.URL, "NETBOX_TOKEN": fakeToken}, []string{"scan"}, 1,
			[]string{"example.list_reports", "1 problem(s):\nbroken: discovery_failed: manifest /api/plugins/broken/mcp/: tools: must be an array"}, "", nil},
		{"a broken plugin --json", map[string]string{"NETBOX_URL": withBroken.URL, "NETBOX_TOKEN": fakeToken}, []string{"scan", "--json"}, 1,
			[]string{`"plugin":"broken","code":"discovery_failed"`}, "", nil},
		{"no URL", nil, []string{"scan"}, 2, nil, "", []string{"netbox-plugin-bridge scan: no NetBox URL: set NETBOX_URL"}},
		{"bad URL", map[string]string{"NETBOX_URL": "ftp://netbox", "NETBOX_TOKEN": secretV2}, []string{"scan"}, 2, nil, "",
			[]string{`NETBOX_URL: scheme "ftp" is not http or https`}},
		{"bad token", map[string]string{"NETBOX_URL": f.URL, "NETBOX_TOKEN": secretV2 + "\r"}, []string{"scan"}, 2, nil, "",
			[]string{"NETBOX_TOKEN: the token contains a control character"}},
		{"negative --timeout", clean, []string{"scan", "--timeout=-1s"}, 2, nil, "", []string{"--timeout must be positive"}},
		{"refused", refused, []string{"scan"}, 2, nil, "", []string{refusal, "refused"}},
		{"refused --plugin", refused, []string{"scan", "--plugin", "example"}, 2, nil, "", []string{refusal, "refused"}},
		{"refused --json", refused, []string{"scan", "--json"}, 2, nil, "", []string{refusal, "refused"}},
		{"a token NetBox refuses", map[string]string{"NETBOX_URL": f.URL, "NETBOX_TOKEN": secretV1}, []string{"scan"}, 2, nil, "",
			[]string{`HTTP 403: "Invalid token."`}},
	}
	var passed int
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			scanEnv(t, c.vars)
			code, out, errOut := runCLI(t, c.args...)
			if code != c.code {
				t.Errorf("%v: exit %d, want %d\n%s%s", c.args, code, c.code, out, errOut)
			}
			for _, want := range c.stdout {
				if !strings.Contains(out, want) {
					t.Errorf("%v: stdout does not contain %q:\n%s", c.args, want, out)
				}
			}
			if c.absent != "" && strings.Contains(out, c.absent) || c.code == 2 && out != "" {
				t.Errorf("%v: stdout %q", c.args, out)
			}
			if len(c.stderr) == 0 && errOut != "" {
				t.Errorf("%v: stderr %q, want none", c.args, errOut)
			}
			for _, want := range c.stderr {
				oneLine(t, errOut, want)
			}
			if !t.Failed() {
				passed++
			}
		})
	}
	t.Logf("SPEC §2 scan exit codes: %d of %d command lines as expected", passed, len(cases))
}

func TestScanCommandJSON(t *testing.T) {
	f := newFakeNetBox(t)
	f.addPlugin("example", readTool("list_reports"), writeTool("run_report"))
	f.setPlugin("broken", &fakePlugin{manifest: "{"})
	scanEnv(t, map[string]string{"NETBOX_URL": f.URL, "NETBOX_TOKEN": fakeToken})
	code, out, errOut := runCLI(t, "scan", "--json")
	want := string(catalogDocument(scanAllOK(t, f.client()))) + "\n"
	if code != 1 || errOut != "" || out != want {
		t.Errorf("scan --json: %d\n%s\nwant\n%s", code, out, want)
	}
	cat, err := f.client().scanOne(context.Background(), "example", callOptions{})
	if err != nil {
		t.Fatal(err)
	}
	code, out, _ = runCLI(t, "scan", "--json", "--plugin", "example")
	if want := string(catalogDocument(cat)) + "\n"; code != 0 || out != want {
		t.Errorf("scan --json --plugin example: %d\n%s\nwant\n%s", code, out, want)
	}
	code, out, _ = runCLI(t, "scan", "--plugin", "broken", "--json")
	if doc := decodeCatalog(t, []byte(out)); code != 1 || len(doc.Tools) != 0 ||
		len(doc.Problems) != 1 || doc.Problems[0].Plugin != "broken" || doc.Problems[0].Code != "discovery_failed" {
		t.Errorf("scan --json --plugin broken: %d\n%s", code, out)
	}
}

func TestBadCommandLines(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"scan", "--bogus"},
		{"scan", "--token", secretV2}, // tokens are never flags
		{"scan", "--timeout", "soon"},
		{"scan", "--plugin"},
		{"scan", "extra"},
		{"scan", "--json=maybe"},
		{"check", "--bogus", "testdata/manifest-valid.json"},
		{"check", "--tool"},
		{"frobnicate"},
		{"--bogus"},
	} {
		code, out, errOut := runCLI(t, args...)
		if code != 2 || out != "" {
			t.Errorf("%v: %d %q", args, code, out)
		}
		oneLine(t, errOut, "netbox-plugin-bridge")
	}
}

func TestScanDemo(t *testing.T) {
	t.Parallel()
	code, out, errOut := runCLI(t, "scan", "--demo")
	if code != 1 || errOut != "" {
		t.Errorf("scan --demo: %d %q", code, errOut)
	}
	for _, want := range []string{"example.list_reports", "example.run_report", "1 problem(s):",
		`broken: discovery_failed: manifest /api/plugins/broken/mcp/: tools[0].method: "get" is not one of`} {
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
	if !slices.Equal(doc.names(), []string{"example.list_reports", "example.run_report"}) ||
		doc.Tools[1].RequestPath != "/api/plugins/example/reports/run/" || doc.Tools[1].Effect != "write" ||
		len(doc.Problems) != 1 || doc.Problems[0].Plugin != "broken" || doc.Problems[0].Code != "discovery_failed" {
		t.Errorf("scan --demo --json: %+v", doc)
	}
	if code, _, _ := runCLI(t, "scan", "--demo", "--plugin", "example"); code != 0 {
		t.Errorf("scan --demo --plugin example: %d", code)
	}
	if code, out, _ := runCLI(t, "scan", "--demo", "--plugin", "quiet"); code != 1 || !strings.Contains(out, "quiet: not_advertised") {
		t.Errorf("scan --demo --plugin quiet: %d\n%s", code, out)
	}
}

func TestDemoNetBox(t *testing.T) {
	t.Parallel()
	base, stop, err := startDemo()
	if err != nil {
		t.Fatal(err)
	}
	cfg, _ := loadConfig(commonFlags{}, testEnv(t.TempDir(), map[string]string{"NETBOX_URL": base, "NETBOX_TOKEN": demoToken}))
	if cfg == nil || cfg.auth != "Token "+demoToken {
		t.Fatalf("config %+v", cfg)
	}
	cat := scanAllOK(t, testClient(t, cfg))
	if got := toolNames(cat); !slices.Equal(got, []string{"example.list_reports", "example.run_report"}) || len(cat.problems) != 1 {
		t.Errorf("tools %v problems %v", got, cat.problems)
	}
	cfg.auth = ""
	scanAllFails(t, testClient(t, cfg), `HTTP 403: "Invalid token"`)
	stop()
	cfg.auth = "Token " + demoToken
	if _, err := testClient(t, cfg).scanAll(context.Background(), callOptions{}); err == nil {
		t.Errorf("the demo NetBox still answers after stop")
	}
}

// ---- check and version ----

func TestCheckCommand(t *testing.T) {
	t.Parallel()
	const valid, invalid = "testdata/manifest-valid.json", "testdata/manifests/method-lowercase.json"
	code, out, errOut := runCLI(t, "check", valid)
	if code != 0 || out != valid+": valid\n" || errOut != "" {
		t.Errorf("check valid: %d %q %q", code, out, errOut)
	}
	code, out, _ = runCLI(t, "check", invalid)
	if code != 1 || !strings.HasPrefix(out, `tools[0].method: "get" is not one of GET, HEAD, POST, PUT, PATCH, DELETE`) {
		t.Errorf("check invalid: %d %q", code, out)
	}
	missing := filepath.Join(t.TempDir(), "missing.json")
	for _, args := range [][]string{{"check", missing}, {"check", missing, "--json"}, {"check"}, {"check", valid, invalid},
		{"check", valid, "--arguments", "{}"}, {"check", valid, "--tool", "list_reports", "--arguments", "@" + missing}} {
		code, out, errOut := runCLI(t, args...)
		if code != 2 || out != "" {
			t.Errorf("%v: %d %q", args, code, out)
		}
		oneLine(t, errOut, "netbox-plugin-bridge check: ")
	}

	checkJSON := func(args ...string) (int, []string, map[string]json.RawMessage) {
		code, out, _ := runCLI(t, append([]string{"check", "--json"}, args...)...)
		var doc map[string]json.RawMessage
		if err := json.Unmarshal([]byte(out), &doc); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
		return code, objectKeys(t, []byte(out)), doc
	}
	code, keys, doc := checkJSON(valid)
	if code != 0 || !slices.Equal(keys, []string{"valid", "problems"}) || string(doc["valid"]) != "true" || string(doc["problems"]) != "[]" {
		t.Errorf("check --json valid: %d %v %s", code, keys, doc)
	}
	code, _, doc = checkJSON(invalid)
	var ps []json.RawMessage
	json.Unmarshal(doc["problems"], &ps)
	if code != 1 || string(doc["valid"]) != "false" || len(ps) == 0 {
		t.Fatalf("check --json invalid: %d %s", code, doc)
	}
	for _, p := range ps {
		if keys := objectKeys(t, p); !slices.Equal(keys, []string{"location", "message"}) {
			t.Errorf("problem keys %v", keys)
		}
	}

	// One tool's arguments and response.
	args := filepath.Join(t.TempDir(), "args.json")
	os.WriteFile(args, []byte(`{"limit": 5}`), 0o600)
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--tool", "list_reports", "--arguments", `{"limit": 5}`}, 0, ": valid"},
		{[]string{"--tool", "list_reports", "--arguments", "@" + args}, 0, ": valid"},
		{[]string{"--tool", "list_reports", "--arguments", `{"limit": 0}`}, 1, "arguments.limit: "},
		{[]string{"--tool", "list_reports", "--arguments", `{"limit": 5, "limit": 6}`}, 1, `duplicate key "limit"`},
		{[]string{"--tool", "nope"}, 1, `--tool: the manifest has no tool "nope"`},
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

// TestServeExitsCleanly: the release binary ends with status 0 when stdin
// closes and when it gets SIGTERM or SIGINT.
func TestServeExitsCleanly(t *testing.T) {
	bin := releaseBinary(t)
	for _, stop := range []string{"stdin EOF", "SIGTERM", "SIGINT"} {
		cmd := exec.Command(bin, "--demo")
		stdin, _ := cmd.StdinPipe()
		stdout, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		io.WriteString(stdin, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`+"\n")
		if line, err := bufio.NewReader(stdout).ReadString('\n'); err != nil || !strings.Contains(line, `"id":1`) {
			t.Fatalf("%s: no initialize reply: %q %v", stop, line, err)
		}
		switch stop {
		case "stdin EOF":
			stdin.Close()
		case "SIGTERM":
			cmd.Process.Signal(syscall.SIGTERM)
		default:
			cmd.Process.Signal(os.Interrupt)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("%s: %v", stop, err)
			}
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			t.Errorf("%s: still running after 10 s", stop)
		}
	}
}

// TestScanOutputIsPrintable: titles and problems from NetBox cannot put
// escape sequences or extra lines on the operator's terminal.
func TestScanOutputIsPrintable(t *testing.T) {
	var out bytes.Buffer
	hostile := readTool("list")
	hostile.Title = "List\x1b[2J\rfake line"
	tl := manifestJSON("p", hostile)
	m, ps := parseManifest([]byte(tl))
	if len(ps) > 0 {
		t.Fatal(ps)
	}
	cat := &catalog{problems: []scanProblem{{"evil\x1b]0;x\x07", "discovery_failed", "bad\nline"}}}
	cat.add("p", m)
	printCatalog(&out, cat)
	if strings.ContainsAny(out.String(), "\x1b\r\x07") || strings.Contains(out.String(), "bad\nline") {
		t.Fatalf("control characters reached the terminal: %q", out.String())
	}
}

func TestNegativeTimeoutReportedFirst(t *testing.T) {
	for _, args := range [][]string{{"scan", "--timeout", "-1s"}, {"scan", "--demo", "--timeout", "-1s"}} {
		var out, errOut bytes.Buffer
		if code := run(args, &out, &errOut); code != 2 || !strings.Contains(errOut.String(), "--timeout must be positive") {
			t.Errorf("%v: %d %q", args, code, errOut.String())
		}
	}
}
