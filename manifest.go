package main

import (
	"bytes"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"
)

// Manifest limits and name rules (SPEC §4).
const (
	manifestToolLimit = 64
	titleLimit        = 200
	descriptionLimit  = 2000
	pathLimit         = 1024
)

var (
	slugPattern     = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)
	toolNamePattern = regexp.MustCompile(`^[a-z][a-z0-9_]{0,63}$`)
)

// manifest is a bridge-v1 manifest that passed every rule.
type manifest struct {
	plugin string
	tools  []*tool
}

// tool is one validated descriptor with its compiled schemas.
type tool struct {
	name, title, method, path, effect string
	summary                           string  // the description's first sentence, for the catalog index
	descriptor                        []byte  // compact, as in the manifest, outputSchema null when absent
	input                             *schema // root of inputSchema
	output                            *schema // nil when absent
}

// dropSchemas forgets the compiled schemas, for a caller that needs only
// the descriptors (a full scan): a compiled schema can cost many times its
// text.
func (m *manifest) dropSchemas() {
	for _, t := range m.tools {
		t.input, t.output = nil, nil
	}
}

func (m *manifest) tool(name string) *tool {
	for _, t := range m.tools {
		if t.name == name {
			return t
		}
	}
	return nil
}

var (
	manifestKeys    = []string{"schema_version", "plugin", "tools"}
	descriptorKeys  = []string{"name", "title", "description", "method", "path", "effect", "inputSchema", "annotations"}
	annotationKeys  = []string{"readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"}
	methodEffects   = map[string][]string{"GET": {"read"}, "HEAD": {"read"}, "POST": {"write", "destructive"}, "PUT": {"write", "destructive"}, "PATCH": {"write", "destructive"}, "DELETE": {"destructive"}}
	descriptorAlias = map[string]string{"input_schema": "inputSchema", "output_schema": "outputSchema", "read_only_hint": "readOnlyHint"}
)

// exactKeys checks that obj, found at loc, is an object with exactly the
// required keys (optional ones may be missing).
func (ps *problems) exactKeys(obj value, loc, what string, required, optional []string) bool {
	if obj.kind != kindObject {
		ps.add(loc, "%s must be an object", what)
		return false
	}
	ok := true
	for _, m := range obj.obj {
		if !slices.Contains(required, m.key) && !slices.Contains(optional, m.key) {
			hint := ""
			if a, found := descriptorAlias[m.key]; found {
				hint = fmt.Sprintf(" (the key is %q)", a)
			}
			ps.add(child(loc, m.key), "unknown key in %s%s", what, hint)
			ok = false
		}
	}
	for _, k := range required {
		if _, found := obj.get(k); !found {
			ps.add(loc, "%s is missing %q", what, k)
			ok = false
		}
	}
	return ok
}

// parseManifest decodes a manifest document and checks every rule of SPEC §4.
// It returns the manifest only when there is no problem.
func parseManifest(data []byte) (*manifest, problems) {
	doc, err := decode(data, manifestLimits)
	if err != nil {
		var ps problems
		ps.addErr(err)
		return nil, ps
	}
	var ps problems
	if !ps.exactKeys(doc, "", "the manifest", manifestKeys, nil) {
		return nil, ps
	}
	m := &manifest{}
	if v, _ := doc.get("schema_version"); v.kind != kindString || v.s != "1" {
		ps.add("schema_version", `must be the string "1"`)
	}
	if v, _ := doc.get("plugin"); v.kind != kindString || !slugPattern.MatchString(v.s) {
		ps.add("plugin", "must be a plugin slug matching %s", slugPattern)
	} else {
		m.plugin = strings.Clone(v.s)
	}
	tools, _ := doc.get("tools")
	if tools.kind != kindArray || len(tools.arr) < 1 || len(tools.arr) > manifestToolLimit {
		ps.add("tools", "must be an array of 1 to %d tools", manifestToolLimit)
		return nil, ps
	}
	names := map[string]int{}
	scratch := make([]byte, 0, min(len(data), 8<<10)) // most descriptors fit
	for i, tv := range tools.arr {
		loc := index("tools", i)
		before := len(ps)
		t := ps.checkTool(tv, loc, &scratch)
		if t != nil {
			if j, dup := names[t.name]; dup {
				ps.add(child(loc, "name"), "tool name %q is already used by tools[%d]", t.name, j)
			} else {
				names[t.name] = i
				m.tools = append(m.tools, t)
			}
		}
		name, _ := tv.get("name")
		for j := before; j < len(ps) && name.kind == kindString; j++ {
			ps[j].Tool = clip(name.s, clipLimit) // beside the index, for authors
		}
	}
	if len(ps) > 0 {
		return nil, ps
	}
	return m, nil
}

