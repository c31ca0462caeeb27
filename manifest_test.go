package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// badManifests maps each file of testdata/manifests, one broken SPEC §4 rule
// apiece, to the location and message its first problem must have.
var badManifests = map[string]struct{ location, message string }{
	"not-json":                  {"", "invalid JSON at line 1, column 58 (byte 57): expected a string key"},
	"duplicate-key":             {"tools[0]", `duplicate key "name"`},
	"byte-order-mark":           {"", "byte order mark is not allowed"},
	"unknown-top-key":           {"version", "unknown key in the manifest"},
	"missing-tools":             {"", `the manifest is missing "tools"`},
	"schema-version-number":     {"schema_version", `must be the string "1"`},
	"plugin-bad-slug":           {"plugin", "must be a plugin slug"},
	"tools-empty":               {"tools", "must be an array of 1 to 64 tools"},
	"tools-65":                  {"tools", "must be an array of 1 to 64 tools"},
	"snake-case-alias":          {"tools[1].input_schema", `unknown key in a tool descriptor (the key is "inputSchema")`},
	"missing-annotations":       {"tools[0]", `a tool descriptor is missing "annotations"`},
	"name-bad":                  {"tools[0].name", `"List-Reports" is not a tool name: 1 to 64 lower-case letters, digits and _, the first a letter; try "list_reports"`},
	"name-duplicate":            {"tools[1].name", `tool name "list_reports" is already used by tools[0]`},
	"title-empty":               {"tools[0].title", "must be 1 to 200 characters, not 0"},
	"title-too-long":            {"tools[0].title", "must be 1 to 200 characters, not 201"},
	"title-not-string":          {"tools[0].title", "must be a string"},
	"description-too-long":      {"tools[0].description", "must be 1 to 2000 characters, not 2001"},
	"method-lowercase":          {"tools[0].method", `"get" must be upper case: GET`},
	"method-unknown":            {"tools[0].method", `"OPTIONS" is not one of`},
	"effect-unknown":            {"tools[0].effect", `"readonly" is not one of read, write, destructive`},
	"get-write-effect":          {"tools[0].effect", `"write" does not agree with method GET, which needs read`},
	"post-read-effect":          {"tools[1].effect", `"read" does not agree with method POST, which needs write or destructive`},
	"delete-write-effect":       {"tools[1].effect", `"write" does not agree with method DELETE, which needs destructive`},
	"read-only-hint-mismatch":   {"tools[0].annotations.readOnlyHint", `must be true for effect "read"`},
	"destructive-hint-mismatch": {"tools[1].annotations.destructiveHint", `must be true for effect "destructive"`},
	"annotations-extra-key":     {"tools[0].annotations.title", "unknown key in annotations"},
	"annotations-not-boolean":   {"tools[0].annotations.readOnlyHint", "must be a boolean"},
	"path-leading-slash":        {"tools[0].path", "without a leading /"},
	"path-no-trailing-slash":    {"tools[0].path", "must end with /"},
	"path-dot-dot":              {"tools[0].path", "has an empty, . or .. segment"},
	"path-dot":                  {"tools[0].path", "has an empty, . or .. segment"},
	"path-empty-segment":        {"tools[0].path", "has an empty, . or .. segment"},
	"path-percent":              {"tools[0].path", `character '%' is not allowed`},
	"path-query":                {"tools[0].path", `character '?' is not allowed`},
	"path-fragment":             {"tools[0].path", `character '#' is not allowed`},
	"path-backslash":            {"tools[0].path", `character '\\' is not allowed`},
	"path-url":                  {"tools[0].path", `character ':' is not allowed`},
	"path-too-long":             {"tools[0].path", "must be 2 to 1024 characters"},
	"path-too-short":            {"tools[0].path", "must be 2 to 1024 characters"},
	"input-type-not-literal":    {"tools[1].inputSchema.type", `an inputSchema root must declare "type": "object"`},
	"input-additional-missing":  {"tools[1].inputSchema.additionalProperties", `must declare "additionalProperties": false`},
	"input-additional-schema":   {"tools[1].inputSchema.additionalProperties", `must declare "additionalProperties": false`},
	"input-boolean-schema":      {"tools[1].inputSchema", "must be a schema object"},
	"input-ref":                 {"tools[1].inputSchema.properties.scope.$ref", `keyword "$ref" is not in the bridge-v1 schema subset`},
	"input-pattern":             {"tools[1].inputSchema.properties.scope.pattern", `keyword "pattern" is not in the bridge-v1 schema subset`},
	"input-combinator":          {"tools[1].inputSchema.anyOf", `keyword "anyOf" is not in the bridge-v1 schema subset`},
	"input-format-email":        {"tools[1].inputSchema.properties.since.format", `format "email" is not supported`},
	"unique-items-untyped":      {"tools[1].inputSchema.properties.ids.uniqueItems", "exactly one scalar type"},
	"unique-items-mixed":        {"tools[1].inputSchema.properties.ids.uniqueItems", "exactly one scalar type"},
	"get-object-property":       {"tools[0].inputSchema.properties.filter", "a GET input property must declare scalar types"},
	"get-array-of-objects":      {"tools[0].inputSchema.properties.ids", "a GET input property must declare scalar types"},
	"get-untyped-property":      {"tools[0].inputSchema.properties.any", "a GET input property must declare scalar types"},
	"get-array-or-string":       {"tools[0].inputSchema.properties.mixed", "a GET input property must declare scalar types"},
	"output-pattern":            {"tools[0].outputSchema.properties.name.pattern", `keyword "pattern"`},
	"output-not-schema":         {"tools[1].outputSchema", "a schema must be an object or a boolean"},
	"schema-too-deep":           {"tools[1].inputSchema", "nesting deeper than 16"},
	"schema-too-many-values":    {"tools[1].inputSchema", "more than 2048"},
	"meta-negative-count":       {"tools[1].inputSchema.properties.scope.minLength", "must be a non-negative integer"},
	"meta-fractional-count":     {"tools[1].inputSchema.properties.scope.maxLength", "must be a non-negative integer"},
	"meta-multiple-of-zero":     {"tools[1].inputSchema.properties.n.multipleOf", "multipleOf must be greater than 0"},
	"meta-required-duplicate":   {"tools[1].inputSchema.required[1]", `required lists "scope" twice`},
	"meta-type-unknown":         {"tools[1].inputSchema.properties.scope.type", "type must be one of the seven type names"},
	"meta-type-duplicate":       {"tools[1].inputSchema.properties.scope.type", `type lists "string" twice`},
}

func TestBadManifests(t *testing.T) {
	files, _ := filepath.Glob("testdata/manifests/*.json")
	if len(files) != len(badManifests) {
		t.Errorf("%d files in testdata/manifests, %d expectations", len(files), len(badManifests))
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".json")
		want, ok := badManifests[name]
		if !ok {
			t.Errorf("%s has no expectation", f)
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		m, ps := parseManifest(data)
		if m != nil || len(ps) == 0 {
			t.Errorf("%s: accepted", name)
			continue
		}
		if ps[0].Location != want.location || !strings.Contains(ps[0].Message, want.message) {
			t.Errorf("%s: got %q %q, want %q containing %q", name, ps[0].Location, ps[0].Message, want.location, want.message)
		}
		for _, p := range ps {
			if len(p.Message) > 2*specClip+200 {
				t.Errorf("%s: message echoes too much input: %d bytes", name, len(p.Message))
			}
		}
	}
}

// opTool is a valid descriptor for the rule tables below: its hints follow
// its effect as SPEC §4 requires.
func opTool(method, effect string) toolSpec {
	return toolSpec{Name: "op", Title: "Op", Description: "An operation.", Method: method, Path: "op/", Effect: effect,
		InputSchema: json.RawMessage(`{"type": "object", "additionalProperties": false}`),
		Annotations: toolAnnotations{ReadOnlyHint: effect == "read", DestructiveHint: effect == "destructive"}}
}

// firstProblemAt parses a manifest and expects it valid (loc "") or its
// first problem at loc.
func firstProblemAt(t *testing.T, name, doc, loc string) bool {
	t.Helper()
	m, ps := parseManifest([]byte(doc))
	switch {
	case loc == "" && len(ps) > 0:
		t.Errorf("%s: refused: %v", name, ps[0])
	case loc == "" && m == nil:
		t.Errorf("%s: no manifest and no problem", name)
	case loc != "" && len(ps) == 0:
		t.Errorf("%s: accepted, want a problem at %s", name, loc)
	case loc != "" && (m != nil || ps[0].Location != loc):
		t.Errorf("%s: first problem %v, want one at %s", name, ps[0], loc)
	default:
		return true
	}
	return false
}