// checkTool checks one descriptor and returns it when it is valid.
func (ps *problems) checkTool(v value, loc string, scratch *[]byte) *tool {
	if !ps.exactKeys(v, loc, "a tool descriptor", descriptorKeys, []string{"outputSchema"}) {
		return nil
	}
	before := len(*ps)
	str := func(key string) string {
		f, _ := v.get(key)
		if f.kind != kindString {
			ps.add(child(loc, key), "must be a string")
			return ""
		}
		return f.s
	}
	// The tool outlives the manifest's tree: it keeps copies.
	t := &tool{name: strings.Clone(str("name")), method: strings.Clone(str("method")), path: strings.Clone(str("path")), effect: strings.Clone(str("effect"))}
	title, description := strings.Clone(str("title")), str("description")
	if len(*ps) > before {
		return nil
	}
	if !toolNamePattern.MatchString(t.name) {
		ps.add(child(loc, "name"), "%s does not match %s", quote(t.name), toolNamePattern)
	}
	if n := utf8.RuneCountInString(title); n < 1 || n > titleLimit {
		ps.add(child(loc, "title"), "must be 1 to %d characters, not %d", titleLimit, n)
	}
	if n := utf8.RuneCountInString(description); n < 1 || n > descriptionLimit {
		ps.add(child(loc, "description"), "must be 1 to %d characters, not %d", descriptionLimit, n)
	}
	if err := checkToolPath(t.path); err != nil {
		ps.add(child(loc, "path"), "%s: %v", quote(t.path), err)
	}
	effects, ok := methodEffects[t.method]
	switch {
	case !ok:
		ps.add(child(loc, "method"), "%s is not one of GET, HEAD, POST, PUT, PATCH, DELETE", quote(t.method))
	case !slices.Contains([]string{"read", "write", "destructive"}, t.effect):
		ps.add(child(loc, "effect"), "%s is not one of read, write, destructive", quote(t.effect))
	case !slices.Contains(effects, t.effect):
		ps.add(child(loc, "effect"), "%s does not agree with method %s, which needs %s", quote(t.effect), t.method, strings.Join(effects, " or "))
	}
	if slices.Contains(effects, t.effect) {
		ps.checkAnnotations(v, loc, t.effect)
	}
	t.input = ps.checkInputSchema(v, child(loc, "inputSchema"), t.method)
	if out, _ := v.get("outputSchema"); out.kind != kindNull {
		t.output = compileSchema(out, child(loc, "outputSchema"), ps)
	}
	if len(*ps) > before {
		return nil
	}
	t.title, t.summary, t.descriptor = title, firstSentence(description), encodeDescriptor(v, scratch)
	return t
}

// summaryLimit bounds a summary in the catalog index (SPEC §9).
const summaryLimit = 160

// firstSentence is a description's first sentence, its white space made
// single spaces, clipped to summaryLimit characters.
func firstSentence(d string) string {
	for i := 0; i < len(d); i++ {
		if strings.IndexByte(".!?", d[i]) >= 0 && (i+1 == len(d) || d[i+1] == ' ' || d[i+1] == '\n') {
			d = d[:i+1]
			break
		}
	}
	d = strings.Join(strings.Fields(d), " ")
	if r := []rune(d); len(r) > summaryLimit {
		d = string(r[:summaryLimit-1]) + "…"
	}
	return d
}