// TestMethodEffectRule checks every method and effect against the table of
// SPEC §4, written out here: GET/HEAD ⇔ read; POST/PUT/PATCH ⇒ write or
// destructive; DELETE ⇒ destructive. readOnlyHint is (effect == read) and
// destructiveHint is (effect == destructive); the other two hints are free.
func TestMethodEffectRule(t *testing.T) {
	table := []struct {
		method                   string
		read, write, destructive bool
	}{
		{"GET", true, false, false},
		{"HEAD", true, false, false},
		{"POST", false, true, true},
		{"PUT", false, true, true},
		{"PATCH", false, true, true},
		{"DELETE", false, false, true},
	}
	var accepted, refused, hints int
	for _, row := range table {
		for _, c := range []struct {
			effect string
			ok     bool
		}{{"read", row.read}, {"write", row.write}, {"destructive", row.destructive}} {
			name := row.method + " " + c.effect
			tl := opTool(row.method, c.effect)
			if !c.ok {
				if firstProblemAt(t, name, manifestJSON("p", tl), "tools[0].effect") {
					refused++
				}
				continue
			}
			if !firstProblemAt(t, name, manifestJSON("p", tl), "") {
				continue
			}
			accepted++
			for _, free := range []toolAnnotations{{IdempotentHint: true}, {OpenWorldHint: true}, {IdempotentHint: true, OpenWorldHint: true}} {
				free.ReadOnlyHint, free.DestructiveHint = tl.Annotations.ReadOnlyHint, tl.Annotations.DestructiveHint
				other := tl
				other.Annotations = free
				if firstProblemAt(t, name+fmt.Sprintf(" %+v", free), manifestJSON("p", other), "") {
					hints++
				}
			}
			wrongRO, wrongD := tl, tl
			wrongRO.Annotations.ReadOnlyHint = !tl.Annotations.ReadOnlyHint
			wrongD.Annotations.DestructiveHint = !tl.Annotations.DestructiveHint
			if firstProblemAt(t, name+" with readOnlyHint flipped", manifestJSON("p", wrongRO), "tools[0].annotations.readOnlyHint") &&
				firstProblemAt(t, name+" with destructiveHint flipped", manifestJSON("p", wrongD), "tools[0].annotations.destructiveHint") {
				hints += 2
			}
		}
	}
	// Exactly these six methods, upper case, no trimming (SPEC §4, §12).
	for _, method := range []string{"get", "Get", "post", "delete", "OPTIONS", "TRACE", "CONNECT", "PURGE", "QUERY", " GET", "GET ", ""} {
		if firstProblemAt(t, fmt.Sprintf("method %q", method), manifestJSON("p", opTool(method, "read")), "tools[0].method") {
			refused++
		}
	}
	for _, effect := range []string{"Read", "READ", "readonly", "delete", "mutate", " read", ""} {
		if firstProblemAt(t, fmt.Sprintf("effect %q", effect), manifestJSON("p", opTool("GET", effect)), "tools[0].effect") {
			refused++
		}
	}
	if accepted != 9 || refused != 9+12+7 || hints != 9*5 {
		t.Errorf("%d pairs accepted (want 9), %d refused (want 28), %d hint checks passed (want 45)", accepted, refused, hints)
	}
	t.Logf("SPEC §4 method/effect table: %d pairs accepted, %d methods, effects and pairs refused, %d hint checks passed", accepted, refused, hints)
}

// TestDescriptorRules checks the edges of SPEC §4's name, length and path
// rules, and of §3's slug, from both sides.
func TestDescriptorRules(t *testing.T) {
	segments := func(n int) string { return strings.Repeat("a/", n) }
	cases := []struct {
		name string
		edit func(*toolSpec)
		slug string // the manifest's plugin, default "p"
		loc  string // "" for valid
	}{
		{"name one letter", func(tl *toolSpec) { tl.Name = "a" }, "", ""},
		{"name 64 characters", func(tl *toolSpec) { tl.Name = "a" + strings.Repeat("b_9", 21) }, "", ""},
		{"name 65 characters", func(tl *toolSpec) { tl.Name = "a" + strings.Repeat("b", 64) }, "", "tools[0].name"},
		{"name empty", func(tl *toolSpec) { tl.Name = "" }, "", "tools[0].name"},
		{"name starts with a digit", func(tl *toolSpec) { tl.Name = "9a" }, "", "tools[0].name"},
		{"name starts with _", func(tl *toolSpec) { tl.Name = "_a" }, "", "tools[0].name"},
		{"name with -", func(tl *toolSpec) { tl.Name = "a-b" }, "", "tools[0].name"},
		{"name with a capital", func(tl *toolSpec) { tl.Name = "aB" }, "", "tools[0].name"},
		{"name with a dot", func(tl *toolSpec) { tl.Name = "a.b" }, "", "tools[0].name"},
		{"title 1 character", func(tl *toolSpec) { tl.Title = "x" }, "", ""},
		{"title 200 characters", func(tl *toolSpec) { tl.Title = strings.Repeat("é", 200) }, "", ""},
		{"title 201 characters", func(tl *toolSpec) { tl.Title = strings.Repeat("é", 201) }, "", "tools[0].title"},
		{"title empty", func(tl *toolSpec) { tl.Title = "" }, "", "tools[0].title"},
		{"description 2000 characters", func(tl *toolSpec) { tl.Description = strings.Repeat("é", 2000) }, "", ""},
		{"description 2001 characters", func(tl *toolSpec) { tl.Description = strings.Repeat("é", 2001) }, "", "tools[0].description"},
		{"description empty", func(tl *toolSpec) { tl.Description = "" }, "", "tools[0].description"},
		{"path 2 characters", func(tl *toolSpec) { tl.Path = "a/" }, "", ""},
		{"path 1024 characters", func(tl *toolSpec) { tl.Path = segments(512) }, "", ""},
		{"path 1025 characters", func(tl *toolSpec) { tl.Path = "b" + segments(512) }, "", "tools[0].path"},
		{"path /", func(tl *toolSpec) { tl.Path = "/" }, "", "tools[0].path"},
		{"path of every allowed character", func(tl *toolSpec) { tl.Path = "AZaz09._~-/x/" }, "", ""},
		{"path with ://", func(tl *toolSpec) { tl.Path = "http://x/" }, "", "tools[0].path"},
		{"path with a space", func(tl *toolSpec) { tl.Path = "a b/" }, "", "tools[0].path"},
		{"path with +", func(tl *toolSpec) { tl.Path = "a+b/" }, "", "tools[0].path"},
		{"path with ..", func(tl *toolSpec) { tl.Path = "a/../b/" }, "", "tools[0].path"},
		{"path ..x is a name", func(tl *toolSpec) { tl.Path = "..x/" }, "", ""},
		{"slug one character", nil, "a", ""},
		{"slug starting with a digit", nil, "0a", ""},
		{"slug with - and _", nil, "a_b-c", ""},
		{"slug 64 characters", nil, "a" + strings.Repeat("-", 63), ""},
		{"slug 65 characters", nil, "a" + strings.Repeat("b", 64), "plugin"},
		{"slug starting with -", nil, "-a", "plugin"},
		{"slug starting with _", nil, "_a", "plugin"},
		{"slug with a capital", nil, "aB", "plugin"},
		{"slug with a dot", nil, "a.b", "plugin"},
		{"slug empty", nil, "", "plugin"},
	}
	var passed int
	for _, c := range cases {
		tl := readTool("op")
		if c.edit != nil {
			c.edit(&tl)
		}
		slug := c.slug
		if c.edit != nil {
			slug = "p"
		}
		if firstProblemAt(t, c.name, manifestJSON(slug, tl), c.loc) {
			passed++
		}
	}
	// 1 to 64 tools, unique names.
	for n, loc := range map[int]string{1: "", 64: "", 65: "tools"} {
		if firstProblemAt(t, fmt.Sprintf("%d tools", n), manifestJSON("p", numberedTools(n)...), loc) {
			passed++
		}
	}
	if firstProblemAt(t, "no tools", `{"schema_version": "1", "plugin": "p", "tools": []}`, "tools") {
		passed++
	}
	t.Logf("SPEC §3/§4 descriptor rules: %d of %d cases as expected", passed, len(cases)+4)
}

// TestQueryInputRule: SPEC §4, a GET or HEAD input property must declare
// scalar types, or "array" (optionally with "null") whose items declare
// scalar types; the other methods send a JSON body and take any property.
func TestQueryInputRule(t *testing.T) {
	props := []struct {
		schema string
		query  bool
	}{
		{`{"type": "string"}`, true},
		{`{"type": "integer", "minimum": 1}`, true},
		{`{"type": "number"}`, true},
		{`{"type": "boolean"}`, true},
		{`{"type": "null"}`, true},
		{`{"type": ["string", "null"]}`, true},
		{`{"type": ["null", "boolean", "integer", "number", "string"]}`, true},
		{`{"type": "array", "items": {"type": "string"}}`, true},
		{`{"type": ["array", "null"], "items": {"type": ["integer", "null"]}}`, true},
		{`{"type": "object"}`, false},
		{`{"type": ["object", "null"]}`, false},
		{`{}`, false},
		{`true`, false},
		{`{"enum": ["a", "b"]}`, false},
		{`{"type": "array"}`, false},
		{`{"type": "array", "items": {}}`, false},
		{`{"type": "array", "items": {"type": "array", "items": {"type": "string"}}}`, false},
		{`{"type": "array", "items": {"type": "object"}}`, false},
		{`{"type": ["array", "string"], "items": {"type": "string"}}`, false},
	}
	methods := []struct {
		method, effect string
		query          bool
	}{{"GET", "read", true}, {"HEAD", "read", true}, {"POST", "write", false}, {"PUT", "write", false},
		{"PATCH", "destructive", false}, {"DELETE", "destructive", false}}
	var passed int
	for _, m := range methods {
		for _, p := range props {
			tl := opTool(m.method, m.effect)
			tl.InputSchema = json.RawMessage(`{"type": "object", "additionalProperties": false, "properties": {"p": ` + p.schema + `}}`)
			loc := ""
			if m.query && !p.query {
				loc = "tools[0].inputSchema.properties.p"
			}
			if firstProblemAt(t, m.method+" "+p.schema, manifestJSON("x", tl), loc) {
				passed++
			}
		}
	}
	t.Logf("SPEC §4 query inputs: %d of %d method and property cases as expected", passed, len(methods)*len(props))
}