// encodeDescriptor is the compact encoding of a valid descriptor, with
// "outputSchema": null added when it has none. It is encoded in scratch,
// which a manifest's tools share, and copied out at its size.
func encodeDescriptor(v value, scratch *[]byte) []byte {
	b := appendJSON((*scratch)[:0], v)
	if _, found := v.get("outputSchema"); !found {
		b = append(append(b[:len(b)-1], `,"outputSchema":null`...), '}')
	}
	*scratch = b
	return bytes.Clone(b)
}

func (ps *problems) checkAnnotations(tool value, loc, effect string) {
	a, _ := tool.get("annotations")
	loc = child(loc, "annotations")
	if !ps.exactKeys(a, loc, "annotations", annotationKeys, nil) {
		return
	}
	for _, m := range a.obj {
		if m.val.kind != kindBool {
			ps.add(child(loc, m.key), "must be a boolean")
			return
		}
	}
	if ro, _ := a.get("readOnlyHint"); ro.b != (effect == "read") {
		ps.add(child(loc, "readOnlyHint"), "must be %t for effect %q", effect == "read", effect)
	}
	if d, _ := a.get("destructiveHint"); d.b != (effect == "destructive") {
		ps.add(child(loc, "destructiveHint"), "must be %t for effect %q", effect == "destructive", effect)
	}
}

// checkInputSchema compiles an inputSchema with its root rules, and for
// GET/HEAD the rule that every property encodes as a query parameter.
func (ps *problems) checkInputSchema(tool value, loc, method string) *schema {
	v, _ := tool.get("inputSchema")
	if v.kind != kindObject {
		ps.add(loc, "must be a schema object")
		return nil
	}
	if t, _ := v.get("type"); t.kind != kindString || t.s != "object" {
		ps.add(child(loc, "type"), `an inputSchema root must declare "type": "object"`)
	}
	if a, found := v.get("additionalProperties"); !found || a.kind != kindBool || a.b {
		ps.add(child(loc, "additionalProperties"), `an inputSchema root must declare "additionalProperties": false`)
	}
	s := compileSchema(v, loc, ps)
	if s == nil {
		return nil
	}
	if method != "GET" && method != "HEAD" {
		return s
	}
	for _, p := range s.props {
		if !p.declared {
			continue
		}
		if !queryEncodable(p.schema) {
			ps.add(child(child(loc, "properties"), p.name),
				"a %s input property must declare scalar types, or \"array\" (optionally with \"null\") whose items declare scalar types", method)
		}
	}
	return s
}

// queryEncodable reports whether every value s accepts encodes
// deterministically as query parameters.
func queryEncodable(s *schema) bool {
	scalar := func(s *schema) bool { return s != nil && s.types != 0 && s.types&^scalarTypes == 0 }
	if scalar(s) {
		return true
	}
	return s.types&^typeNull == typeArray && scalar(s.items)
}

// checkToolPath applies the descriptor path rules: a fixed path relative to
// the plugin's API root.
func checkToolPath(p string) error {
	if len(p) < 2 || len(p) > pathLimit {
		return fmt.Errorf("must be 2 to %d characters", pathLimit)
	}
	for _, r := range p {
		if r >= utf8.RuneSelf || !isAlnum(byte(r)) && !strings.ContainsRune("._~/-", r) {
			return fmt.Errorf("character %q is not allowed (only A-Z a-z 0-9 . _ ~ / -)", r)
		}
	}
	if p[0] == '/' {
		return fmt.Errorf("must be relative to /api/plugins/<plugin>/, without a leading /")
	}
	if p[len(p)-1] != '/' {
		return fmt.Errorf("must end with /")
	}
	if badSegment(p[:len(p)-1]) {
		return fmt.Errorf("has an empty, . or .. segment")
	}
	return nil
}