// TestLocationsClipHostileKeys: a location names a hostile key with at most
// 200 characters of it per mention, however long the key (SPEC §4).
func TestLocationsClipHostileKeys(t *testing.T) {
	long := strings.Repeat("k", 5000)
	valid, err := os.ReadFile("testdata/manifest-valid.json")
	if err != nil {
		t.Fatal(err)
	}
	_, manifestKey := parseManifest([]byte(`{"schema_version": "1", "plugin": "x", "tools": [], "` + long + `": 1}`))
	_, schemaKey := parseManifest([]byte(strings.Replace(string(valid), `"inputSchema": {`, `"inputSchema": {"`+long+`": 1, `, 1)))
	instance := mustCompile(t, `{"additionalProperties": false}`).validateBytes([]byte(`{"`+long+`": 1}`), instanceLimits, "arguments")
	for name, ps := range map[string]problems{"manifest key": manifestKey, "schema keyword": schemaKey, "instance key": {*instance.(*problem)}} {
		if len(ps) == 0 {
			t.Fatalf("%s: accepted", name)
		}
		for _, p := range ps {
			if n := strings.Count(p.Error(), "k"); n > 2*specClip+10 {
				t.Errorf("%s: %s… echoes %d characters of the key", name, clip(p.Error(), 60), n)
			}
		}
	}
}

func TestValidManifests(t *testing.T) {
	for _, f := range []string{"testdata/manifest-valid.json", filepath.Join(sharedDir, "proxbox", "proxbox_bridge_v1.json")} {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		m, ps := parseManifest(data)
		if len(ps) > 0 {
			t.Fatalf("%s: %v", f, ps)
		}
		if len(m.tools) != 2 {
			t.Errorf("%s: %d tools", f, len(m.tools))
		}
		for _, tl := range m.tools {
			if out, ok := decodeChecked(tl.descriptor).get("outputSchema"); !ok || (tl.output == nil) != (out.kind == kindNull) {
				t.Errorf("%s: %s: outputSchema not kept as in the manifest", f, tl.name)
			}
		}
	}
}

// TestProxboxContract runs the real producer's tools against realistic
// arguments and responses.
func TestProxboxContract(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(sharedDir, "proxbox", "proxbox_bridge_v1.json"))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		tool, arguments, response string
		problem                   string // "" for valid
	}{
		{"list_sync_jobs", `{}`, `{"count": 1, "scheduled_jobs": [{"id": 9223372036854775807, "pk": 7, "name": "nightly", "sync_types": ["devices"], "schedule": "2026-12-02T03:00:00Z", "interval": 1440, "status": "scheduled"}]}`, ""},
		{"list_sync_jobs", `{}`, `{"count": 0, "scheduled_jobs": [{"id": 1, "pk": 1, "name": null, "sync_types": [], "schedule": null, "interval": null, "status": "pending"}]}`, ""},
		{"list_sync_jobs", `{"all": true}`, "", "arguments.all: property is not allowed"},
		{"list_sync_jobs", "", `{"count": 1, "scheduled_jobs": [{"id": 9223372036854775808, "pk": 1, "name": null, "sync_types": [], "schedule": null, "interval": null, "status": "x"}]}`, "response.scheduled_jobs[0].id: 9223372036854775808 is greater than maximum 9223372036854775807"},
		{"list_sync_jobs", "", `{"count": 1, "scheduled_jobs": [{"id": 1, "pk": 1, "name": null, "sync_types": [], "schedule": "2026-13-01T00:00:00Z", "interval": null, "status": "x"}]}`, "response.scheduled_jobs[0].schedule"},
		{"list_sync_jobs", "", `{"count": 1, "count": 2, "scheduled_jobs": []}`, `duplicate key "count"`},
		{"schedule_sync", `{"sync_stages": ["devices", "vm-disks"], "proxmox_endpoint_ids": [1, 9223372036854775807], "schedule_at": "2026-12-31T23:59:60Z", "recurrence": {"hours": 6}, "job_name": "nightly"}`, `{"ok": true, "job_id": 42, "message": "queued"}`, ""},
		{"schedule_sync", `{"sync_stages": ["devices"], "schedule_at": null}`, `{"ok": true, "job_id": null, "message": "queued"}`, ""},
		{"schedule_sync", `{}`, "", `arguments: missing required property "sync_stages"`},
		{"schedule_sync", `{"sync_stages": []}`, "", "arguments.sync_stages: has 0 items, fewer than minItems 1"},
		{"schedule_sync", `{"sync_stages": ["everything"]}`, "", `arguments.sync_stages[0]: "everything" is not one of the schema's enum values`},
		{"schedule_sync", `{"sync_stages": ["sdn", "sdn"]}`, "", "arguments.sync_stages[1]: equals an earlier item"},
		{"schedule_sync", `{"sync_stages": ["sdn"], "proxmox_endpoint_ids": [7, 7.0]}`, "", "arguments.proxmox_endpoint_ids[1]: equals an earlier item"},
		{"schedule_sync", `{"sync_stages": ["sdn"], "proxmox_endpoint_ids": [9007199254740992.0]}`, "", "arguments.proxmox_endpoint_ids[0]: expected integer, got number"},
		{"schedule_sync", `{"sync_stages": ["sdn"], "proxmox_endpoint_ids": [9223372036854775808]}`, "", "greater than maximum 9223372036854775807"},
		{"schedule_sync", `{"sync_stages": ["sdn"], "recurrence": {"days": 1, "hours": 2}}`, "", "arguments.recurrence: has 2 properties, more than maxProperties 1"},
		{"schedule_sync", `{"sync_stages": ["sdn"], "schedule_at": "2026-08-12T12:34:60Z"}`, "", "arguments.schedule_at"},
		{"schedule_sync", "", `{"ok": false, "job_id": 1, "message": "x"}`, "response.ok: value does not equal the schema's const"},
	}
	m, ps := parseManifest(data)
	if len(ps) > 0 {
		t.Fatal(ps)
	}
	for _, c := range cases {
		var ps problems
		tl := m.tool(c.tool)
		if c.arguments != "" {
			if err := tl.input.validateBytes([]byte(c.arguments), instanceLimits, "arguments"); err != nil {
				ps.addErr(err)
			}
		}
		if c.response != "" {
			if err := tl.output.validateBytes([]byte(c.response), instanceLimits, "response"); err != nil {
				ps.addErr(err)
			}
		}
		switch {
		case c.problem == "" && len(ps) > 0:
			t.Errorf("%s %s %s: %v", c.tool, c.arguments, c.response, ps)
		case c.problem != "" && (len(ps) == 0 || !strings.Contains(ps[0].Error(), c.problem)):
			t.Errorf("%s %s %s: got %v, want %q", c.tool, c.arguments, c.response, ps, c.problem)
		}
	}
}

// FuzzToolPath: an accepted descriptor path stays a fixed, plugin-local path.
func FuzzToolPath(f *testing.F) {
	for _, seed := range []string{"reports/", "a/b/c/", "../x/", "a//b/", "/abs/", "a/./b/", "http://x/", "a%2F/", "a?b/"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, p string) {
		if checkToolPath(p) != nil {
			return
		}
		segments := strings.Split(strings.TrimSuffix(p, "/"), "/")
		if strings.HasPrefix(p, "/") || !strings.HasSuffix(p, "/") || slices.Contains(segments, "..") ||
			slices.Contains(segments, ".") || slices.Contains(segments, "") || strings.ContainsAny(p, "%\\?#:") {
			t.Fatalf("accepted %q", p)
		}
	})
}

// TestPathCharacterNamedWhole: a non-ASCII character of a path is named
// whole in the message, not by its first byte.
func TestPathCharacterNamedWhole(t *testing.T) {
	for path, want := range map[string]string{"ａ/": `'ａ'`, "reports/é/": `'é'`, "a b/": `' '`} {
		if err := checkToolPath(path); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want it to name %s", path, err, want)
		}
	}
}

// TestEveryProblemInOneRun plants the twelve independent mistakes of issue
// 19 in one manifest: each is reported, at its location, in one run, and
// nothing else is.
func TestEveryProblemInOneRun(t *testing.T) {
	doc := `{"schema_version": "1", "plugin": "p", "version": 2, "tools": [
  {"name": "list_a", "title": "", "description": 7, "method": "GET", "path": "/a/", "effect": "read",
   "inputSchema": {"type": "object", "properties": {
     "ids": {"type": "array", "items": {"type": "object"}},
     "q": {"type": "string", "pattern": "^x"}}},
   "annotations": {"readOnlyHint": true, "destructiveHint": false, "idempotentHint": true, "openWorldHint": false}},
  {"name": "list_b", "title": "B", "description": "B.", "method": "get", "path": "b/", "effect": "read",
   "input_schema": {"type": "object", "additionalProperties": false},
   "annotations": {"readOnlyHint": true, "destructiveHint": false, "idempotentHint": true, "openWorldHint": false}},
  {"name": "list_a", "title": "C", "description": "C.", "method": "POST", "path": "c/", "effect": "read",
   "inputSchema": {"type": "object", "additionalProperties": false},
   "annotations": {"readOnlyHint": true, "destructiveHint": false, "idempotentHint": false}},
  {"name": "list_d", "title": "D", "description": "D.", "method": "head", "path": "d/", "effect": "read",
   "inputSchema": {"type": "object", "additionalProperties": false, "properties": {"f": {"type": "object"}, "g": {"$ref": "#/x"}}},
   "annotations": {"readOnlyHint": true, "destructiveHint": false, "idempotentHint": true, "openWorldHint": false}}]}`
	planted := []struct{ location, message string }{
		{"version", "unknown key in the manifest"},
		{"tools[2].annotations", `missing "openWorldHint"`},
		{"tools[0].inputSchema.properties.ids", "a GET input property must declare scalar types"},
		{"tools[1].method", `"get" must be upper case: GET`},
		// The rules that depend on the method read it upper-cased (issue 30).
		{"tools[3].method", `"head" must be upper case: HEAD`},
		{"tools[3].inputSchema.properties.f", "a HEAD input property must declare scalar types"},
		{"tools[3].inputSchema.properties.g", "a HEAD input property must declare scalar types"},
		{"tools[3].inputSchema.properties.g.$ref", `keyword "$ref" is not in the bridge-v1 schema subset: inline the schema it points to`},
		{"tools[0].title", "must be 1 to 200 characters, not 0"},
		{"tools[2].effect", `"read" does not agree with method POST`},
		{"tools[0].path", "without a leading /"},
		{"tools[0].inputSchema.additionalProperties", `must declare "additionalProperties": false`},
		{"tools[0].inputSchema.properties.q.pattern", `keyword "pattern" is not in the bridge-v1 schema subset`},
		{"tools[1].input_schema", `unknown key in a tool descriptor (the key is "inputSchema")`},
		{"tools[0].description", "must be a string"},
		{"tools[2].name", `tool name "list_a" is already used by tools[0]`},
	}
	m, ps := parseManifest([]byte(doc))
	if m != nil {
		t.Fatal("accepted")
	}
	for _, want := range planted {
		if !slices.ContainsFunc(ps, func(p problem) bool { return p.Location == want.location && strings.Contains(p.Message, want.message) }) {
			t.Errorf("no problem at %s containing %q", want.location, want.message)
		}
	}
	if !slices.IsSortedFunc(ps, func(a, b problem) int { return cmp.Or(cmp.Compare(a.Line, b.Line), cmp.Compare(a.Column, b.Column)) }) {
		t.Errorf("the problems are not in the file's order (issue 30): %v", ps)
	}
	if len(ps) != len(planted) {
		t.Errorf("%d problems for %d planted mistakes:", len(ps), len(planted))
		for _, p := range ps {
			t.Logf("  %v", &p)
		}
	}
}

// TestProblemPositions: every problem of a pretty-printed manifest has the
// line and column of the value its location names, or for a missing key
// of the object that lacks it; the expected positions are found in the
// text by the test itself.
func TestProblemPositions(t *testing.T) {
	doc := `{
  "schema_version": "2",
  "plugin": "p",
  "tools": [
    {
      "name": "list_a",
      "title": "List",
      "description": "List things.",
      "method": "GET",
      "path": "/lead/",
      "effect": "read",
      "inputSchema": {
        "type": "object",
        "properties": {"when": {"type": "string", "format": "email"}}
      },
      "annotations": {"readOnlyHint": true, "destructiveHint": false, "idempotentHint": true, "openWorldHint": false}
    },
    {"name": "b", "title": "B", "description": "B.", "method": "DELETE", "path": "b/", "effect": "destructive",
     "we ird": "odd-value",
     "inputSchema": {"type": "object", "additionalProperties": false},
     "annotations": {"readOnlyHint": false, "destructiveHint": true, "idempotentHint": true}}
  ]
}`
	// at is the 1-based line and byte column of the first occurrence of needle.
	at := func(needle string) [2]int {
		i := strings.Index(doc, needle)
		if i < 0 {
			t.Fatalf("%q is not in the document", needle)
		}
		return [2]int{strings.Count(doc[:i], "\n") + 1, i - strings.LastIndex(doc[:i], "\n")}
	}
	want := map[string][2]int{
		"schema_version": at(`"2"`),
		"tools[0].path":  at(`"/lead/"`),
		"tools[0].inputSchema.properties.when.format": at(`"email"`),
		"tools[0].inputSchema.additionalProperties": at(`{
        "type": "object"`),
		`tools[1]["we ird"]`:   at(`"odd-value"`),
		"tools[1].annotations": at(`{"readOnlyHint": false`),
	}
	_, ps := parseManifest([]byte(doc))
	if len(ps) != len(want) {
		t.Errorf("%d problems, want %d: %v", len(ps), len(want), ps)
	}
	for _, p := range ps {
		w, ok := want[p.Location]
		if !ok {
			t.Errorf("unexpected problem %v", &p)
			continue
		}
		if [2]int{p.Line, p.Column} != w {
			t.Errorf("%s: at %d:%d, want %d:%d", p.Location, p.Line, p.Column, w[0], w[1])
		}
		if line, col := position([]byte(doc), p.Location); [2]int{line, col} != w {
			t.Errorf("position(%s) = %d:%d, want %d:%d", p.Location, line, col, w[0], w[1])
		}
	}
}

// position is the 1-based line and column in doc of the value that loc,
// below doc's root, names, found as parseManifest finds it; 0, 0 when doc
// is not strict JSON.
func position(doc []byte, loc string) (line, column int) {
	v, err := decode(doc, limits{bytes: len(doc), depth: math.MaxInt, values: math.MaxInt})
	if err != nil {
		return 0, 0
	}
	return lineColumn(doc, int(v.find(loc).offset))
}

// TestPosition: find follows a location as the validator renders it below
// its root name, to the deepest value that exists.
func TestPosition(t *testing.T) {
	long := strings.Repeat("k", 300)
	args := "{\n  \"query\": \"x\",\n  \"labels\": [\"a\", \"b\",\n    \"c\", 4],\n  \"" + long + "\": {\"in\": true}\n}"
	at := func(needle string) [2]int { // 1-based line and byte column of needle
		i := strings.Index(args, needle)
		return [2]int{strings.Count(args[:i], "\n") + 1, i - strings.LastIndex(args[:i], "\n")}
	}
	keyed := mustCompile(t, `{"additionalProperties": {"additionalProperties": false}}`).validateBytes([]byte(args), instanceLimits, "arguments")
	for _, c := range []struct {
		loc  string
		want [2]int
	}{
		{"arguments.labels[3]", at("4]")},
		{"arguments.labels[9]", at(`["a"`)}, // no such element: the array
		{"arguments.query.deeper", at(`"x"`)},
		{"arguments", [2]int{1, 1}},
		{keyed.(*problem).Location, at("true")}, // a clipped key: ["kkk…"…].in
	} {
		if line, col := position([]byte(args), strings.TrimPrefix(c.loc, "arguments")); [2]int{line, col} != c.want {
			t.Errorf("position(%s) = %d:%d, want %d:%d", clip(c.loc, 60), line, col, c.want[0], c.want[1])
		}
	}
	if line, col := position([]byte(`{"a": 1,}`), "a"); line != 0 || col != 0 {
		t.Errorf("invalid JSON: %d:%d", line, col)
	}
}

// TestProblemsAreNeverDropped: however many problems came before, a broken
// schema does not compile and every problem is counted; printers get the
// first 100 and a line that counts the rest.
func TestProblemsAreNeverDropped(t *testing.T) {
	var ps problems
	for i := range 150 {
		ps.add(index("x", i), "planted")
	}
	v, _ := decode([]byte(`{"type": "objekt"}`), schemaLimits)
	if s := compileSchema(v, "late", &ps); s != nil || len(ps) != 151 {
		t.Errorf("after 150 problems: compiled %v, %d problems", s != nil, len(ps))
	}
	shown := ps.capped()
	if len(shown) != 101 || shown[99].Location != "x[99]" || !strings.Contains(shown[100].Message, "51 more problems") {
		t.Errorf("capped: %d problems, last %v", len(shown), &shown[len(shown)-1])
	}
	// 64 tools with two problems each: all 128 are counted.
	tools := numberedTools(64)
	for i := range tools {
		tools[i].Title, tools[i].Path = "", "/x/"
	}
	if _, ps := parseManifest([]byte(manifestJSON("p", tools...))); len(ps) != 128 || len(ps.capped()) != 101 {
		t.Errorf("%d problems, %d shown", len(ps), len(ps.capped()))
	}
}

// TestFixesNamed: issue 30, a problem names the fix where one can be
// derived: the corrected slug or tool name, what to use instead of a
// keyword outside the subset, and what to do with a required property the
// schema forbids.
func TestFixesNamed(t *testing.T) {
	doc := `{"schema_version": "1", "plugin": "My Plugin", "tools": [{"name": "List Reports", "title": "T", "description": "D.", "method": "POST",
	  "path": "r/", "effect": "write", "inputSchema": {"type": "object", "additionalProperties": false, "required": ["x"],
	  "properties": {"a": {"oneOf": [{"type": "string"}]}, "b": {"$defs": {}}}},
	  "annotations": {"readOnlyHint": false, "destructiveHint": false, "idempotentHint": false, "openWorldHint": false}}]}`
	_, ps := parseManifest([]byte(doc))
	for loc, want := range map[string]string{
		"plugin":        `; try "my-plugin"`,
		"tools[0].name": `; try "list_reports"`,
		"tools[0].inputSchema.properties.a.oneOf": "use one schema: a type list, or an enum",
		"tools[0].inputSchema.properties.b.$defs": "inline its schemas where they are used",
		"tools[0].inputSchema.required[0]":        "add it to properties, or drop it from required",
	} {
		if !slices.ContainsFunc(ps, func(p problem) bool { return p.Location == loc && strings.HasSuffix(p.Message, want) }) {
			t.Errorf("no problem at %s ending %q: %v", loc, want, ps)
		}
	}
	// A name no derivation can mend gets no suggestion.
	if _, ps := parseManifest([]byte(strings.Replace(doc, `"List Reports"`, `"9"`, 1))); !slices.ContainsFunc(ps, func(p problem) bool {
		return p.Location == "tools[0].name" && !strings.Contains(p.Message, "try")
	}) {
		t.Errorf("a suggestion for a name that cannot be mended: %v", ps)
	}
}
